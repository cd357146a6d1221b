"""Every headline metric in one place: its name, label, function, direction, interval and where it applies.

The suite (`analysis.suite`: CLI JSON, leaderboard rows), the bootstrap (`analysis.stats`), the
reconciliation table, the report and the overview page read their metrics from `METRICS`; labels come
from here only. Adding a metric: write its function in `analysis.metrics` (a `Scored` and keyword-only
`by=`), add one `Metric` here, and `tests/test_registry.py` checks it is computed, labelled, resampled
and shown wherever it is selected.

>>> [m.name for m in METRICS][:3]
['jga', 'slot_f1_seed', 'slot_f1_domain_slot']
>>> LABELS["slot_accuracy_trade"]
'Slot accuracy (TRADE compute_acc)'
>>> get("slot_recall").function.__name__, get("slot_recall").column
('slot_prf_micro', 'recall')
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from analysis import dstc10_rules as DSTC10
from analysis import metrics as M
from analysis import scorer_inputs
from analysis.scoring import Scored

# How `analysis.stats` breaks a metric into per-dialogue sums for the dialogue bootstrap:
#   "turns": a mean over turns (numerator the per-turn score, denominator 1 per turn that counts);
#   "micro": micro P/R/F1 over slot rows (numerators and denominators from tp, fp, fn);
#   "cells": a ratio of ontology cells (numerator the correct cells, denominator the cells per turn);
#   "gca": GCA of its four label counts summed per dialogue (`metrics.gca_counts`, `metrics.gca_from_counts`).
Interval = Literal["turns", "micro", "cells", "gca"]


@dataclass(frozen=True)
class Metric:
    """One headline metric.

    `function(scored, by=None)` is the `analysis.metrics` function; its value is `column` of the result
    (the key of a dict without `by`, the column of the frame with `by`; a float result is the value).
    `higher_is_better` orders leaderboards. `shown` says whether the Overview leaderboard shows its column
    by default (every metric is a leaderboard column and a sort key; a hidden one shows when sorted by).
    `interval` says how the dialogue bootstrap resamples it
    (None: no interval). `applies_to(scored)` is None where the metric applies to every run, else a
    function that gives the reason it does not apply to these runs (None when it does); there the value
    is NaN, shown as "n/a" beside the reason.
    """

    name: str
    label: str
    function: Callable[..., Any]
    column: str = ""
    higher_is_better: bool = True
    interval: Interval | None = "turns"
    applies_to: Callable[[Scored], str | None] | None = None
    shown: bool = True
    # A scorer's own number, printed by that scorer only: outside this convention it is left out of the
    # command line's table and JSON (not listed as n/a on every other run).
    only_under: str | None = None

    def __post_init__(self) -> None:
        if not self.column:
            object.__setattr__(self, "column", self.name)

    def value(self, result: Any) -> float:
        """The metric's number in the function's result without `by`."""
        return float(result[self.column]) if isinstance(result, dict) else float(result)


METRICS: tuple[Metric, ...] = (
    Metric("jga", "JGA", M.joint_goal_accuracy),
    Metric("slot_f1_seed", "Slot F1 (CrossWOZ-en recipe)", M.slot_f1_seed, applies_to=M.values_missing),
    Metric("slot_f1_domain_slot", "Slot F1 (domain-slot keyed)", M.slot_f1_domain_slot, applies_to=M.values_missing),
    Metric("joint_f1_trade", "Joint F1 (TRADE)", M.joint_f1_trade, applies_to=M.values_missing),
    Metric("slot_accuracy", "Slot accuracy", M.slot_accuracy, interval="cells", applies_to=M.ontology_mismatch),
    Metric(
        "slot_accuracy_trade",
        "Slot accuracy (TRADE compute_acc)",
        M.slot_accuracy_trade,
        applies_to=M.ontology_mismatch,
    ),
    Metric("aga", "AGA", M.average_goal_accuracy, applies_to=M.values_missing),
    Metric("final_turn_jga", "Final-turn JGA", M.final_turn_jga),
    Metric(
        "slot_precision",
        "Slot precision (micro)",
        M.slot_prf_micro,
        "precision",
        interval="micro",
        applies_to=M.values_missing,
    ),
    Metric(
        "slot_recall", "Slot recall (micro)", M.slot_prf_micro, "recall", interval="micro", applies_to=M.values_missing
    ),
    Metric("slot_f1_micro", "Slot F1 (micro)", M.slot_prf_micro, "f1", interval="micro", applies_to=M.values_missing),
    # Robust to compounding (issue 16; definitions in docs/metrics.md): they judge a turn's own changes.
    Metric("iaga", "IAGA", M.improved_average_goal_accuracy, applies_to=M.values_missing),
    Metric("rsa", "RSA", M.relative_slot_accuracy, applies_to=M.values_missing),
    # Two FGA rules (Dey et al. 2022). `fga_*` judges a wrong turn by its new triples: it reproduces the
    # Granular_Change_Accuracy repository's numbers (its src/compute_accuracies.py; the FGA repository's
    # compute_accuracy_trade_somdst.py has the same rule) and needs values. `fga_sets_*` judges it by its
    # set of wrong slots, as the FGA repository's compute_accuracy_trippy.py scores TripPy's per-slot
    # correctness vectors; it needs no values (the `fga-trippy` convention's FGA).
    *(
        Metric(f"fga_{lam}", f"FGA (λ={lam})", M.FGA_AT[lam], shown=lam == 0.5, applies_to=M.values_missing)
        for lam in M.FGA_LAMBDAS
    ),
    *(
        Metric(f"fga_sets_{lam}", f"FGA by wrong-slot sets (λ={lam})", M.FGA_SETS_AT[lam], shown=False)
        for lam in M.FGA_LAMBDAS
    ),
    Metric("turn_accuracy", "Turn-level accuracy", M.turn_accuracy, applies_to=M.values_missing),
    # GCA as the GCA repository's src/gca.py counts it (a label changed on both sides of a turn counted twice
    # in three cases), and the one-count variant under a name of its own (docs/metrics.md says which is which).
    Metric("gca", "GCA", M.granular_change_accuracy, interval="gca", applies_to=M.values_missing),
    Metric(
        "gca_once",
        "GCA, each change once",
        M.granular_change_accuracy_once,
        interval=None,
        applies_to=M.values_missing,
        shown=False,
    ),
    # DSTC10 track 2 task 1's scores.py prints these beside JGA and slot accuracy (the `dstc10` convention).
    *(
        Metric(
            f"dstc10_{side}_{part}",
            f"DSTC10 {side} {'F1' if part == 'f1' else part}",
            DSTC10.value_prf if side == "value" else DSTC10.none_prf,
            f"{side}_{part}",
            interval=None,
            applies_to=DSTC10.not_dstc10,
            shown=False,
            only_under=DSTC10.CONVENTION,
        )
        for side in DSTC10.SIDES
        for part in DSTC10.PARTS
    ),
)
_BY_NAME = {m.name: m for m in METRICS}
NAMES: tuple[str, ...] = tuple(_BY_NAME)
LABELS: dict[str, str] = {m.name: m.label for m in METRICS}
INTERVAL_METRICS: tuple[str, ...] = tuple(m.name for m in METRICS if m.interval)
LEADERBOARD_SHOWN: tuple[str, ...] = tuple(m.name for m in METRICS if m.shown)  # the Overview's default columns
# Metrics whose function returns several (a dict without `by`): the suite's JSON also groups them under one
# key, e.g. "fga": {"0.25": ..., "1.0": ...}.
GROUPED: dict[str, tuple[str, ...]] = {
    "fga": tuple(f"fga_{lam}" for lam in M.FGA_LAMBDAS),
    "fga_sets": tuple(f"fga_sets_{lam}" for lam in M.FGA_LAMBDAS),
}

# What a scorer prints, in its order and under its own names (issue 39): under a convention named after it,
# the command line, the Overview and the report lead with these lines ("what mwzeval prints"), then the rest.
# convention -> (metric, the scorer's own name for it). Each scorer's source says its names:
SCORER_METRICS: dict[str, tuple[tuple[str, str], ...]] = {
    # mwzeval/metrics.py::get_dst's dict (its joint accuracy and F1 in percent there, fractions here)
    "mwzeval": (
        ("jga", "joint_accuracy"),
        ("slot_f1_micro", "slot_f1"),
        ("slot_precision", "slot_precision"),
        ("slot_recall", "slot_recall"),
    ),
    # convlab/dst/evaluate_unified_datasets.py::evaluate's dict
    "convlab3": (
        ("slot_f1_micro", "slot_f1"),
        ("slot_precision", "slot_precision"),
        ("slot_recall", "slot_recall"),
        ("jga", "accuracy"),
    ),
    # convlab2/dst/dstc9/utils.py::eval_states: 'joint accuracy', then its 'slot' dict
    **{
        name: (
            ("jga", "joint accuracy"),
            ("slot_accuracy", "slot accuracy"),
            ("slot_precision", "slot precision"),
            ("slot_recall", "slot recall"),
            ("slot_f1_micro", "slot f1"),
        )
        for name in ("dstc9", "dstc9-multiwoz", "dstc9-crosswoz")
    },
    # TRADE's evaluate_metrics, as its evaluate() prints them
    "trade": (("jga", "Joint Acc"), ("slot_accuracy_trade", "Turn Acc"), ("joint_f1_trade", "Joint F1")),
    # IC-DST's evaluate/evaluate_metrics.py, as its score.txt writes them
    "icdst": (("jga", "correct (joint accuracy)"), ("slot_accuracy_trade", "Slot Acc"), ("joint_f1_trade", "Joint F1")),
    # DSTC10 track 2 task 1's scores.py, its scores.json (slot: value_prediction and none_prediction prec/rec/f1)
    "dstc10": (
        ("jga", "joint_goal_accuracy"),
        ("slot_accuracy", "slot accuracy"),
        *(
            (f"dstc10_{side}_{part}", f"{side}_prediction {short}")
            for side in DSTC10.SIDES
            for part, short in zip(DSTC10.PARTS, ("prec", "rec", "f1"), strict=True)
        ),
    ),
    # CheckDST's checkdst_class.py: joint goal accuracy
    "checkdst": (("jga", "jga"),),
    # The SGD evaluator (google-research schema_guided_dst evaluate.py): its metrics file is json.dump(...,
    # sort_keys=True), metrics.py's names; of its #ALL_SERVICES lines, the two this registry holds (the
    # evaluator's own numbers under `sgd`: analysis.sgd), in that sorted order
    "sgd": (("aga", "average_goal_accuracy"), ("jga", "joint_goal_accuracy")),
    # SuvodipDey/FGA compute_accuracy_trippy.py's print lines: Joint Acc, Slot Acc, Avg. Goal Acc (from
    # som-dst_result.json's gold, which the vectors lack: n/a here), then FGA L=λ over the wrong-slot sets
    "fga-trippy": (
        ("jga", "Joint Acc"),
        ("slot_accuracy", "Slot Acc"),
        ("aga", "Avg. Goal Acc"),
        *((f"fga_sets_{lam}", f"FGA L={lam}") for lam in M.FGA_LAMBDAS),
    ),
    # X-RiSAWOZ's evaluation (the `dialogues` package's Risawoz.compute_result, as llm-xrisawoz's
    # compute_e2e.py writes e2e_dialogue_results.json): JGA first; its other lines (TSR, DSR, API_Acc, DA_Acc,
    # BLEU, SER) judge more than the state
    "risawoz": (("jga", "JGA"),),
}


def scorer_metrics(convention: str) -> tuple[tuple[str, str], ...]:
    """The metrics the scorer a convention is named after prints, in its order, with its names; () when the
    convention names no scorer or the scorer's lines are not declared.

    >>> [label for _, label in scorer_metrics("mwzeval")]
    ['joint_accuracy', 'slot_f1', 'slot_precision', 'slot_recall']
    """
    return SCORER_METRICS.get(convention, ())


def scorer_heading(convention: str) -> str:
    """The heading above a scorer's own lines: "what mwzeval prints"."""
    scorer = scorer_inputs.SCORERS.get(convention)
    return f"what {scorer.name if scorer else convention} prints"


# The selections of views that show some of the metrics, in their column order.
# The report's leaderboard, with CIs: the headline numbers, and the metrics that judge a turn's own changes.
REPORT_METRICS = ("jga", "final_turn_jga", "slot_f1_micro", "slot_accuracy", "fga_0.5", "turn_accuracy", "gca")
RECONCILE_METRICS = ("jga", "slot_f1_micro", "slot_accuracy", "slot_f1_seed")  # one run under each convention


def get(name: str) -> Metric:
    """The metric called `name`; a ValueError naming the known ones otherwise."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"metric has to be one of {', '.join(NAMES)}, got {name!r}") from None


def unread_gold(scored: Scored) -> str | None:
    """Why no metric applies to these runs: a convention named after a scorer over gold that scorer never
    reads (`analysis.scorer_inputs`); None when the scorer reads it (as given or prepared)."""
    return scorer_inputs.not_read(scored.alignment)


def values(scored: Scored, names: tuple[str, ...] | None = None) -> dict[str, float]:
    """The metrics `names` (default: all, in registry order) of one run or the pooled runs; a function
    shared by several metrics (micro P/R/F1) is called once. NaN, every one, where the convention's scorer
    never reads the run's gold (`unread_gold`)."""
    if unread_gold(scored):
        return {name: float("nan") for name in (NAMES if names is None else names)}
    results: dict[Callable[..., Any], Any] = {}
    out: dict[str, float] = {}
    for name in NAMES if names is None else names:
        metric = get(name)
        if metric.function not in results:
            results[metric.function] = metric.function(scored)
        out[name] = metric.value(results[metric.function])
    return out


def left_out(scored: Scored) -> list[str]:
    """The metrics that are another scorer's own numbers (`only_under` another convention): left out."""
    return [m.name for m in METRICS if m.only_under is not None and m.only_under != scored.convention.name]


def not_applicable(scored: Scored, names: tuple[str, ...] | None = None) -> dict[str, str]:
    """The metrics (of `names`, default all) whose definition does not apply to these runs, each with the
    reason; each check runs once however many metrics share it. Another scorer's own numbers (`left_out`)
    are not listed."""
    reasons: dict[Callable[[Scored], str | None], str | None] = {}
    out: dict[str, str] = {}
    skipped = set(left_out(scored))
    unread = unread_gold(scored)
    if unread:
        return {name: unread for name in (NAMES if names is None else names) if name not in skipped}
    for name in NAMES if names is None else names:
        if name in skipped:
            continue
        check = get(name).applies_to
        if check is None:
            continue
        if check not in reasons:
            reasons[check] = check(scored)
        reason = reasons[check]
        if reason:
            out[name] = reason
    return out
