"""The command line and the report read the score store (issue 37 requirement 2): a second `metrics`,
`compare`, `slices` or `reconcile` of the same files, and a report of a workspace whose runs are stored,
parse and score no run again (the functions that would are replaced by ones that fail), and print or plan
the very same numbers."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from analysis.cli.main import main
from analysis.export import report as R
from analysis.store import runs as store_runs
from analysis.workspace import load_workspace
from tests.conftest import ROOT

DEMO = ROOT / "data" / "demo"
GOLD = str(DEMO / "multiwoz21" / "test_subset.json.gz")
PRED_A = str(DEMO / "simulated" / "simulated-A-mwz-en-predicted.jsonl.gz")
PRED_B = str(DEMO / "simulated" / "simulated-B-mwz-en-predicted-s1.jsonl.gz")

pytestmark = pytest.mark.skipif(not (DEMO / "workspace.toml").exists(), reason="the demo workspace is absent")


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("DST_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "scored"


def _never(what: str) -> Any:
    def fail(*_: Any, **__: Any) -> Any:
        pytest.fail(f"{what} called with the store warm")

    return fail


def _no_parse_or_score(monkeypatch: pytest.MonkeyPatch, *, parse: bool = True) -> None:
    """From now on, loading (`parse`) or scoring a run fails the test."""
    monkeypatch.setattr(store_runs, "score_run", _never("score_run"))
    monkeypatch.setattr("analysis.scoring.score_run", _never("score_run"))
    if parse:
        monkeypatch.setattr(store_runs, "load_run", _never("load_run"))
        monkeypatch.setattr(store_runs, "load_entry", _never("load_entry"))
        monkeypatch.setattr("analysis.loading.load_run", _never("load_run"))


def _output(argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(argv) == 0
    return out.getvalue()


COMMANDS = {
    "metrics": ["metrics", "--pred", PRED_A, "--gold", GOLD, "--json", "--group-by", "domain"],
    "metrics-text": ["metrics", "--pred", PRED_A, "--gold", GOLD, "--convention", "trade"],
    "compare": ["compare", "--pred", PRED_A, "--pred", PRED_B, "--gold", GOLD, "--resamples", "50", "--json"],
    "slices": ["slices", "--pred", PRED_A, "--gold", GOLD, "--train", GOLD, "--resamples", "50", "--json"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_command_run_again_reads_the_store(store: Path, monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    """Stored with --store; run again without it, the command reads the runs back (nothing parsed)."""
    argv = COMMANDS[command]
    first = _output([*argv, "--store"])
    assert len(list((store / "entries").glob("*.json"))) >= 1
    _no_parse_or_score(monkeypatch)
    assert _output(argv) == first


@pytest.mark.parametrize("command", list(COMMANDS))
def test_without_store_a_command_writes_nothing(store: Path, command: str) -> None:
    """A one-off command reads a run the store holds but writes none: storing eleven tables costs more than
    parsing and scoring the file again."""
    _output(COMMANDS[command])
    assert not (store / "entries").exists() or not list((store / "entries").glob("*.json"))


def test_reconcile_reads_each_conventions_tables_from_the_store(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The flips need the parsed run (its raw states); its tables under each convention come from the store."""
    argv = ["reconcile", "--pred", PRED_A, "--gold", GOLD, "--conventions", "exact,trade,mwzeval", "--no-causes"]
    first = _output([*argv, "--store"])
    assert len(list((store / "entries").glob("*.json"))) == 3
    _no_parse_or_score(monkeypatch, parse=False)
    assert _output(argv) == first


def test_a_changed_path_or_option_is_another_entry(store: Path, tmp_path: Path) -> None:
    """The run's sources name the paths as given, so the same content given by another path is scored
    again (its output names that path), as is another history mode."""
    copy = tmp_path / "copy.jsonl.gz"
    copy.write_bytes(Path(PRED_A).read_bytes())
    first = _output(["metrics", "--pred", PRED_A, "--gold", GOLD, "--json", "--store"])
    again = _output(["metrics", "--pred", str(copy), "--gold", GOLD, "--json", "--store"])
    _output(["metrics", "--pred", PRED_A, "--gold", GOLD, "--json", "--history", "gold", "--store"])
    assert len(list((store / "entries").glob("*.json"))) == 3
    assert str(copy) in again and str(copy) not in first


@pytest.fixture(scope="module")
def cold_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, R.ReportPlan]:
    """The demo workspace's report planned once for the module from `load_workspace(..., runs=False)` on an
    empty store (every run parsed, scored and stored): (the store it filled, the plan). Both report tests
    compare with it, where each planned it again."""
    cache = tmp_path_factory.mktemp("report") / "cache"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DST_CACHE_DIR", str(cache))
        cold = R.plan_report(load_workspace(DEMO / "workspace.toml", runs=False), n_resamples=50)
    return cache / "scored", cold


@pytest.mark.slow  # plans a report (`plan_report`): a report build
def test_a_report_of_a_warm_store_parses_and_scores_nothing(
    cold_report: tuple[Path, R.ReportPlan], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`build_report` plans from `load_workspace(..., runs=False)`: every run comes from the store when it
    holds it. Planned twice, the second time with parsing and scoring replaced by failures: the same
    tables and figures."""
    manifest = DEMO / "workspace.toml"
    store, cold = cold_report
    monkeypatch.setenv("DST_CACHE_DIR", str(store.parent))
    assert len(list((store / "entries").glob("*.json"))) >= 10
    _no_parse_or_score(monkeypatch)
    warm = R.plan_report(load_workspace(manifest, runs=False), n_resamples=50)
    assert [t.name for t in warm.tables] == [t.name for t in cold.tables]
    for a, b in zip(cold.tables, warm.tables, strict=True):
        pd.testing.assert_frame_equal(a.frame, b.frame)
    assert [f.name for f in warm.figures] == [f.name for f in cold.figures]
    assert [f.figure.to_json() for f in warm.figures] == [f.figure.to_json() for f in cold.figures]
    assert warm.notes == cold.notes and warm.warnings == cold.warnings


@pytest.mark.slow  # plans a report (`plan_report`): a report build
def test_a_report_from_loaded_runs_equals_the_stored_one(store: Path, cold_report: tuple[Path, R.ReportPlan]) -> None:
    """A workspace loaded beforehand (as the tests and notebooks pass it), planned on an empty store of its
    own (its runs scored as loaded, not read from the files again), plans the same report as the one planned
    through the store."""
    manifest = DEMO / "workspace.toml"
    loaded = R.plan_report(load_workspace(manifest), n_resamples=50)
    _, stored = cold_report
    assert [t.name for t in loaded.tables] == [t.name for t in stored.tables]
    for a, b in zip(loaded.tables, stored.tables, strict=True):
        pd.testing.assert_frame_equal(a.frame, b.frame)
    assert loaded.notes == stored.notes
