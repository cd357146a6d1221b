"""FewJoint scoring: an aligned system -> tidy frames of every metric (``score_fewjoint``), and the
leaderboard of several results.

Averaging (recorded in every result): ``"episode"`` is the reference implementation's -- intent
accuracy and slot F1 per episode, then the mean over episodes; sentence accuracy pooled over queries.
``"micro"`` pools every metric over all queries. Over seeds: mean and *sample* standard deviation
(``ddof=1``; NaN for a single seed) plus each seed's value. Empty slices give NaN, never 0; slot F1 is
NaN only when a slice has neither gold nor predicted chunks. Slot chunks follow conlleval
(``analysis.fewjoint.chunks``); ill-formed BIO tags are scored leniently and counted per query and seed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from analysis.fewjoint.align import ALIGNMENT_CONSEQUENCES, FewJointSystem
from analysis.fewjoint.chunks import _chunks_frame, _ill_formed_per_sentence
from analysis.fewjoint.episodes import KEY

AVERAGINGS: tuple[str, ...] = ("episode", "micro")
MIN_SEEDS = 5
METRICS: tuple[str, ...] = ("intent_accuracy", "slot_f1", "sentence_accuracy")
# Closed vocabulary of the queries table's `error_kind` column.
ERROR_KINDS: tuple[str, ...] = ("correct", "intent", "slots", "intent+slots", "missing", "token_count")


@dataclass(frozen=True)
class FewJointResult:
    """All FewJoint metrics for one system, as tidy frames (see ``score_fewjoint``)."""

    system: str
    shots: int | None
    averaging: str
    seeds: tuple[str, ...]
    n_queries: int
    queries: pd.DataFrame
    per_seed: pd.DataFrame
    summary: pd.DataFrame
    per_domain: pd.DataFrame
    per_intent: pd.DataFrame
    per_slot_type: pd.DataFrame
    confusion: pd.DataFrame
    alignment: pd.DataFrame
    ill_formed_bio: pd.DataFrame
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (what ``python -m analysis fewjoint --json`` prints); NaN becomes null."""
        out: dict[str, Any] = {
            "system": self.system,
            "shots": self.shots,
            "n_queries": self.n_queries,
            "n_seeds": len(self.seeds),
            "averaging": self.averaging,
            "std": "sample standard deviation over seeds (ddof=1)",
        }
        for metric in METRICS:
            row = self.summary.loc[self.summary["metric"] == metric].iloc[0]
            out[metric] = {
                "mean": _json_float(row["mean"]),
                "std": _json_float(row["std"]),
                "per_seed": {
                    str(s): _json_float(v) for s, v in zip(self.per_seed["seed"], self.per_seed[metric], strict=True)
                },
            }
        per_domain: dict[str, Any] = {}
        for domain, frame in self.per_domain.groupby("domain", sort=True):
            entry: dict[str, Any] = {"n_queries": int(frame["n_queries"].iloc[0])}
            for metric in METRICS:
                values = frame[metric].to_numpy(dtype=float)
                entry[metric] = {
                    "mean": _json_float(_nanmean(values)),
                    "std": _json_float(_sample_std(values)),
                    "per_seed": {str(s): _json_float(v) for s, v in zip(frame["seed"], values, strict=True)},
                }
            per_domain[str(domain)] = entry
        out["per_domain"] = per_domain
        out["warnings"] = list(self.warnings)
        out["ill_formed_bio"] = {
            str(r.seed): {"tags": int(r.n_ill_formed), "queries": int(r.n_ill_formed_queries)}
            for r in self.ill_formed_bio.itertuples()
        }
        counts = self.alignment.groupby(["seed", "kind"], observed=True).size()
        out["alignment"] = {
            "counts": {
                str(seed): {k: int(counts.get((seed, k), 0)) for k in ALIGNMENT_CONSEQUENCES} for seed in self.seeds
            },
            "records": [
                {
                    "seed": str(r.seed),
                    "domain": str(r.domain),
                    "episode": int(r.episode),
                    "query_index": int(r.query_index),
                    "kind": str(r.kind),
                    "detail": str(r.detail),
                }
                for r in self.alignment.itertuples()
            ],
        }
        return out


def _json_float(value: Any) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value


def _nanmean(values: np.ndarray) -> float:
    finite = values[~np.isnan(values)]
    return float(finite.mean()) if finite.size else float("nan")


def _sample_std(values: np.ndarray) -> float:
    finite = values[~np.isnan(values)]
    return float(finite.std(ddof=1)) if finite.size >= 2 else float("nan")


