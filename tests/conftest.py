"""Shared fixtures: where the real evaluation files live, and skipping cleanly when they do not."""

from __future__ import annotations

import fcntl
import json
import logging
import os
import pickle
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from analysis import settings as environment

ROOT = Path(__file__).resolve().parents[1]

# Tests parse for real at least once per session and never touch the user's parse cache.
os.environ.setdefault("DST_CACHE_DIR", tempfile.mkdtemp(prefix="dst-test-cache-"))
# ... and never write an annotation database into the demo workspace (the store's default location).
os.environ.setdefault(
    "DST_ANNOTATIONS_URL", f"sqlite:///{tempfile.mkdtemp(prefix='dst-test-annotations-')}/annotations.sqlite"
)
# A report's browser gets 120 s to start, not a user's 20: on a machine whose cores are all busy (two xdist
# workers plus the loaded runs of issue 37) Chromium's start alone has taken over 20 s. The 20 s a user waits
# is checked in test_server_safety, which sets its own budget.
os.environ.setdefault("DST_BROWSER_START_SECONDS", "120")


def _scan_components_once() -> None:
    """Each new `AppTest` has Streamlit scan every installed distribution's metadata for custom components
    (`scan_component_manifests`: 0.37 s of CPU here, 4,782 metadata files parsed), a scan a server makes once
    at start. The installed packages do not change during a test session, so each test process scans once
    and hands every later AppTest the same (read-only) list; the components registered are the same."""
    import functools

    from streamlit.components.v2 import manifest_scanner

    if not hasattr(manifest_scanner.scan_component_manifests, "cache_info"):
        manifest_scanner.scan_component_manifests = functools.cache(manifest_scanner.scan_component_manifests)


_scan_components_once()
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


@pytest.fixture(scope="session")
def demo_plan(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The demo workspace's report plan (`plan_report`, the dashboard's 1,000 resamples), planned once for the
    whole test session: the first xdist worker to ask plans it under a file lock in the folder every worker's
    base temp folder shares, the others read its pickle back, instead of each test file planning its own.
    Read it, never change it (the tests of one worker share the object)."""
    demo = ROOT / "data" / "demo" / "workspace.toml"
    if not demo.exists():
        pytest.skip(f"the demo workspace {demo} is absent (make demo)")
    from analysis.export import report
    from analysis.workspace import load_workspace

    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # pytest-N/, above each worker's popen-gwN/
    saved = shared / "demo-plan.pickle"
    with open(shared / "demo-plan.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also when planning fails
        if saved.exists():
            return pickle.loads(saved.read_bytes())
        plan = report.plan_report(load_workspace(demo), n_resamples=1000)
        partial = saved.with_suffix(".partial")
        partial.write_bytes(pickle.dumps(plan))
        partial.replace(saved)
        return plan


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


# The files whose tests are about the prefetch (or read what it computed): it runs for them as it does on a server.
PREFETCH_FILES = {"test_prefetch.py", "test_serve.py", "test_figure_cache.py", "test_store_uploads.py"}


@pytest.fixture(autouse=True)
def _no_prefetch_in_page_tests(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    """An in-process page test (AppTest) checks what its page shows: the prefetch of every other page's first
    views, which each opening of the app starts and which each test then waits for (below), is work no
    assertion reads, and a large share of the fast suite's time. It is off (`DST_NO_PREFETCH`) except in the
    files about it and in browser tests, whose servers run as a user's does."""
    if request.node.path.name not in PREFETCH_FILES and request.node.get_closest_marker("browser") is None:
        monkeypatch.setenv("DST_NO_PREFETCH", "1")
    yield


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


