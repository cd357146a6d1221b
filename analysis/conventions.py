"""Conventions as declared data: how both sides of a state are normalised before any metric.

Each named convention reproduces a community scorer's documented behaviour (METRICS.md). A
convention is a value, not a code path: `normalise_states` reads its switches.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from analysis import mwzeval_rules, sgd_rules

DONTCARE_POLICIES = ("keep", "drop_gold", "drop_both")
MULTI_VALUE_POLICIES = ("any", "first", "literal", "set", "intersect")
NORMALISER_STEPS = ("strip", "lower", "delete_whitespace", "synonyms", "time")
# A scorer's slot-dependent value rules, by the name a convention's `value_rules` gives: (slot name under
# the convention, value) -> the value that scorer compares. Each lives in its own rules module.
VALUE_RULE_FUNCTIONS: Mapping[str, Callable[[str, str], str]] = MappingProxyType(
    {"mwzeval": mwzeval_rules.normalise_value, "sgd": sgd_rules.normalise_value}
)
# A scorer's own slot-name rules, by the name a convention's `slot_rules` gives.
SLOT_RULE_FUNCTIONS: Mapping[str, Callable[[str], str]] = MappingProxyType({"mwzeval": mwzeval_rules.slot_name})
VALUE_RULES = ("", *VALUE_RULE_FUNCTIONS)
SLOT_RULES = ("", *SLOT_RULE_FUNCTIONS)
MATCHING = ("exact", "fuzzy", "fuzzy_int")
SLOT_SCOPES = ("all", "ontology", "gold", "turn_listed")
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
# ConvLab-2 `convlab2/dst/dstc9/utils.py::unify_value`: one value map per subtask, applied after
# lower-casing and before all whitespace is deleted (so ` none ` and `not mentioned` stay values).
DSTC9_SUBTASK_MAPS = MappingProxyType(
    {
        "multiwoz": MappingProxyType({"未提及": "", "none": "", "是的": "有", "不是": "没有"}),
        "crosswoz": MappingProxyType({"none": "", "free admission": "free"}),
    }
)
# Domains only a CrossWOZ / CrossWOZ-en state lists (every CrossWOZ turn lists all five domains).
CROSSWOZ_DOMAINS = frozenset({"metro", "地铁"})
# MultiWOZ 2.2 names its booking slots `bookday`, `bookpeople`, ... (mwzeval's gold); the 2.1 raw data and
# most systems use the bare names. Keyed by (domain, bare slot name as mwzeval spells it).
MWZ22_BOOKING = MappingProxyType(
    {
        ("hotel", "day"): "bookday",
        ("hotel", "people"): "bookpeople",
        ("hotel", "stay"): "bookstay",
        ("restaurant", "day"): "bookday",
        ("restaurant", "people"): "bookpeople",
        ("restaurant", "time"): "booktime",
        ("train", "people"): "bookpeople",
    }
)
MWZ_BARE_BOOKING = MappingProxyType({"bookday": "day", "bookpeople": "people", "bookstay": "stay", "booktime": "time"})

# DSTC10 track 2 task 1's scores.py `normalize_dict`: a whole (lower-cased) number word to its digit.
DSTC10_NUMBER_WORDS = {
    w: str(i) for i, w in enumerate(("one", "two", "three", "four", "five", "six", "seven", "eight", "nine"), start=1)
}


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
    # Values that mark an empty *prediction*; None: the same as `empty_values`. mwzeval counts every
    # predicted value, `none` and "" included, so its set is empty.
    pred_empty_values: frozenset[str] | None = None
    # Slot-dependent value rules of a scorer, applied after `normaliser` ("mwzeval": its canonical
    # names, types, foods, times and parking/internet `free`).
    value_rules: str = ""
    # A scorer's own slot-name rules, applied after lower-casing and aliases ("mwzeval": lower-case,
    # spaces removed, arriveby -> arrive, leaveat -> leave).
    slot_rules: str = ""
    # Gold (domain, slot) renamed after the name rules (mwzeval's MultiWOZ 2.2 gold `bookday`, ...).
    gold_slot_renames: Mapping[tuple[str, str], str] = field(default_factory=dict)
    # Whether gold turns the prediction file lacks are scored (as empty predictions). mwzeval scores
    # only the turns the prediction file holds; the alignment report counts the others either way.
    score_missing_turns: bool = True
    # Precision, recall and F1 when their denominator is 0: None gives NaN; DSTC9 prints 1,
    # ConvLab-3 and mwzeval 0.
    empty_ratio: float | None = None
    # DSTC9: value maps per subtask; `subtask` is the one in force ("" = chosen from the data at scoring).
    subtask_synonyms: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    subtask: str = ""
    # Dialogue ids (exactly as written) a scorer leaves out, and why: its turns are not scored, and the
    # alignment report says so (the FGA repository's compute_accuracy_trippy.py skips PMUL1455.json).
    unscored_dialogues: Mapping[str, str] = field(default_factory=dict)
    # Unicode NFC before any comparison (values and names): `é` typed as e + combining accent equals `é`.
    # Off under the conventions named after a scorer: their scorers compare code points as written,
    # so normalising would print numbers they do not print on a file that mixes the two forms.
    unicode_nfc: bool = True

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("dontcare", self.dontcare, DONTCARE_POLICIES),
            ("multi_value", self.multi_value, MULTI_VALUE_POLICIES),
            ("matching", self.matching, MATCHING),
            ("slot_scope", self.slot_scope, SLOT_SCOPES),
            ("ontology", self.ontology, ONTOLOGIES),
            ("value_rules", self.value_rules, VALUE_RULES),
            ("slot_rules", self.slot_rules, SLOT_RULES),
        ):
            if value not in allowed:
                raise ValueError(f"convention {self.name}: {name} has to be one of {', '.join(allowed)}, got {value!r}")
        bad = [s for s in self.normaliser if s not in NORMALISER_STEPS]
        if bad:
            raise ValueError(f"convention {self.name}: unknown normaliser steps {bad}; known: {NORMALISER_STEPS}")

        if self.subtask and self.subtask not in self.subtask_synonyms:
            raise ValueError(f"convention {self.name}: subtask has to be one of {sorted(self.subtask_synonyms)}")

    @property
    def label(self) -> str:
        """The name as shown beside a number: DSTC9's subtask in force included."""
        return f"{self.name} (subtask {self.subtask})" if self.subtask and self.name == "dstc9" else self.name

    @property
    def pred_empty(self) -> frozenset[str]:
        """The values that mark an empty prediction."""
        return self.empty_values if self.pred_empty_values is None else self.pred_empty_values

    def describe(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        for key in ("empty_values", "dontcare_values"):
            out[key] = sorted(out[key])
        out["pred_empty_values"] = None if self.pred_empty_values is None else sorted(self.pred_empty_values)
        out["synonyms"] = dict(self.synonyms)
        out["slot_aliases"] = dict(self.slot_aliases)
        out["gold_slot_renames"] = {f"{d}-{s}": n for (d, s), n in self.gold_slot_renames.items()}
        out["subtask_synonyms"] = {k: dict(v) for k, v in self.subtask_synonyms.items()}
        out["unscored_dialogues"] = dict(self.unscored_dialogues)
        return out


_MWZEVAL = Convention(
    "mwzeval",
    "MultiWOZ_Evaluation (Tomiinek/MultiWOZ_Evaluation, mwzeval/normalization.py::normalize_data "
    "then mwzeval/metrics.py::get_dst): slot names lower-cased without spaces (arriveby→arrive, "
    "leaveat→leave), gold booking slots in MultiWOZ 2.2 names (bookday, bookpeople, bookstay, "
    "booktime: a predicted `day` does not match them); its value rules on both sides (canonical "
    "names, types, foods, times as HH:MM, parking/internet free→yes); gold dontcare dropped and the "
    'first gold alternative kept; every predicted value counts (`none` and "" too); fuzzywuzzy\'s '
    "integer partial_ratio > 95; only the turns the prediction file holds are scored; P/R/F1 0 "
    "when undefined.",
    empty_values=frozenset({"", "not mentioned", "none"}),
    pred_empty_values=frozenset(),
    dontcare="drop_gold",
    multi_value="first",
    matching="fuzzy_int",
    value_rules="mwzeval",
    slot_rules="mwzeval",
    gold_slot_renames=MWZ22_BOOKING,
    score_missing_turns=False,
    ontology="multiwoz30",
    empty_ratio=0.0,
    unicode_nfc=False,
)


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
            unicode_nfc=False,
        ),
        Convention(
            "dstc9",
            "DSTC9 track 2 (ConvLab-2 convlab2/dst/dstc9/utils.py::eval_states): per gold-listed slot, both "
            "values lower-cased, mapped by the subtask's map (multiwoz: 未提及/none empty, 是的→有, 不是→没有; "
            "crosswoz: none empty, free admission→free), then all whitespace deleted; equal strings match "
            "(` none ` and `not mentioned` are values); a list-valued gold accepts any element; predicted "
            "domains and slots the gold turn does not list are ignored; slot accuracy over every listed "
            "slot; precision, recall and F1 are 1 when their denominator is 0. The subtask is chosen from "
            "the data (crosswoz when the gold lists a Metro domain), or forced with dstc9-multiwoz / "
            "dstc9-crosswoz.",
            empty_values=frozenset({""}),
            normaliser=("lower", "synonyms", "delete_whitespace"),
            multi_value="any",
            slot_scope="turn_listed",
            ontology="listed",
            empty_ratio=1.0,
            subtask_synonyms=DSTC9_SUBTASK_MAPS,
            unicode_nfc=False,
        ),
        _MWZEVAL,
        replace(
            _MWZEVAL,
            name="mwzeval-lenient",
            notes="mwzeval's rules with shared slot names and every gold turn: booking slots named day/people/"
            "stay/time on both sides (a predicted `day` matches gold `bookday`), and a gold turn the "
            "prediction file lacks is scored as an empty prediction. Not what mwzeval prints: the kinder "
            "rule this tool used under the name mwzeval before.",
            slot_aliases=MWZ_BARE_BOOKING,
            gold_slot_renames={},
            score_missing_turns=True,
            unicode_nfc=True,
        ),
        Convention(
            "convlab3",
            "ConvLab-3 (ConvLab/ConvLab-3 convlab/dst/evaluate_unified_datasets.py::evaluate): per slot the "
            "sample's gold state lists (names compared as written; predicted domains and slots it does not "
            "list are ignored), both values lower-cased with all whitespace deleted, then split on `|`: "
            "right when any predicted alternative is a gold alternative; `none` and `dontcare` are "
            "ordinary values; accuracy is the share of samples without error; P/R/F1 0 when undefined.",
            empty_values=frozenset({""}),
            normaliser=("delete_whitespace", "lower"),
            multi_value="intersect",
            slot_scope="turn_listed",
            empty_ratio=0.0,
            unicode_nfc=False,
        ),
        Convention(
            "sgd",
            "The SGD evaluator (google-research schema_guided_dst evaluate.py + metrics.py). Its own numbers "
            "(per frame, fuzzy partial credit, all / seen / unseen, per service) come from analysis.sgd and "
            "need the schema (--schema, --train-schema): under this convention `jga` and `aga` are the "
            "evaluator's #ALL_SERVICES joint and average goal accuracy. The per-slot outcomes shown beside "
            "them are its comparison made binary: a predicted slot is right when its first value has fuzzy "
            "score 1.0 against a gold alternative (same words once lower-cased, punctuation removed and "
            "sorted); categorical slots, which the evaluator compares exactly (first value, "
            "case-sensitive), are judged the same way here, so a case-only difference on a categorical "
            "slot is right in the outcomes and wrong in the evaluator's numbers.",
            empty_values=frozenset({""}),
            multi_value="any",
            value_rules="sgd",
            ontology="observed",
            unicode_nfc=False,
        ),
        Convention(
            "dstc10",
            "DSTC10 track 2 task 1 (alexa/alexa-with-dstc10-track2-dataset task1/scripts/scores.py): entry and "
            "labels.json paired by position (a longer file's extra instances are not scored); only its 19 "
            "restaurant/hotel/attraction slots count, others ignored on both sides; a slot holds a value when "
            'its key is present, even as an empty list (a predicted [""] is a spurious slot); values '
            "compared as sets after lower-casing and mapping a whole one..nine to its digit; a slot is right "
            "when the sets are equal; slot accuracy over 19 slots an instance; also its value and none "
            "precision/recall/F1 (analysis.dstc10_rules: value precision sums each held slot's pair-count F1 "
            "over the slots the prediction holds). Not reproduced in JGA and slot accuracy: scores.py counts "
            "matching pairs, so a list with two spellings of one value (Cheap, cheap) is wrong there and "
            "right here; never seen in the public labels or entries.",
            empty_values=frozenset({""}),
            normaliser=("lower", "synonyms"),
            synonyms=MappingProxyType(DSTC10_NUMBER_WORDS),
            multi_value="set",
            slot_scope="ontology",
            ontology="listed",
            score_missing_turns=False,
            empty_ratio=0.0,
            unicode_nfc=False,
        ),
        Convention(
            "fga-trippy",
            "The FGA repository (SuvodipDey/FGA compute_accuracy_trippy.py) on TripPy's per-slot correctness "
            "vectors (trippy_result.json: per turn a 0/1 per slot, no values): PMUL1455.json is not scored "
            "(not part of the official MultiWOZ test data, as the script says); a turn is right when every "
            "slot is 1 (JGA); slot accuracy is its 1s over the 30 slots, averaged over turns; FGA as the "
            "script computes it from the sets of wrong slots (the fga_sets metrics). Its average goal "
            "accuracy needs the gold states of som-dst_result.json, which the vectors do not carry: n/a, as "
            "is every metric that needs values.",
            ontology="multiwoz30",
            unscored_dialogues=MappingProxyType(
                {"PMUL1455.json": "compute_accuracy_trippy.py skips it: not part of the official MultiWOZ test data"}
            ),
            unicode_nfc=False,
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


for _subtask in DSTC9_SUBTASK_MAPS:
    CONVENTIONS[f"dstc9-{_subtask}"] = replace(
        CONVENTIONS["dstc9"],
        name=f"dstc9-{_subtask}",
        notes=f"DSTC9 track 2, subtask {_subtask} forced (see dstc9).",
        subtask=_subtask,
        synonyms=DSTC9_SUBTASK_MAPS[_subtask],
    )

# IC-DST and its descendants (Yushi-Hu/IC-DST, cwyoon-99/gpt-DST) score with TRADE's formulas plus one rule.
CONVENTIONS["icdst"] = replace(
    CONVENTIONS["trade"],
    name="icdst",
    notes="IC-DST's evaluate/evaluate_metrics.py::evaluate (Yushi-Hu/IC-DST; cwyoon-99/gpt-DST), on a running "
    "log's `pred` against `slot_values`: states as {domain-slot: value} compared literally (JGA: the dicts "
    "equal; dontcare, none and not mentioned are values like any other), except that a gold value a|b "
    "accepts a prediction equal to one alternative; slot accuracy is TRADE's compute_acc over a fixed 30 "
    "slots (with its rsplit('-') quirk), joint F1 TRADE's compute_prf averaged over turns (1 for an "
    "empty gold with an empty prediction); JGA per turn index is its accuracy of turn k.",
    empty_values=frozenset({""}),
    multi_value="any",
)


# CheckDST (wise-east/CheckDST) scores linearised states (ParlAI BART, SimpleTOD/PPTOD-style outputs).
CONVENTIONS["checkdst"] = Convention(
    name="checkdst",
    notes="CheckDST's src/checkdst/utils.py::extract_slot_from_string, then set equality of the triples (JGA "
    "as checkdst_class.py counts it): a value equal to 'centre' becomes 'center' and 'N-star' (N 0-5) becomes "
    "'N' (whole values only, as written: no lower-casing); a dontcare triple is dropped on both sides; 'none' "
    "and 'not mentioned' are values like any other. The split itself (a domain from its list, 'book day' "
    "style two-word slots, the <bs> markers) is the checkdst reader's.",
    empty_values=frozenset({""}),
    dontcare="drop_both",
    dontcare_values=frozenset({"dontcare"}),
    normaliser=("synonyms",),
    synonyms=MappingProxyType({"centre": "center", **{f"{n}-star": str(n) for n in range(6)}}),
    unicode_nfc=False,  # its sets compare code points as written
)


def resolve_convention(conv: Convention, domains: Iterable[str]) -> Convention:
    """The convention as it applies to one run: DSTC9's subtask chosen from the run's gold domains
    (crosswoz when they include a Metro domain, which every CrossWOZ turn lists; else multiwoz).

    >>> resolve_convention(CONVENTIONS["dstc9"], ["Hotel", "Metro"]).subtask
    'crosswoz'
    """
    if conv.subtask_synonyms and not conv.subtask:
        crosswoz = any(str(d).strip().lower() in CROSSWOZ_DOMAINS for d in domains)
        conv = replace(conv, subtask="crosswoz" if crosswoz else "multiwoz")
    if conv.subtask:
        conv = replace(conv, synonyms=conv.subtask_synonyms[conv.subtask])
    return conv


def get_convention(name: str | Convention) -> Convention:
    if isinstance(name, Convention):
        return name
    try:
        return CONVENTIONS[name]
    except KeyError:
        raise ValueError(f"convention has to be one of {', '.join(CONVENTIONS)}, got {name!r}") from None


_SPACES = re.compile(r"\s+")
_TIME = re.compile(r"^(\d{1,2})\s*[:.]\s*(\d{2})$")


def normalise_value(value: str, convention: Convention, slot: str = "") -> str:
    """One value through the convention's normaliser steps, then its scorer's slot-dependent value
    rules (`slot` is the slot's name under the convention; applied once per distinct value and slot).

    >>> normalise_value(" 5 : 30 ", CONVENTIONS["exact"]), normalise_value("Free Admission", CONVENTIONS["dstc9-crosswoz"])
    (' 5 : 30 ', 'free')
    >>> normalise_value("1715", CONVENTIONS["mwzeval"], "leave"), normalise_value(" 17 : 30", CONVENTIONS["convlab3"])
    ('17:15', '17:30')
    """
    if convention.unicode_nfc and not unicodedata.is_normalized("NFC", value):
        value = unicodedata.normalize("NFC", value)
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
    if convention.value_rules:
        value = VALUE_RULE_FUNCTIONS[convention.value_rules](slot, value)
    return value


def _empty(convention: Convention, side: str) -> frozenset[str]:
    return convention.empty_values if side == "gold" else convention.pred_empty


def _alternatives(value: str, convention: Convention, side: str, slot: str = "") -> list[str]:
    empty = _empty(convention, side)
    alts = [normalise_value(a, convention, slot) for a in value.split("|")]
    return [a for a in alts if a.strip().lower() not in empty]


def _canonical(value: str, convention: Convention, side: str, slot: str = "") -> tuple[str, str | None]:
    """(value used for comparison, `|`-joined alternatives that match).

    `any` and `first` are rules about *gold* values; a prediction holding `a|b` is one literal value
    (a tracker that hedges does not get the benefit of the doubt). `set` applies to both sides, and so
    does `intersect` (ConvLab-3: right when the two sides' alternatives share one).
    """
    if value.strip().lower() in _empty(convention, side):
        return "", None  # an empty marker is empty before any normaliser step rewrites it
    if side == "pred" and convention.value_rules == "sgd":
        value = value.split("|", 1)[0]  # the SGD evaluator reads a prediction's first listed value only
    if "|" not in value or convention.multi_value == "literal":
        return normalise_value(value, convention, slot), None
    alts = _alternatives(value, convention, side, slot)
    if not alts:
        return "", None
    if convention.multi_value == "set":
        return "|".join(sorted(set(alts))), None
    if convention.multi_value == "intersect":
        return "|".join(alts), ("|".join(alts) if len(alts) > 1 else None)
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


def normalise_codes(
    states: pd.DataFrame, convention: Convention, *, side: str, slot_names: np.ndarray | None = None
) -> NormalisedCodes:
    """The value work of `normalise_states` (names aside), once per distinct value, as codes.

    Under slot-dependent value rules (`value_rules`), once per distinct (slot, value): `slot_names`
    gives each row's slot name under the convention (computed here when not given).
    """
    drop_dontcare = convention.dontcare == "drop_both" or (convention.dontcare == "drop_gold" and side == "gold")
    empty = _empty(convention, side)
    codes, uniques = pd.factorize(states["value"])
    distinct = uniques.tolist()  # plain strings: iterating a pyarrow-backed Index costs more per element
    if convention.value_rules:
        if slot_names is None:
            slot_names = side_slot_names(states, convention, side)
        slot_codes, slot_uniques = pd.factorize(np.asarray(slot_names, dtype=object))
        width = max(len(slot_uniques), 1)
        pair_codes, pair_ids = pd.factorize(codes.astype("int64") * width + slot_codes)
        pairs = [(distinct[int(p) // width], slot_uniques[int(p) % width]) for p in pair_ids.tolist()]
        canon = [_canonical(v, convention, side, str(n)) for v, n in pairs]
        codes = pair_codes
        distinct = [v for v, _ in pairs]
    else:
        canon = [_canonical(v, convention, side) for v in distinct]
    marker = [c[0].strip().lower() for c in canon]
    drop = np.array([m in empty or (drop_dontcare and m in convention.dontcare_values) for m in marker], dtype=bool)
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
            "slot": pd.array(side_slot_names(states, convention, side), dtype="str").take(keep),
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
    """One (domain, slot) name under the convention's naming rules (lower-casing, slot aliases, the
    scorer's own slot rules). Side-specific renames (`gold_slot_renames`) are the scorer's business."""
    if convention.unicode_nfc:
        domain, slot = _nfc(domain), _nfc(slot)
    if convention.lower_names:
        domain, slot = domain.lower(), slot.lower()
    return domain, _slot_name(slot, convention)


def _nfc(text: str) -> str:
    return text if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)


def _slot_name(slot: str, convention: Convention) -> str:
    if convention.slot_rules:
        slot = SLOT_RULE_FUNCTIONS[convention.slot_rules](slot)
    return convention.slot_aliases.get(slot, slot)


def side_slot_names(states: pd.DataFrame, convention: Convention, side: str) -> np.ndarray:
    """Each state row's slot name under the convention, with the gold side's renames applied."""
    slots = np.asarray(_names(states["slot"], convention, aliases=True), dtype=object)
    if side == "gold" and convention.gold_slot_renames and len(slots):
        domains = np.asarray(_names(states["domain"], convention, aliases=False), dtype=object)
        renames = convention.gold_slot_renames
        slots = np.array([renames.get((d, s), s) for d, s in zip(domains, slots, strict=True)], dtype=object)
    return slots


def _names(names: pd.Series, convention: Convention, *, aliases: bool) -> pd.api.extensions.ExtensionArray:
    """Domain or slot names under the convention (lower-cased, aliased), mapped once per distinct name."""
    if not (convention.lower_names or convention.unicode_nfc) and not (
        aliases and (convention.slot_aliases or convention.slot_rules)
    ):
        return names.astype("str").array
    codes, distinct = pd.factorize(names)
    mapped = [_nfc(n) if convention.unicode_nfc else n for n in distinct]
    mapped = [n.lower() if convention.lower_names else n for n in mapped]
    if aliases:
        mapped = [_slot_name(n, convention) for n in mapped]
    return pd.array(mapped, dtype="str").take(codes)
