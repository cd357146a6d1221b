"""MultiWOZ_Evaluation's DST rules, re-implemented: slot names, value normalisation and the fuzzy matcher.

The official scorer (Tomiinek/MultiWOZ_Evaluation, ``Evaluator(dst=True)``) first normalises every state
(``normalization.normalize_data``), then compares predicted and gold values with fuzzywuzzy's
``fuzz.partial_ratio`` and calls a slot right when the score is above 95 (``metrics.get_dst``). This module
reproduces those three pieces as plain functions, quirks included, written from the observed behaviour
(checked value by value against the official code, see ``tests/test_mwzeval_rules.py``):

- :func:`slot_name`: lower-case, spaces removed, ``arriveby`` -> ``arrive``, ``leaveat`` -> ``leave``.
- :func:`normalise_value`: per normalised slot name, venue names, attraction/hotel types, foods and times
  are mapped to canonical forms; ``parking``/``internet`` ``free`` becomes ``yes``; every other slot
  (``area``, ``day``, ``bookday``, ``booktime``, ``stars``, ...) is returned untouched, not even lower-cased.
- :func:`partial_ratio` / :func:`partial_ratios`: fuzzywuzzy 0.18.0's integer ``partial_ratio`` as it runs
  with python-Levenshtein installed (python-Levenshtein 0.27, itself built on rapidfuzz), computed here
  with rapidfuzz only. rapidfuzz's own ``fuzz.partial_ratio`` is a different function (a float, and an
  optimal alignment): ``lan hong house`` vs ``ian hong house`` is 93 here (no match) and 96.3 there.

One deliberate departure: before a trailing ``pm`` the official time parser calls ``int()`` on the hours
of ``H:MM`` (any text before the one ``:``) and on a lone token that ``str.isdigit`` accepts, and crashes
the whole evaluation when ``int()`` refuses it: ``:30 pm``, ``x:15 pm``, ``²pm`` (a digit for ``isdigit``,
not for ``int``), or more than 4300 digits (Python's limit for ``int()``). Here such a value does not
crash: the ``pm`` rule is skipped, as the official code itself skips it for a lone non-digit token
(``abc pm`` -> ``abc``, officially), and the other time rules run on the value with its ``pm`` removed
(``:30 pm`` -> ``:30``, ``x:15 pm`` -> ``0x:15``, ``²pm`` -> ``0²:00``). Every input the official code
accepts gives its output.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache
from types import MappingProxyType

import numpy as np
from rapidfuzz.distance import Indel, Levenshtein

FUZZY_THRESHOLD = 95  # a value is right when partial_ratio(pred, gold) > FUZZY_THRESHOLD

# Slot names after `slot_name`, grouped by the value rule that applies to them.
NAME_SLOTS = frozenset({"name", "destination", "departure"})
TIME_SLOTS = frozenset({"arrive", "leave", "arriveby", "leaveat", "time"})  # not `booktime`
FREE_IS_YES_SLOTS = frozenset({"parking", "internet"})

_SLOT_RENAMES = MappingProxyType({"arriveby": "arrive", "leaveat": "leave"})

# Venue names (after strip, lower-case and the `&` rewrites) -> the database's spelling. mwzeval checks
# restaurant, hotel and attraction fixes alike for every name, destination and departure value.
CANONICAL_NAMES: Mapping[str, str] = MappingProxyType(
    {
        # restaurants (and a few hotels listed among them)
        "hotel du vin bistro": "hotel du vin and bistro",
        "the river bar and grill": "the river bar steakhouse and grill",
        "nando's": "nandos",
        "city center b and b": "city center north b and b",
        "acorn house": "acorn guest house",
        "caffee uno": "caffe uno",
        "cafe uno": "caffe uno",
        "rosa's": "rosas bed and breakfast",
        "restaurant called two two": "restaurant two two",
        "restaurant 2 two": "restaurant two two",
        "restaurant two 2": "restaurant two two",
        "restaurant 2 2": "restaurant two two",
        "restaurant 1 7": "restaurant one seven",
        "restaurant 17": "restaurant one seven",
        # hotels
        "lime house": "limehouse",
        "cityrooms": "cityroomz",
        "whale of time": "whale of a time",
        "huntingdon hotel": "huntingdon marriott hotel",
        "holiday inn exlpress, cambridge": "express by holiday inn cambridge",
        "university hotel": "university arms hotel",
        "arbury guesthouse and lodge": "arbury lodge guesthouse",
        "bridge house": "bridge guest house",
        "arbury guesthouse": "arbury lodge guesthouse",
        "nandos in the city centre": "nandos city centre",
        # attractions
        "broughton gallery": "broughton house gallery",
        "scudamores punt co": "scudamores punting co",
        "cambridge botanic gardens": "cambridge university botanic gardens",
        "the junction": "junction theatre",
        "trinity street college": "trinity college",
        "christ college": "christ's college",
        "christs": "christ's college",
        "history of science museum": "whipple museum of the history of science",
        "parkside pools": "parkside swimming pool",
        "the botanical gardens at cambridge university": "cambridge university botanic gardens",
        "cafe jello museum": "cafe jello gallery",
    }
)

# `type` values, matched exactly as written (no strip, no lower-casing).
CANONICAL_TYPES: Mapping[str, str] = MappingProxyType(
    {
        "swimming pool": "swimmingpool",
        "mutliple sports": "multiple sports",
        "night club": "nightclub",
        "guest house": "guesthouse",
    }
)

# `food` values after strip and lower-case.
CANONICAL_FOODS: Mapping[str, str] = MappingProxyType(
    {
        "eriterean": "mediterranean",
        "brazilian": "portuguese",
        "sea food": "seafood",
        "portugese": "portuguese",
        "modern american": "north american",
        "americas": "north american",
        "intalian": "italian",
        "italain": "italian",
        "asian or oriental": "asian",
        "english": "british",
        "australasian": "australian",
        "gastropod": "gastropub",
        "brutish": "british",
        "bristish": "british",
        "europeon": "european",
    }
)

# Whole time phrases (after strip and lower-case). `seven o'clock tomorrow evening` is 07:00 officially.
TIME_PHRASES: Mapping[str, str] = MappingProxyType(
    {
        "afternoon": "13:00",
        "lunch": "12:00",
        "noon": "12:00",
        "mid-day": "12:00",
        "around lunch time": "12:00",
        "morning": "08:00",
        "seven o'clock tomorrow evening": "07:00",
        "three forty five p.m": "15:45",
        "one thirty p.m.": "13:30",
        "six fourty five": "06:45",
        "eight thirty": "08:30",
    }
)
# Time phrases recognised by their beginning.
TIME_PHRASE_PREFIXES: tuple[tuple[str, str], ...] = (("one o'clock p.m", "13:00"), ("ten o'clock a.m", "10:00"))


def slot_name(slot: str) -> str:
    """mwzeval's slot name: lower-cased, spaces removed, ``arriveby``/``leaveat`` shortened.

    Only the space character goes (not tabs or underscores); domains are never touched.

    >>> slot_name("leaveAt"), slot_name("arrive by"), slot_name("Price Range"), slot_name("book day")
    ('leave', 'arrive', 'pricerange', 'bookday')
    """
    name = slot.lower().replace(" ", "")
    return _SLOT_RENAMES.get(name, name)


def canonical_name(value: str) -> str:
    """A venue name (``name``, ``destination``, ``departure``): stripped, lower-cased, ``&`` -> ``and``, fixes.

    >>> canonical_name(" Restaurant 2 Two "), canonical_name("B&B"), canonical_name("christ 's")
    ('restaurant two two', 'b and b', "christ's")
    """
    name = value.strip().lower().replace(" & ", " and ").replace("&", " and ").replace(" '", "'")
    return CANONICAL_NAMES.get(name, name)


def canonical_type(value: str) -> str:
    """A ``type`` value: four exact spellings fixed, anything else as written.

    >>> canonical_type("guest house"), canonical_type("Guest House"), canonical_type(" night club")
    ('guesthouse', 'Guest House', ' night club')
    """
    return CANONICAL_TYPES.get(value, value)


def canonical_food(value: str) -> str:
    """A ``food`` value: stripped, lower-cased, misspellings and near-synonyms mapped.

    >>> canonical_food(" English "), canonical_food("Thai")
    ('british', 'thai')
    """
    food = value.strip().lower()
    return CANONICAL_FOODS.get(food, food)


def _pm_to_24h(time: str) -> str | None:
    """``HH[:MM]`` (``pm`` already removed) shifted by 12 hours the official way, or None if not parsable.

    Officially ``int()`` decides: it accepts surrounding whitespace, signs, ``_`` and any Unicode decimal
    digits, and ``12 pm`` becomes ``24:00``. Where ``int()`` raises, the official code crashes; here None.
    """
    tokens = time.split(":")
    if len(tokens) == 2:
        hours, minutes = tokens
    elif len(tokens) == 1 and time.isdigit():
        hours, minutes = time, "00"
    else:
        return None
    try:
        return f"{int(hours) + 12}:{minutes}"
    except ValueError:
        return None


def canonical_time(value: str) -> str:
    """A time value (``arrive``, ``leave``, ``time``) in mwzeval's ``HH:MM`` form, quirks included.

    The rules, in order, on the stripped lower-cased value: a few phrases; a leading ``by`` drops three
    characters (``by`` and whatever follows it), ``after``/``afer`` are removed; a trailing ``am``/``a.m.``
    is removed; a trailing ``pm``/``p.m.`` is removed and ``H[:MM]`` gets 12 hours added (``12 pm`` is
    ``24:00``); an empty value is ``00:00``; one trailing ``.``, ``,`` or ``?`` goes; four digits are
    ``HH:MM``; other digits are hours (``7`` -> ``07:00``, ``123`` -> ``123:00``); with a ``:`` spaces are
    deleted and ``H:MM`` is zero-padded. Anything else is returned as it stands then.

    >>> canonical_time("1715"), canonical_time("by 5:30"), canonical_time("after 7 pm"), canonical_time("12 pm")
    ('17:15', '05:30', '19:00', '24:00')
    >>> canonical_time(""), canonical_time("pm"), canonical_time("."), canonical_time("17 : 30"), canonical_time("noon")
    ('00:00', '00:00', '', '17:30', '12:00')
    >>> canonical_time("abc pm"), canonical_time("x:15 pm")  # the official code raises ValueError on the second
    ('abc', '0x:15')
    """
    time = value.strip().lower()
    if time in TIME_PHRASES:
        return TIME_PHRASES[time]
    for prefix, canonical in TIME_PHRASE_PREFIXES:
        if time.startswith(prefix):
            return canonical

    if time.startswith("by"):
        time = time[3:]  # officially three characters, whatever the third is, and no strip
    if time.startswith("after"):
        time = time[5:].strip()
    if time.startswith("afer"):
        time = time[4:].strip()
    if time.endswith("am"):
        time = time[:-2].strip()
    if time.endswith("a.m."):
        time = time[:-4].strip()
    if time.endswith(("pm", "p.m.")):
        if time.endswith("pm"):
            time = time[:-2].strip()
        if time.endswith("p.m."):
            time = time[:-4].strip()
        shifted = _pm_to_24h(time)
        if shifted is not None:
            return shifted

    if not time:
        return "00:00"
    if time[-1] in ".,?":
        time = time[:-1]
    if time.isdigit():
        return f"{time[:2]}:{time[2:]}" if len(time) == 4 else time.zfill(2) + ":00"
    if ":" in time:
        time = time.replace(" ", "")
    if len(time) == 4 and time[1] == ":":
        hours, minutes = time.split(":")[:2]
        return hours.zfill(2) + ":" + minutes
    return time


def normalise_value(slot: str, value: str) -> str:
    """mwzeval's normalised value of ``value`` for the already normalised slot name ``slot``.

    ``name``/``destination``/``departure``: :func:`canonical_name`; ``type``: :func:`canonical_type`;
    ``food``: :func:`canonical_food`; ``arrive``/``leave``/``arriveby``/``leaveat``/``time``:
    :func:`canonical_time` (``booktime`` is not a time slot); ``parking``/``internet``: exactly ``free`` is
    ``yes``; every other slot: the value unchanged (not stripped, not lower-cased).

    >>> normalise_value("leave", "1715"), normalise_value("type", "guest house"), normalise_value("parking", "free")
    ('17:15', 'guesthouse', 'yes')
    >>> normalise_value("booktime", "1715"), normalise_value("area", " East "), normalise_value("stars", "none")
    ('1715', ' East ', 'none')
    """
    if slot in NAME_SLOTS:
        return canonical_name(value)
    if slot == "type":
        return canonical_type(value)
    if slot == "food":
        return canonical_food(value)
    if slot in TIME_SLOTS:
        return canonical_time(value)
    if slot in FREE_IS_YES_SLOTS:
        return "yes" if value == "free" else value
    return value


def normalise_state(state: Mapping[str, Mapping[str, str]]) -> dict[str, dict[str, str]]:
    """A ``{domain: {slot: value}}`` state with mwzeval's slot names and values; domains untouched.

    As officially, two slots of a domain that normalise to one name (``leaveAt`` and ``leave at``) leave
    one entry, in the first one's place, holding the last one's value.

    >>> normalise_state({"taxi": {"leaveAt": "5 pm", "Destination": "Nando's"}})
    {'taxi': {'leave': '17:00', 'destination': 'nandos'}}
    """
    out: dict[str, dict[str, str]] = {}
    for domain, slots in state.items():
        new: dict[str, str] = {}
        for slot, value in slots.items():
            name = slot_name(slot)
            new[name] = normalise_value(name, value)
        out[domain] = new
    return out


def partial_ratio(s1: str | None, s2: str | None) -> int:
    """fuzzywuzzy 0.18.0's ``fuzz.partial_ratio`` with python-Levenshtein: an integer in 0..100.

    None on either side is 0; equal values are 100 (so two empty strings are 100); one empty string is 0.
    Otherwise the shorter string (the first one when the lengths are equal) is aligned with the longer by
    Levenshtein's edit script; each matching block proposes a window of the longer string starting where
    the block would put the shorter's start, and the best Indel similarity of the shorter with a window
    is the score (100 as soon as one exceeds 0.995), rounded half to even.
    Like fuzzywuzzy, any other non-str argument is compared as ``str()`` of it once it has a length.

    >>> partial_ratio("lan hong house", "ian hong house"), partial_ratio("east", "the east"), partial_ratio("", "")
    (93, 100, 100)
    """
    if s1 is None or s2 is None:
        return 0
    if s1 == s2:
        return 100
    if len(s1) == 0 or len(s2) == 0:
        return 0
    if not (isinstance(s1, str) and isinstance(s2, str)):
        s1, s2 = str(s1), str(s2)
    return _partial_ratio(s1, s2)


@lru_cache(maxsize=1 << 16)
def _partial_ratio(s1: str, s2: str) -> int:
    shorter, longer = (s1, s2) if len(s1) <= len(s2) else (s2, s1)
    width = len(shorter)
    best = 0.0
    tried: set[int] = set()
    for block in Levenshtein.opcodes(shorter, longer).as_matching_blocks():
        start = max(block.b - block.a, 0)
        if start in tried:
            continue
        tried.add(start)
        similarity = Indel.normalized_similarity(shorter, longer[start : start + width])
        if similarity > 0.995:
            return 100
        best = max(best, similarity)
    return round(100 * best)  # half to even, as fuzzywuzzy's int(round(...))


def partial_ratios(preds: Iterable[str], golds: Iterable[str]) -> np.ndarray:
    """:func:`partial_ratio` of each (prediction, gold) pair, as an int64 array; each distinct pair once.

    >>> partial_ratios(["east", "lan hong house", "east"], ["the east", "ian hong house", "the east"])
    array([100,  93, 100])
    """
    preds, golds = list(preds), list(golds)
    if len(preds) != len(golds):
        raise ValueError(f"partial_ratios needs as many predictions as golds, got {len(preds)} and {len(golds)}")
    scores: dict[tuple[str, str], int] = {}
    out = np.empty(len(preds), dtype=np.int64)
    for i, pair in enumerate(zip(preds, golds, strict=True)):
        score = scores.get(pair)
        if score is None:
            score = scores[pair] = partial_ratio(*pair)
        out[i] = score
    return out


def is_match(pred: str, gold: str) -> bool:
    """mwzeval's verdict on one slot value: ``partial_ratio(pred, gold) > 95``.

    >>> is_match("guesthouse", "guesthouses"), is_match("lan hong house", "ian hong house")
    (True, False)
    """
    return partial_ratio(pred, gold) > FUZZY_THRESHOLD
