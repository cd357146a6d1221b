"""The SGD evaluator (google-research `schema_guided_dst/evaluate.py` + `metrics.py`), re-implemented.

Rules (each pinned by a test against the evaluator's own output):

1. Every score is a mean over frames (one service in one user turn), not over slots.
2. Only gold frames count: a predicted frame for a service the gold turn lacks is ignored; no state is
   carried forward. A gold frame without a predicted frame crashes the official code (a predicted
   dialogue left out altogether it silently does not score); here both are scored as empty predictions
   (no intent, no requested slot, no slot value, no span list) and counted in
   `SgdResult.missing_frames` (the frame's `pred_missing` is True), so a partial prediction file never
   looks better than it is. A predicted dialogue the gold lacks
   is refused, as the evaluator refuses it; so is a user utterance that differs from the gold one.
3. Seen / unseen is per frame: a service in both the evaluated and the training schema is seen.
4. Joint accuracy covers every slot of the service's schema (absent on both sides = 1, spurious or
   missing = 0); average accuracy only the slots present in gold.
5. Categorical slots: the first predicted value equals the first gold value (case-sensitive).
6. Non-categorical slots: the best fuzzy score of the first predicted value against any gold value,
   fuzzywuzzy's `token_sort_ratio` (with python-Levenshtein) / 100: characters U+0080..U+00FF deleted,
   non-word characters to spaces, lower-cased, words sorted, then the Indel ratio rounded to a whole
   percent (`analysis.sgd_rules`). A frame's joint score is the product of its slots' scores.
7. Average accuracies skip frames with nothing active in gold (the evaluator's "NA"); joint
   categorical / non-categorical accuracies skip services without such slots. A metric with no value in
   a collection is absent from it.
8. Requested-slot (and slot-tagging) F1: multiset precision and recall, 1 when the denominator is 0, so
   empty vs empty is F1 1.
9. Slot tagging F1 is computed only for predicted frames that carry `slots` (spans), over the
   non-categorical slots, comparing (slot, covered text).

Collections: `#ALL_SERVICES`, `#SEEN_SERVICES`, `#UNSEEN_SERVICES` (these two only with a training
schema), each service (`Restaurants_2`) and each domain (`Restaurants`), as the evaluator writes them.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.errors import InputError
from analysis.formats.sgd_files import FORMAT, Schema, SgdDialogues, gc_paused, read_dialogues, read_schema
from analysis.sgd_rules import fuzzy_key, key_score

ALL_SERVICES = "#ALL_SERVICES"
SEEN_SERVICES = "#SEEN_SERVICES"
UNSEEN_SERVICES = "#UNSEEN_SERVICES"
GOAL_METRICS = (
    "average_goal_accuracy",
    "average_cat_accuracy",
    "average_noncat_accuracy",
    "joint_goal_accuracy",
    "joint_cat_accuracy",
    "joint_noncat_accuracy",
)
F1_METRICS = (
    "requested_slots_f1",
    "requested_slots_precision",
    "requested_slots_recall",
    "slot_tagging_f1",
    "slot_tagging_precision",
    "slot_tagging_recall",
)
METRICS = ("active_intent_accuracy", *F1_METRICS, *GOAL_METRICS)
HEADLINE = (
    "active_intent_accuracy",
    "requested_slots_f1",
    "average_goal_accuracy",
    "joint_goal_accuracy",
    "average_cat_accuracy",
    "average_noncat_accuracy",
    "joint_cat_accuracy",
    "joint_noncat_accuracy",
)


@dataclass
class SgdResult:
    """What the evaluator computes, plus what it leaves implicit.

    - `table`: `{collection: {metric: value}}` exactly as the evaluator's output JSON (metrics without
      any value in a collection are absent).
    - `frames`: one row per gold USER frame: `dialogue_id`, `turn_index`, `service`, `domain`, `seen`
      (bool; None without a training schema), `pred_missing`, and one float column per metric of
      `METRICS` (NaN where the evaluator writes "NA").
    - `slots`: one row per (gold frame, schema slot) present in the gold or the predicted state (a slot
      absent on both sides scores 1 and has no row): `frame` (row of `frames`), `slot`, `categorical`,
      `active` (present in gold), `predicted` (present in the prediction), `score` (0..1), `gold`
      (tuple of acceptable values, None when absent) and `pred` (first predicted value, None).
    - `missing_frames`: gold frames without a predicted frame (scored as empty predictions).
    - `ignored_pred_frames`: predicted frames of a service the gold turn lacks (ignored, as the
      evaluator ignores them).
    """

    table: dict[str, dict[str, float]]
    frames: pd.DataFrame
    slots: pd.DataFrame
    missing_frames: int
    ignored_pred_frames: int
    seen_services: frozenset[str] | None

    def collection(self, name: str = ALL_SERVICES) -> dict[str, float]:
        return self.table.get(name, {})


def _f1(ref: tuple[str, ...], hyp: tuple[str, ...]) -> tuple[float, float, float]:
    if ref == hyp:  # the same list (both empty included): every score 1
        return 1.0, 1.0, 1.0
    true_positive = sum((Counter(ref) & Counter(hyp)).values())
    precision = true_positive / len(hyp) if hyp else 1.0
    recall = true_positive / len(ref) if ref else 1.0
    f1 = 2.0 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return f1, precision, recall


def evaluate(
    gold: SgdDialogues | str | Path,
    pred: SgdDialogues | str | Path,
    schema: Schema | str | Path,
    train_schema: Schema | str | Path | None = None,
) -> SgdResult:
    """Score predictions against gold as the SGD evaluator does (module docstring); paths are read.

    `schema` is the evaluated split's schema (slots, categorical or not); `train_schema`, when given,
    decides seen vs unseen (a service in both schemas is seen).
    """
    with gc_paused():
        return _evaluate(gold, pred, schema, train_schema)


def _evaluate(
    gold: SgdDialogues | str | Path,
    pred: SgdDialogues | str | Path,
    schema: Schema | str | Path,
    train_schema: Schema | str | Path | None,
) -> SgdResult:
    gold_d = gold if isinstance(gold, SgdDialogues) else read_dialogues(gold)
    pred_d = pred if isinstance(pred, SgdDialogues) else read_dialogues(pred)
    schema_s = schema if isinstance(schema, Schema) else read_schema(schema)
    train_s = (
        None
        if train_schema is None
        else (train_schema if isinstance(train_schema, Schema) else read_schema(train_schema))
    )
    seen_services = None if train_s is None else schema_s.names & train_s.names
    _check_pairing(gold_d, pred_d)

    g = gold_d.frames
    unknown = ~g["service"].isin(list(schema_s.services))
    if unknown.any():
        row = g[unknown].iloc[0]
        raise InputError(
            gold_d.sources[0],
            FORMAT,
            f"service {row['service']!r} is not in the schema {Path(schema_s.path).name}",
            dialogue_id=str(row["dialogue_id"]),
            turn=int(row["turn_index"]),
        )
    p = pred_d.frames
    keys = ["dialogue_id", "turn_index", "service"]
    pred_cols = p[[*keys, "active_intent", "requested_slots", "slot_values", "spans"]].rename(
        columns={c: f"pred_{c}" for c in ("active_intent", "requested_slots", "slot_values", "spans")}
    )
    merged = g.merge(pred_cols, on=keys, how="left", indicator=True)
    missing = (merged["_merge"] == "left_only").to_numpy()
    ignored = len(p) - int((~missing).sum())
    n = len(merged)

    services: list[str] = merged["service"].tolist()
    frames = merged[keys].copy()
    frames["domain"] = [s.split("_")[0] for s in services]
    frames["seen"] = None if seen_services is None else np.isin(services, list(seen_services))
    frames["pred_missing"] = missing

    # 1. active intent: a missing prediction has no intent.
    pred_intent = merged["pred_active_intent"].to_numpy(dtype=object)
    frames["active_intent_accuracy"] = (merged["active_intent"].to_numpy(dtype=object) == pred_intent).astype(float)

    # 2. requested slots and slot tagging F1 (small per-frame multisets).
    gold_req = merged["requested_slots"].tolist()
    pred_req = [r if isinstance(r, tuple) else () for r in merged["pred_requested_slots"].tolist()]
    scores = np.array([_f1(a, b) for a, b in zip(gold_req, pred_req, strict=True)], dtype=float).reshape(n, 3)
    frames["requested_slots_f1"], frames["requested_slots_precision"], frames["requested_slots_recall"] = scores.T
    frames[["slot_tagging_f1", "slot_tagging_precision", "slot_tagging_recall"]] = _tagging(
        merged, gold_d.turns, schema_s
    )

    # 3. goal accuracies over the schema slots of each frame's service.
    slots = _slot_scores(merged, schema_s, services)
    frames = pd.concat([frames, _goal_accuracies(slots, services, schema_s)], axis=1)
    frames = frames[[*keys, "domain", "seen", "pred_missing", *METRICS]]
    table = _aggregate(frames, seen_services is not None)
    return SgdResult(table, frames, slots, int(missing.sum()), ignored, seen_services)


def _check_pairing(gold: SgdDialogues, pred: SgdDialogues) -> None:
    """The evaluator's refusals: a predicted dialogue the gold lacks, a user utterance that differs."""
    gold_ids = set(gold.dialogue_ids)
    extra = [d for d in pred.dialogue_ids if d not in gold_ids]
    if extra:
        raise InputError(
            pred.sources[0],
            FORMAT,
            f"{len(extra)} predicted dialogue(s) are not in the gold files",
            dialogue_id=extra[0],
        )
    both = gold.turns[["dialogue_id", "turn_index", "user"]].merge(
        pred.turns[["dialogue_id", "turn_index", "user"]], on=["dialogue_id", "turn_index"], suffixes=("", "_pred")
    )
    differ = both[both["user"] != both["user_pred"]]
    if len(differ):
        row = differ.iloc[0]
        raise InputError(
            pred.sources[0],
            FORMAT,
            f"user utterance differs from the gold one ({row['user_pred']!r} vs {row['user']!r}): "
            "predictions must be copies of the gold dialogues",
            dialogue_id=str(row["dialogue_id"]),
            turn=int(row["turn_index"]),
            field="utterance",
        )


