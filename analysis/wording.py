"""One vocabulary for what people read: every column header and axis title the dashboard, the CLI's tables and
the report show comes from a machine name through `label` (metrics as the registry labels them)."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from analysis.suite import LABELS

# Names as people read them; frames keep their machine names.
COLUMN_LABELS: dict[str, str] = {
    **LABELS,
    "run_id": "run",
    "n_turns": "turns",
    "n_dialogues": "dialogues",
    "n_dialogues_differ": "dialogues where the runs differ",
    "n_turns_differ": "turns where the runs differ",
    "n_warnings": "alignment warnings",
    "warnings": "warning details",
    "slot_name": "slot",
    "f1": "F1",
    "wrong_value": "wrong value",
    "dialogue_id": "dialogue",
    "turn_index": "turn",
    "first_error_turn": "first error turn",
    "error_turns": "turns with errors",
    "n_errors": "errors",
    "n_new": "new errors",
    "n_inherited": "inherited errors",
    "gold_changes": "gold changed this turn",
    "pred_changes": "prediction changed this turn",
    "gold_change": "gold Δ",
    "pred_change": "pred Δ",
    "pred": "predicted",
    # the turns behind a difference, and the pages that set two runs (or conventions) A and B side by side
    "errors_a": "wrong slots of A",
    "errors_b": "wrong slots of B",
    "slot_a": "slot of A",
    "slot_b": "slot of B",
    "domain_a": "domain of A",
    "domain_b": "domain of B",
    "user_a": "user said (A)",
    "user_b": "user said (B)",
    "acc_a": "accuracy of A",
    "acc_b": "accuracy of B",
    "n_turns_a": "turns of A",
    "n_turns_b": "turns of B",
    "support_b": "support of B",
    "alternative_b": "next best slot of B",
    "alternative_score": "its score",
    "correct_a": "correct under a",
    "correct_b": "correct under b",
    "outcome_a": "outcome under a",
    "outcome_b": "outcome under b",
    "only_a": "only a right",
    "only_b": "only b right",
    "estimate_a": "value of a",
    "estimate_b": "value of b",
    # the paired comparison
    "row": "run (row)",
    "column": "run (column)",
    "label": "name",  # a metric's in the pairwise table, a system's in the seeds table
    "delta": "Δ",
    "low": "95% low",
    "high": "95% high",
    "p_value": "p (number)",
    "p_text": "p",
    "p_holm": "Holm p (number)",
    "p_holm_text": "Holm p",
    "significant": "significant (Holm)",
    "family_size": "tests corrected together",
    # review, slices, FewJoint
    "n_reviewed": "reviewed",
    "n_gold_errors": "gold annotation errors",
    "n_seeds": "number of seeds",
    "slot_f1": "slot F1",
    "ill_formed_bio_tags": "ill-formed BIO tags",
    "queries_with_ill_formed_bio": "queries with ill-formed BIO",
}
_BOUNDS = {"_low": "95% low", "_high": "95% high"}


def label(name: str) -> str:
    """The header or axis title of a machine name: the vocabulary's, an interval bound of a metric as the
    metric's label and the bound, else the name with spaces for underscores.

    >>> label("run_id"), label("jga_low"), label("dialogue_type")
    ('run', 'JGA 95% low', 'dialogue type')
    """
    if name in COLUMN_LABELS:
        return COLUMN_LABELS[name]
    for suffix, bound in _BOUNDS.items():
        if name.endswith(suffix) and name[: -len(suffix)] in LABELS:
            return f"{LABELS[name[: -len(suffix)]]} {bound}"
    return name.replace("_", " ")


_PIECES = re.compile(r"([-_ .·/]+)")


ELISION = "…"


def _pattern(label: str) -> re.Pattern[str]:
    """`label` as a pattern of the names it could stand for: each `…` is one or more characters."""
    return re.compile(".+".join(re.escape(part) for part in label.split(ELISION)), re.DOTALL)


def _render(pieces: list[str], kept: list[bool]) -> str:
    """The words of a name (even positions of `pieces`, separators between them) with the words not `kept`
    as one `…` per run of them."""
    parts: list[str] = []
    for index, piece in enumerate(pieces):
        if kept[index] or index % 2:  # a kept word, or a separator
            parts.append(piece)
            continue
        if len(parts) >= 2 and parts[-2] == ELISION:  # "…-" then another elided word: one "…"
            parts.pop()
        else:
            parts.append(ELISION)
    return "".join(parts)


def short_names(names: Sequence[str], *, width: int = 18) -> dict[str, str]:
    """A label of at most about `width` characters per name, never ambiguous: parts of a long name between its
    separators (`-`, `_`, space, `.`) are elided as `…`, the longest first, only while the label, `…` read as
    "something", still fits that name alone among `names`. A name that cannot be shortened so stays whole.

    >>> names = ["simulated-B-mwz-en-predicted-s1", "simulated-B-mwz-en-predicted-s2", "simulated-A-mwz-en-gold"]
    >>> list(short_names(names).values())
    ['…-B-mwz-en-…-s1', '…-B-mwz-en-…-s2', '…-A-mwz-en-gold']
    """
    return dict(_short_names(tuple(dict.fromkeys(names)), width))


@functools.lru_cache(maxsize=16)  # the sidebar asks on every rerun of every page
def _short_names(unique: tuple[str, ...], width: int) -> tuple[tuple[str, str], ...]:
    out: dict[str, str] = {}
    for name in unique:
        pieces = _PIECES.split(name)  # words at even positions, separators between them
        kept = [True] * len(pieces)

        words = sorted(range(0, len(pieces), 2), key=lambda i: -len(pieces[i]))
        for index in words:
            label = _render(pieces, kept)
            if len(label) <= width:
                break
            trial = list(kept)
            trial[index] = False
            candidate = _render(pieces, trial)
            pattern = _pattern(candidate)
            if len(candidate) < len(label) and [n for n in unique if pattern.fullmatch(n)] == [name]:
                kept = trial
        out[name] = _render(pieces, kept)
    return tuple(out.items())
