"""A real server's memory across uploads (issue 14, requirement 2): `make run`'s server (scripts/serve.py on
the demo workspace), 20 browser sessions (Debian's chromium driven by Playwright), each uploading its own
8 MB run (42,000 turns) through the sidebar's form, viewing the Overview with it, and closing; then the
server's RSS once Streamlit has ended the sessions. Run by hand:

    .venv/bin/python benchmarks/bench_upload_memory.py [--uploads 20]

Prints the server's RSS (MB) after a warm-up session, at its peak, and at the end, and the growth. A closed
browser's session is kept by Streamlit for its reconnection window (2 minutes, `MemorySessionStorage`),
then ended; the dashboard's sweep (every `ui.data.SWEEP_SECONDS`) then releases its uploads, drops the
figures it made, trims the heap and logs the release. So the end is read once the server has logged the
release of every upload (the sweep's own line, waited for: no fixed time).
`--session-ttl 5` shortens that window (`server.disconnectedSessionTTL`): sessions then end one by one
as their browsers close instead of all twenty living together for two minutes.
`--sweep-seconds 2` shortens the sweep's period (`ui.data.SWEEP_SECONDS`, set in the server's process
before it starts: the same `scripts/serve.py` otherwise), so an ended session's upload is released within
seconds instead of at the next half-minute; what a sweep does is unchanged.
`tests/browser/test_upload_memory.py` runs this with a 5 s window and a 2 s sweep and asserts the growth is
at most 100 MB.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "browser"))

from conftest import CHROMIUM, CHROMIUM_ARGS, DEMO, loaded, rerun, start_server, stop_server, upload_file  # noqa: E402

from analysis.demo.testing import big_jsonl_run  # noqa: E402
from ui.data import SWEEP_SECONDS  # noqa: E402

TIMEOUT_MS = 120_000
RECONNECT_WINDOW_S = 120.0  # Streamlit's MemorySessionStorage TTL for a disconnected session
RELEASED = re.compile(r"(\d+) upload\(s\) of ended sessions released")  # the sweep's log line (ui.data)

# `--sweep-seconds`: scripts/serve.py with the sweep's period set before the server starts. The memory
# settings serve.main applies (malloc arenas, Arrow's pool) come first, as there: `ui.data` imports pyarrow.
SWEEPING_SERVE = """import sys
sys.path.insert(0, {scripts!r})
import serve
serve.limit_arenas()
serve.arrow_on_glibc()
from ui import data
data.SWEEP_SECONDS = {sweep!r}
# start_server(runner=...) passes `run APP options -- --workspace PATH`
args = sys.argv[1:]
options, workspace = args[2:args.index("--")], args[args.index("--") + 2]
serve.main(["--workspace", workspace, *options])
"""


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def _one_session(browser: Any, url: str, path: Path) -> str:
    """A browser session: open the dashboard, upload `path` through the sidebar form, wait for its
    message, look at the Overview with the run in it, close. Returns the message shown. Every wait is for
    the rerun an action caused (`rerun`), never a fixed time."""
    context = browser.new_context(viewport={"width": 1400, "height": 2000})
    try:
        page = context.new_page()
        page.goto(url)
        loaded(page, timeout=TIMEOUT_MS)
        # Opening the expander draws its form; whether it reruns the page varies, so wait for the form itself
        # (a rerun wait here stalled 120 s when the click caused none).
        page.get_by_text("Upload a run").click(timeout=TIMEOUT_MS)
        uploader = page.locator('[data-testid="stSidebar"]').get_by_role("region", name="Prediction file")
        uploader.wait_for(timeout=TIMEOUT_MS)
        # The file reaches the server asynchronously: wait for the rerun request that carries it, and its run.
        upload_file(page, uploader, path, TIMEOUT_MS)
        with rerun(page, timeout=TIMEOUT_MS):
            page.get_by_role("button", name="Add run").click(timeout=TIMEOUT_MS)
        shown = page.locator('[data-testid="stSidebar"] [data-testid="stAlert"]').first
        shown.wait_for(timeout=TIMEOUT_MS)
        message = shown.inner_text()
        if "added run" not in message:
            raise RuntimeError(f"the upload of {path.name} was not added: {message}")
        page.wait_for_selector('[data-testid="stPlotlyChart"] .js-plotly-plot', timeout=TIMEOUT_MS)
        return message
    finally:
        context.close()


def measure(
    uploads: int = 20,
    *,
    session_ttl: float | None = None,
    sweep_seconds: float | None = None,
    browser: Any = None,
    log: Any = print,
) -> dict[str, float]:
    """RSS (MB) of a real server: `before` (after a warm-up upload session has ended), `peak` (sampled
    after each session), `after` (once the sessions have ended), and the seconds the end took.
    `session_ttl` shortens Streamlit's reconnection window (`server.disconnectedSessionTTL`, seconds) so
    a test need not wait two minutes, twice, for closed sessions to end; `sweep_seconds` the sweep's
    period (`ui.data.SWEEP_SECONDS`), so it need not wait up to half a minute, twice, for the sweep that
    releases them. `browser`: a Playwright browser to open the sessions in (a test passes
    pytest-playwright's); without it, one is launched here."""
    if browser is None:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as play:
            own = play.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                return measure(uploads, session_ttl=session_ttl, sweep_seconds=sweep_seconds, browser=own, log=log)
            finally:
                own.close()

    window = RECONNECT_WINDOW_S if session_ttl is None else session_ttl
    sweep = SWEEP_SECONDS if sweep_seconds is None else sweep_seconds
    env = {} if session_ttl is None else {"STREAMLIT_SERVER_DISCONNECTED_SESSION_TTL": f"{session_ttl:g}"}
    server_log: list[str] = []
    with tempfile.TemporaryDirectory(prefix="dst-upload-memory-") as folder:
        runner = None
        if sweep_seconds is not None:
            runner = Path(folder) / "serve_sweeping.py"
            text = SWEEPING_SERVE.format(scripts=str(ROOT / "scripts"), sweep=float(sweep_seconds))
            runner.write_text(text, encoding="utf-8")
        # the warm-up, on a loaded machine, takes minutes
        process, url = start_server(DEMO, env=env, log=server_log, timeout=600, launcher=runner is None, runner=runner)
        try:
            files = []
            for i in range(uploads + 1):
                files.append(Path(folder) / f"upload{i}.jsonl")
                files[-1].write_bytes(big_jsonl_run(i))
            log(f"warm-up session: {_one_session(browser, url, files[-1])}")
            log(f"server RSS after the warm-up session: {rss_mb(process.pid):.0f} MB")
            before = _swept(process.pid, server_log, 1, time.monotonic(), window=window, sweep=sweep, log=log)["rss"]
            peak = before
            for i in range(uploads):
                message = _one_session(browser, url, files[i])  # its browser context is closed at the end
                peak = max(peak, rss_mb(process.pid))
                log(f"session {i + 1}/{uploads}: {message[:70]!r}; RSS {rss_mb(process.pid):.0f} MB")
            end = _swept(process.pid, server_log, 1 + uploads, time.monotonic(), window=window, sweep=sweep, log=log)
        finally:
            stop_server(process)
    return {"before": before, "peak": peak, "after": end["rss"], "settled_after_s": end["seconds"]}


def released(server_log: list[str]) -> int:
    """How many uploads the server's sweep has released so far, from its log lines (`ui.data`)."""
    return sum(int(found.group(1)) for line in list(server_log) if (found := RELEASED.search(line)))


def _swept(
    pid: int, server_log: list[str], count: int, closed: float, *, window: float, sweep: float, log: Any
) -> dict[str, float]:
    """The RSS once the server has logged the release of `count` uploads in all: its sweep (every
    `sweep` seconds, `ui.data.SWEEP_SECONDS` unless the benchmark set it) releases the uploads of sessions ended past the reconnection window, trims the
    heap, then logs; no later sweep runs while no upload is live, so this is where the RSS stays. Waits for
    that line, never a fixed time; fails when it has not come within the window plus two sweeps and a minute."""
    limit = window + 2 * sweep + 60
    while released(server_log) < count:
        waited = time.monotonic() - closed
        if waited > limit:
            raise RuntimeError(
                f"the server released {released(server_log)} of {count} uploads within {waited:.0f} s of the last "
                f"session closing (reconnection window {window:g} s, a sweep every {sweep:g} s)"
            )
        time.sleep(0.5)
    rss, seconds = rss_mb(pid), time.monotonic() - closed
    log(f"  {seconds:.0f} s after the last session closed, {count} uploads released: RSS {rss:.0f} MB")
    return {"rss": rss, "seconds": seconds}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uploads", type=int, default=20)
    parser.add_argument("--session-ttl", type=float, default=None, help="Streamlit's reconnection window, s")
    parser.add_argument("--sweep-seconds", type=float, default=None, help="the sweep's period (ui.data), s")
    args = parser.parse_args()
    if not CHROMIUM.exists() or not DEMO.exists():
        print(f"skipped: {CHROMIUM} or {DEMO} is absent", file=sys.stderr)
        return 0
    result = measure(
        args.uploads,
        session_ttl=args.session_ttl,
        sweep_seconds=args.sweep_seconds,
        log=lambda line: print(line, flush=True),
    )
    print(
        f"server RSS: before {result['before']:.0f} MB, peak {result['peak']:.0f} MB, "
        f"after {result['after']:.0f} MB ({result['after'] - result['before']:+.0f} MB; "
        f"{result['settled_after_s']:.0f} s after the last session closed)"
    )
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
