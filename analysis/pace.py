"""How far a batch of runs being scored is, in the words every progress line uses (the `store` command, the
launcher, the sidebar, the page switching conventions): a sweep of 1,000 runs takes minutes, and "k done"
alone says neither how long it has taken nor how long it will."""

from __future__ import annotations

import time
from collections.abc import Callable


class Pace:
    """Started when made; `pace(done, total)` is the progress of `done` of `total` runs at that moment. Call
    it at every answer, shown or not: the time left is estimated from the pace since the first answer (the
    workers' start-up before it is no guide to the rest), once a few more have come.

    >>> clock = iter([100.0, 101.0, 102.0, 129.0, 201.0]).__next__
    >>> pace = Pace(clock)
    >>> pace(1, 1000)
    '1 done in 1 s'
    >>> pace(3, 1000)
    '3 done in 2 s'
    >>> pace(241, 1000)
    '241 done in 29 s, about 89 s left'
    >>> pace(1000, 1000)
    '1,000 done in 101 s'
    >>> Pace(lambda: 5.0)(0, 1000)
    '0 done'
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._started = clock()
        self._first: tuple[float, int] | None = None  # (when, done) at the first answer

    def __call__(self, done: int, total: int) -> str:
        if done <= 0:
            return f"{done:,} done"
        now = self._clock()
        if self._first is None:
            self._first = (now, done)
        line = f"{done:,} done in {now - self._started:.0f} s"
        since, first = self._first
        if done < total and done - first >= max(2, total // 50) and now > since:
            line += f", about {(now - since) / (done - first) * (total - done):.0f} s left"
        return line
