"""The warm parent of the isolated children (`analysis.forking`): a child is forked from it, not a fresh
interpreter, and is otherwise the child `analysis.isolated` always started: the caller's environment and
folder at the call, the caller's limits, killed when asked, its exit code as `subprocess.Popen` gives it.
A parent that died, or that runs older code than the package's files, is replaced."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from analysis import forking, isolated

JOB = "os.getenv"  # a job the child runs: `run_isolated` calls `module.name(*args)` and answers its value


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> Iterator[forking.Forks]:
    """A warm parent of this test's own, stopped after it."""
    own = forking.Forks(preload=("analysis.isolated_jobs",), entry="analysis.isolated._child")
    monkeypatch.setattr(isolated, "_FORKS", own)
    yield own
    own._stop()


def _children_of(pid: int) -> list[int]:
    found = []
    for status in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(status.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(status.parent.name))
        except (OSError, ValueError):
            continue
    return found


def test_a_child_is_forked_from_the_warm_parent_with_the_callers_environment_and_folder(
    forks: forking.Forks, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("FORKING_PROBE", "first")
    assert isolated.run_isolated("probe", "reading", JOB, "FORKING_PROBE") == "first"
    parent = forks._process
    assert parent is not None and parent.poll() is None
    # Set after the parent started: the child has the caller's environment and folder of the moment.
    monkeypatch.setenv("FORKING_PROBE", "second")
    monkeypatch.chdir(tmp_path)
    assert isolated.run_isolated("probe", "reading", JOB, "FORKING_PROBE") == "second"
    assert isolated.run_isolated("probe", "reading", "os.getcwd") == str(tmp_path)
    assert forks._process is parent  # one parent for every child
    # A job that lasts: its process is the parent's child, not the caller's.
    child = forks.spawn(dict(os.environ))
    assert child is not None
    assert child.pid in _children_of(parent.pid) and child.pid not in _children_of(os.getpid())
    child.kill()
    assert child.wait(30) == -signal.SIGKILL


def test_a_forked_child_starts_in_a_fraction_of_a_fresh_interpreters_time(forks: forking.Forks) -> None:
    """What the warm parent is for: measured as CPU time the child used (its own rusage, reported by the
    job), so a busy machine does not move it. A fresh interpreter imports pandas, Arrow and the package
    (about 0.6 s); a forked child has them."""
    assert isolated.run_isolated("probe", "reading", JOB, "PATH")  # the parent is started and warm
    forked = isolated.run_isolated("probe", "reading", "resource.getrusage", 0)  # RUSAGE_SELF
    fresh = subprocess.run(
        [
            sys.executable,
            "-c",
            "import resource, analysis.isolated_jobs; u = resource.getrusage(0); print(u.ru_utime + u.ru_stime)",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=isolated.ROOT,
    )
    forked_s, fresh_s = forked.ru_utime + forked.ru_stime, float(fresh.stdout)
    assert forked_s < fresh_s / 3, (forked_s, fresh_s)


def test_the_cpu_limit_stops_a_forked_child(forks: forking.Forks, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(isolated, "CPU_LIMIT_S", 1)
    started = time.monotonic()
    burn = isolated.run_isolated("spin", "reading", "tests.test_forking.spin")
    assert burn == "spin: reading it used more than 1 s of CPU time; stopped"
    assert time.monotonic() - started < 60


def spin() -> None:
    """A job that never ends (for the CPU limit)."""
    while True:
        pass


def test_a_dead_parent_is_replaced_and_a_changed_package_too(
    forks: forking.Forks, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert isolated.run_isolated("probe", "reading", JOB, "PATH")
    first = forks._process
    assert first is not None
    first.kill()
    first.wait(30)
    assert isolated.run_isolated("probe", "reading", JOB, "PATH")
    second = forks._process
    assert second is not None and second is not first and second.poll() is None
    monkeypatch.setattr(forking, "_code_stamp", lambda: 1)  # a file of the package edited meanwhile
    assert isolated.run_isolated("probe", "reading", JOB, "PATH")
    assert forks._process is not second and second.wait(30) is not None  # the old parent has ended


def test_a_parent_that_stops_answering_is_killed_and_the_job_runs_in_a_fresh_child(
    forks: forking.Forks, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`spawn` waits for a child's id at most `REPLY_SECONDS` (it waited forever): a stopped parent is killed
    and the job still runs, in a fresh interpreter; the next job has a new parent again."""
    assert isolated.run_isolated("probe", "reading", JOB, "PATH")
    stuck = forks._process
    assert stuck is not None
    os.kill(stuck.pid, signal.SIGSTOP)  # alive, but it will not fork nor answer
    monkeypatch.setattr(forking, "REPLY_SECONDS", 1.0)
    began = time.monotonic()
    assert forks.spawn(dict(os.environ)) is None
    assert time.monotonic() - began < 15
    assert stuck.wait(30) == -signal.SIGKILL and forks._process is None
    monkeypatch.setenv("FORKING_PROBE", "after")
    assert isolated.run_isolated("probe", "reading", JOB, "FORKING_PROBE") == "after"
    assert forks._process is not None and forks._process is not stuck and forks._process.poll() is None


def test_without_fork_a_fresh_interpreter_runs_the_job(monkeypatch: pytest.MonkeyPatch) -> None:
    none = forking.Forks(preload=(), entry="analysis.isolated._child")
    none._failed = True  # as on a system without fork
    monkeypatch.setattr(isolated, "_FORKS", none)
    monkeypatch.setenv("FORKING_PROBE", "fresh")
    assert isolated.run_isolated("probe", "reading", JOB, "FORKING_PROBE") == "fresh"
