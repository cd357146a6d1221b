"""`python -m analysis store WORKSPACE`: a sweep's runs scored into the score store before the dashboard opens
them, `--workers` (or `DST_SCORE_WORKERS`) processes at a time, each run within the worker's limits; what was
stored, what the store held already, and one line per run that could not be stored (exit 2)."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from analysis.cli.main import main
from analysis.scoring import score_run
from analysis.store import entries as store_entries
from analysis.store import runs as store_runs
from analysis.workspace import load_entry, read_manifest
from tests.test_workspace_batch import _copies
from ui import data

BROKEN_LINE = "run-2.jsonl [format: jsonl]: line 1 is not valid JSON"


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DST_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("DST_SCORE_WORKERS", raising=False)
    root = store_entries.store_root()
    assert root is not None
    return root


def _store(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["store", *argv])
    return code, out.getvalue(), err.getvalue()


def test_every_run_is_stored_and_the_dashboard_then_scores_none_of_them(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = _copies(tmp_path / "runs", 4, broken=2)
    code, out, err = _store([str(manifest)])

    assert code == 2  # a run could not be stored: bad input, said in its one line
    assert "stored now: 3 (" in out and "2 workers" in out
    assert "already in the store: 0" in out and "not stored: 1" in out
    assert f"    run-2: {tmp_path / 'runs' / BROKEN_LINE}" in out  # the file, its format, the first bad line
    assert re.fullmatch(r"store: scoring 4 new runs: 4 done in \d+ s", err.splitlines()[-1]), err
    workspace = read_manifest(manifest)
    for entry in workspace.entries:
        found = store_runs.stored(entry, entry.meta.convention)
        if entry.name == "run-2":
            assert found is None
            continue
        assert found is not None, entry.name
        read_back = store_entries.load(store, found.key)
        assert read_back is not None
        expected = score_run(load_entry(entry), entry.meta.convention)
        for table in ("turns", "slots"):
            pd.testing.assert_frame_equal(
                getattr(read_back, table).reset_index(drop=True),
                getattr(expected, table).reset_index(drop=True),
                check_dtype=False,
                check_categorical=False,
            )

    # The dashboard opening the workspace on that store reads only the run that is not there (one new run: by
    # a child of its own), and says the same line.
    read: list[str] = []
    real = data._first_read

    def recording(key, source):  # type: ignore[no-untyped-def]
        read.append(source.run_id)
        return real(key, source)

    monkeypatch.setattr(data, "_first_read", recording)
    monkeypatch.setattr(data, "score_entries_isolated", lambda *a, **k: pytest.fail("stored runs scored again"))
    sources, failed = data.load_workspace(workspace)
    assert list(sources) == ["run-0", "run-1", "run-3"] and read == ["run-2"]
    assert list(failed) == ["run-2"] and failed["run-2"].startswith(str(tmp_path / "runs" / BROKEN_LINE))
    assert f"    run-2: {failed['run-2']}\n" in out  # the very line the dashboard shows


def test_a_second_store_only_looks_runs_up(tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    manifest = _copies(tmp_path / "runs", 3)
    assert _store([str(manifest), "--no-progress", "--workers", "1"])[0] == 0
    monkeypatch.setattr(
        "analysis.isolated_jobs.score_entries_job", lambda *a, **k: pytest.fail("a stored run scored again")
    )
    code, out, err = _store([str(tmp_path / "runs"), "--json"])  # the manifest's folder names it too
    assert code == 0 and err == ""  # nothing to score: no progress line
    outcome = json.loads(out)
    assert outcome["stored"] == [] and outcome["not_stored"] == {}
    assert outcome["already_stored"] == ["run-0", "run-1", "run-2"]
    assert outcome["workers"] == 2 and outcome["store"] == str(store)


def test_the_workers_come_from_the_option_then_the_setting(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = _copies(tmp_path / "runs", 2)
    seen: list[int] = []
    monkeypatch.setattr(
        "analysis.isolated_jobs.score_entries_isolated", lambda jobs, root, *, workers, done: seen.append(workers)
    )
    monkeypatch.setenv("DST_SCORE_WORKERS", "5")
    assert store_runs.default_workers() == 5
    _store([str(manifest), "--no-progress"])
    _store([str(manifest), "--no-progress", "--workers", "3"])
    assert seen == [5, 3]
    monkeypatch.delenv("DST_SCORE_WORKERS")
    assert 1 <= store_runs.default_workers() <= 2


@pytest.mark.parametrize(
    ("env", "argv", "says"),
    [
        ({"DST_SCORE_WORKERS": "abc"}, [], "environment variable DST_SCORE_WORKERS='abc' must be a positive integer"),
        ({"DST_SCORE_WORKERS": "0"}, [], "environment variable DST_SCORE_WORKERS='0' must be a positive integer"),
        ({"DST_CACHE_DIR": ""}, [], "the score store is off (DST_CACHE_DIR is empty): nothing to store"),
    ],
)
def test_bad_settings_are_one_line_and_exit_2(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], argv: list[str], says: str
) -> None:
    manifest = _copies(tmp_path / "runs", 1)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    code, out, err = _store([str(manifest), *argv])
    assert code == 2 and out == ""
    assert err == f"{manifest} [format: workspace]: {says}\n"


def test_bad_arguments_and_manifests_are_one_line_and_exit_2(tmp_path: Path, store: Path) -> None:
    with pytest.raises(SystemExit) as stopped, contextlib.redirect_stderr(io.StringIO()) as err:
        main(["store", str(tmp_path), "--workers", "0"])
    assert stopped.value.code == 2 and "--workers is a positive integer, got '0'" in err.getvalue()
    code, out, said = _store([str(tmp_path / "nowhere.toml")])
    assert code == 2 and out == "" and said == f"{tmp_path / 'nowhere.toml'} [format: workspace]: manifest not found\n"


def test_the_dashboard_says_a_bad_worker_count_on_each_new_run(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DST_SCORE_WORKERS", "many")
    workspace = read_manifest(_copies(tmp_path / "runs", 2))
    sources, failed = data.load_workspace(workspace)
    assert sources == {}
    assert failed == {
        name: f"run-{i}.jsonl: not scored: environment variable DST_SCORE_WORKERS='many' must be a positive integer"
        for i, name in enumerate(["run-0", "run-1"])
    }
    # The same runs (the same store keys) in another store, the setting fixed: scored there, not skipped as
    # failed (the lines were once remembered by store key alone, and a later test in this process failed).
    monkeypatch.delenv("DST_SCORE_WORKERS")
    monkeypatch.setenv("DST_CACHE_DIR", str(tmp_path / "another"))
    sources, failed = data.load_workspace(read_manifest(_copies(tmp_path / "again", 2)))
    assert sorted(sources) == ["run-0", "run-1"] and failed == {}


def test_runs_the_store_cannot_write_are_not_counted_as_stored(tmp_path: Path, store: Path) -> None:
    """The store refuses every write (here its `locks` is a file, not a folder): the runs are scored, but
    each is "not stored" with its line, and the command exits 2 (it said "stored now: 2" before)."""
    store.mkdir(parents=True, exist_ok=True)
    (store / "locks").write_text("not a folder")
    manifest = _copies(tmp_path / "runs", 2)
    code, out, _ = _store([str(manifest), "--no-progress"])
    assert code == 2
    assert "stored now: 0 (" in out and "not stored: 2" in out, out
    for i in range(2):
        assert f"    run-{i}: run-{i}.jsonl: scored, but not written to the score store" in out, out


def test_ctrl_c_stops_store_in_one_line_with_no_traceback(tmp_path: Path) -> None:
    """Ctrl-C on the terminal (SIGINT to the whole process group: the command and its worker children) while
    runs are being scored: the command says "interrupted" and exits 130; the children, interrupted too, end
    quietly (each printed a traceback before) and none is left running."""
    import sys

    manifest = _copies(tmp_path / "runs", 40)
    command = [sys.executable, "-m", "analysis", "store", str(manifest)]
    code, said, left = interrupted(command, {"DST_CACHE_DIR": str(tmp_path / "cache")}, ready=" done in ")
    assert code == 130, said
    assert "python -m analysis store: interrupted" in said and "Traceback" not in said, said
    assert not left, f"worker processes outlived the interrupted command: {left}"


def interrupted(
    command: list[str], env: dict[str, str], *, ready: str, timeout: float = 120
) -> tuple[int, str, list[str]]:
    """`command` run as a terminal's foreground job (a session and process group of its own, SIGINT at its
    default: a command started from a background job or by a CI runner may inherit it ignored, and Python
    then turns no Ctrl-C into KeyboardInterrupt), Ctrl-C'ed (SIGINT to the group) once a line of its stderr
    contains `ready`: its exit status, its whole stderr, and the processes of its session still running
    10 s later. Never hangs: whatever of the session is left is killed at the end."""
    import os
    import signal
    import subprocess
    import threading
    import time

    root = Path(__file__).resolve().parents[1]
    process = subprocess.Popen(
        command,
        cwd=root,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert process.stderr is not None
    lines: list[str] = []
    seen = threading.Event()

    def read() -> None:
        for line in process.stderr:  # type: ignore[union-attr]
            lines.append(line)
            if ready in line:
                seen.set()
        seen.set()  # its end: ended before it was ready

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        seen.wait(timeout)
        os.killpg(process.pid, signal.SIGINT)
        code = process.wait(timeout=timeout)
        reader.join(timeout)
        deadline = time.monotonic() + 10
        while _alive_in_session(process.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        return code, "".join(lines), _alive_in_session(process.pid)
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)


def _alive_in_session(session: int) -> list[str]:
    """The processes of the session still running (`ps`; not the dead ones waiting to be reaped: children whose
    parent has gone are reparented to PID 1, which in a container may never reap them)."""
    import subprocess

    found = subprocess.run(["ps", "-o", "stat=,args=", "--sid", str(session)], capture_output=True, text=True).stdout
    return [line for line in found.splitlines() if line.strip() and not line.strip().startswith("Z")]


def test_store_says_what_the_store_holds_that_this_version_never_reads(tmp_path: Path, store: Path) -> None:
    """After scoring a sweep, `store` says how much of the store no version of today reads (an older
    version's entries: an upgrade leaves them) and that `prune` removes it; a `store` that only looked its runs
    up says nothing (it stays quick)."""
    manifest = _copies(tmp_path / "runs", 3)
    first = read_manifest(manifest).entries[0]
    store_runs.ensure_all([first], first.meta.convention, workers=1)
    key = store_runs.key(first, first.meta.convention, store)
    header = json.loads(store_entries.header_path(store, key).read_text(encoding="utf-8"))
    old = "9" * 32  # the same run under an older scorer version: its own key, its parts and header
    for folder in store.glob(f"*/convention=*/run={key}"):
        shutil.copytree(folder, folder.parent / f"run={old}")
    store_entries.header_path(store, old).write_text(
        json.dumps({**header, "key": old, "scorer_version": "older"}), encoding="utf-8"
    )
    code, out, _ = _store([str(manifest), "--no-progress", "--workers", "1"])
    assert code == 0 and "stored now: 2 (" in out
    line = next(line for line in out.splitlines() if "never reads" in line)
    assert re.fullmatch(
        r"  the store also holds \d+\.\d kB this version never reads \(1 entry of other versions, damaged or "
        r"cut short\): python -m analysis prune removes them",
        line,
    ), line
    code, out, _ = _store([str(manifest), "--json"])
    assert code == 0 and json.loads(out)["unread"] is None  # only looked up: not counted
