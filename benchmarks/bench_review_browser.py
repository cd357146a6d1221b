"""Review clicks in a real browser (issue 18 requirement 6): every review click answers within 1 s on the demo.

Playwright drives Debian's chromium (the launch flags of tests/browser/conftest.py) against the dashboard
served as `make run` serves it, on a copy of the demo workspace in a temporary folder (so its annotation
store, beside the copied manifest, never lands in data/demo). Each of `--sessions` browser sessions (default
5) gets a server of its own on a fresh copy (a cold server and an empty store: the worst case of a session's
first save; `--same-server` runs them all on one), opens the Review page with every demo run selected (12
runs, 10,022 error turns, 3,961 episodes), enters a reviewer name, then, `--rounds` times (default 3),
times from the click to the page showing the answer and the script being idle again
(`[data-test-script-state="notRunning"]`):

* select: a click on a row of the queue, until the tag form names that row's episode;
* tag: a tag picked in the form's open multiselect (in the browser, no rerun), until its chip shows;
* save: "Save tags", until the "saved" message and the tags column show it; the session's first save is
  also reported apart ("first save", one per session) from its later ones;
* filter: an option of the open Status filter picked (unreviewed <-> all), until the queue's caption changes
  (opening a list is the browser's alone; the click that asks the server is the option's);
* cell: a click on a cell of the gold -> predicted heatmap, until the queue lists that cell;
* live: a colleague's tag written to the store by another process, until this page shows it, no click
  (a fragment polls the store every `ui.review.LIVE_S` s: the target is 5 s);
* idle: before the clicks, 10 s with nobody clicking or writing: the CPU seconds the open page costs the
  server and the client meanwhile (its "seconds" are the 10 s waited, not a target).

Reported per action, over every session: median and max in seconds, with the target (1 s; live: 5 s),
"all clicks" (select, tag, save, filter and cell together), and the CPU seconds each click cost the
server's process tree and the client (chromium and Playwright's driver), which a busy shared machine
does not inflate the way it does the wall clock. The page open (a cold server's first Review page: every
run scored, episodes built) is reported, not a target.

Run: `.venv/bin/python benchmarks/bench_review_browser.py [--sessions 5] [--rounds 3] [--same-server]`
(about 4 minutes on a quiet two-core machine); results also go to
benchmarks/results/bench_review_browser.json (git-ignored).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "browser"))

from conftest import CHROMIUM, CHROMIUM_ARGS, IDLE, start_server, stop_server  # noqa: E402
from playwright.sync_api import Browser, Page, sync_playwright  # noqa: E402
from playwright.sync_api import TimeoutError as PlaywrightTimeout  # noqa: E402

DEMO = ROOT / "data" / "demo"
ROW = 35  # Streamlit's grid: a header row, then rows of 35 px
TIMEOUT = 120_000
IDLE_S = 10
TARGETS = {"select": 1.0, "tag": 1.0, "save": 1.0, "filter": 1.0, "cell": 1.0, "live": 5.0}
FORM_TEXT = '[data-testid="stForm"] [data-testid="stText"]'
QUEUE_CAPTION = "error episode(s) match"


def copy_demo(folder: Path) -> Path:
    """The demo workspace copied (1.4 MB), without any annotation store a run may have left."""
    target = folder / "demo"
    shutil.copytree(DEMO, target, ignore=shutil.ignore_patterns("annotations.sqlite*"))
    return target / "workspace.toml"


def idle(page: Page) -> None:
    page.wait_for_timeout(30)
    page.wait_for_selector(IDLE, timeout=TIMEOUT)


def timed(page: Page, action, done, arg=None) -> float:
    """Seconds from `action()` until the JS predicate `done(arg)` holds and the script is idle."""
    start = time.perf_counter()
    action()
    if callable(done):  # a Playwright wait (it pierces the shadow roots a JS query would not)
        done()
    else:
        page.wait_for_function(done, arg=arg, timeout=TIMEOUT, polling=20)
    page.wait_for_selector(IDLE, timeout=TIMEOUT)
    elapsed = time.perf_counter() - start
    print(f"  {getattr(action, '__name__', 'action')}: {elapsed:.3f} s", flush=True)
    return elapsed


def form_text(page: Page) -> str:
    return page.locator(FORM_TEXT).first.inner_text()


def queue_caption(page: Page) -> str:
    return page.locator(f'[data-testid="stCaptionContainer"]:has-text("{QUEUE_CAPTION}")').first.inner_text()


TEXT_CHANGED = """([sel, before]) => { const e = document.querySelector(sel); return !!e && e.innerText !== before; }"""
CAPTION_CHANGED = """([needle, before]) => [...document.querySelectorAll('[data-testid="stCaptionContainer"]')]
    .some(e => e.innerText.includes(needle) && e.innerText !== before)"""
HAS_TEXT = """(needle) => document.body.innerText.includes(needle)"""
METRIC_IS = """(value) => [...document.querySelectorAll('[data-testid="stMetric"]')]
    .some(m => m.innerText.includes('Annotations in the store') && m.innerText.trim().endsWith(value))"""


def annotations_shown(page: Page) -> int:
    metric = page.locator('[data-testid="stMetric"]:has-text("Annotations in the store")').first
    return int(metric.locator('[data-testid="stMetricValue"]').inner_text().replace(",", ""))


def opened(page: Page, box, option: str):
    """Open a select box until `option` shows (a click that only took the focus from another widget, or a
    timed rerun that closed the list, opens it again); the option, ready to click. Opening the list is
    the browser's alone (no rerun): the timed click is the option's."""
    for _ in range(5):
        box.click()
        choice = page.get_by_role("option", name=option, exact=True)
        try:
            choice.wait_for(timeout=2_000)
            return choice
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
    raise RuntimeError(f"the option {option!r} did not show")


def queue_grid(page: Page):
    return page.locator('[data-testid="stDataFrame"]').first  # the queue (the page's first table)


def click_row(page: Page, row: int) -> None:
    grid = queue_grid(page)
    box = grid.bounding_box()
    assert box is not None
    page.mouse.click(box["x"] + 12, box["y"] + ROW * (row + 1) + ROW / 2)


def colleague_tags(manifest: Path, n: int) -> str:
    """Another process (a colleague's server) tags the n-th episode as a new reviewer (a new row); its comment."""
    import subprocess

    comment = f"live check {n} {time.time():.0f}"
    code = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "import pandas as pd\n"
        "from analysis.review import AnnotationStore, Item, error_episodes, error_items\n"
        "from analysis.scoring import score_run\n"
        "from analysis.workspace import load_entry, read_manifest\n"
        "m = read_manifest(sys.argv[2])\n"
        "e = error_episodes(pd.concat([error_items(score_run(load_entry(x))) for x in m.entries], ignore_index=True))\n"
        "r = e.iloc[int(sys.argv[3])]\n"
        "s = AnnotationStore.for_workspace(sys.argv[2])\n"
        "s.annotate(Item(r.dataset, r.dialogue_id, int(r.turn_index), domain=r.domain, slot=r.slot, run_id=r.run_id,"
        " last_turn=int(r.last_turn), n_turns=int(r.n_turns)), ['other'], sys.argv[4], reviewer='colleague ' + sys.argv[4])\n"
    )
    subprocess.run([sys.executable, "-c", code, str(ROOT), str(manifest), str(n), comment], check=True)
    return comment


