"""`Browser.kill` in the window between its loop's stop and its close.

A report whose browser exited at start printed asyncio's `RuntimeWarning: coroutine 'Browser._stop' was never
awaited` on stderr (CI, one run in many): `ready()` killed the browser, the loop stopped, and the session's
`close()` killed it again before the loop thread closed the loop. The second kill queued a `_stop()` coroutine
that the loop's close dropped unawaited. No Chromium is needed: the window is made by hand here.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import warnings

from analysis.export import browser as B


def _idle_browser() -> B.Browser:
    """A `Browser` whose loop exists but is not running (stopped, not yet closed), with no process."""
    browser = B.Browser.__new__(B.Browser)
    browser._loop = asyncio.new_event_loop()
    browser._kaleido = None
    browser._dead = False
    browser.path = "chromium"
    return browser


def test_a_kill_after_the_loop_stopped_leaves_no_coroutine_unawaited() -> None:
    browser = _idle_browser()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        browser.kill()
        browser.kill()  # the session's close kills once more
        browser._loop.close()  # the loop thread's last step; it drops what is still queued
        gc.collect()
    unawaited = [str(w.message) for w in caught if "never awaited" in str(w.message)]
    assert unawaited == []
    assert browser._dead


def test_a_kill_while_the_loop_runs_still_stops_it() -> None:
    """The stop still happens when the loop runs, on its own thread as a browser's does: what waits on it is
    cancelled and the loop stops."""
    browser = _idle_browser()
    loop = browser._loop
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    waiting = asyncio.run_coroutine_threadsafe(asyncio.sleep(3600), loop)
    browser.kill()
    thread.join(10)
    assert not thread.is_alive()
    assert waiting.cancelled()
    loop.close()
