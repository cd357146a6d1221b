"""The program's entry, `python -m analysis` and `dst-analysis`: it prepares the process before anything heavy is
imported, then hands over to `analysis.cli.main.main`. Imports nothing beyond the standard library at first."""

from __future__ import annotations

import gc
import os
import sys
from typing import NoReturn

from analysis.cli import ONE_SHOT


def run() -> NoReturn:
    """`python -m analysis` and `dst-analysis`."""
    prepare(sys.argv[1:])
    from analysis.cli.main import main

    sys.exit(main())


def prepare(arguments: list[str]) -> None:
    """Before the ~700 modules of a command are imported:

    * garbage collection off: everything the imports build lives to the end of the process, so collections
      during them find nothing (`main` freezes it all and resumes collection afterwards);
    * for a one-shot command, Arrow's buffers from the C library's allocator instead of Arrow's default pool
      (mimalloc), unless `ARROW_DEFAULT_MEMORY_POOL` already names one. mimalloc backs its segments with
      transparent huge pages (one `metrics` run on MultiWOZ: 29 huge-page faults, 58 MB, by /proc/vmstat's
      `thp_fault_alloc`; none with the C library's), and a short process pays for them in kernel time: run
      just after another memory-heavy process (mwzeval's scorer), `metrics` took 0.895 s against 0.765 s,
      kernel time 0.21-0.27 s against 0.14 s (medians of interleaved runs: benchmarks/README.md). Read by
      Arrow when it first allocates, so set before pandas imports it. The other commands keep the pool
      their process is given (the dashboard's server picks the same for memory: `scripts/serve.py`).
    """
    gc.disable()
    if arguments and arguments[0] in ONE_SHOT:
        os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
