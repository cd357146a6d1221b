"""Scored runs on disk: one entry per (prediction file, gold file, run options, convention, scorer version).

An entry is a row in each of the store's Parquet datasets, Hive-partitioned by convention and run:
`<root>/<table>/convention=<name>/run=<key>/part.parquet` for the tables in `TABLES`, and its header
`<root>/entries/<key>.json` (written last: an entry without header does not exist) with the run's
metadata, alignment report and ontology, and each file's row count, size and SHA-256. A read checks
them all; a corrupt or truncated entry is removed with one warning line and scored again. A disk that
cannot be written (read-only, full) only costs speed: one warning line, and the run stays in memory.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import logging
import os
import queue
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, fields, replace
from functools import cache
from pathlib import Path
from typing import Any, BinaryIO

import pandas as pd
import pyarrow as pa

from analysis.conventions import get_convention, resolve_convention
from analysis.model import RunInfo, RunMeta
from analysis.scoring import Scored
from analysis.settings import cache_root
from analysis.store import checks

log = logging.getLogger("analysis.store")

SCHEMA_VERSION = 3  # bumped when the layout or a table's columns change
TABLES = (
    "turns",
    "slots",
    "runs",
    "dialogues",
    "domains",
    "domain_parts",
    "depth",
    "depth_metrics",
    "depth_parts",
    "slot_table",
    "picker",
)
# The scorer's version is a digest of the source of every module a stored number depends on: the modules
# that load and score a run and build its stored tables (`SCORER_ROOTS`) and every `analysis` module they
# import, at the top or inside a function, followed through their import statements (`scorer_modules`): a
# module moved, renamed or split is still covered, where a list of paths would silently drop it.
SCORER_ROOTS = ("analysis.store.entries", "analysis.store.parts", "analysis.store.runs")
_PACKAGE = "analysis"


def store_root() -> Path | None:
    """The store's folder: `scored` under `DST_CACHE_DIR` (the parse cache's folder), else under
    `~/.cache/dst-analysis`; None (memory only) when `DST_CACHE_DIR` is set to an empty string."""
    root = cache_root()
    return None if root is None else root / "scored"


@cache
def scorer_version() -> str:
    """Digest of `SCHEMA_VERSION` and the source of every module of `scorer_modules()`, by module name."""
    digest = hashlib.sha256(f"schema {SCHEMA_VERSION}".encode())
    for name, path in _scorer_modules_remembered().items():
        digest.update(f"\0{name}\0".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def scorer_modules(roots: tuple[str, ...] = SCORER_ROOTS, package: Path | None = None) -> dict[str, Path]:
    """The modules of the `analysis` package (at `package`, default this one) that `roots` import, directly
    or through one another, at the top of a module or inside a function, with their packages' `__init__`
    (run by any import of a module inside): name -> source file, sorted by name. Read from the source
    (`ast`), nothing imported: a function's import counts though the function has not run yet."""
    base = package if package is not None else _package_dir()
    found: dict[str, Path] = {}
    pending = list(roots)
    while pending:
        name = pending.pop()
        if name in found:
            continue
        path = _module_file(base, name)
        if path is None:
            continue
        found[name] = path
        parent = name.rpartition(".")[0]
        if parent:
            pending.append(parent)
        pending += _imported(path, name, is_package=path.name == "__init__.py")
    return dict(sorted(found.items()))


def _package_dir() -> Path:
    return Path(__file__).resolve().parents[1]


def _scorer_modules_remembered() -> dict[str, Path]:
    """`scorer_modules()`, its names remembered in the store's folder per the identity (path, size,
    modification time) of every source file of the package: reading their imports takes about 0.5 s,
    which a start with nothing changed need not spend."""
    base = _package_dir()
    root = store_root()
    if root is None:
        return scorer_modules()
    files = sorted((str(p.relative_to(base)), p.stat()) for p in base.rglob("*.py"))
    stamp = "\0".join(f"{name}\0{st.st_size}\0{st.st_mtime_ns}" for name, st in files)
    memo = root / "digests" / f"modules-{hashlib.sha256(f'{base}{stamp}'.encode()).hexdigest()[:32]}"
    with contextlib.suppress(OSError, ValueError):  # `checks.Damaged` (a FIFO, a huge file) is a ValueError
        names = json.loads(checks.read_regular(memo, checks.MEMO_MAX_BYTES).decode("utf-8"))
        found = {name: _module_file(base, name) for name in names}
        if all(path is not None for path in found.values()):
            return {name: path for name, path in found.items() if path is not None}
    modules = scorer_modules()
    with contextlib.suppress(OSError):
        _write_atomic(memo, json.dumps(list(modules)).encode())
    return modules


