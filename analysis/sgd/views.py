"""The SGD evaluator's numbers for the dashboard's runs: what the Overview and the leaderboard show for a
run scored under the `sgd` convention.

A run's files and schemas come from its metadata (`RunMeta.sources`, `schema`, `train_schema`; a
workspace manifest sets them). The evaluator reads files: an uploaded run (no file on disk) and a run
without a schema get a message saying so instead of numbers, never the generic per-turn values under
the evaluator's name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.errors import InputError
from analysis.formats.sgd_files import schema_beside
from analysis.model import RunMeta
from analysis.scoring import Scored
from analysis.sgd.scoring import ALL_SERVICES, HEADLINE, SEEN_SERVICES, UNSEEN_SERVICES, SgdResult, evaluate

CONVENTION = "sgd"
COLLECTIONS = {ALL_SERVICES: "all services", SEEN_SERVICES: "seen services", UNSEEN_SERVICES: "unseen services"}
LABELS = {
    "active_intent_accuracy": "Active intent accuracy",
    "requested_slots_f1": "Requested slots F1",
    "average_goal_accuracy": "Average goal accuracy",
    "joint_goal_accuracy": "Joint goal accuracy",
}
# The leaderboard's generic keys that, under `sgd`, are the evaluator's (as `metrics --json` has them).
LEADERBOARD_KEYS = {"jga": "joint_goal_accuracy", "aga": "average_goal_accuracy"}

_CACHE: dict[tuple[str, ...], SgdResult | str] = {}


def is_sgd(scored: Scored) -> bool:
    return scored.convention.name == CONVENTION


def files_of(meta: RunMeta) -> tuple[Path, Path, Path | None, Path | None] | str:
    """(prediction, gold, schema, training schema) of a run, or why the evaluator cannot read them."""
    pred = Path(meta.sources[0]) if meta.sources else None
    gold = Path(meta.sources[1]) if len(meta.sources) > 1 else pred
    if pred is None or gold is None or not pred.exists() or not gold.exists():
        return (
            "the SGD evaluator reads the run's files and schema: an uploaded run has none on disk here "
            "(add it to the workspace manifest with its schema)"
        )
    schema = Path(meta.schema) if meta.schema else schema_beside(gold)
    train = Path(meta.train_schema) if meta.train_schema else None
    return pred, gold, schema, train


def result_of(meta: RunMeta) -> SgdResult | str:
    """The evaluator's result for a run (memoised per files), or a one-line reason there is none."""
    files = files_of(meta)
    if isinstance(files, str):
        return files
    pred, gold, schema, train = files
    if schema is None:
        return (
            "the SGD evaluator needs the evaluated split's schema: set `schema` (and `train_schema` for seen / "
            "unseen) on the run in the workspace manifest; no schema.json was found beside the gold files"
        )
    key = tuple(str(p) for p in (pred, gold, schema, train or ""))
    try:
        stamp = tuple(str(p.stat().st_mtime_ns) for p in (pred, gold, schema, *([train] if train else [])))
    except OSError as exc:  # a schema named in the manifest that is not there (or not readable)
        return f"the SGD evaluator cannot read {exc.filename}: {exc.strerror}"
    cached = _CACHE.get(key + stamp)
    if cached is None:
        try:
            cached = evaluate(gold, pred, schema, train)
        except InputError as exc:
            cached = str(exc)
        _CACHE[key + stamp] = cached
    return cached


def summary(scoreds: Sequence[Scored]) -> pd.DataFrame:
    """One row per SGD run and collection (all / seen / unseen services): the evaluator's headline
    metrics, its frame count, and `note` (why a run has no numbers, else "")."""
    rows = []
    for scored in scoreds:
        if not is_sgd(scored):
            continue
        meta = scored.metas[0]
        result = result_of(meta)
        if isinstance(result, str):
            rows.append({"run_id": meta.run_id, "collection": "", "frames": 0, "note": result})
            continue
        counts = _frame_counts(result)
        for collection, label in COLLECTIONS.items():
            if collection not in result.table:
                continue
            values = result.table[collection]
            rows.append(
                {
                    "run_id": meta.run_id,
                    "collection": label,
                    "frames": counts[collection],
                    **{metric: values.get(metric, np.nan) for metric in HEADLINE},
                    "note": "" if result.seen_services is not None or collection != ALL_SERVICES else _NO_TRAIN,
                }
            )
    return pd.DataFrame(rows, columns=["run_id", "collection", "frames", *HEADLINE, "note"])


_NO_TRAIN = "no train_schema given: seen / unseen not split"


def _frame_counts(result: SgdResult) -> dict[str, int]:
    frames = result.frames
    seen = frames["seen"]
    return {
        ALL_SERVICES: len(frames),
        SEEN_SERVICES: int((seen == True).sum()),  # noqa: E712  (an object column: True, False or None)
        UNSEEN_SERVICES: int((seen == False).sum()),  # noqa: E712
    }


def services(scoreds: Sequence[Scored]) -> pd.DataFrame:
    """One row per SGD run and service: seen or unseen, its frames and the evaluator's headline metrics
    for that service (the per-domain view of a schema-guided dataset)."""
    rows = []
    for scored in scoreds:
        if not is_sgd(scored):
            continue
        result = result_of(scored.metas[0])
        if isinstance(result, str):
            continue
        frames = result.frames
        for service, group in frames.groupby("service", sort=True):
            seen = group["seen"].iloc[0]
            values = result.table.get(str(service), {})
            rows.append(
                {
                    "run_id": scored.metas[0].run_id,
                    "service": service,
                    "seen": "" if seen is None else ("seen" if seen else "unseen"),
                    "frames": len(group),
                    **{metric: values.get(metric, np.nan) for metric in HEADLINE},
                }
            )
    return pd.DataFrame(rows, columns=["run_id", "service", "seen", "frames", *HEADLINE])


