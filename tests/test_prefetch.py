"""Background prefetch of the pages' first views: every planned call must be one a page really makes
(same function, runs, convention and parameters: the same cache key), and it starts once per selection."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import plotly.io as pio
import pytest
from page_visits import visit_every_tab
from streamlit.testing.v1 import AppTest

import ui
from analysis.crosslingual import mapping_from_manifest
from analysis.figures import run_colours
from analysis.model import RunInfo
from analysis.workspace import RunEntry, read_manifest
from page_registry import PREFETCHED, Defaults
from ui import data, prefetch
from ui.data import RunSource

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"
DEMO = ROOT / "data" / "demo" / "workspace.toml"
TIMEOUT = 180

pytestmark = pytest.mark.skipif(not DEMO.exists(), reason=f"the demo workspace {DEMO} is absent (make demo)")


def _arg_key(arg: Any) -> Any:
    if isinstance(arg, tuple) and arg and isinstance(arg[0], RunSource):
        return (arg[0].run_id, arg[1])
    if isinstance(arg, data.Marker):
        return arg.key
    if isinstance(arg, list | tuple):
        return tuple(_arg_key(a) for a in arg)
    return arg


def _call_key(fn: Any, args: Any, params: dict[str, Any]) -> tuple:
    return (f"{fn.__module__}.{fn.__qualname__}", tuple(_arg_key(a) for a in args), tuple(sorted(params.items())))


def _source(run_id: str) -> RunSource:
    return RunSource(RunEntry(RunInfo(run_id), Path(f"{run_id}.jsonl")), pred_stamp="1", gold_stamp=None)


def _resolved(arg: Any, choice: str = data.DECLARED) -> Any:
    """Run ids as `ui.resolve` passes them on: (source, convention choice) pairs (only run_id counts here)."""
    if isinstance(arg, str):
        return (_source(arg), choice)
    if isinstance(arg, list | tuple):
        return [_resolved(a, choice) for a in arg]
    return arg


def _app() -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.session_state["workspace_path"] = str(DEMO)
    return at


def test_every_prefetched_view_is_one_the_pages_ask_for(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: set[tuple] = set()
    real = data.compute

    def recording(fn: Any, args: Any, params: dict[str, Any], choice: str) -> Any:
        if threading.current_thread().name != "dst-prefetch":  # the pages' calls, not an earlier test's prefetch
            asked.add(_call_key(fn, args, params))
        return real(fn, args, params, choice)

    monkeypatch.setattr(data, "compute", recording)
    monkeypatch.setattr(prefetch, "start", lambda **_: False)  # record the pages' own calls only
    at = _app()
    at.run()
    runs = list(at.session_state["runs"])
    assert len(runs) > 4  # the demo has more runs than inherited-vs-new panels, so the slice matters
    visit_every_tab(at, [page.url_path for page in PREFETCHED])  # the pages that declare first views
    mappings = list(read_manifest(DEMO).mappings)
    pair = prefetch.crosslingual_choice(runs, mappings, {})
    assert pair is not None
    overrides = tuple(sorted(mapping_from_manifest(mappings, *pair).items()))
    first_views, _ = prefetch.first_page(runs, run_colours(runs))
    planned = {
        _call_key(fn, [_resolved(a) for a in args], params)
        for fn, args, params in [*first_views, *prefetch.plan(runs, runs[0], pair, overrides)]
    }
    assert len(planned) == 14, sorted(planned)  # the Overview, then every other page, cross-lingual included
    assert planned <= asked, f"planned but never asked for by a page: {sorted(planned - asked)}"


def test_every_prefetched_figure_is_one_the_pages_draw(monkeypatch: pytest.MonkeyPatch) -> None:
    """Built from the same view with the same builder and parameters, a planned figure has the cache key of
    the page's own `ui.figure` call; equal JSON from one builder and parameters means equal input."""
    drawn: dict[tuple, list[Any]] = {}
    real = ui.figure

    def recording(builder: Any, *args: Any, **params: Any) -> Any:
        fig = real(builder, *args, **params)
        key = (builder.__qualname__, repr(sorted(params.items())))
        drawn.setdefault(key, []).append(json.loads(pio.to_json(fig, validate=False)))
        return fig

    monkeypatch.setattr(ui, "figure", recording)
    monkeypatch.setattr(prefetch, "start", lambda **_: False)
    at = _app()
    at.run()
    runs = list(at.session_state["runs"])
    assert runs == list(at.session_state["sources"])  # all runs shown: run_colours(runs) is ui.colours()
    sources = dict(at.session_state["sources"])
    colours = run_colours(list(sources))
    mappings = list(read_manifest(DEMO).mappings)
    pair = prefetch.crosslingual_choice(runs, mappings, {})
    assert pair is not None
    overrides = tuple(sorted(mapping_from_manifest(mappings, *pair).items()))
    defaults = Defaults(runs, runs[0], colours, pair, overrides)
    visit_every_tab(at, [page.url_path for page in PREFETCHED if page.first and page.first(defaults).figures])

    def resolved(arg: Any) -> Any:
        if isinstance(arg, str):
            return (sources[arg], data.DECLARED)
        return [resolved(a) for a in arg]

    planned = [*prefetch.first_page(runs, colours)[1], *prefetch.figure_plan(runs, runs[0], colours, pair, overrides)]
    assert len(planned) == 12
    for builder, (fn, args, params), path, figure_params in planned:
        fig = prefetch.figure_job(
            builder, (fn, [resolved(a) for a in args], params), path, figure_params, data.DECLARED
        )
        key = (builder.__qualname__, repr(sorted(figure_params.items())))
        assert key in drawn, f"planned but never drawn by a page: {key}"
        assert json.loads(pio.to_json(fig, validate=False)) in drawn[key], f"{key}: drawn from another input"


