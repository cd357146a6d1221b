"""A disk cache of parsed files: parsing MultiWOZ's 27 MB gold takes 0.7 s, reading its tables under 0.01 s.

Entries are Arrow IPC files (zstd-compressed record batches, `pyarrow.ipc`) plus a small JSON header
(never pickle). Not Parquet: a process's first Parquet read costs the reader's set-up (MultiWOZ's gold and
turns: 16-32 ms in a fresh `metrics` process, against 9 ms as Arrow IPC, measured here), and the cache is
read back by this package only, so Parquet's portability buys nothing. The same pandas metadata travels
with the schema, so a read gives the frame that was written, dtypes included (tests/test_parse_cache.py).
Each table's SHA-256 is in the header and checked before the table is read: a damaged entry is a miss.
A file that carries gold also keeps what every load derives from it alone (`DERIVED`: the delta check's
gold side), so a process reading it from the cache does not compute that again.

Entries are keyed by the file's absolute path, size, modification time, the forced format and a digest of
the parser's own source, so an edited file or an edited parser never reads a stale entry (and `python -m
analysis prune` removes such entries: `analysis.formats.cache_prune`). `DST_CACHE_DIR` moves the cache (to
its `parsed/` folder); setting it to an empty string turns caching off. Uploads (bytes without a file) are
never cached.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.formats import more
from analysis.formats.engine import ParsedFile
from analysis.safety import read_regular
from analysis.settings import cache_root

TABLES = ("turns", "gold", "pred")
# `ParsedFile.derived` entries kept with the tables, each an Arrow table of its own (checked like them): its
# name -> (to the table, from the table).
DERIVED = {more.DELTA_GOLD: (more.delta_gold_table, more.delta_gold_from_table)}
SUFFIX = ".arrow"
HEADER_MAX_BYTES = 32 * 1024**2  # a header is a few kB (MultiWOZ's gold: 6.9 kB)
TABLE_MAX_BYTES = 1 << 40  # no limit of its own: a table is as large as the parsed file makes it


def cache_dir() -> Path | None:
    """`parsed` in the cache folder (`analysis.settings.cache_root`: `DST_CACHE_DIR`), None when caching is off."""
    root = cache_root()
    return None if root is None else root / "parsed"


@cache
def _parser_digest() -> str:
    digest = hashlib.sha256()
    for source in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(source.read_bytes())
    return digest.hexdigest()[:16]


def _key(path: Path, fmt: str | None) -> str | None:
    from analysis.formats.reading import split_member

    archive, _ = split_member(path)  # a member of an archive (`a.zip::x.json`) changes with its archive
    try:
        stat = Path(archive).stat()
    except OSError:
        return None
    text = f"{path.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}\0{fmt}\0{_parser_digest()}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def memory_key(path: Path, fmt: str | None) -> str | None:
    """The key of `path` for the in-process cache: the disk key, whether or not the disk cache is on."""
    return _key(path, fmt)


def load_cached(path: Path, fmt: str | None) -> ParsedFile | None:
    root, key = cache_dir(), _key(path, fmt)
    if root is None or key is None or not (root / key / "header.json").exists():
        return None
    entry = root / key
    try:
        # Read as the score store reads its own files (`safety.read_regular`): a FIFO, socket or device is never
        # opened (a FIFO in an entry hung every parse of its file), and anything but a regular file of bounded
        # size is a `ValueError` (`Damaged`), so the entry is a miss.
        header = json.loads(read_regular(entry / "header.json", HEADER_MAX_BYTES))
        digests = header["digests"]
        tables = {
            name: _read(entry / f"{name}{SUFFIX}", digests[name]) if name in header["tables"] else None
            for name in TABLES
        }
        derived = {
            name: DERIVED[name][1](_read_table(entry / f"{name}{SUFFIX}", digests[name]))
            for name in header.get("derived", [])
            if name in DERIVED
        }
    except OSError:
        return None  # unreadable now (permissions, too many open files): a miss, the entry left as it is
    except (ValueError, KeyError, TypeError, RecursionError):
        _discard(entry)  # a damaged entry is a miss, never an error; removed, so the parse can be stored again
        return None
    turns = tables["turns"]
    assert turns is not None
    return ParsedFile(
        path=str(path),
        fmt=header["fmt"],
        turns=turns,
        gold=tables["gold"],
        pred=tables["pred"],
        listed_slots=frozenset((d, s) for d, s in header["listed_slots"]),
        notes=header["notes"],
        listings=tuple(tuple((d, s) for d, s in listing) for listing in header.get("listings", [])),
        derived=derived,
    )


def _read(source: Path, digest: str) -> pd.DataFrame:
    """One cached table, on this thread (as `_write`), once its bytes match the SHA-256 `digest` the header
    holds: neither format checks its bytes (Arrow's zstd frames carry no checksum, nor did the Parquet pages
    before), and 64 zeroed bytes at 200 places of a cached `pred` gave another table without an error in 136
    of them (Parquet: 80 of 201). A mismatch is a `ValueError`, as is `pyarrow.ArrowInvalid`: a miss, and the
    file is parsed again. The digest costs about 1 ms for MultiWOZ's gold."""
    return _read_table(source, digest).to_pandas(use_threads=False)


