"""FewJoint alignment: episode gold and one prediction file per seed -> one system (``load_fewjoint_system``).

Predictions are aligned to gold by ``(domain, episode, query_index)``. Alignment never drops anything:
every gold query gets one row per seed. A missing prediction is scored as wrong (intent wrong, no
predicted chunks, tags wrong) and counted; a prediction whose token count differs from gold keeps its
intent but its tags are scored as wrong (no predicted chunks); extra predictions (no such gold query)
are reported and not scored. ``FewJointSystem.alignment`` lists every problem by location, with what
scoring does about it (``ALIGNMENT_CONSEQUENCES``). Predictions that score support utterances are
refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.errors import InputError
from analysis.fewjoint.episodes import GOLD_FORMAT, KEY, FewJointGold, _where, load_fewjoint_gold
from analysis.fewjoint.predictions import read_fewjoint_predictions

# Closed vocabulary of the alignment frame's `kind` column, with what scoring does about each.
ALIGNMENT_CONSEQUENCES: dict[str, str] = {
    "missing": "scored as wrong",
    "token_count": "tags scored as wrong (no predicted chunks)",
    "extra": "not scored (no such gold query)",
    "token_text": "scored (tokens differ from gold text)",
    "gold_tag": "scored against the episode gold (file's gold column differs)",
    "gold_intent": "scored against the episode gold (file's gold intent differs)",
}
_SEED_RE = re.compile(r"seed[_-]?(\d+)", re.IGNORECASE)


@dataclass(frozen=True)
class FewJointSystem:
    """One system: episode gold plus one aligned prediction table per seed.

    ``predictions`` has one row per (seed, gold query) -- missing predictions included, flagged in
    ``alignment_status`` -- with ``pred_intent`` and ``pred_tags``; ``alignment`` lists every problem
    found while aligning (``seed, domain, episode, query_index, kind, detail, consequence``).
    """

    name: str
    gold: FewJointGold
    seeds: tuple[str, ...]
    pred_paths: tuple[str, ...]
    formats: tuple[str, ...]
    predictions: pd.DataFrame
    alignment: pd.DataFrame
    shots: int | None = None


def _seed_label(path: Path, position: int) -> str:
    match = _SEED_RE.search(path.stem)
    return match.group(1) if match else path.stem or str(position + 1)


def _refuse_support(gold: FewJointGold, merged: pd.DataFrame, path: str, fmt: str) -> None:
    """InputError when a prediction file evidently scores support utterances."""
    support_text = {
        (d, e, tuple(t)): i
        for d, e, t, i in zip(
            gold.support["domain"],
            gold.support["episode"],
            gold.support["tokens"],
            gold.support["support_index"],
            strict=True,
        )
    }
    suspicious = merged.loc[
        merged["pred_tokens"].notna() & ((merged["_merge"] == "right_only") | merged["_text_differs"])
    ]
    for row in suspicious.itertuples():
        hit = support_text.get((row.domain, row.episode, tuple(row.pred_tokens)))
        if hit is not None:
            raise InputError(
                path,
                fmt,
                f"the prediction's tokens are support utterance {hit} of this episode, "
                f"not query {row.query_index}: "
                "support utterances must not be scored",
                dialogue_id=_where(row.domain, int(row.episode)),
                turn=int(row.query_index),
            )
    # Without tokens: an episode with exactly support+query predictions, the surplus beyond the queries.
    n_query = gold.queries.groupby(["domain", "episode"]).size()
    n_support = gold.support.groupby(["domain", "episode"]).size()
    n_pred = merged.loc[merged["_merge"] != "left_only"].groupby(["domain", "episode"]).size()
    n_extra = merged.loc[merged["_merge"] == "right_only"].groupby(["domain", "episode"]).size()
    for (domain, episode), extra in n_extra.items():
        key = (domain, episode)
        if key in n_query.index and extra > 0 and n_pred.get(key, 0) == n_query[key] + n_support.get(key, 0):
            raise InputError(
                path,
                fmt,
                f"{n_pred[key]} predictions for an episode with {n_query[key]} queries "
                f"and {n_support.get(key, 0)} "
                "support utterances: support utterances appear to have been scored",
                dialogue_id=_where(str(domain), int(episode)),
            )


def _align_seed(
    gold: FewJointGold, preds: pd.DataFrame, seed: str, path: str, fmt: str
) -> tuple[pd.DataFrame, pd.DataFrame]:
    merged = _merged_queries(gold, preds)
    _refuse_support(gold, merged, path, fmt)
    both = (merged["_merge"] == "both").to_numpy()
    missing = (merged["_merge"] == "left_only").to_numpy()
    extra = (merged["_merge"] == "right_only").to_numpy()
    n_gold_tokens = np.array([len(t) if isinstance(t, list) else -1 for t in merged["gold_tokens"]])
    n_pred_tags = np.array([len(t) if isinstance(t, list) else -1 for t in merged["pred_tags"]])
    count_bad = both & (n_gold_tokens != n_pred_tags)
    text_bad = merged["_text_differs"].to_numpy(dtype=bool) & ~count_bad
    alignment = _alignment_problems(
        merged,
        (n_gold_tokens, n_pred_tags),
        both=both,
        missing=missing,
        extra=extra,
        count_bad=count_bad,
        text_bad=text_bad,
    )
    alignment.insert(0, "seed", seed)

    status = np.full(len(merged), "ok", dtype=object)
    status[text_bad] = "token_text"
    status[count_bad] = "token_count"
    status[missing] = "missing"
    merged["alignment_status"] = status
    aligned = merged.loc[~extra, [*KEY, "pred_intent", "pred_tags", "alignment_status"]].copy()
    aligned.insert(0, "seed", seed)
    return aligned, alignment


def _merged_queries(gold: FewJointGold, preds: pd.DataFrame) -> pd.DataFrame:
    """The episode gold's queries and the predictions side by side (an outer merge on `KEY`, `_merge` says
    which side has the row), in the gold's order then the extras in the file's, with `_text_differs`: the
    prediction's tokens are not the gold's."""
    gq = gold.queries.rename(columns={"tokens": "gold_tokens", "tags": "gold_tags", "intent": "gold_intent"})
    gq = gq.assign(_gold_order=np.arange(len(gq)))
    preds = preds.assign(_file_order=np.arange(len(preds)))
    merged = gq.merge(preds, on=KEY, how="outer", indicator=True, sort=False)
    # Gold order first, then extras in file order: reports and tables read in the order of the files.
    merged = merged.sort_values(["_gold_order", "_file_order"], na_position="last", kind="stable")
    merged = merged.reset_index(drop=True)
    both = (merged["_merge"] == "both").to_numpy()
    has_tokens = merged["pred_tokens"].notna().to_numpy()
    text_differs = np.zeros(len(merged), dtype=bool)
    idx = np.flatnonzero(both & has_tokens)
    text_differs[idx] = [
        list(a) != list(b)
        for a, b in zip(merged["gold_tokens"].to_numpy()[idx], merged["pred_tokens"].to_numpy()[idx], strict=True)
    ]
    merged["_text_differs"] = text_differs
    return merged


def _alignment_problems(
    merged: pd.DataFrame,
    counts: tuple[np.ndarray, np.ndarray],
    *,
    both: np.ndarray,
    missing: np.ndarray,
    extra: np.ndarray,
    count_bad: np.ndarray,
    text_bad: np.ndarray,
) -> pd.DataFrame:
    """One row per problem of the alignment (`KEY`, `kind`, `detail`): missing and extra queries, token
    counts (`counts`: gold tokens, predicted tags) and texts that differ, and where the file carries gold
    columns, those that differ from the episode gold."""
    problems: list[pd.DataFrame] = []

    def report(mask: np.ndarray, kind: str, details: Iterable[str]) -> None:
        sub = merged.loc[mask, KEY].copy()
        sub["kind"] = kind
        sub["detail"] = list(details)
        problems.append(sub)

    n_gold_tokens, n_pred_tags = counts  # per row, -1 where the side has none
    report(missing, "missing", ["no prediction for this query"] * int(missing.sum()))
    report(extra, "extra", ["no gold query at this location"] * int(extra.sum()))
    report(
        count_bad,
        "token_count",
        [
            f"gold has {g} tokens, prediction {p} tags"
            for g, p in zip(n_gold_tokens[count_bad], n_pred_tags[count_bad], strict=True)
        ],
    )
    report(text_bad, "token_text", ["prediction tokens differ from gold tokens"] * int(text_bad.sum()))
    if merged["file_gold_tags"].notna().any():
        gtag_bad = np.zeros(len(merged), dtype=bool)
        sel = np.flatnonzero(both & ~count_bad & merged["file_gold_tags"].notna().to_numpy())
        gtag_bad[sel] = [
            list(a) != list(b)
            for a, b in zip(merged["gold_tags"].to_numpy()[sel], merged["file_gold_tags"].to_numpy()[sel], strict=True)
        ]
        report(
            gtag_bad,
            "gold_tag",
            ["the file's gold tag column differs from the episode gold"] * int(gtag_bad.sum()),
        )
        gint_bad = (
            both
            & merged["file_gold_intent"].notna().to_numpy()
            & (merged["file_gold_intent"].astype(object).to_numpy() != merged["gold_intent"].astype(object).to_numpy())
        )
        report(
            gint_bad,
            "gold_intent",
            [
                f"file says {a!r}, episode gold {b!r}"
                for a, b in zip(
                    merged.loc[gint_bad, "file_gold_intent"], merged.loc[gint_bad, "gold_intent"], strict=True
                )
            ],
        )
    return pd.concat(problems, ignore_index=True)


def load_fewjoint_system(
    gold_path: str | Path,
    pred_paths: Sequence[str | Path],
    *,
    name: str = "system",
    shots: int | None = None,
    seeds: Sequence[str] | None = None,
    fmt: str | None = None,
) -> FewJointSystem:
    """Read episode gold and one prediction file per seed, validate, and align them by location.

    Seed labels come from ``seeds`` or the file names (``..._seed3.jsonl`` -> ``"3"``, else the stem);
    ``shots`` defaults to the K in the gold path. Formats are detected per file unless ``fmt`` is given.
    Raises ``InputError`` for malformed files, duplicate seeds and predictions that score support.
    """
    if not pred_paths:
        raise InputError(str(gold_path), GOLD_FORMAT, "no prediction files given: pass one file per seed")
    gold = load_fewjoint_gold(gold_path, shots=shots)
    paths = [Path(p) for p in pred_paths]
    labels = list(seeds) if seeds is not None else [_seed_label(p, i) for i, p in enumerate(paths)]
    if len(labels) != len(paths):
        raise InputError(str(paths[0]), None, f"{len(labels)} seed labels for {len(paths)} prediction files")
    if len(set(labels)) != len(labels):
        dup = next(s for s in labels if labels.count(s) > 1)
        raise InputError(
            str(paths[labels.index(dup)]),
            None,
            f"seed label {dup!r} is used by more than one prediction file",
        )
    aligned, problems, formats = [], [], []
    for path, seed in zip(paths, labels, strict=True):
        preds, found = read_fewjoint_predictions(path, fmt=fmt)
        rows, alignment = _align_seed(gold, preds, seed, str(path), found)
        aligned.append(rows)
        problems.append(alignment)
        formats.append(found)
    predictions = pd.concat(aligned, ignore_index=True)
    alignment = pd.concat(problems, ignore_index=True)
    alignment["consequence"] = alignment["kind"].map(ALIGNMENT_CONSEQUENCES)
    return FewJointSystem(
        name=name,
        gold=gold,
        seeds=tuple(labels),
        pred_paths=tuple(str(p) for p in paths),
        formats=tuple(formats),
        predictions=predictions,
        alignment=alignment,
        shots=gold.shots,
    )
