"""`scripts/serve.py` (what `make run` starts): the workspace warm-up, then the Streamlit server. It says on
stderr when the workspace is ready, or why it could not warm it, and starts the server either way."""

from __future__ import annotations

import importlib.util
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from analysis.workspace import read_manifest

ROOT = Path(__file__).resolve().parents[1]
SERVE = ROOT / "scripts" / "serve.py"
DEMO = ROOT / "data" / "demo" / "workspace.toml"


@pytest.fixture(autouse=True)
def _arrow_pool_put_back() -> Iterator[None]:
    """`serve.main` (run in this process by some tests) sets ARROW_DEFAULT_MEMORY_POOL in the environment, as
    it must for the server it starts: put back after each test, or the worker children of every later test
    in this process inherit it (their starting address space 0.40 GB instead of 1.47 GB: a memory-limit test
    of tests/test_isolated_limits.py once passed its file under the limit after this module)."""
    before = os.environ.get("ARROW_DEFAULT_MEMORY_POOL")
    yield
    if before is None:
        os.environ.pop("ARROW_DEFAULT_MEMORY_POOL", None)
    else:
        os.environ["ARROW_DEFAULT_MEMORY_POOL"] = before


_spec = importlib.util.spec_from_file_location("serve", SERVE)
assert _spec is not None and _spec.loader is not None
serve = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(serve)


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(workspace: Path) -> Iterator[tuple[str, list[str]]]:
    """The launcher on a free port; yields its URL and its stderr lines so far (a live list)."""
    port = _port()
    options = ["--server.headless", "true", "--server.address", "127.0.0.1", "--server.port", str(port)]
    process = subprocess.Popen(
        [sys.executable, str(SERVE), "--workspace", str(workspace), *options, "--browser.gatherUsageStats", "false"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(process.stderr or []), daemon=True).start()
    try:
        yield f"http://127.0.0.1:{port}", lines
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


def _line(lines: list[str], prefix: str, timeout: float = 240) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [line for line in lines if line.startswith(prefix)]
        if found:
            return found[0].strip()
        time.sleep(0.1)
    raise AssertionError(f"no line starting {prefix!r} within {timeout} s; stderr: {''.join(lines)[-2000:]}")


def _healthy(url: str, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=5) as response:
                return response.status == 200
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@pytest.mark.slow
@pytest.mark.skipif(not DEMO.exists(), reason=f"the demo workspace {DEMO} is absent (make demo)")
def test_the_launcher_warms_every_run_of_the_workspace() -> None:
    runs = len(read_manifest(DEMO).entries)
    with serving(DEMO) as (url, lines):
        line = _line(lines, "dashboard: workspace")
        assert re.match(rf"dashboard: workspace ready: {runs} runs( \(every run from the score store\))?; ", line), line
        assert "first views computed" in line and line.endswith("starting the server"), line
        assert _healthy(url)
        assert not any("Traceback" in entry for entry in lines), "".join(lines)
        assert not any("Plotly not preloaded" in entry for entry in lines), "".join(lines)
        # Every page (a deep link too) asks for Plotly with the page, and the file it names is served.
        for path in ("/", "/dialogue?run=x&turn=2"):
            with urllib.request.urlopen(f"{url}{path}", timeout=10) as response:
                html = response.read().decode("utf-8")
            chunk = re.search(r'import\("\./(static/js/PlotlyChart\.[\w-]+\.js)"\)', html)
            assert chunk, html[-1500:]
            assert f'<link rel="modulepreload" crossorigin href="./{chunk[1]}">' in html
        with urllib.request.urlopen(f"{url}/{chunk[1]}", timeout=10) as response:
            assert response.status == 200
            assert len(response.read()) == (Path(streamlit_static()) / chunk[1]).stat().st_size


@pytest.mark.slow
def test_a_broken_workspace_is_reported_and_the_server_keeps_serving(tmp_path: Path) -> None:
    manifest = tmp_path / "workspace.toml"
    manifest.write_text("[workspace\nname = 'broken'\n", encoding="utf-8")
    with serving(manifest) as (url, lines):
        line = _line(lines, "dashboard: workspace")
        assert line.startswith("dashboard: workspace not warmed: "), line
        assert str(manifest) in line  # the one-line error names the file
        assert _healthy(url)


def streamlit_static() -> str:
    from streamlit import file_util

    return file_util.get_static_dir()


def _fake_static(folder: Path, chunks: dict[str, str]) -> Path:
    """A Streamlit-like static folder: index.html listing index.js and one preloaded shared module."""
    (folder / "static" / "js").mkdir(parents=True)
    (folder / "index.html").write_text(
        '<html><head><script type="module" crossorigin src="./static/js/index.a1.js"></script>\n'
        '<link rel="modulepreload" crossorigin href="./static/js/shared.b2.js">\n</head><body></body></html>',
        encoding="utf-8",
    )
    (folder / "favicon.png").write_bytes(b"png")
    for name, text in {"index.a1.js": "", "shared.b2.js": "", "own.c3.js": "", **chunks}.items():
        (folder / "static" / "js" / name).write_text(text, encoding="utf-8")
    return folder


def test_the_page_asks_for_plotly_with_itself_and_loads_it_when_idle(tmp_path: Path) -> None:
    chunk = 'import{o as e}from"./shared.b2.js";import"./own.c3.js";export default e'
    static = _fake_static(tmp_path / "static", {"PlotlyChart.Xy-9.js": chunk})
    original = (static / "index.html").read_text(encoding="utf-8")
    mirror = tmp_path / "mirror"
    mirror.mkdir()

    assert serve.preload_plotly(static, mirror) == "PlotlyChart.Xy-9.js"

    html = (mirror / "index.html").read_text(encoding="utf-8")
    head, body = html.split("</head>")
    assert "<body></body></html>" in body and head.startswith(original.split("</head>")[0])
    assert '<link rel="modulepreload" crossorigin href="./static/js/PlotlyChart.Xy-9.js">' in head
    assert '<link rel="modulepreload" crossorigin href="./static/js/own.c3.js">' in head  # its own import
    assert head.count('href="./static/js/shared.b2.js"') == 1  # already preloaded by Streamlit: not twice
    assert (
        '(window.requestIdleCallback || ((run) => setTimeout(run, 1)))(() => import("./static/js/PlotlyChart.Xy-9.js")'
        in head
    )
    assert (static / "index.html").read_text(encoding="utf-8") == original  # Streamlit's own page untouched
    assert sorted(p.name for p in mirror.iterdir()) == ["favicon.png", "index.html", "static"]
    for name in ("favicon.png", "static"):
        assert (mirror / name).is_symlink() and (mirror / name).resolve() == (static / name).resolve()
    assert (mirror / "static" / "js" / "PlotlyChart.Xy-9.js").read_text(encoding="utf-8") == chunk


@pytest.mark.parametrize("chunks", [{}, {"PlotlyChart.a.js": "", "PlotlyChart.b.js": ""}], ids=["none", "two"])
def test_without_exactly_one_plotly_file_nothing_is_changed(tmp_path: Path, chunks: dict[str, str]) -> None:
    static = _fake_static(tmp_path / "static", chunks)
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    with pytest.raises(ValueError, match=rf"{len(chunks)} files static/js/PlotlyChart\.\*\.js"):
        serve.preload_plotly(static, mirror)
    assert not any(mirror.iterdir())


def test_the_installed_streamlit_has_the_plotly_file_the_launcher_preloads(tmp_path: Path) -> None:
    """A Streamlit upgrade that renames its Plotly component fails here, not silently in `make run`."""
    chunk = serve.preload_plotly(Path(streamlit_static()), tmp_path)
    assert (Path(streamlit_static()) / "static" / "js" / chunk).stat().st_size > 1_000_000
    assert f'import("./static/js/{chunk}")' in (tmp_path / "index.html").read_text(encoding="utf-8")


def test_the_warm_up_budget_is_what_is_left_of_the_restart_target_when_the_store_holds_every_run() -> None:
    # Runs read and scored now: the full budget for the other pages' first views.
    assert serve.warm_budget(False, 0.0) == serve.WARM_BUDGET
    assert serve.warm_budget(False, 30.0) == serve.WARM_BUDGET
    # Every run in the score store: the server listens by STORED_READY s after the start.
    assert serve.warm_budget(True, 1.0) == pytest.approx(serve.STORED_READY - 1.0)
    assert serve.warm_budget(True, serve.STORED_READY + 2.0) == 0.0
    assert serve.warm_budget(True, -100.0) == serve.WARM_BUDGET  # never more than the cold budget
    assert serve.STORED_READY < 5.0  # issue 21: a warm 100-run restart answers within 5 s


def test_a_workspace_whose_runs_are_all_stored_is_told_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`all_stored`: True only once the score store holds every entry; an empty store (or none) is False."""
    from analysis.store import runs as store_runs

    if not DEMO.exists():
        pytest.skip(f"the demo workspace {DEMO} is absent (make demo)")
    entries = read_manifest(DEMO).entries[:2]
    monkeypatch.setenv("DST_CACHE_DIR", str(tmp_path / "cache"))
    assert not serve.all_stored(entries)
    store_runs.ensure_all(entries[:1], entries[0].meta.convention, workers=1)
    assert not serve.all_stored(entries)  # one of two
    for entry in entries:
        store_runs.ensure_all([entry], entry.meta.convention, workers=1)
    assert serve.all_stored(entries)
    monkeypatch.setenv("DST_CACHE_DIR", "")  # no store at all
    assert not serve.all_stored(entries)


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A score store (its `DST_CACHE_DIR`) holding every demo run, of this test module's own: what the
    user's store (`~/.cache`) holds depends on what ran before, and on the scorer's version."""
    from analysis.store import runs as store_runs

    if not DEMO.exists():
        pytest.skip(f"the demo workspace {DEMO} is absent (make demo)")
    cache = tmp_path_factory.mktemp("demo-store")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DST_CACHE_DIR", str(cache))
        for entry in read_manifest(DEMO).entries:
            store_runs.ensure_all([entry], entry.meta.convention, workers=1)
    return cache


@pytest.mark.parametrize("stored", [True, False])
def test_the_pages_imports_wait_for_the_session_when_every_run_is_stored(
    stored: bool, demo_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With every run in the score store the launcher only has until `STORED_READY`: the pages' imports (a
    job of up to a second, run to its end once started) are left to the session's prefetch; a workspace
    read from its files keeps them in the warm-up."""
    from ui import prefetch

    monkeypatch.setenv("DST_CACHE_DIR", str(demo_store))
    planned: list[list[Any]] = []
    monkeypatch.setattr(serve, "all_stored", lambda entries: stored)
    monkeypatch.setattr(prefetch, "run_jobs", lambda jobs, deadline=None: planned.append(list(jobs)) or 0)
    monkeypatch.setattr(serve, "warm_budget", lambda every_run_stored, elapsed: 1.0)
    serve.warm(str(DEMO))
    rest = planned[-1]
    assert any(job is prefetch.review_job for job, _ in rest)  # the other pages' views are planned either way
    assert any(job is prefetch.import_pages_job for job, _ in rest) is not stored


def test_the_server_watches_no_source_file_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Streamlit's source watcher rescans every loaded module's path after a page run that follows a new import
    (0.25-0.35 s of the event loop per first visit): the launcher turns it off, unless told otherwise."""
    from streamlit.web import cli

    started: list[list[str]] = []
    monkeypatch.setattr(serve, "warm", lambda *_: "warmed")
    monkeypatch.setattr(serve, "serve_plotly_preloaded", lambda: None)
    monkeypatch.setattr(cli, "main", lambda: started.append(list(sys.argv)))
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    serve.main(["--workspace", str(DEMO)])
    serve.main(["--workspace", str(DEMO), "--server.fileWatcherType", "auto"])
    assert "--server.fileWatcherType=none" in started[0]
    assert "--server.fileWatcherType=none" not in started[1] and "auto" in started[1]


def test_the_launcher_says_how_far_the_scoring_of_new_runs_is(capsys: pytest.CaptureFixture[str]) -> None:
    """A workspace of runs the store does not hold (a sweep's new folder: minutes at 1,000 runs): a line on
    stderr at the start, every few seconds, and at the end, so the launcher is not taken for stuck."""
    said = serve._scoring_said(every_s=3600)
    for done in (0, 1, 2, 3):
        said(done, 4)
    said(4, 4)
    first, last = capsys.readouterr().err.splitlines()
    assert first == "dashboard: scoring 4 new runs into the store: 0 done"
    assert re.fullmatch(r"dashboard: scoring 4 new runs into the store: 4 done in \d+ s", last), last


def test_ctrl_c_during_the_launchers_scoring_is_one_line(tmp_path: Path) -> None:
    """`make run` on a sweep the store does not hold, Ctrl-C while its runs are scored (SIGINT to the whole
    process group): "dashboard: interrupted", exit 130, no traceback from the launcher or its worker children
    (both printed one before), none of them left running."""
    from tests.test_cli_store import interrupted
    from tests.test_workspace_batch import _copies

    manifest = _copies(tmp_path / "runs", 40)
    command = [sys.executable, str(ROOT / "scripts" / "serve.py"), "--workspace", str(manifest)]
    command += ["--server.headless", "true"]
    env = {"DST_CACHE_DIR": str(tmp_path / "cache")}
    code, said, left = interrupted(command, env, ready="new runs into the store: 0 done")
    assert code == 130, said
    assert "dashboard: interrupted" in said and "Traceback" not in said, said
    assert not left, f"worker processes outlived the interrupted launcher: {left}"
