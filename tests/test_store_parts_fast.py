"""The store's per-dialogue bootstrap parts (`analysis.store.parts.dialogue_parts`) read most metrics'
per-turn parts grouped by `tid` instead of the turn key (issue 21, requirement 4: speed). They must be the
very arrays `stats._stats` builds, bit for bit, so the stored intervals equal `stats.bootstrap_ci`."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis import stats
from analysis.loading import load_run
from analysis.scoring import Scored, score_run
from analysis.store import parts
from analysis.workspace import load_entry, read_manifest
from tests.conftest import ROOT, realdata_path

DEMO = ROOT / "data" / "demo" / "workspace.toml"
CASES = [
    ("simulated-A-mwz-en-predicted", "exact"),
    ("simulated-A-mwz-en-predicted", "trade"),
    ("simulated-B-mwz-en-predicted-s1", "mwzeval"),
    ("crosswoz-rule-dst", None),
    ("crosswoz-rule-dst", "dstc9"),  # a listed ontology: slot accuracy's cells per turn
]


@pytest.fixture(scope="module")
def demo_entries():
    return {e.name: e for e in read_manifest(DEMO).entries}


def _same_stats(a: stats._Stats, b: stats._Stats, what: str) -> None:
    for field in ("num", "den", "rows", "counts"):
        x, y = getattr(a, field), getattr(b, field)
        assert (x is None) == (y is None), (what, field)
        if x is not None:
            assert x.shape == y.shape, (what, field)
            assert np.array_equal(x, y, equal_nan=True), (what, field)  # exactly, not within a tolerance


def _check(scored: Scored) -> None:
    dialogues = stats._dialogues(scored)
    order = parts._turn_order(scored, dialogues)
    assert order is not None
    assert parts._BY_TID, "no metric takes the tid path"
    for name in sorted(parts._BY_TID):
        _same_stats(stats._stats(scored, name, [], dialogues), parts._stats_by_tid(scored, name, order), name)
    slow, fast = parts._micro_parts(scored, dialogues), parts._micro_parts(scored, dialogues, order)
    for metric, arrays in slow.items():
        for key, values in arrays.items():
            assert np.array_equal(values, fast[metric][key], equal_nan=True), (metric, key)


@pytest.mark.parametrize(("name", "convention"), CASES)
def test_tid_path_equals_stats_on_demo_runs(demo_entries, name, convention):
    _check(score_run(load_entry(demo_entries[name]), convention))


@pytest.mark.realdata
def test_tid_path_equals_stats_on_real_files():
    gold = realdata_path("multiwoz21", "test.json.zip")
    run = load_run(realdata_path("mwzeval_outputs", "augpt.json"), gold)
    for convention in ("mwzeval", "trade"):
        _check(score_run(run, convention))


def test_dialogue_parts_equal_the_group_by_path(demo_entries, monkeypatch):
    scored = score_run(load_entry(demo_entries["simulated-A-mwz-en-predicted"]), "trade")
    fast = parts.dialogue_parts(scored)
    monkeypatch.setattr(parts, "_turn_order", lambda scored, dialogues: None)
    slow = parts.dialogue_parts(score_run(load_entry(demo_entries["simulated-A-mwz-en-predicted"]), "trade"))
    pd.testing.assert_frame_equal(fast, slow, check_exact=True)


def test_a_turn_key_named_twice_is_left_to_the_group_by_path(demo_entries):
    scored = score_run(load_entry(demo_entries["simulated-A-mwz-en-predicted"]), "exact")
    turns = scored.turns.copy()
    ids = turns["dialogue_id"].drop_duplicates().tolist()
    turns.loc[turns["dialogue_id"] == ids[1], "dialogue_id"] = ids[0]  # both dialogues have a turn 0
    twice = Scored(scored.convention, scored.metas, turns, scored.slots, scored.ontology, scored.alignment)
    # Loading refuses such files (a duplicate turn); should one reach the store, the tid path steps aside.
    assert parts._turn_order(twice, stats._dialogues(twice)) is None
    assert parts._turn_order(scored, stats._dialogues(scored)) is not None


# --- the Turn depth view's metrics summed from per-turn numbers, and `_aggregate` by `tid` ---------------


def _depth_both_ways(scored: Scored, monkeypatch: pytest.MonkeyPatch) -> tuple[pd.DataFrame, pd.DataFrame]:
    from analysis import views

    fast = views.depth_metrics([scored])
    with monkeypatch.context() as m:
        m.setattr(views.depth, "_depth_from_turns", lambda scored, keys: None)
        slow = views.depth_metrics([scored])
    return fast, slow


@pytest.mark.parametrize(("name", "convention"), CASES)
def test_depth_metrics_from_per_turn_numbers_equal_the_group_by(demo_entries, name, convention, monkeypatch):
    fast, slow = _depth_both_ways(score_run(load_entry(demo_entries[name]), convention), monkeypatch)
    assert list(fast.columns) == list(slow.columns) and len(fast) > 3
    assert fast[["iaga", "rsa", "gca"]].notna().any().all()  # something is compared, not only NaN
    pd.testing.assert_frame_equal(fast, slow, check_exact=False, rtol=1e-12, atol=1e-12)


@pytest.mark.realdata
def test_depth_metrics_from_per_turn_numbers_on_real_files(monkeypatch):
    gold = realdata_path("multiwoz21", "test.json.zip")
    run = load_run(realdata_path("mwzeval_outputs", "augpt.json"), gold)
    for convention in ("mwzeval", "trade"):
        fast, slow = _depth_both_ways(score_run(run, convention), monkeypatch)
        pd.testing.assert_frame_equal(fast, slow, check_exact=False, rtol=1e-12, atol=1e-12)


def test_depth_metrics_of_a_turn_id_named_twice_take_the_group_by(demo_entries):
    from analysis import views

    scored = score_run(load_entry(demo_entries["simulated-A-mwz-en-predicted"]), "exact")
    turns = scored.turns.copy()
    turns.loc[turns.index[1], "tid"] = turns["tid"].iloc[0]
    twice = Scored(scored.convention, scored.metas, turns, scored.slots, scored.ontology, scored.alignment)
    assert views.depth._depth_from_turns(twice, ["run_id", "turn_index"]) is None
    assert views.depth._depth_from_turns(scored, ["run_id", "turn_index"]) is not None


@pytest.mark.parametrize(("name", "convention"), CASES)
def test_aggregate_by_tid_lookup_equals_the_group_by_bit_for_bit(demo_entries, name, convention, monkeypatch):
    from analysis import metrics as M
    from analysis import registry as R

    scored = score_run(load_entry(demo_entries[name]), convention)
    functions = {m.function for m in R.METRICS} | {M.gca_counts}
    looked_up = 0
    real = M._one_row_per_turn

    def counting(*args):
        nonlocal looked_up
        found = real(*args)
        looked_up += found is not None
        return found

    for function in functions:
        with monkeypatch.context() as m:
            m.setattr(M, "_one_row_per_turn", counting)
            fast = function(scored, by=["tid"])
        with monkeypatch.context() as m:
            m.setattr(M, "_one_row_per_turn", lambda *args: None)
            slow = function(scored, by=["tid"])
        pd.testing.assert_frame_equal(fast, slow, check_exact=True)
    assert looked_up >= 5  # the lookup did run (most metrics aggregate per-turn facts)
