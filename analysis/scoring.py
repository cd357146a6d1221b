"""A `Run` under a convention becomes scored tables: `turns` with per-turn counts and `slots` with outcomes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from rapidfuzz import fuzz
from rapidfuzz.process import cpdist

from analysis.conventions import MULTIWOZ30, Convention, convention_name, get_convention, normalise_states
from analysis.model import Run, RunMeta

OUTCOMES = ("correct", "wrong_value", "missed", "spurious")
OUTCOME_DTYPE = pd.CategoricalDtype(list(OUTCOMES))
SLOT_KEY = ["tid", "domain", "slot"]
SEP = "\x1f"  # joins domain and slot into one pairing name; never part of a name
COUNT_COLUMNS = [
    "n_gold",
    "n_pred",
    "n_correct",
    "n_wrong",
    "n_missed",
    "n_spurious",
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


def score_run(run: Run, convention: str | Convention | None = None) -> Scored:
    """Normalise both sides under `convention` (default: the run's own), pair slots, classify outcomes."""
    conv = get_convention(convention if convention is not None else run.meta.convention)
    run_id = run.meta.run_id
    turns = run.turns.copy()
    turns.insert(0, "run_id", run_id)
    turns.insert(1, "tid", np.arange(len(turns), dtype="int64"))
    last = turns.groupby("dialogue_id", sort=False)["turn_index"].transform("max")
    turns["is_final"] = turns["turn_index"] == last

    gold = _with_tid(normalise_states(run.gold, conv, side="gold"), turns)
    pred = _with_tid(normalise_states(run.pred, conv, side="pred"), turns)
    ontology = _ontology(run, conv, gold)

    # Pair gold and prediction on one integer key (turn id x domain-slot code): joins on strings cost
    # several times more, and this runs for every run under every convention.
    domain_codes, domains = pd.factorize(pd.concat([gold["domain"], pred["domain"]], ignore_index=True))
    slot_codes, slot_names = pd.factorize(pd.concat([gold["slot"], pred["slot"]], ignore_index=True))
    codes, pair_ids = pd.factorize(domain_codes * max(len(slot_names), 1) + slot_codes)
    n_pairs = max(len(pair_ids), 1)
    pair_domain = np.asarray(domains, dtype=object)[pair_ids // max(len(slot_names), 1)]
    pair_slot = np.asarray(slot_names, dtype=object)[pair_ids % max(len(slot_names), 1)]
    gold["_key"] = gold["tid"].to_numpy() * n_pairs + codes[: len(gold)]
    pred["_key"] = pred["tid"].to_numpy() * n_pairs + codes[len(gold) :]
    onto_names = set(zip(ontology["domain"], ontology["slot"], strict=True))
    pair_in_ontology = np.array([pair in onto_names for pair in zip(pair_domain, pair_slot, strict=True)], dtype=bool)
    if conv.slot_scope == "ontology":
        pred = pred[pair_in_ontology[pred["_key"].to_numpy() % n_pairs]]
    elif conv.slot_scope == "gold":
        pred = pred[np.isin(pred["_key"].to_numpy(), gold["_key"].to_numpy())]
    gold, pred = _merge_duplicates(gold), _merge_duplicates(pred)

    # Outer join on the integer key with numpy: each side's row (or -1) for every key of either side.
    gold_keys, pred_keys = gold["_key"].to_numpy(), pred["_key"].to_numpy()
    key = np.union1d(gold_keys, pred_keys)
    gold_row = _positions(gold_keys, key)
    pred_row = _positions(pred_keys, key)
    tid = key // n_pairs
    pair = key % n_pairs

    def side(frame: pd.DataFrame, column: str, rows: np.ndarray) -> pd.api.extensions.ExtensionArray:
        return frame[column].astype("str").array.take(rows, allow_fill=True)

    slots = pd.DataFrame(
        {
            "run_id": pd.array([run_id], dtype="str").take(np.zeros(len(key), dtype="int64")),
            "tid": tid,
            "domain": pd.array(pair_domain, dtype="str").take(pair),
            "slot": pd.array(pair_slot, dtype="str").take(pair),
            "dialogue_id": turns["dialogue_id"].astype("str").array.take(tid),
            "turn_index": turns["turn_index"].to_numpy()[tid],
            "gold_value": side(gold, "value", gold_row),
            "gold_display": side(gold, "display", gold_row),
            "gold_alternatives": side(gold, "alternatives", gold_row),
            "pred_value": side(pred, "value", pred_row),
            "pred_display": side(pred, "display", pred_row),
        }
    )
    slots["outcome"] = _outcomes(slots, conv)
    slots["in_ontology"] = pair_in_ontology[pair]
    # Integer codes for set-based metrics; valid for comparisons within a run (hence within a turn).
    value_codes, _ = pd.factorize(pd.concat([slots["gold_value"], slots["pred_value"]], ignore_index=True))
    slots["gold_code"] = value_codes[: len(slots)]
    slots["pred_code"] = value_codes[len(slots) :]
    slots["pair_code"] = pair
    slots["slot_code"] = pd.factorize(slots["slot"])[0]
    slots["trade_extra"] = _trade_hyphen_quirk(slots)

    turns = _attach_counts(turns, slots)
    ontology = ontology.assign(run_id=run_id)[["run_id", "domain", "slot"]]
    return Scored(conv, [run.meta], turns, slots, ontology, {run_id: run.alignment.to_dict()})


def _with_tid(states: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """Attach each state row's turn id (`tid` = row of `turns`); rows of unknown turns are dropped
    (the loader already re-keyed predictions to gold turns and counted the rest)."""
    ids, _ = pd.factorize(pd.concat([turns["dialogue_id"], states["dialogue_id"]], ignore_index=True))
    width = int(max(turns["turn_index"].to_numpy().max(initial=0), states["turn_index"].to_numpy().max(initial=0))) + 1
    turn_keys = ids[: len(turns)] * width + turns["turn_index"].to_numpy()
    state_keys = ids[len(turns) :] * width + states["turn_index"].to_numpy()
    order = np.argsort(turn_keys, kind="stable")
    position = np.searchsorted(turn_keys, state_keys, sorter=order).clip(max=max(len(order) - 1, 0))
    found = turn_keys[order[position]] == state_keys if len(order) else np.zeros(len(state_keys), dtype=bool)
    out = states[found].copy()
    out["tid"] = turns["tid"].to_numpy()[order[position[found]]]
    return out


def _ontology(run: Run, conv: Convention, gold: pd.DataFrame) -> pd.DataFrame:
    """The slot list that slot accuracy counts over (and `ontology` slot scope keeps)."""
    if conv.ontology == "multiwoz30":
        pairs = sorted(MULTIWOZ30)
    elif conv.ontology == "listed" and run.listed_slots:
        pairs = sorted({convention_name(domain, slot, conv) for domain, slot in run.listed_slots})
    else:
        observed = gold[["domain", "slot"]].drop_duplicates()
        pairs = sorted(zip(observed["domain"], observed["slot"], strict=True))
    return pd.DataFrame(pairs, columns=["domain", "slot"], dtype="str")


def _positions(keys: np.ndarray, universe: np.ndarray) -> np.ndarray:
    """Row of each `universe` key in `keys` (unique), or -1 where the side has no such row."""
    if len(keys) == 0:
        return np.full(len(universe), -1, dtype="int64")
    order = np.argsort(keys, kind="stable")
    at = np.searchsorted(keys, universe, sorter=order).clip(max=len(keys) - 1)
    rows = order[at]
    return np.where(keys[rows] == universe, rows, -1)


def _merge_duplicates(states: pd.DataFrame) -> pd.DataFrame:
    """A triple list may name one slot twice: keep both values as one set-literal `a|b`."""
    dup = states.duplicated("_key", keep=False)
    if not dup.any():
        return states
    merged = (
        states[dup]
        .groupby("_key", sort=False)
        .agg(
            value=("value", lambda v: "|".join(sorted(set(v)))),
            display=("display", lambda v: "|".join(sorted(set(v)))),
            alternatives=("alternatives", "first"),
        )
        .reset_index()
    )
    return pd.concat([states.loc[~dup, merged.columns], merged], ignore_index=True)


def _outcomes(slots: pd.DataFrame, conv: Convention) -> pd.Categorical:
    has_gold = slots["gold_value"].notna().to_numpy()
    has_pred = slots["pred_value"].notna().to_numpy()
    both = has_gold & has_pred
    match = both & (slots["gold_value"] == slots["pred_value"]).fillna(False).to_numpy(dtype=bool)
    alts = both & ~match & slots["gold_alternatives"].notna().to_numpy()
    if alts.any():
        idx = np.flatnonzero(alts)
        choices = slots["gold_alternatives"].to_numpy()[idx]
        preds = slots["pred_value"].to_numpy()[idx]
        match[idx] = [p == c or p in c.split("|") for p, c in zip(preds, choices, strict=True)]
    if conv.matching == "fuzzy":
        rest = np.flatnonzero(both & ~match)
        if len(rest):
            gold_values = slots["gold_value"].to_numpy()[rest].tolist()
            pred_values = slots["pred_value"].to_numpy()[rest].tolist()
            scores = cpdist(pred_values, gold_values, scorer=fuzz.partial_ratio, workers=1)
            match[rest] = np.asarray(scores) > conv.fuzzy_threshold
    codes = np.where(match, 0, np.where(both, 1, np.where(has_gold, 2, 3)))
    return pd.Categorical.from_codes(codes, dtype=OUTCOME_DTYPE)


def _trade_hyphen_quirk(slots: pd.DataFrame) -> np.ndarray:
    """TRADE's compute_acc finds a wrong value's slot by `rsplit('-', 1)` of the whole triple string,
    so a wrong value whose gold or predicted value holds a hyphen is charged twice. Reproduced."""
    extra = np.zeros(len(slots), dtype="int64")
    wrong = np.flatnonzero(slots["outcome"].cat.codes.to_numpy() == 1)
    if len(wrong):
        gold = np.asarray(slots["gold_value"].array.take(wrong), dtype=object)
        pred = np.asarray(slots["pred_value"].array.take(wrong), dtype=object)
        extra[wrong] = [g.rpartition("-")[0] != p.rpartition("-")[0] for g, p in zip(gold, pred, strict=True)]
    return extra


def _attach_counts(turns: pd.DataFrame, slots: pd.DataFrame) -> pd.DataFrame:
    outcome = slots["outcome"].cat.codes.to_numpy()  # OUTCOMES order: correct, wrong, missed, spurious
    tid = slots["tid"].to_numpy()
    n = len(turns)
    flags = {
        "n_gold": slots["gold_value"].notna().to_numpy(),
        "n_pred": slots["pred_value"].notna().to_numpy(),
        "n_correct": outcome == 0,
        "n_wrong": outcome == 1,
        "n_missed": outcome == 2,
        "n_spurious": outcome == 3,
        "n_err_ontology": (outcome != 0) & slots["in_ontology"].to_numpy(),
    }
    turns = turns.drop(columns=[c for c in COUNT_COLUMNS if c in turns.columns])
    for name, flag in flags.items():
        turns[name] = np.bincount(tid, weights=flag, minlength=n).astype("int64")
    turns["n_trade_extra"] = np.bincount(tid, weights=slots["trade_extra"].to_numpy(), minlength=n).astype("int64")
    turns["joint_correct"] = (turns["n_wrong"] + turns["n_missed"] + turns["n_spurious"]) == 0
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
