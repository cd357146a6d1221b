"""A `Run` under a convention becomes scored tables: `turns` with per-turn counts and `slots` with outcomes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from rapidfuzz import fuzz
from rapidfuzz.process import cpdist

from analysis import gold_side, scorer_inputs
from analysis.conventions import (
    MULTIWOZ30,
    Convention,
    NormalisedCodes,
    convention_name,
    get_convention,
    normalise_codes,
    resolve_convention,
)
from analysis.gold_side import arrow_strings
from analysis.model import NOT_TRIPLE_DOMAIN, UNPARSEABLE_COLUMN, Run, RunMeta
from analysis.outcomes import MISSED_CODES, OUTCOMES, SPURIOUS_CODES, Outcome

T = TypeVar("T")

OUTCOME_DTYPE = pd.CategoricalDtype(list(OUTCOMES))  # category i is the outcome with code i
SLOT_KEY = ["tid", "domain", "slot"]
SEP = "\x1f"  # joins domain and slot into one pairing name; never part of a name
COUNT_COLUMNS = [
    "n_gold",
    "n_pred",
    "n_correct",
    "n_wrong",
    "n_missed",
    "n_spurious",
    "n_unparseable",  # gold slots of turns whose predicted text did not parse; also counted in n_missed
    "n_err_ontology",
    "n_trade_extra",
]


@dataclass
class Scored:
    """One or more runs scored under one convention; several runs are one concatenation on `run_id`.

    `turns`: every turn, keyed by `tid` (unique across the runs), with `run_id`, `dialogue_id`,
    `turn_index`, utterances, dialogue attributes, `is_final`, the counts in `COUNT_COLUMNS` and
    `joint_correct`. `slots`: one row per (turn, domain, slot) present in gold or prediction with
    `gold_value`, `pred_value` (normalised), `gold_display`/`pred_display` (as in the file),
    `outcome` and `in_ontology`. `ontology` lists (run_id, domain, slot) for slot accuracy.
    """

    convention: Convention
    metas: list[RunMeta]
    turns: pd.DataFrame
    slots: pd.DataFrame
    ontology: pd.DataFrame
    alignment: dict[str, dict] = field(default_factory=dict)
    # The gold file's shared results (`Run.gold_side`, read through `analysis.gold_side.shared`): what
    # depends on the gold turns alone, computed once per gold file; not part of the value.
    gold_side: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)
    # Derived results (see `memoised`); not part of the value.
    _memo: dict[Any, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def memoised(self, key: Any, compute: Callable[[], T]) -> T:
        """`compute()`, once per `key` for these very tables: a Scored given new `turns` or `slots`
        computes again. Memoised values are shared; callers copy before changing them."""
        cached = self._memo.get(key)
        if cached is not None and cached[0] is self.turns and cached[1] is self.slots:
            return cached[2]
        value = compute()
        self._memo[key] = (self.turns, self.slots, value)
        return value

    @property
    def run_ids(self) -> list[str]:
        return [m.run_id for m in self.metas]

    def run(self, run_id: str) -> Scored:
        """The scored tables of one run of a combination."""
        meta = next(m for m in self.metas if m.run_id == run_id)
        return Scored(
            self.convention,
            [meta],
            self.turns[self.turns["run_id"] == run_id],
            self.slots[self.slots["run_id"] == run_id],
            self.ontology[self.ontology["run_id"] == run_id],
            {run_id: self.alignment.get(run_id, {})},
        )


def _drop_unscored(turns: pd.DataFrame, alignment: dict, conv: Convention) -> tuple[pd.DataFrame, dict]:
    """The turns without the dialogues the convention's scorer leaves out (ids as written), and the alignment
    report with a note and a warning naming them: left out, never dropped silently."""
    ids = turns["dialogue_id"].astype("str")
    skipped = ids.isin(list(conv.unscored_dialogues)).to_numpy(dtype=bool)
    if not skipped.any():
        return turns, alignment
    found = sorted(set(ids[skipped]))
    reasons = "; ".join(f"{d} ({conv.unscored_dialogues[d]})" for d in found)
    alignment = {
        **alignment,
        "notes": {
            **alignment.get("notes", {}),
            "dialogues_not_scored": len(found),
            "turns_of_unscored_dialogues": int(skipped.sum()),
        },
        "warnings": [
            *alignment.get("warnings", []),
            f"{len(found)} dialogue{'s' if len(found) > 1 else ''} ({int(skipped.sum())} turns) not scored under "
            f"{conv.name}: {reasons}",
        ],
    }
    return turns[~skipped], alignment


@dataclass
class _Side:
    """One side's state rows during scoring: integer codes into short string lists (see
    `NormalisedCodes`); strings are built once, for the `slots` table."""

    key: np.ndarray  # turn id x domain-slot pair code
    value: np.ndarray  # index into values (and alternatives)
    display: np.ndarray  # index into displays
    values: list[str | None]
    alternatives: list[str | None]
    displays: list[str]
    raw: np.ndarray  # code of the slot name as the file writes it
    # Merged duplicate slots (a triple list naming one slot twice): key -> the value codes merged.
    merged: dict[int, list[int]] = field(default_factory=dict)

    def subset(self, rows: np.ndarray) -> _Side:
        return _Side(
            self.key[rows],
            self.value[rows],
            self.display[rows],
            self.values,
            self.alternatives,
            self.displays,
            self.raw[rows],
        )


def score_run(run: Run, convention: str | Convention | None = None) -> Scored:
    """Normalise both sides under `convention` (default: the run's own), pair slots, classify outcomes."""
    conv = get_convention(convention if convention is not None else run.meta.convention)
    # The gold as the convention's scorer would be handed it (its own pipeline's preparation), and how.
    run, gold_input = scorer_inputs.prepare(run, conv)
    conv = resolve_convention(conv, pc.unique(arrow_strings(run.gold["domain"])).to_pylist())
    run_id = run.meta.run_id
    alignment = run.alignment.to_dict()
    if gold_input is not None:
        _note_gold_input(alignment, conv, gold_input)
    turns, alignment, turn_dialogue, dialogue_ids = _scored_turns(run, conv, alignment)
    paired = _pair(run, conv, turns, turn_dialogue, dialogue_ids)
    slots = _slots(run, conv, turns, paired, alignment)
    turns = _attach_counts(turns, slots)
    ontology = paired.ontology.assign(run_id=run_id)[["run_id", "domain", "slot"]]
    return Scored(conv, [run.meta], turns, slots, ontology, {run_id: alignment}, gold_side=run.gold_side)


def _note_gold_input(alignment: dict[str, Any], conv: Convention, gold_input: scorer_inputs.GoldInput) -> None:
    """The report's note (and warning) of how the convention's scorer met the gold (`scorer_inputs`)."""
    alignment["notes"] = {
        **alignment.get("notes", {}),
        scorer_inputs.NOTE: {"status": gold_input.status, "note": gold_input.note},
    }
    line = scorer_inputs.warning(conv, gold_input)
    if line:
        alignment["warnings"] = [*alignment.get("warnings", []), line]


def _scored_turns(
    run: Run, conv: Convention, alignment: dict[str, Any]
) -> tuple[pd.DataFrame, dict[str, Any], np.ndarray, pa.Array]:
    """The turns the convention scores, in dialogue and turn order, with `run_id`, `tid` and `is_final`;
    the report with what was left out; each turn's dialogue code and the dialogue ids."""
    run_id = run.meta.run_id
    turns = run.turns
    if not conv.score_missing_turns and "pred_missing" in turns and turns["pred_missing"].any():
        # mwzeval scores only the turns the prediction file holds; the report still counts the others.
        n_missing = int(turns["pred_missing"].sum())
        turns = turns[~turns["pred_missing"].to_numpy(dtype=bool)]
        alignment["notes"] = {**alignment.get("notes", {}), "turns_not_scored": n_missing}
        alignment["warnings"] = [
            *alignment.get("warnings", []),
            f"{n_missing} gold turns without a prediction are not scored under {conv.name} "
            "(its scorer scores only the turns the prediction file holds)",
        ]
    if conv.unscored_dialogues:
        turns, alignment = _drop_unscored(turns, alignment, conv)
    # A dialogue's turns are consecutive rows, in turn order: the metrics of what changed between turns
    # (FGA, turn-level accuracy, GCA) read the previous turn as the previous row. Files are read that
    # way, so their order stays; only a Run built in another order (a test, a notebook) is reordered.
    dialogue_order = pd.factorize(turns["dialogue_id"].to_numpy())[0]
    order = np.lexsort((turns["turn_index"].to_numpy(), dialogue_order))
    if (order != np.arange(len(order))).any():
        turns = turns.take(order)
    turns = turns.reset_index(drop=True)
    if UNPARSEABLE_COLUMN not in turns:  # only LLM text files have unparseable turns; every run has the column
        turns[UNPARSEABLE_COLUMN] = False
    turns.insert(0, "run_id", run_id)
    turns.insert(1, "tid", np.arange(len(turns), dtype="int64"))
    # The turns' dialogues: the same for every run of one gold file that scores the same turns.
    dialogue_ids, turn_dialogue, is_final = gold_side.shared(
        _Scoring(turns, [run.meta], run.gold_side), "turn dialogues", lambda: _turn_dialogues(turns)
    )
    turns["is_final"] = is_final
    return turns, alignment, turn_dialogue, dialogue_ids


def _turn_dialogues(turns: pd.DataFrame) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """The dialogue ids in order of appearance, each turn's dialogue code and whether it is its dialogue's
    last (highest) turn index. Read-only arrays."""
    dialogue_ids = pc.unique(arrow_strings(turns["dialogue_id"]))
    turn_dialogue = _dialogue_codes(turns, dialogue_ids)
    turn_index = turns["turn_index"].to_numpy()
    last = np.full(len(dialogue_ids), -1, dtype="int64")
    np.maximum.at(last, turn_dialogue, turn_index)
    is_final = turn_index == last[turn_dialogue]
    turn_dialogue.flags.writeable = False
    is_final.flags.writeable = False
    return dialogue_ids, turn_dialogue, is_final


@dataclass
class _Paired:
    """Both sides' slot rows keyed by (turn id x domain-slot pair), after the convention's slot scope."""

    gold: _Side
    pred: _Side
    n_pairs: int
    pair_domain: np.ndarray  # each pair's domain and slot names (convention names)
    pair_slot: np.ndarray
    gold_pairs: np.ndarray  # the pairs gold names
    pair_in_ontology: np.ndarray
    ontology: pd.DataFrame
    raw_names: list[str]  # the slot names as the files write them


def _pair(
    run: Run, conv: Convention, turns: pd.DataFrame, turn_dialogue: np.ndarray, dialogue_ids: pa.Array
) -> _Paired:
    """Normalise both sides under `conv` and key every row by turn and domain-slot pair."""
    # Both sides stay integer codes until the `slots` table is built: every string column taken or
    # factorized on ~40k rows costs about a millisecond, and this runs for every run and convention.
    # The gold rows' turn ids, name encodings and value codes: the same for every run of one gold file.
    gold_part = _gold_pairing(run, conv, turns, turn_dialogue, dialogue_ids)
    tids = [gold_part.tids, *_turn_ids(turns, turn_dialogue, dialogue_ids, run.pred)]
    domain_codes, domains = _name_codes(gold_part.domains, run.pred["domain"], conv, aliases=False)
    raw: list = []
    slot_codes, slot_names = _name_codes(gold_part.slots, run.pred["slot"], conv, aliases=True, raw=raw)
    raw_codes, raw_names = raw
    if conv.gold_slot_renames:
        slot_codes = (_rename_gold(domain_codes[0], slot_codes[0], domains, slot_names, conv), slot_codes[1])
    names_array = np.asarray(slot_names, dtype=object)
    coded = [
        gold_part.normalised(
            lambda: normalise_codes(
                run.gold, conv, side="gold", slot_names=names_array[slot_codes[0]] if conv.value_rules else None
            )
        ),
        normalise_codes(
            run.pred, conv, side="pred", slot_names=names_array[slot_codes[1]] if conv.value_rules else None
        ),
    ]
    n_names = max(len(slot_names), 1)
    kept = []  # per side: turn id, domain-slot name key, value and display codes of the rows kept
    raw_kept = []  # per side: the slot name as the file writes it (the seed recipe's key)
    for c, tid_all, dom, slo, raw in zip(coded, tids, domain_codes, slot_codes, raw_codes, strict=True):
        tid = tid_all[c.keep]
        found = tid >= 0  # rows of unknown turns are dropped
        rows = c.keep[found]
        kept.append((tid[found], dom[rows] * n_names + slo[rows], c.value[found], c.display[found]))
        raw_kept.append(raw[rows])
    # Pair gold and prediction on one integer key (turn id x domain-slot code): joins on strings cost
    # several times more.
    n_gold_rows = len(kept[0][0])
    codes, pair_ids = _factorize_small(np.concatenate([kept[0][1], kept[1][1]]), len(domains) * n_names)
    n_pairs = max(len(pair_ids), 1)
    pair_domain = np.asarray(domains, dtype=object)[pair_ids // n_names]
    pair_slot = np.asarray(slot_names, dtype=object)[pair_ids % n_names]
    gold_pairs = _sorted_unique(codes[:n_gold_rows])
    ontology = _ontology(run, conv, zip(pair_domain[gold_pairs], pair_slot[gold_pairs], strict=True))
    gold, pred = (
        _Side(tid * n_pairs + pair_codes, value, display, c.values, c.alternatives, c.displays, raw)
        for (tid, _, value, display), pair_codes, c, raw in zip(
            kept, (codes[:n_gold_rows], codes[n_gold_rows:]), coded, raw_kept, strict=True
        )
    )
    onto_names = set(zip(ontology["domain"], ontology["slot"], strict=True))
    pair_in_ontology = np.array([pair in onto_names for pair in zip(pair_domain, pair_slot, strict=True)], dtype=bool)
    if conv.slot_scope == "ontology":
        pred = pred.subset(pair_in_ontology[pred.key % n_pairs])
    elif conv.slot_scope == "gold":
        pred = pred.subset(np.isin(pred.key, gold.key))
    elif conv.slot_scope == "turn_listed":
        pred = pred.subset(_listed_in_turn(run, turns, conv, pred, gold, pair_domain, pair_slot, n_pairs))
    gold, pred = _merge_duplicates(gold), _merge_duplicates(pred)
    return _Paired(gold, pred, n_pairs, pair_domain, pair_slot, gold_pairs, pair_in_ontology, ontology, raw_names)


def _slots(run: Run, conv: Convention, turns: pd.DataFrame, paired: _Paired, alignment: dict[str, Any]) -> pd.DataFrame:
    """The `slots` table: both sides joined on their key, each row's outcome, codes and counts."""
    run_id = run.meta.run_id
    gold, pred, n_pairs = paired.gold, paired.pred, paired.n_pairs
    pair_domain, pair_slot, gold_pairs = paired.pair_domain, paired.pair_slot, paired.gold_pairs
    pair_in_ontology, raw_names = paired.pair_in_ontology, paired.raw_names
    key, gold_row, pred_row = _outer_join(gold.key, pred.key)
    tid = key // n_pairs
    pair = key % n_pairs
    gold_value, pred_value = _pick(gold.value, gold_row), _pick(pred.value, pred_row)
    # Comparable value codes of both sides (-1: no value).
    common, _ = pd.factorize(np.array([*gold.values, *pred.values], dtype=object))
    gold_common = _pick(common[: len(gold.values)], gold_value)
    pred_common = _pick(common[len(gold.values) :], pred_value)

    def strings(values: list, codes: np.ndarray) -> pd.api.extensions.ExtensionArray:
        return pd.array(values, dtype="str").take(codes, allow_fill=True)

    slots = pd.DataFrame(
        {
            "run_id": pd.array([run_id], dtype="str").take(np.zeros(len(key), dtype="int64")),
            "tid": tid,
            "domain": pd.array(pair_domain, dtype="str").take(pair),
            "slot": pd.array(pair_slot, dtype="str").take(pair),
            "dialogue_id": turns["dialogue_id"].astype("str").array.take(tid),
            "turn_index": turns["turn_index"].to_numpy()[tid],
            "gold_value": strings(gold.values, gold_value),
            "gold_display": strings(gold.displays, _pick(gold.display, gold_row)),
            "gold_alternatives": strings(gold.alternatives, gold_value),
            "pred_value": strings(pred.values, pred_value),
            "pred_display": strings(pred.displays, _pick(pred.display, pred_row)),
        }
    )
    slots["outcome"] = _outcomes(slots, conv, gold_common, pred_common)
    unparseable = turns[UNPARSEABLE_COLUMN].to_numpy(dtype=bool)
    if unparseable.any():  # the gold slots of a turn whose text did not parse: their own outcome
        codes = slots["outcome"].cat.codes.to_numpy().copy()
        codes[unparseable[tid] & (gold_common >= 0)] = Outcome.UNPARSEABLE
        slots["outcome"] = pd.Categorical.from_codes(codes, dtype=OUTCOME_DTYPE)
    slots["in_ontology"] = pair_in_ontology[pair]
    # Off-vocabulary: a predicted pair outside the gold file's pairs and a declared vocabulary (the
    # convention's fixed ontology, or the slots the gold file lists), or a string the reader could not
    # split into domain-slot-value at all. Without a declared vocabulary a tiny gold file would call
    # every slot it happens not to hold off-vocabulary: those stay `spurious`.
    pair_in_gold = np.zeros(n_pairs, dtype=bool)
    pair_in_gold[gold_pairs] = True
    declared = conv.ontology == "multiwoz30" or (conv.ontology == "listed" and bool(run.listed_slots))
    unsplit = pair_domain == NOT_TRIPLE_DOMAIN
    off_vocabulary = (~pair_in_gold & ~pair_in_ontology & (declared | unsplit))[pair]
    if off_vocabulary.any():
        codes = slots["outcome"].cat.codes.to_numpy().copy()
        codes[off_vocabulary] = Outcome.OFF_VOCABULARY
        slots["outcome"] = pd.Categorical.from_codes(codes, dtype=OUTCOME_DTYPE)
        _note_off_vocabulary(alignment, slots[off_vocabulary])
    # Integer codes for set-based metrics; valid for comparisons within a run (hence within a turn).
    # Numbered in order of first appearance over gold then predicted values, as factorizing the strings would.
    both = np.concatenate([gold_common, pred_common])
    value_codes = np.full(len(both), -1, dtype="int64")
    value_codes[both >= 0] = _factorize_small(both[both >= 0], len(common))[0]
    slots["gold_code"] = value_codes[: len(slots)]
    slots["pred_code"] = value_codes[len(slots) :]
    slots["pair_code"] = pair
    # The seed recipe pools slots by name as the file writes it: no convention alias merges two names.
    raw_slot = np.where(gold_row >= 0, _pick(gold.raw, gold_row), _pick(pred.raw, pred_row))
    slots["slot_code"] = _factorize_small(raw_slot, max(len(raw_names), 1))[0]
    slots["trade_extra"] = _trade_hyphen_quirk(slots)
    if gold.merged or pred.merged:  # a side named a slot twice: its triples are counted as sets (TRADE)
        slots["set_tp"], slots["set_fp"], slots["set_fn"] = _set_counts(
            slots, key, gold, pred, common, len(gold.values)
        )

    return slots


OFF_VOCABULARY_NOTE = "off_vocabulary_predictions"
OFF_VOCABULARY_EXAMPLES = 5


def _note_off_vocabulary(alignment: dict[str, Any], rows: pd.DataFrame) -> None:
    """The alignment notes' count of off-vocabulary predictions and a warning with the first examples."""
    names = (rows["domain"].astype(str) + "-" + rows["slot"].astype(str)).unique().tolist()
    examples = ", ".join(repr(name) for name in names[:OFF_VOCABULARY_EXAMPLES])
    alignment["notes"] = {**alignment.get("notes", {}), OFF_VOCABULARY_NOTE: len(rows)}
    alignment["warnings"] = [
        *alignment.get("warnings", []),
        f"{len(rows)} predicted slots name a (domain, slot) the gold file and the ontology never use "
        f"(scored as wrong predictions, outcome off-vocabulary), {len(names)} names, e.g. {examples}",
    ]


def _set_counts(
    slots: pd.DataFrame, key: np.ndarray, gold: _Side, pred: _Side, common: np.ndarray, n_gold_values: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """True positives, false positives and false negatives of each slot row's triples: from the outcome,
    except where a side named the slot more than once (TRADE compares literal sets of
    `domain-slot-value` strings: a prediction holding `east` and `west` for a gold `east` has one right
    and one wrong triple)."""
    codes = slots["outcome"].cat.codes.to_numpy()
    tp = (codes == Outcome.CORRECT).astype("int64")
    fp = ((codes == Outcome.WRONG_VALUE) | np.isin(codes, SPURIOUS_CODES)).astype("int64")
    fn = ((codes == Outcome.WRONG_VALUE) | np.isin(codes, MISSED_CODES)).astype("int64")
    position = {int(k): i for i, k in enumerate(key.tolist())}

    def value_set(side: _Side, k: int, offset: int) -> set[int]:
        if k in side.merged:
            return {int(common[offset + c]) for c in side.merged[k]}
        rows = np.flatnonzero(side.key == k)
        return {int(common[offset + side.value[rows[0]]])} if len(rows) else set()

    for k in set(gold.merged) | set(pred.merged):
        i = position.get(int(k))
        if i is not None:
            g, p = value_set(gold, k, 0), value_set(pred, k, n_gold_values)
            tp[i], fp[i], fn[i] = len(g & p), len(p - g), len(g - p)
    return tp, fp, fn


def _factorize_small(values: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """pd.factorize of integers in [0, n) with n small (names, values): codes numbered in order of
    first appearance, and the uniques. A table of first positions instead of hashing every row."""
    first = np.full(n, len(values), dtype="int64")
    first[values[::-1]] = np.arange(len(values) - 1, -1, -1)  # the earliest position writes last
    uniques = np.flatnonzero(first < len(values))
    uniques = uniques[np.argsort(first[uniques], kind="stable")]
    code_of = np.zeros(n, dtype="int64")
    code_of[uniques] = np.arange(len(uniques))
    return code_of[values], uniques


def _pick(codes: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """`codes[rows]`, with -1 where `rows` is -1 (no row)."""
    if len(codes) == 0:
        return np.full(len(rows), -1, dtype="int64")
    return np.where(rows >= 0, codes[rows], -1)


def _sorted_unique(values: np.ndarray) -> np.ndarray:
    """np.unique by sorting: numpy 2.4's hash-based unique is about 50x slower on large int64 arrays."""
    ordered = np.sort(values)
    if len(ordered) == 0:
        return ordered
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]


def _name_codes(
    gold: pa.DictionaryArray, pred: pd.Series, conv: Convention, *, aliases: bool, raw: list | None = None
) -> tuple[tuple[np.ndarray, np.ndarray], list[str]]:
    """Codes of domain or slot names under the convention (lower-cased, aliased) for both sides'
    rows (the gold's as `_encoded`), and the names; the name rules run once per distinct name. Given a
    list `raw`, also the codes of the names as written (both sides) and those names, appended to it."""
    # pyarrow's dictionary encoding of each side: cheaper than factorizing the concatenated columns.
    encoded = [gold, _encoded(pred)]
    distinct = [n for e in encoded for n in e.dictionary.to_pylist()]
    named = [convention_name(n, n, conv)[1 if aliases else 0] for n in distinct]
    name_codes, names = pd.factorize(np.array(named, dtype=object))
    offset = len(encoded[0].dictionary)
    indices = [e.indices.to_numpy(zero_copy_only=False) for e in encoded]
    gold_codes = name_codes[indices[0]]
    pred_codes = name_codes[offset + indices[1]]
    if raw is not None:
        raw_codes, raw_names = pd.factorize(np.array(distinct, dtype=object))
        raw.extend([(raw_codes[indices[0]], raw_codes[offset + indices[1]]), list(raw_names)])
    return (gold_codes, pred_codes), list(names)


def _encoded(names: pd.Series) -> pa.DictionaryArray:
    return pc.dictionary_encode(arrow_strings(names))


@dataclass(frozen=True)
class _Scoring:
    """What `gold_side.shared` reads of a run being scored (its `Scored` is not built yet)."""

    turns: pd.DataFrame
    metas: list[RunMeta]
    gold_side: dict[Any, Any]


PAIRINGS_KEPT = 4  # conventions whose pairing gold side a gold file keeps (`_gold_pairing`)
# The gold columns `_GoldPairing` is computed from (and compared on before it is shared).
_GOLD_COLUMNS = ("dialogue_id", "turn_index", "domain", "slot", "relation", "value")


@dataclass(frozen=True, eq=False)
class _GoldPairing:
    """The gold side of `_pair` under one convention: each gold row's turn id, the gold names' dictionary
    encodings and (once the first run has named its slots) the gold values' codes. Shared by the runs of one
    gold file through `gold_side` while the turns, the convention and the gold columns are the very same
    (compared in full: 0.3 ms on MultiWOZ's 64k gold rows, against ~10 ms of work). Read-only."""

    conv: Convention
    gold: gold_side.Columns
    tids: np.ndarray
    domains: pa.DictionaryArray
    slots: pa.DictionaryArray
    _normalised: list[NormalisedCodes] = field(default_factory=list)

    def fits(self, conv: Convention, gold: pd.DataFrame) -> bool:
        return self.conv == conv and self.gold.same(gold)

    def normalised(self, compute: Callable[[], NormalisedCodes]) -> NormalisedCodes:
        """The gold rows' `normalise_codes` under `conv`: computed by the first run, kept read-only."""
        if not self._normalised:
            coded = compute()
            for array in (coded.keep, coded.value, coded.display):
                array.flags.writeable = False
            self._normalised.append(coded)
        return self._normalised[0]


def _gold_pairing(
    run: Run, conv: Convention, turns: pd.DataFrame, turn_dialogue: np.ndarray, dialogue_ids: pa.Array
) -> _GoldPairing:
    gold = run.gold

    def compute() -> _GoldPairing:
        (tids,) = _turn_ids(turns, turn_dialogue, dialogue_ids, gold)
        tids.flags.writeable = False
        gold_columns = gold_side.Columns(gold, _GOLD_COLUMNS)
        return _GoldPairing(conv, gold_columns, tids, _encoded(gold["domain"]), _encoded(gold["slot"]))

    # About 2.5 MB a convention on MultiWOZ's test set: the dashboard's server keeps the last few per gold file
    # (a sweep scores under one; Reconcile's page under several, which then pair their gold again).
    return gold_side.shared(
        _Scoring(turns, [run.meta], run.gold_side),
        f"pairing {conv.name}",
        compute,
        lambda p: p.fits(conv, gold),
        family="pairing ",
        kept=PAIRINGS_KEPT,
    )


def _dialogue_codes(frame: pd.DataFrame, dialogue_ids: pa.Array) -> np.ndarray:
    """Position of each row's dialogue id in `dialogue_ids` (the turns' ~1,000 ids), -1 if absent;
    pyarrow's index_in is several times cheaper than factorizing all ~110k rows of turns and states."""
    codes = pc.index_in(arrow_strings(frame["dialogue_id"]), value_set=dialogue_ids)
    return codes.fill_null(-1).to_numpy().astype("int64")


def _turn_ids(
    turns: pd.DataFrame, turn_dialogue: np.ndarray, dialogue_ids: pa.Array, *states: pd.DataFrame
) -> list[np.ndarray]:
    """Each state row's turn id (`tid` = row of `turns`), or -1 for a turn `turns` lacks (the loader
    already re-keyed predictions to gold turns and counted the rest)."""
    # A dense (dialogue, turn index) -> tid table, dialogues x longest dialogue cells: lookups in it
    # cost a fraction of np.searchsorted's (about 5 ms for 64k unsorted keys in numpy 2.4).
    turn_index = turns["turn_index"].to_numpy()
    width = int(turn_index.max(initial=0)) + 1
    table = np.full(len(dialogue_ids) * width, -1, dtype="int64")
    # Reversed so that a (dialogue, turn) listed twice resolves to its first turn row.
    table[(turn_dialogue * width + turn_index)[::-1]] = turns["tid"].to_numpy()[::-1]
    out = []
    for frame in states:
        ids, index = _dialogue_codes(frame, dialogue_ids), frame["turn_index"].to_numpy()
        known = (ids >= 0) & (index >= 0) & (index < width)
        if not len(table):  # no turns: nothing is known
            out.append(np.full(len(ids), -1, dtype="int64"))
            continue
        out.append(np.where(known, table[np.where(known, ids * width + index, 0)], -1))
    return out


def _ontology(run: Run, conv: Convention, observed: Iterable[tuple[str, str]]) -> pd.DataFrame:
    """The slot list that slot accuracy counts over (and `ontology` slot scope keeps)."""
    if conv.ontology == "multiwoz30":
        # TRADE's 30 slots in the convention's own names (mwzeval: `arrive`, gold `bookday`, ...).
        named = (convention_name(domain, slot, conv) for domain, slot in MULTIWOZ30)
        pairs = sorted({(d, conv.gold_slot_renames.get((d, s), s)) for d, s in named})
    elif conv.ontology == "listed" and run.listed_slots:
        pairs = sorted({convention_name(domain, slot, conv) for domain, slot in run.listed_slots})
    else:
        pairs = sorted(set(observed))
    return pd.DataFrame(pairs, columns=["domain", "slot"], dtype="str")


def _outer_join(gold_keys: np.ndarray, pred_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every key of either side (sorted; each side's keys are unique) and each side's row for it, or -1.

    One argsort of both sides: np.union1d (hash-based in numpy 2.4) and searchsorted with a sorter
    each cost several times more on ~40k keys.
    """
    n_gold = len(gold_keys)
    # Tag each key with its side (gold even, prediction odd): all entries distinct, gold first.
    tagged = np.concatenate([gold_keys.astype("int64") * 2, pred_keys.astype("int64") * 2 + 1])
    order = np.argsort(tagged, kind="stable")  # keys are unique; stable is the fastest kind on runs of sorted keys
    ordered = tagged[order] >> 1
    first = np.ones(len(ordered), dtype=bool)
    first[1:] = ordered[1:] != ordered[:-1]
    # A key has at most one entry per side, gold first: a group's first entry is its gold row (if it
    # is not a prediction), its last entry its predicted row (if it is one).
    starts = np.flatnonzero(first)
    ends = np.append(starts[1:], len(ordered)) - 1 if len(starts) else starts
    key = ordered[starts]
    gold_row = np.where(order[starts] < n_gold, order[starts], -1)
    pred_row = np.where(order[ends] >= n_gold, order[ends] - n_gold, -1)
    return key, gold_row, pred_row


def _merge_duplicates(side: _Side) -> _Side:
    """A triple list may name one slot twice: keep both values as one set-literal `a|b` (and the
    first accepted alternatives); `merged` remembers each merged slot's value codes."""
    ordered = np.sort(side.key)
    if not (ordered[1:] == ordered[:-1]).any():  # the common case, found without hashing
        return side
    dup = pd.Series(side.key).duplicated(keep=False).to_numpy()
    groups: dict[int, list[int]] = {}
    for row in np.flatnonzero(dup).tolist():
        groups.setdefault(int(side.key[row]), []).append(row)
    values, alternatives, displays = list(side.values), list(side.alternatives), list(side.displays)
    keys, value, display, raw = [], [], [], []
    merged: dict[int, list[int]] = {}
    for key, members in groups.items():
        codes = [int(side.value[r]) for r in members]
        merged[key] = sorted(set(codes))
        keys.append(key)
        value.append(len(values))
        display.append(len(displays))
        raw.append(int(side.raw[members[0]]))
        values.append("|".join(sorted({side.values[c] for c in codes})))  # type: ignore[misc]
        alternatives.append(next((side.alternatives[c] for c in codes if side.alternatives[c] is not None), None))
        displays.append("|".join(sorted({side.displays[int(side.display[r])] for r in members})))
    single = ~dup
    return _Side(
        np.concatenate([side.key[single], np.array(keys, dtype="int64")]),
        np.concatenate([side.value[single], np.array(value, dtype="int64")]),
        np.concatenate([side.display[single], np.array(display, dtype="int64")]),
        values,
        alternatives,
        displays,
        np.concatenate([side.raw[single], np.array(raw, dtype="int64")]),
        merged,
    )


def _rename_gold(
    domain_codes: np.ndarray, slot_codes: np.ndarray, domains: list[str], slot_names: list[str], conv: Convention
) -> np.ndarray:
    """Gold slot codes after the convention's gold-side renames (mwzeval's MultiWOZ 2.2 booking names);
    new names are appended to `slot_names`."""
    width = max(len(slot_names), 1)
    combos, inverse = np.unique(domain_codes.astype("int64") * width + slot_codes, return_inverse=True)
    new_codes = combos % width
    for i, combo in enumerate(combos.tolist()):
        renamed = conv.gold_slot_renames.get((domains[combo // width], slot_names[combo % width]))
        if renamed is not None:
            if renamed not in slot_names:
                slot_names.append(renamed)
            new_codes[i] = slot_names.index(renamed)
    return new_codes[inverse].astype("int64") if len(slot_codes) else slot_codes


def _listed_in_turn(
    run: Run,
    turns: pd.DataFrame,
    conv: Convention,
    pred: _Side,
    gold: _Side,
    pair_domain: np.ndarray,
    pair_slot: np.ndarray,
    n_pairs: int,
) -> np.ndarray:
    """Which predicted rows name a slot their turn's gold state lists (ConvLab-3, DSTC9 score only
    those). A turn of a file that lists empty slots has its listing; elsewhere a turn lists exactly
    its non-empty gold slots."""
    in_gold = np.isin(pred.key, gold.key)
    if not run.listings or "listing" not in turns:
        return in_gold
    pair_of = {(d, s): i for i, (d, s) in enumerate(zip(pair_domain.tolist(), pair_slot.tolist(), strict=True))}
    table = np.zeros((len(run.listings), n_pairs), dtype=bool)
    for lid, listing in enumerate(run.listings):
        for domain, slot in listing:
            name = convention_name(domain, slot, conv)
            name = (name[0], conv.gold_slot_renames.get(name, name[1]))
            pair = pair_of.get(name)
            if pair is not None:
                table[lid, pair] = True
    listing = turns["listing"].to_numpy()[pred.key // n_pairs]
    has_listing = listing >= 0
    listed = table[np.where(has_listing, listing, 0), pred.key % n_pairs]
    return np.where(has_listing, listed, in_gold)


def _outcomes(slots: pd.DataFrame, conv: Convention, gold_code: np.ndarray, pred_code: np.ndarray) -> pd.Categorical:
    """Outcome of each slot row; `*_code` are comparable value codes of both sides, -1 for none."""
    has_gold = gold_code >= 0
    has_pred = pred_code >= 0
    both = has_gold & has_pred
    match = both & (gold_code == pred_code)
    alts = both & ~match & slots["gold_alternatives"].notna().to_numpy()
    if alts.any():
        idx = np.flatnonzero(alts)
        choices = np.asarray(slots["gold_alternatives"].array.take(idx), dtype=object)
        preds = np.asarray(slots["pred_value"].array.take(idx), dtype=object)
        match[idx] = [p == c or p in c.split("|") for p, c in zip(preds, choices, strict=True)]
    if conv.multi_value == "intersect":
        # ConvLab-3: both sides' `|` alternatives; right when they share one.
        rest = np.flatnonzero(both & ~match)
        if len(rest):
            gold_values = np.asarray(slots["gold_value"].array.take(rest), dtype=object).tolist()
            pred_values = np.asarray(slots["pred_value"].array.take(rest), dtype=object).tolist()
            match[rest] = [
                ("|" in g or "|" in p) and not set(g.split("|")).isdisjoint(p.split("|"))
                for g, p in zip(gold_values, pred_values, strict=True)
            ]
    if conv.matching in ("fuzzy", "fuzzy_int"):
        rest = np.flatnonzero(both & ~match)
        if len(rest):
            gold_values = np.asarray(slots["gold_value"].array.take(rest), dtype=object).tolist()
            pred_values = np.asarray(slots["pred_value"].array.take(rest), dtype=object).tolist()
            if conv.matching == "fuzzy_int":
                from analysis import mwzeval_rules  # fuzzywuzzy's integer partial_ratio, as mwzeval calls it

                scores = mwzeval_rules.partial_ratios(pred_values, gold_values)
            else:
                scores = cpdist(pred_values, gold_values, scorer=fuzz.partial_ratio, workers=1)
            match[rest] = np.asarray(scores) > conv.fuzzy_threshold
    codes = np.where(
        match,
        Outcome.CORRECT,
        np.where(both, Outcome.WRONG_VALUE, np.where(has_gold, Outcome.MISSED, Outcome.SPURIOUS)),
    )
    return pd.Categorical.from_codes(codes, dtype=OUTCOME_DTYPE)


def _trade_hyphen_quirk(slots: pd.DataFrame) -> np.ndarray:
    """TRADE's compute_acc finds a wrong value's slot by `rsplit('-', 1)` of the whole triple string,
    so a wrong value whose gold or predicted value holds a hyphen is charged twice. Reproduced."""
    extra = np.zeros(len(slots), dtype="int64")
    wrong = np.flatnonzero(slots["outcome"].cat.codes.to_numpy() == Outcome.WRONG_VALUE)
    if len(wrong):
        gold = np.asarray(slots["gold_value"].array.take(wrong), dtype=object)
        pred = np.asarray(slots["pred_value"].array.take(wrong), dtype=object)
        extra[wrong] = [g.rpartition("-")[0] != p.rpartition("-")[0] for g, p in zip(gold, pred, strict=True)]
    return extra


def _attach_counts(turns: pd.DataFrame, slots: pd.DataFrame) -> pd.DataFrame:
    outcome = slots["outcome"].cat.codes.to_numpy().astype("int64")
    tid = slots["tid"].to_numpy()
    n = len(turns)
    # One bincount of (turn, outcome) cells; gold exists for correct/wrong/missed, a prediction for
    # correct/wrong/spurious (that is how `_outcomes` classifies).
    k = len(Outcome)
    per_outcome = np.bincount(tid * k + outcome, minlength=k * n).reshape(n, k).T
    correct, wrong, spurious, unparseable = (
        per_outcome[o] for o in (Outcome.CORRECT, Outcome.WRONG_VALUE, Outcome.SPURIOUS, Outcome.UNPARSEABLE)
    )
    spurious = spurious + per_outcome[Outcome.OFF_VOCABULARY]  # a prediction of a name nothing uses
    missed = per_outcome[Outcome.MISSED] + unparseable  # an unparseable turn's gold slot is not predicted
    errors = outcome != Outcome.CORRECT
    counts = {
        "n_gold": correct + wrong + missed,
        "n_pred": correct + wrong + spurious,
        "n_correct": correct,
        "n_wrong": wrong,
        "n_missed": missed,
        "n_spurious": spurious,
        "n_unparseable": unparseable,
        "n_err_ontology": np.bincount(tid[errors & slots["in_ontology"].to_numpy()], minlength=n),
        "n_trade_extra": np.bincount(tid, weights=slots["trade_extra"].to_numpy(), minlength=n),
    }
    stale = [c for c in COUNT_COLUMNS if c in turns.columns]
    kept = turns.drop(columns=stale) if stale else turns
    new = pd.DataFrame({name: np.ascontiguousarray(v).astype("int64") for name, v in counts.items()}, index=turns.index)
    turns = pd.concat([kept, new], axis=1)
    # An unparseable turn is never joint-correct, even with an empty gold state.
    turns["joint_correct"] = ((wrong + missed + spurious) == 0) & ~turns[UNPARSEABLE_COLUMN].to_numpy(dtype=bool)
    return turns


def combine(scored: Sequence[Scored]) -> Scored:
    """Concatenate scored runs (same convention) on `run_id`, re-keying `tid` to stay unique."""
    if not scored:
        raise ValueError("combine needs at least one scored run")
    names = {s.convention.name for s in scored}
    if len(names) > 1:
        raise ValueError(f"runs scored under different conventions cannot be combined: {sorted(names)}")
    ids = [m.run_id for s in scored for m in s.metas]
    if len(ids) != len(set(ids)):
        raise ValueError(f"run ids must be unique to combine runs, got {ids}")
    turns, slots, offset = [], [], 0
    for s in scored:
        turns.append(s.turns.assign(tid=s.turns["tid"] + offset))
        slots.append(s.slots.assign(tid=s.slots["tid"] + offset))
        offset += int(s.turns["tid"].max()) + 1 if len(s.turns) else 0
    alignment: dict[str, dict] = {}
    for s in scored:
        alignment.update(s.alignment)
    return Scored(
        scored[0].convention,
        [m for s in scored for m in s.metas],
        pd.concat(turns, ignore_index=True),
        pd.concat(slots, ignore_index=True),
        pd.concat([s.ontology for s in scored], ignore_index=True),
        alignment,
    )
