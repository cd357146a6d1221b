"""The SGD evaluator's value rule (google-research `schema_guided_dst`), re-implemented: how a
non-categorical value is compared (rule 6 of `analysis.sgd.scoring`).

The evaluator scores a non-categorical slot with fuzzywuzzy's `token_sort_ratio` (python-Levenshtein
installed) / 100: characters U+0080..U+00FF deleted, non-word characters to spaces, lower-cased, words
sorted, then the Indel ratio rounded to a whole percent. :func:`fuzzy_key` is the value as that ratio
compares it; the `sgd` convention (`analysis.conventions`) reads values through it, and
`analysis.sgd.scoring` scores pairs of keys with :func:`key_score`.
"""

from __future__ import annotations

import re

from rapidfuzz.distance import Indel

_HIGH_LATIN1 = dict.fromkeys(range(128, 256))
_NON_WORD = re.compile(r"(?ui)\W")


def fuzzy_key(value: str) -> str:
    """A value as fuzzywuzzy's `token_sort_ratio` compares it (force_ascii, full_process, words sorted).

    >>> fuzzy_key("The Café, Rome!")
    'caf rome the'
    """
    text = _NON_WORD.sub(" ", value.translate(_HIGH_LATIN1)).lower().strip()
    return " ".join(sorted(text.split()))


def normalise_value(slot: str, value: str) -> str:
    """The `sgd` convention's value rule: the value's :func:`fuzzy_key`, whatever the slot.

    >>> normalise_value("restaurant_name", "Lan Hong House")
    'hong house lan'
    """
    return fuzzy_key(value)


def fuzzy_score(ref: str, hyp: str) -> float:
    """The evaluator's non-categorical score of one pair, in [0, 1], a whole percent.

    >>> fuzzy_score("6 pm", "6 PM"), fuzzy_score("Lan Hong House", "Ian Hong House")
    (1.0, 0.93)
    """
    return key_score(fuzzy_key(ref), fuzzy_key(hyp))


def key_score(a: str, b: str) -> float:
    """:func:`fuzzy_score` of two values already turned into their :func:`fuzzy_key`."""
    if a == b:
        return 1.0
    if not a or not b:
        return 0.0
    total = len(a) + len(b)
    # python-Levenshtein's ratio is (lensum - indel distance) / lensum; fuzzywuzzy rounds 100 * ratio.
    return round(100 * ((total - Indel.distance(a, b)) / total)) / 100.0
