"""Team review: reviewers' tags and comments on error items, stored with SQLAlchemy, and their analysis.

An *item* is a turn (optionally one slot of it, optionally in one run) of a dataset. Its key is a
readable string of its normalised components (`item_key`), so it is the same across reloads and
re-runs of the same data: it never depends on `tid` or on row order.

Storage (`AnnotationStore`): one row per (item, reviewer) holding the reviewer's current tag set and
comment, plus an append-only `annotation_events` log of every write. Any SQLAlchemy URL works; the
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
  into the database it came from) is a no-op. `version` is each database's own write counter: exports
  show it, imports do not copy it (an imported change is one more write of the receiving row).
* A write that meets a serialisation failure or a dropped connection is retried with jittered
  exponential backoff, 3 tries over about 1.5 s; reads likewise.

Failing politely (the same rules on every backend):

* Values are checked before they are written (`InvalidAnnotation`, a ValueError): reviewer name at most
  `MAX_REVIEWER` (100) characters, a tag `MAX_TAG` (64), a comment `MAX_COMMENT` (4,000), dataset,
  dialogue id, domain, slot and run id `MAX_COMPONENT` (200) each and the item key 1,024, turn index
  below 2**31; no NUL anywhere, no other control character (a comment may hold tabs and line breaks),
  no lone surrogate. Lengths are characters after NFC normalisation.
* A database failure leaves as a `StoreError` with one short line naming the backend, host, port and
  database (never the URL's password, the SQL or its parameters, which go to the log):
  `StoreUnavailable` when it is down or refuses the connection (after the retries; pooled connections
  are checked before use, so the same store works again when the server is back), `StoreLocked`
  ("the annotation database is locked by another writer; try again") when another writer held a lock
  longer than `lock_timeout` (default 5 s: SQLite's busy timeout and the writers' file lock; PostgreSQL's
  `lock_timeout`, with `statement_timeout` 6x and `idle_in_transaction_session_timeout` 12x that).

Schema migrations are a small versioned table of our own, `annotation_schema_migrations` (one row per
applied version), and an ordered list of migration functions (`MIGRATIONS`). Opening a store applies
the missing ones in one transaction, under a lock (SQLite ``BEGIN IMMEDIATE``, PostgreSQL an advisory
transaction lock), so processes opening a fresh database at once do not race. Version 1 created
`annotations`; version 2 added `version` and the `annotation_events` log.

Nothing is escaped at storage time (pages escape at display); tags are stored as a JSON array and read
with `json.loads`, never `eval` or `pickle`.
"""

from __future__ import annotations

import io
import json
import logging
import math
import os
import random
import threading
import time
import tomllib
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

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

from analysis.errors import InputError
from analysis.export.safe_csv import frame_csv, restore_cell

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: SQLite's busy timeout alone queues the writers
    fcntl = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from analysis.scoring import Scored

DEFAULT_TAGS = (
    "gold annotation error",
    "normalisation mismatch",
    "missed update",
    "wrong value",
    "hallucinated slot",
    "dontcare confusion",
    "coreference",
    "inherited error",
    "other",
)
ENV_URL = "DST_ANNOTATIONS_URL"
DEFAULT_FILENAME = "annotations.sqlite"
TAG_SEPARATOR = "; "  # tags in CSV cells, so a spreadsheet shows them readably
ITEM_COLUMNS = ["dataset", "dialogue_id", "turn_index", "domain", "slot", "run_id"]
EXPORT_COLUMNS = ["item_key", *ITEM_COLUMNS, "reviewer", "tags", "comment", "created_at", "updated_at", "version"]
ERROR_OUTCOMES = ("wrong_value", "missed", "spurious")
_KEY_SEPARATOR = "|"
_KEY_VERSION = "v1"
# Limits of what is written, the same on every backend (checked before the database sees a value;
# lengths in characters after NFC normalisation, as PostgreSQL's varchar counts them).
MAX_REVIEWER = 100
MAX_TAG = 64
MAX_COMMENT = 4000
MAX_COMPONENT = 200  # dataset, dialogue id, domain, slot, run id
MAX_KEY = 1024  # the item_key column
MAX_TURN_INDEX = 2**31 - 1  # PostgreSQL's integer
LOCK_TIMEOUT_S = 5.0  # a writer waits this long for another's lock, then StoreLocked
LOCKED_MESSAGE = "the annotation database is locked by another writer; try again"
_TRIES = 3  # transient failures (a dropped connection, a server restarting): 3 tries over about 1.5 s
_BACKOFF_S = 0.5
_PG_MIGRATION_LOCK = 482_911_731  # any constant: the advisory lock id of this store's migrations

