"""Dashboard speed in a real browser (Playwright + Debian's chromium), printed, not asserted.

Targets (issue, requirement 7): first chart of the first page within 3 s of opening, page switch
within 1 s, diff-viewer step within 0.5 s; measured on the demo workspace and on a workspace of 20
MultiWOZ-size runs (the full MultiWOZ 2.1 test gold, 1,000 dialogues and 7,372 turns, perturbed by
`analysis.demo.simulate.perturb_run`), built in a temporary folder.

The server is started as `make run` starts it (`scripts/serve.py`: the workspace is read and the first
page computed before the server listens; the time until it answers is reported). "Cold" is the first
session, connecting the moment the server answers; "warm" is a new browser session on a server that has
served the workspace once (what a second user sees). Both use
a fresh browser context, i.e. an empty browser cache: Streamlit's 4.7 MB Plotly bundle is downloaded
and compiled from scratch. "Returning" reopens the dashboard in the same browser (HTTP and code
cache warm), what a researcher sees every time after the first. Page switches are measured on the
first visit of each page in a session (its views computed) and on a second visit; tab switches on the
pages whose analyses are tabs (a rerun that draws the chosen tab), each tab after the first, then back.

For scale, the same timings are taken for a bare Streamlit app holding one two-bar Plotly chart
("floor"): no dashboard can open faster than that on the same machine and browser. It is served twice:
by plain `streamlit run`, and with the Plotly preload `make run` adds to the page
(`scripts/serve.py`, `serve_plotly_preloaded`), the floor the dashboard is really up against.

Run: `.venv/bin/python benchmarks/bench_browser.py [--skip-big]`; results also go to
benchmarks/results/bench_browser.json (git-ignored).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "browser"))

from conftest import CHROMIUM, CHROMIUM_ARGS, IDLE, VIEWPORT, start_server, stop_server  # noqa: E402
from playwright.sync_api import Browser, Page, sync_playwright  # noqa: E402

from analysis.demo.simulate import perturb_run  # noqa: E402
from analysis.loading import load_run  # noqa: E402
from analysis.model import RunInfo  # noqa: E402

DEMO = ROOT / "data" / "demo" / "workspace.toml"
REALDATA = ROOT.parent / "shared" / "realdata"
PAGES = ["Slots", "Domains", "Turn depth", "Cross-lingual", "Dialogue viewer", "Overview"]
DRAWN = '[data-testid="stPlotlyChart"] .js-plotly-plot :is(g.trace, g.hm)'
TARGETS = {"first_chart": 3.0, "page_switch": 1.0, "diff_step": 0.5}


def build_big_workspace(folder: Path, n_runs: int = 20) -> Path:
    """20 simulated runs over the full MultiWOZ 2.1 test gold, as JSONL prediction files."""
    gold = REALDATA / "multiwoz21" / "test.json.zip"
    if not gold.exists():
        raise SystemExit(f"{gold} is absent: the 20-run benchmark needs ../shared/realdata")
    base = load_run(gold, gold, meta=RunInfo("gold"))
    runs = perturb_run(base, n_runs=n_runs, seed=7)
    lines = [
        '[workspace]\nname = "20 MultiWOZ-size runs (simulated)"\nconvention = "exact"\nallow_outside_root = true\n'
    ]
    turns = base.turns[["dialogue_id", "turn_index"]]
    for run in runs:
        states: dict[tuple[str, int], dict[str, dict[str, str]]] = {}
        for dialogue_id, turn, domain, slot, value in run.pred[
            ["dialogue_id", "turn_index", "domain", "slot", "value"]
        ].itertuples(index=False):
            states.setdefault((dialogue_id, int(turn)), {}).setdefault(domain, {})[slot] = value
        table = turns.assign(
            pred=[states.get((d, int(t)), {}) for d, t in turns[["dialogue_id", "turn_index"]].itertuples(index=False)]
        )
        path = folder / f"{run.meta.run_id}.jsonl"
        path.write_text(table.to_json(orient="records", lines=True, force_ascii=False), encoding="utf-8")
        lines.append(
            f'[[runs]]\nname = "{run.meta.run_id}"\nsystem = "{run.meta.run_id}"\ndataset = "MultiWOZ 2.1"\n'
            f'language = "en"\nhistory = "predicted"\nseed = {run.meta.seed}\nformat = "jsonl"\n'
            f'pred = "{path.name}"\ngold = "{gold}"\n'
        )
    manifest = folder / "workspace.toml"
    manifest.write_text("\n".join(lines), encoding="utf-8")
    return manifest


def settle(page: Page) -> None:
    page.wait_for_timeout(50)
    page.wait_for_selector(IDLE, timeout=600_000)


def time_first_chart(page: Page, url: str) -> float:
    start = time.perf_counter()
    page.goto(url)
    page.wait_for_selector(DRAWN, state="attached", timeout=600_000)
    elapsed = time.perf_counter() - start
    settle(page)
    return elapsed


def time_page_switch(page: Page, title: str) -> float:
    link = page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=title)
    start = time.perf_counter()
    link.click()
    page.wait_for_selector(f'h1:has-text("{title.split()[0]}")', timeout=600_000)
    page.wait_for_selector(IDLE, timeout=600_000)
    page.wait_for_selector(DRAWN, state="attached", timeout=600_000)
    return time.perf_counter() - start


# The chosen tab is drawn: the script finished, the tab's panel holds content (a chart, table or note) and
# every chart in it has a trace. Clicking a tab selects it at once, with an empty panel until the rerun.
TAB_DRAWN = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    const panel = document.querySelector('[role="tabpanel"]');
    if (!app || !panel || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
    const charts = [...panel.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot')];
    const other = panel.querySelectorAll('[data-testid="stDataFrame"], [data-testid="stAlert"]').length;
    return charts.length + other > 0 && charts.every(c => c.querySelector('g.trace, g.hm'));
}"""


