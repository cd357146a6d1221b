"""Loading and caching for the dashboard: runs keyed by file path + modification time, scored per
convention, and any `analysis` view cached on those keys. No widget is read here.

An upload is different: it belongs to the session that made it. Its parsed run, scored tables and views
live in an `Upload` held by that session's `RunSource`, never in the process-wide caches, and its bytes
are not kept once parsed; so a rejected upload leaves nothing behind, and an accepted one is released
when its session ends (`release_ended_sessions`), not 20 minutes later or never."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import hashlib
import importlib
import logging
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import streamlit as st

from analysis.errors import InputError
from analysis.formats.mapping import Mapping
from analysis.formats.reading import limit as read_limit
from analysis.isolated import Unrecognised, load_entry_isolated
from analysis.isolated_jobs import (
    Elsewhere,
    NotLoaded,
    Refused,
    Unwritten,
    score_entries_isolated,
    score_entry_isolated,
    score_run_isolated,
)
from analysis.model import Run, RunInfo
from analysis.pace import Pace
from analysis.safety import upload_limit_bytes
from analysis.scoring import Scored
from analysis.store import entries as store_entries
from analysis.store import runs as store_runs
from analysis.store import views as store_views
from analysis.workspace import RunEntry, Workspace, read_manifest
from ui import errors

log = logging.getLogger("analysis.store")  # the store's warnings, one logger for the whole store

DECLARED = "declared"
# Views and scored tables kept per upload (least recently used dropped first).
UPLOAD_MEMO_ENTRIES = 64


class Upload:
    """An uploaded run, owned by one session: the parsed run and what was computed from it (scored
    tables, views), memoised here rather than in the process-wide caches. `release()` drops it all."""

    def __init__(self, run: Run, session_id: str | None) -> None:
        self.run: Run | None = run
        self.session_id = session_id
        self._memo: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.RLock()

    def memo(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """`compute()`, kept under `key` until released (or crowded out by UPLOAD_MEMO_ENTRIES newer)."""
        with self._lock:
            if key in self._memo:
                self._memo.move_to_end(key)
                return self._memo[key]
            value = compute()
            self._memo[key] = value
            _mark(value, self.session_id)
            while len(self._memo) > UPLOAD_MEMO_ENTRIES:
                self._memo.popitem(last=False)
            return value

    def release(self) -> None:
        with self._lock:
            self.run = None
            self._memo.clear()


@dataclass(frozen=True)
class RunSource:
    """A run's manifest entry (what it is and where its files are, whole) and `*_stamp` (mtime+size or
    content hash) of those files: together they key every cache. An upload's paths are its file names."""

    entry: RunEntry
    pred_stamp: str
    gold_stamp: str | None
    uploaded: bool = False
    # The upload's data (uploads only); not part of the key: two sessions uploading one file share a key.
    upload: Upload | None = field(default=None, compare=False, repr=False)

    @property
    def key(self) -> str:
        return repr(self)

    @property
    def run_id(self) -> str:
        return self.entry.name

    @property
    def meta(self) -> RunInfo:
        return self.entry.meta

    @property
    def pred(self) -> str:
        return str(self.entry.pred)


def file_stamp(path: str | Path | None) -> str | None:
    if path is None:
        return None
    try:
        stat = os.stat(path)
    except OSError:
        return "missing"
    return f"{stat.st_mtime_ns}:{stat.st_size}"


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def source_from_entry(entry: RunEntry) -> RunSource:
    return RunSource(entry, pred_stamp=file_stamp(entry.pred) or "", gold_stamp=file_stamp(entry.gold))


@st.cache_resource(show_spinner=False, max_entries=16)
def _manifest(path: str, stamp: str | None) -> Workspace | str:
    try:
        return read_manifest(path)
    except InputError as exc:
        return str(exc)


def manifest_path(given: str | Path) -> str:
    """A manifest path as every cache keys it: absolute, relative ones taken from the working directory
    (`app.py --workspace` and `scripts/serve.py --workspace` must key the same workspace alike)."""
    path = Path(given)
    return str(path if path.is_absolute() else (Path.cwd() / path).resolve())


def open_manifest(path: str) -> Workspace | str:
    """The parsed manifest (cached on path + mtime), or its one-line error."""
    return _manifest(path, file_stamp(path))


def forget_manifest() -> None:
    """Drop the cached manifests after the dashboard wrote one (`analysis.manifest_write`): its new
    modification time would miss the cache anyway, unless the write fell within the file system's
    timestamp granularity with the same size; the next `open_manifest` reads the file again."""
    _manifest.clear()


