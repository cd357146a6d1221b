"""Real-browser fixtures: Debian's chromium driven by Playwright, and one Streamlit server per session."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser as SyncBrowser
from playwright.sync_api import BrowserContext as SyncBrowserContext
from playwright.sync_api import Locator, Page
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
DEMO = ROOT / "data" / "demo" / "workspace.toml"
SCREENSHOTS = ROOT / "tests" / "screenshots"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # Several pages and browsers run at once (xdist workers, a second session): chromium must not throttle the
    # timers of a page it thinks is in the background, or a wait's in-page polling stops.
    "--disable-background-timer-throttling",
    "--disable-renderer-backgrounding",
    "--disable-backgrounding-occluded-windows",
]

# Every `wait_for_function` polls on a timer. Playwright's default polls on requestAnimationFrame, and headless
# chromium on a loaded machine can go without a frame for minutes: the condition held, but no one looked again
# (F1-F3), tests/test_browser_waits.py checks it.
POLL_MS = 100
VIEWPORT = {"width": 1400, "height": 2400}
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'


# Counts the script runs a page's server has finished, from the messages on its websocket (Streamlit's own
# `ForwardMsg.script_finished`), so a test waits for the rerun its own click caused, never a fixed sleep followed by
# an idle check that the previous run would pass. Not from the page: the DOM's `data-test-script-state` skips
# `running` when a short run's messages arrive together (React renders them as one update), and a counter on it
# missed whole runs (a sidebar click that drew the Slots page, counted 0: 9 of 12 tries on a quiet machine).
_DONE = {
    ForwardMsg.FINISHED_SUCCESSFULLY,
    ForwardMsg.FINISHED_WITH_COMPILE_ERROR,
    ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY,
}


class _Runs:
    """A page's websocket traffic: the runs it asked for (a click's rerun request) and the runs that answered.

    A run answers when it started after the page's latest request and finished: Streamlit takes a request
    at the next run's start, however requests queue or merge. A run already going when the request was
    sent does not answer it, whatever it is: the Review page's timed live check (`run_every`, every 2 s),
    counted, ended the wait for a reviewer name's rerun before that rerun had started, and the test met two
    "Save tags" forms, the old one stale (N3). Each run's start is Streamlit's `new_session` message, sent
    for a fragment's run too."""

    def __init__(self, page: Page) -> None:
        self.sent = 0
        self.finished = 0  # runs that answered a request (or the page's opening)
        self.endings: list[str] = []  # every script_finished status, for a stall's message
        # file name -> runs finished when the first rerun request carrying it was sent: the frontend sends a
        # file uploader's files with a rerun only once their upload to the server has completed
        self.files: dict[str, int] = {}
        self._started = 0  # runs started
        self._asked_at = 0  # runs started when the latest request was sent
        # a deferred download's click asks the server for its file (`backend_operation_request`); each answer
        # is the file's URL or Streamlit's error message
        self.files_asked = 0
        self.file_answers: list[str] = []
        page.on("websocket", self._watch)

    def _watch(self, socket: Any) -> None:
        socket.on("framesent", self._sent)
        socket.on("framereceived", self._received)

    def _sent(self, payload: Any) -> None:
        if isinstance(payload, bytes):
            message = BackMsg.FromString(payload)
            if message.WhichOneof("type") == "backend_operation_request":
                self.files_asked += 1
            # Heartbeats and other messages are not a request for a run, nor is a timed fragment's own rerun
            # (`run_every`, e.g. the Review page's live check every 2 s): only what the user's action asked.
            if message.WhichOneof("type") == "rerun_script" and not message.rerun_script.is_auto_rerun:
                self.sent += 1
                self._asked_at = self._started
                for widget in message.rerun_script.widget_states.widgets:
                    if widget.WhichOneof("value") == "file_uploader_state_value":
                        for info in widget.file_uploader_state_value.uploaded_file_info:
                            self.files.setdefault(info.name, self.finished)

    def _received(self, payload: Any) -> None:
        if isinstance(payload, bytes):
            message = ForwardMsg.FromString(payload)
            kind = message.WhichOneof("type")
            if kind == "new_session":
                self._started += 1
            elif kind == "backend_operation_response":
                answer = message.backend_operation_response
                self.file_answers.append(answer.error_msg or "url")
            elif kind == "script_finished":
                self.endings.append(ForwardMsg.ScriptFinishedStatus.Name(message.script_finished))
                self.finished += message.script_finished in _DONE and self._started > self._asked_at


