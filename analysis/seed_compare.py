"""Systems with several seeds compared over seeds and dialogues together: a hierarchical paired bootstrap.

A system's number is the mean of its seeds' numbers. Comparing two systems by their means ± std leaves out
the test set's own sampling error, and a paired bootstrap of one seed against one seed leaves out the seeds'.
Here each resample draws, for every system, its seeds with replacement (as many as it has), and then the
dialogues with replacement (`stats.resample_counts`, the same draw for every seed of both systems: the test
set is one sample that every run faces, so the pairing of `analysis.compare` is kept); a resampled system
value is the mean over its drawn seeds of each seed's metric on the drawn dialogues. The delta `b - a`, its
percentile interval and the two-sided p are read as in `analysis.compare`, with its support rule and its Holm
families. With one seed a system, the numbers are exactly `analysis.compare`'s (tested).

Everything is a few matrix products: per run, the (groups, dialogues) sums of `stats._stats`; per resample,
one row of dialogue counts and one row of seed counts.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from analysis import compare as C
from analysis import metrics as M
from analysis import stats as S
from analysis.errors import InputError
from analysis.scoring import Scored

METHOD = (
    "hierarchical paired bootstrap: per resample, each system's seeds drawn with replacement, then the dialogues "
    "(one draw shared by every run); a system's value is the mean over its drawn seeds"
)
SEED_COLUMNS = [*C.COLUMNS, "n_seeds_a", "n_seeds_b"]


@dataclass
class SeedComparison:
    """The result of `compare_seeds`: one row per pair of systems, metric, scope and group (`SEED_COLUMNS`)."""

    systems: dict[str, list[str]]  # system -> its runs (seeds), in the order given
    deltas: pd.DataFrame
    n_resamples: int
    level: float
    seed: int
    alpha: float
    min_support: int
    n_dialogues: int
    left_out: dict[str, str] = field(default_factory=dict)

    @property
    def pairs(self) -> list[tuple[str, str]]:
        return list(itertools.combinations(self.systems, 2))

    def to_dict(self) -> dict[str, Any]:
        records = self.deltas.astype(object).where(self.deltas.notna(), None).to_dict("records")
        return {
            "systems": self.systems,
            "direction": "delta = b - a (system means over seeds)",
            "method": METHOD,
            "n_resamples": self.n_resamples,
            "level": self.level,
            "seed": self.seed,
            "alpha": self.alpha,
            "min_support": self.min_support,
            "n_dialogues": self.n_dialogues,
            "left_out": self.left_out,
            "deltas": [{str(k): C._plain(v) for k, v in r.items()} for r in records],
        }


def seed_counts(n_seeds: int, *, n_resamples: int, seed: int) -> np.ndarray:
    """(n_resamples, n_seeds) counts: how often each seed is drawn in each resample (rows sum to n_seeds).
    One seed is always drawn once, so a one-seed system is resampled over dialogues only.

    >>> seed_counts(1, n_resamples=3, seed=0).tolist()
    [[1.0], [1.0], [1.0]]
    >>> seed_counts(5, n_resamples=4, seed=0).sum(axis=1).tolist()
    [5.0, 5.0, 5.0, 5.0]
    """
    if n_seeds == 1:
        return np.ones((n_resamples, 1))
    rng = np.random.default_rng([seed, n_seeds])
    drawn = rng.integers(0, n_seeds, size=(n_resamples, n_seeds)) + (np.arange(n_resamples) * n_seeds)[:, None]
    return np.bincount(drawn.ravel(), minlength=n_resamples * n_seeds).reshape(n_resamples, n_seeds).astype(float)


def _value(parts: list[np.ndarray], gca: bool) -> np.ndarray:
    if gca:
        return np.asarray(M.gca_from_counts(*parts), dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return parts[0] / parts[1]


def _parts(stats: S._Stats) -> list[np.ndarray]:
    return list(stats.counts) if stats.counts is not None else [stats.num, stats.den]


def _system_rows(runs: list[S._Stats], labels: pd.DataFrame, keys: list[str]) -> S._Stats:
    """The per-turn rows of a system's seeds as one `_Stats` on `labels`' groups, each seed weighted
    1 / n_seeds: summed per turn, they are the seed mean (what `stats.support` compares)."""
    weight = 1 / len(runs)
    group = np.concatenate([S._where(r, labels, keys)[r.row_group] for r in runs])
    dialogue = np.concatenate([r.row_dialogue for r in runs])
    turn = np.concatenate([r.row_turn for r in runs])
    n_parts = len(runs[0].row_parts)
    parts = tuple(np.concatenate([r.row_parts[i] * weight for r in runs]) for i in range(n_parts))
    empty = np.zeros((len(labels), 0))
    return S._Stats(labels, empty, empty, empty, None, group, dialogue, turn, parts)


def _pair(
    a: list[S._Stats],
    b: list[S._Stats],
    keys: list[str],
    weights: np.ndarray,
    counts_a: np.ndarray,
    counts_b: np.ndarray,
    level: float,
) -> pd.DataFrame:
    frames = [s.labels for s in (*a, *b)]
    labels = frames[0]
    if keys:
        labels = pd.concat(frames, ignore_index=True).drop_duplicates().sort_values(keys).reset_index(drop=True)
    gca = a[0].counts is not None
    estimates, resampled = [], []
    for runs, counts in ((a, counts_a), (b, counts_b)):
        aligned = [S._aligned(s, labels, keys) for s in runs]
        points = np.stack([_value([p.sum(axis=1) for p in _parts(s)], gca) for s in aligned])  # (seeds, groups)
        estimates.append(points.mean(axis=0))
        total = np.zeros((weights.shape[0], len(labels)))
        for i, s in enumerate(aligned):
            value = _value([weights @ p.T for p in _parts(s)], gca)  # (B, groups)
            drawn = counts[:, i : i + 1]
            total += np.where(drawn > 0, drawn * value, 0.0)
        resampled.append(total / len(runs))
    delta = resampled[1] - resampled[0]
    low, high = S._percentiles(delta, level)
    valid = (~np.isnan(delta)).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        at_most = (delta <= S._TIE).sum(axis=0) / valid
        at_least = (delta >= -S._TIE).sum(axis=0) / valid
    identity = np.arange(len(labels))
    counted = S.support(
        _system_rows(a, labels, keys),
        _system_rows(b, labels, keys),
        identity,
        identity,
        len(labels),
        weights.shape[1],
    )
    return labels.assign(
        estimate_a=estimates[0],
        estimate_b=estimates[1],
        delta=estimates[1] - estimates[0],
        low=low,
        high=high,
        p_value=np.minimum(1.0, 2 * np.minimum(at_most, at_least)),
        **counted,
    )


def compare_seeds(
    systems: Mapping[str, Sequence[Scored]],
    *,
    metrics: Sequence[str] = ("jga",),
    scopes: Sequence[str] = ("overall",),
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    alpha: float = C.ALPHA,
    min_support: int = C.MIN_SUPPORT,
    shared_turns: bool = False,
) -> SeedComparison:
    """Every pair of systems (each a list of scored runs, one per seed, all on the same gold and under one
    convention) compared as `b - a` of their seed means with the hierarchical bootstrap (module docstring).
    Systems need not have as many seeds as each other; a system of one seed is resampled over dialogues
    only. Bad input as in `analysis.compare.compare` (an `InputError`)."""
    names = {system: list(runs) for system, runs in systems.items()}
    if len(names) < 2:
        raise ValueError(f"compare_seeds needs at least two systems, got {len(names)}")
    if any(not runs for runs in names.values()):
        raise ValueError("every system needs at least one run")
    flat = {f"{system}#{i}": run for system, runs in names.items() for i, run in enumerate(runs)}
    left_out: dict[str, str] = {}
    if shared_turns:
        from analysis.shared_turns import on_shared_turns

        flat, left_out = on_shared_turns(flat)
    keys_all = list(flat)
    first = flat[keys_all[0]]
    for key in keys_all[1:]:
        other = flat[key]
        if other.convention.name != first.convention.name:
            path, fmt = C._source(other)
            raise InputError(path, fmt, f"scored under {other.convention.name!r}, not {first.convention.name!r}")
        C.check_same_gold(first, other)
    for metric in metrics:
        if metric not in C.COMPARABLE:
            raise ValueError(f"metric has to be one of {', '.join(C.COMPARABLE)}, got {metric!r}")
    shared = S._dialogues(first)
    weights = S.resample_counts(len(shared), n_resamples=n_resamples, seed=seed)
    counts = {
        system: seed_counts(len(runs), n_resamples=n_resamples, seed=seed + 1 + i)
        for i, (system, runs) in enumerate(names.items())
    }
    runs_of = {system: [flat[f"{system}#{i}"] for i in range(len(runs))] for system, runs in names.items()}
    stats: dict[tuple[str, str, str], list[S._Stats]] = {}
    frames = []
    for metric in metrics:
        for scope in scopes:
            keys = C.SCOPES[scope]
            for system, runs in runs_of.items():
                stats[system, metric, scope] = [S._stats(r, metric, keys, shared) for r in runs]
            for a, b in itertools.combinations(names, 2):
                rows = _pair(
                    stats[a, metric, scope], stats[b, metric, scope], keys, weights, counts[a], counts[b], level
                )
                frames.append(rows.assign(a=a, b=b, metric=metric, scope=scope))
    deltas = C._finish(pd.concat(frames, ignore_index=True), n_resamples, alpha, min_support)
    deltas["n_seeds_a"] = deltas["a"].map({s: len(r) for s, r in names.items()})
    deltas["n_seeds_b"] = deltas["b"].map({s: len(r) for s, r in names.items()})
    run_names = {s: [r.metas[0].run_id for r in runs] for s, runs in names.items()}
    return SeedComparison(run_names, deltas, n_resamples, level, seed, alpha, min_support, len(shared), left_out)


def text_report(result: SeedComparison) -> str:
    """The CLI's lines for a seed comparison: per pair of systems, the overall deltas with their support."""
    lines = [
        f"{len(result.systems)} systems over their seeds; delta = b - a of seed means; {result.level:.0%} "
        f"{METHOD}; {result.n_dialogues} dialogues, B = {result.n_resamples:,}",
    ]
    for system, runs in result.systems.items():
        lines.append(f"  {system}: {len(runs)} seed(s): {', '.join(runs)}")
    for a, b in result.pairs:
        lines += ["", f"== {b} - {a} (over seeds)"]
        here = result.deltas[(result.deltas["a"] == a) & (result.deltas["b"] == b)]
        for r in here.itertuples():
            group = f" {r.group}" if r.group else ""
            mark = " *" if r.significant else ""
            interval = f"[{r.low:+.4f}, {r.high:+.4f}] {r.p_text}; {r.p_holm_text}{mark}" if r.tested else r.p_text
            lines.append(
                f"  {r.label}{group}: {r.estimate_a:.4f} -> {r.estimate_b:.4f}, {r.delta:+.4f} {interval}; "
                f"{r.support_text}"
            )
    return "\n".join(lines)
