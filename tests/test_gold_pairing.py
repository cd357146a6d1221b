"""The gold side of pairing (`analysis.scoring._GoldPairing`), computed once per gold file and convention and
shared by every run scored against it (issue 43, requirement 1). Sharing may only save work: a run scored
with the shared gold side gives exactly the tables a run scored alone gives, and a run whose gold differs in
any way (another value, another convention of the same name) computes its own."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from analysis import conventions, gold_side, scoring
from analysis.loading import load_run
from analysis.model import Run
from analysis.workspace import load_entry, read_manifest
from tests.conftest import ROOT, realdata_path

DEMO = ROOT / "data" / "demo" / "workspace.toml"
# The demo's two simulated runs share one gold file; the conventions cover gold-side renames and slot-dependent
# value rules (mwzeval), a fixed ontology (trade), a listed ontology (dstc9) and plain exact matching.
PAIRS = [("simulated-A-mwz-en-predicted", "simulated-B-mwz-en-predicted-s1")]
CONVENTIONS = ["exact", "trade", "mwzeval", "mwzeval-lenient", "dstc9"]


@pytest.fixture(scope="module")
def demo_entries():
    return {e.name: e for e in read_manifest(DEMO).entries}


def _alone(run: Run) -> Run:
    """The run with a gold side of its own (nothing shared with any other run)."""
    return dataclasses.replace(run, gold_side={})


def _same_scored(a: scoring.Scored, b: scoring.Scored) -> None:
    pd.testing.assert_frame_equal(a.turns, b.turns, check_exact=True)
    pd.testing.assert_frame_equal(a.slots, b.slots, check_exact=True)
    pd.testing.assert_frame_equal(a.ontology, b.ontology, check_exact=True)
    assert a.alignment == b.alignment


def _kept(run: Run, convention: str) -> scoring._GoldPairing:
    return run.gold_side[gold_side.KEY][f"pairing {convention}"][1]


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_runs_of_one_gold_file_share_the_pairings_gold_side_and_score_as_alone(demo_entries, convention):
    first, second = (load_entry(demo_entries[name]) for name in PAIRS[0])
    assert first.gold_side is second.gold_side, "the premise: one gold file's shared results"
    first.gold_side.pop(gold_side.KEY, None)
    shared = [scoring.score_run(run, convention) for run in (first, second)]
    name = shared[0].convention.name
    kept = _kept(first, name)
    assert kept.tids.flags.writeable is False and kept._normalised[0].value.flags.writeable is False
    scoring.score_run(second, convention)
    assert _kept(second, name) is kept, "the second run computed its own"
    for run, scored in zip((first, second), shared, strict=True):
        _same_scored(scored, scoring.score_run(_alone(run), convention))


@pytest.mark.realdata
def test_real_runs_on_one_gold_file_score_as_alone():
    gold = realdata_path("multiwoz21", "test.json.zip")
    runs = [load_run(realdata_path("mwzeval_outputs", f"{n}.json"), gold) for n in ("augpt", "pptod", "soloist")]
    for convention in (None, "trade", "mwzeval-lenient"):
        for run in runs:
            _same_scored(scoring.score_run(run, convention), scoring.score_run(_alone(run), convention))


def test_a_run_whose_gold_differs_computes_its_own(demo_entries):
    """Same gold side dict, same turns, one gold value changed: the kept pairing must not be used."""
    run = load_entry(demo_entries[PAIRS[0][0]])
    before = scoring.score_run(run, "exact")
    gold = run.gold.copy()
    common = gold["value"].value_counts().index[0]  # the most frequent gold value ('not mentioned': empty)
    gold["value"] = gold["value"].where(gold["value"] != common, "a value no run predicts")
    changed = dataclasses.replace(run, gold=gold)
    assert changed.gold_side is run.gold_side
    after = scoring.score_run(changed, "exact")
    _same_scored(after, scoring.score_run(_alone(changed), "exact"))
    assert int(after.turns["n_missed"].sum()) > int(before.turns["n_missed"].sum())  # now a value: missed
    # And the run of the original gold is still scored as it was.
    _same_scored(scoring.score_run(run, "exact"), before)


def test_a_convention_of_the_same_name_with_other_rules_computes_its_own(demo_entries):
    run = load_entry(demo_entries[PAIRS[0][0]])
    exact = conventions.get_convention("exact")
    scoring.score_run(run, exact)
    lowered = dataclasses.replace(exact, empty_values=exact.empty_values | {"centre"})
    got = scoring.score_run(run, lowered)
    _same_scored(got, scoring.score_run(_alone(run), lowered))
    assert "centre" not in set(got.slots["gold_value"].dropna())


def test_a_gold_file_keeps_the_pairing_of_its_last_few_conventions(demo_entries):
    run = load_entry(demo_entries[PAIRS[0][0]])
    run.gold_side.pop(gold_side.KEY, None)
    names = ["exact", "trade", "mwzeval", "mwzeval-lenient", "dstc9", "convlab3"]
    for convention in names:
        scoring.score_run(run, convention)
    kept = [n for n in run.gold_side[gold_side.KEY] if n.startswith("pairing ")]
    assert len(kept) == scoring.PAIRINGS_KEPT
    assert kept[-1] == f"pairing {scoring.score_run(run, 'convlab3').convention.name}"