def _watched(new_page: Callable[..., Page]) -> Callable[..., Page]:
    def opened(*args: Any, **kwargs: Any) -> Page:
        page = new_page(*args, **kwargs)
        page._dst_runs = _Runs(page)  # type: ignore[attr-defined]
        return page

    return opened


# Every page any test opens (pytest-playwright's `page`, `context.new_page()`, `browser.new_page()`) is watched
# from its creation, before its first websocket opens.
SyncBrowserContext.new_page = _watched(SyncBrowserContext.new_page)  # type: ignore[method-assign]
SyncBrowser.new_page = _watched(SyncBrowser.new_page)  # type: ignore[method-assign]


def runs_of(page: Page) -> _Runs:
    return page._dst_runs  # type: ignore[attr-defined,no-any-return]


# Two turns of the page's task queue: the messages counted on the socket have been handed to the app's code.
_SETTLED = "() => new Promise((done) => setTimeout(() => setTimeout(done, 0), 0))"


def _drawn(page: Page, timeout: float) -> None:
    """After a run counted on the socket: the page has taken its messages and is idle."""
    page.evaluate(_SETTLED)
    page.wait_for_selector(IDLE, timeout=timeout)


# Every table the page shows has its grid mounted: Streamlit mounts a dataframe's grid (a canvas) after the run that
# placed it, so a screenshot taken as soon as the page is idle shows empty boxes (seen on the Overview).
_TABLES_DRAWN = """() => [...document.querySelectorAll('[data-testid="stDataFrame"]')]
  .filter((table) => table.checkVisibility())
  .every((table) => table.querySelector('canvas') !== null)"""


def tables_drawn(page: Page, timeout: float = 120_000) -> None:
    """Wait until every visible table's grid is drawn (before a screenshot that should show them)."""
    page.wait_for_function(_TABLES_DRAWN, timeout=timeout, polling=POLL_MS)


def loaded(page: Page, timeout: float = 120_000) -> None:
    """After `page.goto`: wait for the page's first run. A fresh document starts in the `initial` state, so
    `notRunning` can only be the end of a run of this document (no sleep needed)."""
    page.wait_for_selector(IDLE, timeout=timeout)


_STATE = """() => ({
  state: document.querySelector('[data-testid="stApp"]')?.getAttribute('data-test-script-state') ?? null,
  connection: document.querySelector('[data-testid="stApp"]')?.getAttribute('data-test-connection-state') ?? null,
})"""


def _until(page: Page, done: Callable[[], bool], timeout: float) -> bool:
    """Let Playwright deliver the page's events (its websocket messages) until `done()` or `timeout` ms."""
    deadline = time.monotonic() + timeout / 1000
    while not done():
        if time.monotonic() > deadline:
            return False
        page.wait_for_timeout(POLL_MS)  # delivers events meanwhile: the wait is for them, not for the time
    return True


def _wait_for_rerun(page: Page, before: int, timeout: float) -> None:
    """Wait for a run finished after `before` (counted on the websocket) and the page idle; on a timeout, say
    what the page and its socket showed then, so a stall names its cause."""
    runs = runs_of(page)
    if _until(page, lambda: runs.finished > before, timeout):
        _drawn(page, timeout)
        return
    try:
        seen = page.evaluate(_STATE)
    except Exception as failed:  # the page itself may be gone
        seen = f"(unreadable: {failed})"
    raise AssertionError(
        f"no finished rerun within {timeout / 1000:.0f} s: {before} runs finished before, {runs.finished} now, "
        f"{runs.sent} runs asked for in all, endings {runs.endings}; page {seen}, at {page.url}"
    )


@contextmanager
def rerun(page: Page, timeout: float = 120_000) -> Iterator[None]:
    """`with rerun(page): page.click(...)`: returns once the rerun that the click caused has finished."""
    before = runs_of(page).finished
    yield
    _wait_for_rerun(page, before, timeout)