def _tagging(merged: pd.DataFrame, turns: pd.DataFrame, schema: Schema) -> np.ndarray:
    """Slot tagging F1 / precision / recall per frame; NaN where the predicted frame has no spans."""
    out = np.full((len(merged), 3), np.nan)
    hyps = merged["pred_spans"].tolist()
    scored = [i for i, hyp in enumerate(hyps) if isinstance(hyp, tuple)]
    if not scored:
        return out
    refs = merged["spans"].tolist()
    same = [i for i in scored if refs[i] == hyps[i]]  # identical span lists: every score 1
    out[same] = 1.0
    rest = [i for i in scored if refs[i] != hyps[i]]
    if not rest:
        return out
    utterances = dict(
        zip(
            zip(turns["dialogue_id"].tolist(), turns["turn_index"].tolist(), strict=True),
            turns["user"].tolist(),
            strict=True,
        )
    )
    ids, turn_indices, services = (merged[c].tolist() for c in ("dialogue_id", "turn_index", "service"))
    noncat = {
        name: frozenset(n for n, c in zip(s.slots, s.categorical, strict=True) if not c)
        for name, s in schema.services.items()
    }
    for i in rest:
        names = noncat[services[i]]
        utt = utterances[(ids[i], turn_indices[i])]
        ref_items = tuple((s, utt[a:b]) for s, a, b in (refs[i] or ()) if s in names)
        hyp_items = tuple((s, utt[a:b]) for s, a, b in hyps[i] if s in names)
        out[i] = _f1(ref_items, hyp_items)  # type: ignore[arg-type]
    return out


