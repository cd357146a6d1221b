"""The SGD evaluator (google-research `schema_guided_dst/evaluate.py` + `metrics.py`), re-implemented.

Rules (each pinned by a test against the evaluator's own output):

1. Every score is a mean over frames (one service in one user turn), not over slots.
2. Only gold frames count: a predicted frame for a service the gold turn lacks is ignored; no state is
   carried forward. A gold frame without a predicted frame crashes the official code; here it is scored
   as an empty prediction (no intent, no requested slot, no slot value, no span list) and counted in
   `SgdResult.missing_frames` (the frame's `pred_missing` is True). A predicted dialogue the gold lacks
   is refused, as the evaluator refuses it; so is a user utterance that differs from the gold one.
3. Seen / unseen is per frame: a service in both the evaluated and the training schema is seen.
4. Joint accuracy covers every slot of the service's schema (absent on both sides = 1, spurious or
   missing = 0); average accuracy only the slots present in gold.
5. Categorical slots: the first predicted value equals the first gold value (case-sensitive).
6. Non-categorical slots: the best fuzzy score of the first predicted value against any gold value,
   fuzzywuzzy's `token_sort_ratio` (with python-Levenshtein) / 100: characters U+0080..U+00FF deleted,
   non-word characters to spaces, lower-cased, words sorted, then the Indel ratio rounded to a whole
   percent. A frame's joint score is the product of its slots' scores.
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
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from rapidfuzz.distance import Indel

from analysis.errors import InputError
from analysis.sgd.reading import FORMAT, Schema, SgdDialogues, read_dialogues, read_schema

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

_HIGH_LATIN1 = dict.fromkeys(range(128, 256))
_NON_WORD = re.compile(r"(?ui)\W")


def fuzzy_key(value: str) -> str:
    """A value as fuzzywuzzy's `token_sort_ratio` compares it (force_ascii, full_process, words sorted).

    >>> fuzzy_key("The Café, Rome!")
    'caf rome the'
    """
    text = _NON_WORD.sub(" ", value.translate(_HIGH_LATIN1)).lower().strip()
    return " ".join(sorted(text.split()))


def fuzzy_score(ref: str, hyp: str) -> float:
    """The evaluator's non-categorical score of one pair, in [0, 1], a whole percent.

    >>> fuzzy_score("6 pm", "6 PM"), fuzzy_score("Lan Hong House", "Ian Hong House")
    (1.0, 0.93)
    """
    return _key_score(fuzzy_key(ref), fuzzy_key(hyp))


def _key_score(a: str, b: str) -> float:
    if a == b:
        return 1.0
    if not a or not b:
        return 0.0
    total = len(a) + len(b)
    # python-Levenshtein's ratio is (lensum - indel distance) / lensum; fuzzywuzzy rounds 100 * ratio.
    return round(100 * ((total - Indel.distance(a, b)) / total)) / 100.0


@dataclass
class SgdResult:
    """What the evaluator computes, plus what it leaves implicit.

    - `table`: `{collection: {metric: value}}` exactly as the evaluator's output JSON (metrics without
      any value in a collection are absent).
    - `frames`: one row per gold USER frame: `dialogue_id`, `turn_index`, `service`, `domain`, `seen`
      (bool; None without a training schema), `pred_missing`, and one float column per metric of
      `METRICS` (NaN where the evaluator writes "NA").
    - `slots`: one row per (gold frame, schema slot): `frame` (row of `frames`), `slot`, `categorical`,
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
    if not ref and not hyp:
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

    services = merged["service"].to_numpy(dtype=object)
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
    frames = pd.concat([frames, _goal_accuracies(slots, n)], axis=1)
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
    utterances = dict(zip(zip(turns["dialogue_id"], turns["turn_index"], strict=True), turns["user"], strict=True))
    out = np.full((len(merged), 3), np.nan)
    rows = zip(
        merged["dialogue_id"],
        merged["turn_index"],
        merged["service"],
        merged["spans"],
        merged["pred_spans"],
        strict=True,
    )
    noncat: dict[str, frozenset[str]] = {}
    for i, (dialogue_id, turn, service, ref, hyp) in enumerate(rows):
        if not isinstance(hyp, tuple):
            continue
        names = noncat.get(service)
        if names is None:
            s = schema[service]
            names = noncat[service] = frozenset(n for n, c in zip(s.slots, s.categorical, strict=True) if not c)
        utt = utterances[(dialogue_id, turn)]
        ref_items = tuple((s, utt[a:b]) for s, a, b in (ref or ()) if s in names)
        hyp_items = tuple((s, utt[a:b]) for s, a, b in hyp if s in names)
        out[i] = _f1(ref_items, hyp_items)  # type: ignore[arg-type]
    return out