def _read_table(source: Path, digest: str) -> Any:
    """`_read`'s Arrow table, before its conversion to pandas."""
    import pyarrow as pa
    import pyarrow.ipc as ipc

    data = read_regular(source, TABLE_MAX_BYTES)
    if hashlib.sha256(data).hexdigest() != digest:
        raise ValueError(f"{source.name}: its bytes are not the ones written")
    options = ipc.IpcReadOptions(use_threads=False)
    return ipc.open_file(pa.BufferReader(data), options=options).read_all()


def _write(frame: pd.DataFrame, target: Path) -> str:
    """`frame` written to `target` as an Arrow IPC file; returns the SHA-256 of its bytes. Without a thread
    pool: Arrow converts a large frame's columns in Python threads, and compresses on its own C++ pool, and
    a worker child near its memory limit (`analysis.isolated`) that cannot start a thread waits for it for
    good (a MultiWOZ-size file of 60 slots a turn under 1 GB: stopped only by the 300 s timeout). One thread
    is also quicker for a file's few columns. zstd: MultiWOZ's gold 0.47 MB (5.1 MB uncompressed, the
    Parquet file it replaces 0.12 MB), read in 5 ms warm."""
    import pyarrow as pa

    return _write_table(pa.Table.from_pandas(frame, preserve_index=False, nthreads=1), target)


def _write_table(table: Any, target: Path) -> str:
    """`_write` of an Arrow table."""
    import pyarrow as pa
    import pyarrow.ipc as ipc

    sink = pa.BufferOutputStream()
    # Compression runs on Arrow's thread pool unless told not to: one thread, as for the conversion.
    options = ipc.IpcWriteOptions(compression="zstd", use_threads=False)
    with ipc.new_file(sink, table.schema, options=options) as writer:
        writer.write_table(table)
    data = sink.getvalue().to_pybytes()
    target.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def store(path: Path, fmt: str | None, parsed: ParsedFile) -> None:
    root, key = cache_dir(), _key(path, fmt)
    if root is None or key is None:
        return
    staging: Path | None = None
    try:
        root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=root, prefix=".tmp-"))
        present = [n for n in TABLES if getattr(parsed, n) is not None]
        digests = {name: _write(getattr(parsed, name), staging / f"{name}{SUFFIX}") for name in present}
        # What is derived from a gold-bearing file alone and asked of it on every load: kept with its tables.
        more.delta_gold_side(parsed.turns, parsed.gold, parsed.derived)
        derived = [name for name in DERIVED if name in parsed.derived]
        for name in derived:
            digests[name] = _write_table(DERIVED[name][0](parsed.derived[name]), staging / f"{name}{SUFFIX}")
        header = {
            "source": str(path.resolve()),  # with `read_as`, its key today wherever asked from (`prune_cache`)
            "read_as": fmt,
            "fmt": parsed.fmt,
            "tables": present,
            "derived": derived,
            "digests": digests,
            "listed_slots": sorted(parsed.listed_slots),
            "notes": parsed.notes,
            "listings": [list(listing) for listing in parsed.listings],
        }
        (staging / "header.json").write_text(json.dumps(header, ensure_ascii=False), encoding="utf-8")
        _publish(staging, root / key)
    except OSError:
        pass  # a read-only or full disk only costs speed
    finally:
        if staging is not None and staging.exists():
            shutil.rmtree(staging, ignore_errors=True)  # a write that failed leaves nothing behind


def _publish(staging: Path, entry: Path) -> None:
    """`staging` renamed to `entry` (atomic: readers see a whole entry or none). When `entry` is there already
    (another process stored the same parse first, or a damaged entry without its header), the one there is
    kept if whole, else discarded and replaced."""
    try:
        os.replace(staging, entry)
    except OSError:
        if not entry.exists() or (entry / "header.json").is_file():
            return  # a whole entry stored by another process (a damaged one is discarded when read)
        _discard(entry)
        os.replace(staging, entry)


def key_today(header: dict[str, Any]) -> str | None:
    """The key the file an entry's `header` was parsed from has today (its path, size, modification time and
    this parser's digest): the entry's own name while it can be read, another (or None: the file is gone)
    once the file was edited, moved or removed, or the parser changed."""
    source, read_as = header.get("source"), header.get("read_as")
    if not isinstance(source, str) or not (read_as is None or isinstance(read_as, str)):
        return None
    return _key(Path(source), read_as)


def _discard(entry: Path) -> None:
    """Remove a damaged entry (`remove_entry`); one gone already, or in a read-only cache, stays a miss."""
    try:
        remove_entry(entry, "discarded")
    except OSError:
        return


def remove_entry(entry: Path, why: str) -> None:
    """Remove an entry folder: first renamed aside as `.tmp-{why}-...` (readers then miss it whole at once),
    then deleted. `OSError` when it could not be (an aside folder left is a staging folder `prune` removes)."""
    aside = entry.with_name(f".tmp-{why}-{entry.name}-{os.getpid()}")
    os.replace(entry, aside)
    if aside.is_dir() and not aside.is_symlink():
        shutil.rmtree(aside)
    else:  # a file or link where an entry's folder should be
        aside.unlink()
