"""Files the server has not read are parsed in a worker process with a CPU-time and a memory limit
(`analysis.isolated`), for workspace runs as for uploads: a file past either is stopped and reported in one
line, and the server's thread only waits."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from analysis import isolated
from analysis.formats.mapping import mapping_from
from analysis.model import Run, RunInfo
from analysis.workspace import RunEntry, load_entry, read_manifest
from tests.stalls import longest_stall
from ui import data

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo" / "workspace.toml"

# A declared mapping's id pattern is the user's own regular expression: this one backtracks exponentially
# on an id without the `b` it requires (2^34 ways to split the a's), minutes of CPU in one `re.match`.
HOSTILE_PATTERN = r"^(?P<dialogue>(a+)+b)-(?P<turn>\d+)$"


def _hostile_entry(tmp_path: Path) -> RunEntry:
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps([{"flag": "a" * 34 + "-1", "predict": {}, "ground_truth": {}}]))
    mapping = mapping_from(
        {"id": "flag", "id_pattern": HOSTILE_PATTERN, "pred": "predict", "gold": "ground_truth"}, str(path)
    )
    return RunEntry(RunInfo(run_id="hostile"), path, mapping=mapping)


def test_a_workspace_run_is_parsed_in_the_worker_with_the_same_tables() -> None:
    entry = read_manifest(DEMO).entries[0]
    source = data.source_from_entry(entry)
    loaded = data._load_entry(source)
    assert isinstance(loaded, Run), loaded
    expected = load_entry(entry)
    pd.testing.assert_frame_equal(loaded.turns, expected.turns)
    pd.testing.assert_frame_equal(loaded.pred, expected.pred)
    pd.testing.assert_frame_equal(loaded.gold, expected.gold)


def test_a_relative_path_is_the_callers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    entry = read_manifest(DEMO).entries[0]
    monkeypatch.chdir(entry.pred.parent)
    relative = RunEntry(entry.meta, Path(entry.pred.name), entry.gold, format=entry.format)
    assert isinstance(isolated.load_entry_isolated(relative, None, None), Run)


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
def test_a_file_past_the_cpu_limit_is_stopped_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(isolated, "CPU_LIMIT_S", 1)
    entry = _hostile_entry(tmp_path)
    started = time.monotonic()
    result = isolated.load_entry_isolated(entry, None, None)
    assert result == "hostile.json: reading it used more than 1 s of CPU time; stopped"
    assert time.monotonic() - started < 60


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
def test_the_server_thread_only_waits_while_the_worker_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While one thread waits on a hostile file, another thread of the same process keeps running Python
    (the health check and other sessions are such threads): its loop of small steps is never held up."""
    monkeypatch.setattr(isolated, "CPU_LIMIT_S", 1)
    entry = _hostile_entry(tmp_path)
    done = threading.Event()
    waiter = threading.Thread(target=lambda: (isolated.load_entry_isolated(entry, None, None), done.set()))
    waiter.start()
    longest = longest_stall(done)  # not counting what a machine with every core busy adds
    waiter.join()
    assert longest < 1.0, f"a step of the other thread stalled {longest:.2f} s"


def _slots_file(path: Path, slots: int, dialogues: int = 6_000) -> Path:
    """A self-contained JSONL file of one-turn dialogues, each predicting `slots` short slots."""
    line = {
        "dialogue_id": "d",
        "turn_index": 0,
        "gold": {},
        "pred": {"hotel": {f"s{j}": f"v{j}" for j in range(slots)}},
    }
    with path.open("w") as handle:
        for i in range(dialogues):
            handle.write(json.dumps({**line, "dialogue_id": f"d{i}"}) + "\n")
    return path


def test_a_file_past_the_memory_limit_is_stopped_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The limit is of address space, and a child starts with what its imports mapped: 1.46-1.47 GB with
    Arrow's default pool (mimalloc reserves ahead), 0.38-0.40 GB with the system pool that `make run` sets
    (`ARROW_DEFAULT_MEMORY_POOL=system`, inherited by its children; it leaked into this test from
    tests/test_serve.py once, and the file below then came in under a 1 GB limit). Under 0.5 GB this file
    (1.8M short slots: 0.21 GB more address space once read with the system pool, more on the way) is stopped
    either way, forked or fresh."""
    monkeypatch.setattr(isolated, "MEMORY_LIMIT_BYTES", 512 * 1024**2)
    path = _slots_file(tmp_path / "big.jsonl", 300)
    result = isolated.load_entry_isolated(RunEntry(RunInfo(run_id="big"), path), None, None)
    assert isinstance(result, str) and "\n" not in result, result
    assert result.startswith("big.jsonl: "), result
    assert "needs more than 0.5 GB of memory; stopped" in result, result


def test_the_parse_cache_starts_no_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Writing a parsed file to the cache converts its tables on this thread: Arrow's default converts a large
    frame's columns in a pool of Python threads, and a worker child near its memory limit that could not start
    one waited for it until the timeout (300 s) instead of stopping at the limit."""
    from analysis.formats import cache, parse_file

    monkeypatch.setenv("DST_CACHE_DIR", str(tmp_path / "cache"))
    gold = ROOT / "data" / "demo" / "multiwoz21" / "test_subset.json.gz"  # 7,000 rows: Arrow would use threads
    parsed = parse_file(gold)  # perhaps from this process's memory: written below in any case
    started: list[str] = []
    monkeypatch.setattr(threading.Thread, "start", lambda self: started.append(self.name))
    cache.store(gold, None, parsed)
    assert started == []
    assert cache.load_cached(gold, None) is not None  # written, and read back
    pd.testing.assert_frame_equal(cache.load_cached(gold, None).gold, parsed.gold, check_dtype=False)