def _slot_scores(merged: pd.DataFrame, schema: Schema, services: list[str]) -> pd.DataFrame:
    """One row per (gold frame, schema slot) present in the gold or the predicted state, in schema
    order, with the slot's score under rules 4-6. A schema slot absent on both sides scores 1 and
    changes no product and no average: it has no row. Slots outside the schema are ignored."""
    position = {
        name: {slot: (k, cat) for k, (slot, cat) in enumerate(zip(s.slots, s.categorical, strict=True))}
        for name, s in schema.services.items()
    }
    gold_values = merged["slot_values"].tolist()
    pred_values = [v if isinstance(v, dict) else {} for v in merged["pred_slot_values"].tolist()]
    frame: list[int] = []
    order: list[int] = []
    slot_name: list[str] = []
    categorical: list[bool] = []
    gold: list[tuple[str, ...] | None] = []
    pred_lists: list[Any] = []
    for f, (service, g, p) in enumerate(zip(services, gold_values, pred_values, strict=True)):
        slots_of = position[service]
        for slot in g.keys() | p.keys() if p else g:
            entry = slots_of.get(slot)
            if entry is None:
                continue
            frame.append(f)
            order.append(entry[0])
            slot_name.append(slot)
            categorical.append(entry[1])
            gold.append(g.get(slot))
            pred_lists.append(p.get(slot))
    sort = np.lexsort((np.array(order, dtype=np.int64), np.array(frame, dtype=np.int64)))
    take = sort.tolist()
    gold = [gold[i] for i in take]
    pred: list[str | None] = [pred_lists[i][0] if pred_lists[i] else None for i in take]
    is_cat = np.array(categorical, dtype=bool)[sort]
    active = np.array([v is not None for v in gold], dtype=bool)
    predicted = np.array([v is not None for v in pred], dtype=bool)
    score = np.zeros(len(take))
    cache: dict[tuple[tuple[str, ...], str], float] = {}
    keys: dict[str, str] = {}
    for i in np.flatnonzero(active & predicted).tolist():
        ref, hyp = gold[i], pred[i]
        assert ref is not None and hyp is not None
        if is_cat[i]:
            score[i] = float(ref[0] == hyp)
            continue
        value = cache.get((ref, hyp))
        if value is None:
            for text in (hyp, *ref):
                if text not in keys:
                    keys[text] = fuzzy_key(text)
            value = max(key_score(keys[r], keys[hyp]) for r in ref)
            cache[(ref, hyp)] = value
        score[i] = value
    return pd.DataFrame(
        {
            "frame": np.array(frame, dtype=np.int64)[sort],
            "slot": pd.array(np.array(slot_name, dtype=object)[sort], dtype="str"),
            "categorical": is_cat,
            "active": active,
            "predicted": predicted,
            "score": score,
            "gold": gold,
            "pred": pred,
        }
    )


