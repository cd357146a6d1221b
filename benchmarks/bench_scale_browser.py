"""A 100-run workspace in a real browser (issue 21, requirement 4): warm restart and every page's first visit.

    .venv/bin/python benchmarks/bench_scale_browser.py [--runs 100] [--starts 3] [--read 0] [--profile]
        [--land TITLE] [--floor N]

1. Writes (or reuses) `--runs` perturbed MultiWOZ 2.1 test runs in `--runs-dir` (`bench_scale.write_runs`,
   default benchmarks/results/scale_runs) and a workspace manifest over them in `--cache-dir` (default
   benchmarks/results/scale_browser; both git-ignored), and scores them into the score store there (`DST_CACHE_DIR`; reused by the
   next invocation, so "warm" is the store of the previous start, as on a researcher's machine).
2. `--starts` times: starts the server as `make run` does (`scripts/serve.py`, tests/browser/conftest.py's
   `start_server`) with that `DST_CACHE_DIR`: seconds from the process start to the server answering
   /_stcore/health (target <= 5 s), the server's CPU seconds until then, its RSS (target <= 1 GB). Then a
   fresh Debian chromium (the browser tests' flags, empty browser cache) opens the dashboard (Overview: goto
   to its first chart drawn) and, after `--read` seconds, clicks every other page of the navigation in the
   sidebar's order: its first visit, from the click to the page's title drawn, its script finished
   (`[data-test-script-state="notRunning"]`) and its first chart (a trace) or table or message drawn
   (target <= 1 s each). For each visit also the server's CPU seconds (user + sys of its process, all
   threads): on a shared two-core machine wall-clock times are noisy, CPU much less so.
   `--land TITLE`: the browser opens that page instead (its URL), and the Overview is clicked like the
   others, so its first visit is measured as a click too, not only as the opening of a new browser (which
   includes loading Streamlit's front end).
3. Prints a table: median over the starts, wall and server CPU, each start's wall, and pages over 1 s.
4. `--floor N`: N times, a fresh server of a bare one-chart Streamlit app (Plotly preloaded, as the dashboard
   serves it) opened by a fresh chromium, goto to its chart drawn: what opening any Streamlit page costs on
   this machine, the floor under the "(opened)" row.

`--profile`: the server is started through a wrapper (same `scripts/serve.py` code path) that logs how
long each view (`ui.data.compute`, the score store's leaderboard, figures) and each page script takes;
after each visit the slowest of what the server computed for it are printed: which view makes a page slow.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "browser"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_scale import GOLD, _rss, manifest_text, write_runs  # noqa: E402
from conftest import CHROMIUM, CHROMIUM_ARGS, VIEWPORT, start_server, stop_server  # noqa: E402

from page_registry import PAGES  # noqa: E402

TARGET_RESTART = 5.0
TARGET_VISIT = 1.0
TARGET_RSS_GB = 1.0
# The page is drawn: its title (the page's h1 starts with its sidebar title), the script finished, and its
# first chart has a trace, or, on a page without a chart, a table or a message is shown.
PAGE_DRAWN = """(title) => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
    const main = document.querySelector('[data-testid="stMain"]') || document;
    const h1 = main.querySelector('h1');
    if (!h1 || !h1.innerText.trim().startsWith(title)) return false;
    const charts = [...main.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot')];
    if (charts.length) return Boolean(charts[0].querySelector('g.trace, g.hm'));
    return main.querySelectorAll('[data-testid="stDataFrame"], [data-testid="stTable"], [data-testid="stAlert"]')
        .length > 0;
}"""

# `--profile`: scripts/serve.py run with timers around the views and page scripts (a log line per call
# slower than 20 ms: seconds, thread, what), written to the file DST_BENCH_PROFILE names.
PROFILED_SERVE = """import functools, os, sys, threading, time
sys.path.insert(0, {root!r})
sys.path.insert(0, {scripts!r})
from analysis.settings import raw
LOG = open(raw("DST_BENCH_PROFILE"), "a", buffering=1, encoding="utf-8")