def dialogue_interval(result: SgdResult, metric: str, counts: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of an evaluator metric (a mean over frames) under the dialogue bootstrap:
    `counts` is `analysis.stats.resample_counts` over the run's dialogues in sorted id order."""
    dialogues = sorted(result.frames["dialogue_id"].unique())
    return _interval_over(result, dialogues, counts, metric, level)


def leaderboard_values(scored: Scored, sort: str | None, resamples: int) -> dict[str, object]:
    """The leaderboard cells of an SGD run that are the evaluator's: `jga` and `aga` (its #ALL_SERVICES
    joint and average goal accuracy, as `metrics --json` prints them), the sort metric's interval when it
    is one of them, and a `sgd_note` when the evaluator has no numbers for the run (they are then n/a,
    never the generic per-turn values)."""
    from analysis import stats

    result = result_of(scored.metas[0])
    if isinstance(result, str):
        return {key: np.nan for key in LEADERBOARD_KEYS} | {"sgd_note": result}
    overall = result.table.get(ALL_SERVICES, {})
    out: dict[str, object] = {key: overall.get(metric, np.nan) for key, metric in LEADERBOARD_KEYS.items()}
    if sort in LEADERBOARD_KEYS and resamples > 0:
        n = result.frames["dialogue_id"].nunique()
        low, high = dialogue_interval(result, LEADERBOARD_KEYS[sort], stats.resample_counts(n, n_resamples=resamples))
        out |= {f"{sort}_low": low, f"{sort}_high": high}
    return out


def domain_rows(scored: Scored, resamples: int) -> pd.DataFrame | None:
    """Per-domain JGA rows (`analysis.views.domain_jga`'s columns) of an SGD run: per service (its
    domain here), the evaluator's joint goal accuracy over that service's frames, `n_turns` its frames,
    with the dialogue-bootstrap interval; None when the evaluator cannot run (the caller shows why)."""
    return _grouped_rows(scored, "service", "domain", resamples)


def depth_rows(scored: Scored, resamples: int) -> pd.DataFrame | None:
    """JGA-by-depth rows (`analysis.views.depth_jga`'s columns) of an SGD run: per user-turn index, the
    mean of the evaluator's per-frame joint goal accuracy over the frames at that depth (`n_turns` counts
    those frames), with the dialogue-bootstrap interval; None when the evaluator cannot run."""
    return _grouped_rows(scored, "turn_index", "turn_index", resamples)


def _grouped_rows(scored: Scored, column: str, name: str, resamples: int) -> pd.DataFrame | None:
    from analysis import stats

    result = result_of(scored.metas[0])
    if isinstance(result, str):
        return None
    rows = []
    dialogues = sorted(result.frames["dialogue_id"].unique())
    counts = stats.resample_counts(len(dialogues), n_resamples=resamples) if resamples > 0 else None
    for value, frames in result.frames.groupby(column, sort=True):
        low = high = float("nan")
        if counts is not None:
            # These frames, resampled over all the run's dialogues (those without any weigh 0).
            low, high = _interval_over(replace(result, frames=frames), dialogues, counts)
        jga = frames["joint_goal_accuracy"].mean()
        rows.append(
            {
                "run_id": scored.metas[0].run_id,
                name: value if column == "turn_index" else str(value),
                "jga": result.table[str(value)]["joint_goal_accuracy"] if column == "service" else float(jga),
                "n_turns": len(frames),
                "jga_low": low,
                "jga_high": high,
            }
        )
    return pd.DataFrame(rows, columns=["run_id", name, "jga", "n_turns", "jga_low", "jga_high"])


def _interval_over(
    result: SgdResult,
    dialogues: list[str],
    counts: np.ndarray,
    metric: str = "joint_goal_accuracy",
    level: float = 0.95,
) -> tuple[float, float]:
    frames = result.frames.dropna(subset=[metric])
    per = frames.groupby("dialogue_id", sort=True)[metric].agg(["sum", "count"])
    per = per.reindex(pd.Index(dialogues), fill_value=0)
    sums, n = counts @ per["sum"].to_numpy(float), counts @ per["count"].to_numpy(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        samples = sums / n
    samples = samples[np.isfinite(samples)]
    if not len(samples):
        return float("nan"), float("nan")
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(samples, [tail, 100 - tail])
    return float(low), float(high)


def interval_row(scored: Scored, metric: str, n_resamples: int, level: float) -> dict[str, object] | None:
    """A `stats.bootstrap_ci(..., by="run_id")` row of an SGD run for a leaderboard metric that is the
    evaluator's (`jga`, `aga`): its value and the dialogue-bootstrap interval of its frame mean; None
    for any other metric or when the evaluator cannot run."""
    if metric not in LEADERBOARD_KEYS:
        return None
    result = result_of(scored.metas[0])
    if isinstance(result, str):
        return None
    from analysis import stats

    dialogues = sorted(result.frames["dialogue_id"].unique())
    counts = stats.resample_counts(len(dialogues), n_resamples=n_resamples)
    evaluator_metric = LEADERBOARD_KEYS[metric]
    low, high = _interval_over(result, dialogues, counts, evaluator_metric, level)
    return {
        "run_id": scored.metas[0].run_id,
        "metric": metric,
        "estimate": result.table[ALL_SERVICES][evaluator_metric],
        "low": low,
        "high": high,
        "n_dialogues": len(dialogues),
        "n_turns": len(result.frames),
        "n_resamples": n_resamples,
        "level": level,
        "seed": 0,
        "method": "the SGD evaluator's frame mean; cluster bootstrap over dialogues, percentile interval",
    }