def test_the_derived_jobs_compute_and_draw_what_the_pages_do(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Slots page's default-slot half, the Domains page's default attribute, the Turn depth page's default
    compounding pair and the Dialogue viewer's default dialogue depend on a first view's result; their jobs
    must still ask for exactly the pages' views and draw their figures."""
    asked: set[tuple] = set()
    drawn: list[Any] = []
    real_compute, real_figure = data.compute, ui.figure

    def recording(fn: Any, args: Any, params: dict[str, Any], choice: str) -> Any:
        if threading.current_thread().name != "dst-prefetch":
            asked.add(_call_key(fn, args, params))
        return real_compute(fn, args, params, choice)

    def drawing(builder: Any, *args: Any, **params: Any) -> Any:
        fig = real_figure(builder, *args, **params)
        drawn.append(json.loads(pio.to_json(fig, validate=False)))
        return fig

    monkeypatch.setattr(data, "compute", recording)
    monkeypatch.setattr(ui, "figure", drawing)
    monkeypatch.setattr(prefetch, "start", lambda **_: False)
    at = _app()
    at.run()
    runs = list(at.session_state["runs"])
    sources = dict(at.session_state["sources"])
    defaults = Defaults(runs, runs[0], run_colours(list(sources)), sources=sources, choice=data.DECLARED)
    declared = {page.url_path: page.first(defaults).then for page in PREFETCHED if page.first}
    then = {url: prefetch.then_job(job) for url, job in declared.items() if job is not None}  # next steps, as jobs
    visit_every_tab(at, list(then))
    pages_asked = set(asked)
    job_figures: list[Any] = []

    def job_drawing(builder: Any, *args: Any, **params: Any) -> Any:
        fig = real_figure(builder, *args, **params)
        job_figures.append(json.loads(pio.to_json(fig, validate=False)))
        return fig

    asked.clear()
    monkeypatch.setattr(prefetch.place, "figure", job_drawing)
    assert [job.__name__ for job, _ in then.values()] == [
        "slot_detail_job",
        "attribute_job",
        "compounding_job",
        "dialogue_job",
        "slices_job",
        "review_job",
        "reconcile_job",
    ]
    for job, args in then.values():  # e.g. prefetch.slot_detail_job(runs[0], sources, None, data.DECLARED)
        job(*args)
    names = {key[0].rpartition(".")[2] for key in asked}
    expected = {
        "value_confusions",
        "slot_error_turns",
        "jga_by_attribute",
        "history_pairs_of",
        "compounding_curve",
        "dialogue_view",
        "searchable",
        "find_slices",
        "review_errors",
        "review_episodes",
        "reconciled",
    }
    assert expected <= names, names
    assert asked <= pages_asked, f"asked by a job, never by a page: {sorted(asked - pages_asked)}"
    assert len(job_figures) == 4  # the confusion heatmap, JGA by attribute, the compounding chart, the turn strip
    assert all(fig in drawn for fig in job_figures), "a job drew a figure no page draws"


@pytest.mark.slow
def test_the_prefetch_imports_what_the_pages_import() -> None:
    """In a fresh interpreter: the pages' own imports (read from their files) and pandas' Styler are loaded by
    the job, SQLAlchemy (the Dialogue viewer's tag form) and jinja2 (tinted tables) among them."""
    script = (
        "import sys; from ui import prefetch\n"
        "lazy = {'sqlalchemy', 'jinja2'}\n"
        "assert not lazy & set(sys.modules), 'already imported: the check would prove nothing'\n"
        "names = prefetch.page_modules()\n"
        "assert {'ui.review', 'analysis.review.analysis', 'analysis.fewjoint.scoring', 'ui.reconcile'} <= set(names), names\n"
        "n = prefetch.import_pages_job()\n"
        "assert lazy <= set(sys.modules), lazy - set(sys.modules)\n"
        "assert {'ui.review', 'analysis.reconcile.core', 'pandas.io.formats.style'} <= set(sys.modules)\n"
        "print(n)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) >= 10


def _imports_by_ast(source: str) -> list[tuple[str, list[str]]]:
    """The reference `top_level_imports` must equal: the module body's import nodes (main thread only)."""
    found: list[tuple[str, list[str]]] = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.module, [alias.name for alias in node.names]))
    return found


