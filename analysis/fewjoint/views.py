"""FewJoint results -> page-ready frames and texts for the dashboard's FewJoint page (no Streamlit).

Every function takes a `FewJointResult` (or several) from `analysis.fewjoint.scoring.score_fewjoint` and returns
a small frame, a list of options or a sentence: the page only places them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from analysis.fewjoint.chunks import conlleval_chunks
from analysis.fewjoint.figures import tag_diff_table
from analysis.fewjoint.scoring import ERROR_KINDS, METRICS, MIN_SEEDS, FewJointResult

__all__ = [
    "AVERAGING_NOTES",
    "ERROR_KIND_LABELS",
    "METRIC_LABELS",
    "averaging_caption",
    "bracketed",
    "browser_options",
    "check_warnings",
    "leaderboard_table",
    "mean_std",
    "query_ids",
    "query_location",
    "query_table",
    "query_verdict",
    "seed_table",
    "seed_warning",
    "slot_type_table",
    "tag_diff",
]

METRIC_LABELS = {
    "intent_accuracy": "intent accuracy",
    "slot_f1": "slot F1",
    "sentence_accuracy": "sentence accuracy",
}
AVERAGING_NOTES = {
    "episode": "episode averaging (the reference implementation): intent accuracy and slot F1 per episode, "
    "then the mean over episodes; sentence accuracy pooled over queries",
    "micro": "micro averaging: every metric pooled over all queries",
}
ERROR_KIND_LABELS = {
    "correct": "correct",
    "intent": "intent wrong",
    "slots": "slots wrong",
    "intent+slots": "intent and slots wrong",
    "missing": "prediction missing",
    "token_count": "token count differs",
}
# Token status of `tag_diff_table` -> the outcome vocabulary the dashboard tints, and a text marker.
_STATUS_OUTCOME = {"correct": "correct", "wrong_tag": "wrong_value", "missed": "missed", "spurious": "spurious"}
_STATUS_MARK = {"correct": "✓", "wrong_tag": "≠", "missed": "−", "spurious": "+"}


def mean_std(mean: float, std: float, *, digits: int = 4) -> str:
    """`mean ± std` as text; a NaN std (fewer than two seeds) says so, a NaN mean is `n/a`.

    >>> mean_std(0.92083, 0.01743), mean_std(0.5, float("nan")), mean_std(float("nan"), float("nan"))
    ('0.9208 ± 0.0174', '0.5000 ± n/a (one seed)', 'n/a')
    """
    if math.isnan(mean):
        return "n/a"
    if math.isnan(std):
        return f"{mean:.{digits}f} ± n/a (one seed)"
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def averaging_caption(averaging: str, *, n_seeds: int | None = None) -> str:
    """The sentence that states how a FewJoint number was averaged (shown under every table)."""
    if averaging not in AVERAGING_NOTES:
        raise ValueError(f"averaging must be one of {', '.join(AVERAGING_NOTES)}, got {averaging!r}")
    seeds = f" over {n_seeds} seeds" if n_seeds is not None else " over seeds"
    return f"Averaging: {AVERAGING_NOTES[averaging]}. Mean ± sample standard deviation (ddof=1){seeds}."


def leaderboard_table(results: Sequence[FewJointResult]) -> pd.DataFrame:
    """One row per result (system at a shot setting), ordered by shots then system: `system`, `shots`,
    `n_seeds`, `averaging`, per metric its `mean` and `std` columns (`<metric>`, `<metric>_std`) and a
    display column `<label> (mean ± std)`."""
    rows: list[dict[str, Any]] = []
    for result in results:
        summary = result.summary.set_index("metric")
        row: dict[str, Any] = {
            "system": result.system,
            "shots": result.shots,
            "n_seeds": len(result.seeds),
            "averaging": result.averaging,
        }
        for metric in METRICS:
            mean, std = float(summary.loc[metric, "mean"]), float(summary.loc[metric, "std"])
            row[metric] = mean
            row[f"{metric}_std"] = std
            row[f"{METRIC_LABELS[metric]} (mean ± std)"] = mean_std(mean, std)
        rows.append(row)
    columns = ["system", "shots", "n_seeds", "averaging"]
    for metric in METRICS:
        columns += [metric, f"{metric}_std", f"{METRIC_LABELS[metric]} (mean ± std)"]
    board = pd.DataFrame(rows, columns=columns)
    board["shots"] = board["shots"].astype("Int64")
    board["n_seeds"] = board["n_seeds"].astype("int64")
    return board.sort_values(["shots", "system"], na_position="last", kind="stable").reset_index(drop=True)


def seed_table(result: FewJointResult) -> pd.DataFrame:
    """Per seed: the three metrics, slot chunk precision/recall, and what alignment and BIO checks found
    (`missing`, `wrong_token_count`, `ill_formed_bio_tags`, `queries_with_ill_formed_bio`)."""
    per_seed = result.per_seed
    return pd.DataFrame(
        {
            "seed": per_seed["seed"].astype("str"),
            "intent_accuracy": per_seed["intent_accuracy"],
            "slot_f1": per_seed["slot_f1"],
            "sentence_accuracy": per_seed["sentence_accuracy"],
            "chunk_precision": per_seed["slot_precision"],
            "chunk_recall": per_seed["slot_recall"],
            "missing": per_seed["n_missing"].astype("int64"),
            "wrong_token_count": per_seed["n_token_count"].astype("int64"),
            "ill_formed_bio_tags": per_seed["n_ill_formed"].astype("int64"),
            "queries_with_ill_formed_bio": per_seed["n_ill_formed_queries"].astype("int64"),
        }
    ).reset_index(drop=True)


def seed_warning(result: FewJointResult) -> str | None:
    """The fewer-than-`MIN_SEEDS` warning of a result, or None."""
    n = len(result.seeds)
    if n >= MIN_SEEDS:
        return None
    return (
        f"{result.system}: only {n} seed(s). FewJoint results are reported over {MIN_SEEDS} seeds; "
        "a mean and standard deviation over fewer are not comparable with published numbers."
    )


_ILL_FORMED_LINE = "ill-formed BIO tag(s) (I-X not after B-X/I-X)"


def check_warnings(result: FewJointResult) -> list[str]:
    """The result's warnings with the per-seed ill-formed BIO lines merged into one line (counts per
    seed), so a page shows one box per kind of problem rather than one per seed."""
    lines = [w for w in result.warnings if _ILL_FORMED_LINE not in w]
    per_seed = result.per_seed
    bad = per_seed[per_seed["n_ill_formed"] > 0]
    if len(bad):
        counts = " · ".join(
            f"seed {seed}: {int(tags)} in {int(queries)} quer{'y' if int(queries) == 1 else 'ies'}"
            for seed, tags, queries in zip(bad["seed"], bad["n_ill_formed"], bad["n_ill_formed_queries"], strict=True)
        )
        lines.append(
            "Ill-formed BIO tags (I-X not after B-X/I-X; scored leniently, as conlleval does) in the predictions: "
            + counts
        )
    return lines


def slot_type_table(result: FewJointResult) -> pd.DataFrame:
    """Per slot type: precision, recall and F1 (micro over queries, mean over seeds, as the chart),
    their std over seeds, and the gold support; largest support first."""
    per_type = result.per_slot_type
    table = (
        per_type.groupby("slot_type", observed=True, sort=True)
        .agg(
            precision=("precision", "mean"),
            recall=("recall", "mean"),
            f1=("f1", "mean"),
            f1_std=("f1", lambda v: v.std(ddof=1)),
            support=("support", "first"),
            n_pred_mean=("n_pred", "mean"),
        )
        .reset_index()
    )
    table["support"] = table["support"].astype("int64")
    return table.sort_values(["support", "slot_type"], ascending=[False, True]).reset_index(drop=True)


def browser_options(result: FewJointResult, *, domain: str | None = None) -> dict[str, list[str]]:
    """What the query browser can filter on: `seed`, `domain`, `intent` (gold intents, of `domain`
    when given) and `error_kind` (the kinds that occur, in vocabulary order)."""
    queries = result.queries
    intents = queries if domain is None else queries[queries["domain"] == domain]
    present = set(queries["error_kind"].astype("str"))
    return {
        "seed": [str(s) for s in result.seeds],
        "domain": sorted(queries["domain"].astype("str").unique()),
        "intent": sorted(intents["gold_intent"].astype("str").unique()),
        "error_kind": [k for k in ERROR_KINDS if k in present],
    }


def _joined(tokens: pd.Series) -> pd.Series:
    return pd.Series([" ".join(map(str, t)) for t in tokens], index=tokens.index, dtype="str")


def query_table(
    result: FewJointResult,
    *,
    seed: str | None = None,
    domain: str | None = None,
    intent: str | None = None,
    error_kind: str | Sequence[str] | None = None,
    errors_only: bool = False,
) -> pd.DataFrame:
    """The queries of one seed (default: the first), filtered: `domain`, `episode`, `query_index`,
    `text`, `verdict` (✓/✗ and the error kind), `gold_intent`, `pred_intent`, `error_kind`, chunk counts
    and `n_ill_formed` (ill-formed BIO tags in the prediction). `errors_only` drops correct queries."""
    seed = str(result.seeds[0]) if seed is None else str(seed)
    if seed not in {str(s) for s in result.seeds}:
        raise ValueError(f"seed must be one of {', '.join(map(str, result.seeds))}, got {seed!r}")
    queries = result.queries
    keep = queries["seed"].astype("str") == seed
    if domain is not None:
        keep &= queries["domain"] == domain
    if intent is not None:
        keep &= queries["gold_intent"] == intent
    if error_kind is not None:
        kinds = [error_kind] if isinstance(error_kind, str) else list(error_kind)
        unknown = [k for k in kinds if k not in ERROR_KINDS]
        if unknown:
            raise ValueError(f"error_kind must be one of {', '.join(ERROR_KINDS)}, got {unknown}")
        keep &= queries["error_kind"].astype("str").isin(kinds)
    if errors_only:
        keep &= queries["error_kind"] != "correct"
    rows = queries[keep]
    kind = rows["error_kind"].astype("str")
    return pd.DataFrame(
        {
            "query_id": query_ids(rows),
            "domain": rows["domain"].astype("str"),
            "episode": rows["episode"].astype("int64"),
            "query_index": rows["query_index"].astype("int64"),
            "text": _joined(rows["tokens"]),
            "verdict": kind.map(lambda k: "✓ correct" if k == "correct" else f"✗ {ERROR_KIND_LABELS[k]}").astype("str"),
            "gold_intent": rows["gold_intent"].astype("str"),
            "pred_intent": rows["pred_intent"].astype("str").fillna("(missing)"),
            "error_kind": kind,
            "n_gold_chunks": rows["n_gold_chunks"].astype("int64"),
            "n_pred_chunks": rows["n_pred_chunks"].astype("int64"),
            "n_correct_chunks": rows["n_correct_chunks"].astype("int64"),
            "n_ill_formed": rows["n_ill_formed"].astype("int64"),
        }
    ).reset_index(drop=True)


def query_ids(queries: pd.DataFrame) -> pd.Series:
    """`domain/episode/query_index` for every row, the id the query browser selects by."""
    ids = queries["domain"].astype("str") + "/" + queries["episode"].astype("str") + "/"
    return (ids + queries["query_index"].astype("str")).astype("str")


def query_location(query_id: str) -> tuple[str, int, int]:
    """`(domain, episode, query_index)` of a query id (a domain may hold `/`).

    >>> query_location("weather/0/3"), query_location("a/b/2/7")
    (('weather', 0, 3), ('a/b', 2, 7))
    """
    domain, episode, index = str(query_id).rsplit("/", 2)
    return domain, int(episode), int(index)


def bracketed(tokens: Sequence[str], tags: Sequence[str]) -> str:
    """A sentence with its conlleval chunks bracketed and typed.

    >>> bracketed(["fly", "to", "new", "york", "today"], ["O", "O", "B-city", "I-city", "B-date"])
    'fly to [city: new york] [date: today]'
    """
    words = [str(t) for t in tokens]
    if len(tags) != len(words):
        return " ".join(words)
    opens: dict[int, str] = {}
    closes: set[int] = set()
    for kind, start, end in conlleval_chunks(list(tags)):
        opens[start] = kind
        closes.add(end)
    out = []
    for i, word in enumerate(words):
        text = f"[{opens[i]}: {word}" if i in opens else word
        out.append(text + "]" if i in closes else text)
    return " ".join(out)


def _query(result: FewJointResult, *, domain: str, episode: int, query_index: int, seed: str) -> pd.Series:
    queries = result.queries
    row = queries.loc[
        (queries["seed"].astype("str") == str(seed))
        & (queries["domain"] == domain)
        & (queries["episode"] == episode)
        & (queries["query_index"] == query_index)
    ]
    if row.empty:
        raise KeyError(f"no query {domain}/{episode} #{query_index} for seed {seed!r}")
    return row.iloc[0]


def query_verdict(result: FewJointResult, *, domain: str, episode: int, query_index: int, seed: str) -> dict[str, Any]:
    """The sentence-level verdict of one query for one seed: `verdict` (one line), `sentence_correct`,
    `intent_correct`, `tags_correct`, `error_kind`, both intents, the bracketed gold and predicted
    sentences, chunk counts, `n_ill_formed` and `alignment_status`."""
    query = _query(result, domain=domain, episode=episode, query_index=query_index, seed=seed)
    tokens = list(query["tokens"])
    pred_tags = list(query["pred_tags"]) if isinstance(query["pred_tags"], list) else []
    kind = str(query["error_kind"])
    pred_intent = query["pred_intent"]
    pred_intent = "(missing)" if kind == "missing" or pd.isna(pred_intent) else str(pred_intent)
    n_gold, n_correct = int(query["n_gold_chunks"]), int(query["n_correct_chunks"])
    n_pred = int(query["n_pred_chunks"])
    parts = [
        "intent correct"
        if bool(query["intent_correct"])
        else f"intent {query['gold_intent']} predicted as {pred_intent}",
        f"{n_correct} of {n_gold} gold slot chunks found, {n_pred - n_correct} of {n_pred} predicted chunks wrong",
    ]
    if kind == "token_count":
        parts.append(f"prediction has {len(pred_tags)} tags for {len(tokens)} tokens (tags scored as wrong)")
    if int(query["n_ill_formed"]):
        parts.append(f"{int(query['n_ill_formed'])} ill-formed BIO tag(s) in the prediction")
    head = "✓ sentence correct" if bool(query["sentence_correct"]) else f"✗ sentence wrong ({ERROR_KIND_LABELS[kind]})"
    return {
        "verdict": head + ": " + "; ".join(parts),
        "sentence_correct": bool(query["sentence_correct"]),
        "intent_correct": bool(query["intent_correct"]),
        "tags_correct": bool(query["tags_correct"]),
        "error_kind": kind,
        "gold_intent": str(query["gold_intent"]),
        "pred_intent": pred_intent,
        "gold_bracketed": bracketed(tokens, list(query["gold_tags"])),
        "pred_bracketed": bracketed(tokens, pred_tags) if pred_tags else "(no predicted tags)",
        "n_gold_chunks": n_gold,
        "n_pred_chunks": n_pred,
        "n_correct_chunks": n_correct,
        "n_ill_formed": int(query["n_ill_formed"]),
        "alignment_status": str(query["alignment_status"]),
    }


def tag_diff(result: FewJointResult, *, domain: str, episode: int, query_index: int, seed: str) -> pd.DataFrame:
    """`tag_diff_table` with a text marker (`mark`: ✓ correct, ≠ wrong tag, − missed, + spurious) and
    the dashboard's outcome vocabulary (`outcome`), so the table reads without colour."""
    diff = tag_diff_table(result, domain=domain, episode=episode, query_index=query_index, seed=seed)
    diff.insert(0, "position", range(len(diff)))
    diff.insert(1, "mark", diff["status"].map(_STATUS_MARK).astype("str"))
    diff["outcome"] = diff["status"].map(_STATUS_OUTCOME).astype("str")
    return diff
