"""The annotation store: reviewers' tags and comments on review items (`analysis.review.items`), kept in
any SQLAlchemy database, with its schema migrations, retries, and CSV/JSON export and import.

Storage (`AnnotationStore`): one row per (item, reviewer) holding the reviewer's current tag set and
comment, plus an append-only `annotation_events` log of every write.

Error episodes (`analysis.review.analysis.error_episodes`): an episode is ONE annotation, keyed by its
first turn (`item_key` of that turn), with its span stored in two columns, `last_turn` (turn index of its
last turn) and `n_turns`: tagging the item tags the span, and the queue counts every turn of the span as
reviewed. One row rather than one per turn: a re-tag, a removal or an import touches one row, agreement
compares one rating per episode, and the export has one line per decision. A write stores the span the
reviewer saw (a later re-tag of the same key replaces it, like the tags). Rows written before spans
existed (schema version 2; migration 3 adds the columns) or by a client that writes no span read as a
one-turn episode: `last_turn = turn_index`, `n_turns = 1`. The export carries both columns; an import
of a file without them (an older export) reads one-turn episodes.

Change marker (`change_marker`): every write (edit, import, delete) appends to `annotation_events` in
its own transaction, so the pair (number of events, largest event id) changes with every committed
change, on every backend and whichever process wrote it. One aggregate query over the log: what the
Review page polls every few seconds to show a colleague's tags without a click. Any SQLAlchemy URL works; the
default is a SQLite file beside the workspace manifest (`default_url`), opened in WAL mode (readers never
block; `synchronous=NORMAL`, so a power cut may undo the last commits but never corrupts the file) with
a busy timeout (5 s), and writers queue on an OS lock file beside it (`<db>-writer.lock`), so several writer
processes wait for each other instead of failing with "database is locked". For a team server set
`DST_ANNOTATIONS_URL` or the manifest's `[review] database_url` (e.g. `postgresql://user@host/db`;
a URL without a driver uses psycopg 3).

Concurrency rule (documented, tested with 8 processes on SQLite and PostgreSQL):

* Different reviewers never overwrite each other: the row key is (item_key, reviewer).
* Concurrent edits of one item by one reviewer: **the last committed write wins**. Every write is one
  atomic upsert (``INSERT ... ON CONFLICT (item_key, reviewer) DO UPDATE``) that increments the row's
  `version`; the database serialises the upserts of one row (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL:
  the row lock of the upsert), so versions count the writes 1, 2, 3, ... in commit order with no gap,
  every write is in the event log with the version it produced, and the stored row equals the event
  with the highest version. `updated_at` never goes backwards on a row (max of stored and now).
* Import (`import_csv` / `import_json`) merges by time instead: a row replaces the stored one only when
  its `updated_at` is newer; ties and older rows change nothing, so importing an export twice (or
  into the database it came from) is a no-op. `version` is each database's own write counter: a row
  new to the receiving store keeps the file's version (so export -> import into an empty store ->
  export gives the same file), an imported change of a stored row is one more write of it.
* The export (`annotations_csv` / `annotations_json`, `FILE_COLUMNS`) stands alone: besides the stored
  columns each row carries the run context of its item under the convention in force when it was
  written (convention, outcome, gold, predicted: `analysis.review.analysis.annotation_context`, given as
  `context`; empty without it). That context is derived from the runs, not stored: an import ignores it.
* A write that meets a serialisation failure or a dropped connection is retried with jittered
  exponential backoff, 3 tries over about 1.5 s; reads likewise.

Failing politely (the same rules on every backend):

* Values are checked before they are written (`InvalidAnnotationError`, a ValueError; the limits are in
  `analysis.review.items`).
* A database failure leaves as a `StoreError` with one short line naming the backend, host, port and
  database (never the URL's password, the SQL or its parameters, which go to the log):
  `StoreUnavailableError` when it is down or refuses the connection (after the retries; pooled connections
  are checked before use, so the same store works again when the server is back), `StoreLockedError`
  ("the annotation database is locked by another writer; try again") when another writer held a lock
  longer than `lock_timeout` (default 5 s: SQLite's busy timeout and the writers' file lock; PostgreSQL's
  `lock_timeout`, with `statement_timeout` 6x and `idle_in_transaction_session_timeout` 12x that).

Schema migrations are a numbered list of functions (`MIGRATIONS`; version n is the n-th function) and a
small versioned table of our own, `annotation_schema_migrations` (one row per applied version). Opening a
store applies the missing ones in one transaction, under a lock (SQLite ``BEGIN IMMEDIATE``, PostgreSQL an
advisory transaction lock), so processes opening a fresh database at once do not race. Version 1 created
`annotations`; version 2 added `version` and the `annotation_events` log; version 3 the span of an error
episode (`last_turn`, `n_turns`, filled as one-turn spans for the rows already there). That is enough
here: three migrations so far, one table pair, forward only, each a few lines of SQLAlchemy Core run in the opening
transaction. Alembic (revision files, a `script_location`, its own version table and command line) would
add a tool and a dependency for that; it is worth taking up only if the schema starts changing often or
needs downgrades.

Nothing is escaped at storage time (pages escape at display); tags are stored as a JSON array and read
with `json.loads`, never `eval` or `pickle`.
"""

