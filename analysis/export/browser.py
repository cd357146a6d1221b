"""The Chromium that renders figures: kaleido run in an event loop of our own, every wait under a deadline.

kaleido's sync server (`kaleido.start_sync_server`) waits for its browser without a bound, and the
browser does not always answer: in 3 of 14 whole test runs on a loaded machine a batch of renders never
returned (the main thread waited on kaleido's task queue, kaleido's loop sat idle with every render
waiting). Here a `Browser` runs kaleido's asynchronous API in an event loop on a daemon thread. Its start
waits at most `DST_BROWSER_START_SECONDS` and a request at most `deadline(renders)`; past either, the
browser is killed with its children (choreographer starts it as the leader of a session of its own) and
the wait raises `BrowserHungError`, saying what each render was doing. `analysis.export.figures` then
starts a fresh browser and asks once more.

`session()` keeps one browser for every render inside the block (nested sessions share it). kaleido is
imported only when a browser starts.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

from analysis import settings

T = TypeVar("T")

INSTALL_HINT = (
    "figure export needs Chromium and the fonts: `apt-get install chromium fonts-liberation fonts-noto-cjk` "
    "(`make test` and `make run` install them via scripts/system-deps.sh)"
)

BATCH_TABS = 2  # browser tabs rendering at once (the machine has 2 cores)
BASE_SECONDS = 60.0  # a request's deadline: this much, plus `PER_RENDER_SECONDS` per figure it renders
PER_RENDER_SECONDS = 10.0  # a render takes 0.1-0.5 s quiet, a few s on a machine busy with other browsers
CLOSE_SECONDS = 30.0  # a browser that has not closed by then is killed
STOP_SECONDS = 5.0  # what waited on a killed browser has this long to unwind before its loop stops

_LOG = logging.getLogger(__name__)


class ExportUnavailableError(RuntimeError):
    """Figure export cannot run here (no Chromium, or one that does not start); the message says why."""


class BrowserHungError(RuntimeError):
    """The browser did not answer a request within its deadline; it has been killed."""


class BrowserStartHungError(ExportUnavailableError):
    """The browser did not open within its start deadline (it has been killed); a fresh one may."""


def browser_path() -> str | None:
    """The Chromium kaleido will use (BROWSER_PATH, then the usual names on PATH), or None."""
    try:
        from choreographer.browsers.chromium import Chromium

        return Chromium.find_browser(skip_local=False)
    except Exception:  # any failure to look means no usable browser
        return None


def check_export() -> str:
    """The browser path, or `ExportUnavailableError` with the install hint."""
    found = browser_path()
    if not found:
        raise ExportUnavailableError(f"no Chromium found: {INSTALL_HINT}")
    return found


def deadline(renders: int) -> float:
    """Seconds a request rendering `renders` figures may take before its browser counts as hung."""
    return BASE_SECONDS + PER_RENDER_SECONDS * renders


def start_seconds() -> float:
    return float(settings.positive_int("DST_BROWSER_START_SECONDS"))


class Browser:
    """One Chromium with `tabs` kaleido tabs; it starts opening at once, in the background."""

    def __init__(self, tabs: int = BATCH_TABS) -> None:
        from kaleido import Kaleido

        logging.getLogger("choreographer").setLevel(logging.CRITICAL)  # its watchdog logs the kills below
        self.path = check_export()
        self.tabs = tabs
        self._loop = asyncio.new_event_loop()
        self._loop.set_exception_handler(self._unheard)
        self._thread = threading.Thread(target=self._run, name="figure browser", daemon=True)
        self._started = time.monotonic()
        self._kaleido: Any = None
        self._dead = False
        self._thread.start()

        async def open_browser() -> None:
            self._kaleido = Kaleido(n=tabs, mathjax=False)
            await self._kaleido.open()

        self._opening = asyncio.run_coroutine_threadsafe(open_browser(), self._loop)

    def _run(self) -> None:
        try:
            self._loop.run_forever()
        finally:
            # a browser whose start was in flight at the kill may have been launched since: kill it too, so
            # the threads reading its pipe end before the loop closes (they report to the loop)
            self._kill_process()
            with contextlib.suppress(BaseException):
                self._loop.run_until_complete(asyncio.wait_for(self._loop.shutdown_default_executor(), STOP_SECONDS))
            self._loop.close()

    def ready(self, timeout: float | None = None) -> None:
        """Wait until the browser has opened its tabs: `ExportUnavailableError` (the browser killed) when
        it failed to, or has not within `timeout` s of its start (default `DST_BROWSER_START_SECONDS`)."""
        timeout = start_seconds() if timeout is None else timeout
        try:
            self._opening.result(max(0.0, self._started + timeout - time.monotonic()))
        except concurrent.futures.TimeoutError:
            self.kill()
            raise BrowserStartHungError(
                f"the browser for figure export ({self.path}) did not start within {timeout:g} s; {INSTALL_HINT}"
            ) from None
        except BaseException as exc:  # whatever stopped it (choreographer's error when the browser exits)
            self.kill()
            raise ExportUnavailableError(
                f"the browser for figure export ({self.path}) failed to start ({type(exc).__name__}); {INSTALL_HINT}"
            ) from None

    def ask(self, request: Callable[[Any], Awaitable[T]], renders: int) -> T:
        """`request(kaleido)` run in the browser's loop, its answer within `deadline(renders)` s or
        `BrowserHungError` (the browser killed), as when the browser did not start (`ready`)."""
        if self._dead:
            raise BrowserHungError(f"the browser for figure export ({self.path}) was killed")
        try:
            self.ready()
        except ExportUnavailableError as exc:  # a start that hung or failed, killed: a fresh one is tried once
            raise BrowserHungError(str(exc)) from None
        seconds = deadline(renders)

        async def run() -> T:
            return await request(self._kaleido)

        answer = asyncio.run_coroutine_threadsafe(run(), self._loop)
        try:
            return answer.result(seconds)
        except concurrent.futures.TimeoutError:
            doing = self._doing(renders)
            self.kill()
            raise BrowserHungError(
                f"the browser for figure export ({self.path}) did not render {renders} figure(s) within "
                f"{seconds:g} s ({doing})"
            ) from None

    def _doing(self, renders: int) -> str:
        """What the last request's renders were doing: kaleido's profile of each that got a tab (its last
        step), how many still wait for one, how many tabs are free."""
        try:
            calls = list(self._kaleido.profiler)
            steps = Counter(next(reversed(render.profile_log.get_logs()), "started") for render in calls[-1].renders)
            free = self._kaleido.tabs_ready.qsize()
        except Exception as exc:  # a diagnosis only: kaleido's internals may change
            return f"no profile: {type(exc).__name__}"
        parts = [f"{n} at '{step}'" for step, n in sorted(steps.items())]
        waiting = renders - sum(steps.values())
        return ", ".join([*parts, f"{waiting} waiting for a tab", f"{free} of {self.tabs} tabs free"])

    def close(self) -> None:
        """Close the browser (kill it when it does not close within `CLOSE_SECONDS`) and end its loop."""
        if not self._dead and self._opening.done() and self._opening.exception() is None:
            closing = asyncio.run_coroutine_threadsafe(self._kaleido.close(), self._loop)
            with contextlib.suppress(BaseException):
                closing.result(CLOSE_SECONDS)
        self.kill()
        self._thread.join(CLOSE_SECONDS)

    def kill(self) -> None:
        """Kill the browser with its children and stop the loop; its pending waits are abandoned."""
        self._dead = True
        self._kill_process()
        if not self._loop.is_closed():
            # Plain callbacks, no coroutine: one queued after the loop stopped is dropped by its close, and a
            # dropped coroutine is asyncio's "never awaited" warning on the user's stderr (a report whose
            # browser failed to start is killed twice: by the failed start, then by the session's close).
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                self._loop.call_soon_threadsafe(self._stop)

    def _stop(self) -> None:
        """(In the loop.) Cancel what still waits on the dead browser (kaleido's renders, choreographer's
        watchdog) and stop the loop once they have unwound, or after `STOP_SECONDS` at most. Safe to run
        more than once."""
        waiting = [task for task in asyncio.all_tasks(self._loop) if not task.done()]
        if not waiting:
            self._loop.stop()
            return
        timer = self._loop.call_later(STOP_SECONDS, self._loop.stop)
        pending = set(waiting)

        def unwound(task: asyncio.Future[Any]) -> None:
            pending.discard(task)
            if not pending:
                timer.cancel()
                self._loop.stop()

        for task in waiting:
            task.cancel()
            task.add_done_callback(unwound)

    def _kill_process(self) -> None:
        process = getattr(self._kaleido, "subprocess", None)
        if process is not None and process.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)
            with contextlib.suppress(Exception):
                process.wait(CLOSE_SECONDS)
        folder = getattr(self._kaleido, "_html_tmp_dir", None)
        if folder is not None:
            with contextlib.suppress(Exception):
                folder.clean()

    def _unheard(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """asyncio's reports on the loop of a killed browser (a task left pending or failed unread) are
        the kill's echo, already reported by the error raised: kept in the debug log, not printed."""
        _LOG.debug("figure browser loop: %s", context.get("message"), exc_info=context.get("exception"))


