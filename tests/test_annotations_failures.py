"""Issue 14 req 5, the annotation database fails politely: values validated before they are written (the
same rules on SQLite and PostgreSQL), a database that is down gives a short message on the Review page and
the page recovers when it returns, and a writer holding a lock cannot block the others past the timeout.

PostgreSQL is a real server started here from Debian's binaries (`make test` installs them), as in
test_annotations_concurrency.py, but one of this module's own: the tests stop and start it."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from streamlit.testing.v1 import AppTest
from test_annotations_concurrency import _free_port, _has_user, _pg_bin

from analysis.errors import InputError
from analysis.review import (
    LOCKED_MESSAGE,
    MAX_COMMENT,
    MAX_COMPONENT,
    MAX_REVIEWER,
    AnnotationStore,
    InvalidAnnotationError,
    Item,
    StoreError,
    StoreLockedError,
    StoreUnavailableError,
    taxonomy,
)

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo" / "workspace.toml"
ITEM = Item("MultiWOZ 2.1", "MUL0001.json", 2, domain="hotel", slot="area", run_id="trade")
PASSWORD = "s3cret-pw"
LEAKS = ("SELECT", "INSERT", "OperationalError", "psycopg", "sqlalchemy", "Traceback", PASSWORD, "[SQL")


def within(seconds: float, action: Callable[[], Any]) -> Any:
    """`action()` in a thread, failing the test (instead of hanging it) when it takes longer than `seconds`;
    returns its result or re-raises its exception."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = action()
        except BaseException as exc:  # handed to the test thread
            outcome["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still waiting after {seconds} s: a lock or a dead database hangs the app"
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def polite(exc: BaseException, limit: int = 200) -> str:
    message = str(exc)
    assert len(message) < limit and "\n" not in message, message
    assert not any(leak in message for leak in LEAKS), message
    return message


# ---------------------------------------------------------------------------------------- PostgreSQL


class Server:
    """A throw-away PostgreSQL cluster that a test may stop and start again (same data, same port)."""

    def __init__(self) -> None:
        bin_dir = _pg_bin()
        if bin_dir is None or not (bin_dir / "pg_ctl").exists():
            pytest.skip("PostgreSQL binaries (initdb, pg_ctl) not found: `make test` installs Debian's postgresql")
        self.prefix: list[str] = []
        self.base = Path(tempfile.mkdtemp(prefix="dst-pg-fail-"))
        if os.geteuid() == 0:  # postgres refuses to run as root
            user = next((u for u in ("postgres", "nobody") if _has_user(u)), None)
            runuser = shutil.which("runuser")
            if user is None or runuser is None:
                pytest.skip("running as root without a `postgres`/`nobody` user and runuser to start PostgreSQL")
            entry = pwd.getpwnam(user)
            os.chown(self.base, entry.pw_uid, entry.pw_gid)
            self.prefix = [runuser, "-u", user, "--"]
        self.bin, self.data, self.port = bin_dir, self.base / "data", _free_port()
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        self.start()

    def _run(self, program: str, *args: str) -> None:
        subprocess.run(
            [*self.prefix, str(self.bin / program), *args], check=True, capture_output=True, timeout=120, cwd=self.base
        )

    def start(self) -> None:
        options = f"-p {self.port} -k {self.base} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.base / "server.log"), "-o", options, "-w", "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "stop", "-m", "fast", "-w")

    def database(self) -> str:
        """A fresh database; its URL carries a password (trust auth ignores it) that no message may show."""
        name = f"failures_{uuid.uuid4().hex[:12]}"
        engine = create_engine(
            f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres", isolation_level="AUTOCOMMIT"
        )
        with engine.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        engine.dispose()
        return f"postgresql+psycopg://postgres:{PASSWORD}@127.0.0.1:{self.port}/{name}"

    def close(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self.stop()
        shutil.rmtree(self.base, ignore_errors=True)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    running = Server()
    try:
        yield running
    finally:
        running.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'annotations.sqlite'}"
    return request.getfixturevalue("server").database()


# ---------------------------------------------------------------------------------------- validation