def time_tab_switches(page: Page, title: str) -> dict[str, float]:
    """On page `title`, choose each of its other tabs (`ui.tabs`: a rerun, then that tab drawn, `TAB_DRAWN`)
    and come back to the first; seconds per click (none for a page without tabs)."""
    time_page_switch(page, title)
    tabs = page.get_by_role("tab")
    labels = [tabs.nth(i).inner_text() for i in range(tabs.count())]
    times: dict[str, float] = {}
    for label in [*labels[1:], *labels[:1]]:
        start = time.perf_counter()
        page.get_by_role("tab", name=label, exact=True).click()
        page.wait_for_function(TAB_DRAWN, timeout=600_000, polling=20)
        times[label] = time.perf_counter() - start
    return times


def time_diff_steps(page: Page, n: int = 8) -> list[float]:
    """Step through the errors (next error, and back with previous error at the end)."""
    times = []
    forward = True
    for _ in range(n):
        name = "Next error ▶▶" if forward else "◀◀ Previous error"
        button = page.get_by_role("button", name=name)
        if button.is_disabled():
            forward = not forward
            continue
        before = page.locator("h3").filter(has_text="Turn ").first.inner_text()
        start = time.perf_counter()
        button.click()
        page.wait_for_function(
            "before => { const h = [...document.querySelectorAll('h3')].find(e => e.innerText.startsWith('Turn '));"
            " return h && h.innerText !== before; }",
            arg=before,
            timeout=60_000,
            polling=20,
        )
        page.wait_for_selector(IDLE, timeout=60_000)
        times.append(time.perf_counter() - start)
    return times


def busiest_dialogue(manifest: Path, run_id: str) -> str:
    """The dialogue of `run_id` with most error turns (so next-error has somewhere to go)."""
    from analysis.scoring import score_run
    from analysis.views import dialogue_index
    from analysis.workspace import load_entry, read_manifest

    entry = next(e for e in read_manifest(manifest).entries if e.name == run_id)
    index = dialogue_index(score_run(load_entry(entry)))
    return str(index.sort_values("error_turns", ascending=False, kind="stable")["dialogue_id"].iloc[0])