def _divide(num: Any, den: Any) -> Any:
    """num/den elementwise with NaN (not 0) where the denominator is 0."""
    num = np.asarray(num, dtype=float)
    den = np.asarray(den, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def slot_f1(n_correct: Any, n_gold: Any, n_pred: Any) -> Any:
    """Chunk F1 ``2*correct / (gold + pred)``; NaN only when there are neither gold nor predicted chunks.

    Equal to ``2PR/(P+R)`` whenever that is defined, and 0 when chunks exist but none is correct:

    >>> float(slot_f1(3, 4, 4)), float(slot_f1(0, 2, 0)), bool(np.isnan(slot_f1(0, 0, 0)))
    (0.75, 0.0, True)
    """
    return _divide(2 * np.asarray(n_correct, dtype=float), np.asarray(n_gold) + np.asarray(n_pred))


def _query_table(system: FewJointSystem) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-(seed, query) facts and the per-chunk table (gold and predicted chunks with ``correct``)."""
    gq = system.gold.queries.rename(columns={"tags": "gold_tags", "intent": "gold_intent"})
    queries = system.predictions.merge(gq, on=KEY, how="left", validate="many_to_one")
    queries = queries[
        ["seed", *KEY, "tokens", "gold_intent", "pred_intent", "gold_tags", "pred_tags", "alignment_status"]
    ]
    n = len(queries)
    status = queries["alignment_status"].to_numpy()
    scorable = (status != "missing") & (status != "token_count")
    # Unscorable tags count as "no predicted chunks", so their gold chunks are misses.
    pred_for_chunks = [p if ok else [] for p, ok in zip(queries["pred_tags"], scorable, strict=True)]
    gold_tags = queries["gold_tags"].tolist()

    gold_chunks = _chunks_frame(gold_tags)
    pred_chunks = _chunks_frame(pred_for_chunks)
    matched = gold_chunks.merge(pred_chunks, on=["sentence", "type", "start", "end"], how="inner")
    n_gold = np.bincount(gold_chunks["sentence"].to_numpy(), minlength=n)
    n_pred = np.bincount(pred_chunks["sentence"].to_numpy(), minlength=n)
    n_correct = np.bincount(matched["sentence"].to_numpy(), minlength=n)

    intent_correct = (
        queries["pred_intent"].astype(object).to_numpy() == queries["gold_intent"].astype(object).to_numpy()
    ) & (status != "missing")
    tags_equal = np.fromiter(
        (g == p for g, p in zip(gold_tags, queries["pred_tags"], strict=True)), dtype=bool, count=n
    )
    tags_correct = tags_equal & scorable
    ill = _ill_formed_per_sentence(pred_for_chunks)

    kind = np.select(
        [
            status == "missing",
            status == "token_count",
            intent_correct & tags_correct,
            tags_correct,
            intent_correct,
        ],
        ["missing", "token_count", "correct", "intent", "slots"],
        default="intent+slots",
    )
    queries = queries.assign(
        n_tokens=[len(t) for t in queries["tokens"]],
        intent_correct=intent_correct,
        tags_correct=tags_correct,
        sentence_correct=intent_correct & tags_correct,
        n_gold_chunks=n_gold,
        n_pred_chunks=n_pred,
        n_correct_chunks=n_correct,
        n_ill_formed=ill,
        error_kind=pd.Categorical(kind, categories=list(ERROR_KINDS)),
    )

    def label(chunks: pd.DataFrame, side: str) -> pd.DataFrame:
        out = chunks.assign(side=side)
        out["seed"] = queries["seed"].to_numpy()[out["sentence"].to_numpy()]
        return out

    matched_key = matched.assign(correct=True)
    pred_labelled = label(pred_chunks, "pred").merge(matched_key, on=["sentence", "type", "start", "end"], how="left")
    gold_labelled = label(gold_chunks, "gold").merge(matched_key, on=["sentence", "type", "start", "end"], how="left")
    chunks = pd.concat([gold_labelled, pred_labelled], ignore_index=True)
    chunks["correct"] = chunks["correct"].fillna(False).astype(bool)
    return queries, chunks


def _aggregate(queries: pd.DataFrame, *, by: list[str], averaging: str) -> pd.DataFrame:
    """Intent accuracy, slot P/R/F1 and sentence accuracy per ``by`` group with the given averaging."""
    sums = {
        "n_queries": ("intent_correct", "size"),
        "n_intent_correct": ("intent_correct", "sum"),
        "n_sentence_correct": ("sentence_correct", "sum"),
        "n_gold_chunks": ("n_gold_chunks", "sum"),
        "n_pred_chunks": ("n_pred_chunks", "sum"),
        "n_correct_chunks": ("n_correct_chunks", "sum"),
    }
    pooled = queries.groupby(by, observed=True, sort=True).agg(**sums).reset_index()
    pooled["sentence_accuracy"] = _divide(pooled["n_sentence_correct"], pooled["n_queries"])
    if averaging == "micro":
        pooled["intent_accuracy"] = _divide(pooled["n_intent_correct"], pooled["n_queries"])
        pooled["slot_precision"] = _divide(pooled["n_correct_chunks"], pooled["n_pred_chunks"])
        pooled["slot_recall"] = _divide(pooled["n_correct_chunks"], pooled["n_gold_chunks"])
        pooled["slot_f1"] = slot_f1(pooled["n_correct_chunks"], pooled["n_gold_chunks"], pooled["n_pred_chunks"])
        pooled["n_episodes"] = (
            queries.groupby(by, observed=True, sort=True)[["domain", "episode"]]
            .apply(lambda g: len(g.drop_duplicates()))
            .to_numpy()
        )
        return pooled
    episode_keys = by + [k for k in ("domain", "episode") if k not in by]
    per_episode = queries.groupby(episode_keys, observed=True, sort=True).agg(**sums).reset_index()
    per_episode["intent_accuracy"] = _divide(per_episode["n_intent_correct"], per_episode["n_queries"])
    per_episode["slot_precision"] = _divide(per_episode["n_correct_chunks"], per_episode["n_pred_chunks"])
    per_episode["slot_recall"] = _divide(per_episode["n_correct_chunks"], per_episode["n_gold_chunks"])
    per_episode["slot_f1"] = slot_f1(
        per_episode["n_correct_chunks"], per_episode["n_gold_chunks"], per_episode["n_pred_chunks"]
    )
    # mean() skips NaN: an episode with no chunks in this slice says nothing about slot F1.
    means = (
        per_episode.groupby(by, observed=True, sort=True)
        .agg(
            intent_accuracy=("intent_accuracy", "mean"),
            slot_precision=("slot_precision", "mean"),
            slot_recall=("slot_recall", "mean"),
            slot_f1=("slot_f1", "mean"),
            n_episodes=("intent_accuracy", "size"),
        )
        .reset_index()
    )
    return pooled.merge(means, on=by, how="left")


_RESULT_COLUMNS = [
    "intent_accuracy",
    "slot_f1",
    "sentence_accuracy",
    "slot_precision",
    "slot_recall",
    "n_queries",
    "n_episodes",
    "n_gold_chunks",
    "n_pred_chunks",
    "n_correct_chunks",
]


def score_fewjoint(system: FewJointSystem, *, averaging: str = "episode") -> FewJointResult:
    """Every FewJoint metric for a system, per seed and summarised over seeds.

    ``averaging="episode"`` (the reference implementation: intent accuracy and slot F1 per episode, then
    the mean over episodes; sentence accuracy pooled) or ``"micro"`` (all pooled over queries).
    Summaries over seeds are the mean and the sample standard deviation (``ddof=1``).
    """
    if averaging not in AVERAGINGS:
        raise ValueError(f"averaging must be one of {', '.join(AVERAGINGS)}, got {averaging!r}")
    queries, chunks = _query_table(system)
    seed_order = pd.CategoricalDtype(list(system.seeds), ordered=True)
    queries["seed"] = queries["seed"].astype(seed_order)
    chunks["seed"] = chunks["seed"].astype(seed_order)

    per_seed = _aggregate(queries, by=["seed"], averaging=averaging)
    counts = queries.groupby("seed", observed=True, sort=True).agg(
        n_missing=("error_kind", lambda k: int((k == "missing").sum())),
        n_token_count=("error_kind", lambda k: int((k == "token_count").sum())),
        n_ill_formed=("n_ill_formed", "sum"),
        n_ill_formed_queries=("n_ill_formed", lambda v: int((v > 0).sum())),
    )
    per_seed = per_seed.merge(counts.reset_index(), on="seed")
    per_seed["averaging"] = averaging
    per_seed = per_seed[
        [
            "seed",
            *_RESULT_COLUMNS,
            "n_missing",
            "n_token_count",
            "n_ill_formed",
            "n_ill_formed_queries",
            "averaging",
        ]
    ]

    summary = pd.DataFrame(
        {
            "metric": list(METRICS),
            "mean": [_nanmean(per_seed[m].to_numpy(dtype=float)) for m in METRICS],
            "std": [_sample_std(per_seed[m].to_numpy(dtype=float)) for m in METRICS],
            "n_seeds": len(system.seeds),
            "averaging": averaging,
            "system": system.name,
            "shots": system.shots,
        }
    )

    per_domain = _aggregate(queries, by=["seed", "domain"], averaging=averaging)[["seed", "domain", *_RESULT_COLUMNS]]
    per_domain["averaging"] = averaging
    per_intent = _aggregate(queries, by=["seed", "domain", "gold_intent"], averaging=averaging)[
        ["seed", "domain", "gold_intent", *_RESULT_COLUMNS]
    ]
    per_intent["averaging"] = averaging

    per_slot_type = _per_slot_type(chunks)
    confusion = (
        queries.assign(
            pred_intent=queries["pred_intent"].astype(object).where(queries["error_kind"] != "missing", "<missing>")
        )
        .groupby(["seed", "domain", "gold_intent", "pred_intent"], observed=True, sort=True)
        .size()
        .rename("count")
        .reset_index()
    )
    ill_formed = per_seed[["seed", "n_ill_formed", "n_ill_formed_queries"]].copy()

    warnings: list[str] = []
    if len(system.seeds) < MIN_SEEDS:
        warnings.append(
            f"only {len(system.seeds)} seed(s): FewJoint results are reported over {MIN_SEEDS} seeds; "
            "the mean and standard deviation over fewer are not comparable"
        )
    for row in per_seed.itertuples():
        if row.n_missing:
            warnings.append(f"seed {row.seed}: {row.n_missing} missing prediction(s) scored as wrong")
        if row.n_token_count:
            warnings.append(
                f"seed {row.seed}: {row.n_token_count} prediction(s) with the wrong token count scored as wrong"
            )
        if row.n_ill_formed:
            warnings.append(
                f"seed {row.seed}: {row.n_ill_formed} ill-formed BIO tag(s) (I-X not after B-X/I-X) in "
                f"{row.n_ill_formed_queries} queries, scored leniently as conlleval does"
            )
    n_extra = int((system.alignment["kind"] == "extra").sum())
    if n_extra:
        warnings.append(f"{n_extra} prediction(s) point at no gold query and were not scored (see alignment)")
    gold_ill = int(_ill_formed_per_sentence(system.gold.queries["tags"].tolist()).sum())
    if gold_ill:
        warnings.append(f"the gold has {gold_ill} ill-formed BIO tag(s)")

    return FewJointResult(
        system=system.name,
        shots=system.shots,
        averaging=averaging,
        seeds=system.seeds,
        n_queries=len(system.gold.queries),
        queries=queries,
        per_seed=per_seed,
        summary=summary,
        per_domain=per_domain,
        per_intent=per_intent,
        per_slot_type=per_slot_type,
        confusion=confusion,
        alignment=system.alignment,
        ill_formed_bio=ill_formed,
        warnings=warnings,
    )


def _per_slot_type(chunks: pd.DataFrame) -> pd.DataFrame:
    """Micro P/R/F1 per (seed, slot type) over all queries; ``support`` is the number of gold chunks."""
    counted = (
        chunks.assign(
            gold=chunks["side"] == "gold",
            pred=chunks["side"] == "pred",
            tp=(chunks["side"] == "gold") & chunks["correct"],
        )
        .groupby(["seed", "type"], observed=True, sort=True)
        .agg(n_gold=("gold", "sum"), n_pred=("pred", "sum"), n_correct=("tp", "sum"))
        .reset_index()
        .rename(columns={"type": "slot_type"})
    )
    counted["precision"] = _divide(counted["n_correct"], counted["n_pred"])
    counted["recall"] = _divide(counted["n_correct"], counted["n_gold"])
    counted["f1"] = slot_f1(counted["n_correct"], counted["n_gold"], counted["n_pred"])
    counted["support"] = counted["n_gold"]
    return counted


def fewjoint_leaderboard(results: Iterable[FewJointResult]) -> pd.DataFrame:
    """One row per (system, shots, metric) with mean, std (ddof=1), n_seeds and averaging.

    Several results of one system at different shot settings, or several systems, go side by side.
    """
    frames = [r.summary for r in results]
    if not frames:
        return pd.DataFrame(columns=["system", "shots", "metric", "mean", "std", "n_seeds", "averaging"])
    board = pd.concat(frames, ignore_index=True)
    board["shots"] = board["shots"].astype("Int64")
    return board[["system", "shots", "metric", "mean", "std", "n_seeds", "averaging"]]