TRICKY_IMPORTS = """\
\"\"\"Docstring: import not_this\nfrom nor_this import x\"\"\"
from __future__ import annotations
import os.path as osp, json  # comment: import nope
import a.b.c; from d.e import (f,
    g as h,  # a comment inside
    i)
from . import sibling
from .. import cousin
from ...far import thing
from .near import other
from k import *
from l \\
    import m
x = "import in_a_string"
if True:
    import nested_not_top_level
try:
    import in_try
except ImportError:
    pass
def f():
    import in_function
class C:
    from in_class import y
import last
"""


def test_page_imports_are_read_from_tokens_as_the_ast_reads_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """The prefetch thread reads the pages' imports from tokens: CPython 3.11's `ast.parse` keeps its recursion
    count interpreter-wide, and a parse in this thread beside Streamlit's parse of a page script failed a page
    in CI ("AST constructor recursion depth mismatch"). Same answer as the AST, on every page and on a file
    written to trip a reader up; and no `ast.parse` on the way."""
    pages = sorted((ROOT / "pages").glob("*.py"))
    expected = {page: _imports_by_ast(page.read_text(encoding="utf-8")) for page in pages}
    tricky = _imports_by_ast(TRICKY_IMPORTS)
    meant = ["__future__", "os.path", "json", "a.b.c", "d.e", "k", "l", "last"]
    assert [module for module, _ in tricky] == meant, tricky  # the file does hold what it is meant to
    parsed: list[str] = []
    with monkeypatch.context() as patch:  # (lifted before asserting: pytest's assertion report parses)
        patch.setattr(ast, "parse", lambda *a, **k: parsed.append("called") or pytest.fail("no ast.parse"))
        read = list(prefetch.top_level_imports(TRICKY_IMPORTS))
        by_page = {page: list(prefetch.top_level_imports(page.read_text(encoding="utf-8"))) for page in pages}
        modules = prefetch.page_modules()  # the registry's pages, through the same reader
    assert not parsed
    assert read == tricky
    for page in pages:
        assert by_page[page] == expected[page], page.name
    assert sum(len(found) for found in expected.values()) > 3 * len(pages)
    assert {"ui", "analysis.views", "pandas.io.formats.style"} <= set(modules), modules