from __future__ import annotations

import io
import json
import logging
import random
import sys
import threading
import time
import tomllib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from sqlalchemy import (
    Column,
    Connection,
    Engine,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    create_engine,
    delete,
    event,
    func,
    insert,
    select,
    text,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.pool import StaticPool

from analysis import settings as environment
from analysis.errors import InputError
from analysis.review.items import (
    CONTEXT_COLUMNS,
    DEFAULT_TAGS,
    ITEM_COLUMNS,
    MAX_COMPONENT,
    MAX_REVIEWER,
    MAX_TURN_INDEX,
    SPAN_COLUMNS,
    Item,
    _check_comment,
    _check_key,
    _check_reviewer,
    _check_tags,
    _check_text,
    _norm,
    taxonomy,
)
from analysis.safe_csv import frame_csv, restore_cell

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: SQLite's busy timeout alone queues the writers
    fcntl = None  # type: ignore[assignment]

ENV_URL = "DST_ANNOTATIONS_URL"
DEFAULT_FILENAME = "annotations.sqlite"
TAG_SEPARATOR = "; "  # tags in CSV cells, so a spreadsheet shows them readably
_REVIEW_COLUMNS = ["reviewer", "tags", "comment", "created_at", "updated_at", "version"]
EXPORT_COLUMNS = ["item_key", *ITEM_COLUMNS, *SPAN_COLUMNS, *_REVIEW_COLUMNS]
# The export's columns: the stored ones with the run context (convention, outcome, gold, predicted) after
# the item's and its span; the context is read back by nobody (derived from the runs), so an import ignores
# it. An episode's context is its first turn's: every turn of an episode has the same gold, predicted value
# and outcome (that is what makes it one episode).
FILE_COLUMNS = ["item_key", *ITEM_COLUMNS, *SPAN_COLUMNS, *CONTEXT_COLUMNS, *_REVIEW_COLUMNS]
LOCK_TIMEOUT_S = 5.0  # a writer waits this long for another's lock, then StoreLockedError
LOCKED_MESSAGE = "the annotation database is locked by another writer; try again"
_TRIES = 3  # transient failures (a dropped connection, a server restarting): 3 tries over about 1.5 s
_BACKOFF_S = 0.5
_PG_MIGRATION_LOCK = 482_911_731  # any constant: the advisory lock id of this store's migrations

T = TypeVar("T")
log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------------- errors


class StoreError(RuntimeError):
    """The annotation database failed; the message is one short line (no SQL, parameters or password)."""


class StoreUnavailableError(StoreError):
    """The database is down, refuses the connection, or dropped it (after bounded retries)."""


class StoreLockedError(StoreError):
    """Another writer held the lock longer than the store's lock timeout."""


# -------------------------------------------------------------------------------------------------- urls


def _manifest_path(workspace_path: str | Path) -> Path:
    path = Path(workspace_path)
    return path / "workspace.toml" if path.is_dir() or path.suffix != ".toml" else path


def default_url(workspace_path: str | Path, settings: Mapping[str, Any] | None = None) -> str:
    """The store's URL: `DST_ANNOTATIONS_URL`, else the manifest's `[review] database_url`, else a SQLite
    file `annotations.sqlite` beside the manifest. A relative SQLite path in the setting is taken
    relative to the manifest's folder; a `postgresql://` URL without a driver gets psycopg 3.

    `settings` is `Workspace.settings`; when omitted the manifest (if present) is read for `[review]`.
    """
    manifest = _manifest_path(workspace_path)
    root = manifest.parent.resolve()
    url = environment.text(ENV_URL)
    if not url:
        if settings is None and manifest.is_file():
            try:
                settings = tomllib.loads(manifest.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
                raise InputError(str(manifest), "workspace", f"cannot read [review] settings: {exc}") from None
        review = (settings or {}).get("review", {})
        url = str(review.get("database_url", "")).strip() if isinstance(review, Mapping) else ""
    if not url:
        return f"sqlite:///{root / DEFAULT_FILENAME}"
    return _resolve_url(url, root)


def _resolve_url(url: str, root: Path | None = None) -> str:
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.get_backend_name() == "sqlite" and parsed.database and parsed.database != ":memory:":
        path = Path(parsed.database)
        if not path.is_absolute() and root is not None:
            parsed = parsed.set(database=str(root / path))
    return parsed.render_as_string(hide_password=False)


# ------------------------------------------------------------------------------------------------ schema

metadata = MetaData()
annotations_table = Table(
    "annotations",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("item_key", String(1024), nullable=False),
    Column("reviewer", String(200), nullable=False),
    Column("dataset", Text, nullable=False),
    Column("dialogue_id", Text, nullable=False),
    Column("turn_index", Integer, nullable=False),
    Column("domain", Text),
    Column("slot", Text),
    Column("run_id", Text),
    Column("tags", Text, nullable=False),
    Column("comment", Text, nullable=False),
    Column("created_at", String(32), nullable=False),
    Column("updated_at", String(32), nullable=False),
    Column("version", Integer, nullable=False, server_default="1"),
    Column("last_turn", Integer),  # NULL (a row of an older client): the one turn, `turn_index`
    Column("n_turns", Integer),  # NULL: 1
    UniqueConstraint("item_key", "reviewer", name="uq_annotations_item_reviewer"),
)
events_table = Table(
    "annotation_events",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("item_key", String(1024), nullable=False),
    Column("reviewer", String(200), nullable=False),
    Column("version", Integer, nullable=False),
    Column("action", String(16), nullable=False),  # edit | import | delete
    Column("tags", Text),
    Column("comment", Text),
    Column("written_at", String(32), nullable=False),
    Index("ix_annotation_events_item", "item_key", "reviewer", "version"),
)
migrations_table = Table(
    "annotation_schema_migrations",
    MetaData(),
    Column("version", Integer, primary_key=True, autoincrement=False),
    Column("applied_at", String(32), nullable=False),
)


def _migration_1(conn: Connection) -> None:
    """The annotations table as first released (no `version`, no event log)."""
    v1 = MetaData()
    Table(
        "annotations",
        v1,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("item_key", String(1024), nullable=False),
        Column("reviewer", String(200), nullable=False),
        Column("dataset", Text, nullable=False),
        Column("dialogue_id", Text, nullable=False),
        Column("turn_index", Integer, nullable=False),
        Column("domain", Text),
        Column("slot", Text),
        Column("run_id", Text),
        Column("tags", Text, nullable=False),
        Column("comment", Text, nullable=False),
        Column("created_at", String(32), nullable=False),
        Column("updated_at", String(32), nullable=False),
        UniqueConstraint("item_key", "reviewer", name="uq_annotations_item_reviewer"),
    )
    v1.create_all(conn)


def _migration_2(conn: Connection) -> None:
    """A per-row write counter (last write wins) and the append-only event log."""
    conn.execute(text("ALTER TABLE annotations ADD COLUMN version INTEGER NOT NULL DEFAULT 1"))
    events_table.create(conn)
    conn.execute(
        insert(events_table).from_select(
            ["item_key", "reviewer", "version", "action", "tags", "comment", "written_at"],
            select(
                annotations_table.c.item_key,
                annotations_table.c.reviewer,
                annotations_table.c.version,
                text("'migrated'"),
                annotations_table.c.tags,
                annotations_table.c.comment,
                annotations_table.c.updated_at,
            ),
        )
    )


def _migration_3(conn: Connection) -> None:
    """The span of an error episode: its last turn and number of turns; rows already there are one turn."""
    conn.execute(text("ALTER TABLE annotations ADD COLUMN last_turn INTEGER"))
    conn.execute(text("ALTER TABLE annotations ADD COLUMN n_turns INTEGER"))
    conn.execute(text("UPDATE annotations SET last_turn = turn_index, n_turns = 1"))


MIGRATIONS: tuple[Callable[[Connection], None], ...] = (_migration_1, _migration_2, _migration_3)
SCHEMA_VERSION = len(MIGRATIONS)


def _now() -> str:
    """UTC, fixed width, so that text comparison is time order on every backend."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _timestamp(value: object) -> str:
    """An ISO-8601 time in the store's fixed-width UTC form (naive times are taken as UTC)."""
    raw = _norm(value)
    try:
        moment = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"not an ISO-8601 time: {raw!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# SQLSTATEs (PostgreSQL) and messages (SQLite, drivers) by what they mean for the user.
_PG_LOCKED = {"55P03", "57014"}  # lock_not_available (lock_timeout), query_canceled (statement_timeout)
_PG_RETRY = {"40001", "40P01", "57P01", "57P02", "57P03", "25P03"}  # serialisation, deadlock, shutdown, idle
_CONNECTION_FAILURES = (
    ("password authentication failed", "the server refused the credentials", False),
    ("authentication", "the server refused the credentials", False),
    ("does not exist", "the database does not exist on the server", False),
    ("connection refused", "connection refused", True),
    ("timeout expired", "the connection timed out", True),
    ("timed out", "the connection timed out", True),
    ("the database system is", "the server is starting up or shutting down", True),
    ("terminating connection", "the server closed the connection", True),
    ("server closed the connection", "the server closed the connection", True),
    ("connection", "the connection failed", True),
)


def _classify(exc: DBAPIError, where: str) -> tuple[StoreError, bool]:
    """The short error a database failure means for the user, and whether trying again may help."""
    original = exc.orig
    message = str(original).lower()
    state = getattr(original, "sqlstate", None) or getattr(original, "pgcode", None)
    if state in _PG_LOCKED or "database is locked" in message or "database table is locked" in message:
        return StoreLockedError(LOCKED_MESSAGE), False
    if state in _PG_RETRY or "could not serialize" in message or "deadlock" in message:
        return StoreUnavailableError(f"the annotation database ({where}) was busy or restarting; try again"), True
    if isinstance(exc, OperationalError | InterfaceError) or exc.connection_invalidated:
        if "unable to open database file" in message or "readonly" in message or "disk i/o" in message:
            return StoreUnavailableError(f"the annotation database ({where}) cannot be opened or written"), False
        reason, transient = next(
            ((said, again) for needle, said, again in _CONNECTION_FAILURES if needle in message),
            ("the database did not answer", True),
        )
        return StoreUnavailableError(f"the annotation database ({where}) cannot be reached: {reason}"), transient
    return StoreError(f"the annotation database ({where}) refused the operation ({type(original).__name__})"), False


def _retrying(action: Callable[[], T], where: str = "database", *, tries: int = _TRIES) -> T:
    """Run a transaction; transient failures (a dropped connection, a server restarting, a serialisation
    failure) are tried again with jittered exponential backoff, `tries` times in all (about 1.5 s). Any
    database failure leaves as a `StoreError` with a short message; the driver's error, with its SQL and
    parameters, goes to the log only. A lock held past the lock timeout is not retried: the wait was the
    timeout."""
    for attempt in range(tries):
        try:
            return action()
        except DBAPIError as exc:
            error, transient = _classify(exc, where)
            log.warning("annotation store: %s (attempt %d of %d): %s", error, attempt + 1, tries, exc.orig)
            if not transient or attempt == tries - 1:
                if isinstance(error, StoreUnavailableError) and transient:
                    error = StoreUnavailableError(f"{error}; tried {tries} times")
                raise error from None
            time.sleep(_BACKOFF_S * 2**attempt * (0.75 + 0.5 * random.random()))
    raise AssertionError("unreachable")  # pragma: no cover


# ------------------------------------------------------------------------------------------------- store


class AnnotationStore:
    """Reviewers' annotations in any SQLAlchemy database (see the module docstring for the rules).

    >>> store = AnnotationStore("sqlite://")
    >>> item = Item("MultiWOZ 2.1", "MUL0001.json", 2, domain="hotel", slot="area", run_id="trade")
    >>> store.annotate(item, ["missed update"], "the user changed the area", reviewer="ana")
    1
    >>> store.annotations()[["slot", "reviewer", "tags", "version"]].to_dict("records")
    [{'slot': 'area', 'reviewer': 'ana', 'tags': ('missed update',), 'version': 1}]
    """

    def __init__(
        self,
        url: str,
        *,
        tags: Sequence[str] | None = None,
        echo: bool = False,
        lock_timeout: float = LOCK_TIMEOUT_S,
    ) -> None:
        self.url = _resolve_url(url)
        self.tags = list(tags) if tags is not None else list(DEFAULT_TAGS)
        self.lock_timeout = float(lock_timeout)
        parsed = make_url(self.url)
        self.backend = parsed.get_backend_name()
        # Said in messages instead of the URL, which may hold a password.
        self.where = (
            f"{self.backend} at {parsed.host or 'localhost'}:{parsed.port or 5432}/{parsed.database or ''}"
            if parsed.host or self.backend == "postgresql"
            else f"{self.backend} {Path(str(parsed.database)).name if parsed.database else 'in memory'}"
        )
        self._writer_lock: Path | None = None
        options: dict[str, Any] = {"echo": echo}
        if self.backend == "sqlite":
            memory = parsed.database in (None, "", ":memory:")
            if memory:
                options |= {"poolclass": StaticPool, "connect_args": {"check_same_thread": False}}
            else:
                Path(str(parsed.database)).parent.mkdir(parents=True, exist_ok=True)
                options |= {"connect_args": {"timeout": self.lock_timeout}}
                if fcntl is not None:
                    self._writer_lock = Path(f"{parsed.database}-writer.lock")
        else:
            options |= {"pool_recycle": 1800, "pool_pre_ping": True}  # a restarted server's dead connections
            if self.backend == "postgresql" and parsed.get_driver_name() in ("psycopg", "psycopg2"):
                lock_ms = max(1, round(self.lock_timeout * 1000))
                settings = (
                    f"-c lock_timeout={lock_ms} -c statement_timeout={lock_ms * 6}"
                    f" -c idle_in_transaction_session_timeout={lock_ms * 12}"  # a stalled writer's locks are freed
                )
                options |= {"connect_args": {"connect_timeout": 3, "options": settings}}
        self.engine: Engine = create_engine(self.url, **options)
        if self.backend == "sqlite":
            _sqlite_pragmas(self.engine, wal=not memory, busy_ms=round(self.lock_timeout * 1000))
        _retrying(self._migrate, self.where)

    @classmethod
    def for_workspace(cls, workspace_path: str | Path, settings: Mapping[str, Any] | None = None) -> AnnotationStore:
        """The store of a workspace (`default_url`) with its taxonomy (`[review] extra_tags`)."""
        if settings is None:
            manifest = _manifest_path(workspace_path)
            settings = tomllib.loads(manifest.read_text(encoding="utf-8")) if manifest.is_file() else {}
        return cls(default_url(workspace_path, settings), tags=taxonomy(settings))

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> AnnotationStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _writing(self) -> Iterator[Connection]:
        """A write transaction. On a SQLite file, writers first queue on an OS file lock beside the
        database (woken by the kernel as soon as the previous writer is done) instead of polling
        SQLite's busy handler, which sleeps in growing steps; the busy timeout stays as the fallback
        for writers without the lock (other tools, platforms without `fcntl`)."""
        if self._writer_lock is None or fcntl is None:
            with self._write_transaction() as conn:
                yield conn
            return
        handle = self._lock_file(self._writer_lock)
        try:
            with self._write_transaction() as conn:
                yield conn
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()

    @contextmanager
    def _write_transaction(self) -> Iterator[Connection]:
        """`engine.begin()` marked as a write, so that on SQLite it opens with BEGIN IMMEDIATE (reads
        open with a plain BEGIN: in WAL mode they never wait for a writer, even one that stalls)."""
        with self.engine.connect() as conn:
            conn.execution_options(annotation_write=True)
            with conn.begin():
                yield conn

    def _lock_file(self, path: Path) -> Any:
        """The writers' file lock, held through the returned handle, waited for at most `lock_timeout` (a
        writer stopped while holding it must not block the others for ever), else `StoreLockedError`.

        A free lock is taken at once; a busy one is waited for by a helper thread blocked in `flock`, so
        the kernel wakes the next writer as soon as the lock is free (no polling). A waiter that gave up
        leaves the thread behind; when it gets the lock later it releases it at once."""
        handle = open(path, "a+b")  # noqa: SIM115 - closed by the caller, or by the waiter thread
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return handle
        except BlockingIOError:
            pass
        state = {"got": False, "abandoned": False}
        guard, done = threading.Lock(), threading.Event()

        def wait() -> None:
            fcntl.flock(handle, fcntl.LOCK_EX)
            with guard:
                if state["abandoned"]:
                    fcntl.flock(handle, fcntl.LOCK_UN)
                    handle.close()
                    return
                state["got"] = True
            done.set()

        threading.Thread(target=wait, name="annotation-writer-lock", daemon=True).start()
        done.wait(self.lock_timeout)
        with guard:
            if state["got"]:
                return handle
            state["abandoned"] = True
        raise StoreLockedError(LOCKED_MESSAGE)

    def ping(self) -> None:
        """One round trip to the database (no retry): returns, or raises the `StoreError` a user sees."""
        _retrying(lambda: self._read(lambda conn: conn.execute(select(1)).scalar_one()), self.where, tries=1)

    def _read(self, query: Callable[[Connection], T]) -> T:
        with self.engine.connect() as conn:
            return query(conn)

    def _reading(self, query: Callable[[Connection], T]) -> T:
        """A read, retried on transient failures like a write; failures leave as `StoreError`."""
        return _retrying(lambda: self._read(query), self.where)

    # -- schema

    def schema_version(self) -> int:
        def query(conn: Connection) -> int:
            if not self.engine.dialect.has_table(conn, migrations_table.name):
                return 0
            return int(conn.execute(select(func.coalesce(func.max(migrations_table.c.version), 0))).scalar_one())

        return self._reading(query)

    def _migrate(self) -> None:
        with self._writing() as conn:
            if self.backend == "postgresql":
                conn.execute(select(func.pg_advisory_xact_lock(_PG_MIGRATION_LOCK)))
            migrations_table.create(conn, checkfirst=True)
            current = int(conn.execute(select(func.coalesce(func.max(migrations_table.c.version), 0))).scalar_one())
            for version, migration in enumerate(MIGRATIONS, start=1):
                if version > current:
                    migration(conn)
                    conn.execute(insert(migrations_table).values(version=version, applied_at=_now()))

    # -- writes

    def _upsert_statement(self, *, newer_only: bool) -> Any:
        """The atomic upsert of one (item, reviewer) row, returning what it wrote (nothing when the
        `newer_only` guard of imports keeps the stored row)."""
        dialect = postgresql if self.backend == "postgresql" else sqlite
        stmt = dialect.insert(annotations_table)
        stored, incoming = annotations_table.c, stmt.excluded
        newest = func.max if self.backend == "sqlite" else func.greatest
        changes = {
            "tags": incoming.tags,
            "comment": incoming.comment,
            "updated_at": newest(stored.updated_at, incoming.updated_at),
            "version": stored.version + 1,
            "last_turn": incoming.last_turn,
            "n_turns": incoming.n_turns,
        }
        where = stored.updated_at < incoming.updated_at if newer_only else None
        stmt = stmt.on_conflict_do_update(index_elements=["item_key", "reviewer"], set_=changes, where=where)
        return stmt.returning(
            stored.item_key, stored.reviewer, stored.version, stored.updated_at, stored.tags, stored.comment
        )

    def annotate(
        self,
        item: Item | str,
        tags: Iterable[str] | str,
        comment: str = "",
        *,
        reviewer: str,
    ) -> int:
        """Set `reviewer`'s tag set and comment on `item` (replacing their previous ones); the new version.

        `item` is an `Item` (or the key of an item already in the store, whose stored span is kept). An
        episode's `Item` carries its span (`last_turn`, `n_turns`), stored with the annotation. Tags must be in the store's
        taxonomy (ValueError naming the allowed values); the reviewer name is required.
        """
        who = _check_reviewer(reviewer)
        checked = _check_tags(tags, self.tags)
        note = _check_comment(comment)
        components = self._components(item)
        now = _now()
        row = {
            **components,
            "reviewer": who,
            "tags": json.dumps(checked, ensure_ascii=False),
            "comment": note,
            "created_at": now,
            "updated_at": now,
        }

        def write() -> int:
            with self._writing() as conn:
                _, _, version, written, _, _ = conn.execute(
                    self._upsert_statement(newer_only=False), {**row, "version": 1}
                ).one()
                conn.execute(
                    insert(events_table).values(
                        item_key=row["item_key"],
                        reviewer=who,
                        version=version,
                        action="edit",
                        tags=row["tags"],
                        comment=row["comment"],
                        written_at=written,
                    )
                )
                return int(version)

        return _retrying(write, self.where)

    def annotate_many(
        self,
        items: Sequence[Item],
        tags: Iterable[str] | str,
        comment: str = "",
        *,
        reviewer: str,
    ) -> int:
        """Set `reviewer`'s tag set and comment on every item at once (one transaction, each logged as an
        `edit` event): a systematic cause's items tagged together. The number of items written."""
        who = _check_reviewer(reviewer)
        checked = json.dumps(_check_tags(tags, self.tags), ensure_ascii=False)
        note = _check_comment(comment)
        now = _now()
        rows = {}
        for item in items:  # one row per item key (an item named twice is written once)
            components = self._components(item)
            rows[components["item_key"]] = {
                **components,
                "reviewer": who,
                "tags": checked,
                "comment": note,
                "created_at": now,
                "updated_at": now,
                "version": 1,
            }
        if not rows:
            return 0

        def write() -> int:
            with self._writing() as conn:
                written = conn.execute(self._upsert_statement(newer_only=False), list(rows.values())).all()
                conn.execute(
                    insert(events_table),
                    [
                        {
                            "item_key": key,
                            "reviewer": reviewer_,
                            "version": version,
                            "action": "edit",
                            "tags": tags_,
                            "comment": comment_,
                            "written_at": updated,
                        }
                        for key, reviewer_, version, updated, tags_, comment_ in written
                    ],
                )
            return len(written)

        return _retrying(write, self.where)

    def _components(self, item: Item | str) -> dict[str, Any]:
        # An item is anything but a key string: a page's `Item` may come from a module Streamlit reloaded
        # after a source change (another class object than this module's `Item`).
        if not isinstance(item, str):
            return {"item_key": item.key, **item.components(), **item.span()}
        key = _check_key(item)
        found = self._reading(
            lambda conn: conn.execute(
                select(*(annotations_table.c[c] for c in [*ITEM_COLUMNS, *SPAN_COLUMNS]))
                .where(annotations_table.c.item_key == key)
                .limit(1)
            ).first()
        )
        if found is None:
            raise ValueError(f"no item with key {item!r} in the store: pass an Item to annotate a new one")
        row = found._asdict()
        row["last_turn"] = row["turn_index"] if row["last_turn"] is None else row["last_turn"]
        row["n_turns"] = 1 if row["n_turns"] is None else row["n_turns"]
        return {"item_key": item, **row}

    def remove(self, item: Item | str, *, reviewer: str) -> bool:
        """Delete `reviewer`'s annotation of `item` (logged as a `delete` event); whether one existed."""
        who = _check_reviewer(reviewer)
        key = _check_key(item) if isinstance(item, str) else item.key

        def write() -> bool:
            with self._writing() as conn:
                gone = conn.execute(
                    delete(annotations_table)
                    .where(annotations_table.c.item_key == key, annotations_table.c.reviewer == who)
                    .returning(annotations_table.c.version)
                ).first()
                if gone is not None:
                    conn.execute(
                        insert(events_table).values(
                            item_key=key, reviewer=who, version=gone[0] + 1, action="delete", written_at=_now()
                        )
                    )
                return gone is not None

        return _retrying(write, self.where)

    # -- reads

    def change_marker(self) -> tuple[int, int]:
        """(number of events, largest event id) of the append-only write log: changes with every committed
        write of any process (module docstring); one aggregate query, no retry (a poll tries again soon)."""
        query = select(func.count(), func.coalesce(func.max(events_table.c.id), 0)).select_from(events_table)
        count, last = _retrying(lambda: self._read(lambda conn: conn.execute(query).one()), self.where, tries=1)
        return int(count), int(last)

    def annotations(
        self,
        *,
        reviewer: str | Sequence[str] | None = None,
        dataset: str | None = None,
        run_id: str | None = None,
        tag: str | None = None,
    ) -> pd.DataFrame:
        """Current annotations, one row per (item, reviewer): EXPORT_COLUMNS with `tags` as a tuple and
        the span filled (a row without one: `last_turn = turn_index`, `n_turns = 1`).

        Filters: `reviewer` (one or several), `dataset`, `run_id` (exact; run-independent items have
        None), `tag` (rows whose tag set holds it).
        """
        table = annotations_table.c
        query = select(*(table[c] for c in EXPORT_COLUMNS)).order_by(table.id)
        if reviewer is not None:
            names = [reviewer] if isinstance(reviewer, str) else list(reviewer)
            query = query.where(table.reviewer.in_([_check_text(n, "the reviewer name", MAX_REVIEWER) for n in names]))
        if dataset is not None:
            query = query.where(table.dataset == _check_text(dataset, "dataset", MAX_COMPONENT))
        if run_id is not None:
            query = query.where(table.run_id == _check_text(run_id, "run_id", MAX_COMPONENT))
        rows = self._reading(lambda conn: conn.execute(query).all())
        frame = _annotation_frame(rows)
        if tag is not None:
            wanted = _check_tags([tag], self.tags)[0]
            frame = frame[frame["tags"].map(lambda tags: wanted in tags).astype(bool)].reset_index(drop=True)
        return frame

    def events(self, item: Item | str | None = None, *, reviewer: str | None = None) -> pd.DataFrame:
        """The write log (every edit, import and delete with the version it produced), oldest first."""
        table = events_table.c
        query = select(events_table).order_by(table.id)
        if item is not None:
            query = query.where(table.item_key == (_check_key(item) if isinstance(item, str) else item.key))
        if reviewer is not None:
            query = query.where(table.reviewer == _check_text(reviewer, "the reviewer name", MAX_REVIEWER))
        rows = self._reading(lambda conn: conn.execute(query).all())
        columns = [c.name for c in events_table.columns]
        return pd.DataFrame([tuple(r) for r in rows], columns=columns)

    # -- export / import

    def export_json(self, path: str | Path, *, context: Callable[[pd.DataFrame], pd.DataFrame] | None = None) -> int:
        """Write every annotation as JSON (`annotations_json`); the number written. `context` maps the
        annotations to their run context (e.g. ``lambda a: annotation_context(a, scoreds)``)."""
        frame = self.annotations()
        Path(path).write_text(annotations_json(frame, None if context is None else context(frame)), encoding="utf-8")
        return len(frame)

    def export_csv(self, path: str | Path, *, context: Callable[[pd.DataFrame], pd.DataFrame] | None = None) -> int:
        """Write every annotation as CSV (`annotations_csv`); the number written. `context`: as `export_json`."""
        frame = self.annotations()
        text = annotations_csv(frame, None if context is None else context(frame))
        Path(path).write_text(text, encoding="utf-8", newline="")
        return len(frame)

    def import_json(self, path: str | Path, *, data: bytes | None = None) -> int:
        """Merge a JSON export (newer `updated_at` wins, see the module docstring); rows changed."""
        fmt = "annotations-json"
        try:
            payload = json.loads(data if data is not None else Path(path).read_bytes())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(str(path), fmt, f"cannot read JSON: {exc}") from None
        except RecursionError:  # a hostile file of nested brackets
            raise InputError(str(path), fmt, "cannot read JSON: nested too deeply for the parser") from None
        except ValueError:  # an integer longer than Python converts
            digits = sys.get_int_max_str_digits()
            raise InputError(str(path), fmt, f"cannot read JSON: a number has more than {digits:,} digits") from None
        records = payload.get("annotations") if isinstance(payload, dict) else payload
        if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
            raise InputError(str(path), fmt, "expected {'annotations': [ {...}, ... ]} or a list of objects")
        return self._import(records, str(path), fmt)

    def import_csv(self, path: str | Path, *, data: bytes | None = None) -> int:
        """Merge a CSV export (newer `updated_at` wins, see the module docstring); rows changed."""
        fmt = "annotations-csv"
        try:
            source = io.BytesIO(data) if data is not None else path
            frame = pd.read_csv(source, dtype="str", keep_default_na=False, encoding="utf-8")
        except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
            raise InputError(str(path), fmt, f"cannot read CSV: {exc}") from None
        records = frame.rename(columns=restore_cell).map(restore_cell).to_dict("records")
        for record in records:
            record["tags"] = [t for t in str(record.get("tags", "")).split(";") if t.strip()]
        return self._import(records, str(path), fmt)

    def _import(self, records: list[dict[str, Any]], path: str, fmt: str) -> int:
        rows = [self._import_row(record, n, path, fmt) for n, record in enumerate(records, start=1)]
        latest: dict[tuple[str, str], dict[str, Any]] = {}
        for row in rows:  # a file naming one (item, reviewer) twice: its newest row stands for it
            known = latest.get((row["item_key"], row["reviewer"]))
            if known is None or known["updated_at"] < row["updated_at"]:
                latest[(row["item_key"], row["reviewer"])] = row
        if not latest:
            return 0

        def write() -> int:
            with self._writing() as conn:
                written = conn.execute(self._upsert_statement(newer_only=True), list(latest.values())).all()
                if written:
                    conn.execute(
                        insert(events_table),
                        [
                            {
                                "item_key": key,
                                "reviewer": reviewer,
                                "version": version,
                                "action": "import",
                                "tags": tags,
                                "comment": comment,
                                "written_at": updated,
                            }
                            for key, reviewer, version, updated, tags, comment in written
                        ],
                    )
            return len(written)

        return _retrying(write, self.where)

    def _import_row(self, record: Mapping[str, Any], n: int, path: str, fmt: str) -> dict[str, Any]:
        dialogue = _norm(record.get("dialogue_id")) or None
        turn = record.get("turn_index")

        def fail(problem: str, field: str | None = None) -> InputError:
            return InputError(path, fmt, f"row {n}: {problem}", dialogue_id=dialogue, turn=turn, field=field)

        missing = [c for c in ("item_key", "dialogue_id", "turn_index", "reviewer", "tags") if c not in record]
        if missing:
            raise fail(f"missing fields {missing}; expected {EXPORT_COLUMNS}")
        try:
            turn_index = int(str(turn))
            item = Item(
                _norm(record.get("dataset")),
                _norm(dialogue),
                turn_index,
                domain=_norm(record.get("domain")) or None,
                slot=_norm(record.get("slot")) or None,
                run_id=_norm(record.get("run_id")) or None,
            )
        except ValueError as exc:
            raise fail(str(exc), "turn_index") from None
        if item.key != _norm(record["item_key"]):
            raise fail(
                f"item_key {record['item_key']!r} does not match its components (expected {item.key!r})", "item_key"
            )
        try:  # the span: absent (an export from before episodes) or empty, a one-turn episode
            span = {c: None if _norm(record.get(c)) == "" else int(_norm(record.get(c))) for c in SPAN_COLUMNS}
            item = Item(**{**item.components(), **span})
        except ValueError as exc:
            raise fail(f"span: {exc}", "last_turn") from None
        try:
            reviewer = _check_reviewer(record.get("reviewer"))
            comment = _check_comment(record.get("comment"))
        except ValueError as exc:
            raise fail(str(exc), "comment" if "comment" in str(exc) else "reviewer") from None
        try:
            raw_tags = record["tags"]
            tags = _check_tags([raw_tags] if isinstance(raw_tags, str) else list(raw_tags), self.tags)
        except (ValueError, TypeError) as exc:
            raise fail(str(exc), "tags") from None
        try:
            updated = _timestamp(record.get("updated_at"))
            created = _timestamp(record.get("created_at") or updated)
        except ValueError as exc:
            raise fail(str(exc), "updated_at") from None
        raw_version = record.get("version")
        try:  # a row new to this store keeps its version; absent (an older export): 1
            version = 1 if raw_version is None or str(raw_version).strip() == "" else int(str(raw_version))
        except ValueError:
            version = 0
        if not 1 <= version <= MAX_TURN_INDEX:
            raise fail(f"version {raw_version!r} is not a whole number from 1 to {MAX_TURN_INDEX:,}", "version")
        return {
            "item_key": item.key,
            **item.components(),
            **item.span(),
            "reviewer": reviewer,
            "tags": json.dumps(tags, ensure_ascii=False),
            "comment": comment,
            "created_at": created,
            "updated_at": updated,
            "version": version,
        }


def _sqlite_pragmas(engine: Engine, *, wal: bool, busy_ms: int) -> None:
    """WAL (readers never block the writer; NORMAL sync, safe in WAL mode), a busy timeout, and
    `BEGIN IMMEDIATE` for every write transaction: taking the write lock up front lets SQLite's busy handler queue writers instead of
    failing a read-to-write lock upgrade with "database is locked"."""

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # SQLAlchemy emits BEGIN itself (below)
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {int(busy_ms)}")
        if wal:
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("annotation_write") else "BEGIN")


def _with_context(frame: pd.DataFrame, context: pd.DataFrame | None) -> pd.DataFrame:
    """The annotations with the context columns (None where unknown), in `FILE_COLUMNS` order."""
    if context is not None and len(context) != len(frame):
        raise ValueError(f"context has {len(context)} rows for {len(frame)} annotations")
    extra = {
        c: (
            context[c].astype(object).to_numpy()
            if context is not None and c in context.columns
            else np.full(len(frame), None, dtype=object)
        )
        for c in CONTEXT_COLUMNS
    }
    return frame.assign(**extra)[FILE_COLUMNS]


def annotations_json(frame: pd.DataFrame, context: pd.DataFrame | None = None) -> str:
    """`AnnotationStore.annotations()` as the JSON export: `{"schema_version", "annotations": [...]}`,
    each row with `FILE_COLUMNS` (the run context from `context`, aligned rows; null without it)."""
    full = _with_context(frame, context)
    records = full.assign(tags=full["tags"].map(list)).astype(object)
    records = records.where(records.notna(), None)
    payload = {"schema_version": SCHEMA_VERSION, "annotations": records.to_dict("records")}
    return json.dumps(payload, ensure_ascii=False, indent=1)


def annotations_csv(frame: pd.DataFrame, context: pd.DataFrame | None = None) -> str:
    """`AnnotationStore.annotations()` as the CSV export (`FILE_COLUMNS`, run context as in
    `annotations_json`): UTF-8, tags joined by `; `, text neutralised against formula injection by
    `analysis.safe_csv` (and restored by `import_csv`)."""
    full = _with_context(frame, context)
    return frame_csv(full.assign(tags=full["tags"].map(TAG_SEPARATOR.join)), columns=FILE_COLUMNS)


def _annotation_frame(rows: Sequence[Any]) -> pd.DataFrame:
    frame = pd.DataFrame([tuple(r) for r in rows], columns=EXPORT_COLUMNS)
    frame["tags"] = pd.Series([tuple(json.loads(t)) for t in frame["tags"]], index=frame.index, dtype=object)
    frame["turn_index"] = frame["turn_index"].astype("int64")
    frame["version"] = frame["version"].astype("int64")
    # A row without a span (written before migration 3 by an older client) is a one-turn episode.
    frame["last_turn"] = frame["last_turn"].astype("Int64").fillna(frame["turn_index"]).astype("int64")
    frame["n_turns"] = frame["n_turns"].astype("Int64").fillna(1).astype("int64")
    for column in ("item_key", "dataset", "dialogue_id", "domain", "slot", "run_id", "reviewer", "comment"):
        frame[column] = frame[column].astype("str")
    return frame