def _module_file(base: Path, name: str) -> Path | None:
    """The source file of module `name` of the package at `base`, or None (not one of its modules)."""
    parts = name.split(".")
    if parts[0] != _PACKAGE:
        return None
    folder = base.joinpath(*parts[1:])
    for path in (folder / "__init__.py", folder.with_suffix(".py")):
        if path.is_file():
            return path
    return None


def _imported(path: Path, name: str, *, is_package: bool) -> list[str]:
    """Every module name an import statement of the file names (for `from m import x`: `m` and `m.x`, which
    is a module when `x` is one), relative imports resolved against `name`; not those under `if
    TYPE_CHECKING:`, which never run."""
    import ast

    here = name if is_package else name.rpartition(".")[0]
    names: list[str] = []
    pending: list[ast.AST] = [ast.parse(path.read_bytes(), filename=str(path))]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and _type_checking(node.test):
            pending += node.orelse
            continue
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            origin = here.split(".")
            origin = origin[: len(origin) - node.level + 1] if node.level else []
            module = ".".join([*origin, *([node.module] if node.module else [])])
            names.append(module)
            names += [f"{module}.{alias.name}" for alias in node.names if alias.name != "*"]
        pending += ast.iter_child_nodes(node)
    return [n for n in names if n == _PACKAGE or n.startswith(_PACKAGE + ".")]


def _type_checking(test: Any) -> bool:
    import ast

    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


# This process's digests per file identity (device, inode, size, modification time): the pages look the
# store keys of every run up on each view, and one `stat` is all a known file then costs (the memo file
# below needs the resolved path, several `lstat`s, and a read). Bounded: cleared when full.
_DIGESTS: dict[tuple[int, int, int, int], str] = {}
_DIGESTS_MAX = 4096


def file_digest(path: str | Path, root: Path | None = None) -> str:
    """SHA-256 of a file's content, remembered per (path, size, modification time) under `root`
    so that a warm restart reads no prediction file, and in this process per (device, inode, size,
    modification time). A missing file has the digest `missing`."""
    path = Path(path)
    try:
        stat = path.stat()
    except OSError:
        return "missing"
    special = checks.special(stat.st_mode)
    if special is not None:  # never read (a FIFO would block the caller: a server's start-up)
        raise OSError(errno.EINVAL, f"{special}, not a file", str(path))
    identity = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
    known = _DIGESTS.get(identity)
    if known is not None:
        return known
    value = _file_digest(path, stat, root)
    if len(_DIGESTS) >= _DIGESTS_MAX:
        _DIGESTS.clear()
    _DIGESTS[identity] = value
    return value


def _file_digest(path: Path, stat: os.stat_result, root: Path | None) -> str:
    memo = None
    if root is not None:
        stamp = f"{path.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}"
        memo = root / "digests" / hashlib.sha256(stamp.encode()).hexdigest()[:32]
        with contextlib.suppress(OSError, ValueError):  # absent, or not a memo the store wrote: read the file
            text = checks.read_regular(memo, checks.MEMO_MAX_BYTES).decode("ascii").strip()
            if len(text) == 64:
                return text
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    value = digest.hexdigest()
    if memo is not None:
        with contextlib.suppress(OSError):
            _write_atomic(memo, value.encode())
    return value