T = TypeVar("T")
log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------------- errors


class InvalidAnnotation(ValueError):
    """A value refused before it is written (too long, a NUL or control character, not valid Unicode):
    the same rule on SQLite and PostgreSQL, one short message naming the field and the limit."""


class StoreError(RuntimeError):
    """The annotation database failed; the message is one short line (no SQL, parameters or password)."""


class StoreUnavailable(StoreError):
    """The database is down, refuses the connection, or dropped it (after bounded retries)."""


class StoreLocked(StoreError):
    """Another writer held the lock longer than the store's lock timeout."""


def _check_text(value: object, what: str, limit: int, *, multiline: bool = False) -> str:
    r"""`value` normalised (`_norm`) and checked: at most `limit` characters, no NUL, no control
    character (a comment may hold line breaks and tabs), encodable as UTF-8.

    >>> _check_text(" ana ", "reviewer name", 100)
    'ana'
    >>> _check_text("a\x00b", "comment", 10, multiline=True)
    Traceback (most recent call last):
    ...
    analysis.review.annotations.InvalidAnnotation: comment holds a NUL character (\x00), which is refused: remove it
    """
    text_value = _norm(value)
    if "\x00" in text_value:
        raise InvalidAnnotation(f"{what} holds a NUL character (\\x00), which is refused: remove it")
    allowed = "\t\n\r" if multiline else ""
    bad = next((ch for ch in text_value if unicodedata.category(ch) == "Cc" and ch not in allowed), None)
    if bad is not None:
        kind = "a line break or tab" if bad in "\t\n\r" else f"a control character (U+{ord(bad):04X})"
        rule = "" if multiline else "; it must be one line of printable text"
        raise InvalidAnnotation(f"{what} holds {kind}, which is refused{rule}")
    try:
        text_value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidAnnotation(f"{what} is not valid Unicode (it holds a lone surrogate)") from None
    if len(text_value) > limit:
        raise InvalidAnnotation(f"{what} is {len(text_value):,} characters long; the limit is {limit:,}")
    return text_value


def _shown(value: object, limit: int = 60) -> str:
    """A value quoted in a message, cut short (a message stays one short line)."""
    text_value = repr(_norm(value))
    return text_value if len(text_value) <= limit else text_value[: limit - 1] + "…"


# ----------------------------------------------------------------------------------------------- items


@dataclass(frozen=True)
class Item:
    """What a reviewer annotates: a turn, optionally one slot (domain + slot) and one run.

    >>> Item("MultiWOZ 2.1", "MUL0001.json", 3, domain="hotel", slot="area").key
    'v1|MultiWOZ 2.1|MUL0001.json|3|hotel|area|'
    """

    dataset: str
    dialogue_id: str
    turn_index: int
    domain: str | None = None
    slot: str | None = None
    run_id: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.turn_index, bool) or not isinstance(self.turn_index, int | np.integer):
            raise ValueError(f"turn_index must be an integer, got {self.turn_index!r}")
        if int(self.turn_index) < 0:
            raise ValueError(f"turn_index must be >= 0, got {self.turn_index}")
        if int(self.turn_index) > MAX_TURN_INDEX:
            raise InvalidAnnotation(f"turn_index {self.turn_index} is over the limit of {MAX_TURN_INDEX:,}")
        for name in ("dataset", "dialogue_id", "domain", "slot", "run_id"):
            _check_text(getattr(self, name), name, MAX_COMPONENT)
        if not _norm(self.dialogue_id):
            raise ValueError("an item needs a dialogue_id")
        if _norm(self.domain) and not _norm(self.slot):
            raise ValueError("an item with a domain needs a slot")
        if len(self.key) > MAX_KEY:
            raise InvalidAnnotation(f"the item's key is {len(self.key):,} characters long; the limit is {MAX_KEY:,}")

    @property
    def key(self) -> str:
        return item_key(
            self.dataset, self.dialogue_id, self.turn_index, slot=_slot_pair(self.domain, self.slot), run_id=self.run_id
        )

    def components(self) -> dict[str, Any]:
        """The normalised components as stored (None for an absent slot or run)."""
        domain, slot = _slot_pair(self.domain, self.slot) or (None, None)
        return {
            "dataset": _norm(self.dataset),
            "dialogue_id": _norm(self.dialogue_id),
            "turn_index": int(self.turn_index),
            "domain": None if domain is None else _norm(domain),
            "slot": None if slot is None else _norm(slot),
            "run_id": _norm(self.run_id) or None,
        }