REFUSED = [
    ("reviewer", "r" * (MAX_REVIEWER + 1), "", ITEM, "the reviewer name is 101 characters long; the limit is 100"),
    ("reviewer", "ana\x00", "", ITEM, "the reviewer name holds a NUL character"),
    ("reviewer", "ana\x1b[31m", "", ITEM, "the reviewer name holds a control character (U+001B)"),
    ("reviewer", "ana\nbo", "", ITEM, "the reviewer name holds a line break or tab"),
    ("reviewer", "ana\udc80", "", ITEM, "the reviewer name is not valid Unicode"),
    ("comment", "ana", "x" * (MAX_COMMENT + 1), ITEM, "the comment is 4,001 characters long; the limit is 4,000"),
    ("comment", "ana", "a\x00b", ITEM, "the comment holds a NUL character"),
    ("comment", "ana", "bell\x07", ITEM, "the comment holds a control character (U+0007)"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("field", "who", "comment", "item", "expected"), REFUSED, ids=[r[4][:40] for r in REFUSED])
def test_values_are_refused_alike_on_both_backends(
    url: str, field: str, who: str, comment: str, item: Item, expected: str
) -> None:
    with AnnotationStore(url) as store:
        with pytest.raises(InvalidAnnotationError) as caught:
            store.annotate(item, ["other"], comment, reviewer=who)
        assert polite(caught.value).startswith(expected), caught.value
        assert isinstance(caught.value, ValueError)  # callers that catch ValueError keep working
        assert store.annotations().empty and store.events().empty  # nothing reached the database


def test_item_components_are_checked_before_the_database(url: str) -> None:
    with pytest.raises(InvalidAnnotationError, match="dialogue_id holds a NUL character"):
        Item("MultiWOZ 2.1", "MUL\x00", 0)
    with pytest.raises(InvalidAnnotationError, match=f"dataset is 201 characters long; the limit is {MAX_COMPONENT}"):
        Item("d" * (MAX_COMPONENT + 1), "MUL0001", 0)
    with pytest.raises(InvalidAnnotationError, match="turn_index 2147483648 is over the limit"):
        Item("d", "MUL0001", 2**31)
    with pytest.raises(InvalidAnnotationError, match=r"the item's key is \d[\d,]* characters long; the limit is 1,024"):
        Item("%" * MAX_COMPONENT, "|" * MAX_COMPONENT, 0, domain="%" * 100, slot="s")
    with pytest.raises(ValueError, match="a tag is 65 characters long; the limit is 64"):
        taxonomy({"review": {"extra_tags": ["t" * 65]}})
    with AnnotationStore(url) as store:
        with pytest.raises(InvalidAnnotationError, match="the item key holds a NUL character"):
            store.remove("v1|x\x00", reviewer="ana")
        with pytest.raises(InvalidAnnotationError, match="the reviewer name holds a NUL character"):
            store.annotations(reviewer="ana\x00")


def test_values_at_the_limits_are_stored_alike(url: str) -> None:
    edge = Item("d" * MAX_COMPONENT, "中" * MAX_COMPONENT, 2**31 - 1, domain="h", slot="s" * MAX_COMPONENT)
    comment = "line one\n\tline two\r\n" + "é" * (MAX_COMMENT - 20)
    with AnnotationStore(url) as store:
        assert store.annotate(edge, ["other"], comment, reviewer="名" * MAX_REVIEWER) == 1
        row = store.annotations().iloc[0]
        assert row["comment"] == comment and row["reviewer"] == "名" * MAX_REVIEWER
        assert row["dialogue_id"] == "中" * MAX_COMPONENT and row["turn_index"] == 2**31 - 1


def test_import_refuses_the_same_values_naming_row_and_field(url: str, tmp_path: Path) -> None:
    with AnnotationStore(url) as store:
        store.annotate(ITEM, ["other"], "fine", reviewer="ana")
        path = tmp_path / "export.json"
        store.export_json(path)
        payload = path.read_text(encoding="utf-8")
        for bad, field in (('"fine"', '"bad\\u0000"'), ('"ana"', '"' + "r" * 101 + '"')):
            (tmp_path / "bad.json").write_text(payload.replace(*[bad, field]), encoding="utf-8")
            with pytest.raises(InputError, match=r"bad\.json \[format: annotations-json\]: row 1: the") as caught:
                store.import_json(tmp_path / "bad.json")
            polite(caught.value, limit=200 + len(str(tmp_path)))  # the message names the file
        assert store.annotations()["comment"].tolist() == ["fine"]


# ------------------------------------------------------------------------------- database down / back


@pytest.mark.slow
def test_postgres_down_gives_a_short_message_then_recovers(server: Server) -> None:
    url = server.database()
    store = AnnotationStore(url)
    assert store.annotate(ITEM, ["other"], "before", reviewer="ana") == 1
    server.stop()
    try:
        started = time.monotonic()
        with pytest.raises(StoreUnavailableError) as caught:
            within(15, lambda: store.annotate(ITEM, ["other"], "while down", reviewer="ana"))
        elapsed = time.monotonic() - started
        message = polite(caught.value)
        assert "cannot be reached" in message and "tried 3 times" in message, message
        assert f"127.0.0.1:{server.port}" in message  # where, without the password
        assert 0.5 < elapsed < 6, elapsed  # retried with backoff, bounded
        with pytest.raises(StoreUnavailableError):
            within(15, store.annotations)
        with pytest.raises(StoreUnavailableError, match="connection refused"):
            within(15, lambda: AnnotationStore(url))  # opening while down: the same short error
    finally:
        server.start()
    # The same store object works again: dead pooled connections are replaced (pre-ping), no restart.
    assert within(15, lambda: store.annotate(ITEM, ["other"], "after", reviewer="ana")) == 2
    assert store.annotations()["comment"].tolist() == ["after"]
    store.close()


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
def test_connection_refused_is_short_and_bounded() -> None:
    port = _free_port()  # nothing listens there
    started = time.monotonic()
    with pytest.raises(StoreUnavailableError) as caught:
        within(15, lambda: AnnotationStore(f"postgresql://ana:{PASSWORD}@127.0.0.1:{port}/annotations"))
    assert time.monotonic() - started < 6
    assert polite(caught.value) == (
        f"the annotation database (postgresql at 127.0.0.1:{port}/annotations) cannot be reached: "
        "connection refused; tried 3 times"
    )


def _review_page(monkeypatch: pytest.MonkeyPatch, url: str) -> AppTest:
    monkeypatch.setenv("DST_ANNOTATIONS_URL", url)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.session_state["workspace_path"] = str(DEMO)
    at.run()
    at.switch_page("pages/review.py").run()
    return at


def _shown(at: AppTest) -> str:
    return " ".join(e.value for e in [*at.error, *at.warning, *at.info, *at.markdown, *at.caption])


@pytest.mark.slow
@pytest.mark.skipif(not DEMO.exists(), reason="the demo workspace is absent")
def test_review_page_says_the_database_is_down_and_recovers(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    url = server.database()
    server.stop()
    try:
        at = _review_page(monkeypatch, url)  # never opened: the open fails
        assert not at.exception, [e.value for e in at.exception]
        assert len(at.error) == 1 and "cannot be reached" in at.error[0].value
        polite(at.error[0].value.rstrip("."))
        assert PASSWORD not in _shown(at)
        assert any(b.label == "Try again" for b in at.button)
    finally:
        server.start()
    at.run()  # the next run (the page polls every few seconds, or "Try again") finds it back
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    assert any(m.label == "Annotations in the store" for m in at.metric)

    server.stop()  # down again, now with the store open and its pool holding dead connections
    try:
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert len(at.error) == 1 and "cannot be reached" in at.error[0].value
        assert not any(m.label == "Annotations in the store" for m in at.metric)
    finally:
        server.start()
    at.run()
    assert not at.exception and not at.error
    assert any(m.label == "Annotations in the store" for m in at.metric)


@pytest.mark.slow
@pytest.mark.skipif(not DEMO.exists(), reason="the demo workspace is absent")
def test_review_page_shows_refused_values_in_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'annotations.sqlite'}"
    at = _review_page(monkeypatch, url)
    at.text_input(key="w_reviewer").input("ana").run()
    next(m for m in at.multiselect if m.label == "Tags").set_value(["other"])
    next(t for t in at.text_input if t.label == "Comment").input("ring\x07bell")
    next(b for b in at.button if b.label == "Save tags").click().run()
    assert not at.exception, [e.value for e in at.exception]
    shown = [e.value.replace("\\", "") for e in at.error]  # markdown escapes undone
    assert shown == ["the comment holds a control character (U+0007), which is refused"]
    assert AnnotationStore(url).annotations().empty

    at.text_input(key="w_reviewer").input("ana\x00").run()  # a name the store refuses: said where the form was
    assert not at.exception, [e.value for e in at.exception]
    assert any("the reviewer name holds a NUL character" in w.value.replace("\\", "") for w in at.warning)


# --------------------------------------------------------------------------------------------- locks

HOLD_SQLITE = textwrap.dedent(
    """
    import sqlite3, sys, time
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO annotation_events (item_key, reviewer, version, action, written_at)"
                 " VALUES ('k', 'other tool', 1, 'edit', 'now')")
    print("holding", flush=True)
    time.sleep(120)
    """
)
HOLD_STORE = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, sys.argv[2])
    from analysis.review import AnnotationStore
    store = AnnotationStore("sqlite:///" + sys.argv[1])
    with store._writing():
        print("holding", flush=True)
        time.sleep(120)
    """
)


def _holder(script: str, *args: str) -> subprocess.Popen[str]:
    holder = subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
    return holder


@pytest.mark.slow
def test_sqlite_writer_holding_the_lock_gives_a_clear_error_within_the_timeout(tmp_path: Path) -> None:
    path = tmp_path / "annotations.sqlite"
    store = AnnotationStore(f"sqlite:///{path}")  # the default timeout, 5 s
    store.annotate(ITEM, ["other"], "first", reviewer="ana")
    holder = _holder(HOLD_SQLITE, str(path))  # another tool's write transaction, left open
    try:
        started = time.monotonic()
        with pytest.raises(StoreLockedError) as caught:
            within(20, lambda: store.annotate(ITEM, ["other"], "blocked", reviewer="ana"))
        assert 4.5 < time.monotonic() - started < 9
        assert str(caught.value) == LOCKED_MESSAGE == "the annotation database is locked by another writer; try again"
        # Reads never wait for a writer (WAL, plain BEGIN): the Review page still shows what is stored.
        started = time.monotonic()
        assert within(5, store.annotations)["comment"].tolist() == ["first"]
        assert time.monotonic() - started < 1
    finally:
        holder.kill()
        holder.wait(10)
    assert store.annotate(ITEM, ["other"], "after", reviewer="ana") == 2  # the lock gone, writes go on
    store.close()


@pytest.mark.slow
def test_a_stopped_writer_holding_the_queue_lock_cannot_block_the_others(tmp_path: Path) -> None:
    path = tmp_path / "annotations.sqlite"
    store = AnnotationStore(f"sqlite:///{path}", lock_timeout=1.0)
    holder = _holder(HOLD_STORE, str(path), str(ROOT))  # one of ours, inside a write, then frozen
    os.kill(holder.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        with pytest.raises(StoreLockedError, match="locked by another writer; try again"):
            within(10, lambda: store.annotate(ITEM, ["other"], "blocked", reviewer="ana"))
        assert time.monotonic() - started < 3
    finally:
        holder.kill()
        holder.wait(10)
    assert store.annotate(ITEM, ["other"], "after", reviewer="ana") == 1
    store.close()


def test_postgres_row_lock_held_gives_a_clear_error_within_the_timeout(server: Server) -> None:
    url = server.database()
    store = AnnotationStore(url, lock_timeout=1.0)
    store.annotate(ITEM, ["other"], "first", reviewer="ana")
    other = create_engine(url).connect()  # another session: locks the row and stays in its transaction
    other.execute(text("SELECT * FROM annotations WHERE reviewer = 'ana' FOR UPDATE"))
    try:
        started = time.monotonic()
        with pytest.raises(StoreLockedError) as caught:
            within(10, lambda: store.annotate(ITEM, ["other"], "blocked", reviewer="ana"))
        assert time.monotonic() - started < 3
        assert polite(caught.value) == LOCKED_MESSAGE
        assert store.annotate(Item("d", "other", 0), ["other"], reviewer="bo") == 1  # other rows are free
    finally:
        other.rollback()
        other.close()
    assert store.annotate(ITEM, ["other"], "after", reviewer="ana") == 2
    store.close()


def test_store_errors_share_one_base() -> None:
    assert issubclass(StoreLockedError, StoreError) and issubclass(StoreUnavailableError, StoreError)
    assert issubclass(InvalidAnnotationError, ValueError)