def test_a_page_import_that_fails_does_not_escape_the_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "broken_on_import_xyz.py").write_text("raise RuntimeError('broken on purpose')\n")
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    (tmp_path / "0.py").write_text("import broken_on_import_xyz\n")  # first: the rest must still be imported
    (tmp_path / "a.py").write_text("import json\nfrom json import dumps, decoder\nimport no_such_module_here\n")
    (tmp_path / "b.py").write_text("from . import sibling\nimport tests.malformed_module_does_not_exist\n")
    names = prefetch.page_modules(tmp_path)
    assert names[:6] == [
        "broken_on_import_xyz",
        "json",
        "json.dumps",
        "json.decoder",
        "no_such_module_here",
        "tests.malformed_module_does_not_exist",
    ]
    assert prefetch.import_pages_job(tmp_path) == 3  # json, json.decoder, pandas' Styler


def test_prefetch_starts_once_per_selection_and_convention(monkeypatch: pytest.MonkeyPatch) -> None:
    """(AppTest reruns only the page after the first run, so the frame's call is driven directly here.)"""
    started: list[list] = []
    session: dict[str, Any] = {}
    choice = {"value": data.DECLARED}
    runs = ["a", "b", "c"]
    sources = {r: _source(r) for r in runs}
    monkeypatch.setattr(prefetch, "run_jobs", lambda jobs: started.append(jobs))
    monkeypatch.setattr(prefetch, "st", SimpleNamespace(session_state=session))
    monkeypatch.setattr(
        prefetch,
        "state",
        SimpleNamespace(
            selected_runs=lambda: list(runs),
            focus_run=lambda: runs[0],
            sources=lambda: sources,
            convention_choice=lambda: choice["value"],
        ),
    )
    assert prefetch.start() is True
    started_threads = len(started)
    for _ in range(50):  # the worker runs in a thread
        if started:
            break
        time.sleep(0.01)
    assert len(started) == 1, started_threads
    names = [
        getattr(args[0], "__qualname__", run.__qualname__) if args else run.__qualname__ for run, args in started[0]
    ]
    assert "domain_jga" in names and "depth_jga" in names and "depth_lines" in names
    assert prefetch.start() is False  # same runs, focus and convention: nothing new to compute
    choice["value"] = "trade"
    assert prefetch.start() is True
    for _ in range(50):
        if len(started) == 2:
            break
        time.sleep(0.01)
    assert len(started) == 2
    # The imports job takes no convention; the Reconcile page scores under its own list, not the sidebar's.
    assert all(args[-1] == "trade" for job, args in started[1] if args and job is not prefetch.reconcile_job)
    assert sum(job is prefetch.reconcile_job for job, _ in started[1]) == 1
    runs.pop()
    assert prefetch.start() is True  # another selection
    # Its thread calls the patched run_jobs; waited for here, before the patch is undone: a thread that ran
    # after the teardown computed the real plan for these made-up runs (18 s of the fast suite).
    assert prefetch.wait(30) and len(started) == 3


def test_a_failing_view_does_not_escape_the_prefetch_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_: Any) -> Any:
        raise ValueError("boom")

    monkeypatch.setattr(data, "compute", broken)
    prefetch.run_jobs([(prefetch.view_job, (len, [], {}, data.DECLARED))])  # logs at debug level, raises nothing


def test_prefetch_yields_to_a_running_page(monkeypatch: pytest.MonkeyPatch) -> None:
    done: list[str] = []
    # Only this test's job counts: prefetch threads of earlier AppTest sessions may still be running.
    monkeypatch.setattr(data, "compute", lambda fn, *_: done.append(fn.__qualname__) if fn is len else None)
    with prefetch.page_running():
        worker = threading.Thread(target=prefetch.run_jobs, args=([(prefetch.view_job, (len, [], {}, data.DECLARED))],))
        worker.start()
        time.sleep(0.2)
        assert done == []  # a page is being computed: the prefetch has not started its job
    worker.join(timeout=5)
    assert done == ["len"]
    assert prefetch._running == 0


