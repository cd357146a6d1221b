"""The full metric suite of one scored run as one JSON-ready dict: what the CLI prints and pages show."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from analysis import metrics as M
from analysis import registry as R
from analysis import scorer_inputs
from analysis.outcomes import Outcome
from analysis.scoring import Scored

# Kept for callers: the labels (`analysis.registry.LABELS`) and the headline metrics computed by a function
# of their own, as (key, function, label); the micro P/R/F1 share `slot_prf_micro`.
LABELS = R.LABELS
HEADLINE: tuple[tuple[str, Any, str], ...] = tuple(
    (m.name, m.function, m.label) for m in R.METRICS if m.column == m.name
)


def not_applicable(scored: Scored) -> dict[str, str]:
    """The headline metrics whose definition does not apply to these runs, each with the reason; their
    values are NaN, shown as "n/a" (JSON null) beside this reason, never as a number.

    >>> from analysis.demo.testing import scored_from_states
    >>> sorted(m for m in not_applicable(scored_from_states([{"景点": {"名称": "故宫"}}], [{}], convention="trade"))
    ...        if not m.startswith("dstc10_"))  # DSTC10's own P/R/F1: n/a outside its convention
    ['slot_accuracy', 'slot_accuracy_trade']
    """
    return R.not_applicable(scored)


def not_applicable_text(reasons: dict[str, str]) -> str:
    """One line for a caption or a table cell: the metrics (as labelled) and why they are n/a.

    >>> not_applicable_text({"slot_accuracy": "no fit", "aga": "no fit"})
    'Slot accuracy, AGA n/a: no fit'
    """
    by_reason: dict[str, list[str]] = {}
    for key, reason in reasons.items():
        by_reason.setdefault(reason, []).append(LABELS.get(key, key))
    return "; ".join(f"{', '.join(labels)} n/a: {reason}" for reason, labels in by_reason.items())


def _clean(value: Any) -> Any:
    """JSON-safe: NaN becomes None, numpy scalars plain Python."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def off_vocabulary(scored: Scored, *, examples: int = 5) -> dict[str, Any]:
    """The predicted slots whose (domain, slot) the gold file and the ontology never use (scored as wrong
    predictions): how many, and the first `examples` as `domain-slot=value` with their dialogue and turn.

    >>> from analysis.demo.testing import scored_from_states
    >>> scored = scored_from_states([{"hotel": {"area": "east"}}], [{"hotel": {"wifi": "yes"}}], convention="trade")
    >>> off_vocabulary(scored)["count"]
    1
    """
    rows = scored.slots[scored.slots["outcome"] == Outcome.OFF_VOCABULARY.key].head(examples)
    count = int((scored.slots["outcome"] == Outcome.OFF_VOCABULARY.key).sum())
    shown = [
        {"domain": d, "slot": s, "value": v, "dialogue_id": i, "turn_index": int(t)}
        for d, s, v, i, t in zip(
            rows["domain"], rows["slot"], rows["pred_display"], rows["dialogue_id"], rows["turn_index"], strict=True
        )
    ]
    return {"count": count, "examples": shown}


def headline_metrics(scored: Scored) -> dict[str, float]:
    """Every headline number of one run (or the pooled runs) under its convention, in registry order."""
    return R.values(scored)


def metric_suite(scored: Scored, *, group_by: str | None = None) -> dict[str, Any]:
    """The CLI's `metrics --json` object; values are fractions in [0, 1]. A metric whose definition does
    not apply (`not_applicable`) is null, and `not_applicable` maps it to the reason."""
    turns = scored.turns
    result: dict[str, Any] = {
        "n_dialogues": int(turns[["run_id", "dialogue_id"]].drop_duplicates().shape[0]),
        "n_turns": len(turns),
        "convention": scored.convention.name,
        "subtask": scored.convention.subtask or None,  # DSTC9's, chosen from the data
        "runs": [m.to_dict() for m in scored.metas],
    }
    result.update(headline_metrics(scored))
    for group, names in R.GROUPED.items():  # "fga": {"0.25": ..., "0.5": ..., ...} beside the flat keys
        result[group] = {name.removeprefix(f"{group}_"): result[name] for name in names}
    result["not_applicable"] = not_applicable(scored)
    for name in R.left_out(scored):  # another scorer's own numbers (DSTC10's P/R/F1 outside dstc10)
        result.pop(name, None)
    # Turns whose predicted text did not parse (LLM files), and every slot outcome, theirs included.
    result["unparseable_turns"] = int(turns["pred_unparseable"].sum()) if "pred_unparseable" in turns else 0
    result["outcomes"] = {k: int(v) for k, v in scored.slots["outcome"].value_counts(sort=False).items()}
    result["off_vocabulary"] = off_vocabulary(scored)
    by_turn = M.jga_by_turn_depth(scored)
    result["jga_by_turn"] = {int(t): v for t, v in zip(by_turn["turn_index"], by_turn["jga"], strict=True)}
    per_domain = M.joint_goal_accuracy(scored, by="domain")
    assert isinstance(per_domain, pd.DataFrame)
    result["per_domain_jga"] = dict(zip(per_domain["domain"], per_domain["jga"], strict=True))
    per_slot = M.per_slot_prf(scored).sort_values(["domain", "slot"])
    result["per_slot"] = {
        f"{d}-{s}": {"precision": p, "recall": r, "f1": f, "support": int(n)}
        for d, s, p, r, f, n in zip(
            per_slot["domain"],
            per_slot["slot"],
            per_slot["precision"],
            per_slot["recall"],
            per_slot["f1"],
            per_slot["support"],
            strict=True,
        )
    }
    result["alignment"] = scored.alignment if len(scored.metas) > 1 else next(iter(scored.alignment.values()), {})
    result["gold_input"] = gold_inputs(scored)
    lead = R.scorer_metrics(scored.convention.name)
    if lead:  # what the scorer prints, in its order and under its names: shown first
        result["scorer_metrics"] = {
            "heading": R.scorer_heading(scored.convention.name),
            "metrics": [{"metric": name, "name": label} for name, label in lead],
        }
    unread = R.unread_gold(scored)
    if unread:  # a scorer's name over gold it never reads: no number under that name, per turn or slot either
        result["unread_gold"] = unread
        result["jga_by_turn"] = {t: None for t in result["jga_by_turn"]}
        result["per_domain_jga"] = {d: None for d in result["per_domain_jga"]}
        result["per_slot"] = {
            k: dict.fromkeys(v, None) | {"support": v["support"]} for k, v in result["per_slot"].items()
        }
    if group_by:
        groups = M.joint_goal_accuracy(scored, by=group_by)
        assert isinstance(groups, pd.DataFrame)
        result["group_by"] = group_by
        result["groups"] = {
            str(g): {"jga": j, "n_turns": int(n)}
            for g, j, n in zip(groups[group_by], groups["jga"], groups["n_turns"], strict=True)
        }
        if unread:
            result["groups"] = {g: {"jga": None, "n_turns": v["n_turns"]} for g, v in result["groups"].items()}
    return _clean(result)


def gold_inputs(scored: Scored) -> dict[str, dict[str, str]]:
    """Per run, how the convention's scorer met its gold (`analysis.scorer_inputs`): `status` (as given,
    prepared, n/a) and `note`; empty for a convention named after no scorer."""
    out = {}
    for run_id, alignment in scored.alignment.items():
        found = (alignment.get("notes") or {}).get(scorer_inputs.NOTE)
        if isinstance(found, dict):
            out[run_id] = {"status": str(found.get("status", "")), "note": str(found.get("note", ""))}
    return out