def _norm(value: object) -> str:
    """Unicode NFC, surrounding whitespace stripped; None/NaN become ''."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return unicodedata.normalize("NFC", str(value)).strip()


def _slot_pair(domain: str | None, slot: str | None) -> tuple[str, str] | None:
    if slot is None or _norm(slot) == "":
        return None
    return (_norm(domain), _norm(slot))


def split_slot(slot: str | tuple[str, str] | None) -> tuple[str, str] | None:
    """`(domain, slot)` from a pair or a `domain-slot` string (split at the first hyphen).

    >>> split_slot("restaurant-book day"), split_slot(("餐厅", "区域")), split_slot("area")
    (('restaurant', 'book day'), ('餐厅', '区域'), ('', 'area'))
    """
    if slot is None:
        return None
    if isinstance(slot, tuple):
        return _slot_pair(slot[0], slot[1])
    text_slot = _norm(slot)
    if not text_slot:
        return None
    domain, sep, name = text_slot.partition("-")
    return (domain.strip(), name.strip()) if sep and name.strip() else ("", text_slot)


def _escape(component: str) -> str:
    return component.replace("%", "%25").replace(_KEY_SEPARATOR, "%7C")


def item_key(
    dataset: str,
    dialogue_id: str,
    turn_index: int,
    slot: str | tuple[str, str] | None = None,
    run_id: str | None = None,
) -> str:
    """The stable key of an item: `v1|dataset|dialogue|turn|domain|slot|run`, components NFC-normalised
    and stripped, `|` and `%` percent-escaped, absent slot or run left empty.

    It depends only on what the item is, never on `tid` or row order, so it survives reloads and re-runs.

    >>> item_key("CrossWOZ", " 1001 ", 2, slot="餐厅-区域", run_id="rule")
    'v1|CrossWOZ|1001|2|餐厅|区域|rule'
    >>> item_key("MultiWOZ 2.1", "a|b", 0) == item_key("MultiWOZ 2.1", "a|b", 0, slot=None, run_id="")
    True
    """
    if isinstance(turn_index, bool) or not isinstance(turn_index, int | np.integer):
        raise ValueError(f"turn_index must be an integer, got {turn_index!r}")
    pair = split_slot(slot)
    domain, name = pair if pair is not None else ("", "")
    parts = [_norm(dataset), _norm(dialogue_id), str(int(turn_index)), domain, name, _norm(run_id)]
    return _KEY_SEPARATOR.join([_KEY_VERSION, *(_escape(p) for p in parts)])


def _norm_series(values: pd.Series) -> pd.Series:
    return values.astype("str").fillna("").str.normalize("NFC").str.strip()


def item_keys(items: pd.DataFrame, *, with_slot: bool = True, with_run: bool = True) -> pd.Series:
    """`item_key` for every row of a frame with ITEM_COLUMNS (missing dataset/domain/slot/run: empty),
    vectorised. `with_slot=False` / `with_run=False` give the keys of the covering turn / any-run item."""
    n = len(items)

    def column(name: str, use: bool = True) -> pd.Series:
        if not use or name not in items.columns:
            return pd.Series([""] * n, index=items.index, dtype="str")
        return _norm_series(items[name]).str.replace("%", "%25").str.replace(_KEY_SEPARATOR, "%7C")

    slot = column("slot", with_slot)
    domain = column("domain", with_slot).where(slot != "", "")
    turn = items["turn_index"].astype("int64").astype("str")
    key = _KEY_VERSION + _KEY_SEPARATOR + column("dataset") + _KEY_SEPARATOR + column("dialogue_id")
    key = key + _KEY_SEPARATOR + turn + _KEY_SEPARATOR + domain + _KEY_SEPARATOR + slot
    return (key + _KEY_SEPARATOR + column("run_id", with_run)).rename("item_key")


# -------------------------------------------------------------------------------------------- taxonomy


def taxonomy(workspace_settings: Mapping[str, Any] | None = None) -> list[str]:
    """The default tags followed by the manifest's `[review] extra_tags` (duplicates dropped).

    >>> taxonomy({"review": {"extra_tags": ["asr error", "other"]}})[-2:]
    ['other', 'asr error']
    """
    tags = list(DEFAULT_TAGS)
    review = (workspace_settings or {}).get("review", {})
    if not isinstance(review, Mapping):
        raise ValueError("[review] in the workspace manifest must be a table")
    extra = review.get("extra_tags", [])
    if not isinstance(extra, list) or not all(isinstance(t, str) for t in extra):
        raise ValueError("[review] extra_tags must be a list of strings")
    for raw in extra:
        tag = _check_text(raw, "[review] extra_tags: a tag", MAX_TAG)
        if not tag or ";" in tag:
            raise ValueError(f"[review] extra_tags: {raw!r} is not a usable tag (empty, or holds ';')")
        if tag.casefold() not in {t.casefold() for t in tags}:
            tags.append(tag)
    return tags


def _check_tags(tags: Iterable[str] | str, allowed: Sequence[str]) -> list[str]:
    """Tags in the taxonomy's spelling (matched case-insensitively), given order, duplicates dropped."""
    if isinstance(tags, str):
        tags = [tags]
    by_fold = {t.casefold(): t for t in allowed}
    checked: list[str] = []
    for raw in tags:
        tag = by_fold.get(_norm(raw).casefold())
        if tag is None:
            raise InvalidAnnotation(f"tag {_shown(raw)} is not in the taxonomy; allowed: {', '.join(allowed)}")
        if tag not in checked:
            checked.append(tag)
    if not checked:
        raise ValueError(f"an annotation needs at least one tag; allowed: {', '.join(allowed)}")
    return checked


