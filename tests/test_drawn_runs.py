"""Pages with more runs selected than a chart can draw (issue 43 requirement 2, issue 40 requirement 4): the
charts draw the best `CHART_RUNS` by a chosen metric, or the runs a search finds, and a caption says so;
the Overview's table still lists every run."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from analysis.views.shown import CHART_RUNS, chart_runs
from tests.opened_app import opened_page

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo"
GOLD = DEMO / "multiwoz21" / "test_subset.json.gz"
# Three prediction files on one gold, with different numbers: copies of them rank in three tiers.
PREDICTIONS = [
    DEMO / "simulated" / f"simulated-{name}.jsonl.gz"
    for name in ("A-mwz-en-predicted", "B-mwz-en-predicted-s1", "C-mwz-en-predicted")
]
N = CHART_RUNS + 4
TIMEOUT = 300


def test_every_run_up_to_the_limit_and_no_caption() -> None:
    board = pd.DataFrame({"run_id": ["a", "b"], "jga": [0.1, 0.2]})
    assert chart_runs(board, metric="jga", limit=2) == (["a", "b"], "")


def test_the_best_by_the_metrics_direction_a_run_without_a_value_last() -> None:
    board = pd.DataFrame(
        {"run_id": ["a", "b", "c", "d"], "jga": [0.2, float("nan"), 0.9, 0.5], "iaga": [0.2, 0.1, 0.9, 0.5]}
    )
    assert chart_runs(board, metric="jga", limit=3)[0] == ["c", "d", "a"]
    assert chart_runs(board, metric="jga", limit=4)[0] == ["a", "b", "c", "d"]  # all fit: board order
    board["jga"] = [0.2, 0.3, 0.9, 0.5]
    shown, caption = chart_runs(board, metric="jga", limit=2)
    assert shown == ["c", "d"]
    assert caption == "Drawn: the 2 best of the 4 selected runs by JGA; search for others."


def test_a_search_finds_runs_by_name_and_says_how_many_matched() -> None:
    board = pd.DataFrame({"run_id": [f"run-{i}" for i in range(12)], "jga": [i / 12 for i in range(12)]})
    shown, caption = chart_runs(board, metric="jga", search="RUN-1", limit=2)
    assert shown == ["run-11", "run-10"]
    assert caption == "Drawn: the 3 runs of the 12 selected whose name contains 'RUN-1', the 2 best by JGA."


def _workspace(folder: Path, n: int) -> Path:
    lines = ['[workspace]\nname = "many"\nconvention = "exact"\nallow_outside_root = true\n']
    for i in range(n):
        lines.append(
            f'[[runs]]\nname = "copy-{i:02d}"\nsystem = "copy-{i:02d}"\ndataset = "MultiWOZ 2.1"\n'
            f'format = "jsonl"\npred = "{PREDICTIONS[i % len(PREDICTIONS)]}"\ngold = "{GOLD}"\n'
        )
    manifest = folder / "workspace.toml"
    manifest.write_text("\n".join(lines), encoding="utf-8")
    return manifest


def _recorded(monkeypatch: pytest.MonkeyPatch, functions: tuple, note: Callable[[Any, list], Any]) -> list:
    """A list that gets `note(fn, args)` of every `ui.data.compute` call of one of `functions` (the calls
    themselves unchanged): which runs a page, or the prefetch, asked a view for."""
    from ui import data

    noted: list = []
    compute = data.compute

    def recording(fn: object, args: list, params: dict, choice: str) -> object:
        if any(fn is f for f in functions):
            noted.append(note(fn, args))
        return compute(fn, args, params, choice)

    monkeypatch.setattr(data, "compute", recording)
    return noted


def _charts(at: AppTest) -> dict[str, dict]:
    specs = [json.loads(e.proto.spec) for e in at.get("plotly_chart")]
    return {str(s["layout"].get("title", {}).get("text", "")): s for s in specs}


def _drawn(spec: dict) -> set[str]:
    """The runs a chart draws: its traces' names, or the categories of a single bar trace."""
    names = {str(t.get("name")) for t in spec["data"] if str(t.get("name", "")).startswith("copy-")}
    if names:
        return names
    return {str(v) for t in spec["data"] for v in [*t.get("x", []), *t.get("y", [])] if str(v).startswith("copy-")}