def _load_entry(source: RunSource) -> Run | str:
    """A workspace run the server has not read yet, parsed in a worker process within its CPU and memory
    limits (`analysis.isolated`): a slow or huge file holds this session's thread waiting, never the
    interpreter every other session and the health check share. Its one-line error otherwise."""
    loaded = load_entry_isolated(source.entry, None, None)
    return loaded.error if isinstance(loaded, Unrecognised) else loaded


@st.cache_resource(show_spinner=False, max_entries=128)
def _load(key: str, _source: RunSource) -> Run | str:
    return _load_entry(_source)


def load(source: RunSource) -> Run | str:
    """The loaded run or its one-line error (both cached, so a failing file is read once; an upload's
    run is its session's)."""
    if source.uploaded:
        run = source.upload.run if source.upload is not None else None
        return run if run is not None else f"{source.pred}: this upload was released; upload it again"
    return _load(source.key, source)


def load_workspace(
    workspace: Workspace,
    before: Callable[[int, RunSource], None] | None = None,
    scoring: Callable[[int, int], None] | None = None,
    *,
    read: list[str] | None = None,
) -> tuple[dict[str, RunSource], dict[str, str]]:
    """Every run of the manifest loaded (cached): the sources of those that loaded, in manifest order,
    and the one-line error of each that failed. `before(i, source)` is called before each run is looked
    at. Runs the store does not hold yet, when there are several, are scored into it by worker children
    two at a time (`_score_new`), `scoring(done, total)` called as each is answered; a single one is read
    by `_first_read`, whose worker hands its tables over to the page that shows it. `read` (when given)
    gets the names of the runs read now (neither found in the store nor failed before)."""
    failed: dict[str, str] = {}
    store = store_entries.store_root()
    root = str(store)
    looked: list[tuple[RunEntry, RunSource]] = []
    new: list[tuple[RunEntry, RunSource]] = []
    for i, entry in enumerate(workspace.entries):
        source = source_from_entry(entry)
        if before is not None:
            before(i, source)
        looked.append((entry, source))
        if (source.key, root) in _LOADED or _stored(entry):  # scored before from these very files: it loads;
            _loaded((source.key, root))  # parsed only when a page needs it
        elif (source.key, root) in _NOT_READ:  # failed before, these very files: read once
            failed[entry.name] = _NOT_READ[(source.key, root)]
        else:
            new.append((entry, source))
    if read is not None:
        read.extend(entry.name for entry, _ in new)
    failed.update(_score_new(new, store, scoring) if store is not None and len(new) > 1 else _read_each(new))
    return {entry.name: source for entry, source in looked if entry.name not in failed}, failed


def _read_each(new: list[tuple[RunEntry, RunSource]]) -> dict[str, str]:
    """Each run read by `_first_read` (its worker hands the tables over): the one line of each that failed."""
    found = {entry.name: _first_read(source.key, source) for entry, source in new}
    return {name: line for name, line in found.items() if isinstance(line, str)}


# Runs of a workspace being scored into the store by `_score_new`, by store key: a rerun (another session,
# or this one after a click) that finds one waits for it instead of scoring it a second time.
_SCORING: dict[str, threading.Event] = {}
_SCORING_LOCK = threading.Lock()
# The one line of each run whose files did not load: by store key and store place (`_score_new`, for the
# entries that waited on one), and by cache key and store place (`load_workspace`: read once, these very
# files). The place too: what one store (one `DST_CACHE_DIR`) could not score is not another's to skip.
_FAILED_KEYS: dict[tuple[str, str], str] = {}
_NOT_READ: dict[tuple[str, str], str] = {}
# Store keys (and places) of runs `_score_new` found refused by their convention (the page that scores one
# says why).
_REFUSED_KEYS: dict[tuple[str, str], str] = {}


def _remember_line(memory: dict[Any, str], key: Any, line: str) -> None:
    memory[key] = line
    if len(memory) > LOADED_KEPT:
        memory.pop(next(iter(memory)))


