"""The report holds a bounded number of runs (issue 40 req 4): with the score store, each run is read for one
pass that keeps what the report shows of it, and the parts that pair runs read them back a few at a time, so
a report of 500 runs does not hold 500 runs' tables (it grew to 5.9 GB). Its intervals are the same numbers:
the combined bootstrap over every run of a convention, from each run's per-dialogue sums."""

from __future__ import annotations

import gc
import re
import weakref
from pathlib import Path

import pandas as pd
import pytest

from analysis import stats
from analysis.export import report as R
from analysis.scoring import combine, score_run
from analysis.store import entries
from analysis.workspace import load_entry, load_workspace, read_manifest
from tests.conftest import ROOT

DEMO = ROOT / "data" / "demo"
RUN = "simulated-A-mwz-en-predicted"
MANY = R.RUNS_AT_ONCE + 3  # more runs than the report may hold at once: holding them all fails the bound
PAIRED = 3  # the pairwise table's runs here (`PAIRWISE_RUNS`: it holds the runs it compares at once)

pytestmark = pytest.mark.skipif(not (DEMO / "workspace.toml").exists(), reason="the demo workspace is absent")


def test_intervals_from_each_runs_parts_equal_the_combined_bootstrap():
    manifest = read_manifest(DEMO / "workspace.toml")
    runs = [score_run(load_entry(e)) for e in manifest.entries if e.meta.convention == "exact"][:6]
    pooled = combine(runs)
    parts = [stats.run_parts(s, R.CI_METRICS) for s in runs]  # in the runs' order, not sorted by run id
    for metric in R.CI_METRICS:
        combined = stats.bootstrap_ci(pooled, metric, by="run_id", n_resamples=200)
        assert isinstance(combined, pd.DataFrame)
        streamed = stats.runs_bootstrap_ci(parts, metric, n_resamples=200)
        # the resampled bounds bit for bit; the point estimate summed per run (FGA: one ulp apart)
        pd.testing.assert_frame_equal(streamed, combined, check_exact=False, rtol=1e-12, atol=1e-15)
        assert streamed["low"].tolist() == combined["low"].tolist()


def many_runs(folder: Path, n: int) -> Path:
    """A workspace of `n` runs: the demo's RUN under `n` names (each its own store entry), one gold."""
    block = next(
        b for b in re.split(r"\n(?=\[\[)", (DEMO / "workspace.toml").read_text(encoding="utf-8")) if f'"{RUN}"' in b
    )
    block = re.sub(r'"([^"]+\.(?:gz|json|jsonl))"', lambda m: f'"{(DEMO / m.group(1)).as_posix()}"', block)
    blocks = [block.replace(f'name = "{RUN}"', f'name = "run-{i:03d}"') for i in range(n)]
    path = folder / "workspace.toml"
    text = '[workspace]\nname = "Many"\nconvention = "exact"\nallow_outside_root = true\n\n' + "\n".join(blocks)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.slow  # plans a report (`plan_report`): a report build
def test_a_report_of_many_runs_holds_a_few_runs_at_once(tmp_path, monkeypatch):
    monkeypatch.setenv("DST_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(R, "PAIRWISE_RUNS", PAIRED)
    manifest = many_runs(tmp_path, MANY)
    alive: list[weakref.ref] = []
    most = 0
    read_back = entries.load

    def load(root, key):  # every run the report reads from the store; how many are alive at that moment
        nonlocal most
        gc.collect()
        most = max(most, sum(ref() is not None for ref in alive))
        scored = read_back(root, key)
        if scored is not None:
            alive.append(weakref.ref(scored))
        return scored

    monkeypatch.setattr(entries, "load", load)
    R._score_all(load_workspace(manifest, runs=False), None)  # cold: each run scored and stored (no report)
    alive.clear()
    most = 0
    plan = R.plan_report(load_workspace(manifest, runs=False), n_resamples=20)  # warm: every run read back
    assert len(alive) >= MANY > R.RUNS_AT_ONCE > PAIRED  # each run read back at least once (its pass)
    assert most <= R.RUNS_AT_ONCE, f"{most} runs held at once"

    # What the report shows of every run is there: the leaderboard and a per-slot figure of each run.
    board = next(t for t in plan.tables if t.name == "leaderboard").frame
    assert board["run"].tolist() == [f"run-{i:03d}" for i in range(MANY)]
    assert sum(f.name.startswith("slot-f1-") for f in plan.figures) == MANY
    # One gold for all: the pairwise table compares the best PAIRWISE_RUNS, and says so.
    pairwise = next(t for t in plan.tables if t.name.startswith("pairwise-"))
    runs_paired = {run for pair in pairwise.frame["pair (b − a)"] for run in pair.split(" − ")}
    assert len(runs_paired) == PAIRED
    assert f"Of the {MANY} runs on this gold, the {PAIRED} best by JGA" in pairwise.caption


def test_the_store_off_keeps_every_run_in_memory(tmp_path, monkeypatch):
    """`DST_CACHE_DIR=""`: nowhere to read a run back from, so the runs stay in a dict (the old path)."""
    monkeypatch.setenv("DST_CACHE_DIR", "")
    manifest = many_runs(tmp_path, 3)
    scoreds = R._score_all(load_workspace(manifest, runs=False), None)
    assert isinstance(scoreds, dict) and list(scoreds) == ["run-000", "run-001", "run-002"]