@pytest.mark.slow
@pytest.mark.skipif(not all(p.exists() for p in [GOLD, *PREDICTIONS]), reason="the demo runs are absent (make demo)")
def test_the_overview_and_turn_depth_draw_the_best_runs_and_say_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DST_CACHE_DIR", str(tmp_path / "cache"))
    manifest = _workspace(tmp_path, N)
    at = opened_page(manifest, "overview", timeout=TIMEOUT)
    board = at.dataframe[0].value
    assert len(board) == N, board.columns  # the table lists every run
    best = set(board.sort_values("JGA", ascending=False, kind="stable")["run"].head(CHART_RUNS))
    captions = [c.value for c in at.caption]
    assert f"Drawn: the {CHART_RUNS} best of the {N} selected runs by JGA; search for others." in captions
    bars = [spec for title, spec in _charts(at).items() if _drawn(spec)]
    assert bars and _drawn(bars[0]) == best

    at = opened_page(manifest, "overview", timeout=TIMEOUT, overview_drawn_search="copy-0")
    assert "Drawn: the 10 runs of the 24 selected whose name contains 'copy-0'." in [c.value for c in at.caption]
    bars = [spec for spec in _charts(at).values() if _drawn(spec)]
    assert _drawn(bars[0]) == {f"copy-0{i}" for i in range(10)}

    at = opened_page(manifest, "turn_depth", timeout=TIMEOUT)
    assert f"Drawn: the {CHART_RUNS} best of the {N} selected runs by JGA; search for others." in [
        c.value for c in at.caption
    ]
    depth = next(spec for title, spec in _charts(at).items() if "depth" in title.lower())
    assert _drawn(depth) == best

    at = opened_page(manifest, "review", timeout=TIMEOUT)
    assert f"Reviewed here: the {CHART_RUNS} best of the {N} selected runs by JGA; search for others." in [
        c.value for c in at.caption
    ]


