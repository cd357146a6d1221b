"""`make run`: the dashboard's server, started once the workspace is read and its first views computed.

`streamlit run app.py -- --workspace PATH` serves the same dashboard; this launcher runs exactly that, in
the same process, after a warm-up: it reads every run of the workspace, computes the Overview (the
leaderboard with its intervals, and its chart) and then, for at most `WARM_BUDGET` seconds, what a
session's prefetch computes after its first page (`ui.prefetch.jobs`: the other pages' first views and
figures, and the modules the pages import), all into Streamlit's caches and the interpreter; then it
starts the server. The URL appears when the dashboard can answer at once: the first browser finds its
pages computed, as a second visitor would.

When the score store (`analysis.store`) already holds every run, a start reads no run: the Overview is one
DuckDB query over the store, and the server listens at most `STORED_READY` seconds after the launcher
started, the other pages' first views computed in what is left of that (at 100 MultiWOZ-size runs they
take a minute of CPU: no budget would cover them; a session's prefetch computes them after its first page),
and the pages' imports left to that prefetch too (a job started before the deadline runs to its end, and
that one takes up to a second).

Warming before the server listens, not beside it, is on purpose: Streamlit serves its JavaScript from
this same Python process, so work in a background thread while a browser loads the page slows the page
down (measured: 4.4-5.3 s to the first chart instead of 3.3-3.7 s on a two-core machine).

The page it serves also asks for Plotly at once (`preload_plotly`): Streamlit's page loads its 4.7 MB Plotly
component only when the first chart arrives and then spends about a second compiling it; here the browser
fetches it with the page and compiles it while it waits for the server (interleaved A/B on a two-core
machine, empty browser cache: first chart 2.5-3.2 s instead of 3.5-4.3 s; benchmarks/README.md).

    python scripts/serve.py [--workspace PATH] [streamlit run options, e.g. --server.port 8502]
"""

from __future__ import annotations

import argparse
import atexit
import ctypes
import logging
import math
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `ui` and `analysis`, as app.py imports them
APP = ROOT / "app.py"
DEFAULT_WORKSPACE = ROOT / "data" / "demo" / "workspace.toml"
READY = "dashboard: workspace ready"
NOT_WARMED = "dashboard: workspace not warmed"
# Seconds the launcher spends on the other pages' first views before it starts the server anyway (what
# is left, a session's prefetch computes after its first page). 20 MultiWOZ-size runs need about 3 s.
WARM_BUDGET = 6.0
# With every run in the score store: seconds from the launcher's start to the server listening, at most
# (issue 21: a 100-run workspace answers within 5 s of a restart; Streamlit's own start follows the warm-up).
STORED_READY = 3.0  # on a slow two-core machine imports and the Overview take 2.4 s of it, the other pages'
# first views the rest (a job started before it runs to its end), then Streamlit starts (0.7 s)
# Streamlit's source watcher (its "rerun on save") off: with it, every page run after a new import anywhere in
# the process (a page's first visit, the prefetch's) rescans the path of every loaded module, some 3,000, on the
# server's event loop: 0.25-0.35 s of CPU per first visit while the page's last messages wait to be sent.
# `--server.fileWatcherType auto` turns it back on (while editing the code).
FILE_WATCHER = "none"
# Streamlit's lazily loaded Plotly component: static/js/PlotlyChart.<hash>.js in its static folder.
PLOTLY_CHUNK = "PlotlyChart"
IMPORTS = re.compile(r'(?:from|import)\s*"\./([\w.-]+\.js)"')


