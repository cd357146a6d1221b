"""Concurrency, nothing lost: 8 writer processes against SQLite (WAL) and a real PostgreSQL server.

The PostgreSQL server is started here by a session fixture from Debian's `postgresql` binaries
(`make test` installs them via scripts/system-deps.sh), on a free local port with its socket in a
temporary folder, as an unprivileged user when the tests run as root, and stopped afterwards.
"""

from __future__ import annotations

import faulthandler
import glob
import json
import multiprocessing as mp
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from analysis.review import DEFAULT_TAGS, AnnotationStore, Item

pytestmark = pytest.mark.slow  # eight writers against a database (a minute each)

PROCESSES = 8
PER_PROCESS = 200
EDITS_OF_ONE_ITEM = 25  # per process, 200 writes to one (item, reviewer) row in all
SHARED_ITEM = Item("MultiWOZ 2.1", "PMUL0001.json", 3, domain="hotel", slot="area", run_id="trade")


def _item(i: int) -> Item:
    return Item("MultiWOZ 2.1", f"MUL{i:04d}.json", i % 7, domain="hotel", slot="area", run_id="trade")


def _tags(proc: int, i: int) -> list[str]:
    return [DEFAULT_TAGS[(proc + i) % len(DEFAULT_TAGS)]]


WRITERS_DEADLINE_S = 300  # all writers together; 16-25 s on a two-core machine, loaded or not


def _writer(url: str, proc: int, barrier: mp.synchronize.Barrier, done: Any) -> None:
    """Process `proc` annotates the same 200 items as reviewer r<proc> (rows differ by reviewer only)
    and, interleaved, edits ONE shared (item, reviewer) row 25 times, as every other process does.

    `done[proc]` counts its committed writes, so that a failure says how far each writer got; a writer
    still running shortly before the deadline prints every thread's stack (to the test's captured
    stderr) and exits, so that a stall shows where it is instead of only that it happened."""
    faulthandler.dump_traceback_later(WRITERS_DEADLINE_S - 15, exit=True)
    store = AnnotationStore(url)  # every process opens (and, on a fresh database, migrates) at once
    barrier.wait(timeout=WRITERS_DEADLINE_S)
    every = PER_PROCESS // EDITS_OF_ONE_ITEM
    for i in range(PER_PROCESS):
        store.annotate(_item(i), _tags(proc, i), f"p{proc} i{i}", reviewer=f"r{proc}")
        done[proc] += 1
        if i % every == 0:
            k = i // every
            store.annotate(SHARED_ITEM, _tags(proc, k), f"p{proc} k{k}", reviewer="shared")
            done[proc] += 1
    store.close()  # still under the stall timer: a close that hangs shows its stack
    # Every write is committed (each `annotate` is its own transaction). The interpreter's shutdown is not
    # what this test is about, and is where one writer stalled in a CI run of the whole suite, after all
    # 225 of its writes (the other seven, and 13 runs of this file alone, exited at once): leave without it.
    sys.stderr.flush()
    os._exit(0)


def _run_processes(url: str) -> None:
    """Spawned (fresh interpreters: no connection or state inherited), released together by a barrier;
    one deadline for them all (not one per join, which would add up)."""
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(PROCESSES)
    done = ctx.Array("i", PROCESSES)
    workers = [ctx.Process(target=_writer, args=(url, p, barrier, done)) for p in range(PROCESSES)]
    start = time.monotonic()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=max(0.0, start + WRITERS_DEADLINE_S - time.monotonic()))
    for worker in workers:
        if worker.is_alive():
            worker.kill()
            worker.join(timeout=10)
    elapsed = time.monotonic() - start
    expected = PER_PROCESS + EDITS_OF_ONE_ITEM
    assert [w.exitcode for w in workers] == [0] * PROCESSES, (
        f"writers' exit codes after {elapsed:.0f} s (-9: killed at the deadline; 1: an error or a stall, "
        f"its stack in the captured stderr); writes committed per writer, of {expected}: {list(done)}"
    )


def _check_many(url: str) -> None:
    with AnnotationStore(url) as store:
        rows = store.annotations(reviewer=[f"r{p}" for p in range(PROCESSES)])
        events = store.events()
        events = events[events["reviewer"] != "shared"]
    assert len(rows) == PROCESSES * PER_PROCESS
    assert not rows.duplicated(["item_key", "reviewer"]).any()
    expected = {
        (_item(i).key, f"r{p}"): (tuple(_tags(p, i)), f"p{p} i{i}")
        for p in range(PROCESSES)
        for i in range(PER_PROCESS)
    }
    found = {
        (k, r): (t, c)
        for k, r, t, c in zip(rows["item_key"], rows["reviewer"], rows["tags"], rows["comment"], strict=True)
    }
    assert found == expected  # every annotation present once, none lost, none crossed between reviewers
    assert (rows["version"] == 1).all()
    assert len(events) == PROCESSES * PER_PROCESS and set(events["action"]) == {"edit"}


