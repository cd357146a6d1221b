"""FewJoint systems compared over seeds and query sentences together: a hierarchical paired bootstrap
(``compare_fewjoint``), what the FewJoint page, ``fewjoint --compare`` and the report show.

A system's number is the mean over its seeds of each seed's metric pooled over the query sentences (micro:
intent accuracy and sentence accuracy are shares of sentences, slot F1 is conlleval's corpus-level F1
``2 * correct / (gold + predicted)`` from the summed chunk counts, never a mean of per-sentence F1s). Each
resample draws, for every system, its seeds with replacement (as many as it has), and then the sentences
with replacement: one draw shared by every seed of every system, since every system faces the same test
sentences (the pairing of ``analysis.compare``). A resampled seed recomputes its metric from its counts on
the drawn sentences; a resampled system is the mean over its drawn seeds. The delta ``b - a``, its
percentile interval and the two-sided p are read as in ``analysis.seed_compare``, Holm-corrected over
every pair and metric. Everything is one matrix product per seed: (resamples, sentences) @ (sentences,).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analysis import stats as S
from analysis.compare import ALPHA, holm
from analysis.fewjoint.episodes import KEY
from analysis.fewjoint.scoring import METRICS, FewJointResult
from analysis.seed_compare import seed_counts

METHOD = (
    "hierarchical paired bootstrap: per resample, each system's seeds drawn with replacement, then the query "
    "sentences (one draw shared by every seed of every system); a seed's metric is recomputed from its counts "
    "on the drawn sentences (slot F1 from the summed chunk counts), a system's value is the mean over its "
    "drawn seeds"
)
COLUMNS = [
    "a",
    "b",
    "metric",
    "estimate_a",
    "estimate_b",
    "delta",
    "low",
    "high",
    "p_value",
    "p_holm",
    "significant",
    "n_seeds_a",
    "n_seeds_b",
    "n_sentences",
    "n_sentences_differ",
]


@dataclass(frozen=True)
class FewJointComparison:
    """The result of ``compare_fewjoint``: one row per pair of systems and metric (``COLUMNS``)."""

    systems: dict[str, list[str]]  # system -> its seeds
    deltas: pd.DataFrame
    n_resamples: int
    level: float
    seed: int
    alpha: float
    n_sentences: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN becomes null)."""
        records = self.deltas.astype(object).where(self.deltas.notna(), None).to_dict("records")
        return {
            "systems": self.systems,
            "direction": "delta = b - a (system means over seeds, pooled over query sentences)",
            "method": METHOD,
            "n_resamples": self.n_resamples,
            "level": self.level,
            "seed": self.seed,
            "alpha": self.alpha,
            "n_sentences": self.n_sentences,
            "deltas": [{k: v.item() if isinstance(v, np.generic) else v for k, v in r.items()} for r in records],
        }