def _slot_scores(merged: pd.DataFrame, schema: Schema, services: np.ndarray) -> pd.DataFrame:
    """One row per (frame, schema slot) with the slot's score under rules 4-6."""
    codes, names = pd.factorize(pd.Series(services, dtype=object))
    per_service = [schema[str(s)] for s in names]
    counts = np.array([len(s.slots) for s in per_service], dtype=np.int64)[codes]
    frame = np.repeat(np.arange(len(merged)), counts)
    empty_names: list[np.ndarray] = [np.zeros(0, dtype=object)]
    empty_flags: list[np.ndarray] = [np.zeros(0, dtype=bool)]
    slot_name = np.concatenate(empty_names + [np.array(per_service[c].slots, dtype=object) for c in codes])
    categorical = np.concatenate(empty_flags + [np.array(per_service[c].categorical, dtype=bool) for c in codes])
    gold_values = merged["slot_values"].tolist()
    pred_values = [v if isinstance(v, dict) else {} for v in merged["pred_slot_values"].tolist()]
    at = list(zip(frame.tolist(), slot_name.tolist(), strict=True))
    gold: list[tuple[str, ...] | None] = [gold_values[f].get(s) for f, s in at]
    pred_lists: list[tuple[str, ...] | None] = [pred_values[f].get(s) for f, s in at]
    pred = [v[0] if v else None for v in pred_lists]
    active = np.array([v is not None for v in gold], dtype=bool)
    predicted = np.array([v is not None for v in pred_lists], dtype=bool)
    score = np.where(active | predicted, 0.0, 1.0)
    cache: dict[tuple[tuple[str, ...], str], float] = {}
    keys: dict[str, str] = {}
    for i in np.flatnonzero(active & predicted).tolist():
        ref, hyp = gold[i], pred[i]
        assert ref is not None and hyp is not None
        if categorical[i]:
            score[i] = float(ref[0] == hyp)
            continue
        value = cache.get((ref, hyp))
        if value is None:
            for text in (hyp, *ref):
                if text not in keys:
                    keys[text] = fuzzy_key(text)
            value = max(_key_score(keys[r], keys[hyp]) for r in ref)
            cache[(ref, hyp)] = value
        score[i] = value
    return pd.DataFrame(
        {
            "frame": frame,
            "slot": pd.array(slot_name, dtype="str"),
            "categorical": categorical,
            "active": active,
            "predicted": predicted,
            "score": score,
            "gold": gold,
            "pred": pred,
        }
    )


def _goal_accuracies(slots: pd.DataFrame, n: int) -> pd.DataFrame:
    """Per frame: mean over active slots (average), product over all slots (joint), each also per
    categorical / non-categorical; NaN where no slot qualifies (the evaluator's "NA")."""
    frame = slots["frame"].to_numpy()
    score = slots["score"].to_numpy()
    active = slots["active"].to_numpy()
    cat = slots["categorical"].to_numpy()
    out = {}
    for suffix, subset in (("goal", np.ones(len(slots), dtype=bool)), ("cat", cat), ("noncat", ~cat)):
        chosen = subset & active
        total = np.bincount(frame[chosen], weights=score[chosen], minlength=n)
        count = np.bincount(frame[chosen], minlength=n)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[f"average_{suffix}_accuracy"] = np.where(count > 0, total / np.maximum(count, 1), np.nan)
        # Products in schema order, like np.prod over the evaluator's list; a frame without any such
        # slot is NaN. Scores are in [0, 1]: log-sums would lose the exact 1.0, so multiply in place.
        prod = np.ones(n)
        np.multiply.at(prod, frame[subset], score[subset])
        has = np.bincount(frame[subset], minlength=n) > 0
        out[f"joint_{suffix}_accuracy"] = np.where(has, prod, np.nan)
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