def preload_plotly(static: Path, mirror: Path) -> str:
    """Fill the empty folder `mirror` with Streamlit's static folder `static` (links to its files) and an
    index.html that fetches the Plotly component with the page (`modulepreload`) and evaluates it as soon as
    the browser is idle (`requestIdleCallback`, i.e. while it waits for the server's first messages), so the
    first chart does not wait a second for it. The component's module is then in the browser's module map:
    Streamlit's own lazy import of it later finds it done. Returns the component's file name; raises
    ValueError (and leaves `mirror` empty) when the installed Streamlit does not have exactly one such file
    or its index.html has no </head>."""
    chunks = sorted((static / "static" / "js").glob(f"{PLOTLY_CHUNK}.*.js"))
    if len(chunks) != 1:
        raise ValueError(f"{len(chunks)} files static/js/{PLOTLY_CHUNK}.*.js in {static}, expected 1")
    index = (static / "index.html").read_text(encoding="utf-8")
    if "</head>" not in index:
        raise ValueError(f"{static / 'index.html'} has no </head>")
    chunk = chunks[0].name
    listed = set(re.findall(r'static/js/([\w.-]+\.js)"', index))
    needed = [chunk, *IMPORTS.findall(chunks[0].read_text(encoding="utf-8")[:20_000])]
    tags = [
        f'<link rel="modulepreload" crossorigin href="./static/js/{name}">'
        for name in dict.fromkeys(needed)
        if name not in listed
    ]
    # Browsers without requestIdleCallback (Safari) import it on the next turn of the event loop; a failed
    # import is left to Streamlit's own, which retries it when a chart needs it.
    tags.append(
        '<script type="module">(window.requestIdleCallback || ((run) => setTimeout(run, 1)))'
        f'(() => import("./static/js/{chunk}").catch(() => {{}}), {{timeout: 1500}})</script>'
    )
    for entry in static.iterdir():
        if entry.name != "index.html":
            (mirror / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    head = "\n    ".join(["<!-- make run: Plotly fetched with the page (scripts/serve.py) -->", *tags])
    (mirror / "index.html").write_text(index.replace("</head>", f"  {head}\n  </head>", 1), encoding="utf-8")
    return chunk


def serve_plotly_preloaded() -> str | None:
    """Point Streamlit's static files at a mirror made by `preload_plotly` (a temporary folder removed at
    exit). Returns why it could not (the server then serves Streamlit's own page), or None."""
    from streamlit import file_util

    mirror = Path(tempfile.mkdtemp(prefix="dst-dashboard-static-"))
    atexit.register(shutil.rmtree, mirror, ignore_errors=True)
    try:
        preload_plotly(Path(file_util.get_static_dir()), mirror)
    except (OSError, ValueError) as exc:
        shutil.rmtree(mirror, ignore_errors=True)
        return f"{type(exc).__name__}: {exc}"
    file_util.get_static_dir = lambda: str(mirror)  # read once, when the server creates its static route
    return None


def warm_budget(every_run_stored: bool, elapsed: float) -> float:
    """Seconds for the other pages' first views: `WARM_BUDGET` when runs had to be read and scored, else
    what is left of `STORED_READY` after `elapsed` seconds (never more than `WARM_BUDGET`)."""
    if not every_run_stored:
        return WARM_BUDGET
    return min(WARM_BUDGET, max(0.0, STORED_READY - elapsed))


def all_stored(entries: list[Any]) -> bool:
    """Whether the score store holds every manifest entry under its declared convention (header and table
    sizes checked: `analysis.store.runs.stored`); False without a store or when one cannot be read."""
    from ui.data import _stored

    return all(_stored(entry) for entry in entries)


def warm(workspace: str, started: float | None = None) -> str:
    """Read the workspace's runs, compute its first page, then the other pages' first views for the
    seconds `warm_budget` gives (`started`: the launcher's `time.perf_counter()` at its start), into
    Streamlit's caches; a one-line summary. Before the server exists: Streamlit's caches keep what is
    computed now for the sessions to come."""
    from ui import data, prefetch  # pandas, Plotly and analysis: most of a cold first page

    started = time.perf_counter() if started is None else started
    manifest = data.open_manifest(workspace)
    if isinstance(manifest, str):
        return f"{NOT_WARMED}: {manifest}"
    read: list[str] = []
    sources, failed = data.load_workspace(manifest, None, _scoring_said(), read=read)
    runs = list(sources)
    if not runs:
        return f"{NOT_WARMED}: none of its {len(manifest.entries)} runs loaded"
    # A restart (the store held every run already), not a workspace whose runs were just scored into the store:
    # those get the whole warm-up, as a first start always has (their entries were stored a moment ago).
    every_run_stored = not failed and not read and all_stored([s.entry for s in sources.values()])
    prefetch.run_jobs(prefetch.first_page_jobs(runs, sources, data.DECLARED))
    budget = warm_budget(every_run_stored, time.perf_counter() - started)
    rest = prefetch.jobs(runs, runs[0], sources, data.DECLARED, list(manifest.mappings), {})
    if every_run_stored:  # the pages' imports (up to 1 s, not to be cut short) are left to the session's prefetch
        rest = [job for job in rest if job[0] is not prefetch.import_pages_job]
    done = prefetch.run_jobs(rest, deadline=time.monotonic() + budget) if budget > 0 else 0
    return (
        f"{READY}: {len(runs)} runs"
        + (" (every run from the score store)" if every_run_stored else "")
        + (f" ({len(failed)} failed to load: the dashboard says why)" if failed else "")
        + (
            "; every page's first views computed"
            if done == len(rest)
            else f"; {done} of the other pages' {len(rest)} first views computed, the rest after the first page"
        )
    )


def _scoring_said(every_s: float = 5.0) -> Callable[[int, int], None]:
    """`load_workspace`'s progress while the runs the store does not hold are scored into it: a line on
    stderr every `every_s` seconds and at the end (1,000 new runs take minutes; the launcher is not stuck)."""
    from analysis.pace import Pace

    said = [-math.inf]
    pace = Pace()

    def scoring(done: int, total: int) -> None:
        now, progress = time.monotonic(), pace(done, total)  # at every answer: its pace
        if done == total or now - said[0] >= every_s:
            said[0] = now
            print(f"dashboard: scoring {total:,} new runs into the store: {progress}", file=sys.stderr, flush=True)

    return scoring


# glibc malloc arenas for the server (mallopt M_ARENA_MAX): Streamlit runs each session's script in a
# thread of its own, and glibc gives threads arenas of their own, up to 8 per core; what an upload's tables
# leave behind in each, malloc_trim (`ui.data.trim_memory`) cannot always hand back. A few arenas shared
# by all threads keep the freed memory together (Python holds the GIL: little contention).
# MALLOC_ARENA_MAX set in the environment wins.
ARENA_MAX = 2
M_ARENA_MAX = -8  # glibc's malloc.h


def limit_arenas(count: int = ARENA_MAX) -> bool:
    """Ask glibc to create at most `count` malloc arenas from now on (before the server's threads start);
    False when this is not glibc or MALLOC_ARENA_MAX is set."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    try:
        return bool(ctypes.CDLL("libc.so.6").mallopt(M_ARENA_MAX, count))
    except (OSError, AttributeError):
        return False


def arrow_on_glibc() -> None:
    """Arrow's buffers (the scored tables' string columns) from glibc's heap too, before pyarrow is
    imported: Arrow's default pool (mimalloc) keeps what a session's script thread freed in that thread's
    segments after the thread ends, where malloc_trim cannot reach it. Measured: ten threads each making
    and dropping 22 MB of Arrow strings kept +218 MB with mimalloc, +28 MB with glibc and malloc_trim; a
    real server after 20 browser uploads of 8 MB, every session ended: +494 MB with mimalloc, +148 MB
    with glibc (benchmarks/bench_upload_memory.py). ARROW_DEFAULT_MEMORY_POOL set in the environment wins."""
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")


def upload_cap_mb(workspace: str) -> int:
    """The server's own upload cap, in whole MB: the dashboard's upload limit (`ui.data.upload_limit_mb`,
    never above what the readers read). Streamlit counts an upload's body against it as it streams in and
    stops at the cap, so a larger file is refused before the server holds it whole."""
    from ui.data import open_manifest, upload_limit_mb

    opened = open_manifest(workspace)
    return max(math.ceil(upload_limit_mb(None if isinstance(opened, str) else opened)), 1)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--workspace", default=str(DEFAULT_WORKSPACE), help="the workspace manifest (TOML)")
    known, streamlit_options = parser.parse_known_args(argv)
    limit_arenas()
    arrow_on_glibc()
    started = time.perf_counter()
    # Streamlit notes each cache used before its runtime exists ("No runtime found"): expected here.
    import streamlit.runtime.caching.cache_data_api  # noqa: F401  (creates the logger, with Streamlit's level)

    cache_log = logging.getLogger("streamlit.runtime.caching.cache_data_api")
    level = cache_log.level
    cache_log.setLevel(logging.ERROR)
    from ui.data import manifest_path  # keys the workspace as app.py does

    workspace = manifest_path(known.workspace)
    print(f"dashboard: reading {workspace} …", file=sys.stderr, flush=True)
    try:
        summary = warm(workspace, started)
    except Exception as exc:  # the dashboard shows the error itself; the server starts anyway
        summary = f"{NOT_WARMED}: {type(exc).__name__}: {exc}"
    finally:
        cache_log.setLevel(level)
    print(f"{summary} (in {time.perf_counter() - started:.1f} s); starting the server", file=sys.stderr, flush=True)
    problem = serve_plotly_preloaded()
    if problem:
        print(f"dashboard: Plotly not preloaded (the first chart waits for it): {problem}", file=sys.stderr)
    from streamlit.web import cli

    if not any(option.startswith("--server.maxUploadSize") for option in streamlit_options):
        streamlit_options.append(f"--server.maxUploadSize={upload_cap_mb(workspace)}")
    if not any(option.startswith("--server.fileWatcherType") for option in streamlit_options):
        streamlit_options.append(f"--server.fileWatcherType={FILE_WATCHER}")
    sys.argv = ["streamlit", "run", str(APP), *streamlit_options, "--", "--workspace", workspace]
    cli.main()


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:  # Ctrl-C before the server runs (its warm-up scoring a sweep): one line, no traceback
        print("dashboard: interrupted", file=sys.stderr, flush=True)
        sys.exit(130)