def test_the_comparison_job_yields_between_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Slices page's comparison runs (20 runs' tables at 1,000 runs: seconds beside a page script) are
    found one run at a time: a page clicked while the job runs waits for one run's gold fingerprint, not for
    all of them; then `comparison_runs` itself, from the fingerprints memoised on each scored run."""
    events: list[str] = []
    page = threading.Event()

    def fingerprint(run: str) -> None:
        events.append(f"fingerprint {run}")
        if run == "b":  # a page is clicked while the job computes b's fingerprint, and runs for 0.3 s
            entered = threading.Event()

            def click() -> None:
                with prefetch.page_running():
                    entered.set()
                    page.wait(0.3)
                    events.append("page done")

            threading.Thread(target=click).start()
            entered.wait(5)

    def compute(fn: Any, args: list[Any], *_: Any) -> Any:
        events.append(fn.__name__)
        return {}  # `unread_gold`: every run read

    monkeypatch.setattr(data, "compute", compute)
    monkeypatch.setattr(data, "scored", lambda source, choice: source)
    monkeypatch.setattr(prefetch.views, "gold_fingerprint", fingerprint)
    monkeypatch.setattr(prefetch, "drawn", lambda candidates, *_, **__: candidates)
    runs = ["a", "b", "c", "d"]
    prefetch.comparison_job(runs, "a", {r: r for r in runs}, {}, data.DECLARED)
    assert events == [
        "unread_gold",
        "fingerprint a",
        "fingerprint b",
        "page done",  # c waited for the page clicked during b
        "fingerprint c",
        "fingerprint d",
        "comparison_runs",
    ]
    assert prefetch._running == 0


def test_run_jobs_starts_no_job_after_its_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """The launcher's warm-up is time-boxed (`scripts/serve.py`): jobs past the deadline are left over."""
    done: list[int] = []
    monkeypatch.setattr(data, "compute", lambda fn, args, *_: done.append(args[0]) if fn is len else None)
    jobs = [(prefetch.view_job, (len, [i], {}, data.DECLARED)) for i in range(3)]
    assert prefetch.run_jobs(jobs, deadline=time.monotonic() - 1) == 0 and done == []
    assert prefetch.run_jobs(jobs, deadline=time.monotonic() + 60) == 3 and done == [0, 1, 2]


def test_interval_warmups_are_what_the_domain_and_depth_views_use(monkeypatch: pytest.MonkeyPatch) -> None:
    """After the per-run warmups, per-domain and per-depth JGA assemble without a single new bootstrap."""
    from analysis import stats, views
    from analysis.demo.testing import scored_from_states

    scored = scored_from_states(
        {"a": [{"hotel": {"area": "east"}}, {"hotel": {"area": "east"}, "taxi": {"leave": "9"}}], "b": [{}]},
        {"a": [{"hotel": {"area": "east"}}, {"hotel": {"area": "west"}}], "b": [{}]},
    )
    for fn, _, params in prefetch.warmups(["a"]):
        fn(scored, **params)

    def no_more(*_: Any, **__: Any) -> Any:
        raise AssertionError("an interval was computed again instead of read from the memo")

    monkeypatch.setattr(stats, "_bootstrap_ci", no_more)
    per_domain = views.domain_jga([scored])
    per_depth = views.depth_jga([scored])
    assert {"jga_low", "jga_high"} <= set(per_domain.columns) and {"jga_low", "jga_high"} <= set(per_depth.columns)
    assert per_domain["jga_low"].notna().any()


def test_the_reconcile_job_leaves_the_page_nothing_to_score(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Reconcile page's first visit after the prefetch finds the focus run reconciled under its default
    conventions and the default pair explained: scoring again would fail this test."""
    from ui import reconcile

    monkeypatch.setattr(prefetch, "start", lambda **_: False)
    at = _app()
    at.run()
    runs = list(at.session_state["runs"])
    sources = dict(at.session_state["sources"])
    data._kept_view.clear()
    prefetch.reconcile_job(runs[0], sources, {})
    source = sources[runs[0]]
    conventions = data.compute(reconcile.default_conventions, [data.Loaded(source)], {}, data.DECLARED)
    rec = data.compute(reconcile.reconciled, [data.Loaded(source)], {"conventions": conventions}, data.DECLARED)
    assert not isinstance(rec, str) and len(rec._explained) == 1  # the default pair, explained

    def no_scoring(*_: Any, **__: Any) -> Any:
        raise AssertionError("the page scored the run again")

    monkeypatch.setattr(reconcile, "reconcile", no_scoring)
    monkeypatch.setattr(type(rec), "_units", no_scoring)
    at.switch_page("pages/reconcile.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("flip" in s.value for s in at.subheader)