@contextmanager
def serving(
    manifest: Path, *, app: Path = ROOT / "app.py", runner: Path | None = None
) -> Iterator[tuple[Browser, str]]:
    """A fresh server on `manifest` as `make run` starts it (a bare `app`: plain `streamlit run`, or through
    `runner`) and a chromium to talk to it; both stopped after."""
    process, url = start_server(manifest, timeout=600, app=app, runner=runner)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                yield browser, url
            finally:
                browser.close()
    finally:
        stop_server(process)


def prime_parse_cache(manifest: Path) -> float:
    """Parse every file of the workspace once, as opening it the first time ever does: the files go to
    the on-disk parse cache (`analysis.formats.cache`), so "cold" below is a fresh server, not a first
    parse. Returns the seconds it took (0 when the cache already held them)."""
    from analysis.workspace import load_entry, read_manifest

    start = time.perf_counter()
    for entry in read_manifest(manifest).entries:
        load_entry(entry)
    return time.perf_counter() - start


def measure(name: str, manifest: Path, run_id: str, read_seconds: float = 0.0) -> dict:
    """Timings on a fresh server. `read_seconds`: how long the user looks at the first page before the
    first page switch (0: switch the moment its chart is drawn, the worst case for the prefetch, which
    then competes with the page for the interpreter)."""
    result: dict = {
        "workspace": name,
        "read_seconds": read_seconds,
        "first_parse_or_cache_read": prime_parse_cache(manifest),
    }
    dialogue = busiest_dialogue(manifest, run_id)
    start = time.perf_counter()
    with serving(manifest) as (browser, url):
        result["server_start_seconds"] = time.perf_counter() - start
        for label in ("cold", "warm"):
            context = browser.new_context(viewport=VIEWPORT)
            page = context.new_page()
            result[f"first_chart_{label}"] = time_first_chart(page, url)
            page.wait_for_timeout(read_seconds * 1000)
            switches = {title: time_page_switch(page, title) for title in PAGES}
            result[f"page_switch_first_visit_{label}"] = switches
            result[f"page_switch_second_visit_{label}"] = {t: time_page_switch(page, t) for t in PAGES[:-1]}
            result[f"tab_switch_{label}"] = {
                f"{title}: {tab}": seconds for title in PAGES for tab, seconds in time_tab_switches(page, title).items()
            }
            page.goto(f"{url}/dialogue?page=dialogue&run={run_id}&dialogue={dialogue}&turn=0")
            settle(page)
            page.wait_for_selector('h3:has-text("Turn 0")', timeout=600_000)
            result[f"diff_step_{label}"] = time_diff_steps(page)
            if label == "warm":
                result["first_chart_returning"] = [time_first_chart(page, url) for _ in range(3)]
            context.close()
    return result


BARE_APP = """import plotly.graph_objects as go
import streamlit as st

st.title("Bare")
st.plotly_chart(go.Figure(go.Bar(x=["a", "b"], y=[1, 2])))
"""


# `streamlit ...` with the page `make run` serves: Plotly fetched with the page (scripts/serve.py).
PRELOADED_STREAMLIT = f"""import sys
sys.path.insert(0, {str(ROOT / "scripts")!r})
import serve
problem = serve.serve_plotly_preloaded()
if problem:
    raise SystemExit(f"Plotly not preloaded: {{problem}}")
from streamlit.web import cli
sys.argv = ["streamlit", *sys.argv[1:]]
cli.main()
"""


def measure_floor(folder: Path, *, preloaded: bool = False) -> dict:
    """First chart of a bare one-chart Streamlit app: fresh server, then new and returning browsers.
    `preloaded`: served with `make run`'s Plotly preload."""
    app = folder / "bare_app.py"
    app.write_text(BARE_APP, encoding="utf-8")
    runner = None
    if preloaded:
        runner = folder / "preloaded_streamlit.py"
        runner.write_text(PRELOADED_STREAMLIT, encoding="utf-8")
    how = "with make run's Plotly preload" if preloaded else "plain streamlit run"
    result: dict = {"workspace": f"floor: bare Streamlit app, one Plotly chart, {how}"}
    with serving(DEMO, app=app, runner=runner) as (browser, url):
        fresh = []
        for _ in range(3):
            context = browser.new_context(viewport=VIEWPORT)
            fresh.append(time_first_chart(context.new_page(), url))
            context.close()
        context = browser.new_context(viewport=VIEWPORT)
        page = context.new_page()
        time_first_chart(page, url)
        result["first_chart_new_browser"] = fresh
        result["first_chart_returning"] = [time_first_chart(page, url) for _ in range(3)]
        context.close()
    return result