def entry_key(
    pred: str | Path | None,
    gold: str | Path | None,
    options: dict[str, Any],
    convention: str | None,
    *,
    root: Path | None = None,
    pred_digest: str | None = None,
    gold_digest: str | None = None,
) -> str:
    """The store key: prediction and gold content digests, the run's options (its `RunInfo` and formats:
    what it is named and how its files are read), the convention asked for and the scorer's version.
    `*_digest` give the digest of uploaded bytes instead of a file's."""
    described = dict(options)
    for name in ("schema", "train_schema"):  # SGD schema files are inputs too: their content counts
        if described.get(name):
            described[f"{name}_digest"] = file_digest(described[name], root)
    parts = {
        "pred": pred_digest or (file_digest(pred, root) if pred is not None else "none"),
        "gold": gold_digest or (file_digest(gold, root) if gold is not None else "none"),
        "options": described,
        "convention": convention,
        "scorer": scorer_version(),
    }
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def entry_options(info: RunInfo, fmt: str | None = None, gold_format: str | None = None) -> dict[str, Any]:
    """A run's options as the key reads them."""
    return {**asdict(info), "format": fmt, "gold_format": gold_format}


def _partition(convention: str) -> str:
    """A convention name safe as one path component (names are short identifiers already)."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in convention) or "_"


def table_path(root: Path, table: str, convention: str, key: str) -> Path:
    return root / table / f"convention={_partition(convention)}" / f"run={key}" / "part.parquet"


def header_path(root: Path, key: str) -> Path:
    return root / "entries" / f"{key}.json"


def _write_atomic(path: Path, data: bytes) -> None:
    """Write to a temporary file beside `path`, then rename it into place: readers see all or nothing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def _locked(root: Path, key: str) -> Iterator[None]:
    """An exclusive lock on one key's entry while it is written (two processes scoring one run write it
    once; the second finds it whole). Where locks are not available, the atomic renames still hold."""
    with _lock_file(root, f"{key}.lock") as handle:
        try:
            import fcntl

            fcntl.flock(handle, fcntl.LOCK_EX)
        except (ImportError, OSError):
            pass
        yield


def _lock_file(root: Path, name: str) -> BinaryIO:
    """The store's lock file `name` (under `locks/`, made when absent), open for `flock`."""
    lock_dir = root / "locks"
    lock_dir.mkdir(parents=True, exist_ok=True)
    return open(lock_dir / name, "a+b")  # the caller closes it (a `with` block)


def claimed(root: Path, key: str) -> contextlib.AbstractContextManager[bool]:
    """Whether this process may score `key` now: True, the claim held until the block ends, unless another
    process holds it (it is scoring that run: False). A batch scorer claims each run before reading it, so
    two processes scoring the same new runs into one store (two `store` commands, two dashboard servers on
    one sweep) take turns instead of each scoring every run. Released when the block ends or the process
    does. Where locks are not available: True (the run may be scored twice; the writes stay atomic)."""
    return held(root, f"{key}.claim")


@contextlib.contextmanager
def held(root: Path, name: str) -> Iterator[bool]:
    """The store's lock file `name` locked without waiting: True while this process holds it, False when
    another process does. Where locks are not available: True."""
    try:
        handle = _lock_file(root, name)
    except OSError:
        yield True
        return
    with handle:
        try:
            import fcntl

            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        except (ImportError, OSError):
            pass
        yield True


def claim(root: Path, key: str) -> contextlib.ExitStack | None:
    """`key`'s claim (`claimed`) taken and held until the returned stack is closed (from any thread); None
    when another process holds it."""
    stack = contextlib.ExitStack()
    if stack.enter_context(claimed(root, key)):
        return stack
    stack.close()
    return None


# How long an in-process scorer waits for another process's claim on the run it needs (as long as a worker
# may take over a run: `analysis.isolated.TIMEOUT_S`) before scoring the run itself.
CLAIM_WAIT_S = 300.0


def claim_or_stored(root: Path, key: str) -> tuple[contextlib.ExitStack | None, Scored | None]:
    """Before scoring `key` for the store: its claim taken (`claim`), or, while another process holds it, that
    process waited for (at most `CLAIM_WAIT_S`) and the run it stored: (None, the stored run). Else (the claim,
    None) to hold while the run is scored and saved; the claim is None when a third process took it meanwhile
    (the run is scored all the same)."""
    taken = claim(root, key)
    if taken is not None:
        return taken, None
    await_claim(root, key, CLAIM_WAIT_S)
    stored = load(root, key)
    if stored is not None:
        return None, stored
    return claim(root, key), None