def _cpu_by_pid() -> dict[int, tuple[int, float]]:
    """{pid: (parent pid, user + system CPU seconds)} of every process (Linux /proc; {} elsewhere)."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    found: dict[int, tuple[int, float]] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found[int(entry.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    return found


def _tree(root: int, table: dict[int, tuple[int, float]]) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    seen, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in seen:
            seen.add(pid)
            todo += children.get(pid, [])
    return seen


class CpuMeter:
    """CPU seconds used by the server's process tree and by the client (this process's other children:
    Playwright's driver and chromium) since the last `lap()`: what a click costs, whatever the load of a
    shared machine does to the wall clock. Server ticks of the live fragments during a click count in."""

    def __init__(self, server_pid: int | None) -> None:
        self.server_pid = server_pid
        self.last = self._now()

    def _now(self) -> tuple[float, float]:
        table = _cpu_by_pid()
        server = _tree(self.server_pid, table) if self.server_pid else set()
        client = _tree(os.getpid(), table) - server - {os.getpid()}
        return sum(table[p][1] for p in server if p in table), sum(table[p][1] for p in client if p in table)

    def lap(self) -> tuple[float, float]:
        now = self._now()
        used = (now[0] - self.last[0], now[1] - self.last[1])
        self.last = now
        return used


def measure_session(
    browser: Browser, url: str, manifest: Path, rounds: int, session: int, server_pid: int | None
) -> dict[str, list[float]]:
    """One browser session (a new Streamlit session) against a running server of `manifest`: the Review
    page opened, a reviewer name entered, then `rounds` rounds of clicks. Per action: seconds, and its
    server and client CPU seconds (`<action>_server_cpu`, `<action>_client_cpu`)."""
    results: dict[str, list[float]] = {}
    cpu = CpuMeter(server_pid)

    def note(name: str, seconds: float, *, also: str | None = None) -> None:
        server, client = cpu.lap()
        for row in [name] if also is None else [name, also]:
            results.setdefault(row, []).append(seconds)
            results.setdefault(f"{row}_server_cpu", []).append(server)
            results.setdefault(f"{row}_client_cpu", []).append(client)

    context = browser.new_context(viewport={"width": 1400, "height": 2400})
    page = context.new_page()
    start = time.perf_counter()
    cpu.lap()
    page.goto(f"{url}/review?page=review")
    page.wait_for_selector("text=Save tags", timeout=TIMEOUT)
    idle(page)
    note("open", time.perf_counter() - start)
    name = page.get_by_role("textbox", name="Reviewer name")
    name.fill(f"ana {session}")
    name.press("Enter")
    page.wait_for_function(
        "() => [...document.querySelectorAll('button')].some(b => b.innerText.includes('Save tags') && !b.disabled)",
        timeout=TIMEOUT,
        polling=20,
    )
    idle(page)
    # idle: nobody clicks and nobody writes for IDLE_S seconds; what the page costs meanwhile (the live
    # check's queries, and whatever it redraws) in CPU seconds, reported per IDLE_S
    page.wait_for_timeout(1_000)
    cpu.lap()
    page.wait_for_timeout(IDLE_S * 1_000)
    note("idle", IDLE_S)
    for n in range(rounds):
        # select: another row of the queue
        before = form_text(page)
        cpu.lap()
        note("select", timed(page, lambda n=n: click_row(page, 1 + n % 5), TEXT_CHANGED, [FORM_TEXT, before]))
        # tag: a tag picked in the form (no rerun: the form sends it on save)
        form = page.locator('[data-testid="stForm"]')
        tag = ["wrong value", "missed update", "coreference", "other", "dontcare confusion"][n % 5]

        choice = opened(page, form.get_by_role("combobox").first, tag)

        def pick(choice=choice) -> None:
            choice.click()

        cpu.lap()
        note(
            "tag",
            timed(
                page,
                pick,
                lambda form=form, tag=tag: form.locator("[data-tag]", has_text=tag).first.wait_for(timeout=TIMEOUT),
            ),
        )
        page.keyboard.press("Escape")
        # save: the session's first save apart from its later ones (and all of them under "save")
        cpu.lap()
        seconds = timed(
            page, lambda form=form: form.get_by_role("button", name="Save tags").click(), HAS_TEXT, "saved ("
        )
        note("save", seconds, also="first save" if n == 0 else "later saves")
        # filter: Status unreviewed <-> all
        caption = queue_caption(page)
        target = "all" if n % 2 == 0 else "unreviewed"

        option = opened(page, page.get_by_role("combobox", name="Status"), target)

        def switch(option=option) -> None:
            option.click()

        cpu.lap()
        note("filter", timed(page, switch, CAPTION_CHANGED, [QUEUE_CAPTION, caption]))
        # cell: a cell of the heatmap (its invisible marker), then back to the whole queue
        chart = page.locator('[data-testid="stPlotlyChart"] .js-plotly-plot').first
        points = chart.locator(".scatterlayer .point")
        point = points.nth(n % max(1, points.count()))
        box = point.bounding_box()
        assert box is not None
        cpu.lap()
        note(
            "cell",
            timed(
                page,
                lambda box=box: page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2),
                HAS_TEXT,
                "The cell ",
            ),
        )
        page.get_by_role("button", name="Show the whole queue").click()
        page.wait_for_function("(t) => !document.body.innerText.includes(t)", arg="The cell ", polling=20)
        idle(page)
        # live: a colleague tags from another process; no click here
        stored = annotations_shown(page)
        colleague_tags(manifest, 400 + session * rounds + n)
        written = time.perf_counter()
        cpu.lap()
        page.wait_for_function(METRIC_IS, arg=f"{stored + 1:,}", timeout=TIMEOUT, polling=50)
        note("live", time.perf_counter() - written)
        idle(page)
    page.screenshot(path=str(ROOT / "tests" / "screenshots" / "bench_review_browser.png"), full_page=True)
    context.close()
    return results


def run(
    rounds: int, sessions: int, *, same_server: bool = False, url: str | None = None, manifest: Path | None = None
) -> dict[str, list[float]]:
    """`sessions` browser sessions of `rounds` rounds each: each on a server of its own, started on a fresh
    copy of the demo (a cold server and an empty store: the worst first save), or all on one such server
    (`same_server`), or on the given running server of `manifest`. The lists of every session, joined."""
    joined: dict[str, list[float]] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            if url is not None and manifest is not None:
                for session in range(sessions):
                    _join(joined, measure_session(browser, url, manifest, rounds, session, None))
                return joined
            servers = 1 if same_server else sessions
            per_server = sessions if same_server else 1
            for server in range(servers):
                with tempfile.TemporaryDirectory(prefix="bench-review-") as tmp:
                    copied = copy_demo(Path(tmp))
                    env = {"DST_ANNOTATIONS_URL": f"sqlite:///{copied.parent / 'annotations.sqlite'}"}
                    process, address = start_server(copied, env=env, timeout=300)
                    try:
                        for one in range(per_server):
                            session = server * per_server + one
                            print(f"session {session + 1} of {sessions}", flush=True)
                            _join(joined, measure_session(browser, address, copied, rounds, session, process.pid))
                    finally:
                        stop_server(process)
        finally:
            browser.close()
    return joined


def _join(joined: dict[str, list[float]], results: dict[str, list[float]]) -> None:
    for name, values in results.items():
        joined.setdefault(name, []).extend(values)


CLICKS = ["select", "tag", "save", "filter", "cell"]
ROWS = ["open", "idle", *CLICKS, "first save", "later saves", "all clicks", "live"]


def summarise(results: dict[str, list[float]]) -> dict[str, dict[str, Any]]:
    """Median and max per row of `ROWS` (seconds; CPU seconds of the server and of the client beside)."""
    results = {**results, "all clicks": [v for c in CLICKS for v in results.get(c, [])]}
    for side in ("server", "client"):
        results[f"all clicks_{side}_cpu"] = [v for c in CLICKS for v in results.get(f"{c}_{side}_cpu", [])]
    summary: dict[str, dict[str, Any]] = {}
    for name in ROWS:
        values = results.get(name, [])
        if not values:
            continue
        target = TARGETS.get("save" if name in ("first save", "later saves") else name)
        target = 1.0 if name == "all clicks" else target
        row: dict[str, Any] = {"n": len(values), "median_s": statistics.median(values), "max_s": max(values)}
        row |= {"target_s": target, "all_s": values}
        for side in ("server", "client"):
            cpu = results.get(f"{name}_{side}_cpu", [])
            if cpu:
                row |= {f"{side}_cpu_median_s": statistics.median(cpu), f"{side}_cpu_max_s": max(cpu)}
                row |= {f"{side}_cpu_all_s": cpu}  # click by click, beside all_s: what made an outlier
        summary[name] = row
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of clicks per session (default 3)")
    parser.add_argument("--sessions", type=int, default=5, help="browser sessions (default 5)")
    parser.add_argument(
        "--same-server", action="store_true", help="every session on one server (default: a fresh one each)"
    )
    parser.add_argument("--url", help="a running server (default: servers started on copies of the demo)")
    parser.add_argument("--manifest", type=Path, help="the running server's manifest (with --url)")
    args = parser.parse_args()
    summary = summarise(
        run(args.rounds, args.sessions, same_server=args.same_server, url=args.url, manifest=args.manifest)
    )
    print(
        f"{'action':<12} {'n':>3} {'median s':>9} {'max s':>7} {'target s':>9}      "
        f"{'server CPU med/max s':>21} {'client CPU med s':>17}"
    )
    for name, row in summary.items():
        target = row["target_s"]
        mark = "    " if target is None else ("  ok" if row["max_s"] <= target else "OVER")
        cpu = (
            f"{row['server_cpu_median_s']:>10.2f} / {row['server_cpu_max_s']:<8.2f}"
            if "server_cpu_median_s" in row
            else f"{'':>21}"
        )
        client = f"{row['client_cpu_median_s']:>17.2f}" if "client_cpu_median_s" in row else ""
        print(
            f"{name:<12} {row['n']:>3} {row['median_s']:>9.3f} {row['max_s']:>7.3f} "
            f"{'' if target is None else target:>9} {mark} {cpu} {client}"
        )
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_review_browser.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