def _check_one_item(url: str) -> None:
    """The documented rule: last committed write wins; versions count every write without a gap; the
    stored row equals the logged write with the highest version, which is some process's last edit."""
    total = PROCESSES * EDITS_OF_ONE_ITEM
    with AnnotationStore(url) as store:
        rows = store.annotations(reviewer="shared")
        log = store.events(SHARED_ITEM, reviewer="shared")
    assert len(rows) == 1
    current = rows.iloc[0]
    assert current["version"] == total
    assert sorted(log["version"]) == list(range(1, total + 1))
    last = log.loc[log["version"].idxmax()]
    assert current["comment"] == last["comment"]
    assert list(current["tags"]) == json.loads(last["tags"])
    proc, k = (int(part[1:]) for part in current["comment"].split())
    assert k == EDITS_OF_ONE_ITEM - 1
    assert current["tags"] == tuple(_tags(proc, k))
    # each process's own writes were committed in its order
    for p in range(PROCESSES):
        mine = log[log["comment"].str.startswith(f"p{p} ")].sort_values("version")
        assert mine["comment"].tolist() == [f"p{p} k{k}" for k in range(EDITS_OF_ONE_ITEM)]
    assert log.sort_values("version")["written_at"].is_monotonic_increasing  # updated_at never goes back


# -------------------------------------------------------------------------------------------- SQLite


@pytest.mark.slow
def test_sqlite_eight_writers_lose_nothing_and_last_write_wins(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'annotations.sqlite'}"
    _run_processes(url)
    _check_many(url)
    _check_one_item(url)


# ---------------------------------------------------------------------------------------- PostgreSQL


def _pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    return Path(on_path).resolve().parent if on_path else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A throw-away PostgreSQL cluster on a free local port; yields the URL of its `postgres` database."""
    bin_dir = _pg_bin()
    if bin_dir is None or not (bin_dir / "pg_ctl").exists():
        pytest.skip("PostgreSQL binaries (initdb, pg_ctl) not found: `make test` installs Debian's postgresql")
    prefix: list[str] = []
    base = Path(tempfile.mkdtemp(prefix="dst-pg-"))
    if os.geteuid() == 0:  # postgres refuses to run as root
        user = next((u for u in ("postgres", "nobody") if _has_user(u)), None)
        runuser = shutil.which("runuser")
        if user is None or runuser is None:
            pytest.skip("running as root without a `postgres`/`nobody` user and runuser to start PostgreSQL")
        entry = pwd.getpwnam(user)
        os.chown(base, entry.pw_uid, entry.pw_gid)
        prefix = [runuser, "-u", user, "--"]
    data, port = base / "data", _free_port()
    options = f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off"

    def run(*args: str) -> None:
        subprocess.run([*prefix, *args], check=True, capture_output=True, timeout=120, cwd=base)

    try:
        run(str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        run(str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(base / "server.log"), "-o", options, "-w", "start")
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(base, ignore_errors=True)
        pytest.fail(f"could not start PostgreSQL: {exc.stderr.decode(errors='replace')}")
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*prefix, str(bin_dir / "pg_ctl"), "-D", str(data), "stop", "-m", "fast"],
            capture_output=True,
            timeout=60,
            cwd=base,
        )
        shutil.rmtree(base, ignore_errors=True)


def _has_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


@pytest.fixture
def pg_url(postgres_server: str) -> str:
    """A fresh, empty database on the session's server."""
    name = f"annotations_{uuid.uuid4().hex[:12]}"
    engine = create_engine(postgres_server, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return postgres_server.rsplit("/", 1)[0] + f"/{name}"


@pytest.mark.slow
@pytest.mark.postgres
def test_postgres_store_round_trip(pg_url: str, tmp_path: Path) -> None:
    with AnnotationStore(pg_url) as store:
        assert store.backend == "postgresql" and store.schema_version() == 3
        assert store.annotate(SHARED_ITEM, ["wrong value"], "中文 <b>", reviewer="ana") == 1
        assert store.annotate(SHARED_ITEM, ["other", "coreference"], "again", reviewer="ana") == 2
        rows = store.annotations()
        assert rows[["tags", "comment", "version"]].to_dict("records") == [
            {"tags": ("other", "coreference"), "comment": "again", "version": 2}
        ]
        store.annotate(Item("CrossWOZ", "1001", 0), ["other"], "", reviewer="bo")
        for kind in ("csv", "json"):
            path = tmp_path / f"export.{kind}"
            assert getattr(store, f"export_{kind}")(path) == 2
            assert getattr(store, f"import_{kind}")(path) == 0  # idempotent on PostgreSQL too
        payload = json.loads((tmp_path / "export.json").read_text(encoding="utf-8"))
        payload["annotations"][0].update(comment="newer", updated_at="2999-01-01T00:00:00Z")
        (tmp_path / "export.json").write_text(json.dumps(payload), encoding="utf-8")
        assert store.import_json(tmp_path / "export.json") == 1
        assert store.annotations(reviewer="ana")[["comment", "version"]].to_dict("records") == [
            {"comment": "newer", "version": 3}
        ]


@pytest.mark.slow
@pytest.mark.postgres
def test_postgres_eight_writers_lose_nothing_and_last_write_wins(pg_url: str) -> None:
    _run_processes(pg_url)
    _check_many(pg_url)
    _check_one_item(pg_url)