def await_claim(root: Path, key: str, timeout: float) -> bool:
    """Wait (at most `timeout` seconds) until no process holds `key`'s claim; whether none does."""
    deadline = time.monotonic() + timeout
    while True:
        with claimed(root, key) as free:
            if free:
                return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


# Tables only ever read by DuckDB are written without pandas' schema metadata and column statistics: they
# made up two thirds of each file's footer (34 KB of a 117 KB `dialogues` file, 65 columns; 18 KB of a
# one-row `runs` file), and a query over many runs opens one file per run (300 runs' parts: 0.80 -> 0.70 s,
# their leaderboard rows 0.33 -> 0.26 s). `turns` and `slots` keep both: they are read back into pandas.
BARE_TABLES = frozenset(
    {"runs", "dialogues", "domains", "domain_parts", "depth", "depth_metrics", "depth_parts", "slot_table", "picker"}
)


def _parquet_bytes(frame: pd.DataFrame, *, bare: bool = False) -> tuple[bytes, int]:
    # Imported here, not at the top: `metrics` on a run the store does not hold never reads or writes Parquet, and
    # the import (with Arrow's file systems and ssl) is about 8 ms of its 0.3 s of imports.
    import pyarrow.parquet as pq

    table = _arrow_table(frame, bare)
    sink = io.BytesIO()
    # Statistics (min/max per row group) for the numbers, flags and `run_id`: the other string columns'
    # statistics cost about 3 of the 15 ms to write a MultiWOZ-size run's `slots` and prune nothing, since
    # each run's file is one row group that every query names by its path.
    stats: bool | list[str] = False
    if not bare:
        stats = [f.name for f in table.schema if f.name == "run_id" or not _is_string(f.type)]
    pq.write_table(table, sink, compression="zstd", write_statistics=stats)
    return sink.getvalue(), table.num_rows


# The Arrow schema (with pandas' metadata) of each kind of table written, by its columns' names and dtypes.
# `pa.Table.from_pandas` builds that metadata column by column, about 0.09 ms a column: 4.7 ms of the 6.4 ms
# it takes to write a run's one-row, 51-column `runs` table, about 15 ms a run in all. A table whose columns
# have the same names and dtypes has the same schema, so the columns are converted as `from_pandas` converts
# them (`pa.array(..., from_pandas=True)`: NaN is null) and put under it: the same bytes (tested).
_SCHEMAS: dict[tuple[object, ...], pa.Schema] = {}
_SCHEMAS_KEPT = 64


def _arrow_table(frame: pd.DataFrame, bare: bool) -> pa.Table:
    """`pa.Table.from_pandas(frame, preserve_index=False)` (without pandas' metadata when `bare`)."""
    shape: tuple[object, ...] | None = None
    if not frame.attrs and frame.columns.is_unique and isinstance(frame.index, pd.RangeIndex):
        # attrs are written into the metadata; a dtype is compared with its categories (part of it too).
        shape = (bare, frame.columns.dtype, frame.columns.name, *zip(frame.columns, frame.dtypes, strict=True))
        schema = _SCHEMAS.get(shape)
        if schema is not None:
            # Each column's own array (pandas' `_get_column_array`, pinned in requirements.txt): a Series per
            # column (`iloc`) costs more than the whole conversion, 1.6 against 0.12 ms for the `runs` table.
            arrays = [pa.array(frame._get_column_array(i), type=f.type, from_pandas=True) for i, f in enumerate(schema)]
            return pa.Table.from_arrays(arrays, schema=schema)
    table = pa.Table.from_pandas(frame, preserve_index=False, nthreads=1)  # one run is small: no thread pool
    if bare:
        table = table.replace_schema_metadata(None)
    if shape is not None:
        if len(_SCHEMAS) >= _SCHEMAS_KEPT:  # a store writes a dozen shapes: more means other tables, start over
            _SCHEMAS.clear()  # (one call: safe beside another thread's write, as an eviction loop is not)
        _SCHEMAS[shape] = table.schema
    return table


def _is_string(kind: pa.DataType) -> bool:
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind))


@dataclass(frozen=True)
class Entry:
    """A stored entry's header: where its tables are and what it scored."""

    key: str
    convention: str  # the convention's name, as partitioned
    header: dict[str, Any]
    root: Path

    def path(self, table: str) -> Path:
        return table_path(self.root, table, self.convention, self.key)

    @property
    def run_id(self) -> str:
        return str(self.header["meta"]["run_id"])