def sentence_parts(result: FewJointResult, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """(numerator, denominator), each (seeds, sentences) in the order of ``KEY``: the per-sentence counts
    whose sums over sentences give the metric as their ratio."""
    queries = result.queries.sort_values(["seed", *KEY], kind="stable")
    shape = (len(result.seeds), len(queries) // max(len(result.seeds), 1))
    if metric == "slot_f1":
        num = 2 * queries["n_correct_chunks"].to_numpy(dtype=float)
        den = (queries["n_gold_chunks"] + queries["n_pred_chunks"]).to_numpy(dtype=float)
    elif metric in ("intent_accuracy", "sentence_accuracy"):
        num = queries[metric.replace("accuracy", "correct")].to_numpy(dtype=float)
        den = np.ones(len(queries))
    else:
        raise ValueError(f"metric has to be one of {', '.join(METRICS)}, got {metric!r}")
    return num.reshape(shape), den.reshape(shape)


def _gold_key(result: FewJointResult) -> pd.DataFrame:
    first = result.queries[result.queries["seed"] == result.seeds[0]]
    gold = first[[*KEY, "gold_intent"]].assign(gold_tags=first["gold_tags"].map(" ".join))
    return gold.sort_values(KEY, kind="stable").reset_index(drop=True).astype("str")


def same_gold(results: Mapping[str, FewJointResult]) -> list[list[str]]:
    """The systems grouped by their gold (the same query sentences, intents and tags), in the order given."""
    groups: list[tuple[pd.DataFrame, list[str]]] = []
    for name, result in results.items():
        gold = _gold_key(result)
        match = next((names for key, names in groups if key.shape == gold.shape and key.equals(gold)), None)
        if match is None:
            groups.append((gold, [name]))
        else:
            match.append(name)
    return [names for _, names in groups]


def _system_values(
    num: np.ndarray, den: np.ndarray, weights: np.ndarray, drawn: np.ndarray
) -> tuple[float, np.ndarray]:
    """(the seed mean of the metric, its value in each resample: the mean over the drawn seeds)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        point = float(np.mean(num.sum(axis=1) / den.sum(axis=1)))
        per_seed = (weights @ num.T) / (weights @ den.T)  # (resamples, seeds)
    total = np.where(drawn > 0, drawn * per_seed, 0.0).sum(axis=1)
    return point, total / num.shape[0]


def compare_fewjoint(
    results: Mapping[str, FewJointResult],
    *,
    metrics: tuple[str, ...] = METRICS,
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    alpha: float = ALPHA,
) -> FewJointComparison:
    """Every pair of FewJoint systems (in the order given) compared as ``b - a`` of their seed means with the
    hierarchical bootstrap of the module docstring. The systems have to be scored on the same gold
    (``same_gold``); a system of one seed is resampled over sentences only."""
    if len(results) < 2:
        raise ValueError(f"compare_fewjoint needs at least two systems, got {len(results)}")
    if len(same_gold(results)) > 1:
        raise ValueError("the systems are not scored on the same gold: compare the systems of one gold at a time")
    names = list(results)
    n_sentences = len(_gold_key(results[names[0]]))
    weights = S.resample_counts(n_sentences, n_resamples=n_resamples, seed=seed)
    drawn = {
        name: seed_counts(len(results[name].seeds), n_resamples=n_resamples, seed=seed + 1 + i)
        for i, name in enumerate(names)
    }
    rows = []
    for metric in metrics:
        parts = {name: sentence_parts(results[name], metric) for name in names}
        values = {name: _system_values(*parts[name], weights, drawn[name]) for name in names}
        for a, b in itertools.combinations(names, 2):
            delta = values[b][1] - values[a][1]
            low, high = S._percentiles(delta[:, None], level)
            p_value, _ = S._sides(delta[:, None])
            ratio_a = parts[a][0].mean(axis=0), parts[a][1].mean(axis=0)
            ratio_b = parts[b][0].mean(axis=0), parts[b][1].mean(axis=0)
            differ = (ratio_a[0] != ratio_b[0]) | (ratio_a[1] != ratio_b[1])
            rows.append(
                {
                    "a": a,
                    "b": b,
                    "metric": metric,
                    "estimate_a": values[a][0],
                    "estimate_b": values[b][0],
                    "delta": values[b][0] - values[a][0],
                    "low": float(low[0]),
                    "high": float(high[0]),
                    "p_value": float(p_value[0]),
                    "n_seeds_a": len(results[a].seeds),
                    "n_seeds_b": len(results[b].seeds),
                    "n_sentences": n_sentences,
                    "n_sentences_differ": int(differ.sum()),
                }
            )
    deltas = pd.DataFrame(rows)
    deltas["p_holm"] = holm(deltas["p_value"].to_numpy())
    deltas["significant"] = deltas["p_holm"] <= alpha
    systems = {name: [str(s) for s in results[name].seeds] for name in names}
    return FewJointComparison(systems, deltas[COLUMNS], n_resamples, level, seed, alpha, n_sentences)


def text_report(result: FewJointComparison) -> str:
    """The CLI's lines: per pair of systems and metric, the seed means, the delta, its interval and p."""
    lines = [
        f"{len(result.systems)} FewJoint systems over their seeds and {result.n_sentences:,} query sentences; "
        f"delta = b - a of seed means; {result.level:.0%} {METHOD}; B = {result.n_resamples:,}; Holm over "
        f"every pair and metric, alpha {result.alpha}",
    ]
    for system, seeds in result.systems.items():
        lines.append(f"  {system}: {len(seeds)} seed(s): {', '.join(seeds)}")
    for a, b in itertools.combinations(result.systems, 2):
        lines += ["", f"== {b} - {a} (over seeds and sentences)"]
        here = result.deltas[(result.deltas["a"] == a) & (result.deltas["b"] == b)]
        for r in here.itertuples():
            mark = " *" if r.significant else ""
            lines.append(
                f"  {r.metric}: {r.estimate_a:.4f} -> {r.estimate_b:.4f}, {r.delta:+.4f} [{r.low:+.4f}, "
                f"{r.high:+.4f}] p {_p(r.p_value, result.n_resamples)}; Holm p {_p(r.p_holm, result.n_resamples)}{mark}; {r.n_sentences_differ:,} of "
                f"{r.n_sentences:,} sentences differ"
            )
    return "\n".join(lines)


def _p(p: float, n_resamples: int) -> str:
    """The p of a table cell: `format_p` without its leading "p" and the resample count (the caption's)."""
    return S.format_p(p, n_resamples=n_resamples).removeprefix("p ").split(" (B = ")[0]


def comparison_table(result: FewJointComparison) -> pd.DataFrame:
    """One row per pair of systems and metric, with human labels: the seed means, `Δ` (b − a) with its
    interval (`Δ low`, `Δ high`), p, Holm p, the sentences where the systems differ and a mark (`*`: Holm p
    <= alpha, `n.s.` otherwise); `attrs["note"]` says how (for a caption). What the FewJoint page and the
    report show."""
    from analysis.fewjoint.views import METRIC_LABELS

    rows = result.deltas
    n = result.n_resamples
    table = pd.DataFrame(
        {
            "systems (b − a)": rows["b"] + " − " + rows["a"],
            "seeds (a, b)": rows["n_seeds_a"].astype(str) + ", " + rows["n_seeds_b"].astype(str),
            "metric": rows["metric"].map(METRIC_LABELS),
            "a": rows["estimate_a"].astype(float),
            "b": rows["estimate_b"].astype(float),
            "Δ": rows["delta"].astype(float),
            "Δ low": rows["low"].astype(float),
            "Δ high": rows["high"].astype(float),
            "p": [_p(p, n) for p in rows["p_value"]],
            "Holm p": [_p(p, n) for p in rows["p_holm"]],
            "sentences differ": [
                f"{k:,} of {t:,}" for k, t in zip(rows["n_sentences_differ"], rows["n_sentences"], strict=True)
            ],
            "sig.": np.where(rows["significant"], "*", "n.s."),
        }
    ).reset_index(drop=True)
    table.attrs["note"] = (
        f"{METHOD}; pooled over the query sentences (micro), whatever the leaderboard's averaging; Holm-corrected "
        f"over every pair and metric; a system of one seed is resampled over sentences only."
    )
    return table