def _score_new(
    new: list[tuple[RunEntry, RunSource]],
    store: Path,
    scoring: Callable[[int, int], None] | None,
    convention: str | None = None,
) -> dict[str, str]:
    """The workspace runs the store does not hold, read, scored and saved there by worker children
    (`score_entries_isolated`: many runs per child, as many children at a time as `ensure_all` runs
    workers), not one child per run handing its tables back: a new 1,000-run workspace opens in about the
    time the batch scorer takes. A run that a rerun is scoring already (or an entry of the same files and
    convention) is waited for, not scored twice. Returns the one-line error of each run that did not load
    (a refused convention is said where the run is scored, as `_first_read` leaves it); the others are
    then taken as loaded (`_LOADED`). `convention`: scored under this one instead of each run's declared
    one (`store_many`), and neither taken as loaded nor remembered as not read (that is the declared one's)."""
    root = str(store)
    declared = convention is None
    jobs: list[tuple[RunEntry, str | None, str]] = []
    waits: list[tuple[RunSource, str, threading.Event]] = []
    unkeyed: list[tuple[RunEntry, RunSource]] = []
    for entry, source in new:
        chosen = entry.meta.convention if declared else convention
        try:
            key = store_runs.key(entry, chosen, store)
        except OSError:  # a special file or an unreadable one: its own reader says what is wrong
            unkeyed.append((entry, source))
            continue
        with _SCORING_LOCK:
            event = _SCORING.get(key)
            if event is None:
                event = threading.Event()
                # Scored (or failed) by another rerun since this one looked: settled, not scored again.
                settled = (key, root) in _FAILED_KEYS or (key, root) in _REFUSED_KEYS
                if settled or store_entries.lookup(store, key, deep=False) is not None:
                    event.set()
                else:
                    _SCORING[key] = event
                    jobs.append((entry, chosen, key))
        waits.append((source, key, event))

    answered: set[int] = set()

    # Elsewhere: stored, by another process; Unwritten: scored but not stored, scored again where a page needs it
    def done(i: int, answer: NotLoaded | Refused | Elsewhere | Unwritten | None) -> None:
        key = jobs[i][2]
        if isinstance(answer, NotLoaded):
            _remember_line(_FAILED_KEYS, (key, root), answer.line)
        elif isinstance(answer, Refused):  # the convention refuses the run: not scored again for another view
            _remember_line(_REFUSED_KEYS, (key, root), "")
        answered.add(i)
        with _SCORING_LOCK:
            _SCORING.pop(key).set()

    try:
        workers = store_runs.default_workers()
        why = "cannot score"
    except ValueError as exc:  # DST_SCORE_WORKERS set to something else than a positive integer: said per run
        workers, why = 0, f"not scored: {exc}"

    def score() -> None:
        try:
            if workers:
                score_entries_isolated(jobs, store, workers=workers, done=done)
        finally:  # never a run left waited for: one that was not answered says so
            for i in sorted(set(range(len(jobs))) - answered):
                done(i, NotLoaded(f"{Path(str(jobs[i][0].pred)).name}: {why}"))

    if jobs:  # scored by a thread of its own: a rerun that stops this one leaves it going, and waits for it
        threading.Thread(target=score, daemon=True, name="score-workspace").start()
    failed = _read_each(unkeyed) if declared else {}  # another convention: the view that needs one says why
    pending = waits
    while pending:
        pending[0][2].wait(0.25)
        pending = [wait for wait in pending if not wait[2].is_set()]
        if scoring is not None:
            scoring(len(waits) - len(pending), len(waits))
    _settled(waits, failed, root, declared)
    return failed


def _settled(
    waits: list[tuple[RunSource, str, threading.Event]], failed: dict[str, str], root: str, declared: bool
) -> None:
    """After `_score_new`'s runs are answered: the one line of each that failed into `failed`; under the
    declared convention, each remembered as not read, or taken as loaded (stored, or refused by its
    convention, which is said where a page scores it)."""
    for source, key, _ in waits:
        line = _FAILED_KEYS.get((key, root))
        if line is not None:
            failed[source.run_id] = line
            if declared:
                _remember_line(_NOT_READ, (source.key, root), line)
        elif declared:
            _loaded((source.key, root))


# This many runs or more, not stored under a convention chosen in the sidebar, are scored into the store in
# batches before a view of them is computed (`store_many`); a single one is scored when the view needs it.
STORE_MANY_FROM = 2


def store_many(args: Sequence[Any], choice: str) -> None:
    """The workspace runs of a view over many runs (the list arguments of `compute`) that the store does not
    hold under the convention `choice` (the sidebar's, when it is not each run's declared one): scored into
    the store by `_score_new` (batches of runs per worker child, as a new workspace is scored) before the view
    is computed, so that the store answers it. Otherwise each run would be read and scored by a child of its
    own and held in memory whole: at 1,000 runs, minutes and gigabytes for one click on the convention."""
    store = store_entries.store_root()
    if choice == DECLARED or store is None:
        return
    pairs = [a for arg in args if isinstance(arg, list) for a in arg if _is_source(a) and not a[0].uploaded]
    if len(pairs) < STORE_MANY_FROM:
        return
    memo = (choice, str(store), tuple(sorted({source.key for source, _ in pairs})))
    if memo in _STORED_MANY:  # found whole before (a page's views share their runs: looked up once)
        return
    missing = {
        source.key: (source.entry, source)
        for source, pair_choice in pairs
        if effective_convention(source, pair_choice) == choice and _found((source, pair_choice), ("runs",)) is None
    }
    if len(missing) >= STORE_MANY_FROM:
        with _progress_on_page(
            f"Scoring {len(missing):,} runs under the {choice} convention into the score store"
        ) as said:
            _score_new(list(missing.values()), store, said, convention=choice)
    with _QUERIES_LOCK:  # settled: each run stored, or refused by the convention, or its one line remembered
        if len(_STORED_MANY) >= QUERIES_KEPT:
            _STORED_MANY.clear()
        _STORED_MANY.add(memo)