def click_until_rerun(page: Page, click: Callable[[], None], *, tries: int = 4, each: float = 15_000) -> None:
    """A click on a drawn chart or grid (at coordinates `click` reads afresh each time) until it causes a
    rerun: on a loaded machine the first click can land while Plotly or the grid is still laying out and
    hit nothing. A click that hit asks for a run at once (counted on the socket as sent); one that asked for
    nothing within `each` ms missed and is repeated, and one that asked is never repeated but waited out
    (`rerun`), never a fixed time. (Waiting `each` for the run to finish instead made a missed click cost
    30 s: 12 s -> 38-43 s for the differences test in two full runs.) The last try's timeout raises."""
    runs = runs_of(page)
    for attempt in range(tries):
        before, sent = runs.finished, runs.sent
        click()
        asked = _until(page, lambda before=before, sent=sent: runs.sent > sent or runs.finished > before, each)
        if asked or attempt == tries - 1:
            _wait_for_rerun(page, before, 120_000)
            return


_FRAMES = "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"


def steady_box(page: Page, locator: Locator, timeout: float = 30_000) -> dict[str, float]:
    """`locator`'s bounding box once it stays put across two animation frames: a chart or grid still laying
    out moves, and a click read from its first box can land beside it. Waits for frames, not for a time."""
    deadline = time.monotonic() + timeout / 1000
    box = locator.bounding_box()
    while True:
        page.evaluate(_FRAMES)
        again = locator.bounding_box()
        if again is not None and again == box:
            return again
        if time.monotonic() > deadline:
            if again is None:
                raise AssertionError(f"{locator} has no box within {timeout / 1000:.0f} s")
            return again
        box = again


def upload_file(page: Page, uploader: Locator, path: Path, timeout: float = 120_000) -> None:
    """Choose `path` in a file uploader (`uploader`: its region) and wait until the upload has reached the
    server and the run it causes has finished: the page sends the file with a rerun request only once its
    upload is complete. A wait for any rerun could end on another one (the expander's, still running on a
    loaded machine), and a click on "Add run" then met a form without its file ("choose a prediction file
    first")."""
    runs = runs_of(page)
    runs.files.pop(path.name, None)
    uploader.locator('input[type="file"]').set_input_files(str(path), timeout=timeout)
    if not _until(page, lambda: path.name in runs.files, timeout):
        raise AssertionError(f"{path.name} was chosen but no rerun request carried it within {timeout / 1000:.0f} s")
    _wait_for_rerun(page, runs.files[path.name], timeout)
    uploader.get_by_text(path.name).first.wait_for(timeout=timeout)


def click_until_sent(page: Page, click: Callable[[], None], *, tries: int = 3, each: float = 15_000) -> None:
    """A click on a button (a form's submit) until the page sends the run it asks for: on a page that redraws
    itself (a timed fragment), a click can meet the button while React replaces it and be dropped before it
    reaches the socket (nothing sent, nothing saved: the user would click again). A click that was sent is
    never repeated; the last try's failure says so."""
    runs = runs_of(page)
    for _ in range(tries):
        sent = runs.sent
        click()
        if _until(page, lambda sent=sent: runs.sent > sent, each):
            return
    raise AssertionError(f"{tries} clicks, none sent a run request; endings {runs.endings}, at {page.url}")


def download_by_click(page: Page, click: Callable[[], None], *, tries: int = 3, each: float = 15_000) -> bytes:
    """The file a deferred download button gives (`click` clicks it): the click asks the server for the file
    (counted on the socket), the server makes it and answers with its URL, the browser downloads it. A click
    that asked nothing within `each` ms met the button while a run was replacing it (nothing happened: the
    user would click again) and is repeated, as is one the server answered with an error (the file id of a
    button a rerun replaced); a click that was answered with a URL is waited out. Fails saying which."""
    runs = runs_of(page)
    got: list[Any] = []

    def caught(download: Any) -> None:
        got.append(download)

    page.on("download", caught)
    try:
        served = False
        for _ in range(tries):
            asked, answered = runs.files_asked, len(runs.file_answers)
            click()
            if not _until(page, lambda asked=asked: bool(got) or runs.files_asked > asked, each):
                continue
            if not _until(page, lambda answered=answered: bool(got) or len(runs.file_answers) > answered, 120_000):
                raise AssertionError(f"the server did not answer the request for the file within 120 s, at {page.url}")
            served = bool(got) or runs.file_answers[-1] == "url"
            if served:
                break
        if not served or not _until(page, lambda: bool(got), 120_000):
            raise AssertionError(
                f"no download after {tries} clicks: {runs.files_asked} requests for a file, answers "
                f"{runs.file_answers}, at {page.url}"
            )
        return Path(got[0].path()).read_bytes()
    finally:
        page.remove_listener("download", caught)