def _goal_accuracies(slots: pd.DataFrame, services: list[str], schema: Schema) -> pd.DataFrame:
    """Per frame: mean over active slots (average), product over the service's schema slots (joint),
    each also per categorical / non-categorical; NaN where no slot qualifies (the evaluator's "NA")."""
    n = len(services)
    frame = slots["frame"].to_numpy()
    score = slots["score"].to_numpy()
    active = slots["active"].to_numpy()
    cat = slots["categorical"].to_numpy()
    kinds = {
        name: (len(s.slots) > 0, any(s.categorical), not all(s.categorical)) for name, s in schema.services.items()
    }
    has_kind = np.array([kinds[s] for s in services], dtype=bool).reshape(n, 3)
    out = {}
    for k, (suffix, subset) in enumerate((("goal", np.ones(len(slots), dtype=bool)), ("cat", cat), ("noncat", ~cat))):
        chosen = subset & active
        total = np.bincount(frame[chosen], weights=score[chosen], minlength=n)
        count = np.bincount(frame[chosen], minlength=n)
        out[f"average_{suffix}_accuracy"] = np.where(count > 0, total / np.maximum(count, 1), np.nan)
        # The product over the schema's slots (rows in schema order, absent-on-both slots being 1);
        # NaN for a service without such a slot. Scores are in [0, 1]: multiplied, not log-summed.
        prod = np.ones(n)
        np.multiply.at(prod, frame[subset], score[subset])
        out[f"joint_{suffix}_accuracy"] = np.where(has_kind[:, k], prod, np.nan)
    return pd.DataFrame(out)


def _aggregate(frames: pd.DataFrame, with_seen: bool) -> dict[str, dict[str, float]]:
    """Means over frames per collection, keys as the evaluator's JSON (sorted)."""
    values = frames[list(METRICS)]
    groups: list[tuple[str, pd.Series | None]] = [(ALL_SERVICES, None)]
    if with_seen:
        seen = frames["seen"].astype(bool)
        groups += [(SEEN_SERVICES, seen), (UNSEEN_SERVICES, ~seen)]
    table: dict[str, dict[str, float]] = {}
    for name, mask in groups:
        part = values if mask is None else values[mask.to_numpy()]
        if len(part):
            table[name] = _means(part.mean())
    for column in ("service", "domain"):
        means = values.groupby(frames[column].to_numpy(), sort=True).mean()
        for key, row in means.iterrows():
            table[str(key)] = _means(row)
    return dict(sorted(table.items()))