@pytest.mark.slow
@pytest.mark.skipif(not all(p.exists() for p in [GOLD, *PREDICTIONS]), reason="the demo runs are absent (make demo)")
def test_slices_offers_the_best_other_runs_to_compare_with_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding the runs on the focus run's gold reads each run: 999 others took 75 s and GBs of the server
    (issue 43's 1,000-run benchmark). Beyond a chart's worth, the best other runs by JGA, or a search."""
    monkeypatch.setenv("DST_CACHE_DIR", str(tmp_path / "cache"))
    manifest = _workspace(tmp_path, N)
    at = opened_page(manifest, "slices", timeout=TIMEOUT)
    others = N - 1
    captions = [c.value for c in at.caption]
    assert (
        f"Offered to compare with: the {CHART_RUNS} best of the {others} selected runs by JGA; search for others."
        in (captions)
    ), captions
    [compare] = [s for s in at.selectbox if s.label.startswith("Compare the slice with")]
    offered = [o for o in compare.options if o.startswith("copy-")]
    assert 0 < len(offered) <= CHART_RUNS and at.session_state["slices_drawn_search"] == ""

    at = opened_page(manifest, "slices", timeout=TIMEOUT, slices_drawn_search="copy-1")
    [compare] = [s for s in at.selectbox if s.label.startswith("Compare the slice with")]
    assert {o for o in compare.options if o.startswith("copy-")} <= {f"copy-1{i}" for i in range(10)}
    assert any("whose name contains 'copy-1'" in c.value for c in at.caption)


def _offered(args: list) -> tuple:
    """`slices.comparison_runs`'s resolved arguments as run ids: (focus run, the runs offered)."""
    focus, others = args
    return focus[0].run_id, tuple(source.run_id for source, _ in others)


@pytest.mark.slow
@pytest.mark.skipif(not all(p.exists() for p in [GOLD, *PREDICTIONS]), reason="the demo runs are absent (make demo)")
def test_the_prefetch_finds_the_runs_slices_offers_to_compare_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which of the offered runs are on the focus run's gold loads each of them (1.3 s for 20 MultiWOZ-size runs,
    most of the Slices page's first visit at 1,000 runs): the prefetch asks it for the very runs the page offers,
    the best by JGA or those its search finds, so the visit finds it cached."""
    from analysis import slices
    from ui import data, prefetch

    monkeypatch.setenv("DST_CACHE_DIR", str(tmp_path / "cache"))
    manifest = _workspace(tmp_path, N)
    asked = _recorded(monkeypatch, (slices.comparison_runs,), lambda fn, args: _offered(args))
    monkeypatch.setattr(prefetch, "start", lambda **_: False)
    for search in ("", "copy-1"):
        asked.clear()
        at = opened_page(manifest, "slices", timeout=TIMEOUT, slices_drawn_search=search)
        [page] = asked
        assert page[0] == at.session_state["run"] and len(page[1]) == (CHART_RUNS if not search else 10)
        asked.clear()
        runs, sources = list(at.session_state["runs"]), dict(at.session_state["sources"])
        prefetch.comparison_job(runs, page[0], sources, {"slices_drawn_search": search}, data.DECLARED)
        assert asked == [page]
    # A job of its own, right after the search it follows: the launcher's warm-up deadline can stop before it.
    planned = prefetch.jobs(runs, runs[0], sources, data.DECLARED, [], {})
    at_search = next(i for i, (job, _) in enumerate(planned) if job is prefetch.slices_job)
    assert planned[at_search + 1] == (prefetch.comparison_job, planned[at_search][1])


@pytest.mark.slow
@pytest.mark.skipif(not all(p.exists() for p in [GOLD, *PREDICTIONS]), reason="the demo runs are absent (make demo)")
def test_many_runs_scope_caption_is_the_store_s_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Beyond a chart's worth of runs, Domains and Turn depth take their scope caption (conventions, runs, turns,
    dialogues) from the stored leaderboard they read anyway: the same line as the store's `scope_caption`,
    every selected run counted, not only those drawn."""
    from analysis import views
    from analysis.store import runs as store_runs
    from analysis.store import views as store_views
    from analysis.workspace import read_manifest

    monkeypatch.setenv("DST_CACHE_DIR", str(tmp_path / "cache"))
    manifest = _workspace(tmp_path, N)
    entries = read_manifest(manifest).entries
    # Stored now: a worker that opened these runs in an earlier test holds them scored in memory.
    assert all(store_runs.ensure_all(entries, "exact", workers=1))
    for page in ("domains", "turn_depth"):
        at = opened_page(manifest, page, timeout=TIMEOUT)
        expected = store_views.answer(views.scope_caption, [[(entry, "exact") for entry in entries]], {})
        assert expected is not None and f"· {N} runs ·" in expected
        assert at.caption[0].value.startswith(expected), (at.caption[0].value, expected)


@pytest.mark.slow
@pytest.mark.skipif(not all(p.exists() for p in [GOLD, *PREDICTIONS]), reason="the demo runs are absent (make demo)")
def test_the_sidebar_says_how_many_runs_it_shows_beyond_a_list_s_worth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A thousand chips in the sidebar took the browser about 0.3 s on every page and nobody reads them: beyond
    `LISTED_RUNS` selected runs the sidebar says how many it shows (and which, when its name search chose
    them), lists them on demand, and its search replaces the runs shown by those whose name matches. (AppTest
    reruns only the page, not app.py's sidebar: each sidebar is looked at in a fresh session.)"""
    from ui.sidebar import LISTED_RUNS

    monkeypatch.setenv("DST_CACHE_DIR", str(tmp_path / "cache"))
    n = LISTED_RUNS + 4
    manifest = _workspace(tmp_path, n)
    every = [f"copy-{i:02d}" for i in range(n)]
    ones = [f"copy-1{i}" for i in range(10)]

    def listed(at: AppTest) -> list[list[str]]:
        return [list(m.value) for m in at.sidebar.multiselect if m.label == "Runs shown"]

    def said(at: AppTest) -> list[str]:
        return [c.value for c in at.sidebar.caption if c.value.startswith("Runs shown")]

    at = opened_page(manifest, "overview", timeout=TIMEOUT)
    assert not listed(at) and said(at) == [f"Runs shown: all {n} (not listed one by one beyond {LISTED_RUNS})."]
    assert at.session_state["runs"] == every and len(at.dataframe[0].value) == n  # every run is still on the board

    def searched(text: str) -> AppTest:
        at = opened_page(manifest, "overview", timeout=TIMEOUT)
        [search] = [t for t in at.sidebar.text_input if t.label == "Show the runs whose name contains"]
        return search.input(text).run()

    at = searched("no such run")
    assert at.session_state["runs"] == every and "No run's name contains 'no such run'" in str(
        at.session_state["runs_search_note"]
    )
    at = searched("COPY-1")
    assert at.session_state["runs"] == ones and not at.session_state["runs_search_note"]

    at = opened_page(manifest, "overview", timeout=TIMEOUT, runs=ones, w_runs_search="COPY-1")
    assert listed(at) == [ones] and not said(at) and len(at.dataframe[0].value) == 10  # few enough: listed
    at = opened_page(manifest, "overview", timeout=TIMEOUT, runs=every, w_runs_search="copy-")
    assert not listed(at) and said(at) == [
        f"Runs shown: all {n}, those whose name contains 'copy-' (not listed one by one beyond {LISTED_RUNS})."
    ]
    at = opened_page(manifest, "overview", timeout=TIMEOUT, runs=every[:-1], runs_listed=False)
    assert said(at) == [f"Runs shown: {n - 1} of {n} (not listed one by one beyond {LISTED_RUNS})."]
    at = opened_page(manifest, "overview", timeout=TIMEOUT, runs=every, runs_listed=True)  # listed on demand
    assert listed(at) == [every] and not said(at)


@pytest.mark.slow
@pytest.mark.skipif(not all(p.exists() for p in [GOLD, *PREDICTIONS]), reason="the demo runs are absent (make demo)")
def test_the_prefetch_computes_the_error_items_of_the_runs_review_takes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Beyond a chart's worth of runs the Review page reviews the best by a chosen metric, or those its search
    finds: the prefetch computes the error items and episodes of those very runs (0.2-0.3 s of the visit at
    1,000 runs), as the session's widgets stand."""
    from ui import data, prefetch, review

    monkeypatch.setenv("DST_CACHE_DIR", str(tmp_path / "cache"))
    manifest = _workspace(tmp_path, N)
    asked = _recorded(
        monkeypatch,
        (review.review_errors, review.review_episodes),
        lambda fn, args: (getattr(fn, "__name__", ""), tuple(source.run_id for source, _ in args[0])),
    )
    monkeypatch.setattr(prefetch, "start", lambda **_: False)
    for widgets in ({}, {"review_drawn_metric": "iaga"}, {"review_drawn_search": "copy-1"}):
        asked.clear()
        at = opened_page(manifest, "review", timeout=TIMEOUT, **widgets)
        page = list(asked)
        assert [name for name, _ in page] == ["review_errors", "review_episodes"]
        assert len(page[0][1]) == (10 if widgets.get("review_drawn_search") else CHART_RUNS)
        asked.clear()
        runs, sources = list(at.session_state["runs"]), dict(at.session_state["sources"])
        prefetch.review_job(runs, sources, widgets, data.DECLARED)
        assert asked == page


@pytest.mark.slow
@pytest.mark.skipif(not all(p.exists() for p in [GOLD, *PREDICTIONS]), reason="the demo runs are absent (make demo)")
def test_all_languages_looks_among_the_best_other_runs_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cross-lingual's "All languages" finds the runs over Run A's dialogues by reading every run's turns (at 1,000
    runs: minutes and GBs of the server): beyond a chart's worth of other runs it looks among the best by a
    metric, or those a search finds, with Run A, and says so."""
    from analysis import crosslingual

    monkeypatch.setenv("DST_CACHE_DIR", str(tmp_path / "cache"))
    manifest = _workspace(tmp_path, N)
    looked = _recorded(
        monkeypatch, (crosslingual.language_runs,), lambda fn, args: [source.run_id for source, _ in args[0]]
    )
    at = opened_page(manifest, "crosslingual", timeout=TIMEOUT, view_crosslingual="All languages")
    run_a = at.session_state["run_a"]
    captions = [c.value for c in at.caption]
    expected = (
        f"Runs over Run A's dialogues looked for among: the {CHART_RUNS} best of the {N - 1} selected runs by JGA"
    )
    assert any(c.startswith(expected) for c in captions), captions
    [among] = looked
    assert len(among) == CHART_RUNS + 1 and run_a in among

    looked.clear()
    at = opened_page(
        manifest, "crosslingual", timeout=TIMEOUT, view_crosslingual="All languages", xl_languages_drawn_search="copy-1"
    )
    [among] = looked
    assert set(among) == {at.session_state["run_a"], *(f"copy-1{i}" for i in range(10))}


@pytest.mark.slow
@pytest.mark.skipif(not all(p.exists() for p in [GOLD, *PREDICTIONS]), reason="the demo runs are absent (make demo)")
def test_slices_searches_the_best_runs_together_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Searching the selected runs together reads every run's turns (1,000 MultiWOZ-size runs: 7 million turns):
    beyond a chart's worth it searches the best by a chosen metric, or those a search finds, says so, and the
    prefetch searches the very same runs."""
    from analysis import slices
    from ui import data, prefetch

    monkeypatch.setenv("DST_CACHE_DIR", str(tmp_path / "cache"))
    manifest = _workspace(tmp_path, N)
    searched = _recorded(
        monkeypatch, (slices.find_slices,), lambda fn, args: tuple(source.run_id for source, _ in args[0])
    )
    monkeypatch.setattr(prefetch, "start", lambda **_: False)
    at = opened_page(manifest, "slices", timeout=TIMEOUT, slices_pooled=True)
    captions = [c.value for c in at.caption]
    assert f"Searched together: the {CHART_RUNS} best of the {N} selected runs by JGA; search for others." in captions
    # 20 demo runs hold more turns than a search of runs together takes: the page says so, of those 20
    assert [len(found) for found in searched] == [CHART_RUNS] and f"{CHART_RUNS} runs together hold" in at.error[
        0
    ].value
    searched.clear()
    at = opened_page(manifest, "slices", timeout=TIMEOUT, slices_pooled=True, slices_pooled_drawn_search="copy-1")
    assert "Searched together: the 10 runs of the 24 selected whose name contains 'copy-1'." in [
        c.value for c in at.caption
    ]
    [page] = searched
    runs, sources = list(at.session_state["runs"]), dict(at.session_state["sources"])
    assert list(page) == [f"copy-1{i}" for i in range(10)] and not at.error
    searched.clear()
    session = {"slices_pooled": True, "slices_pooled_drawn_search": "copy-1"}
    prefetch.slices_job(runs, runs[0], sources, session, data.DECLARED)
    assert searched == [page]