ROW = 35  # Streamlit's grid: a header row, then rows of 35 px


def open_first_row_side_by_side(page: Page, grid: Locator, row: Mapping[str, Any], run_a: str, run_b: str) -> None:
    """Click the first row of a list of differing turns (`grid`, whose first row is `row`) and check that the
    Dialogue viewer opens at that turn with `run_a` and `run_b` side by side, the link carrying all four."""
    from playwright.sync_api import expect

    grid.scroll_into_view_if_needed()

    def click_row() -> None:  # the first row's selector, the grid's place read afresh once it stays put
        box = steady_box(page, grid)
        page.mouse.click(box["x"] + 12, box["y"] + ROW + ROW / 2)

    click_until_rerun(page, click_row)
    expect(page.get_by_role("heading", name="Dialogue viewer")).to_be_visible(timeout=120_000)
    turn = int(row["turn_index"])
    expect(page.get_by_role("heading", name=f"Turn {turn}", exact=True)).to_have_count(2, timeout=120_000)
    assert f"dialogue={row['dialogue_id']}" in page.url and f"turn={turn}" in page.url
    assert f"run={run_a}" in page.url and f"compare={run_b}" in page.url
    expect(page.get_by_role("combobox", name="Side by side with")).to_have_value(run_b, timeout=120_000)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = None
    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} is missing: `make test` installs Debian's chromium (scripts/system-deps.sh)"
    elif not DEMO.exists():
        reason = f"the demo workspace {DEMO} is absent (make demo)"
    if reason:
        for item in items:
            if "browser" in str(item.fspath):
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    return {**browser_type_launch_args, "executable_path": str(CHROMIUM), "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def base_url() -> None:
    """No base URL: the tests open full URLs. This replaces pytest-playwright's fallback `base_url`, a
    session fixture defined as an instance method, which pytest 9 warns is deprecated (the one warning of
    every run)."""
    return None


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict) -> dict:
    return {**browser_context_args, "viewport": VIEWPORT}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(
    workspace: Path,
    *,
    env: dict[str, str] | None = None,
    timeout: float = 300,  # an upper bound only: at load 32 on 2 cores the warm-up once took over 120 s
    app: Path = ROOT / "app.py",
    launcher: bool = True,
    runner: Path | None = None,
    log: list[str] | None = None,
) -> tuple[subprocess.Popen, str]:
    """The dashboard as `make run` starts it (`scripts/serve.py`: `streamlit run app.py` plus the workspace
    warm-up, done before the server listens) on a free port, polled on /_stcore/health until it answers.
    Without `launcher`, or for another `app` (e.g. a bare one), plain `streamlit run`; with `runner`, that
    Python script instead of `-m streamlit`, given the same arguments (`run APP options -- --workspace`).
    `log`: a list the server's stderr lines are appended to as they come (a test waits for a line)."""
    port = free_port()
    options = [
        "--server.headless",
        "true",
        "--server.address",
        "127.0.0.1",
        "--server.port",
        str(port),
        "--browser.gatherUsageStats",
        "false",
    ]
    if launcher and app == ROOT / "app.py":
        command = [sys.executable, str(ROOT / "scripts" / "serve.py"), "--workspace", str(workspace), *options]
    else:
        streamlit = [str(runner)] if runner is not None else ["-m", "streamlit"]
        command = [sys.executable, *streamlit, "run", str(app), *options, "--", "--workspace", str(workspace)]
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = [] if log is None else log  # stderr, drained (an undrained pipe would block a chatty server)
    threading.Thread(target=lambda: lines.extend(process.stderr or []), daemon=True).start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            time.sleep(0.2)  # let the drain thread collect the last lines
            raise RuntimeError(f"the server exited with {process.returncode}: {''.join(lines)[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return process, url
        except OSError:
            time.sleep(0.3)
    process.terminate()
    raise RuntimeError(f"the server did not answer on {url} within {timeout} s: {''.join(lines)[-2000:]}")


def stop_server(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()


@pytest.fixture(scope="session")
def server() -> Iterator[str]:
    process, url = start_server(DEMO)
    try:
        yield url
    finally:
        stop_server(process)


@pytest.fixture(scope="session")
def screenshots() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS
