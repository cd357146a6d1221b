"""The metric registry and the outcome enum are the one home of their vocabularies: every registered metric
is computed by the suite, labelled, resampled, and shown wherever a view selects it, so a metric added to
`analysis.registry` but not wired somewhere fails here."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import registry as R
from analysis import stats, views
from analysis.demo.testing import run_from_states, scored_from_states
from analysis.outcomes import ERROR_OUTCOMES, ERRORS, OUTCOMES, Outcome
from analysis.reconcile.core import METRIC_LABELS, reconcile
from analysis.scoring import OUTCOME_DTYPE
from analysis.suite import LABELS, headline_metrics, metric_suite, not_applicable, not_applicable_text

PAGES = Path(__file__).resolve().parent.parent / "pages"
GOLD = {
    "d1": [{"hotel": {"area": "east"}}, {"hotel": {"area": "east", "stars": "4"}}],
    "d2": [{"train": {"day": "monday"}}, {"train": {"day": "monday", "leaveat": "09:00"}}],
    "d3": [{"taxi": {"destination": "museum"}}],
}
PRED = {
    "d1": [{"hotel": {"area": "east"}}, {"hotel": {"area": "west", "stars": "4"}}],
    "d2": [{}, {"train": {"day": "monday", "leaveat": "09:00"}}],
    "d3": [{"taxi": {"destination": "museum", "departure": "station"}}],
}
METRICS = [m.name for m in R.METRICS]


@pytest.fixture(scope="module")
def scored():
    return scored_from_states(GOLD, PRED, run_id="sys")


def test_names_and_labels_are_unique_and_complete() -> None:
    assert len(set(METRICS)) == len(METRICS)
    labels = [m.label for m in R.METRICS]
    assert all(labels) and len(set(labels)) == len(labels)
    assert R.LABELS == LABELS == {m.name: m.label for m in R.METRICS}
    for selection in (R.REPORT_METRICS, R.RECONCILE_METRICS):
        assert set(selection) <= set(METRICS) and len(set(selection)) == len(selection)
    with pytest.raises(ValueError, match="metric has to be one of jga"):
        R.get("nope")


@pytest.mark.parametrize("name", METRICS)
def test_every_metric_is_computed_by_the_suite_as_its_function_gives_it(scored, name: str) -> None:
    metric = R.get(name)
    expected = metric.value(metric.function(scored))
    assert headline_metrics(scored)[name] == pytest.approx(expected, nan_ok=True)
    suite = metric_suite(scored)
    if metric.only_under is not None and metric.only_under != scored.convention.name:
        assert name not in suite  # another scorer's own number: left out, not n/a
    else:
        assert name in suite
        assert suite[name] == (None if math.isnan(expected) else pytest.approx(expected))
    grouped = metric.function(scored, by="run_id")  # the same number for the one run, grouped
    assert isinstance(grouped, pd.DataFrame) and metric.column in grouped.columns
    assert float(grouped[metric.column].iloc[0]) == pytest.approx(expected, nan_ok=True)


@pytest.mark.parametrize("name", METRICS)
def test_every_interval_metric_is_resampled_around_its_value(scored, name: str) -> None:
    metric = R.get(name)
    assert (name in stats.METRICS) == (metric.interval is not None)
    if metric.interval is None:
        return
    ci = stats.bootstrap_ci(scored, name, n_resamples=50)
    assert ci["estimate"] == pytest.approx(headline_metrics(scored)[name], nan_ok=True)
    assert ci["low"] <= ci["estimate"] <= ci["high"]


@pytest.mark.parametrize("name", METRICS)
def test_every_metric_is_a_leaderboard_column_and_sorts_it(scored, name: str) -> None:
    other = scored_from_states(GOLD, GOLD, run_id="perfect")
    board = views.leaderboard([scored, other], sort=name, resamples=0)
    assert name in views.LEADERBOARD_METRICS
    assert board.loc[board["run_id"] == "sys", name].iloc[0] == pytest.approx(
        headline_metrics(scored)[name], nan_ok=True
    )
    values = board[name].to_numpy(dtype=float)
    order = values if R.get(name).higher_is_better else -values
    known = order[~np.isnan(order)]  # a metric that does not apply to a run is NaN there, listed last
    assert list(known) == sorted(known, reverse=True)  # best first
    assert np.isnan(order[len(known) :]).all()


def test_the_overview_page_lists_the_registry_not_its_own_metrics() -> None:
    source = (PAGES / "overview.py").read_text(encoding="utf-8")
    assert "LEADERBOARD_METRICS" in source
    assert not [name for name in METRICS if f'"{name}"' in source]


def test_report_shows_each_selected_metric_with_its_label_and_interval(scored) -> None:
    from analysis.export import report

    assert tuple(report.CI_METRICS) == R.REPORT_METRICS
    assert all(R.get(name).interval for name in R.REPORT_METRICS)
    board = views.leaderboard([scored], resamples=0)
    cis = pd.concat(
        [stats.bootstrap_ci(scored, name, by="run_id", n_resamples=20) for name in R.REPORT_METRICS],
        ignore_index=True,
    )
    table, intervals = report.leaderboard_table(board, cis)
    for name in R.REPORT_METRICS:
        label = R.LABELS[name]
        assert intervals[label] == (f"{label} low", f"{label} high")
        assert table[label].iloc[0] == pytest.approx(headline_metrics(scored)[name], nan_ok=True)


def test_reconciliation_table_reads_the_registry() -> None:
    assert list(METRIC_LABELS) == list(R.RECONCILE_METRICS)
    assert {name: R.LABELS[name] for name in R.RECONCILE_METRICS} == METRIC_LABELS
    run = run_from_states(GOLD["d1"], PRED["d1"])
    rec = reconcile(run, ["exact", "mwzeval"])
    table = rec.table().set_index("convention")
    assert list(table.columns) == list(R.RECONCILE_METRICS)
    for convention in ("exact", "mwzeval"):
        suite = headline_metrics(rec.scored[convention])
        for name in R.RECONCILE_METRICS:
            assert table.loc[convention, name] == pytest.approx(suite[name], nan_ok=True)


def _not_applying_cases(tmp_path: Path) -> list:
    """Runs where some metrics do not apply: CrossWOZ slots under TRADE's 30-slot ontology, and a per-slot
    correctness file (no values) under its own convention."""
    from analysis.loading import load_run
    from analysis.scoring import score_run

    vectors = tmp_path / "vectors.json"
    vectors.write_text('{"MUL0001.json": {"0": [1, 0, 1], "1": [1, 0, 1]}}', encoding="utf-8")
    return [
        scored_from_states([{"景点": {"名称": "故宫"}}], [{}], convention="trade"),
        score_run(load_run(vectors)),
    ]


def test_a_metric_that_does_not_apply_is_nan_with_its_reason(tmp_path: Path) -> None:
    seen: set[str] = set()
    for scored in _not_applying_cases(tmp_path):
        reasons = not_applicable(scored)
        limited = [m.name for m in R.METRICS if m.applies_to is not None and m.applies_to(scored)]
        seen.update(limited)
        limited = [name for name in limited if name not in R.left_out(scored)]  # not listed: left out
        assert sorted(reasons) == sorted(limited)
        values = headline_metrics(scored)
        assert all(math.isnan(values[name]) for name in limited)
        # One clause per reason, each naming its metrics as labelled.
        by_reason: dict[str, list[str]] = {}
        for name in limited:
            by_reason.setdefault(reasons[name], []).append(R.LABELS[name])
        assert not_applicable_text(reasons) == "; ".join(f"{', '.join(n)} n/a: {r}" for r, n in by_reason.items())
    assert seen == {m.name for m in R.METRICS if m.applies_to is not None}  # every check is exercised


# --- outcomes --------------------------------------------------------------------------------------


def test_outcome_codes_are_the_categorical_codes(scored) -> None:
    assert list(OUTCOME_DTYPE.categories) == list(OUTCOMES) == [o.key for o in Outcome]
    assert [int(o) for o in Outcome] == list(range(len(Outcome)))
    assert ERRORS == (
        Outcome.WRONG_VALUE,
        Outcome.MISSED,
        Outcome.SPURIOUS,
        Outcome.UNPARSEABLE,
        Outcome.OFF_VOCABULARY,
    )
    assert ERROR_OUTCOMES == ("wrong_value", "missed", "spurious", "unparseable", "off_vocabulary")
    slots = scored.slots
    codes = slots["outcome"].cat.codes.to_numpy()
    for outcome in Outcome:
        np.testing.assert_array_equal(codes == outcome, (slots["outcome"] == outcome.key).to_numpy())
        assert Outcome.of(outcome.key) is outcome
        assert outcome.label and outcome.marker and outcome.colour.startswith("#")
    assert len({o.marker for o in Outcome}) == len({o.colour for o in Outcome}) == len(Outcome)
    assert {o.key: o.label for o in Outcome} == views.OUTCOME_LABELS