@contextlib.contextmanager
def _progress_on_page(what: str) -> Iterator[Callable[[int, int], None] | None]:
    """`scoring(done, total)` writing "`what`: k done in s s, about t s left…" (`analysis.pace`) on the page
    where the view will show, the line gone when the block ends; None outside a page's run (the prefetch's
    threads)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    if get_script_run_ctx(suppress_warning=True) is None:
        yield None
        return
    line = st.empty()
    pace = Pace()

    def said(done: int, total: int) -> None:
        line.caption(f"{what}: {pace(done, total)}…")

    try:
        yield said
    finally:
        line.empty()


# The run sets `store_many` found stored whole under a convention (forgotten with the store queries, after a heal).
_STORED_MANY: set[tuple[str, str, tuple[str, ...]]] = set()


# The runs found in the store, by their cache key (entry and files' stamps) and the store's place: the next
# rerun of any session takes them as loaded without looking them up again (1,000 lookups: about 0.07 s of every
# page's run). A run whose store entry has gone since is scored again when a page needs it (`scored`).
_LOADED: set[tuple[str, str]] = set()
LOADED_KEPT = 20_000


def _loaded(key: tuple[str, str]) -> None:
    if len(_LOADED) >= LOADED_KEPT:
        _LOADED.clear()
    _LOADED.add(key)


@st.cache_resource(show_spinner=False, max_entries=128)
def _first_read(key: str, _source: RunSource) -> str | None:
    """A workspace run the store does not hold, read and scored under its declared convention in a worker
    process (`_score_in_worker`, which hands the tables to `scored`): its one-line error when its files do
    not load or the worker went past its limits, else None (a convention that refuses the run is said
    where the run is scored)."""
    found = _score_in_worker(_source, _source.meta.convention)
    if isinstance(found, NotLoaded):
        return found.line
    if isinstance(found, Scored):
        _hand_over(_source, _source.meta.convention, found)
    return None


# Tables a worker scored while the workspace was read, until `scored` takes them (a few: a page scores
# the runs it shows at once; any other is read back from the store, where the worker saved it).
# Keyed by the store's place too: the worker saved them there, and a process whose store moves (a test's own
# cache folder, `DST_CACHE_DIR` changed) must score and store the run again in the new one.
_HANDED: OrderedDict[tuple[str, str | None, str], Scored] = OrderedDict()
_HANDED_MAX = 8
_HANDED_LOCK = threading.Lock()


def _hand_over(source: RunSource, convention: str | None, scored: Scored) -> None:
    with _HANDED_LOCK:
        _HANDED[(source.key, convention, str(store_entries.store_root()))] = scored
        while len(_HANDED) > _HANDED_MAX:
            _HANDED.popitem(last=False)


def _score_in_worker(source: RunSource, convention: str | None) -> Scored | NotLoaded | Refused:
    """The run of a manifest entry the server has not scored: from the store when it holds it, else read
    and scored in a worker process within its CPU and memory limits (`analysis.isolated_jobs`), which then
    saves it in the store: a slow or pathological file holds this session's thread waiting, never the
    interpreter every other session and the health check share."""
    root = store_entries.store_root()
    try:
        key = store_runs.key(source.entry, convention, root) if root is not None else None
    except OSError:  # a special file or an unreadable one: not stored; the worker's reader says what is wrong
        root = key = None
    if root is not None and key is not None:
        stored = store_entries.load(root, key)
        if stored is not None:
            return stored
    return score_entry_isolated(source.entry, convention, root, key)


def _stored(entry: RunEntry) -> bool:
    """Whether the score store holds the entry under its declared convention (so its files loaded once)."""
    try:
        return store_runs.stored(entry, entry.meta.convention) is not None
    except OSError:  # an unreadable file or store: load it the usual way, which says what is wrong
        return False


def effective_convention(source: RunSource, choice: str) -> str | None:
    return source.meta.convention if choice == DECLARED else choice


def _score_now(source: RunSource, convention: str | None) -> Scored:
    if source.uploaded:  # its run is the session's: shipped to a worker process, scored there
        loaded = load(source)
        if isinstance(loaded, str):
            raise InputError(source.pred, None, loaded)
        return score_run_isolated(loaded, convention, source.pred)
    # A manifest run is read from the score store when it holds it (no parsing, no scoring), else read and
    # scored by a worker process, which stores it for the next start (`analysis.store`).
    with _HANDED_LOCK:
        handed = _HANDED.pop((source.key, convention, str(store_entries.store_root())), None)
    found = handed if handed is not None else _score_in_worker(source, convention)
    if isinstance(found, NotLoaded):
        raise InputError(source.pred, None, found.line)
    if isinstance(found, Refused):
        found.raise_()
    assert isinstance(found, Scored)
    return found


@st.cache_resource(show_spinner=False, max_entries=256)
def _score(key: str, convention: str | None, _source: RunSource) -> Scored:
    return _score_now(_source, convention)


def scored(source: RunSource, choice: str) -> Scored:
    convention = effective_convention(source, choice)
    if source.uploaded and source.upload is not None:
        return source.upload.memo(("scored", convention), lambda: _score_now(source, convention))
    return _score(source.key, convention, source)


def function_named(name: str) -> Callable[..., Any]:
    """The function `module.qualname` names (cache keys carry names, not function objects)."""
    module, _, attr = name.rpartition(".")
    return getattr(importlib.import_module(module), attr)


class Memo(Protocol):
    """Where a view of some data is kept instead of the process-wide cache (`Upload.memo`)."""

    def memo(self, key: Hashable, compute: Callable[[], Any]) -> Any: ...


class Marker:
    """An argument of `compute` that stands for data `compute` fetches itself, as a (run source, convention
    choice) pair stands for the scored run: `value()` is the data, `key` what keys the views of it (file
    stamps, a content hash, a store's change marker; never the data), `owner()` the `Memo` its views are
    kept in when not in the process-wide cache (an upload's, a session's), else None."""

    @property
    def key(self) -> Hashable:
        raise NotImplementedError

    def value(self) -> Any:
        raise NotImplementedError

    def owner(self) -> Memo | None:
        return None


@dataclass(frozen=True, eq=False)
class Loaded(Marker):
    """The run of `source` as loaded from its files, not scored (`load`: the `Run`, or its one-line error);
    keyed like the scored run, by the source's files."""

    source: RunSource

    @property
    def key(self) -> Hashable:
        return ("loaded", self.source.key)

    def value(self) -> Run | str:
        return load(self.source)

    def owner(self) -> Memo | None:
        return self.source.upload


def _view_now(name: str, params: tuple, args: tuple) -> Any:
    def materialise(arg: Any) -> Any:
        if isinstance(arg, tuple) and arg and isinstance(arg[0], RunSource):
            return scored(arg[0], arg[1])
        if isinstance(arg, Marker):
            return arg.value()
        if isinstance(arg, list):
            return [materialise(a) for a in arg]
        return arg

    return function_named(name)(*[materialise(a) for a in args], **dict(params))


@st.cache_data(show_spinner=False, max_entries=1024)
def _view(name: str, keys: tuple, params: tuple, _args: tuple) -> Any:
    return _view_now(name, params, _args)


# Views whose result is an object that memoises its own parts when asked (a `Reconciliation` explains a
# pair of conventions once and keeps it): kept whole, not copied on every call as `_view`'s results are.
KEPT_VIEWS = frozenset({"ui.reconcile.reconciled"})


@st.cache_resource(show_spinner=False, max_entries=16)
def _kept_view(name: str, keys: tuple, params: tuple, _args: tuple) -> Any:
    return _view_now(name, params, _args)


def _name(fn: Callable[..., Any]) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


def _key_of(arg: Any) -> Any:
    if isinstance(arg, tuple) and arg and isinstance(arg[0], RunSource):
        return (arg[0].key, effective_convention(arg[0], arg[1]))
    if isinstance(arg, Marker):
        return arg.key
    if isinstance(arg, list):
        return tuple(_key_of(a) for a in arg)
    return arg


def _keys(args: Sequence[Any]) -> tuple:
    return tuple(_key_of(a) for a in args)


def compute(fn: Callable[..., Any], args: Sequence[Any], params: dict[str, Any], choice: str) -> Any:
    """`fn(*args, **params)` with run sources in `args` replaced by their scored tables and markers by their
    data (`Marker`); cached on their keys, in the memo of their upload or session when one has one."""
    keys = _keys(args)
    frozen = tuple(sorted(params.items()))
    name = _name(fn)
    memo = next(iter(_memos_in(args)), None)
    if memo is not None:  # kept by the session's upload (or the session), not in the process-wide cache
        return memo.memo(("view", name, keys, frozen), lambda: _view_now(name, frozen, tuple(args)))
    if name in KEPT_VIEWS:
        return _kept_view(name, keys, frozen, tuple(args))
    store_many(args, choice)  # a convention switched at many runs: scored into the store in batches first
    stored = stored_view(fn, args, params)  # DuckDB over the score store when it holds every run read
    if stored is not None:
        return stored
    return _view(name, keys, frozen, tuple(args))


def _memos_in(args: Sequence[Any]) -> list[Memo]:
    found: list[Memo] = []
    for arg in args:
        if isinstance(arg, tuple) and arg and isinstance(arg[0], RunSource):
            if arg[0].upload is not None:
                found.append(arg[0].upload)
        elif isinstance(arg, Marker):
            owner = arg.owner()
            if owner is not None:
                found.append(owner)
        elif isinstance(arg, list):
            found += _memos_in(arg)
    return found


def upload_source(
    name: str,
    pred_name: str,
    pred_data: bytes,
    gold_name: str | None,
    gold_data: bytes | None,
    fmt: str | None,
    info: dict[str, Any] | None = None,
    mapping: Mapping | None = None,
) -> RunSource | str | Unrecognised:
    """The uploaded run, parsed now and held by the calling session only (`Upload`), or its one-line
    error, or `Unrecognised` (no format recognises the prediction file: what `sniff` sees in it). The bytes
    are not kept: a rejected upload leaves nothing behind. `info`: `RunInfo` fields the upload form set
    (system, dataset, language, history, seed, convention); `mapping`: the prediction file's declared
    mapping, read instead of a format."""
    entry = RunEntry(
        RunInfo(**{"run_id": name, "system": name, **(info or {})}),
        Path(pred_name),
        Path(gold_name) if gold_name else None,
        format=fmt,
        mapping=mapping,
    )
    source = RunSource(
        entry,
        pred_stamp=content_hash(pred_data),
        gold_stamp=content_hash(gold_data) if gold_data is not None else None,
        uploaded=True,
    )
    run = load_entry_isolated(source.entry, pred_data, gold_data)  # the parse's garbage stays in the worker
    if isinstance(run, str | Unrecognised):
        del pred_data, gold_data
        trim_memory()
        return run
    upload = Upload(run, _session_id())
    _remember(upload)
    return replace(source, upload=upload)


# Every live upload by session, so those of sessions that ended are released even while something (a
# reference cycle in Streamlit's session objects, a prefetch thread) still holds their `RunSource`.
_LIVE: dict[str | None, list[weakref.ref[Upload]]] = {}
_LIVE_LOCK = threading.Lock()
SWEEP_SECONDS = 30.0
# What else keeps an upload's data process-wide (the figure cache, `ui.place`): cleared when a session
# that held uploads ends.
_ON_RELEASE: list[Callable[[], None]] = []


def on_release(clear: Callable[[], None]) -> None:
    """Call `clear()` whenever sessions that held uploads have ended (from the sweep's thread)."""
    _ON_RELEASE.append(clear)


# What an upload's memo computed (a frame, and the frames in a returned tuple, list or dict), by id, with
# its upload's session: `owner_of` finds it among a figure's arguments, also in a thread without a
# session (the prefetch). An entry goes with its object.
_MARKED: dict[int, tuple[weakref.ref[Any], str]] = {}


def _mark(value: Any, session_id: str | None) -> None:
    items = value.values() if isinstance(value, dict) else value if isinstance(value, tuple | list) else ()
    for obj in (value, *items):
        with contextlib.suppress(TypeError):  # not weakly referenceable (a tuple, a number): nothing to find
            _MARKED[id(obj)] = (weakref.ref(obj, functools.partial(_unmark, id(obj))), str(session_id))


def _unmark(key: int, _: object) -> None:
    _MARKED.pop(key, None)


def owner_of(values: Sequence[Any]) -> str:
    """The session of the upload whose memo computed one of `values` (see `_mark`), else ""."""
    for value in values:
        found = _MARKED.get(id(value))
        if found is not None and found[0]() is value:
            return found[1]
    return ""


def private_owner() -> str:
    """The calling session's id when it holds a live upload, else "": a process-wide cache keyed on data
    (the figure cache) adds it to its key, so what this session makes is never served to another
    session, and `on_release` callbacks drop it when the session ends."""
    sid = _session_id()
    with _LIVE_LOCK:
        refs = _LIVE.get(sid, [])
        return str(sid) if any(ref() is not None for ref in refs) else ""


def _session_id() -> str | None:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    return ctx.session_id if ctx is not None else None


def _remember(upload: Upload) -> None:
    with _LIVE_LOCK:
        first = not any(_LIVE.values())
        _LIVE.setdefault(upload.session_id, []).append(weakref.ref(upload))
    if first:
        _sweep_later(start=False)


def _sweep_later(*, start: bool = True) -> None:
    """Release ended sessions' uploads now (unless `start` is False) and every SWEEP_SECONDS while any is
    live: a server nobody visits still gives the memory back."""
    if start:
        release_ended_sessions()
    with _LIVE_LOCK:
        pending = any(_LIVE.values())
    if pending:
        timer = threading.Timer(SWEEP_SECONDS, _sweep_later)
        timer.daemon = True
        timer.start()


def _ended_sessions() -> list[str]:
    try:
        from streamlit.runtime import Runtime

        if not Runtime.exists():
            return []
        manager = Runtime.instance()._session_mgr  # no public listing of ended sessions
        return [sid for sid in list(_LIVE) if sid is not None and manager.get_session_info(sid) is None]
    except Exception:  # a Streamlit without these internals: uploads then go with their session state
        return []


def release_ended_sessions() -> int:
    """Release the uploads of sessions the server no longer has (closed, or disconnected past Streamlit's
    reconnection window), forget those already freed with their session state, and give the memory back
    to the system when any went; returns how many went. Without a running server (AppTest, scripts) no
    session ends here: their uploads go with their session state."""
    if not _LIVE:
        return 0
    gc.collect()  # a session's objects hold cycles: free an ended one's now, not at some later full collection
    ended = _ended_sessions()
    gone = 0
    with _LIVE_LOCK:
        for ended_id in ended:
            for ref in _LIVE.pop(ended_id, []):
                upload = ref()
                if upload is not None:
                    upload.release()
                gone += 1
        for sid in list(_LIVE):
            kept = [ref for ref in _LIVE[sid] if ref() is not None]
            gone += len(_LIVE[sid]) - len(kept)
            if kept:
                _LIVE[sid] = kept
            else:
                del _LIVE[sid]
    if gone:
        for clear in _ON_RELEASE:  # what the released uploads' sessions made, in process-wide caches
            clear()
        trim_memory()
        errors.log.info("%d upload(s) of ended sessions released (%d released explicitly)", gone, len(ended))
    return gone


def trim_memory() -> None:
    """Hand freed heap memory back to the system (glibc's `malloc_trim`). Without it the process keeps
    what the uploads' tables took: glibc keeps freed memory in its per-thread arenas (Streamlit runs each
    session's script in a thread of its own), so the server's RSS stays up long after the runs went
    (measured: +110 MB after 20 uploads of 8 MB, +0 with it)."""
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to trim, or nothing we can ask
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def upload_limit_mb(workspace: Workspace | None) -> float:
    """The upload limit in MB (`analysis.safety`: DST_MAX_UPLOAD_MB, the manifest's [dashboard]
    max_upload_mb, else 200), and never more than the readers read (`DST_MAX_FILE_BYTES`, 64 MiB): a larger
    upload would only be refused after the server had received it whole (a 190 MiB one held +182 MB)."""
    allowed = upload_limit_bytes(workspace.settings if workspace is not None else None)
    with contextlib.suppress(InputError):  # a mistyped variable: the reader says so when the file is read
        allowed = min(allowed, read_limit("file_bytes"))
    return allowed / 1024 / 1024


def _found(pair: Any, tables: tuple[str, ...]) -> Any | None:
    """The score store's entry of a (run source, convention choice) pair with `tables` whole, or None (an
    upload, a run not stored, a store that cannot be read)."""
    source, choice = pair
    if source.uploaded:
        return None
    try:
        return store_runs.stored(source.entry, effective_convention(source, choice), tables=tables)
    except OSError:
        return None


def _is_source(arg: Any) -> bool:
    return isinstance(arg, tuple) and bool(arg) and isinstance(arg[0], RunSource)


# Store queries over many runs, remembered by their runs' cache keys (files' stamps, convention choice) and
# parameters: finding 1,000 runs' entries (each key from the files' digests, each table's size checked) costs
# 0.07-0.2 s a call, and a page at 1,000 runs makes several, the prefetch more. Only queries the store
# answers are kept; an entry that has gone since fails its query, which heals the store (`_healed`, which
# forgets them all), and the view is computed.
_QUERIES: OrderedDict[tuple, store_views.Query] = OrderedDict()
_QUERIES_LOCK = threading.Lock()
QUERIES_KEPT = 64
QUERY_MEMO_RUNS = 50  # calls over more runs than this are remembered; fewer cost little to find again


def _query_key(fn: Callable[..., Any], args: Sequence[Any], params: dict[str, Any]) -> tuple | None:
    """The memo key of a call over a list of more than `QUERY_MEMO_RUNS` workspace runs, else None."""
    if len(args) != 1 or not isinstance(args[0], list) or len(args[0]) <= QUERY_MEMO_RUNS:
        return None
    pairs = args[0]
    if not all(_is_source(a) and not a[0].uploaded for a in pairs):
        return None
    try:
        frozen = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in params.items()))
        hash(frozen)
    except TypeError:
        return None
    # A digest of the runs' keys, not the keys: 1,000 of them are about 0.4 MB, and up to QUERIES_KEPT are kept.
    runs = hashlib.sha256("\0".join(f"{source.key}\0{choice}" for source, choice in pairs).encode()).hexdigest()
    return (_name(fn), frozen, len(pairs), runs)


