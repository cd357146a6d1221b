"""How far a batch of runs being scored is, in the words every progress line uses (the `store` command, the
launcher, the sidebar, the page switching conventions): a sweep of 1,000 runs takes minutes, and "k done"
alone says neither how long it has taken nor how long it will."""

from __future__ import annotations

import time
from collections.abc import Callable


class Pace:
    """Started when made; `pace(done, total)` is the progress of `done` of `total` runs at that moment.

    >>> clock = iter([100.0, 129.2, 100.8 + 100]).__next__
    >>> pace = Pace(clock)
    >>> pace(240, 1000)
    '240 done in 29 s, about 92 s left'
    >>> pace(1000, 1000)
    '1,000 done in 101 s'
    >>> Pace(lambda: 5.0)(0, 1000)
    '0 done'
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._started = clock()

    def __call__(self, done: int, total: int) -> str:
        if done <= 0:
            return f"{done:,} done"
        seconds = self._clock() - self._started
        line = f"{done:,} done in {seconds:.0f} s"
        if done < total:
            line += f", about {seconds / done * (total - done):.0f} s left"
        return line
