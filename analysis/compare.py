"""Paired comparison of runs on the same gold: every comparable metric, overall, per domain and per slot.

For every pair (a, b) of runs, in the order given, each metric the registry resamples (`Metric.interval`
set: `registry.INTERVAL_METRICS`, the "comparable" ones) is compared as `b - a` with the dialogue-clustered
paired bootstrap of `analysis.stats` (same resampled dialogues for both runs, percentile interval,
two-sided p), overall, per domain and per (domain, slot). Turn-level JGA is also compared with McNemar's
exact test. The numbers are those of `stats.paired_bootstrap` and `stats.mcnemar` (tested); this module
computes them without repeating the per-call work (the restriction to shared dialogues, the resample
matrix), so all metrics and scopes of a pair cost about one pass over the metric functions.

Multiple testing: Holm's step-down correction, within a *family*:

* overall: one metric over every pair (with two runs, one test: nothing to correct);
* per domain and per slot: one pair and one metric over the groups (the deltas one chart shows);
* McNemar: every pair.

A bootstrap p of 0 only says p < 1/B, so Holm reads it as 1/B (conservative) and its adjusted p prints
as an upper bound (`Holm p <= ...`). `significant` means the Holm-adjusted p is at most `alpha`.
Runs must be on the same gold: the same dialogues and turns with the same gold state (after the
convention's normalisation), else an `InputError` names the first differing dialogue and turn.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from analysis import metrics as M
from analysis import registry as R
from analysis import stats as S
from analysis.errors import InputError
from analysis.model import dialogue_key
from analysis.scoring import Scored
from analysis.shared_turns import on_shared_turns

SCOPES: dict[str, list[str]] = {"overall": [], "domain": ["domain"], "slot": ["domain", "slot"]}
COMPARABLE: tuple[str, ...] = R.INTERVAL_METRICS  # the metrics with a dialogue bootstrap
# What `compare` compares unless told otherwise (issue 17: "JGA, slot F1 and the new metrics"): JGA, the
# headline and micro slot F1, and the metrics robust to compounding. `metrics=COMPARABLE` (CLI `--metrics
# all`) adds the rest: the other slot F1 and accuracy variants, AGA, final-turn JGA, precision and recall.
DEFAULT_METRICS: tuple[str, ...] = (
    "jga",
    "slot_f1_seed",
    "slot_f1_micro",
    "iaga",
    "rsa",
    "fga_0.25",
    "fga_0.5",
    "fga_0.75",
    "fga_1.0",
    "turn_accuracy",
    "gca",
)
assert set(DEFAULT_METRICS) <= set(COMPARABLE), "every default compared metric needs a dialogue bootstrap"
ALPHA = 0.05
HOLM_NOTE = (
    "p-values are Holm-corrected within each family: overall, one metric over all {n_pairs} pair(s); "
    "per domain and per slot, one pair and one metric over its groups; McNemar, over all pairs. "
    "A bootstrap p of 0 counts as 1/B ({floor:g}) in the correction. Significant: Holm p <= {alpha:g}."
)
SUPPORT_NOTE = (
    "Support: n_dialogues and n_turns are the group's own (counted by either run); n_dialogues_differ and "
    "n_turns_differ those where the two runs differ. A delta whose runs differ in fewer than {min_support} "
    "dialogues, or whose interval has zero width, is not tested: no interval, no p-value, no star."
)
COLUMNS = [
    "a",
    "b",
    "metric",
    "label",
    "scope",
    "group",
    "domain",
    "slot",
    "estimate_a",
    "estimate_b",
    "delta",
    "low",
    "high",
    "p_value",
    "p_text",
    "p_holm",
    "p_holm_text",
    "significant",
    "family_size",
    "n_turns",
    "n_dialogues",
    "n_turns_differ",
    "n_dialogues_differ",
    "tested",
    "support_text",
]
# Support before significance (issue 41): a delta is tested only when the runs differ in at least this many
# dialogues of its group. Below it the paired bootstrap has too few clusters to say anything (with one
# differing dialogue every resample that draws it gives the same delta: a zero-width interval and p < 1/B),
# so the row keeps its delta and counts, and gets no interval, no p-value and no star. Ten dialogues is about
# 1% of a 1,000-dialogue test set, and the fewest for which even an exact sign test over the differing
# dialogues could reach p = 0.002 (2 / 2^10).
MIN_SUPPORT = 10


def holm(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (NaN stays NaN and does not count in the family size).

    Sorted ascending, the i-th smallest of m p-values (i from 0) becomes max over j <= i of
    min(1, (m - j) p_(j)): the adjustment is monotone in the raw p.

    >>> holm([0.01, 0.04, 0.03]).round(4).tolist()
    [0.03, 0.06, 0.06]
    >>> holm([0.2, float("nan")]).tolist()
    [0.2, nan]
    """
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    valid = np.flatnonzero(~np.isnan(p))
    m = len(valid)
    if not m:
        return out
    order = valid[np.argsort(p[valid], kind="stable")]
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out[order] = np.maximum.accumulate(scaled)
    return out


