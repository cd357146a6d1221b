"""Convention reconciliation: one run scored under several conventions, side by side, and why they differ.

`reconcile(run, conventions)` scores the run under each convention with `score_run` (nothing is
re-scored here by other means) and returns a `Reconciliation`:

* `table()`: the headline metrics per convention (JGA, micro slot F1, slot accuracy, seed slot F1);
* `flip_counts()`: for every pair (a, b), the turns whose joint correctness differs;
* `flips(a, b)`: those turns, with the causes of each;
* `responsible(a, b)`: the slots responsible for the flips, each attributed to one cause;
* `to_dict()`: the CLI's JSON (see `analysis.cli.reconcile`).

**Responsible slots.** A slot is identified across conventions by its raw file triples: the gold and
predicted entries of one turn whose (domain, slot) names coincide once both conventions' name
switches are applied (lower-casing and aliases of either; `arriveBy` and `arrive by` are one slot).
Under a convention a raw triple is in error when the slot row it lands on has outcome `wrong_value`,
`missed` or `spurious`; it is not when that row is `correct` or when the triple does not count at all
(an empty value, a dropped dontcare, a prediction outside the slot scope). A slot is in error when any
of its triples is. In a flipped turn the responsible slots are the ones whose error status differs
between a and b; every flipped turn has at least one.

**Causes, counterfactually.** The fields of `Convention` fall into switch groups, `SWITCH_GROUPS`,
tried in this order: dontcare policy, value normaliser (steps, synonyms and empty values), multiple
gold values, value matching (fuzzy), slot names (aliases, lower-casing), slot scope (scope and
ontology), relation. For a pair (a, b) each group on which a and b differ is toggled *alone*: the
convention `dataclasses.replace(a, <that group's fields from b>)` is scored, and a responsible slot is
attributed to the first group (in the order above) whose toggle alone gives the slot b's error status.
When no single toggle does (the slot needs two switches together, e.g. an alias *and* a normaliser),
the cause is `combined`. Causes are directional: pair keys keep the order the conventions were given.

Counterfactual scorings run on a sub-run holding only the raw triples of responsible slots (a slot's
outcome depends only on its own triples and the ontology), so they cost little; when a toggled
convention restricts predictions to an ontology inferred from the gold states, the full run is used.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np
import pandas as pd

from analysis.conventions import CONVENTIONS, Convention, convention_name, get_convention, normalise_states
from analysis.model import STATE_COLUMNS, TURN_KEY, Run
from analysis.outcomes import ERROR_OUTCOMES, Outcome
from analysis.registry import LABELS, RECONCILE_METRICS, values
from analysis.scorer_inputs import NOTE as SCORER_INPUT
from analysis.scoring import Scored, score_run

__all__ = [
    "CAUSES",
    "CAUSE_LABELS",
    "DEFAULT_CONVENTIONS",
    "METRIC_LABELS",
    "PAIR_SEPARATOR",
    "SWITCH_GROUPS",
    "Reconciliation",
    "pair_key",
    "reconcile",
]

DEFAULT_CONVENTIONS = ("exact", "trade", "dstc9", "mwzeval", "convlab3")
# Switch groups in attribution order: (cause, Convention fields toggled together).
SWITCH_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("turns", ("score_missing_turns", "unscored_dialogues")),  # which turns are scored at all
    ("dontcare", ("dontcare", "dontcare_values")),
    ("pred_none", ("pred_empty_values",)),
    ("whitespace", ("normaliser",)),
    (
        "normaliser",
        ("normaliser", "synonyms", "empty_values", "value_rules", "subtask_synonyms", "subtask", "unicode_nfc"),
    ),
    ("multi_value", ("multi_value",)),
    ("matching", ("matching", "fuzzy_threshold")),
    ("slot_alias", ("slot_aliases", "lower_names", "slot_rules", "gold_slot_renames")),
    ("slot_scope", ("slot_scope", "ontology")),
    ("relation", ("compare_relation",)),
    ("empty_ratio", ("empty_ratio",)),
)
# Groups compared on part of a field: whitespace deletion alone, and the other normaliser steps.
_WHITESPACE = "delete_whitespace"
CAUSES = (*(g for g, _ in SWITCH_GROUPS), "hedged_prediction", "gold_prepared", "combined")
CAUSE_LABELS = {
    "turns": "turn denominator (turns the prediction file lacks are not scored)",
    "dontcare": "dontcare policy",
    "pred_none": "a predicted none or empty value counted as a value",
    "whitespace": "whitespace deletion",
    "normaliser": "value normalisation",
    "multi_value": "multiple gold values",
    "hedged_prediction": "a hedged prediction (a|b) accepted when one alternative is right",
    "matching": "fuzzy matching or its threshold",
    "slot_alias": "slot naming",
    "slot_scope": "slot scope (a slot outside the gold state's listed slots, or the ontology)",
    "relation": "relation compared",
    "gold_prepared": "the scorer's own preparation of the gold (placeholders emptied, slots renamed or dropped)",
    "empty_ratio": "undefined ratios",
    "combined": "combined (no single switch)",
}
METRIC_LABELS = {name: LABELS[name] for name in RECONCILE_METRICS}  # the table's metrics, in its order
PAIR_SEPARATOR = "|"
IGNORED = "ignored"
_SEP = "\x1f"


def pair_key(a: str, b: str) -> str:
    """The JSON key of a pair of conventions: `a|b`, in the order the conventions were given.

    >>> pair_key("exact", "mwzeval")
    'exact|mwzeval'
    """
    return f"{a}{PAIR_SEPARATOR}{b}"


def _switches(conv: Convention) -> dict[str, Any]:
    """The comparable value of every switch (mappings as sorted items)."""
    out: dict[str, Any] = {}
    for f in fields(conv):
        if f.name in ("name", "notes"):
            continue
        value = getattr(conv, f.name)
        if isinstance(value, frozenset):
            value = tuple(sorted(value))
        elif hasattr(value, "items"):
            value = tuple(sorted(value.items()))
        out[f.name] = value
    return out


def _group_value(switches: dict[str, Any], group: str) -> tuple[Any, ...]:
    """What a switch group compares: whitespace deletion is one step of `normaliser`, and the value
    normaliser group is the other steps."""
    if group == "whitespace":
        return (_WHITESPACE in switches["normaliser"],)
    values = [switches[n] for n in dict(SWITCH_GROUPS)[group]]
    if group == "normaliser":
        values[0] = tuple(step for step in switches["normaliser"] if step != _WHITESPACE)
    return tuple(values)


def _differing_groups(a: Convention, b: Convention) -> list[str]:
    sa, sb = _switches(a), _switches(b)
    return [group for group, _ in SWITCH_GROUPS if _group_value(sa, group) != _group_value(sb, group)]


def _toggle(a: Convention, b: Convention, group: str) -> Convention:
    """Convention `a` with one switch group taken from `b`."""
    names = dict(SWITCH_GROUPS)[group]
    changes = {n: getattr(b, n) for n in names}
    if group == "whitespace":
        steps = [step for step in a.normaliser if step != _WHITESPACE]
        changes = {"normaliser": (*steps, _WHITESPACE) if _WHITESPACE in b.normaliser else tuple(steps)}
    elif group == "normaliser":
        steps = [step for step in b.normaliser if step != _WHITESPACE]
        changes["normaliser"] = (*steps, _WHITESPACE) if _WHITESPACE in a.normaliser else tuple(steps)
    return replace(a, name=f"{a.name}+{group}:{b.name}", **changes)


def _constant(value: np.ndarray) -> Callable[[], np.ndarray]:
    """A function returning `value` (what `Scored.memoised` stores)."""
    return lambda: value


def _conv_key(conv: Convention) -> str:
    return json.dumps(_switches(conv), sort_keys=True, ensure_ascii=False, default=list)


def _name_map(names: pd.DataFrame, conv: Convention) -> pd.DataFrame:
    """Raw (domain, slot) names -> the names a convention compares (`n_domain`, `n_slot`): as
    `normalise_states` names the gold side (`convention_name`, then the gold renames), once per distinct name.
    A few dozen names: a loop over them, not a frame through the value pipeline (`tests/test_fast_paths.py`
    compares the two on real files under every convention)."""
    frame = names.drop_duplicates()
    rows = []
    for domain, slot in zip(frame["domain"].tolist(), frame["slot"].tolist(), strict=True):
        n_domain, n_slot = convention_name(domain, slot, conv)
        rows.append((domain, slot, n_domain, conv.gold_slot_renames.get((n_domain, n_slot), n_slot)))
    return pd.DataFrame(rows, columns=["domain", "slot", "n_domain", "n_slot"], dtype="str")


def _raw_triples(run: Run) -> pd.DataFrame:
    """Every raw state entry of both sides with its turn key `tid` (as `score_run` numbers turns)."""
    keys = run.turns[TURN_KEY].assign(tid=np.arange(len(run.turns), dtype="int64"))
    parts = []
    for side, table in (("gold", run.gold), ("pred", run.pred)):
        part = table[STATE_COLUMNS].assign(side=side, rid=np.arange(len(table), dtype="int64"))
        parts.append(part.merge(keys, on=TURN_KEY, how="inner"))
    raw = pd.concat(parts, ignore_index=True)
    return raw.assign(name=raw["domain"] + _SEP + raw["slot"])


def _triple_outcomes(rows: pd.DataFrame, scored: Scored) -> np.ndarray:
    """The outcome of the slot row each raw triple lands on under `scored`'s convention, or `ignored`
    when the triple does not count (empty, dropped dontcare, outside the slot scope).

    `rows` are raw triples as `_raw_triples` returns them (`side`, `tid`, `domain`, `slot`, `value`,
    `name`); a triple lands on the slot row of its turn and its normalised name, and counts when that
    row shows its value (or holds it in the `a|b` literal the scorer makes of two entries of one slot).
    """
    if rows.empty:  # a run whose every state is empty has no triple to place (str.split gives no columns)
        return np.full(0, IGNORED, dtype=object)
    raw_codes, raw_names = pd.factorize(rows["name"].to_numpy())
    parts = pd.Series(raw_names, dtype="str").str.split(_SEP, n=1, expand=True)
    raw_frame = pd.DataFrame({"domain": parts[0], "slot": parts[1]})
    norm = []  # per side: the compared name of each distinct raw name (gold-side renames on gold only)
    for conv in (scored.convention, replace(scored.convention, gold_slot_renames={})):
        named = _name_map(raw_frame, conv)
        norm.append((named["n_domain"] + _SEP + named["n_slot"]).to_numpy(dtype=object))
    slots = scored.slots
    slot_names = (slots["domain"] + _SEP + slots["slot"]).to_numpy(dtype=object)
    vocab = pd.Index(pd.unique(np.concatenate([*norm, pd.unique(slot_names)])))
    width = len(vocab) + 1
    is_gold = (rows["side"] == "gold").to_numpy()
    name_code = np.where(is_gold, vocab.get_indexer(norm[0])[raw_codes], vocab.get_indexer(norm[1])[raw_codes])
    row_key = rows["tid"].to_numpy(dtype="int64") * width + name_code
    slot_tid = slots["tid"].to_numpy(dtype="int64")
    positions = scored.memoised("run_positions", lambda: None)
    if positions is not None:  # the scorer left turns out: its tids count the turns it kept
        slot_tid = np.asarray(positions)[slot_tid]
    slot_key = slot_tid * width + vocab.get_indexer(slot_names)
    out = np.full(len(rows), IGNORED, dtype=object)
    side_of = rows["side"].to_numpy()
    values_all = rows["value"].to_numpy(dtype=object)
    outcome_all = slots["outcome"].astype(object).to_numpy()
    for side in ("gold", "pred"):
        mask = side_of == side
        if not mask.any():
            continue
        display = slots[f"{side}_display"]
        present = display.notna().to_numpy()
        at = pd.Index(slot_key[present]).get_indexer(row_key[mask])
        found = at >= 0
        at = np.where(found, at, 0)
        if not present.any():  # nothing on this side counts: no slot row to look up
            continue
        shown = np.where(found, display.to_numpy(dtype=object)[present][at], None)
        values = values_all[mask]
        counted = found & (shown == values)
        # Two entries naming one slot are merged into the set literal `a|b` by the scorer.
        merged = np.flatnonzero(found & ~counted)
        if len(merged):
            counted[merged] = [v in s.split("|") for v, s in zip(values[merged], shown[merged], strict=True)]
        outcome = np.where(found, outcome_all[present][at], IGNORED)
        out[np.flatnonzero(mask)] = np.where(counted, outcome, IGNORED)
    return out


def _join_within(groups: np.ndarray, values: pd.Series, sep: str, *, sort: bool) -> pd.Series:
    """Per group, its distinct values joined by `sep` (vectorised: one column per rank within group)."""
    frame = pd.DataFrame({"g": groups, "v": values.to_numpy()}).dropna().drop_duplicates()
    if sort:
        frame = frame.sort_values(["g", "v"], kind="stable")
    if frame.empty:
        return pd.Series(dtype="str")
    frame["k"] = frame.groupby("g", sort=False).cumcount()
    wide = frame.pivot(index="g", columns="k", values="v")
    out = wide[0].astype("str")
    for k in wide.columns[1:]:
        col = wide[k].astype("str")
        out = out.where(col.isna(), out + sep + col)
    return out


def _pseudo_run(run: Run, content: pd.DataFrame, conv: Convention) -> Run:
    """One turn (dialogue `c<k>`, turn 0) per distinct slot content: the raw triples of one slot.

    A slot's outcome depends only on its own triples and on the ontology, so scoring this small run
    under `conv` gives every slot the error status it has in the full run. When `conv` restricts
    predictions to an ontology inferred from all gold states, that ontology is handed over as the
    listed slots (the full run's gold entries that count under `conv`).
    """
    listed = run.listed_slots
    if _global_ontology(conv, run):
        gold = run.gold.assign(raw_domain=run.gold["domain"], raw_slot=run.gold["slot"])
        kept = normalise_states(gold, conv, side="gold")
        listed = frozenset(zip(kept["raw_domain"], kept["raw_slot"], strict=True))
    dialogues = "c" + content["content"].astype("str")
    states = content[STATE_COLUMNS].assign(dialogue_id=dialogues.to_numpy(), turn_index=0)
    turns = pd.DataFrame({"dialogue_id": pd.unique(dialogues), "turn_index": 0})
    turns = turns.assign(user=pd.NA, system=pd.NA, pred_missing=False).astype({"user": "str", "system": "str"})
    side = content["side"].to_numpy()
    return Run(
        run.meta,
        turns,
        states[side == "gold"][STATE_COLUMNS].reset_index(drop=True),
        states[side == "pred"][STATE_COLUMNS].reset_index(drop=True),
        listed,
        run.alignment,
    )


def _global_ontology(conv: Convention, run: Run) -> bool:
    """Whether the convention's slot scope depends on the gold states of every turn."""
    inferred = conv.ontology == "observed" or (conv.ontology == "listed" and not run.listed_slots)
    return conv.slot_scope == "ontology" and inferred


_OUTCOME_BITS = {o.key: 1 << o for o in Outcome}  # correct 1, wrong_value 2, missed 4, spurious 8
_LABELS = np.array(
    ["+".join(o for o, bit in _OUTCOME_BITS.items() if code & bit) or IGNORED for code in range(1 << len(Outcome))],
    dtype=object,
)


def _cause_sets(codes: np.ndarray) -> np.ndarray:
    """Each bit code's causes, `, `-joined in `CAUSES` order (only the codes present are spelled out: the
    table of every code would be 2**len(CAUSES) strings, built at each import)."""
    found, where = np.unique(codes, return_inverse=True)
    spelled = [", ".join(c for i, c in enumerate(CAUSES) if int(code) >> i & 1) for code in found]
    return np.array(spelled, dtype=object)[where] if len(found) else np.array([], dtype=object)


def _or_within(groups: np.ndarray, bits: np.ndarray) -> pd.Series:
    """Bitwise OR of single-bit codes per group: the sum of the distinct bits."""
    frame = pd.DataFrame({"g": groups, "b": bits}).drop_duplicates()
    return frame.groupby("g", sort=True)["b"].sum()


def _labels(units: np.ndarray, outcomes: np.ndarray) -> pd.Series:
    """Per slot, the outcomes its triples land on, `+`-joined (`ignored` when none counts)."""
    bits = pd.Series(outcomes).map(_OUTCOME_BITS).fillna(0).astype("int64").to_numpy()
    codes = _or_within(units, bits)
    return pd.Series(_LABELS[codes.to_numpy()], index=codes.index)


def _headline(scored: Scored) -> dict[str, float]:
    return values(scored, RECONCILE_METRICS)


@dataclass
class _PairExplanation:
    slots: pd.DataFrame  # one row per responsible slot
    turn_causes: pd.DataFrame  # tid -> sorted causes


@dataclass
class Reconciliation:
    """One run under several conventions. Build with `reconcile`; causes are computed lazily per pair."""

    run: Run
    conventions: tuple[str, ...]
    scored: dict[str, Scored]
    metrics: pd.DataFrame
    correct: pd.DataFrame
    _raw: pd.DataFrame = field(repr=False)
    counted: pd.DataFrame = field(default_factory=pd.DataFrame)  # per convention: the turns it scores
    _explained: dict[tuple[str, str], _PairExplanation] = field(default_factory=dict, repr=False)
    _outcome_cache: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    # ---- tables -------------------------------------------------------------------------------
    def pairs(self) -> list[tuple[str, str]]:
        """Every pair (a, b) with a listed before b."""
        names = self.conventions
        return [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]

    def table(self) -> pd.DataFrame:
        """Headline metrics per convention: `convention`, jga, slot_f1_micro, slot_accuracy, slot_f1_seed."""
        return self.metrics.reset_index()

    def flip_counts(self) -> pd.DataFrame:
        """Per pair: `a`, `b`, `count` (turns that flip), `only_a` (correct under a only), `only_b`."""
        rows = []
        for a, b in self.pairs():
            ca, cb = self.correct[a].to_numpy(), self.correct[b].to_numpy()
            rows.append(
                {
                    "a": a,
                    "b": b,
                    "count": int(self._flipped(a, b).sum()),
                    "only_a": int((ca & ~cb).sum()),
                    "only_b": int((cb & ~ca).sum()),
                }
            )
        return pd.DataFrame(rows, columns=["a", "b", "count", "only_a", "only_b"])

    def flips(self, a: str, b: str, *, causes: bool = True) -> pd.DataFrame:
        """The turns whose joint correctness differs between a and b: `tid`, `dialogue_id`,
        `turn_index`, `user`, `correct_a`, `correct_b` and (with `causes`) the turn's sorted causes."""
        self._check_pair(a, b)
        flipped = self.correct[self._flipped(a, b)]
        out = flipped[["tid", *TURN_KEY]].assign(correct_a=flipped[a], correct_b=flipped[b])
        out = out.merge(self.run.turns[[*TURN_KEY, "user"]], on=TURN_KEY, how="left")
        if causes:
            out = out.merge(self._explain([(a, b)])[(a, b)].turn_causes, on="tid", how="left")
        return out.reset_index(drop=True)

    def responsible(self, a: str, b: str) -> pd.DataFrame:
        """The slots responsible for the flips between a and b, one row each: `tid`, `dialogue_id`,
        `turn_index`, `domain`, `slot`, `gold` / `pred` (raw values as written, `|`-joined when several
        entries name the slot), `outcome_a`, `outcome_b` (the slot's outcomes under each, `ignored` when
        it does not count) and `cause` (one of `CAUSES`)."""
        self._check_pair(a, b)
        return self._explain([(a, b)])[(a, b)].slots

    def causes(self, a: str, b: str) -> dict[str, int]:
        """Number of responsible slots per cause for one pair (causes with none left out)."""
        counts = self.responsible(a, b)["cause"].value_counts()
        return {c: int(counts[c]) for c in CAUSES if c in counts.index}

    def to_dict(self, *, causes: bool = True, examples: int = 5) -> dict[str, Any]:
        """The CLI's JSON: `conventions` (name -> metrics, fractions; NaN as None) and `flips`
        (`a|b` -> `a`, `b`, `count`, `only_a`, `only_b` and, with `causes`, `causes` (cause ->
        responsible slots), `n_slots` and up to `examples` responsible slots)."""
        conventions = {
            name: {k: _json_float(v) for k, v in row.items()} for name, row in self.metrics.to_dict("index").items()
        }
        if causes:
            self._explain(self.pairs())
        flips: dict[str, Any] = {}
        for row in self.flip_counts().itertuples(index=False):
            entry: dict[str, Any] = {
                "a": row.a,
                "b": row.b,
                "count": row.count,
                "only_a": row.only_a,
                "only_b": row.only_b,
            }
            if causes:
                slots = self.responsible(row.a, row.b)
                entry["n_slots"] = len(slots)
                entry["causes"] = self.causes(row.a, row.b)
                cols = [
                    "dialogue_id",
                    "turn_index",
                    "domain",
                    "slot",
                    "gold",
                    "pred",
                    "outcome_a",
                    "outcome_b",
                    "cause",
                ]
                entry["examples"] = [
                    {k: _json_value(v) for k, v in zip(cols, values, strict=True)}
                    for values in slots[cols].head(examples).itertuples(index=False)
                ]
            flips[pair_key(row.a, row.b)] = entry
        return {
            "run_id": self.run.meta.run_id,
            "n_turns": len(self.run.turns),
            "pair_key": f"a{PAIR_SEPARATOR}b, a listed before b; causes are counted on responsible slots",
            "conventions": conventions,
            "flips": flips,
        }

    def _flipped(self, a: str, b: str) -> np.ndarray:
        """Turns whose joint correctness differs, or that only one of a, b scores."""
        both = (self.counted[a] & self.counted[b]).to_numpy()
        differ = (self.correct[a] != self.correct[b]).to_numpy()
        return (both & differ) | (self.counted[a] != self.counted[b]).to_numpy()

    # ---- attribution --------------------------------------------------------------------------
    def _check_pair(self, a: str, b: str) -> None:
        unknown = [c for c in (a, b) if c not in self.scored]
        if unknown:
            raise ValueError(f"convention has to be one of {', '.join(self.conventions)}, got {unknown}")

    def _outcomes(self, name: str) -> np.ndarray:
        """Each raw triple's outcome under one of the conventions (cached, aligned with `_raw`)."""
        if name not in self._outcome_cache:
            self._outcome_cache[name] = _triple_outcomes(self._raw, self.scored[name])
        return self._outcome_cache[name]

    def _explain(self, pairs: Sequence[tuple[str, str]]) -> dict[tuple[str, str], _PairExplanation]:
        """Attribute the flips of the pairs not yet explained (jointly: one small run, shared scorings)."""
        todo = [p for p in dict.fromkeys(pairs) if p not in self._explained]
        if not todo:
            return self._explained
        staged = [(a, b, self._units(a, b)) for a, b in todo]
        # One pseudo-turn per distinct slot content (the slot's raw triples, turn left out).
        resp_rows = pd.concat([u.loc[u["responsible"]].assign(pair=i) for i, (_, _, u) in enumerate(staged)])
        resp_rows = resp_rows.reset_index(drop=True)
        row_key = (
            resp_rows["side"]
            + "\x1f"
            + resp_rows["domain"]
            + "\x1f"
            + resp_rows["slot"]
            + "\x1f"
            + resp_rows["relation"]
            + "\x1f"
            + resp_rows["value"]
        )
        slot_id = resp_rows["pair"].astype("str") + ":" + resp_rows["unit"].astype("str")
        content_key = _join_within(slot_id.to_numpy(), row_key, "\x1e", sort=True)
        codes, uniques = pd.factorize(content_key)
        slot_content = pd.Series(codes, index=content_key.index)
        resp_rows["content"] = slot_content.reindex(slot_id.to_numpy()).to_numpy()
        content = resp_rows.drop_duplicates(["content", "side", "domain", "slot", "relation", "value"])

        error_cache: dict[str, np.ndarray] = {}
        pseudo_run: Run | None = None
        for index, (a, b, units) in enumerate(staged):
            resp = resp_rows[resp_rows["pair"] == index]
            first = resp.drop_duplicates("unit")
            cause = np.full(len(first), "combined", dtype=object)
            open_ = np.ones(len(first), dtype=bool)
            err_b = first["err_b"].to_numpy(dtype=bool)
            ca, cb = self._conv(a), self._conv(b)
            for group in _differing_groups(ca, cb):
                if not open_.any():
                    break
                conv = _toggle(ca, cb, group)
                key = _conv_key(conv)
                if key not in error_cache:
                    # The small run is shared unless the toggle infers its ontology from all gold states.
                    if _global_ontology(conv, self.run):
                        target = _pseudo_run(self.run, content, conv)
                    else:
                        pseudo_run = pseudo_run or _pseudo_run(self.run, content, conv)
                        target = pseudo_run
                    pseudo = score_run(target, conv).turns
                    wrong = ~pseudo.set_index("dialogue_id")["joint_correct"]
                    error_cache[key] = wrong.reindex("c" + pd.Series(np.arange(len(uniques))).astype("str")).to_numpy(
                        dtype=bool
                    )
                err = error_cache[key][first["content"].to_numpy()]
                explained = open_ & (err == err_b)
                cause[explained] = group
                open_ &= ~explained
            # A multiple-values cause whose prediction holds `a|b`: the hedge is what was accepted.
            hedged = resp.loc[
                (resp["side"] == "pred") & resp["value"].astype("str").str.contains("|", regex=False), "unit"
            ]
            cause[(cause == "multi_value") & first["unit"].isin(set(hedged)).to_numpy()] = "hedged_prediction"
            by_unit = pd.Series(cause, index=first["unit"].to_numpy())
            chosen = units.loc[units["responsible"]]
            extra = pd.concat([self._denominator_rows(a, b), self._prepared_rows(a, b, chosen)], ignore_index=True)
            self._explained[(a, b)] = self._summarise(chosen, by_unit, extra)
        return self._explained

    def _turn_rows(
        self, mask: np.ndarray, a: str, b: str, outcomes: pd.DataFrame, labels: tuple[str, str], cause: str
    ) -> pd.DataFrame:
        """One row per turn of `mask`, no slot: `outcomes` (per turn, one bool column per convention) labelled
        True -> labels[0], False -> labels[1], and `cause`."""
        turns = self.correct.loc[mask, ["tid", *TURN_KEY]]
        label = {True: labels[0], False: labels[1]}
        return pd.DataFrame(
            {
                "tid": turns["tid"].to_numpy(),
                "dialogue_id": turns["dialogue_id"].to_numpy(),
                "turn_index": turns["turn_index"].to_numpy(),
                "domain": "",
                "slot": "",
                "gold": "",
                "pred": "",
                "outcome_a": [label[bool(v)] for v in outcomes.loc[mask, a]],
                "outcome_b": [label[bool(v)] for v in outcomes.loc[mask, b]],
                "cause": cause,
            }
        )

    def _denominator_rows(self, a: str, b: str) -> pd.DataFrame:
        """Turns scored under one of a, b only (mwzeval scores only the turns a prediction file holds):
        one row each, cause `turns`, no slot."""
        only = (self.counted[a] != self.counted[b]).to_numpy()
        return self._turn_rows(only, a, b, self.counted, ("scored", "not scored"), "turns")

    def _prepares_gold(self, name: str) -> bool:
        """Whether the convention's scorer read a prepared copy of the gold (`analysis.scorer_inputs`)."""
        found = (self.scored[name].alignment.get(self.run.meta.run_id, {}).get("notes") or {}).get(SCORER_INPUT)
        return isinstance(found, dict) and found.get("status") == "prepared"

    def _prepared_rows(self, a: str, b: str, chosen: pd.DataFrame) -> pd.DataFrame:
        """Flipped turns with no responsible raw slot when a or b scores a prepared gold (ConvLab-3's MultiWOZ
        preprocessing empties `not mentioned`, renames and drops slots): the preparation is their cause, one
        row each, no slot."""
        flipped = np.zeros(len(self.correct), dtype=bool)
        if self._prepares_gold(a) or self._prepares_gold(b):
            both = (self.counted[a] & self.counted[b]).to_numpy()
            unexplained = ~self.correct["tid"].isin(set(chosen["tid"])).to_numpy()
            flipped = both & (self.correct[a] != self.correct[b]).to_numpy() & unexplained
        return self._turn_rows(flipped, a, b, self.correct, ("correct", "wrong"), "gold_prepared")

    def _conv(self, name: str) -> Convention:
        return self.scored[name].convention

    def _units(self, a: str, b: str) -> pd.DataFrame:
        """Raw triples of the turns that flip between a and b, grouped into slots (both conventions'
        name switches applied), with each triple's outcome under a and b and whether its slot is
        responsible for a flip."""
        ca, cb = self._conv(a), self._conv(b)
        mask = ((self.correct[a] != self.correct[b]) & self.counted[a] & self.counted[b]).to_numpy()
        rows_mask = mask[self._raw["tid"].to_numpy()]
        rows = self._raw[rows_mask]
        common = replace(
            ca,
            lower_names=ca.lower_names or cb.lower_names,
            slot_aliases={**cb.slot_aliases, **ca.slot_aliases},
            slot_rules=ca.slot_rules or cb.slot_rules,
            gold_slot_renames={},
        )
        names = _name_map(rows[["domain", "slot"]], common)
        units = rows.merge(names, on=["domain", "slot"], how="left")
        units["outcome_a"] = self._outcomes(a)[rows_mask]
        units["outcome_b"] = self._outcomes(b)[rows_mask]
        units["unit"] = units.groupby(["tid", "n_domain", "n_slot"], sort=False).ngroup()
        unit = units["unit"].to_numpy()
        for side in ("a", "b"):
            err = pd.Series(np.isin(units[f"outcome_{side}"].to_numpy(), ERROR_OUTCOMES))
            units[f"err_{side}"] = err.groupby(unit).transform("any").to_numpy()
        units["responsible"] = units["err_a"] != units["err_b"]
        return units

    def _summarise(self, rows: pd.DataFrame, cause: pd.Series, extra: pd.DataFrame | None = None) -> _PairExplanation:
        unit = rows["unit"].to_numpy()
        first = rows.drop_duplicates("unit").set_index("unit")
        slots = pd.DataFrame(
            {
                "tid": first["tid"],
                "dialogue_id": first["dialogue_id"],
                "turn_index": first["turn_index"],
                "domain": first["n_domain"],
                "slot": first["n_slot"],
            }
        )
        for side in ("gold", "pred"):
            values = rows["value"].where(rows["side"] == side)
            slots[side] = _join_within(unit, values, "|", sort=False).reindex(slots.index).astype("str")
        slots["outcome_a"] = _labels(unit, rows["outcome_a"].to_numpy()).reindex(slots.index)
        slots["outcome_b"] = _labels(unit, rows["outcome_b"].to_numpy()).reindex(slots.index)
        slots["cause"] = cause.reindex(slots.index)
        if extra is not None and len(extra):
            slots = pd.concat([slots, extra], ignore_index=True)
        slots = slots.astype({"outcome_a": "str", "outcome_b": "str", "cause": "str"})
        slots = slots.sort_values(["tid", "domain", "slot"], kind="stable").reset_index(drop=True)
        bits = slots["cause"].map({c: 1 << i for i, c in enumerate(CAUSES)}).to_numpy(dtype="int64")
        per_turn = _or_within(slots["tid"].to_numpy(), bits)
        turn_causes = pd.DataFrame(
            {"tid": per_turn.index.to_numpy(), "causes": _cause_sets(per_turn.to_numpy())}
        ).astype({"causes": "str"})
        return _PairExplanation(slots, turn_causes)


def _json_value(value: Any) -> Any:
    """JSON-safe cell: missing becomes None, numpy scalars plain Python."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    return value.item() if hasattr(value, "item") else value


def _json_float(value: Any) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value


def reconcile(
    run: Run,
    conventions: Sequence[str | Convention] = DEFAULT_CONVENTIONS,
    *,
    score: Callable[[Run, Convention], Scored] = score_run,
) -> Reconciliation:
    """Score `run` under each convention (`score(run, convention)`: `score_run`, or the command line's
    read of the score store) and tabulate headline metrics and flips.

    >>> from analysis.demo.testing import run_from_states
    >>> run = run_from_states([{"hotel": {"price range": "cheap"}}], [{"hotel": {"pricerange": "cheap"}}])
    >>> rec = reconcile(run, ["exact", "mwzeval"])
    >>> rec.table()[["convention", "jga"]].to_dict("records")
    [{'convention': 'exact', 'jga': 0.0}, {'convention': 'mwzeval', 'jga': 1.0}]
    >>> rec.causes("exact", "mwzeval")
    {'slot_alias': 1}
    """
    convs = [get_convention(c) for c in conventions]
    names = tuple(c.name for c in convs)
    if not names:
        raise ValueError(f"reconcile needs at least one convention, one of {', '.join(CONVENTIONS)}")
    if len(set(names)) != len(names):
        raise ValueError(f"conventions must be distinct, got {list(names)}")
    scored = {c.name: score(run, c) for c in convs}
    metrics = pd.DataFrame.from_dict({n: _headline(s) for n, s in scored.items()}, orient="index")
    metrics.index.name = "convention"
    # Turns keyed as `_raw_triples` numbers them (positions in run.turns); a convention that scores only
    # the turns a prediction file holds leaves the others uncounted.
    correct = run.turns[TURN_KEY].assign(tid=np.arange(len(run.turns), dtype="int64"))[["tid", *TURN_KEY]]
    counted = pd.DataFrame(index=correct.index)
    position = pd.MultiIndex.from_frame(run.turns[TURN_KEY])
    for name, s in scored.items():
        at = position.get_indexer(pd.MultiIndex.from_frame(s.turns[TURN_KEY]))
        joint = np.zeros(len(correct), dtype=bool)
        seen = np.zeros(len(correct), dtype=bool)
        joint[at] = s.turns["joint_correct"].to_numpy(dtype=bool)
        seen[at] = True
        correct[name] = joint
        counted[name] = seen
        s.memoised("run_positions", _constant(at))
    return Reconciliation(run, names, scored, metrics, correct, _raw_triples(run), counted)
