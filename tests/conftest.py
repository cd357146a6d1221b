"""Shared fixtures: where the real evaluation files live, and skipping cleanly when they do not."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import pytest

from analysis import settings as environment

ROOT = Path(__file__).resolve().parents[1]

# Tests parse for real at least once per session and never touch the user's parse cache.
os.environ.setdefault("DST_CACHE_DIR", tempfile.mkdtemp(prefix="dst-test-cache-"))
# ... and never write an annotation database into the demo workspace (the store's default location).
os.environ.setdefault(
    "DST_ANNOTATIONS_URL", f"sqlite:///{tempfile.mkdtemp(prefix='dst-test-annotations-')}/annotations.sqlite"
)
REALDATA = Path(environment.raw("DST_REALDATA") or ROOT.parent / "shared" / "realdata").resolve()


def realdata_path(*parts: str) -> Path:
    """Path of a file under ../shared/realdata, or skip the test saying what is missing and why."""
    path = REALDATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real data file {path} is absent (tests on real files need ../shared/realdata)")
    return path


@pytest.fixture
def realdata() -> Path:
    if not REALDATA.is_dir():
        pytest.skip(f"{REALDATA} is absent: tests on real files need ../shared/realdata beside the project")
    return REALDATA


@pytest.fixture(autouse=True)
def _main_module_is_restored():
    """Streamlit's AppTest runs a page as `__main__` from a temporary file and leaves it in `sys.modules`: a
    later test in the same process that starts a `spawn` or `forkserver` child then has that child re-run
    the page's file as its main module, and it dies (NameError: name '__args' is not defined). Each test
    gets back the `__main__` it started with."""
    import sys

    main = sys.modules.get("__main__")
    yield
    if main is not None and sys.modules.get("__main__") is not main:
        sys.modules["__main__"] = main


@pytest.fixture(autouse=True)
def _background_work_ends_with_its_test():
    """A dashboard test's background work (the prefetch of the other pages, the score store's writer) ends
    before the next test starts: on a busy machine it would otherwise run into the next test's caches and
    patches. Nothing is imported for a test that never loaded the dashboard."""
    yield
    import sys

    prefetch = sys.modules.get("ui.prefetch")
    if prefetch is not None and hasattr(prefetch, "wait"):
        prefetch.wait(120)
    isolated = sys.modules.get("analysis.isolated")
    if isolated is not None and hasattr(isolated, "settle"):  # workers still saving what they scored
        isolated.settle(120)
    entries = sys.modules.get("analysis.store.entries")
    pending = getattr(entries, "_queue", None)
    # Bounded, unlike entries.flush(): a writer stuck on a lock must fail its own test, not hang the suite.
    deadline = time.monotonic() + 120
    while pending is not None and pending.unfinished_tasks and time.monotonic() < deadline:
        time.sleep(0.05)