def _tables(scored: Scored, key: str) -> dict[str, pd.DataFrame]:
    from analysis.store import parts

    domains, domain_parts = parts.domain_tables(scored)
    depth, depth_metrics, depth_parts = parts.depth_tables(scored)
    dialogues = parts.dialogue_parts(scored)
    return {
        "turns": scored.turns,
        "slots": scored.slots,
        "runs": parts.runs_row(scored, key, scorer_version(), dialogues),
        "dialogues": dialogues,
        "domains": domains,
        "domain_parts": domain_parts,
        "depth": depth,
        "depth_metrics": depth_metrics,
        "depth_parts": depth_parts,
        "slot_table": parts.slot_table(scored),
        "picker": parts.picker(scored),
    }


def save(root: Path, key: str, scored: Scored) -> Entry | None:
    """Write one scored run (a single run) under `key`; None, with one warning line, when the disk
    refuses (read-only, full, ...): the caller keeps the run in memory."""
    if len(scored.metas) != 1:
        raise ValueError(f"the store keeps one run per entry, got {len(scored.metas)} runs")
    convention = scored.convention.name
    try:
        tables = _tables(scored, key)
        with _locked(root, key):
            existing = _header(root, key)
            if existing is not None:
                return existing  # another process wrote it meanwhile
            files: dict[str, dict[str, Any]] = {}
            for name, frame in tables.items():
                data, rows = _parquet_bytes(frame, bare=name in BARE_TABLES)
                _write_atomic(table_path(root, name, convention, key), data)
                files[name] = {"rows": rows, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
            header = {
                "schema_version": SCHEMA_VERSION,
                "scorer_version": scorer_version(),
                "key": key,
                "convention": convention,
                "subtask": scored.convention.subtask,
                "meta": scored.metas[0].to_dict(),
                "alignment": scored.alignment,
                "ontology": scored.ontology[["domain", "slot"]].astype(str).values.tolist(),
                "tables": files,
                "attributes": _attribute_counts(scored.turns),
            }
            text = json.dumps(header, ensure_ascii=False, default=_json_default).encode()
            _write_atomic(header_path(root, key), text)
    except OSError as exc:
        reason = "the disk is full" if exc.errno == errno.ENOSPC else f"{exc.strerror or exc}"
        log.warning("score store: cannot write %s (%s); run %s stays in memory", root, reason, scored.run_ids[0])
        return None
    return Entry(key, convention, header, root)


def _attribute_counts(turns: pd.DataFrame) -> dict[str, int]:
    """The turns' columns beyond the standard ones and their distinct values (pandas' `nunique`: nulls
    left out), as `views.attribute_columns` counts them: the Domains page's attributes without a query."""
    from analysis.views import STANDARD_TURN_COLUMNS

    return {str(c): int(turns[c].nunique()) for c in turns.columns if c not in STANDARD_TURN_COLUMNS}


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return str(value)


# Headers this process has read, per header file and its identity (inode, size, modification time): a page
# looks the entries of every run up on each view, and a known header then costs one `stat`, not a read and
# a JSON parse. A header rewritten, replaced or removed has another identity, or none. Bounded: cleared when full.
_HEADERS: dict[Path, tuple[tuple[int, int, int, int], Entry]] = {}
_HEADERS_MAX = 4096


def _header(root: Path, key: str) -> Entry | None:
    """The entry whose header is `<root>/entries/<key>.json`, or None: absent, or damaged (removed with one
    warning line). A header is read only when it is a regular file (a FIFO is never opened: it would block
    the reader) of bounded size and nesting, and taken only with every field a reader uses
    (`checks.header_problem`), written by this scorer."""
    path = header_path(root, key)
    try:
        stat = path.stat()
    except FileNotFoundError:
        _HEADERS.pop(path, None)
        return None
    except OSError:
        stat = None
    identity = None if stat is None else (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
    known = _HEADERS.get(path)
    if known is not None and identity is not None and known[0] == identity:
        return known[1]
    _HEADERS.pop(path, None)
    try:
        header = checks.parse_header(checks.read_regular(path, checks.HEADER_MAX_BYTES))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:  # `checks.Damaged` too
        _discard(root, key, None, f"its header {path} cannot be read ({' '.join(str(exc).split())})")
        return None
    why = checks.header_problem(
        header,
        key,
        schema_version=SCHEMA_VERSION,
        scorer_version=scorer_version(),
        tables=TABLES,
        meta_fields=_META_FIELDS,
    )
    if why is not None:
        _discard(root, key, None, f"its header {path} is not whole: {why}")
        return None
    entry = Entry(key, header["convention"], header, root)
    if identity is not None:
        if len(_HEADERS) >= _HEADERS_MAX:
            _HEADERS.clear()
        _HEADERS[path] = (identity, entry)
    return entry


_META_FIELDS = {f.name for f in fields(RunMeta)}


def _discard(root: Path, key: str, convention: str | None, why: str) -> None:
    """Remove a damaged entry (header first, so no reader takes it for whole) with one warning line."""
    log.warning("score store: entry %s is damaged (%s); removed, the run is scored again", key, why)
    with contextlib.suppress(OSError):
        header_path(root, key).unlink()
    _HEADERS.pop(header_path(root, key), None)
    conventions = (
        [convention] if convention else [p.name.removeprefix("convention=") for p in root.glob("*/convention=*")]
    )
    for table in TABLES:
        for conv in dict.fromkeys(conventions):
            with contextlib.suppress(OSError):
                shutil.rmtree(table_path(root, table, conv, key).parent)


def lookup(root: Path, key: str, *, tables: tuple[str, ...] = TABLES, deep: bool = True) -> Entry | None:
    """The entry of `key` if it is whole: its header reads and each of `tables` has the size, row count
    (Parquet footer) and, when `deep`, the SHA-256 the header recorded. A damaged entry is removed (one
    warning line) and None returned, so the caller scores the run again."""
    entry = _header(root, key)
    if entry is None:
        return None
    why = _check(entry, tables, deep=deep)
    if why:
        _discard(root, key, entry.convention, why)
        return None
    return entry


def part_sizes_problem(entry: Entry, tables: tuple[str, ...]) -> str | None:
    """Why a part of `tables` is not the regular file of the size its header records (a stat per part, no
    file opened: the pages' check, and `prune`'s); None when each is."""
    for table in tables:
        why, _ = _part_size(entry, table)
        if why is not None:
            return why
    return None


def _part_size(entry: Entry, table: str) -> tuple[str | None, int]:
    """(why the `table` part is not the regular file of the size its header records, or None; its size)."""
    want = entry.header["tables"].get(table)
    if want is None:
        return f"its header lists no {table} table", 0
    try:
        size = checks.regular_size(entry.path(table))
    except checks.Damaged as exc:
        return str(exc), 0
    except OSError:
        return f"its {table} part is missing", 0
    if size != want["bytes"]:
        return f"its {table} part has {size:,} bytes, its header says {want['bytes']:,}", size
    return None, size


def _check(entry: Entry, tables: tuple[str, ...], *, deep: bool) -> str | None:
    import pyarrow.parquet as pq

    recorded = entry.header["tables"]
    for table in tables:
        path = entry.path(table)
        want = recorded.get(table)
        why, size = _part_size(entry, table)
        if why is not None:
            return why
        try:
            if deep:
                data = checks.read_regular(path, size)
                if hashlib.sha256(data).hexdigest() != want["sha256"]:
                    return f"{path} does not match its digest"
                part = pq.ParquetFile(io.BytesIO(data))
            else:
                part = pq.ParquetFile(path)
            rows = part.metadata.num_rows
            missing = checks.missing_columns(table, part.schema_arrow.names)
        except checks.Damaged as exc:
            return str(exc)
        except (OSError, pa.ArrowException) as exc:
            return f"{path} cannot be read as Parquet ({' '.join(str(exc).split())})"
        if rows != want["rows"]:
            return f"{path} holds {rows:,} rows, its header says {want['rows']:,}"
        if missing:
            return f"{path} is not a {table} table: it has no {', '.join(missing)} column"
    return None


def load(root: Path, key: str) -> Scored | None:
    """The stored scored run of `key`, equal to the in-memory scoring it was saved from; None when
    absent or damaged (removed, one warning line)."""
    entry = lookup(root, key, tables=("turns", "slots"))
    if entry is None:
        return None
    import pyarrow.parquet as pq  # only for a stored run (`_parquet_bytes` says why)

    try:
        turns = pq.read_table(entry.path("turns")).to_pandas()
        slots = pq.read_table(entry.path("slots")).to_pandas()
    except (OSError, pa.ArrowException) as exc:
        _discard(root, key, entry.convention, f"its tables cannot be read ({' '.join(str(exc).split())})")
        return None
    header = entry.header
    try:
        conv = get_convention(header["convention"])
        if header.get("subtask"):
            conv = replace(conv, subtask=header["subtask"])
        conv = resolve_convention(conv, [])
        meta_fields = dict(header["meta"])
        for name in ("sources", "formats"):
            meta_fields[name] = tuple(meta_fields.get(name) or ())
        meta = RunMeta(**meta_fields)
    except (TypeError, ValueError, KeyError) as exc:  # a convention or metadata no scorer of this version wrote
        _discard(root, key, entry.convention, f"its header does not describe a run ({' '.join(str(exc).split())})")
        return None
    ontology = pd.DataFrame(header["ontology"], columns=["domain", "slot"], dtype="str")
    ontology.insert(0, "run_id", pd.array([meta.run_id] * len(ontology), dtype="str"))
    return Scored(conv, [meta], turns, slots, ontology, header["alignment"])


def score(
    key: str | None,
    compute: Callable[[], Scored],
    *,
    root: Path | None = None,
    background: bool = False,
    save_new: bool = True,
) -> Scored:
    """The stored scored run of `key`, else `compute()`, saved for next time (`background`: by a thread,
    so the caller does not wait for the writing; the dashboard; `save_new=False`: read only, as a one-off
    command line does by default). Without a store folder (`DST_CACHE_DIR=""`) or a key, `compute()`."""
    root = store_root() if root is None else root
    if root is None or key is None:
        return compute()
    stored = load(root, key)
    if stored is not None:
        return stored
    if not save_new:
        return compute()
    if background:
        scored = compute()
        _writer().put((root, key, scored))
        return scored
    # Claimed while scored and saved (another process needing the run waits for it); a run another process
    # is scoring is waited for and read back once it is stored.
    taken, stored = claim_or_stored(root, key)
    if stored is not None:
        return stored
    with taken or contextlib.ExitStack():
        scored = compute()
        save(root, key, scored)
    return scored


_queue: queue.Queue[tuple[Path, str, Scored]] | None = None
_queue_lock = threading.Lock()


def _writer() -> queue.Queue[tuple[Path, str, Scored]]:
    """The queue of one background writer thread: runs scored by the dashboard are stored one at a time."""
    global _queue
    with _queue_lock:
        if _queue is None:
            _queue = queue.Queue()
            threading.Thread(target=_write_queued, args=(_queue,), daemon=True, name="store-writer").start()
        return _queue


def _write_queued(pending: queue.Queue[tuple[Path, str, Scored]]) -> None:
    while True:
        root, key, scored = pending.get()
        try:
            save(root, key, scored)
        except Exception as exc:  # a background save only costs the next start its speed
            log.warning("score store: run %s not stored (%s)", scored.run_ids[0], " ".join(str(exc).split()))
        finally:
            pending.task_done()


# What else writes to the store in the background, waited for by `flush` too (the worker processes that
# save the runs they scored: `analysis.isolated_jobs`).
FLUSHERS: list[Callable[[], None]] = []


def flush() -> None:
    """Wait until the background writer has stored every run queued so far (tests, benchmarks)."""
    if _queue is not None:
        _queue.join()
    for wait in list(FLUSHERS):
        wait()


def ensure(key: str, compute: Callable[[], Scored], *, root: Path | None = None) -> Entry | None:
    """Make sure `key` is stored (scoring it if not) without reading its tables back: what a batch
    scorer needs. None when the store is off or cannot be written."""
    root = store_root() if root is None else root
    if root is None:
        return None
    entry = lookup(root, key, deep=False)
    if entry is not None:
        return entry
    return save(root, key, compute())