# The order in which test files start: costliest first. `make test` gives whole files to its workers
# (`--dist loadfile --no-loadscope-reorder`), and a file that starts last decides when the run ends: xdist's
# own order (most tests first) started the one-test, 95-second upload_memory file near the end. Costs are
# worker-seconds per file measured on a full run (`pytest --write-costs tests/costs.json` rewrites them); a file
# not measured yet is placed by its markers.
COSTS = Path(__file__).with_name("costs.json")
UNMEASURED = {"browser": 30.0, "slow": 10.0}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--write-costs",
        metavar="PATH",
        default=None,
        help="write each test file's measured seconds (setup, call and teardown) as JSON: the start order's costs",
    )


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def unmeasured_cost(item: Any) -> float:
    return max((cost for mark, cost in UNMEASURED.items() if item.get_closest_marker(mark)), default=1.0)


def order_by_cost(items: list[Any], costs: dict[str, float], collected: dict[str, int] | None = None) -> list[Any]:
    """`items` with whole files kept together and in their own order, the costliest file first; files of
    equal cost keep their collection order. A file of which a marker expression kept only some tests (`make
    check`) counts the share of its cost that they are, by number (`collected`: each file's tests before)."""
    first: dict[str, int] = {}
    kept: dict[str, int] = {}
    cost: dict[str, float] = {}
    for index, item in enumerate(items):
        name = file_of(item.nodeid)
        first.setdefault(name, index)
        kept[name] = kept.get(name, 0) + 1
        if name not in costs:
            cost[name] = max(cost.get(name, 0.0), unmeasured_cost(item))
    for name in first:
        if name in costs:
            share = kept[name] / max(kept[name], (collected or {}).get(name, 0))
            cost[name] = costs[name] * share
    return sorted(items, key=lambda item: (-cost[file_of(item.nodeid)], first[file_of(item.nodeid)]))


_collected: dict[str, int] = {}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[Any]) -> None:
    for item in items:
        _collected[file_of(item.nodeid)] = _collected.get(file_of(item.nodeid), 0) + 1


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """After `-m` has deselected (the mark plugin's modifyitems hook), and before an xdist worker sends its
    collection (its own collection_finish hook) or any test runs."""
    try:
        costs = {str(k): float(v) for k, v in json.loads(COSTS.read_text(encoding="utf-8")).items()}
    except (OSError, ValueError, AttributeError):
        costs = {}
    session.items[:] = order_by_cost(session.items, costs, _collected)


_measured: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _measured[file_of(report.nodeid)] = _measured.get(file_of(report.nodeid), 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    target = session.config.getoption("--write-costs")
    if target and not hasattr(session.config, "workerinput"):  # the controller, which sees every report
        ranked = dict(sorted(((k, round(v, 1)) for k, v in _measured.items()), key=lambda kv: -kv[1]))
        Path(target).write_text(json.dumps(ranked, indent=1) + "\n", encoding="utf-8")


# A figure browser that hangs is killed and a fresh one asked again (`analysis.export.figures` logs a warning),
# so the export goes on and no test fails: each process appends those warnings to one file, and the run's
# summary lists them, so that a hang is seen, not absorbed. (tests/test_figure_browser.py hangs on purpose.)
HANGS = Path(
    os.environ.setdefault(
        "PYTEST_FIGURE_BROWSER_HANGS",
        str(Path(tempfile.gettempdir()) / f"dst-browser-hangs-{os.getpid()}-{time.time_ns()}"),
    )
)


class _HangLog(logging.Handler):
    def emit(self, record: Any) -> None:
        test = os.environ.get("PYTEST_CURRENT_TEST", "")
        if not test.startswith("tests/test_figure_browser.py"):
            with HANGS.open("a", encoding="utf-8") as out:
                out.write(f"{test or 'outside a test'}: {record.getMessage()}\n")


def pytest_configure(config: pytest.Config) -> None:
    logging.getLogger("analysis.export.figures").addHandler(_HangLog(logging.WARNING))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if hasattr(terminalreporter.config, "workerinput") or not HANGS.exists():
        return
    lines = HANGS.read_text(encoding="utf-8").splitlines()
    HANGS.unlink()
    terminalreporter.section(f"figure browsers killed after a hang and replaced: {len(lines)}")
    for line in lines:
        terminalreporter.write_line(line)
