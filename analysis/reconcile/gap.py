"""The gap between a run's JGA and the number its paper publishes, decomposed into Reconcile's causes.

`published_gap(rec, base, published)` takes a `Reconciliation` holding the run's own convention `base` and
the conventions the paper may have scored under. It picks the reference convention (`target`, by default
the reconciled convention whose JGA is nearest the published number) and splits

    published - JGA(base) = (JGA(target) - JGA(base)) + (published - JGA(target))

The first term is exact, turn by turn: a turn adds `correct_target / N_target - correct_base / N_base`
(N: the turns each convention scores), and every turn whose joint correctness flips between the two
carries the causes Reconcile found for it (slot naming, value normalisation, dontcare, fuzzy matching, the
turns scored, ...; a turn with several causes counts under `combined`). A turn correct under both whose
weight differs only because the two conventions score different numbers of turns adds to `turns` too. The
second term is what no convention switch explains (the model run itself, a different gold version, a
rule no convention here has): the row `unexplained`.

Every row has its share of the gap, its number of turns and the turns themselves (`gap_turns`), for a
link to each in the Dialogue viewer.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analysis import scorer_inputs
from analysis.conventions import CONVENTIONS
from analysis.model import TURN_KEY
from analysis.reconcile.core import CAUSE_LABELS, CAUSES, DEFAULT_CONVENTIONS, Reconciliation

__all__ = [
    "GAP_COLUMNS",
    "UNEXPLAINED",
    "as_fraction",
    "gap_conventions",
    "gap_lines",
    "gap_summary",
    "gap_turns",
    "informative_pair",
    "nearest_convention",
    "published_gap",
    "undecomposed",
]

UNEXPLAINED = "unexplained"
GAP_LABELS = {
    **CAUSE_LABELS,
    "turns": "turns scored or missing (the turn denominator)",
    UNEXPLAINED: "not explained by any convention switch (the model run, another gold version, or a rule "
    "none of these conventions has)",
}
GAP_COLUMNS = ["cause", "label", "jga_change", "share", "turns", "turns_up", "turns_down"]


def gap_conventions(own: str) -> list[str]:
    """The conventions a run is reconciled under by default: its own first, its lenient variant, then the
    default ones.

    >>> gap_conventions("mwzeval")
    ['mwzeval', 'mwzeval-lenient', 'exact', 'trade', 'dstc9', 'convlab3']
    """
    lenient = f"{own}-lenient"
    names = [own, *([lenient] if lenient in CONVENTIONS else []), *DEFAULT_CONVENTIONS]
    return list(dict.fromkeys(names))


def informative_pair(rec: Reconciliation) -> tuple[str, str] | None:
    """The run's own convention (the first listed when it is not among them) and the convention flipping the
    most turns against it; None with fewer than two conventions."""
    counts = rec.flip_counts()
    if counts.empty:
        return None
    own = rec.run.meta.convention if rec.run.meta.convention in rec.conventions else rec.conventions[0]
    # A convention whose scorer never reads this gold (JGA n/a, `analysis.scorer_inputs`) flips nothing worth
    # showing: its "flips" are of a number that scorer would not print.
    scored = set(rec.metrics["jga"].dropna().index) | {own}
    mine = counts[((counts["a"] == own) | (counts["b"] == own)) & counts["a"].isin(scored) & counts["b"].isin(scored)]
    if mine.empty:
        return None
    best = mine.sort_values("count", ascending=False, kind="stable").iloc[0]
    return own, str(best["b"] if best["a"] == own else best["a"])


def as_fraction(value: float) -> float:
    """A published number as a fraction: a percentage (above 1) divided by 100.

    >>> as_fraction(56.2), as_fraction(0.562)
    (0.562, 0.562)
    """
    value = float(value)
    if not 0 <= value <= 100:
        raise ValueError(f"a published JGA is a fraction or a percentage, got {value}")
    return round(value / 100, 10) if value > 1 else value


def nearest_convention(rec: Reconciliation, base: str, published: float) -> str:
    """The reconciled convention other than `base` whose JGA is nearest `published` (`base` when alone)."""
    jga = rec.metrics["jga"].drop(index=base, errors="ignore").dropna()
    if jga.empty:
        return base
    return str((jga - as_fraction(published)).abs().sort_values(kind="stable").index[0])


def undecomposed(rec: Reconciliation, base: str) -> str | None:
    """Why the gap cannot be decomposed: the run has no JGA under `base` (the scorer it is named after never
    reads this gold, `scorer_inputs`: every number n/a); None when it has one."""
    if not np.isnan(float(rec.metrics.loc[base, "jga"])):
        return None
    found = scorer_inputs.gold_input(CONVENTIONS[base], rec.run) if base in CONVENTIONS else None
    if found is not None and found.status == "n/a":
        return found.note
    return f"no turn is scored under {base}"


def _per_turn(rec: Reconciliation, base: str, target: str) -> pd.DataFrame:
    """Per turn of the run: its contribution to JGA(target) - JGA(base) and its cause (`""`: none)."""
    out = rec.correct[["tid", *TURN_KEY]].copy()
    for name, col in ((base, "w_base"), (target, "w_target")):
        counted = rec.counted[name].to_numpy(dtype=bool)
        n = max(int(counted.sum()), 1)
        out[col] = (rec.correct[name].to_numpy(dtype=bool) & counted) / n
    out["change"] = out["w_target"] - out["w_base"]
    out["cause"] = ""
    out["flipped"] = False
    if base == target:
        return out
    flipped = rec.flips(base, target)
    if len(flipped):
        causes = flipped["causes"].fillna("").astype("str")
        single = causes.where(~causes.str.contains(",", regex=False), "combined").replace("", "combined")
        position = pd.Index(out["tid"]).get_indexer(flipped["tid"])
        out.loc[out.index[position], "cause"] = single.to_numpy()
        out.loc[out.index[position], "flipped"] = True
    # A turn correct under both whose weight differs (the two score different numbers of turns).
    weight_only = (out["cause"] == "") & (out["change"].abs() > 0)
    out.loc[weight_only, "cause"] = "turns"
    return out


def published_gap(
    rec: Reconciliation, base: str, published: float, *, target: str | None = None
) -> tuple[str, pd.DataFrame]:
    """(`target`, the gap table): one row per cause with a share of the gap, in `CAUSES` order, then
    `unexplained`. Columns `GAP_COLUMNS`: `jga_change` (the JGA the cause moves, base towards the
    published number), `share` (of `published - JGA(base)`; NaN when the gap is 0), `turns` (turns that
    flip for it; a turn right under both whose weight differs with the denominator adds to `turns`'
    JGA change but is not counted), `turns_up` / `turns_down` (of them, those right only under the target /
    only under base). No row where the run has no JGA under `base` (`undecomposed`): there is no gap."""
    value = as_fraction(published)
    target = target or nearest_convention(rec, base, value)
    if undecomposed(rec, base) is not None:
        kinds = {"cause": "str", "label": "str", "jga_change": "float64", "share": "float64"}
        return target, pd.DataFrame({c: pd.Series(dtype=kinds.get(c, "int64")) for c in GAP_COLUMNS})
    per_turn = _per_turn(rec, base, target)
    rows = per_turn[per_turn["cause"] != ""]
    flipped = rows["flipped"].to_numpy(dtype=bool)
    up = flipped & (rows["w_target"] > 0).to_numpy()  # right (and scored) under the target only
    down = flipped & (rows["w_base"] > 0).to_numpy()  # right (and scored) under base only
    grouped = (
        rows.assign(flip=flipped, up=up, down=down)
        .groupby("cause", sort=False)
        .agg(jga_change=("change", "sum"), turns=("flip", "sum"), turns_up=("up", "sum"), turns_down=("down", "sum"))
    )
    order = [c for c in CAUSES if c in grouped.index]
    table = grouped.reindex(order).reset_index()
    base_jga = float(rec.metrics.loc[base, "jga"])
    target_jga = float(rec.metrics.loc[target, "jga"])
    rest = pd.DataFrame(
        {"cause": [UNEXPLAINED], "jga_change": [value - target_jga], "turns": [0], "turns_up": [0], "turns_down": [0]}
    )
    table = pd.concat([table, rest], ignore_index=True)
    gap = value - base_jga
    table["share"] = table["jga_change"] / gap if gap else np.nan
    table["label"] = table["cause"].map(GAP_LABELS)
    table = table.astype({"turns": "int64", "turns_up": "int64", "turns_down": "int64"})
    return target, table[GAP_COLUMNS]


def gap_turns(rec: Reconciliation, base: str, target: str, cause: str) -> pd.DataFrame:
    """The turns of one cause of the gap: `dialogue_id`, `turn_index`, `user`, `correct_base`,
    `correct_target` (as `Reconciliation.flips`)."""
    per_turn = _per_turn(rec, base, target)
    chosen = per_turn.loc[(per_turn["cause"] == cause) & per_turn["flipped"], ["tid", *TURN_KEY]]
    out = chosen.assign(
        correct_base=rec.correct.loc[chosen.index, base].to_numpy(dtype=bool),
        correct_target=rec.correct.loc[chosen.index, target].to_numpy(dtype=bool),
    )
    out = out.merge(rec.run.turns[[*TURN_KEY, "user"]], on=TURN_KEY, how="left")
    return out[[*TURN_KEY, "user", "correct_base", "correct_target"]].reset_index(drop=True)


def gap_summary(rec: Reconciliation, base: str, published: float, target: str, table: pd.DataFrame) -> dict[str, Any]:
    """The decomposition as JSON (fractions; shares of the gap)."""
    value = as_fraction(published)
    base_jga = float(rec.metrics.loc[base, "jga"])
    reference_jga = float(rec.metrics.loc[target, "jga"])
    reason = undecomposed(rec, base)
    out: dict[str, Any] = {
        "published": value,
        "convention": base,
        "jga": None if reason is not None else base_jga,
        "gap": None if reason is not None else value - base_jga,
        "reference": target,
        "reference_jga": None if np.isnan(reference_jga) else reference_jga,
    }
    if reason is not None:  # no JGA under its own convention: nothing to decompose, and why
        return {**out, "causes": [], "not_decomposed": reason}
    return {
        **out,
        "causes": [
            {
                "cause": row.cause,
                "jga_change": float(row.jga_change),
                "share": None if row.share != row.share else float(row.share),
                "turns": int(row.turns),
                "turns_up": int(row.turns_up),
                "turns_down": int(row.turns_down),
            }
            for row in table.itertuples(index=False)
        ],
    }


def gap_lines(summary: dict[str, Any]) -> list[str]:
    """The decomposition as text lines (the command line and the report)."""
    if summary.get("not_decomposed"):
        reference = (
            f" Nearest convention: {summary['reference']} ({summary['reference_jga']:.4f}), "
            f"{summary['published'] - summary['reference_jga']:+.4f} from the published number."
            if summary["reference_jga"] is not None and summary["reference"] != summary["convention"]
            else ""
        )
        return [
            f"Published JGA {summary['published']:.4f}; this run has no JGA under {summary['convention']} "
            f"({summary['not_decomposed']}): no gap to decompose.{reference}"
        ]
    lines = [
        f"Published JGA {summary['published']:.4f}; this run under {summary['convention']} {summary['jga']:.4f}: "
        f"gap {summary['gap']:+.4f}. Nearest convention: {summary['reference']} ({summary['reference_jga']:.4f})."
    ]
    for row in summary["causes"]:
        share = "n/a" if row["share"] is None else f"{row['share']:.0%}"
        turns = (
            f"{row['turns']} turns (+{row['turns_up']} / -{row['turns_down']})" if row["cause"] != UNEXPLAINED else ""
        )
        lines.append(f"  {row['jga_change']:+.4f}  {share:>5} of the gap  {turns:<26} {GAP_LABELS[row['cause']]}")
    return lines