@dataclass
class Comparison:
    """The result of `compare`: `deltas` (one row per pair, metric, scope and group; `COLUMNS`) and
    `mcnemar` (one row per pair), with the settings and what could not be compared (`skipped`)."""

    runs: list[str]
    convention: str
    deltas: pd.DataFrame
    mcnemar: pd.DataFrame
    n_resamples: int
    level: float
    seed: int
    alpha: float
    skipped: dict[str, str] = field(default_factory=dict)
    min_support: int = MIN_SUPPORT
    n_dialogues: int = 0  # the dialogues resampled (shared by every run)
    left_out: dict[str, str] = field(default_factory=dict)  # run -> what of it is not compared, and why

    @property
    def pairs(self) -> list[tuple[str, str]]:
        return list(itertools.combinations(self.runs, 2))

    @property
    def holm_note(self) -> str:
        return HOLM_NOTE.format(n_pairs=len(self.pairs), floor=1 / self.n_resamples, alpha=self.alpha)

    def overall(self, metric: str | None = None) -> pd.DataFrame:
        """The overall rows (of one metric when given)."""
        rows = self.deltas[self.deltas["scope"] == "overall"]
        return rows if metric is None else rows[rows["metric"] == metric]

    def matrix(self, metric: str = "jga") -> pd.DataFrame:
        """Runs x runs: the overall Holm-significant delta (row run minus column run) or NaN."""
        table = pd.DataFrame(np.nan, index=self.runs, columns=self.runs)
        for row in self.overall(metric).itertuples():
            if row.significant:
                table.loc[row.b, row.a] = row.delta
                table.loc[row.a, row.b] = -row.delta
        return table

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: values as fractions, NaN as None."""

        def clean(frame: pd.DataFrame) -> list[dict[str, Any]]:
            records = frame.astype(object).where(frame.notna(), None).to_dict("records")
            return [{str(k): _plain(v) for k, v in r.items()} for r in records]

        return {
            "runs": self.runs,
            "convention": self.convention,
            "pairs": [{"a": a, "b": b} for a, b in self.pairs],
            "direction": "delta = b - a",
            "n_resamples": self.n_resamples,
            "level": self.level,
            "seed": self.seed,
            "alpha": self.alpha,
            "method": S.PAIRED_METHOD,
            "multiple_testing": self.holm_note,
            "min_support": self.min_support,
            "support": SUPPORT_NOTE.format(min_support=self.min_support),
            "n_dialogues": self.n_dialogues,
            "left_out": self.left_out,
            "deltas": clean(self.deltas),
            "mcnemar": clean(self.mcnemar),
            "skipped": self.skipped,
        }


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _source(scored: Scored) -> tuple[str, str | None]:
    meta = scored.metas[0]
    return (", ".join(meta.sources) or meta.run_id, "+".join(meta.formats) or None)


def check_same_gold(a: Scored, b: Scored) -> None:
    """InputError (naming b's file and the first differing dialogue and turn) unless both runs hold the
    same turns with the same gold state."""
    path, fmt = _source(b)
    name_a = a.metas[0].run_id
    turns_a = a.turns[["dialogue_id", "turn_index"]].assign(key=dialogue_key(a.turns["dialogue_id"]))
    turns_b = b.turns[["dialogue_id", "turn_index"]].assign(key=dialogue_key(b.turns["dialogue_id"]))
    both = turns_a.merge(turns_b, on=["key", "turn_index"], how="outer", indicator=True, suffixes=("_a", "_b"))
    odd = both[both["_merge"] != "both"]
    if len(odd):
        first = odd.sort_values(["key", "turn_index"]).iloc[0]
        where = "only in" if first["_merge"] == "right_only" else "missing from"
        dialogue = first["dialogue_id_b"] if first["_merge"] == "right_only" else first["dialogue_id_a"]
        raise InputError(
            path,
            fmt,
            f"not on the same gold as run {name_a!r}: {len(odd)} turns differ; this turn is {where} this run "
            "(compare needs runs over the same gold file)",
            dialogue_id=str(dialogue),
            turn=int(first["turn_index"]),
        )
    cols = ["dialogue_id", "turn_index", "domain", "slot", "gold_value"]
    on = ["key", *cols[1:]]
    gold_a, gold_b = (s.slots.loc[s.slots["gold_value"].notna(), cols] for s in (a, b))
    gold_a = gold_a.assign(key=dialogue_key(gold_a["dialogue_id"]))
    gold_b = gold_b.assign(key=dialogue_key(gold_b["dialogue_id"]))
    diff = gold_a.merge(gold_b, on=on, how="outer", indicator=True, suffixes=("_a", "_b"))
    diff = diff[diff["_merge"] != "both"]
    if len(diff):
        first = diff.sort_values(["key", "turn_index"]).iloc[0]
        first["dialogue_id"] = first["dialogue_id_b"] if first["_merge"] == "right_only" else first["dialogue_id_a"]
        raise InputError(
            path,
            fmt,
            f"not on the same gold as run {name_a!r}: gold states differ on {len(diff)} slot rows, e.g. "
            f"{first['domain']}-{first['slot']} = {first['gold_value']!r} (compare needs runs over the same gold)",
            dialogue_id=str(first["dialogue_id"]),
            turn=int(first["turn_index"]),
        )


@dataclass
class _Block:
    """One run's resampled sums for one metric and scope: per group, the point sums and the (B, groups)
    resampled sums of the numerator and denominator (GCA: of its four counts), and the run's per-turn rows
    (`stats`: what `stats.support` compares between two runs)."""

    labels: pd.DataFrame
    parts: list[np.ndarray]  # (groups, dialogues) each: [num, den] or GCA's four counts
    gca: bool
    stats: S._Stats
    sums: list[np.ndarray] = field(default_factory=list)  # (B, groups) each, filled by `_resample`

    def value(self, sums: list[np.ndarray]) -> np.ndarray:
        if self.gca:
            return np.asarray(M.gca_from_counts(*sums), dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            return sums[0] / sums[1]


def _block(scored: Scored, metric: str, keys: list[str], shared: pd.Index) -> _Block:
    stats = S._stats(scored, metric, keys, shared)
    gca = stats.counts is not None
    parts = list(stats.counts) if stats.counts is not None else [stats.num, stats.den]
    return _Block(stats.labels, parts, gca, stats)


def _resample(blocks: list[_Block], weights: np.ndarray) -> None:
    """Every block's resampled sums from one matrix product (all metrics, scopes and groups at once)."""
    stacked = np.concatenate([p for b in blocks for p in b.parts], axis=0)  # (all groups, dialogues)
    summed = weights @ stacked.T  # (B, all groups)
    at = 0
    for b in blocks:
        b.sums = []
        for p in b.parts:
            b.sums.append(summed[:, at : at + len(p)])
            at += len(p)


def _aligned_sums(
    block: _Block, labels: pd.DataFrame, keys: list[str], same: bool
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(point sums, resampled sums) on `labels`' groups (`same`: the block's own); a group the run
    lacks sums to 0."""
    points = [p.sum(axis=1) for p in block.parts]
    if same:
        return [x[None, :] for x in points], block.sums
    where = pd.MultiIndex.from_frame(labels[keys]).get_indexer(pd.MultiIndex.from_frame(block.labels[keys]))
    out_points, out_sums = [], []
    for point, resampled in zip(points, block.sums, strict=True):
        full_point = np.zeros((1, len(labels)))
        full_point[0, where] = point
        full = np.zeros((resampled.shape[0], len(labels)))
        full[:, where] = resampled
        out_points.append(full_point)
        out_sums.append(full)
    return out_points, out_sums


def _pair_rows(a: _Block, b: _Block, keys: list[str], level: float, n_dialogues: int) -> pd.DataFrame:
    """The numbers of `stats.paired_bootstrap` from two runs' blocks over the same dialogues."""
    same = not keys or a.labels.equals(b.labels)  # the usual case: both runs have the same groups
    labels = a.labels
    if not same:
        labels = (
            pd.concat([a.labels, b.labels], ignore_index=True)
            .drop_duplicates()
            .sort_values(keys)
            .reset_index(drop=True)
        )
    point_a, sums_a = _aligned_sums(a, labels, keys, same)
    point_b, sums_b = _aligned_sums(b, labels, keys, same)
    estimate_a, estimate_b = a.value(point_a)[0], b.value(point_b)[0]
    delta = b.value(sums_b) - a.value(sums_a)
    low, high = S._percentiles(delta, level)
    p_value, _ = S._sides(delta)
    counted = S.support(
        a.stats, b.stats, S._where(a.stats, labels, keys), S._where(b.stats, labels, keys), len(labels), n_dialogues
    )
    return labels.assign(
        estimate_a=estimate_a,
        estimate_b=estimate_b,
        delta=estimate_b - estimate_a,
        low=low,
        high=high,
        p_value=p_value,
        **counted,
    )


def compare(
    runs: Mapping[str, Scored] | Sequence[Scored],
    *,
    metrics: Sequence[str] | None = None,
    scopes: Sequence[str] = tuple(SCOPES),
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    alpha: float = ALPHA,
    mcnemar: bool = True,
    check_gold: bool = True,
    min_support: int = MIN_SUPPORT,
    shared_turns: bool = False,
) -> Comparison:
    """Compare every pair of `runs` (a mapping name -> scored run, or scored runs named by their run id).

    Every run must be scored under the same convention and hold the same gold (`check_same_gold`);
    otherwise an `InputError`. `metrics` default to `DEFAULT_METRICS` (`COMPARABLE`: every metric with a
    dialogue bootstrap); one that does not apply to all runs, or cannot be broken down by a scope, is
    listed in `skipped`.
    Each run's per-dialogue sums are computed once (not once per pair) and resampled in one matrix product.
    `shared_turns`: runs on one gold with turns missing are compared on the turns all of them hold
    (`analysis.shared_turns`); `Comparison.left_out` names what each run loses. `min_support`: a delta
    is tested only when the runs differ in at least that many dialogues of its group (`MIN_SUPPORT`).
    """
    named = dict(runs) if isinstance(runs, Mapping) else {s.metas[0].run_id: s for s in runs}
    _check_options(len(named), n_resamples, level, scopes)
    left_out: dict[str, str] = {}
    if shared_turns:  # runs on one gold with turns missing: each restricted to the turns all of them hold
        named, left_out = on_shared_turns(named)
    names = list(named)
    first = named[names[0]]
    _check_runs(named, check_gold=check_gold)
    wanted, skipped = _applicable(named, DEFAULT_METRICS if metrics is None else metrics)
    shared = S._dialogues(first)  # same gold: every run holds exactly these dialogues
    weights = S.resample_counts(len(shared), n_resamples=n_resamples, seed=seed)
    frames = _pairs(named, wanted, scopes, shared, weights, level, skipped)
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    deltas = _finish(frame, n_resamples, alpha, min_support)
    # McNemar pairs every two runs' turns (~35 ms a pair): a view that shows no McNemar skips it.
    mc = _mcnemar(named, names, alpha) if mcnemar else pd.DataFrame(columns=MCNEMAR_COLUMNS)
    return Comparison(
        names,
        first.convention.name,
        deltas,
        mc,
        n_resamples,
        level,
        seed,
        alpha,
        skipped,
        min_support=min_support,
        n_dialogues=len(shared),
        left_out=left_out,
    )


def _check_options(n_runs: int, n_resamples: int, level: float, scopes: Sequence[str]) -> None:
    if n_runs < 2:
        raise ValueError(f"compare needs at least two runs, got {n_runs}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples has to be a positive number of resamples, got {n_resamples}")
    if not 0 < level < 1:
        raise ValueError(f"level has to be strictly between 0 and 1, got {level}")
    unknown = [s for s in scopes if s not in SCOPES]
    if unknown:
        raise ValueError(f"scopes have to be among {', '.join(SCOPES)}, got {unknown}")


def _check_runs(named: Mapping[str, Scored], *, check_gold: bool) -> None:
    """An `InputError` for a run scored under another convention than the first, or (`check_gold`) on
    another gold."""
    names = list(named)
    first = named[names[0]]
    for name in names[1:]:
        other = named[name]
        if other.convention.name != first.convention.name:
            path, fmt = _source(other)
            raise InputError(
                path,
                fmt,
                f"scored under convention {other.convention.name!r} but run {names[0]!r} under "
                f"{first.convention.name!r}: compare runs under one convention (--convention)",
            )
        if check_gold:  # False only where the runs were already grouped by gold (views.gold_groups)
            check_same_gold(first, other)


def _applicable(named: Mapping[str, Scored], metrics: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """(the metrics that apply to every run, in the order asked; why each other one is skipped)."""
    skipped: dict[str, str] = {}
    wanted = list(metrics)
    for metric in wanted:
        if metric not in COMPARABLE:
            raise ValueError(f"metric has to be one of {', '.join(COMPARABLE)}, got {metric!r}")
    for name, scored in named.items():
        for metric, reason in R.not_applicable(scored, tuple(wanted)).items():
            skipped.setdefault(metric, f"does not apply to {name}: {reason}")
    return [m for m in wanted if m not in skipped], skipped


def _pairs(
    named: Mapping[str, Scored],
    wanted: Sequence[str],
    scopes: Sequence[str],
    shared: pd.Index,
    weights: np.ndarray,
    level: float,
    skipped: dict[str, str],
) -> list[pd.DataFrame]:
    """The rows of every pair, metric and scope over the `shared` dialogues (each run's sums computed once,
    all resampled in one matrix product); a metric a scope cannot break down is added to `skipped`."""
    blocks: dict[tuple[str, str, str], _Block] = {}
    for name, scored in named.items():
        for metric in wanted:
            for scope in scopes:
                try:
                    blocks[name, metric, scope] = _block(scored, metric, SCOPES[scope], shared)
                except ValueError as exc:  # e.g. TRADE's slot accuracy is a whole-turn formula
                    skipped.setdefault(f"{metric} per {scope}", " ".join(str(exc).split()))
    if blocks:
        _resample(list(blocks.values()), weights)
    frames = []
    for a, b in itertools.combinations(named, 2):
        for metric in wanted:
            for scope in scopes:
                if (a, metric, scope) in blocks and (b, metric, scope) in blocks:
                    rows = _pair_rows(
                        blocks[a, metric, scope], blocks[b, metric, scope], SCOPES[scope], level, len(shared)
                    )
                    frames.append(rows.assign(a=a, b=b, metric=metric, scope=scope))
    return frames


def support_text(n_dialogues_differ: int, n_turns_differ: int, n_dialogues: int) -> str:
    """The support of one delta, in words.

    >>> support_text(2, 10, 3)
    'differ in 2 of 3 dialogues (10 turns)'
    >>> support_text(1, 1, 1)
    'differ in 1 of 1 dialogue (1 turn)'
    """
    dialogues = "dialogue" if n_dialogues == 1 else "dialogues"
    turns = "turn" if n_turns_differ == 1 else "turns"
    return f"differ in {n_dialogues_differ:,} of {n_dialogues:,} {dialogues} ({n_turns_differ:,} {turns})"


def _gate(frame: pd.DataFrame, min_support: int) -> pd.Series:
    """Which rows are tested: the runs differ in `min_support` dialogues or more and the interval has width;
    the others lose their interval and p-value (kept: the delta and the counts)."""
    width = frame["high"] - frame["low"]
    tested = (frame["n_dialogues_differ"] >= min_support) & (width > S._TIE) & frame["p_value"].notna()
    frame.loc[~tested, ["low", "high", "p_value"]] = np.nan
    return tested


def _finish(frame: pd.DataFrame, n_resamples: int, alpha: float, min_support: int = MIN_SUPPORT) -> pd.DataFrame:
    """Labels, group names, Holm within each family, texts; columns in `COLUMNS` order."""
    if not len(frame):
        return pd.DataFrame(columns=COLUMNS)
    for column in ("domain", "slot"):
        if column not in frame:
            frame[column] = pd.NA
    frame["domain"] = frame["domain"].astype(object)
    frame["slot"] = frame["slot"].astype(object)
    frame["label"] = frame["metric"].map(R.LABELS)
    group = np.where(
        frame["scope"] == "slot",
        frame["domain"].astype(str) + "-" + frame["slot"].astype(str),
        np.where(frame["scope"] == "domain", frame["domain"].astype(str), ""),
    )
    frame["group"] = group
    frame["tested"] = _gate(frame, min_support)
    frame["support_text"] = [
        support_text(k, t, n)
        for k, t, n in zip(frame["n_dialogues_differ"], frame["n_turns_differ"], frame["n_dialogues"], strict=True)
    ]
    floor = 1 / n_resamples
    frame["p_text"] = [
        S.format_p(p, n_resamples=n_resamples)
        if tested
        else (f"not tested: fewer than {min_support} dialogues differ" if k < min_support else "not tested: no spread")
        for p, tested, k in zip(frame["p_value"], frame["tested"], frame["n_dialogues_differ"], strict=True)
    ]
    effective = np.where(frame["p_value"].notna(), np.maximum(frame["p_value"], floor), np.nan)
    overall = frame["scope"] == "overall"
    family = np.where(
        overall,
        "overall|" + frame["metric"],
        frame["scope"] + "|" + frame["a"] + "|" + frame["b"] + "|" + frame["metric"],
    )
    p_holm = np.full(len(frame), np.nan)
    size = np.zeros(len(frame), dtype="int64")
    for _, where in pd.Series(range(len(frame))).groupby(family, sort=False):
        idx = where.to_numpy()
        p_holm[idx] = holm(effective[idx])
        size[idx] = int(np.isfinite(effective[idx]).sum())
    frame["p_holm"] = p_holm
    frame["family_size"] = size
    frame["significant"] = frame["p_holm"] <= alpha
    bound = frame["p_value"] == 0
    frame["p_holm_text"] = [
        "Holm p n/a" if math.isnan(p) else (f"Holm p <= {p:.3g}" if b else f"Holm p = {p:.3g}")
        for p, b in zip(frame["p_holm"], bound, strict=True)
    ]
    return frame.reindex(columns=COLUMNS).reset_index(drop=True)


MCNEMAR_COLUMNS = [
    "a",
    "b",
    "b01",
    "b10",
    "both_correct",
    "both_wrong",
    "n_paired_turns",
    "p_value",
    "p_text",
    "p_holm",
    "family_size",
    "significant",
]


def _mcnemar(named: Mapping[str, Scored], names: list[str], alpha: float) -> pd.DataFrame:
    rows = []
    for a, b in itertools.combinations(names, 2):
        result = S.mcnemar(named[a], named[b])
        rows.append(
            {
                "a": a,
                "b": b,
                **{k: result[k] for k in ("b01", "b10", "both_correct", "both_wrong", "n_paired_turns")},
                "p_value": result["p_value"],
                "p_text": result["p_text"],
            }
        )
    frame = pd.DataFrame(rows, columns=MCNEMAR_COLUMNS[:9])
    frame["p_holm"] = holm(frame["p_value"].to_numpy())
    frame["family_size"] = len(frame)
    frame["significant"] = frame["p_holm"] <= alpha
    return frame


def by_evidence(rows: pd.DataFrame) -> pd.DataFrame:
    """The significant rows ranked by evidence, one per group. Evidence is the delta in units of its
    bootstrap standard error (read from the interval: `|delta| / ((high - low) / (2 z))`, z the normal
    quantile of the level); the bootstrap p cannot rank them, as many sit at its 1/B floor. A group
    significant in several metrics is listed once, under its strongest; `also` counts its other
    significant metrics, and `evidence` is the ratio.

    >>> rows = pd.DataFrame({"group": ["taxi", "taxi", "hotel"], "metric": ["jga", "rsa", "jga"],
    ...     "significant": [True, True, True], "p_holm": [0.005, 0.005, 0.01], "delta": [0.18, 0.17, 0.35],
    ...     "low": [0.10, 0.14, 0.30], "high": [0.25, 0.20, 0.40]})
    >>> by_evidence(rows)[["group", "metric", "also"]].to_dict("records")
    [{'group': 'hotel', 'metric': 'jga', 'also': 0}, {'group': 'taxi', 'metric': 'rsa', 'also': 1}]
    """
    hits = rows[rows["significant"].astype(bool)]
    with np.errstate(divide="ignore", invalid="ignore"):
        evidence = hits["delta"].abs() / ((hits["high"] - hits["low"]) / (2 * _Z95))
    ranked = hits.assign(evidence=evidence).sort_values(["evidence", "p_holm"], ascending=[False, True], kind="stable")
    also = ranked.groupby("group", sort=False)["metric"].transform("size") - 1
    return ranked.assign(also=also.astype("int64")).drop_duplicates("group")


_Z95 = 1.959964  # the normal quantile of a 95% interval; only ranks, so the level's own z is not needed


def text_report(result: Comparison, *, top_groups: int = 10) -> str:
    """The CLI's readable report: per pair, the overall deltas with their support, McNemar, then the
    per-domain and per-slot deltas with the strongest evidence (one line per group), and the count of
    groups too thin to test."""
    lines = [
        f"{len(result.runs)} runs, convention {result.convention}; delta = b - a, "
        f"{result.level:.0%} paired cluster-bootstrap interval over {result.n_dialogues} "
        f"dialogues, B = {result.n_resamples:,}",
        result.holm_note,
        SUPPORT_NOTE.format(min_support=result.min_support),
    ]
    for name, what in result.left_out.items():
        lines.append(f"left out of {name}: {what}")
    width = max((len(v) for v in R.LABELS.values()), default=10)
    for a, b in result.pairs:
        lines += ["", f"== {b} - {a}"]
        here = result.deltas[(result.deltas["a"] == a) & (result.deltas["b"] == b)]
        overall = here[here["scope"] == "overall"]
        lines.append(f"  {'metric':<{width}}  {'a':>7}  {'b':>7}  {'delta':>8}  {'interval':<19}  p / Holm p; support")
        for r in overall.itertuples():
            mark = " *" if r.significant else ""
            interval = f"[{r.low:+.4f}, {r.high:+.4f}]" if r.tested else f"{'(no interval)':<19}"
            tests = f"{r.p_text}; {r.p_holm_text}{mark}" if r.tested else r.p_text
            lines.append(
                f"  {r.label:<{width}}  {r.estimate_a:7.4f}  {r.estimate_b:7.4f}  {r.delta:+8.4f}  "
                f"{interval}  {tests}; {r.support_text}"
            )
        mc = result.mcnemar[(result.mcnemar["a"] == a) & (result.mcnemar["b"] == b)].iloc[0]
        lines.append(
            f"  McNemar (turn JGA): only a correct {mc['b10']}, only b correct {mc['b01']} of "
            f"{mc['n_paired_turns']} turns; {mc['p_text']}; Holm p = {mc['p_holm']:.3g}"
            + (" *" if mc["significant"] else "")
        )
        for scope in ("domain", "slot"):
            rows = here[here["scope"] == scope]
            thin = rows[~rows["tested"].astype(bool)]
            untested = (
                f" ({thin['group'].nunique()} {scope}s not tested in some metric: their runs differ in fewer "
                f"than {result.min_support} dialogues)"
                if len(thin)
                else ""
            )
            groups = by_evidence(rows).head(top_groups)
            if not len(groups):
                lines.append(f"  per {scope}: no significant delta{untested}")
                continue
            lines.append(f"  per {scope}: {len(groups)} strongest significant deltas, one per {scope}{untested}")
            for r in groups.itertuples():
                also = f"; significant in {r.also} more metric(s)" if r.also else ""
                lines.append(
                    f"    {r.group} {r.label}: {r.delta:+.4f} [{r.low:+.4f}, {r.high:+.4f}] {r.p_holm_text}; "
                    f"{r.support_text}{also}"
                )
    for what, reason in result.skipped.items():
        lines.append(f"not compared: {what}: {reason}")
    lines.append("* significant after Holm's correction")
    return "\n".join(lines)