def test_the_parse_cache_starts_no_arrow_thread_either(tmp_path: Path) -> None:
    """Nor does Arrow's own (C++) thread pool start: the Arrow IPC writer compresses on it unless told not to
    (with its defaults a fresh process went from 3 to 5 threads writing one table). Counted in a fresh process,
    whose pool has not started yet, from /proc."""
    import subprocess
    import sys

    code = (
        "import os\n"
        "from pathlib import Path\n"
        "from analysis.formats import cache, parse_file\n"
        f"gold = Path({str(ROOT / 'data' / 'demo' / 'multiwoz21' / 'test_subset.json.gz')!r})\n"
        "parsed = parse_file(gold, use_cache=False)\n"
        "before = len(os.listdir('/proc/self/task'))\n"
        "cache.store(gold, None, parsed)\n"
        "assert cache.load_cached(gold, None) is not None\n"
        "print(before, len(os.listdir('/proc/self/task')))\n"
    )
    env = {**os.environ, "DST_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    before, after = map(int, done.stdout.split())
    assert after == before, f"{after - before} thread(s) started by the parse cache"


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
def test_a_file_near_the_memory_limit_is_answered_not_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file whose parse comes near the limit (here 1 GB: 360,000 short slots) is answered within seconds, as
    a run or its one line; it used to leave the child waiting for a thread it could not start."""
    monkeypatch.setattr(isolated, "MEMORY_LIMIT_BYTES", 1024**3)
    monkeypatch.setattr(isolated, "TIMEOUT_S", 60.0)  # a regression costs a minute, not five
    monkeypatch.setenv("DST_CACHE_DIR", str(tmp_path / "cache"))  # the prediction's parse is cached in the child
    path = _slots_file(tmp_path / "near.jsonl", 60)
    result = isolated.load_entry_isolated(RunEntry(RunInfo(run_id="near"), path), None, None)
    if isinstance(result, str):
        assert "took longer than" not in result, result
        assert result.startswith("near.jsonl: ") and "\n" not in result, result
    else:
        assert isinstance(result, Run)


def test_a_child_whose_parent_is_gone_ends_itself(tmp_path: Path) -> None:
    """The child's own wall-time backstop: an alarm TIMEOUT_S + ORPHAN_S away, re-armed for each item."""
    import subprocess
    import sys

    code = (
        "import signal; from analysis import isolated; isolated._limit_self(5, 8 * 1024**3); "
        "print(signal.alarm(0), signal.getsignal(signal.SIGALRM) is signal.SIG_DFL)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    seconds, default = done.stdout.split()
    assert int(seconds) == int(isolated.TIMEOUT_S + isolated.ORPHAN_S) and default == "True"


def large_answer(size: int) -> bytes:
    """A job (run in the child) whose answer is `size` bytes: pickling it needs as much again."""
    return b"x" * size


def test_a_child_out_of_memory_while_answering_is_one_line_and_no_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    """Out of memory outside the job's own handlers (here making a large answer, or pickling it) ends the child
    with its own exit status: the caller gets one line, and the child writes no traceback (it used to, to the
    server's log)."""
    import pickle
    import subprocess
    import sys

    limit = 1536 * 1024**2
    job = ((30, limit), "tests.test_isolated_limits.large_answer", (600 * 1024**2,))
    done = subprocess.run(
        [sys.executable, "-m", "analysis.isolated"],
        input=pickle.dumps(job),
        cwd=ROOT,
        capture_output=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == isolated.OUT_OF_MEMORY_EXIT, done.stderr.decode(errors="replace")
    assert b"Traceback" not in done.stderr and done.stdout == b"", done.stderr.decode(errors="replace")

    monkeypatch.setattr(isolated, "MEMORY_LIMIT_BYTES", limit)
    line = isolated.run_isolated("big.json", "scoring", "tests.test_isolated_limits.large_answer", 600 * 1024**2)
    assert line == "big.json: scoring it needs more than 1.5 GB of memory; stopped"