# --- the session's browser -------------------------------------------------------------------------

LOCK = threading.RLock()  # one request at a time; held by whoever asks or starts, stops or swaps
_SESSION: dict[str, Any] = {"browser": None, "depth": 0}


def current() -> Browser | None:
    """The open session's browser, or None outside a session."""
    return _SESSION["browser"]


def replace(hung: Browser) -> Browser:
    """A fresh browser for the session in place of `hung` (killed); outside a session, just a fresh one."""
    with LOCK:
        hung.kill()
        fresh = Browser(hung.tabs)
        if _SESSION["browser"] is hung:
            _SESSION["browser"] = fresh
        return fresh


def ready_or_fresh(browser: Browser, timeout: float | None = None) -> Browser:
    """`browser` once it has opened; one whose start hung past `timeout` (default `DST_BROWSER_START_SECONDS`)
    is replaced by a fresh one, given as long (as a request's hung browser is, `ask`). `ExportUnavailableError`
    when a start fails (the browser exits: no second try) or the fresh one hangs too. The ready browser."""
    try:
        browser.ready(timeout)
        return browser
    except BrowserStartHungError:
        fresh = replace(browser)
        fresh.ready(timeout)
        return fresh


@contextlib.contextmanager
def session(tabs: int = BATCH_TABS) -> Iterator[Browser]:
    """One browser for every render inside the block (it opens in the background: the block's first
    request waits for it); nested sessions share the outer one's."""
    with LOCK:
        if _SESSION["browser"] is None:
            _SESSION["browser"] = Browser(tabs)
        _SESSION["depth"] += 1
        browser = _SESSION["browser"]
    try:
        yield browser
    finally:
        with LOCK:
            _SESSION["depth"] -= 1
            if _SESSION["depth"] == 0:
                last, _SESSION["browser"] = _SESSION["browser"], None
                last.close()