def report_floor(result: dict) -> None:
    print(f"\n== {result['workspace']}")
    shown = ", ".join(f"{t:.2f}" for t in result["first_chart_new_browser"])
    print(f"  first chart, empty browser cache: {shown} s (the first on a fresh server)")
    shown = ", ".join(f"{t:.2f}" for t in result["first_chart_returning"])
    print(f"  first chart, returning browser: {shown} s")


def report(result: dict) -> None:
    print(f"\n== {result['workspace']}, first page read for {result['read_seconds']:g} s before switching")
    print(f"  reading every file once in the benchmark process: {result['first_parse_or_cache_read']:.2f} s")
    print(f"  `make run` to a server answering (its warm-up included): {result['server_start_seconds']:.1f} s")
    for label in ("cold", "warm"):
        first = result[f"first_chart_{label}"]
        print(f"  first chart ({label}, empty browser cache): {first:.2f} s (target {TARGETS['first_chart']} s)")
        if label == "warm":
            shown = ", ".join(f"{t:.2f}" for t in result["first_chart_returning"])
            print(f"  first chart (returning browser): {shown} s")
        for kind in ("first_visit", "second_visit"):
            switches = result[f"page_switch_{kind}_{label}"]
            shown = ", ".join(f"{k} {v:.2f}" for k, v in switches.items())
            print(f"  page switch, {kind.replace('_', ' ')} ({label}): max {max(switches.values()):.2f} s — {shown}")
        tabs = result[f"tab_switch_{label}"]
        shown = ", ".join(f"{k} {v:.2f}" for k, v in tabs.items())
        print(f"  tab switch ({label}): max {max(tabs.values()):.2f} s — {shown}")
        steps = result[f"diff_step_{label}"]
        if steps:
            print(
                f"  diff step ({label}): median {statistics.median(steps):.3f} s, max {max(steps):.3f} s "
                f"over {len(steps)} steps (target {TARGETS['diff_step']} s)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-big", action="store_true", help="only the demo workspace")
    parser.add_argument("--floor-only", action="store_true", help="only the bare app's floors")
    args = parser.parse_args()
    if not CHROMIUM.exists():
        raise SystemExit(f"{CHROMIUM} is missing (scripts/system-deps.sh installs it)")
    # The dialogue viewer opens the annotation store; keep the benchmark's out of the shipped demo folder.
    os.environ.setdefault(
        "DST_ANNOTATIONS_URL", f"sqlite:///{tempfile.mkdtemp(prefix='dst-bench-')}/annotations.sqlite"
    )
    results = []
    for preloaded in (False, True):
        with tempfile.TemporaryDirectory() as folder:
            results.append(measure_floor(Path(folder), preloaded=preloaded))
        report_floor(results[-1])
    for read_seconds in () if args.floor_only else (0.0, 3.0):
        results.append(measure("demo", DEMO, "simulated-A-mwz-en-predicted", read_seconds))
        report(results[-1])
    if not (args.skip_big or args.floor_only):
        with tempfile.TemporaryDirectory() as folder:
            start = time.perf_counter()
            manifest = build_big_workspace(Path(folder))
            print(f"\nbuilt the 20-run workspace in {time.perf_counter() - start:.1f} s")
            for read_seconds in (0.0, 3.0):
                results.append(measure("20 MultiWOZ-size runs", manifest, "simulated-0", read_seconds))
                report(results[-1])
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_browser.json").write_text(json.dumps(results, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
