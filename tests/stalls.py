"""How long another thread of this process can hold up the calling one (the GIL), not counting what a
machine whose cores are all busy adds: for tests that a waiting server thread leaves the others running."""

from __future__ import annotations

import threading
import time
from pathlib import Path


def _queued() -> float:
    """Seconds this thread has been runnable but waiting for a core (Linux's schedstat; 0 elsewhere): what a
    loaded machine adds to a step. A thread waiting for the GIL sleeps on it and is not counted."""
    try:
        return int(Path(f"/proc/self/task/{threading.get_native_id()}/schedstat").read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def longest_stall(done: threading.Event) -> float:
    """Small steps (a little Python, a 10 ms sleep) until `done` is set; the longest stall of one step.

    A step's stall is the lesser of its wall time less its own wait for a core, and the CPU the process's
    other threads used during it: what another thread holding the GIL costs, not what a loaded machine adds
    (session 35's M1, two busy loops beside two xdist workers: one step took 1.31 s of wall time)."""
    longest = 0.0
    while not done.is_set():
        before, queued, process, own = time.monotonic(), _queued(), time.process_time(), time.thread_time()
        sum(range(10_000))
        time.sleep(0.01)
        others = (time.process_time() - process) - (time.thread_time() - own)
        longest = max(longest, min(time.monotonic() - before - (_queued() - queued), others))
    return longest