def _check_reviewer(reviewer: object) -> str:
    name = _check_text(reviewer, "the reviewer name", MAX_REVIEWER)
    if not name:
        raise InvalidAnnotation("an annotation needs a reviewer name (non-empty)")
    return name


def _check_comment(comment: object) -> str:
    """The comment as stored: kept as typed (not stripped), checked like any text but lines allowed."""
    raw = "" if comment is None else str(comment)
    _check_text(raw, "the comment", MAX_COMMENT, multiline=True)
    if len(raw) > MAX_COMMENT:
        raise InvalidAnnotation(f"the comment is {len(raw):,} characters long; the limit is {MAX_COMMENT:,}")
    return raw


def _check_key(key: object) -> str:
    return _check_text(key, "the item key", MAX_KEY)


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
    url = os.environ.get(ENV_URL, "").strip()
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


MIGRATIONS: tuple[Callable[[Connection], None], ...] = (_migration_1, _migration_2)
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
        return StoreLocked(LOCKED_MESSAGE), False
    if state in _PG_RETRY or "could not serialize" in message or "deadlock" in message:
        return StoreUnavailable(f"the annotation database ({where}) was busy or restarting; try again"), True
    if isinstance(exc, OperationalError | InterfaceError) or exc.connection_invalidated:
        if "unable to open database file" in message or "readonly" in message or "disk i/o" in message:
            return StoreUnavailable(f"the annotation database ({where}) cannot be opened or written"), False
        reason, transient = next(
            ((said, again) for needle, said, again in _CONNECTION_FAILURES if needle in message),
            ("the database did not answer", True),
        )
        return StoreUnavailable(f"the annotation database ({where}) cannot be reached: {reason}"), transient
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
                if isinstance(error, StoreUnavailable) and transient:
                    error = StoreUnavailable(f"{error}; tried {tries} times")
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
        writer stopped while holding it must not block the others for ever), else `StoreLocked`.

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
        raise StoreLocked(LOCKED_MESSAGE)

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

        `item` is an `Item` (or the key of an item already in the store). Tags must be in the store's
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

    def _components(self, item: Item | str) -> dict[str, Any]:
        if isinstance(item, Item):
            return {"item_key": item.key, **item.components()}
        key = _check_key(item)
        found = self._reading(
            lambda conn: conn.execute(
                select(*(annotations_table.c[c] for c in ITEM_COLUMNS))
                .where(annotations_table.c.item_key == key)
                .limit(1)
            ).first()
        )
        if found is None:
            raise ValueError(f"no item with key {item!r} in the store: pass an Item to annotate a new one")
        return {"item_key": item, **found._asdict()}

    def remove(self, item: Item | str, *, reviewer: str) -> bool:
        """Delete `reviewer`'s annotation of `item` (logged as a `delete` event); whether one existed."""
        who = _check_reviewer(reviewer)
        key = item.key if isinstance(item, Item) else _check_key(item)

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

    def annotations(
        self,
        *,
        reviewer: str | Sequence[str] | None = None,
        dataset: str | None = None,
        run_id: str | None = None,
        tag: str | None = None,
    ) -> pd.DataFrame:
        """Current annotations, one row per (item, reviewer): EXPORT_COLUMNS with `tags` as a tuple.

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
            query = query.where(table.item_key == (item.key if isinstance(item, Item) else _check_key(item)))
        if reviewer is not None:
            query = query.where(table.reviewer == _check_text(reviewer, "the reviewer name", MAX_REVIEWER))
        rows = self._reading(lambda conn: conn.execute(query).all())
        columns = [c.name for c in events_table.columns]
        return pd.DataFrame([tuple(r) for r in rows], columns=columns)

    # -- export / import

    def export_json(self, path: str | Path) -> int:
        """Write every annotation as a JSON array of objects (tags as lists); the number written."""
        frame = self.annotations()
        Path(path).write_text(annotations_json(frame), encoding="utf-8")
        return len(frame)

    def export_csv(self, path: str | Path) -> int:
        """Write every annotation as CSV (`annotations_csv`); the number written."""
        frame = self.annotations()
        Path(path).write_text(annotations_csv(frame), encoding="utf-8", newline="")
        return len(frame)

    def import_json(self, path: str | Path, *, data: bytes | None = None) -> int:
        """Merge a JSON export (newer `updated_at` wins, see the module docstring); rows changed."""
        fmt = "annotations-json"
        try:
            payload = json.loads(data if data is not None else Path(path).read_bytes())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(str(path), fmt, f"cannot read JSON: {exc}") from None
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
                latest[(row["item_key"], row["reviewer"])] = {**row, "version": 1}
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
        return {
            "item_key": item.key,
            **item.components(),
            "reviewer": reviewer,
            "tags": json.dumps(tags, ensure_ascii=False),
            "comment": comment,
            "created_at": created,
            "updated_at": updated,
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


def annotations_json(frame: pd.DataFrame) -> str:
    """`AnnotationStore.annotations()` as the JSON export: `{"schema_version", "annotations": [...]}`."""
    records = frame.assign(tags=frame["tags"].map(list)).astype(object)
    records = records.where(records.notna(), None)
    payload = {"schema_version": SCHEMA_VERSION, "annotations": records.to_dict("records")}
    return json.dumps(payload, ensure_ascii=False, indent=1)


def annotations_csv(frame: pd.DataFrame) -> str:
    """`AnnotationStore.annotations()` as the CSV export: UTF-8, tags joined by `; `, text neutralised
    against formula injection by `analysis.export.safe_csv` (and restored by `import_csv`)."""
    return frame_csv(frame.assign(tags=frame["tags"].map(TAG_SEPARATOR.join)), columns=EXPORT_COLUMNS)


def _annotation_frame(rows: Sequence[Any]) -> pd.DataFrame:
    frame = pd.DataFrame([tuple(r) for r in rows], columns=EXPORT_COLUMNS)
    frame["tags"] = pd.Series([tuple(json.loads(t)) for t in frame["tags"]], index=frame.index, dtype=object)
    frame["turn_index"] = frame["turn_index"].astype("int64")
    frame["version"] = frame["version"].astype("int64")
    for column in ("item_key", "dataset", "dialogue_id", "domain", "slot", "run_id", "reviewer", "comment"):
        frame[column] = frame[column].astype("str")
    return frame


def _as_frame(annotations: AnnotationStore | pd.DataFrame) -> pd.DataFrame:
    return annotations.annotations() if isinstance(annotations, AnnotationStore) else annotations


# --------------------------------------------------------------------------------------------- analysis


def error_items(scored: Scored, *, outcomes: Sequence[str] = ERROR_OUTCOMES) -> pd.DataFrame:
    """The slot errors of a `Scored` as review items: run_id, dataset (from the run's meta), dialogue_id,
    turn_index, domain, slot, outcome, gold/pred display values and `item_key` (slot + run grain)."""
    slots = scored.slots
    datasets = {m.run_id: m.dataset for m in scored.metas}
    errors = slots[slots["outcome"].isin(list(outcomes))]
    keep = ["run_id", "dialogue_id", "turn_index", "domain", "slot", "outcome", "gold_display", "pred_display"]
    errors = errors[keep].reset_index(drop=True)
    errors.insert(1, "dataset", errors["run_id"].map(datasets).astype("str"))
    errors["item_key"] = item_keys(errors)
    return errors


def _coverage(errors: pd.DataFrame, annotations: pd.DataFrame) -> pd.DataFrame:
    """Pairs (error row position, annotation row) where the annotation covers the error item: same
    turn, slot equal or a turn-level annotation, run equal or a run-independent annotation."""
    if not len(errors) or not len(annotations):
        return pd.DataFrame({"row": pd.Series([], dtype="int64"), "ann": pd.Series([], dtype="int64")})
    variants = [item_keys(errors, with_slot=s, with_run=r).to_numpy() for s in (True, False) for r in (True, False)]
    rows = np.tile(np.arange(len(errors)), len(variants))
    wanted = pd.DataFrame({"row": rows, "item_key": np.concatenate(variants)})
    ann = pd.DataFrame({"ann": np.arange(len(annotations)), "item_key": annotations["item_key"].to_numpy()})
    return wanted.merge(ann, on="item_key")[["row", "ann"]].drop_duplicates()


def _with_review(errors: pd.DataFrame, annotations: pd.DataFrame, reviewer: str | None) -> pd.DataFrame:
    """Errors with n_annotations, reviewers and tags (union, taxonomy order of first use) attached."""
    if reviewer is not None:
        annotations = annotations[annotations["reviewer"] == _norm(reviewer)].reset_index(drop=True)
    pairs = _coverage(errors, annotations)
    pairs = pairs.assign(
        reviewer=annotations["reviewer"].to_numpy()[pairs["ann"].to_numpy()],
        tags=annotations["tags"].to_numpy()[pairs["ann"].to_numpy()],
    )
    grouped = pairs.groupby("row", sort=False)
    summary = pd.DataFrame(
        {
            "n_annotations": grouped.size(),
            "reviewers": grouped["reviewer"].agg(lambda r: tuple(sorted(set(r)))),
            "tags": grouped["tags"].agg(lambda ts: tuple(dict.fromkeys(t for tags in ts for t in tags))),
        }
    )
    out = errors.reset_index(drop=True)
    summary = summary.reindex(np.arange(len(out)))
    out["n_annotations"] = summary["n_annotations"].fillna(0).astype("int64").to_numpy()
    empty: tuple[str, ...] = ()
    out["reviewers"] = [r if isinstance(r, tuple) else empty for r in summary["reviewers"]]
    out["tags"] = [t if isinstance(t, tuple) else empty for t in summary["tags"]]
    out["reviewed"] = out["n_annotations"] > 0
    return out


def review_queue(
    scored_slots_errors: pd.DataFrame,
    store: AnnotationStore | pd.DataFrame,
    *,
    run_id: str | Sequence[str] | None = None,
    domain: str | Sequence[str] | None = None,
    slot: str | Sequence[str] | None = None,
    outcome: str | Sequence[str] | None = None,
    tag: str | None = None,
    reviewer: str | None = None,
    status: str = "unreviewed",
) -> pd.DataFrame:
    """Error items to review, in the order given, with their review state.

    `scored_slots_errors`: `error_items(scored)` (or any frame with ITEM_COLUMNS; `dataset`, `run_id`
    optional). An item counts as reviewed when an annotation covers it: same dataset, dialogue and turn;
    same slot or a turn-level annotation; same run or a run-independent annotation. With `reviewer`,
    only that reviewer's annotations count (a second reviewer's queue for agreement studies).
    `status`: `unreviewed` (default), `reviewed` or `all`; `tag` keeps items whose annotations hold the
    tag (so it implies reviewed items). Filters take one value or several.
    """
    statuses = ("unreviewed", "reviewed", "all")
    if status not in statuses:
        raise ValueError(f"status has to be one of {', '.join(statuses)}, got {status!r}")
    errors = scored_slots_errors
    for column, wanted in (("run_id", run_id), ("domain", domain), ("slot", slot), ("outcome", outcome)):
        if wanted is None:
            continue
        if column not in errors.columns:
            raise ValueError(f"cannot filter by {column}: the error items have no {column!r} column")
        values = [wanted] if isinstance(wanted, str) else list(wanted)
        errors = errors[errors[column].astype("str").isin(values)]
    annotations = _as_frame(store)
    queue = _with_review(errors, annotations, reviewer)
    if tag is not None:
        wanted_tag = _check_tags([tag], store.tags)[0] if isinstance(store, AnnotationStore) else _norm(tag)
        queue = queue[queue["tags"].map(lambda tags: wanted_tag in tags).astype(bool)]
    if status == "unreviewed":
        queue = queue[~queue["reviewed"]]
    elif status == "reviewed":
        queue = queue[queue["reviewed"]]
    return queue.reset_index(drop=True)


def review_progress(
    scored_slots_errors: pd.DataFrame,
    store: AnnotationStore | pd.DataFrame,
    *,
    by: str | Sequence[str] | None = None,
    reviewer: str | None = None,
) -> pd.DataFrame:
    """Errors reviewed so far: n_errors, n_reviewed, share_reviewed (NaN for no errors), and
    n_gold_errors (reviewed items tagged `gold annotation error`), overall or `by` columns."""
    queue = _with_review(scored_slots_errors, _as_frame(store), reviewer)
    queue = queue.assign(gold_error=queue["tags"].map(lambda tags: "gold annotation error" in tags).astype(bool))
    keys = [by] if isinstance(by, str) else list(by or [])
    if keys:
        grouped = queue.groupby(keys, observed=True, sort=True, dropna=False)
        result = grouped.agg(
            n_errors=("reviewed", "size"), n_reviewed=("reviewed", "sum"), n_gold_errors=("gold_error", "sum")
        ).reset_index()
    else:
        result = pd.DataFrame(
            {
                "n_errors": [len(queue)],
                "n_reviewed": [int(queue["reviewed"].sum())],
                "n_gold_errors": [int(queue["gold_error"].sum())],
            }
        )
    result["share_reviewed"] = result["n_reviewed"] / result["n_errors"].where(result["n_errors"] > 0)
    return result


def tag_counts(
    annotations: AnnotationStore | pd.DataFrame,
    *,
    by: str | Sequence[str] = ("domain", "slot"),
    reviewer: str | None = None,
) -> pd.DataFrame:
    """How often each tag was given, by `by` columns (turn-level annotations have empty domain/slot):
    columns by + tag + n (annotations) + n_items (distinct items), largest first.

    >>> store = AnnotationStore("sqlite://")
    >>> for n, who in enumerate(["ana", "bo"]):
    ...     _ = store.annotate(Item("d", "x", n, domain="hotel", slot="area"), ["wrong value"], reviewer=who)
    >>> tag_counts(store).to_dict("records")
    [{'domain': 'hotel', 'slot': 'area', 'tag': 'wrong value', 'n': 2, 'n_items': 2}]
    """
    frame = _as_frame(annotations)
    if reviewer is not None:
        frame = frame[frame["reviewer"] == _norm(reviewer)]
    keys = [by] if isinstance(by, str) else list(by)
    unknown = [k for k in keys if k not in frame.columns]
    if unknown:
        raise ValueError(f"cannot count tags by {unknown}; columns: {list(frame.columns)}")
    long = frame[[*keys, "item_key", "tags"]].explode("tags").dropna(subset=["tags"]).rename(columns={"tags": "tag"})
    long["tag"] = long["tag"].astype("str")
    counts = (
        long.groupby([*keys, "tag"], sort=True, dropna=False)
        .agg(n=("item_key", "size"), n_items=("item_key", "nunique"))
        .reset_index()
    )
    counts[["n", "n_items"]] = counts[["n", "n_items"]].astype("int64")
    return counts.sort_values(["n", *keys, "tag"], ascending=[False, *[True] * (len(keys) + 1)]).reset_index(drop=True)


@dataclass(frozen=True)
class Agreement:
    """Cohen's kappa between two reviewers and what it was computed over.

    `unit` is `item-tag` (one binary decision per shared item and tag) or `primary` (one category per
    shared item: the first tag the reviewer gave). `disagreements` lists the shared items whose tag
    sets (or primary tags) differ, with `tags_a`, `tags_b`, `only_a`, `only_b`.
    """

    kappa: float
    observed: float
    expected: float
    n_items: int
    n_decisions: int
    unit: str
    tags: tuple[str, ...]
    disagreements: pd.DataFrame


def cohens_kappa(
    annotations: AnnotationStore | pd.DataFrame,
    reviewer_a: str,
    reviewer_b: str,
    *,
    unit: str = "item-tag",
    tags: Sequence[str] | None = None,
) -> Agreement:
    """Cohen's kappa, ``(p_o - p_e) / (1 - p_e)``, between two reviewers over the items both annotated.

    `unit="item-tag"` (default, suits tag *sets*): every (shared item, tag) pair is one yes/no decision
    per reviewer, over `tags` (default: the tags either reviewer used on the shared items; tags nobody
    used would only add agreed "no"s). `p_o` is the share of decisions that agree and
    ``p_e = pa_yes * pb_yes + pa_no * pb_no`` from each reviewer's own yes rate.
    `unit="primary"`: one category per shared item, the reviewer's first tag; ``p_e = sum_c pa_c * pb_c``.
    No shared item, or ``p_e == 1`` (both reviewers constant and equal), gives NaN.

    >>> frame = pd.DataFrame({"item_key": ["i1", "i2", "i1", "i2"], "reviewer": ["a", "a", "b", "b"],
    ...                       "tags": [("wrong value",), ("other",), ("wrong value",), ("other",)]})
    >>> cohens_kappa(frame, "a", "b").kappa
    1.0
    """
    units = ("item-tag", "primary")
    if unit not in units:
        raise ValueError(f"unit has to be one of {', '.join(units)}, got {unit!r}")
    frame = _as_frame(annotations)
    a = frame[frame["reviewer"] == _norm(reviewer_a)].drop_duplicates("item_key").set_index("item_key")
    b = frame[frame["reviewer"] == _norm(reviewer_b)].drop_duplicates("item_key").set_index("item_key")
    shared = a.index.intersection(b.index, sort=False)
    extra = [c for c in ITEM_COLUMNS if c in a.columns]
    pairs = pd.DataFrame(
        {"tags_a": a.loc[shared, "tags"].map(tuple), "tags_b": b.loc[shared, "tags"].map(tuple)}, index=shared
    )
    if unit == "item-tag":
        used = (
            tags
            if tags is not None
            else list(dict.fromkeys(t for ts in (*pairs["tags_a"], *pairs["tags_b"]) for t in ts))
        )
        vocabulary = tuple(used)
        shape = (len(pairs), len(vocabulary))
        yes_a = np.array([[t in ts for t in vocabulary] for ts in pairs["tags_a"]], dtype=bool).reshape(shape)
        yes_b = np.array([[t in ts for t in vocabulary] for ts in pairs["tags_b"]], dtype=bool).reshape(shape)
        n = yes_a.size
        observed = float((yes_a == yes_b).mean()) if n else math.nan
        pa, pb = (float(yes_a.mean()), float(yes_b.mean())) if n else (math.nan, math.nan)
        expected = pa * pb + (1 - pa) * (1 - pb)
        differ = pairs["tags_a"].map(frozenset) != pairs["tags_b"].map(frozenset)
    else:
        first_a = pairs["tags_a"].map(lambda ts: ts[0] if ts else "")
        first_b = pairs["tags_b"].map(lambda ts: ts[0] if ts else "")
        vocabulary = tuple(dict.fromkeys([*first_a, *first_b]))
        n = len(pairs)
        observed = float((first_a == first_b).mean()) if n else math.nan
        share_a = first_a.value_counts(normalize=True)
        share_b = first_b.value_counts(normalize=True)
        expected = float((share_a * share_b.reindex(share_a.index, fill_value=0.0)).sum()) if n else math.nan
        differ = first_a != first_b
    kappa = (observed - expected) / (1 - expected) if n and expected < 1 else math.nan
    disagreements = pairs[differ.to_numpy(dtype=bool)].copy()
    disagreements["only_a"] = [
        tuple(t for t in x if t not in y) for x, y in zip(disagreements["tags_a"], disagreements["tags_b"], strict=True)
    ]
    disagreements["only_b"] = [
        tuple(t for t in y if t not in x) for x, y in zip(disagreements["tags_a"], disagreements["tags_b"], strict=True)
    ]
    disagreements = disagreements.join(a[extra]).rename_axis("item_key").reset_index()
    return Agreement(
        kappa=float(kappa),
        observed=observed,
        expected=expected,
        n_items=len(pairs),
        n_decisions=int(n),
        unit=unit,
        tags=vocabulary,
        disagreements=disagreements[["item_key", *extra, "tags_a", "tags_b", "only_a", "only_b"]],
    )
