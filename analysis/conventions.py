"""Conventions as declared data: how both sides of a state are normalised before any metric.

Each named convention reproduces a community scorer's documented behaviour (METRICS.md). A
convention is a value, not a code path: `normalise_states` reads its switches.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

DONTCARE_POLICIES = ("keep", "drop_gold", "drop_both")
MULTI_VALUE_POLICIES = ("any", "first", "literal", "set")
NORMALISER_STEPS = ("strip", "lower", "delete_whitespace", "synonyms", "time")
MATCHING = ("exact", "fuzzy")
SLOT_SCOPES = ("all", "ontology", "gold")
ONTOLOGIES = ("listed", "observed", "multiwoz30")

COMMON_EMPTY = frozenset({"", "none", "not mentioned", "未提及"})
DONTCARE_VALUES = frozenset({"dontcare", "don't care", "do n't care", "dont care", "doesn't care", "不在乎"})

# MultiWOZ slot names as systems spell them, mapped to the raw data's names (lower-cased).
MULTIWOZ_SLOT_ALIASES = MappingProxyType(
    {
        "arrive by": "arriveby",
        "arrive": "arriveby",
        "leave at": "leaveat",
        "leave": "leaveat",
        "price range": "pricerange",
        "price": "pricerange",
        "book day": "day",
        "bookday": "day",
        "book people": "people",
        "bookpeople": "people",
        "book stay": "stay",
        "bookstay": "stay",
        "book time": "time",
        "booktime": "time",
        "dest": "destination",
        "depart": "departure",
    }
)
# TRADE's 30 slots (hospital and police dropped), in the names above.
MULTIWOZ30 = frozenset(
    [
        ("hotel", s)
        for s in (
            "pricerange",
            "type",
            "parking",
            "stay",
            "day",
            "people",
            "area",
            "stars",
            "internet",
            "name",
        )
    ]
    + [("train", s) for s in ("destination", "day", "departure", "arriveby", "people", "leaveat")]
    + [("attraction", s) for s in ("area", "name", "type")]
    + [("restaurant", s) for s in ("food", "pricerange", "area", "name", "time", "day", "people")]
    + [("taxi", s) for s in ("leaveat", "destination", "departure", "arriveby")]
)
DSTC9_SYNONYMS = MappingProxyType({"是的": "有", "不是": "没有", "free admission": "free"})


@dataclass(frozen=True)
class Convention:
    """The switches of METRICS.md, one field each; `notes` says which tool's behaviour it follows."""

    name: str
    notes: str
    empty_values: frozenset[str] = COMMON_EMPTY
    dontcare: str = "keep"
    dontcare_values: frozenset[str] = DONTCARE_VALUES
    multi_value: str = "literal"
    normaliser: tuple[str, ...] = ()
    synonyms: Mapping[str, str] = field(default_factory=dict)
    matching: str = "exact"
    fuzzy_threshold: float = 95.0
    lower_names: bool = False
    slot_aliases: Mapping[str, str] = field(default_factory=dict)
    slot_scope: str = "all"
    ontology: str = "listed"
    compare_relation: bool = False

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("dontcare", self.dontcare, DONTCARE_POLICIES),
            ("multi_value", self.multi_value, MULTI_VALUE_POLICIES),
            ("matching", self.matching, MATCHING),
            ("slot_scope", self.slot_scope, SLOT_SCOPES),
            ("ontology", self.ontology, ONTOLOGIES),
        ):
            if value not in allowed:
                raise ValueError(f"convention {self.name}: {name} has to be one of {', '.join(allowed)}, got {value!r}")
        bad = [s for s in self.normaliser if s not in NORMALISER_STEPS]
        if bad:
            raise ValueError(f"convention {self.name}: unknown normaliser steps {bad}; known: {NORMALISER_STEPS}")

    def describe(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        for key in ("empty_values", "dontcare_values"):
            out[key] = sorted(out[key])
        out["synonyms"] = dict(self.synonyms)
        out["slot_aliases"] = dict(self.slot_aliases)
        return out


CONVENTIONS: dict[str, Convention] = {
    c.name: c
    for c in (
        Convention(
            "exact",
            "Literal comparison of the strings as written (CrossWOZ's evaluator); empty markers dropped; "
            "dontcare is a value; "
            "a `|` value is one literal string; slot accuracy over the slots the gold file lists.",
        ),
        Convention(
            "trade",
            "TRADE (Wu et al. 2019): states as sets of domain-slot-value strings compared literally, "
            "dontcare kept, a literal `none` value compared like any other (TRADE omits none slots "
            "before writing); raw MultiWOZ `not mentioned` is empty, as TRADE's preprocessing makes it; "
            "slot accuracy is compute_acc over the fixed 30 slots.",
            empty_values=frozenset({"", "not mentioned"}),
            lower_names=True,
            slot_aliases=MULTIWOZ_SLOT_ALIASES,
            ontology="multiwoz30",
        ),
        Convention(
            "dstc9",
            "DSTC9 track 2: lower-case, none/未提及 empty, 是的→有, 不是→没有, free admission→free, all "
            "whitespace deleted; a list-valued gold accepts any element; slot accuracy over every listed slot.",
            normaliser=("lower", "synonyms", "delete_whitespace"),
            synonyms=DSTC9_SYNONYMS,
            multi_value="any",
            ontology="listed",
        ),
        Convention(
            "mwzeval",
            "MultiWOZ_Evaluation (Nekvinda & Dušek 2021): slot-name aliases, lower-case, times as HH:MM, "
            "dontcare dropped from gold only, first gold alternative, fuzzy match partial_ratio > 95.",
            normaliser=("strip", "lower", "time"),
            dontcare="drop_gold",
            multi_value="first",
            matching="fuzzy",
            lower_names=True,
            slot_aliases=MULTIWOZ_SLOT_ALIASES,
            ontology="multiwoz30",
        ),
        Convention(
            "convlab3",
            "ConvLab-3 unified evaluation: lower-case and strip, any gold alternative matches, predictions "
            "of slots outside the gold file's listed slots ignored.",
            normaliser=("strip", "lower"),
            multi_value="any",
            lower_names=True,
            slot_scope="ontology",
        ),
        Convention(
            "risawoz",
            "RiSAWOZ / X-RiSAWOZ: states as sets of (domain, slot, relation, set of lower-cased `|` "
            "alternatives); the relation must match too. Only `null` is empty: a predicted value "
            "`not mentioned` is a wrong prediction, not an absent slot.",
            empty_values=frozenset({""}),
            normaliser=("strip", "lower"),
            multi_value="set",
            compare_relation=True,
            ontology="observed",
        ),
    )
}


def get_convention(name: str | Convention) -> Convention:
    if isinstance(name, Convention):
        return name
    try:
        return CONVENTIONS[name]
    except KeyError:
        raise ValueError(f"convention has to be one of {', '.join(CONVENTIONS)}, got {name!r}") from None


_SPACES = re.compile(r"\s+")
_TIME = re.compile(r"^(\d{1,2})\s*[:.]\s*(\d{2})$")


def normalise_value(value: str, convention: Convention) -> str:
    """One value through the convention's normaliser steps (applied once per distinct value).

    >>> normalise_value(" 5 : 30 ", CONVENTIONS["mwzeval"]), normalise_value("Free Admission", CONVENTIONS["dstc9"])
    ('05:30', 'free')
    """
    for step in convention.normaliser:
        if step == "strip":
            value = _SPACES.sub(" ", value.strip())
        elif step == "lower":
            value = value.lower()
        elif step == "delete_whitespace":
            value = _SPACES.sub("", value)
        elif step == "synonyms":
            value = convention.synonyms.get(value, value)
        elif step == "time":
            match = _TIME.match(value.strip())
            if match:
                value = f"{int(match.group(1)):02d}:{match.group(2)}"
    return value


def _alternatives(value: str, convention: Convention) -> list[str]:
    alts = [normalise_value(a, convention) for a in value.split("|")]
    return [a for a in alts if a.strip().lower() not in convention.empty_values]


def _canonical(value: str, convention: Convention, side: str) -> tuple[str, str | None]:
    """(value used for comparison, `|`-joined alternatives when gold accepts any of several).

    `any` and `first` are rules about *gold* values; a prediction holding `a|b` is one literal value
    (a tracker that hedges does not get the benefit of the doubt). `set` applies to both sides.
    """
    if value.strip().lower() in convention.empty_values:
        return "", None  # an empty marker is empty before any normaliser step rewrites it
    if "|" not in value or convention.multi_value == "literal":
        return normalise_value(value, convention), None
    alts = _alternatives(value, convention)
    if not alts:
        return "", None
    if convention.multi_value == "set":
        return "|".join(sorted(set(alts))), None
    if side == "pred":
        # A hedging prediction `a|b` is one value: it matches only a gold with exactly these alternatives.
        return "|".join(alts), None
    if convention.multi_value == "first":
        return alts[0], None
    return alts[0], ("|".join(alts) if len(alts) > 1 else None)


@dataclass(frozen=True)
class NormalisedCodes:
    """One side's state rows under a convention, as integer codes into short lists of strings.

    `keep`: the input rows kept; per kept row `value` (index into `values`, the normalised values)
    and `display` (index into `displays`, the raw values). `alternatives[c]` belongs to `values[c]`.
    Scoring works on these codes and builds string columns once, at the end.
    """

    keep: np.ndarray
    value: np.ndarray
    display: np.ndarray
    values: list[str | None]
    alternatives: list[str | None]
    displays: list[str]


def normalise_codes(states: pd.DataFrame, convention: Convention, *, side: str) -> NormalisedCodes:
    """The value work of `normalise_states` (names aside), once per distinct value, as codes."""
    drop_dontcare = convention.dontcare == "drop_both" or (convention.dontcare == "drop_gold" and side == "gold")
    codes, uniques = pd.factorize(states["value"])
    distinct = uniques.tolist()  # plain strings: iterating a pyarrow-backed Index costs more per element
    canon = [_canonical(v, convention, side) for v in distinct]
    marker = [c[0].strip().lower() for c in canon]
    drop = np.array(
        [m in convention.empty_values or (drop_dontcare and m in convention.dontcare_values) for m in marker],
        dtype=bool,
    )
    keep = np.flatnonzero(~drop[codes]) if len(codes) else np.zeros(0, dtype="int64")
    kept_codes = codes[keep]
    values: list[str | None] = [c[0] for c in canon]
    alternatives: list[str | None] = [c[1] for c in canon]
    value = kept_codes
    if convention.compare_relation:
        # The relation is part of the value ("<= 5"); a missing relation leaves the value missing.
        rel_codes, relations = pd.factorize(states["relation"].array.take(keep), use_na_sentinel=True)
        combo, combos = pd.factorize(kept_codes * (len(relations) + 1) + rel_codes + 1)
        pairs = [(int(c) // (len(relations) + 1), int(c) % (len(relations) + 1) - 1) for c in combos]
        values = [
            values[v]
            if r >= 0 and relations[r] in ("=", "equal_to")
            else (None if r < 0 else f"{relations[r]} {values[v]}")
            for v, r in pairs
        ]
        alternatives = [alternatives[v] for v, _ in pairs]
        value = combo
    return NormalisedCodes(keep, value, kept_codes, values, alternatives, distinct)


def normalise_states(states: pd.DataFrame, convention: Convention, *, side: str) -> pd.DataFrame:
    """Apply a convention to one side's raw state rows.

    Returns rows keyed like the input with columns `domain`, `slot`, `value` (normalised, used for
    comparison), `display` (the raw value, shown to people) and `alternatives` (gold accepting any of
    several values under the `any` policy, else missing). Work is done once per distinct value or
    name, then mapped, so the cost grows with the vocabulary and not with the number of turns.
    """
    coded = normalise_codes(states, convention, side=side)
    keep = coded.keep
    out = pd.DataFrame(
        {
            "dialogue_id": states["dialogue_id"].array.take(keep),
            "turn_index": states["turn_index"].to_numpy()[keep],
            "domain": _names(states["domain"], convention, aliases=False).take(keep),
            "slot": _names(states["slot"], convention, aliases=True).take(keep),
            "value": pd.array(coded.values, dtype="str").take(coded.value),
            "display": states["value"].array.take(keep),
            "alternatives": pd.array(coded.alternatives, dtype="str").take(coded.value),
        }
    )
    for column in states.columns:  # extra columns (e.g. raw names kept by a caller) pass through
        if column not in ("dialogue_id", "turn_index", "domain", "slot", "relation", "value"):
            out[column] = states[column].array.take(keep)
    return out


def convention_name(domain: str, slot: str, convention: Convention) -> tuple[str, str]:
    """One (domain, slot) name under the convention's naming rules (lower-casing, slot aliases)."""
    if convention.lower_names:
        domain, slot = domain.lower(), slot.lower()
    return domain, convention.slot_aliases.get(slot, slot)


def _names(names: pd.Series, convention: Convention, *, aliases: bool) -> pd.api.extensions.ExtensionArray:
    """Domain or slot names under the convention (lower-cased, aliased), mapped once per distinct name."""
    if not convention.lower_names and not (aliases and convention.slot_aliases):
        return names.astype("str").array
    codes, distinct = pd.factorize(names)
    mapped = [n.lower() if convention.lower_names else n for n in distinct]
    if aliases:
        mapped = [convention.slot_aliases.get(n, n) for n in mapped]
    return pd.array(mapped, dtype="str").take(codes)
