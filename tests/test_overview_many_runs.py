"""The Overview with a sweep's worth of runs selected (issue 21 requirement 4: every page's first visit within
a second at 100 runs): its paired comparison compares the runs picked (at most `PAIRED_MAX`), none at first,
instead of a paired bootstrap of every pair of every selected run (4,950 pairs at 100 runs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"
DEMO = ROOT / "data" / "demo"
RUN = DEMO / "simulated" / "simulated-A-mwz-en-predicted.jsonl.gz"
GOLD = DEMO / "multiwoz21" / "test_subset.json.gz"
PAIRED_MAX = 20  # pages/overview.py
TIMEOUT = 180

pytestmark = pytest.mark.skipif(not RUN.exists(), reason=f"the demo run {RUN} is absent (make demo)")


def _workspace(folder: Path, n: int) -> Path:
    """`n` runs of one demo prediction file (one gold: a single paired-comparison group)."""
    lines = ['[workspace]\nname = "many"\nconvention = "exact"\nallow_outside_root = true\n']
    for i in range(n):
        lines.append(
            f'[[runs]]\nname = "copy-{i:02d}"\nsystem = "copy-{i:02d}"\ndataset = "MultiWOZ 2.1"\n'
            f'format = "jsonl"\npred = "{RUN}"\ngold = "{GOLD}"\n'
        )
    manifest = folder / "workspace.toml"
    manifest.write_text("\n".join(lines), encoding="utf-8")
    return manifest


def _overview(manifest: Path, **state: object) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.session_state["workspace_path"] = str(manifest)
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _chart_titles(at: AppTest) -> list[str]:
    return [str(json.loads(e.proto.spec)["layout"].get("title", {}).get("text", "")) for e in at.get("plotly_chart")]


@pytest.mark.slow
def test_more_runs_than_the_limit_compare_only_the_runs_picked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DST_CACHE_DIR", str(tmp_path / "cache"))
    manifest = _workspace(tmp_path, PAIRED_MAX + 1)

    at = _overview(manifest)
    picker = next(m for m in at.multiselect if m.label.startswith("Runs to compare"))
    assert picker.label == f"Runs to compare (at most {PAIRED_MAX} of the {PAIRED_MAX + 1} selected)"
    assert picker.value == [] and picker.max_selections == PAIRED_MAX
    assert not any(t.startswith("Significant differences") for t in _chart_titles(at))
    assert any(c.value == f"Pick two to {PAIRED_MAX} runs above to compare them pair by pair." for c in at.caption)

    at = _overview(manifest, compare_runs=["copy-03", "copy-07"])
    matrix = next(
        json.loads(e.proto.spec)
        for e in at.get("plotly_chart")
        if str(json.loads(e.proto.spec)["layout"].get("title", {}).get("text", "")).startswith("Significant")
    )
    assert list(matrix["data"][0]["x"]) == ["copy-03", "copy-07"]


def test_up_to_the_limit_every_selected_run_is_compared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DST_CACHE_DIR", str(tmp_path / "cache"))
    at = _overview(_workspace(tmp_path, 3))
    assert not any(m.label.startswith("Runs to compare") for m in at.multiselect)
    matrix = next(
        json.loads(e.proto.spec)
        for e in at.get("plotly_chart")
        if str(json.loads(e.proto.spec)["layout"].get("title", {}).get("text", "")).startswith("Significant")
    )
    assert list(matrix["data"][0]["x"]) == ["copy-00", "copy-01", "copy-02"]


def test_a_convention_chosen_at_many_runs_is_scored_into_the_store_in_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sidebar's convention switched on a workspace of several runs: they are scored under it into the store
    by the batch scorer before the Overview's first view (`ui.data.store_many`), none by a child of its own,
    and the leaderboard is TRADE's."""
    from ui import data

    monkeypatch.setenv("DST_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("DST_NO_PREFETCH", "1")
    batches: list[list[str | None]] = []
    real = data.score_entries_isolated

    def recording(jobs, root, **kwargs):  # type: ignore[no-untyped-def]
        batches.append([convention for _, convention, _ in jobs])
        return real(jobs, root, **kwargs)

    monkeypatch.setattr(data, "score_entries_isolated", recording)
    monkeypatch.setattr(data, "score_entry_isolated", lambda *a, **k: pytest.fail("a run scored by a child of its own"))
    manifest = _workspace(tmp_path, 6)
    at = _overview(manifest)
    at.session_state["convention"] = "trade"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert batches == [["exact"] * 6, ["trade"] * 6]
    board = next(frame.value for frame in at.dataframe if "convention" in frame.value.columns)
    assert set(board["convention"]) == {"trade"} and len(board) == 6