def timed(label, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            took = time.perf_counter() - start
            if took >= 0.02:
                what = label(args, kwargs) if callable(label) else label
                LOG.write(f"{{time.time():.3f}}\\t{{took:.3f}}\\t{{threading.current_thread().name}}\\t{{what}}\\n")
    return wrapper

def name_of(fn):
    return f"{{getattr(fn, '__module__', '?')}}.{{getattr(fn, '__qualname__', fn)}}"

import serve
from ui import data, place
data.compute = timed(lambda a, k: "compute " + name_of(a[0]), data.compute)
data.stored_leaderboard = timed("stored_leaderboard", data.stored_leaderboard)
data.load_workspace = timed("load_workspace", data.load_workspace)
place.figure = timed(lambda a, k: "figure " + name_of(a[0]), place.figure)
for name in dir(data):  # the score store's cross-run queries, whatever they are named
    fn = getattr(data, name)
    if name.startswith("stored_") and name != "stored_leaderboard" and callable(fn):
        setattr(data, name, timed("data." + name, fn))
from streamlit.navigation.page import StreamlitPage
StreamlitPage.run = timed(lambda a, k: "page script " + str(a[0].url_path or "overview"), StreamlitPage.run)
# start_server(runner=...) passes `run APP options -- --workspace PATH`
args = sys.argv[1:]
options, workspace = args[2:args.index("--")], args[args.index("--") + 2]
serve.main(["--workspace", workspace, *options])
"""


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` (all its threads), from /proc."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")


def build_workspace(runs_dir: Path, n: int, folder: Path) -> Path:
    """A manifest over the first `n` run files (as `bench_scale.py --restart` writes it: same store keys)."""
    folder.mkdir(parents=True, exist_ok=True)
    manifest = folder / f"workspace-{n}.toml"
    text = manifest_text(write_runs(runs_dir, n)[:n])
    if not manifest.exists() or manifest.read_text(encoding="utf-8") != text:
        manifest.write_text(text, encoding="utf-8")
    return manifest


def fill_store(manifest: Path, workers: int) -> tuple[float, int]:
    """Every run of `manifest` scored into the store of `DST_CACHE_DIR` (those stored only checked)."""
    from analysis.store import runs as S
    from analysis.workspace import read_manifest

    items = read_manifest(manifest).entries
    start = time.perf_counter()
    stored = S.ensure_all(items, None, workers=workers)
    if not all(e is not None for e in stored):
        raise SystemExit("a run could not be stored: see the warnings above")
    return time.perf_counter() - start, len(items)


def profile_lines(path: Path | None, since: float) -> list[tuple[float, str, str]]:
    """The profile log's calls that ended after `since` (time.time()), slowest first."""
    if path is None or not path.exists():
        return []
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        ended, took, thread, what = line.split("\t", 3)
        if float(ended) >= since:
            found.append((float(took), thread, what))
    return sorted(found, reverse=True)


def one_start(
    manifest: Path,
    env: dict[str, str],
    read: float,
    profile: Path | None,
    pages: list[str] | None = None,
    land: str | None = None,
) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    result: dict[str, Any] = {"visits": {}, "visits_cpu": {}, "profile": {}}
    runner = None
    if profile is not None:
        runner = profile.with_suffix(".py")
        runner.write_text(PROFILED_SERVE.format(root=str(ROOT), scripts=str(ROOT / "scripts")), encoding="utf-8")
        env = {**env, "DST_BENCH_PROFILE": str(profile)}
    begin = time.perf_counter()
    process, url = start_server(manifest, env=env, timeout=900, launcher=runner is None, runner=runner)
    try:
        result["restart_s"] = time.perf_counter() - begin
        result["restart_cpu_s"] = cpu_seconds(process.pid)
        result["rss_gb"] = _rss(process.pid) / 1024**3
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                context = browser.new_context(viewport=VIEWPORT)
                page = context.new_page()
                first = next(p for p in PAGES if p.title == land) if land else PAGES[0]
                others = [p for p in PAGES if p is not first]
                since, cpu = time.time(), cpu_seconds(process.pid)
                start = time.perf_counter()
                page.goto(url if first is PAGES[0] else f"{url.rstrip('/')}/{first.url_path}")
                page.wait_for_function(PAGE_DRAWN, arg=first.title, timeout=600_000, polling=20)
                result["visits"][f"{first.title} (opened)"] = time.perf_counter() - start
                result["visits_cpu"][f"{first.title} (opened)"] = cpu_seconds(process.pid) - cpu
                result["profile"][f"{first.title} (opened)"] = profile_lines(profile, since)
                page.wait_for_timeout(read * 1000)
                nav = page.locator('[data-testid="stSidebarNav"]')
                for target in [page for page in others if pages is None or page.title in pages]:
                    link = nav.get_by_role("link", name=target.title, exact=True)
                    since, cpu = time.time(), cpu_seconds(process.pid)
                    start = time.perf_counter()
                    link.click()
                    page.wait_for_function(PAGE_DRAWN, arg=target.title, timeout=600_000, polling=20)
                    result["visits"][target.title] = time.perf_counter() - start
                    result["visits_cpu"][target.title] = cpu_seconds(process.pid) - cpu
                    result["profile"][target.title] = profile_lines(profile, since)
                context.close()
            finally:
                browser.close()
        result["rss_after_gb"] = _rss(process.pid) / 1024**3
    finally:
        stop_server(process)
    return result


def measure_floor(starts: int) -> list[float]:
    """A bare Streamlit app (one title, one two-bar Plotly chart; `bench_browser.BARE_APP`), served with Plotly
    preloaded as `scripts/serve.py` serves the dashboard, opened `starts` times by a fresh chromium, each on
    a fresh server: seconds from goto to its chart drawn. What opening any Streamlit page costs here."""
    from bench_browser import BARE_APP, PRELOADED_STREAMLIT
    from playwright.sync_api import sync_playwright

    folder = Path(tempfile.mkdtemp(prefix="dst-scale-floor-"))
    app, runner = folder / "bare_app.py", folder / "preloaded_streamlit.py"
    app.write_text(BARE_APP, encoding="utf-8")
    runner.write_text(PRELOADED_STREAMLIT, encoding="utf-8")
    times = []
    for _ in range(starts):
        process, url = start_server(folder, app=app, launcher=False, runner=runner, timeout=120)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
                try:
                    context = browser.new_context(viewport=VIEWPORT)
                    page = context.new_page()
                    start = time.perf_counter()
                    page.goto(url)
                    page.wait_for_function(PAGE_DRAWN, arg="Bare", timeout=120_000, polling=20)
                    times.append(time.perf_counter() - start)
                    context.close()
                finally:
                    browser.close()
        finally:
            stop_server(process)
    return times


def report(results: list[dict[str, Any]], n: int, read: float, land: str | None = None) -> None:
    def cell(values: list[float]) -> str:
        return f"{statistics.median(values):.2f}"

    print(f"\n{n}-run workspace, warm store, {len(results)} server starts (medians; each start's wall in brackets)")
    restarts = [r["restart_s"] for r in results]
    print(
        f"restart (process start -> server answers): {cell(restarts)} s wall "
        f"[{', '.join(f'{t:.1f}' for t in restarts)}], server CPU {cell([r['restart_cpu_s'] for r in results])} s; "
        f"RSS {cell([r['rss_gb'] for r in results])} GB at start, "
        f"{cell([r['rss_after_gb'] for r in results])} GB after every page "
        f"(targets {TARGET_RESTART:g} s, {TARGET_RSS_GB:g} GB)"
    )
    opened = land or PAGES[0].title
    print(
        f"first visit of each page (click -> drawn; the first page opened by a fresh chromium, goto -> drawn), "
        f"{read:g} s on {opened} before the first click:\n"
    )
    print("| page | wall (s) | server CPU (s) | each start (s) | over 1 s |")
    print("|---|---:|---:|---|---|")
    over = []
    for title in results[0]["visits"]:
        walls = [r["visits"][title] for r in results]
        cpus = [r["visits_cpu"][title] for r in results]
        slow = statistics.median(walls) > TARGET_VISIT
        if slow:
            over.append(title)
        print(
            f"| {title} | {cell(walls)} | {cell(cpus)} | {', '.join(f'{t:.2f}' for t in walls)} | "
            f"{'**yes**' if slow else ''} |"
        )
    print(f"\npages over {TARGET_VISIT:g} s (median): {', '.join(over) if over else 'none'}")
    if any(r["profile"] for r in results):
        print("\nslowest server calls per visit (profiled start; seconds, thread, call):")
        for title in results[0]["visits"]:
            for r in results:
                calls = r["profile"].get(title) or []
                if calls:
                    shown = "; ".join(f"{took:.2f} {thread} {what}" for took, thread, what in calls[:6])
                    print(f"  {title}: {shown}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--read", type=float, default=0.0, help="seconds on the Overview before the first click")
    parser.add_argument("--workers", type=int, default=2, help="processes scoring runs into the store")
    parser.add_argument("--runs-dir", type=Path, default=ROOT / "benchmarks" / "results" / "scale_runs")
    parser.add_argument("--cache-dir", type=Path, default=ROOT / "benchmarks" / "results" / "scale_browser")
    parser.add_argument("--profile", action="store_true", help="log the server's slow views per visit")
    parser.add_argument("--pages", nargs="+", help="only these pages after the first (sidebar titles)")
    parser.add_argument(
        "--land",
        help="open this page first (sidebar title; default the Overview), so the Overview's first visit is a click",
    )
    parser.add_argument(
        "--floor", type=int, default=0, help="also open a bare one-chart Streamlit app this many times (the floor)"
    )
    args = parser.parse_args()
    if args.land and args.land not in {page.title for page in PAGES}:
        print(f"no such page: {args.land}", file=sys.stderr)
        return 1
    unknown = sorted(set(args.pages or []) - {page.title for page in PAGES if page.title != args.land})
    if unknown:
        print(f"no such page after the Overview: {', '.join(unknown)}", file=sys.stderr)
        return 1
    if not CHROMIUM.exists():
        print(f"{CHROMIUM} is missing (scripts/system-deps.sh installs it)", file=sys.stderr)
        return 1
    if not GOLD.exists():
        print(f"{GOLD} is absent: the runs are perturbed from it", file=sys.stderr)
        return 1
    cache = args.cache_dir.resolve()
    os.environ["DST_CACHE_DIR"] = str(cache)  # this process fills the very store the server reads
    manifest = build_workspace(args.runs_dir, args.runs, cache)
    fill_s, n = fill_store(manifest, args.workers)
    print(f"workspace {manifest}: {n} runs; store {cache / 'scored'} filled/checked in {fill_s:.1f} s (not counted)")
    scratch = Path(tempfile.mkdtemp(prefix="dst-scale-browser-"))
    env = {
        "DST_CACHE_DIR": str(cache),
        # The dialogue viewer opens the annotation store: the benchmark's own, not the demo folder's.
        "DST_ANNOTATIONS_URL": f"sqlite:///{scratch}/annotations.sqlite",
    }
    results = []
    for i in range(args.starts):
        profile = scratch / f"profile-{i}.tsv" if args.profile else None
        results.append(one_start(manifest, env, args.read, profile, args.pages, args.land))
        r = results[-1]
        print(
            f"start {i + 1}: answers after {r['restart_s']:.1f} s (server CPU {r['restart_cpu_s']:.1f} s), "
            f"RSS {r['rss_gb']:.2f} GB; visits " + ", ".join(f"{k} {v:.2f}" for k, v in r["visits"].items()),
            flush=True,
        )
    report(results, n, args.read, args.land)
    if args.floor:
        floor = measure_floor(args.floor)
        print(
            f"\nfloor: a bare one-chart Streamlit app opened by a fresh chromium (Plotly preloaded): median "
            f"{statistics.median(floor):.2f} s [{', '.join(f'{t:.2f}' for t in floor)}]"
        )
        results.append({"floor_open_s": floor})
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_scale_browser.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
