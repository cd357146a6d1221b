"""The slot vocabulary check of a run: which (domain, slot) names only one side uses, and naming mismatches.

A scored run compares slots by the names its convention gives them (`Scored.slots`, gold and predicted
entries side by side). `vocabulary(scored)` lists

* the predicted names the gold never uses and the gold names never predicted, each with the number of
  entries and turns it has and a few example values (`kind` `predicted only` / `gold only`);
* the **naming mismatches** among them: a predicted-only name and a gold-only name that carry the same
  value on the same turns (`restaurant-people` against mwzeval's MultiWOZ 2.2 gold `restaurant-bookpeople`).
  A pair is a mismatch when they agree on at least `MIN_SHARED` turns and on at least `MIN_AGREEMENT` of the
  turns where the predicted name occurs; each predicted name is paired with the gold name it agrees with most.

`naming_fix(run, convention, mismatches)` names the registered convention under which the mismatched names
become one (the run's own convention's `-lenient` variant first, then the convention differing from it in
the fewest switches) and scores the run under it: the number the run would get with the names mapped.

Everything is computed on the scored tables with joins and group counts, no loop over turns.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np
import pandas as pd

from analysis import scorer_inputs
from analysis.conventions import CONVENTIONS, Convention, get_convention, normalise_states
from analysis.model import STATE_COLUMNS, Run
from analysis.reconcile.core import _name_map
from analysis.registry import values
from analysis.scoring import Scored, score_run

__all__ = [
    "KINDS",
    "MIN_AGREEMENT",
    "MIN_SHARED",
    "VOCABULARY_COLUMNS",
    "NamingFix",
    "VocabularyReport",
    "four_decimals",
    "mismatch_warning",
    "mismatched_slots",
    "naming_fix",
    "vocabulary",
    "vocabulary_lines",
    "vocabulary_report",
    "vocabulary_summary",
]

MIN_SHARED = 3  # turns on which the two names must carry the same value
MIN_AGREEMENT = 0.5  # share of the predicted name's turns on which they must
EXAMPLES = 3
PRED_ONLY, GOLD_ONLY, MISMATCH = "predicted only", "gold only", "naming mismatch"
KINDS = (MISMATCH, PRED_ONLY, GOLD_ONLY)
VOCABULARY_COLUMNS = [
    "kind",
    "domain",
    "slot",
    "gold_domain",
    "gold_slot",
    "entries",
    "turns",
    "shared_turns",
    "agreement",
    "examples",
]


def _side(scored: Scored, run: Run | None, side: str) -> pd.DataFrame:
    """The entries of one side: `tid` (a turn key), `domain`, `slot`, `value` (as compared), `display` (as
    written). From the run's own states when given (every entry, also those the convention's slot scope
    leaves unscored), else from the scored slots."""
    if run is not None:
        states = run.gold if side == "gold" else run.pred
        named = normalise_states(states[STATE_COLUMNS], scored.convention, side=side)
        turn = named["dialogue_id"].astype("str") + "\x1f" + named["turn_index"].astype("str")
        rows = named[["domain", "slot", "value", "display"]].assign(tid=turn.to_numpy())
        return rows[["tid", "domain", "slot", "value", "display"]].reset_index(drop=True)
    slots = scored.slots
    present = slots[f"{side}_display"].notna().to_numpy()
    # With each name's integer code (`pair_code`: one per compared (domain, slot)), for the counts below.
    rows = slots.loc[present, ["tid", "domain", "slot", f"{side}_value", f"{side}_display", "pair_code"]]
    return rows.rename(columns={f"{side}_value": "value", f"{side}_display": "display"}).reset_index(drop=True)


def _examples(rows: pd.DataFrame, code: np.ndarray, n_names: int, n: int) -> list[str]:
    """Per name (`code`: each row's name, a position among `n_names`), its `n` most frequent values as
    written, `; `-joined, most frequent first and ties in string order ("" for a name with none)."""
    out = [""] * n_names
    display = rows["display"]
    written = display.notna().to_numpy(dtype=bool)
    if not written.any():
        return out
    d_code, d_text = pd.factorize(display.to_numpy(dtype=object)[written])
    n_text = len(d_text)
    key, counts = np.unique(code[written] * n_text + d_code, return_counts=True)
    name, text = key // n_text, key % n_text
    rank = np.empty(n_text, dtype="int64")
    rank[np.argsort(np.asarray(d_text, dtype=object), kind="stable")] = np.arange(n_text)
    order = np.lexsort((rank[text], -counts, name))
    taken = [0] * n_names
    picked: list[list[str]] = [[] for _ in range(n_names)]
    for i, t in zip(name[order].tolist(), text[order].tolist(), strict=True):
        if taken[i] < n:
            taken[i] += 1
            picked[i].append(d_text[t])
    return ["; ".join(values) for values in picked]


def _names(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (domain, slot), sorted: entries and distinct turns (and the name's `pair_code` when the rows have
    it: counted on those integer codes, a fifth of the group-by on the two name columns; the same table)."""
    if "pair_code" not in rows.columns or rows.empty:
        return (
            rows.groupby(["domain", "slot"], sort=True)
            .agg(entries=("tid", "size"), turns=("tid", "nunique"))
            .reset_index()
        )
    # Codes are small (one per name of the run): counted with bincount; np.unique's hash path costs more.
    code, tid = rows["pair_code"].to_numpy(dtype="int64"), rows["tid"].to_numpy(dtype="int64")
    n = int(code.max()) + 1
    entries = np.bincount(code, minlength=n)
    pairs = np.flatnonzero(entries)
    first = np.full(n, -1, dtype="int64")
    first[code[::-1]] = np.arange(len(code) - 1, -1, -1)  # reversed: each name's first row wins
    width = int(tid.max()) + 1
    key = np.sort(code * width + tid)
    distinct = key[np.concatenate(([True], key[1:] != key[:-1]))]  # (name, turn) once each
    turns = np.bincount(distinct // width, minlength=n)
    out = pd.DataFrame(
        {
            "domain": rows["domain"].array.take(first[pairs]),
            "slot": rows["slot"].array.take(first[pairs]),
            "entries": entries[pairs].astype("int64"),
            "turns": turns[pairs].astype("int64"),
            "pair_code": pairs,
        }
    )
    return out.sort_values(["domain", "slot"], kind="stable").reset_index(drop=True)


def _select(rows: pd.DataFrame, names: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    """The rows of the names of `names` (a `_names` subset), in their order, and each one's name as a
    position in `names` (by integer code when both have it, else by the two name columns)."""
    if "pair_code" in rows.columns and "pair_code" in names.columns:
        row_code, name_code = rows["pair_code"].to_numpy(dtype="int64"), names["pair_code"].to_numpy(dtype="int64")
        position = np.full(max(int(row_code.max(initial=-1)), int(name_code.max(initial=-1))) + 1, -1)
        position[name_code] = np.arange(len(names))
        code = position[row_code]
    else:
        index = pd.MultiIndex.from_arrays([names["domain"], names["slot"]])
        code = index.get_indexer(pd.MultiIndex.from_arrays([rows["domain"], rows["slot"]]))
    kept = code >= 0
    return rows[kept].reset_index(drop=True), code[kept].astype("int64")


def _joint_codes(a: pd.Series, b: pd.Series) -> tuple[np.ndarray, int]:
    """Integer codes of the values of `a` then `b`, equal where the values are (a missing value is one value
    too, as a join matches it), and how many distinct values there are."""
    if pd.api.types.is_integer_dtype(a.dtype) and pd.api.types.is_integer_dtype(b.dtype):
        both = np.concatenate([a.to_numpy(dtype="int64"), b.to_numpy(dtype="int64")])
    else:
        both = np.concatenate([a.to_numpy(dtype=object), b.to_numpy(dtype=object)])
    codes, uniques = pd.factorize(both, use_na_sentinel=False)
    return codes.astype("int64"), len(uniques)


def _shared_turns(
    p_rows: pd.DataFrame, p_code: np.ndarray, g_rows: pd.DataFrame, g_code: np.ndarray, shape: tuple[int, int]
) -> np.ndarray:
    """(predicted-only name, gold-only name) -> the distinct turns on which both carry the same compared
    value: an equi-join on (turn, value) by sorted integer keys, then the distinct (pair, turn) counted.
    Values match as a join on them would match (a missing value matches a missing value)."""
    shared = np.zeros(shape, dtype="int64")
    n_p = len(p_rows)
    if not n_p or not len(g_rows):
        return shared
    turn, _ = _joint_codes(p_rows["tid"], g_rows["tid"])
    value, n_values = _joint_codes(p_rows["value"], g_rows["value"])
    key = turn * n_values + value
    p_key, g_key = key[:n_p], key[n_p:]
    order = np.argsort(g_key, kind="stable")
    sorted_g = g_key[order]
    low, high = np.searchsorted(sorted_g, p_key, "left"), np.searchsorted(sorted_g, p_key, "right")
    counts = high - low
    total = int(counts.sum())
    if not total:
        return shared
    p_at = np.repeat(np.arange(n_p), counts)
    g_at = order[np.arange(total) + np.repeat(low - (np.cumsum(counts) - counts), counts)]
    n_turns = int(turn.max()) + 1
    pair = p_code[p_at] * shape[1] + g_code[g_at]
    distinct = np.unique(pair * n_turns + turn[:n_p][p_at])
    return np.bincount(distinct // n_turns, minlength=shape[0] * shape[1]).reshape(shape)


def vocabulary(scored: Scored, run: Run | None = None, *, examples: int = EXAMPLES) -> pd.DataFrame:
    """The vocabulary check of one scored run, one row per name (columns `VOCABULARY_COLUMNS`); `run`: its
    loaded files, so that predicted names the convention's slot scope ignores are seen too (DSTC9 and
    ConvLab-3 skip a predicted slot the gold turn does not list: without `run` such a name goes unseen).

    `kind`: `naming mismatch` (a predicted-only name and the gold-only name carrying its values:
    `gold_domain`, `gold_slot`, `shared_turns` with the same value, `agreement` = shared turns over the
    predicted name's turns), `predicted only` or `gold only` (the other names only one side uses).
    `entries` / `turns`: how often the (predicted, for a mismatch) name occurs; `examples`: its most
    frequent values as written. Mismatches first, then by entries.

    >>> from analysis.demo.testing import run_from_states
    >>> from analysis.scoring import score_run
    >>> gold = [{"hotel": {"bookday": "monday", "area": "east"}}] * 3
    >>> pred = [{"hotel": {"day": "monday", "area": "east", "stars": "4"}}] * 3
    >>> vocabulary(score_run(run_from_states(gold, pred), "exact"))[["kind", "slot", "gold_slot", "shared_turns"]]
                  kind   slot gold_slot  shared_turns
    0  naming mismatch    day   bookday             3
    1   predicted only  stars                       0
    """
    if run is not None:  # its states as the convention's scorer is handed them (`score_run` prepares them so)
        run = scorer_inputs.prepare(run, scored.convention)[0]
    gold, pred = _side(scored, run, "gold"), _side(scored, run, "pred")
    gold_names, pred_names = _names(gold), _names(pred)
    in_gold, in_pred = set(_pairs(gold_names, "domain", "slot")), set(_pairs(pred_names, "domain", "slot"))
    pred_only = _without(pred_names, in_gold)
    gold_only = _without(gold_names, in_pred)
    (p_rows, p_code), (g_rows, g_code) = _select(pred, pred_only), _select(gold, gold_only)
    # Same turn, same compared value, a predicted-only name against a gold-only name.
    shared = _shared_turns(p_rows, p_code, g_rows, g_code, (len(pred_only), len(gold_only)))
    found = _mismatches(shared, pred_only["turns"].to_numpy(dtype="int64"))
    p_examples = _examples(p_rows, p_code, len(pred_only), examples)
    g_examples = _examples(g_rows, g_code, len(gold_only), examples)
    return _table(found, pred_only, gold_only, p_examples, g_examples)


def _mismatches(shared: np.ndarray, turns: np.ndarray) -> list[tuple[int, int, int, float]]:
    """(predicted-only name, gold-only name, shared turns, agreement) of each naming mismatch, most shared
    turns first: each predicted name paired with the gold name it shares most turns with (the first in name
    order on a tie), kept when they share at least `MIN_SHARED` turns and `MIN_AGREEMENT` of the predicted
    name's; a gold name explains one predicted name, the one sharing most turns (the first on a tie)."""
    best = []
    for i in np.flatnonzero(shared.any(axis=1)).tolist():
        j = int(np.argmax(shared[i]))
        n = int(shared[i, j])
        agreement = n / int(turns[i])
        if n >= MIN_SHARED and agreement >= MIN_AGREEMENT:
            best.append((i, j, n, agreement))
    best.sort(key=lambda row: -row[2])  # stable: ties keep name order
    found, explained = [], set()
    for row in best:
        if row[1] not in explained:
            explained.add(row[1])
            found.append(row)
    return found


def _table(
    found: list[tuple[int, int, int, float]],
    pred_only: pd.DataFrame,
    gold_only: pd.DataFrame,
    p_examples: list[str],
    g_examples: list[str],
) -> pd.DataFrame:
    """`vocabulary`'s rows: the mismatches `found`, then the other predicted-only and gold-only names, each with
    its examples; mismatches first, then by entries (more first), then by name. (A few dozen names: lists.)"""
    p_names, g_names = _pairs(pred_only, "domain", "slot"), _pairs(gold_only, "domain", "slot")
    p_counts = list(zip(pred_only["entries"].tolist(), pred_only["turns"].tolist(), strict=True))
    g_counts = list(zip(gold_only["entries"].tolist(), gold_only["turns"].tolist(), strict=True))
    nan = float("nan")
    rows = [
        (MISMATCH, *p_names[i], *g_names[j], *p_counts[i], n, agreement, p_examples[i]) for i, j, n, agreement in found
    ]
    matched_p, matched_g = {row[0] for row in found}, {row[1] for row in found}
    rows += [
        (PRED_ONLY, *name, "", "", *p_counts[i], 0, nan, p_examples[i])
        for i, name in enumerate(p_names)
        if i not in matched_p
    ]
    rows += [
        (GOLD_ONLY, *name, "", "", *g_counts[i], 0, nan, g_examples[i])
        for i, name in enumerate(g_names)
        if i not in matched_g
    ]
    if not rows:
        return _empty()
    order = {kind: i for i, kind in enumerate(KINDS)}
    rows.sort(key=lambda row: (order[row[0]], -row[5], row[1], row[2]))  # stable
    columns = list(zip(*rows, strict=True))
    return pd.DataFrame(
        {
            name: pd.array(list(values), dtype=DTYPES[name])
            for name, values in zip(VOCABULARY_COLUMNS, columns, strict=True)
        }
    )


def _pairs(frame: pd.DataFrame, domain: str, slot: str) -> list[tuple[str, str]]:
    return list(zip(frame[domain].tolist(), frame[slot].tolist(), strict=True))


def _without(names: pd.DataFrame, pairs: set[tuple[str, str]]) -> pd.DataFrame:
    """The rows of `names` whose (domain, slot) is not one of `pairs`, numbered from 0."""
    keep = np.array([pair not in pairs for pair in _pairs(names, "domain", "slot")], dtype=bool)
    return names[keep].reset_index(drop=True)


DTYPES = {
    "kind": "str",
    "domain": "str",
    "slot": "str",
    "gold_domain": "str",
    "gold_slot": "str",
    "entries": "int64",
    "turns": "int64",
    "shared_turns": "int64",
    "agreement": "float64",
    "examples": "str",
}  # the columns of `vocabulary`, in `VOCABULARY_COLUMNS` order


def _empty() -> pd.DataFrame:
    return pd.DataFrame({column: pd.Series(dtype=dtype) for column, dtype in DTYPES.items()})


def mismatched_slots(table: pd.DataFrame) -> dict[str, str]:
    """`domain-slot` label of every name a naming mismatch concerns (both sides) -> what to say beside it."""
    rows = table[table["kind"] == MISMATCH]
    out: dict[str, str] = {}
    for p_dom, p_slot, g_dom, g_slot, shared in rows[
        ["domain", "slot", "gold_domain", "gold_slot", "shared_turns"]
    ].itertuples(index=False):
        out[f"{p_dom}-{p_slot}"] = f"naming mismatch: predicted as {p_slot}, gold says {g_slot} ({shared} turns)"
        out[f"{g_dom}-{g_slot}"] = f"naming mismatch: gold {g_slot} is predicted as {p_slot} ({shared} turns)"
    return out


@dataclass(frozen=True)
class NamingFix:
    """The convention that maps a run's mismatched names, and the run's headline numbers under it."""

    convention: str  # "" when no registered convention maps them
    mapped: int  # mismatches it maps (of those given)
    metrics: dict[str, float]  # under it (empty when none maps them)
    before: dict[str, float]  # under the run's own convention


def _raw_names(run: Run, side: str) -> pd.DataFrame:
    table = run.gold if side == "gold" else run.pred
    return table[["domain", "slot"]].drop_duplicates().reset_index(drop=True)


_ROW = "_vocabulary_row"  # a column following each state row through a scorer's preparation


def _prepared_names(run: Run, conv: Convention, side: str, raw: pd.DataFrame) -> list[tuple[str, str, str, str]]:
    """(domain, slot) as the file writes them -> as the convention's scorer is handed them (`scorer_inputs`:
    ConvLab-3's unified names for raw MultiWOZ), for each name of `side` that reaches the scorer; each name
    itself where the convention prepares nothing (or its preparation does not keep the rows' identity).
    `raw`: the side's distinct names (`_raw_names`)."""
    found = scorer_inputs.gold_input(conv, run)
    if found is None or found.prepare is None:
        return list(zip(raw["domain"], raw["slot"], raw["domain"], raw["slot"], strict=True))
    table = run.gold if side == "gold" else run.pred
    prepared = found.prepare(replace(run, **{side: table.assign(**{_ROW: np.arange(len(table))})}))
    after = prepared.gold if side == "gold" else prepared.pred
    if _ROW not in after.columns:
        return list(zip(raw["domain"], raw["slot"], raw["domain"], raw["slot"], strict=True))
    rows = after[_ROW].to_numpy(dtype="int64")
    pairs = pd.DataFrame(
        {
            "domain": table["domain"].array.take(rows),
            "slot": table["slot"].array.take(rows),
            "p_domain": after["domain"].array,
            "p_slot": after["slot"].array,
        }
    ).drop_duplicates()
    return list(zip(*(pairs[c].tolist() for c in pairs.columns), strict=True))


class _Compared:
    """Each side's raw (domain, slot) names -> the names a convention compares, per convention: through the
    convention's preparation of the files (`scorer_inputs`), then its naming; each convention's map made once
    (the run's own is asked for every candidate)."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.raw = {side: _raw_names(run, side) for side in ("pred", "gold")}
        self.maps: dict[tuple[str, str], list[tuple[str, str, str, str]]] = {}

    def __call__(self, conv: Convention, side: str) -> list[tuple[str, str, str, str]]:
        """(domain, slot, compared domain, compared slot) of every raw name of `side` under `conv`."""
        key = (conv.name, side)
        if key not in self.maps:
            prepared = _prepared_names(self.run, conv, side, self.raw[side])
            names = pd.DataFrame([p[2:] for p in prepared], columns=["domain", "slot"], dtype="str")
            named = _name_map(names, replace(conv, gold_slot_renames={}) if side == "pred" else conv)
            compared = dict(
                zip(
                    zip(named["domain"].tolist(), named["slot"].tolist(), strict=True),
                    zip(named["n_domain"].tolist(), named["n_slot"].tolist(), strict=True),
                    strict=True,
                )
            )
            self.maps[key] = [(d, s, *compared[(pd_, ps)]) for d, s, pd_, ps in prepared]
        return self.maps[key]


def _switch_distance(a: Convention, b: Convention) -> int:
    return sum(getattr(a, f.name) != getattr(b, f.name) for f in fields(a) if f.name not in ("name", "notes"))


def _candidates(conv: Convention) -> list[Convention]:
    """Registered conventions other than `conv`: its `-lenient` variant first, then by fewest switches apart."""
    others = [c for c in CONVENTIONS.values() if c.name != conv.name]
    return sorted(others, key=lambda c: (c.name != f"{conv.name}-lenient", _switch_distance(conv, c), c.name))


def _maps(compared: _Compared, own: Convention, cand: Convention, mismatches: pd.DataFrame) -> int:
    """How many mismatches (predicted name, gold name under `own`) become one name under `cand`: a raw
    predicted name compared as the mismatch's predicted name under `own` and a raw gold name compared as its
    gold name under `own` that `cand` compares as one and the same name. (A few dozen names: plain sets.)"""
    sides = {}
    for side in ("pred", "gold"):
        there: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for domain, slot, n_domain, n_slot in compared(cand, side):
            there.setdefault((domain, slot), []).append((n_domain, n_slot))
        sides[side] = {
            (n_domain, n_slot, *c)
            for domain, slot, n_domain, n_slot in compared(own, side)
            for c in there.get((domain, slot), [])
        }
    rows = mismatches[["domain", "slot", "gold_domain", "gold_slot"]].itertuples(index=False, name=None)
    mapped = {
        (domain, slot, g_domain, g_slot)
        for domain, slot, g_domain, g_slot in rows
        for p_domain, p_slot, c_domain, c_slot in sides["pred"]
        if (p_domain, p_slot) == (domain, slot) and (g_domain, g_slot, c_domain, c_slot) in sides["gold"]
    }
    return len(mapped)


def naming_fix(
    run: Run, convention: str | Convention, mismatches: pd.DataFrame, scored: Scored | None = None
) -> NamingFix:
    """The registered convention under which the most of `mismatches` (rows of `vocabulary` of kind
    `naming mismatch`, found under `convention`) become one name, preferring `convention`'s `-lenient`
    variant and then the convention nearest to it, among those whose scorer reads the run's gold (under
    the others every number is n/a); with the run's headline metrics under both (`scored`: the run already
    scored under `convention`, not scored again)."""
    own = get_convention(convention)
    if scored is None or scored.convention.name != own.name:
        scored = score_run(run, own)
    before = values(scored, ("jga", "slot_f1_micro"))
    rows = mismatches[mismatches["kind"] == MISMATCH] if "kind" in mismatches.columns else mismatches
    if rows.empty:
        return NamingFix("", 0, {}, before)
    best: tuple[int, Convention] | None = None
    compared = _Compared(run)
    for cand in _candidates(own):
        found = scorer_inputs.gold_input(cand, run)
        if found is not None and found.status == "n/a":  # every number n/a under it: no fix to offer
            continue
        n = _maps(compared, own, cand, rows)
        if n and (best is None or n > best[0]):
            best = (n, cand)
        if n == len(rows):
            break
    if best is None:
        return NamingFix("", 0, {}, before)
    after = values(score_run(run, best[1]), ("jga", "slot_f1_micro"))
    return NamingFix(best[1].name, best[0], after, before)


def vocabulary_summary(table: pd.DataFrame, fix: NamingFix | None = None) -> dict[str, Any]:
    """The check as JSON: counts per kind and the rows (NaN as None), with the naming fix when given."""
    counts = {k: int((table["kind"] == k).sum()) for k in KINDS}
    rows = [
        {k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in row.items()}
        for row in table.to_dict("records")
    ]
    out: dict[str, Any] = {"counts": counts, "names": rows}
    if fix is not None and fix.convention:
        out["naming_fix"] = {
            "convention": fix.convention,
            "mismatches_mapped": fix.mapped,
            "before": fix.before,
            "after": fix.metrics,
        }
    return out


def vocabulary_lines(
    table: pd.DataFrame, fix: NamingFix | None = None, *, convention: str = "", shown_others: int | None = 12
) -> list[str]:
    """The check as text lines for the command line and the report: every naming mismatch, and the first
    `shown_others` other names (None: all)."""
    if table.empty:
        return [
            "Vocabulary: every predicted (domain, slot) name is one the gold uses, and every gold name is predicted."
        ]
    counts = {k: int((table["kind"] == k).sum()) for k in KINDS}
    lines = [
        f"Vocabulary: {counts[MISMATCH]} naming mismatch(es), {counts[PRED_ONLY]} predicted name(s) the gold never "
        f"uses, {counts[GOLD_ONLY]} gold name(s) never predicted"
        + (f" (names as {convention} compares them)" if convention else "")
    ]
    others = table.index[table["kind"] != MISMATCH]
    hidden = others[shown_others:] if shown_others is not None else others[:0]
    for row in table.drop(index=hidden).itertuples(index=False):
        name = f"{row.domain}-{row.slot}"
        if row.kind == MISMATCH:
            lines.append(
                f"  ! naming mismatch: predicted {name} = gold {row.gold_domain}-{row.gold_slot} "
                f"(same value on {row.shared_turns} of its {row.turns} turns; e.g. {row.examples})"
            )
        else:
            lines.append(f"  {row.kind}: {name}  {row.entries} entries in {row.turns} turns (e.g. {row.examples})")
    if len(hidden):
        lines.append(f"  ... and {len(hidden)} more name(s) one side only uses (the JSON output lists every one)")
    if fix is not None and fix.convention:
        before, after = fix.before.get("jga"), fix.metrics.get("jga")
        lines.append(
            f"  under {fix.convention}, which maps {fix.mapped} of these names: JGA {four_decimals(after)} "
            f"(here {four_decimals(before)}), slot F1 (micro) {four_decimals(fix.metrics.get('slot_f1_micro'))}"
        )
    elif counts[MISMATCH]:
        lines.append("  no registered convention maps these names")
    return lines


def mismatch_warning(found: VocabularyReport) -> str | None:
    """The one warning of the Slots, Domains and Overview pages naming every slot a naming mismatch concerns,
    with the number under the convention that maps the names; None without a mismatch."""
    rows = found.table[found.table["kind"] == MISMATCH]
    if not len(rows):
        return None
    pairs = [
        f"{d}-{s} ↔ {gd}-{gs} ({n} turns)"
        for d, s, gd, gs, n in zip(
            rows["domain"], rows["slot"], rows["gold_domain"], rows["gold_slot"], rows["shared_turns"], strict=True
        )
    ]
    text = (
        f"Naming mismatch in {found.run_id} under {found.convention}: {len(pairs)} predicted slot name(s) carry the "
        f"values of a gold name they never match, so they score as wrong here: {'; '.join(pairs)}."
    )
    if found.fix is not None and found.fix.convention:
        text += (
            f" Under {found.fix.convention}, which maps the names, JGA is {four_decimals(found.fix.metrics.get('jga'))} "
            f"(here {four_decimals(found.fix.before.get('jga'))})."
        )
    return text


def four_decimals(value: float | None) -> str:
    """A number as the check prints it: four decimals, or n/a for a missing (None or NaN) one."""
    return "n/a" if value is None or value != value else f"{value:.4f}"


@dataclass(frozen=True)
class VocabularyReport:
    """What the pages and the report show of one run: the check, the naming fix, the words for both."""

    run_id: str
    convention: str
    table: pd.DataFrame
    fix: NamingFix | None
    lines: tuple[str, ...]
    marks: dict[str, str]  # `domain-slot` -> what to say beside it (`mismatched_slots`)
    published_jga: float | None


def vocabulary_report(scored: Scored, run: Run | str | None = None) -> VocabularyReport:
    """The vocabulary check of one scored run with the naming fix (when `run`, its loaded files, is given:
    a one-line load error in its place checks the scored slots only)."""
    loaded = run if isinstance(run, Run) else None
    table = vocabulary(scored, loaded)
    has_mismatch = bool((table["kind"] == MISMATCH).any())
    fix = naming_fix(loaded, scored.convention, table) if loaded is not None and has_mismatch else None
    meta = scored.metas[0]
    return VocabularyReport(
        meta.run_id,
        scored.convention.name,
        table,
        fix,
        tuple(vocabulary_lines(table, fix, convention=scored.convention.name)),
        mismatched_slots(table),
        meta.published_jga,
    )