def stored_query(fn: Callable[..., Any], args: Sequence[Any], params: dict[str, Any]) -> store_views.Query | None:
    """`fn(*args, **params)` as a query over the score store (`analysis.store.views`: only headers read),
    or None when the store does not answer it. A query over many runs is remembered (`_QUERIES`)."""
    memo = _query_key(fn, args, params)
    if memo is not None:
        with _QUERIES_LOCK:
            known = _QUERIES.get(memo)
            if known is not None:
                _QUERIES.move_to_end(memo)
                return known
    found = store_views.query(fn, args, params, find=_found, is_run=_is_source)
    if found is not None and memo is not None:
        with _QUERIES_LOCK:
            _QUERIES[memo] = found
            while len(_QUERIES) > QUERIES_KEPT:
                _QUERIES.popitem(last=False)
    return found


def forget_queries() -> None:
    """Forget the remembered store queries (`stored_query`): after a store entry was removed."""
    with _QUERIES_LOCK:
        _QUERIES.clear()
        _STORED_MANY.clear()


@st.cache_data(show_spinner=False, max_entries=1024)
def _stored_views(name: str, keys: tuple[str, ...], params: tuple, _query: store_views.Query) -> Any:
    return _query.answer(base=_stored_answer)


def _stored_answer(query: store_views.Query) -> Any:
    """The query's answer, cached on its stored answer's name, its entries' store keys and parameters."""
    return _stored_views(query.name, query.keys, query.params, query)


