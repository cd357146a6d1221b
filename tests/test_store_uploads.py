"""Uploads saved into the workspace live in the score store like any other run (issue 21 requirement 6):
the upload form saves the run (issue 17's persistence), its first view scores it once into the store, and
a restart reads it from there: no parse, no scoring, the same numbers. All on a copy of the demo workspace
with the store in tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.metrics import joint_goal_accuracy
from analysis.scoring import score_run
from analysis.store import entries
from analysis.store import runs as store_runs
from analysis.workspace import load_entry, read_manifest
from tests.test_upload_persist import DEMO, app, manifest, no_exception, upload  # noqa: F401 (fixture)
from ui import data, prefetch

pytestmark = pytest.mark.skipif(not (DEMO / "workspace.toml").exists(), reason=f"the demo workspace {DEMO} is absent")


def _clear() -> None:
    data._score.clear()
    data._load.clear()
    data._stored_views.clear()


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("DST_CACHE_DIR", str(tmp_path / "cache"))
    _clear()
    yield tmp_path / "cache" / "scored"
    entries.flush()
    _clear()


def _overview(path: Path, run: str):
    at = app(path)
    at.query_params.update({"runs": run})
    at.run()
    no_exception(at)
    return at


def _board_jga(at, run: str) -> float:
    tables = [d.value for d in at.dataframe if "run" in getattr(d.value, "columns", [])]
    rows = [t.loc[t["run"] == run] for t in tables if (t["run"] == run).any()]
    assert rows, f"the Overview lists no row for {run}"
    column = next(c for c in rows[0].columns if str(c).lower() in ("jga", "joint goal accuracy"))
    return float(rows[0][column].iloc[0])


@pytest.mark.slow
def test_a_saved_upload_is_scored_once_into_the_store_and_read_back_on_restart(
    manifest: Path,  # noqa: F811 (the fixture imported above)
    store: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    at = app(manifest, w_upload_box=True).run()
    no_exception(at)
    kind, message, _ = upload(at, manifest, "stored-upload", system="Uploaded DST")
    assert kind == "success", message
    entry = read_manifest(manifest).entries[-1]
    assert entry.name == "stored-upload"
    convention = entry.meta.convention
    assert store_runs.stored(entry, convention) is None  # saved, not yet scored

    scorings: list[str] = []

    scored_in_worker = data.score_entry_isolated

    def counted(entry, *args):
        scorings.append(entry.meta.run_id)
        return scored_in_worker(entry, *args)

    monkeypatch.setattr(data, "score_entry_isolated", counted)  # a run the store lacks is scored in a worker

    # First view: the run is scored once, in a worker process, which then stores it.
    first = _overview(manifest, "stored-upload")
    entries.flush()
    found = store_runs.stored(entry, convention, tables=("runs", "dialogues", "turns", "slots"))
    assert found is not None, "the saved upload is not in the score store"
    assert Path(found.path("runs")).is_relative_to(store), found.path("runs")
    assert len(scorings) == 1, scorings

    # A restart: empty process caches. The run loads from the store: nothing parsed, nothing scored. The
    # first session's background work (its prefetch of the other pages, the store's writer) ends first: on a
    # busy machine the prefetch was still loading the run when the restart began.
    assert prefetch.wait(120), "the first session's prefetch did not finish"
    entries.flush()
    _clear()
    parsed: list[str] = []
    monkeypatch.setattr(data, "_load_entry", lambda source, *a, **k: parsed.append(source.run_id))
    again = _overview(manifest, "stored-upload")
    assert parsed == [] and len(scorings) == 1, (parsed, scorings)

    # The same number both times, and it is the run's own JGA scored directly from its files.
    expected = joint_goal_accuracy(score_run(load_entry(entry), convention))
    assert _board_jga(first, "stored-upload") == pytest.approx(expected, abs=1e-12)
    assert _board_jga(again, "stored-upload") == pytest.approx(expected, abs=1e-12)
