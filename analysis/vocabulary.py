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


def _examples(rows: pd.DataFrame, keys: list[str], n: int) -> pd.Series:
    """Per name, its `n` most frequent values as written, `; `-joined."""
    if rows.empty:
        return pd.Series(dtype="str")
    counts = rows.groupby([*keys, "display"], sort=False).size().rename("n").reset_index()
    counts = counts.sort_values([*keys, "n", "display"], ascending=[True] * len(keys) + [False, True], kind="stable")
    top = counts.groupby(keys, sort=False).head(n)
    return top.groupby(keys, sort=False)["display"].agg("; ".join)


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


def _of_names(rows: pd.DataFrame, names: pd.DataFrame) -> pd.DataFrame:
    """The rows of `names` (a `_names` subset), in their order: by integer code when both have it."""
    if "pair_code" in rows.columns and "pair_code" in names.columns:
        return rows[np.isin(rows["pair_code"].to_numpy(), names["pair_code"].to_numpy())].reset_index(drop=True)
    return rows.merge(names[["domain", "slot"]], on=["domain", "slot"])


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
    gold, pred = _side(scored, run, "gold"), _side(scored, run, "pred")
    gold_names, pred_names = _names(gold), _names(pred)
    g_key = gold_names["domain"] + "\x1f" + gold_names["slot"]
    p_key = pred_names["domain"] + "\x1f" + pred_names["slot"]
    pred_only = pred_names[~p_key.isin(set(g_key))].reset_index(drop=True)
    gold_only = gold_names[~g_key.isin(set(p_key))].reset_index(drop=True)

    # Same turn, same compared value, a predicted-only name against a gold-only name.
    p_rows, g_rows = _of_names(pred, pred_only), _of_names(gold, gold_only)
    pairs = p_rows[["tid", "domain", "slot", "value"]].merge(
        g_rows[["tid", "domain", "slot", "value"]].rename(columns={"domain": "gold_domain", "slot": "gold_slot"}),
        on=["tid", "value"],
    )
    shared = (
        pairs.drop_duplicates(["tid", "domain", "slot", "gold_domain", "gold_slot"])
        .groupby(["domain", "slot", "gold_domain", "gold_slot"], sort=True)
        .size()
        .rename("shared_turns")
        .reset_index()
    )
    shared = shared.merge(pred_only, on=["domain", "slot"])
    shared["agreement"] = shared["shared_turns"] / shared["turns"]
    shared = shared.sort_values(["domain", "slot", "shared_turns"], ascending=[True, True, False], kind="stable")
    best = shared.drop_duplicates(["domain", "slot"])
    found = best[(best["shared_turns"] >= MIN_SHARED) & (best["agreement"] >= MIN_AGREEMENT)]
    # A gold name explains one predicted name: the one agreeing on most turns.
    found = found.sort_values("shared_turns", ascending=False, kind="stable").drop_duplicates(
        ["gold_domain", "gold_slot"]
    )

    p_examples = _examples(p_rows, ["domain", "slot"], examples)
    g_examples = _examples(g_rows, ["domain", "slot"], examples)
    return _table(found, pred_only, gold_only, p_examples, g_examples)


def _table(
    found: pd.DataFrame,
    pred_only: pd.DataFrame,
    gold_only: pd.DataFrame,
    p_examples: pd.Series,
    g_examples: pd.Series,
) -> pd.DataFrame:
    """`vocabulary`'s rows: the mismatches `found`, then the other predicted-only and gold-only names, each with
    its examples; mismatches first, then by entries."""
    # A few dozen names: plain sets and dicts of (domain, slot) tuples, not pandas indexes.
    mismatch = found.assign(kind=MISMATCH)
    rest_p = _without(pred_only, set(_pairs(found, "domain", "slot"))).assign(kind=PRED_ONLY)
    rest_g = _without(gold_only, set(_pairs(found, "gold_domain", "gold_slot"))).assign(kind=GOLD_ONLY)
    parts = []
    for frame, ex in ((mismatch, p_examples), (rest_p, p_examples), (rest_g, g_examples)):
        if frame.empty:
            continue
        lookup = ex.to_dict()
        examples = np.array([lookup.get(pair, np.nan) for pair in _pairs(frame, "domain", "slot")], dtype=object)
        parts.append(frame.assign(examples=examples))
    if not parts:
        return _empty()
    out = pd.concat(parts, ignore_index=True).reindex(columns=VOCABULARY_COLUMNS)
    for column in ("gold_domain", "gold_slot", "examples"):
        out[column] = out[column].astype(object).fillna("")
    out["shared_turns"] = out["shared_turns"].fillna(0)
    out["order"] = out["kind"].map({k: i for i, k in enumerate(KINDS)})
    out = out.sort_values(["order", "entries", "domain", "slot"], ascending=[True, False, True, True], kind="stable")
    out = out.drop(columns="order").reset_index(drop=True)
    return out.astype(DTYPES)


def _pairs(frame: pd.DataFrame, domain: str, slot: str) -> list[tuple[str, str]]:
    return list(zip(frame[domain].tolist(), frame[slot].tolist(), strict=True))


def _without(names: pd.DataFrame, pairs: set[tuple[str, str]]) -> pd.DataFrame:
    """The rows of `names` whose (domain, slot) is not one of `pairs`."""
    return names[np.array([pair not in pairs for pair in _pairs(names, "domain", "slot")], dtype=bool)]


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


class _Compared:
    """Each side's raw (domain, slot) names -> the names a convention compares, per convention: the raw
    names read once per run, each convention's map made once (the run's own is asked for every candidate)."""

    def __init__(self, run: Run) -> None:
        self.raw = {side: _raw_names(run, side) for side in ("pred", "gold")}
        self.maps: dict[tuple[str, str], list[tuple[str, str, str, str]]] = {}

    def __call__(self, conv: Convention, side: str) -> list[tuple[str, str, str, str]]:
        """(domain, slot, compared domain, compared slot) of every raw name of `side` under `conv`."""
        key = (conv.name, side)
        if key not in self.maps:
            named = _name_map(self.raw[side], replace(conv, gold_slot_renames={}) if side == "pred" else conv)
            self.maps[key] = list(
                zip(*(named[c].tolist() for c in ("domain", "slot", "n_domain", "n_slot")), strict=True)
            )
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
    variant and then the convention nearest to it; with the run's headline metrics under both (`scored`:
    the run already scored under `convention`, not scored again)."""
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
            f"  under {fix.convention}, which maps {fix.mapped} of these names: JGA {_num(after)} "
            f"(here {_num(before)}), slot F1 (micro) {_num(fix.metrics.get('slot_f1_micro'))}"
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
            f" Under {found.fix.convention}, which maps the names, JGA is {found.fix.metrics['jga']:.4f} "
            f"(here {found.fix.before['jga']:.4f})."
        )
    return text


def _num(value: float | None) -> str:
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