def stored_view(fn: Callable[..., Any], args: Sequence[Any], params: dict[str, Any]) -> Any | None:
    """`fn(*args, **params)` from the score store when it answers it (`analysis.store.views.REGISTRY`: DuckDB
    over the stored runs, no run parsed or scored), cached; else None and the caller computes it from the
    scored runs. A store that cannot be queried (a file damaged after its check) is None too, logged."""
    query = stored_query(fn, args, params)
    if query is None:
        return None
    try:
        return _stored_answer(query)
    except InputError as exc:  # a damaged entry: removed (one warning line), the view computed and rescored
        _healed(args, store_views.heal(query, exc))
        return None


def _healed(args: Sequence[Any], removed: set[str]) -> None:
    """The runs of a view's arguments whose store entries `store_views.heal` removed: their scored tables,
    read from those entries, are dropped from this process's cache and the runs scored again now (their
    workers store them whole). Not left to the view computed next: that view may be in the cache already
    (computed while another run was not yet stored), and the run would then stay out of the store, every
    later view of it computed from memory, until the server restarts."""
    forget_queries()
    if not removed:
        return
    pairs = [a for arg in args for a in (arg if isinstance(arg, list) else [arg]) if _is_source(a)]
    for source, choice in pairs:
        if source.uploaded:
            continue
        convention = effective_convention(source, choice)
        try:
            if store_runs.key(source.entry, convention) not in removed:
                continue
        except OSError:
            continue
        _score.clear(source.key, convention, source)
        try:
            scored(source, choice)
        except ValueError as exc:  # InputError too: the page that needs the run's tables shows it
            log.warning("score store: run %s not stored again (%s)", source.meta.run_id, " ".join(str(exc).split()))


def stores(fn: Callable[..., Any], args: Sequence[Any], params: dict[str, Any] | None = None) -> bool:
    """Whether the score store answers `fn(*args, **params)` (headers checked, nothing queried): the
    prefetch then warms nothing in memory for it."""
    return stored_query(fn, args, params or {}) is not None


def stored_leaderboard(pairs: Sequence[tuple[RunSource, str]], sort: str | None) -> tuple[Any, str] | None:
    """`views.leaderboard` of the runs and its scope caption as DuckDB queries over the score store, when
    it holds every run (no upload, no SGD evaluator run): no run's turns are read. None otherwise: the
    caller computes them from the scored runs."""
    from analysis.views import board_caption, leaderboard

    if pairs:  # a convention chosen in the sidebar: the runs not stored under it scored into the store first
        store_many([list(pairs)], pairs[0][1])
    query = stored_query(leaderboard, [list(pairs)], {"sort": sort})
    if query is None:
        return None
    try:
        board = _stored_answer(query)
    except InputError as exc:  # a damaged entry: removed (one warning line), the board computed and rescored
        _healed([list(pairs)], store_views.heal(query, exc))
        return None
    return board, board_caption(board, [e.convention for e in query.entries])