def _means(row: pd.Series) -> dict[str, float]:
    return {str(k): float(v) for k, v in sorted(row.items()) if not math.isnan(v)}


def official_json(result: SgdResult) -> dict[str, Any]:
    """The table as the evaluator's output file holds it (`json.dump(..., sort_keys=True)`)."""
    return {k: dict(sorted(v.items())) for k, v in sorted(result.table.items())}


def add_to_suite(
    result: dict[str, Any],
    *,
    pred: str | Path,
    gold: str | Path,
    schema: str | Path | None,
    train_schema: str | Path | None = None,
) -> SgdResult:
    """Put the evaluator's numbers into a `metrics --json` object scored under the `sgd` convention.

    `result["sgd"]` is the evaluator's table (`{collection: {metric: value}}`); `jga`, `aga` and
    `per_domain_jga` become its #ALL_SERVICES joint / average goal accuracy and per-service joint goal
    accuracy, so nothing printed under the name `sgd` differs from the evaluator. The generic per-turn
    values they replace (binary per-slot outcomes over all services of a user turn) move to
    `result["sgd_outcomes"]`. `schema` None looks for `schema.json[.gz]` beside the gold files.
    """
    from analysis.formats.sgd_files import schema_beside

    schema_path = Path(schema) if schema is not None else schema_beside(gold)
    if schema_path is None:
        raise InputError(
            str(gold),
            FORMAT,
            "the sgd convention scores with the SGD evaluator, which needs the evaluated split's schema: "
            "pass --schema schema.json (and --train-schema for seen / unseen); none found beside the gold files",
        )
    scored = evaluate(gold, pred, schema_path, train_schema)
    overall = scored.table.get(ALL_SERVICES, {})
    result["sgd_outcomes"] = {
        "jga": result.get("jga"),
        "aga": result.get("aga"),
        "per_domain_jga": result.get("per_domain_jga"),
        "note": "per user turn over all its services, each slot right or wrong (the sgd convention's binary "
        "comparison): not the SGD evaluator's numbers, which are under `sgd`, `jga` and `aga`",
    }
    result["jga"] = overall.get("joint_goal_accuracy")
    result["aga"] = overall.get("average_goal_accuracy")
    result["per_domain_jga"] = {
        s: scored.table[s].get("joint_goal_accuracy") for s in sorted(scored.frames["service"].unique())
    }
    result["sgd"] = official_json(scored)
    result["sgd_frames"] = {
        "frames": len(scored.frames),
        "missing_pred_frames": scored.missing_frames,
        "ignored_pred_frames": scored.ignored_pred_frames,
        "schema": str(schema_path),
        "train_schema": None if train_schema is None else str(train_schema),
    }
    return scored


def table_lines(result: dict[str, Any]) -> list[str]:
    """The evaluator's block of the `metrics` table: its headline metrics for all / seen / unseen services
    (its per-service joint goal accuracy is the table's per-domain JGA)."""
    table = result["sgd"]
    frames = result["sgd_frames"]
    columns = [c for c in (ALL_SERVICES, SEEN_SERVICES, UNSEEN_SERVICES) if c in table]
    names = {ALL_SERVICES: "all", SEEN_SERVICES: "seen", UNSEEN_SERVICES: "unseen"}
    lines = [
        "",
        f"SGD evaluator (schema_guided_dst): {frames['frames']} frames"
        + (
            f", {frames['missing_pred_frames']} without a predicted frame (scored empty)"
            if frames["missing_pred_frames"]
            else ""
        )
        + ("" if SEEN_SERVICES in table or UNSEEN_SERVICES in table else "; no --train-schema: no seen/unseen split"),
        "  " + " " * 24 + "".join(f"{names[c]:>9}" for c in columns),
    ]
    for metric in HEADLINE:
        cells = "".join(f"{table[c][metric]:>9.4f}" if metric in table[c] else f"{'n/a':>9}" for c in columns)
        lines.append(f"  {metric:<24}{cells}")
    return lines
