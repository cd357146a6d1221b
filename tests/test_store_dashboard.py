"""The dashboard's loading path through the score store (issue 21 req 5): a run scored once is read back
on the next start without parsing, and the Overview's leaderboard from the store equals the computed one."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis import views
from analysis.store import entries
from analysis.store import runs as store_runs
from analysis.workspace import read_manifest
from tests.conftest import ROOT
from ui import data

DEMO = ROOT / "data" / "demo" / "workspace.toml"
NAMES = ("crosswoz-rule-dst", "simulated-A-mwz-en-predicted", "simulated-B-mwz-en-predicted-s2")


@pytest.fixture
def store(monkeypatch, tmp_path):
    monkeypatch.setenv("DST_CACHE_DIR", str(tmp_path / "cache"))
    data._score.clear()
    data._load.clear()
    data._stored_views.clear()
    yield tmp_path / "cache" / "scored"
    data._score.clear()
    data._load.clear()
    data._stored_views.clear()


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
def test_restart_reads_the_store_and_the_overview_queries_it(store, monkeypatch):
    manifest = read_manifest(DEMO)
    sources = {e.name: data.source_from_entry(e) for e in manifest.entries if e.name in NAMES}
    pairs = [(sources[name], data.DECLARED) for name in NAMES]
    assert data.stored_leaderboard(pairs, "jga") is None  # nothing stored yet: the page computes it
    scoreds = [data.scored(source, choice) for source, choice in pairs]
    entries.flush()  # the background writer stored them
    for name in NAMES:
        assert store_runs.stored(sources[name].entry, sources[name].meta.convention) is not None
    stored = data.stored_leaderboard(pairs, "jga")
    assert stored is not None
    board, caption = stored
    pd.testing.assert_frame_equal(board, views.leaderboard(scoreds, sort="jga"), rtol=1e-12, atol=1e-12)
    assert caption == views.scope_caption(scoreds)

    # A restart: empty process caches; the sidebar lists the stored runs without parsing them, and their
    # scored tables come from the store, equal to the scoring.
    data._score.clear()
    data._load.clear()
    parsed = []
    monkeypatch.setattr(data, "_load_entry", lambda source, *a, **k: parsed.append(source.run_id))
    subset = type(manifest)(manifest.path, manifest.name, manifest.convention, [sources[n].entry for n in NAMES])
    loaded, failed = data.load_workspace(subset)
    assert list(loaded) == list(NAMES) and failed == {} and parsed == []
    again = [data.scored(source, choice) for source, choice in pairs]
    assert parsed == []
    for a, b in zip(scoreds, again, strict=True):
        pd.testing.assert_frame_equal(a.turns, b.turns)
        pd.testing.assert_frame_equal(a.slots, b.slots)


def test_store_off_keeps_the_computed_path(monkeypatch):
    monkeypatch.setenv("DST_CACHE_DIR", "")
    manifest = read_manifest(DEMO)
    source = data.source_from_entry(next(e for e in manifest.entries if e.name == NAMES[1]))
    assert data.stored_leaderboard([(source, data.DECLARED)], "jga") is None
    assert len(data._score_now(source, "exact").turns) > 0
