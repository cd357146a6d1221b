"""Review clicks in a real browser (issue 18 requirement 6): every review click answers within 1 s on the demo.

Playwright drives Debian's chromium (the launch flags of tests/browser/conftest.py) against the dashboard
served as `make run` serves it, on a copy of the demo workspace in a temporary folder (so its annotation
store, beside the copied manifest, never lands in data/demo). The Review page is opened with every demo run
selected (12 runs, 10,022 error turns, 3,961 episodes); then, `--rounds` times each, it times from the click
to the page showing the answer and the script being idle again (`[data-test-script-state="notRunning"]`):

* select: a click on a row of the queue, until the tag form names that row's episode;
* tag: a tag picked in the form's open multiselect (in the browser, no rerun), until its chip shows;
* save: "Save tags", until the "saved" message and the tags column show it;
* filter: an option of the open Status filter picked (unreviewed <-> all), until the queue's caption changes
  (opening a list is the browser's alone; the click that asks the server is the option's);
* cell: a click on a cell of the gold -> predicted heatmap, until the queue lists that cell;
* live: a colleague's tag written to the store by another process, until this page shows it, no click
  (the fragments poll every `ui.review.LIVE_S` s: the target is 5 s).

Reported per action: median and max in seconds, with the target (1 s; live: 5 s). The page open (a cold
server's first Review page: every run scored, episodes built) is reported, not a target.

Run: `.venv/bin/python benchmarks/bench_review_browser.py [--rounds 5]`; results also go to
benchmarks/results/bench_review_browser.json (git-ignored).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "browser"))

from conftest import CHROMIUM, CHROMIUM_ARGS, IDLE, start_server, stop_server  # noqa: E402
from playwright.sync_api import Page, sync_playwright  # noqa: E402
from playwright.sync_api import TimeoutError as PlaywrightTimeout  # noqa: E402

DEMO = ROOT / "data" / "demo"
ROW = 35  # Streamlit's grid: a header row, then rows of 35 px
TIMEOUT = 120_000
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


def measure(url: str, manifest: Path, rounds: int) -> dict[str, list[float]]:
    """The timings against a running server of `manifest` (its annotation store beside it)."""
    results: dict[str, list[float]] = {name: [] for name in ["open", *TARGETS]}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 2400})
        start = time.perf_counter()
        page.goto(f"{url}/review?page=review")
        page.wait_for_selector("text=Save tags", timeout=TIMEOUT)
        idle(page)
        results["open"].append(time.perf_counter() - start)
        name = page.get_by_role("textbox", name="Reviewer name")
        name.fill("ana")
        name.press("Enter")
        page.wait_for_function(
            "() => [...document.querySelectorAll('button')].some(b => b.innerText.includes('Save tags')"
            " && !b.disabled)",
            timeout=TIMEOUT,
        )
        idle(page)
        for n in range(rounds):
            # select: another row of the queue
            before = form_text(page)
            results["select"].append(
                timed(page, lambda n=n: click_row(page, 1 + n % 5), TEXT_CHANGED, [FORM_TEXT, before])
            )
            # tag: a tag picked in the form (no rerun: the form sends it on save)
            form = page.locator('[data-testid="stForm"]')
            tag = ["wrong value", "missed update", "coreference", "other", "dontcare confusion"][n % 5]

            choice = opened(page, form.get_by_role("combobox").first, tag)

            def pick(choice=choice) -> None:
                choice.click()

            results["tag"].append(
                timed(
                    page,
                    pick,
                    lambda form=form, tag=tag: form.locator("[data-tag]", has_text=tag).first.wait_for(timeout=TIMEOUT),
                )
            )
            page.keyboard.press("Escape")
            # save
            results["save"].append(
                timed(
                    page,
                    lambda form=form: form.get_by_role("button", name="Save tags").click(),
                    HAS_TEXT,
                    "saved (",
                )
            )
            # filter: Status unreviewed <-> all
            caption = queue_caption(page)
            target = "all" if n % 2 == 0 else "unreviewed"

            option = opened(page, page.get_by_role("combobox", name="Status"), target)

            def switch(option=option) -> None:
                option.click()

            results["filter"].append(timed(page, switch, CAPTION_CHANGED, [QUEUE_CAPTION, caption]))
            # cell: a cell of the heatmap (its invisible marker), then back to the whole queue
            chart = page.locator('[data-testid="stPlotlyChart"] .js-plotly-plot').first
            points = chart.locator(".scatterlayer .point")
            point = points.nth(n % max(1, points.count()))
            box = point.bounding_box()
            assert box is not None
            results["cell"].append(
                timed(
                    page,
                    lambda box=box: page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2),
                    HAS_TEXT,
                    "The cell ",
                )
            )
            page.get_by_role("button", name="Show the whole queue").click()
            page.wait_for_function("(t) => !document.body.innerText.includes(t)", arg="The cell ")
            idle(page)
            # live: a colleague tags from another process; no click here
            stored = annotations_shown(page)
            colleague_tags(manifest, 400 + n)
            written = time.perf_counter()
            page.wait_for_function(METRIC_IS, arg=f"{stored + 1:,}", timeout=TIMEOUT, polling=50)
            results["live"].append(time.perf_counter() - written)
            idle(page)
        page.screenshot(path=str(ROOT / "tests" / "screenshots" / "bench_review_browser.png"), full_page=True)
        browser.close()
    return results


def run(rounds: int, url: str | None = None, manifest: Path | None = None) -> dict[str, list[float]]:
    """`measure` on a server of a fresh copy of the demo (or on the given running server of `manifest`)."""
    if url is not None and manifest is not None:
        return measure(url, manifest, rounds)
    with tempfile.TemporaryDirectory(prefix="bench-review-") as tmp:
        manifest = copy_demo(Path(tmp))
        env = {"DST_ANNOTATIONS_URL": f"sqlite:///{manifest.parent / 'annotations.sqlite'}"}
        process, address = start_server(manifest, env=env, timeout=300)
        try:
            return measure(address, manifest, rounds)
        finally:
            stop_server(process)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--url", help="a running server (default: one started on a copy of the demo)")
    parser.add_argument("--manifest", type=Path, help="the running server's manifest (with --url)")
    args = parser.parse_args()
    results = run(args.rounds, args.url, args.manifest)
    print(f"{'action':<8} {'n':>3} {'median s':>9} {'max s':>7} {'target s':>9}")
    summary = {}
    for name, values in results.items():
        if not values:
            continue
        median, worst = statistics.median(values), max(values)
        target = TARGETS.get(name)
        summary[name] = {"n": len(values), "median_s": median, "max_s": worst, "target_s": target, "all_s": values}
        mark = "" if target is None else ("  ok" if worst <= target else "  OVER")
        print(f"{name:<8} {len(values):>3} {median:>9.3f} {worst:>7.3f} {'' if target is None else target:>9}{mark}")
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_review_browser.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
