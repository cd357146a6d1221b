"""What the score store holds that this version of the tool never reads again, found and removed.

An entry's key names the scorer's version (`entries.scorer_version`: the source of every scoring module), so
an upgrade of the tool, or an edit of a scorer module, leaves every entry written before it on disk, read by
no one: about 1 GB per 1,000 MultiWOZ-size runs and version. `prune` lists, and unless told to only look
removes:

* entries written by another scorer version or store layout (their header says which);
* damaged entries: a header that cannot be read, or that is not whole, or a part missing or of another size
  than the header says (a reader would remove them too, one at a time, as it met them);
* orphaned parts: a run's partition folders without a header (a write cut short before its header, which
  is written last, or a removal cut short after it);
* temporary files a write cut short left beside the entries and parts.

Nothing of an entry being written is touched: each key is pruned under its write lock (`entries._locked`'s
lock file), taken without waiting; a key whose lock another process holds is counted as busy and left as it
is. The store's lock files are kept (removing a lock file another process holds would let two writers in),
and so are the remembered digests (a few small files, rewritten as needed).

A store shared by machines running different versions of the tool (a network folder, S3) holds each
version's entries: pruning on one machine removes the others', which they then score again.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.store import checks
from analysis.store import entries as E

__all__ = ["Pruned", "prune"]

_NOT_TABLES = frozenset({"entries", "locks", "digests"})  # the store's folders that are not tables


@dataclass
class Pruned:
    """What `prune` found (and removed, unless `dry_run`): counts and bytes of each kind."""

    root: str
    dry_run: bool
    kept: int = 0
    kept_bytes: int = 0
    other_versions: Counter[str] = field(default_factory=Counter)  # "version (layout N)" -> entries
    other_bytes: int = 0
    damaged: list[tuple[str, str]] = field(default_factory=list)  # (key, why)
    damaged_bytes: int = 0
    orphans: int = 0  # keys with parts and no header
    orphan_bytes: int = 0
    temporary: int = 0  # files
    temporary_bytes: int = 0
    busy: int = 0  # keys whose write lock another process held: left as they are
    failed: list[str] = field(default_factory=list)  # what could not be removed, one line each

    @property
    def freed_bytes(self) -> int:
        return self.other_bytes + self.damaged_bytes + self.orphan_bytes + self.temporary_bytes

    def to_dict(self) -> dict[str, Any]:
        return {
            "store": self.root,
            "dry_run": self.dry_run,
            "kept": {"entries": self.kept, "bytes": self.kept_bytes},
            "other_versions": {
                "entries": sum(self.other_versions.values()),
                "bytes": self.other_bytes,
                "versions": dict(self.other_versions),
            },
            "damaged": {
                "entries": len(self.damaged),
                "bytes": self.damaged_bytes,
                "keys": [{"key": k, "why": w} for k, w in self.damaged],
            },
            "orphaned": {"keys": self.orphans, "bytes": self.orphan_bytes},
            "temporary": {"files": self.temporary, "bytes": self.temporary_bytes},
            "busy": self.busy,
            "freed_bytes": self.freed_bytes if not self.dry_run else 0,
            "would_free_bytes": self.freed_bytes if self.dry_run else 0,
            "failed": self.failed,
        }


def prune(root: Path, *, dry_run: bool = False) -> Pruned:
    """Find (and, unless `dry_run`, remove) what the store at `root` holds that this scorer never reads."""
    found = Pruned(str(root), dry_run)
    parts = _partitions(root)
    headers = _headers(root)
    for key in sorted(set(parts) | set(headers)):
        with _try_locked(root, key, dry_run=dry_run) as free:
            if not free:
                found.busy += 1
                continue
            _prune_key(root, key, headers.get(key), parts.get(key, []), found)
    for path in _temporary_files(root / "entries"):  # a header's write cut short: its key is in the name
        key = path.name[1:].partition(".json.")[0]
        with _try_locked(root, key, dry_run=dry_run) as free:
            if free and path.exists():
                _drop_temporary(path, found)
            elif not free:
                found.busy += 1
    if not dry_run:
        _remove_empty_folders(root)
    return found


def _prune_key(root: Path, key: str, header: Path | None, folders: list[Path], found: Pruned) -> None:
    """One key, its write lock held: kept, or counted (and removed) as what it is. The key was listed before
    its lock was taken: what another prune (or a writer's own clean-up) removed meanwhile is not counted."""
    header = header if header is not None and _present(header) else None
    folders = [folder for folder in folders if _present(folder)]
    if header is None and not folders:
        return
    temporary = [path for folder in folders for path in _temporary_files(folder)]  # a part's write cut short
    size = sum(_size(f) for f in folders) + (_size(header) if header is not None else 0)
    size -= sum(_size(path) for path in temporary)  # counted as temporary files, not with the entry
    for path in temporary:
        _drop_temporary(path, found)
    if header is None:
        found.orphans += 1
        found.orphan_bytes += size
        _remove(root, key, None, folders, found)
        return
    kind, detail = _classify(root, key, header)
    if kind == "kept":
        found.kept += 1
        found.kept_bytes += size
        return
    if kind == "other":
        found.other_versions[detail] += 1
        found.other_bytes += size
    else:
        found.damaged.append((key, detail))
        found.damaged_bytes += size
    _remove(root, key, header, folders, found)


def _classify(root: Path, key: str, header: Path) -> tuple[str, str]:
    """("kept", ""), ("other", its version and layout) or ("damaged", why) for the entry of `header`."""
    try:
        parsed = checks.parse_header(checks.read_regular(header, checks.HEADER_MAX_BYTES))
    except (OSError, ValueError) as exc:  # `checks.Damaged` too
        return "damaged", f"its header cannot be read ({' '.join(str(exc).split())})"
    if isinstance(parsed, dict) and (
        parsed.get("schema_version") != E.SCHEMA_VERSION or parsed.get("scorer_version") != E.scorer_version()
    ):
        return "other", f"{_shown(parsed.get('scorer_version'))} (layout {_shown(parsed.get('schema_version'))})"
    why = checks.header_problem(
        parsed,
        key,
        schema_version=E.SCHEMA_VERSION,
        scorer_version=E.scorer_version(),
        tables=E.TABLES,
        meta_fields=E._META_FIELDS,
    )
    if why is not None:
        return "damaged", f"its header is not whole: {why}"
    why = E.part_sizes_problem(E.Entry(key, parsed["convention"], parsed, root), E.TABLES)  # as the pages check
    return ("damaged", why) if why is not None else ("kept", "")


def _shown(value: object) -> str:
    """A version or layout from a header, as literal text of bounded length (its `repr` when not a plain name)."""
    if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).isascii() and str(value).isalnum():
        return str(value)[:64]
    text = repr(value)
    return text if len(text) <= 64 else text[:61] + "..."


def _remove(root: Path, key: str, header: Path | None, folders: list[Path], found: Pruned) -> None:
    """The entry's header first (so no reader takes what is left for whole), then its parts' folders."""
    if found.dry_run:
        return
    try:
        if header is not None:
            header.unlink(missing_ok=True)
        for folder in folders:
            shutil.rmtree(folder, onerror=_unless_gone)
    except OSError as exc:
        found.failed.append(f"{key}: {exc.strerror or exc}")
    E._HEADERS.pop(E.header_path(root, key), None)


def _drop_temporary(path: Path, found: Pruned) -> None:
    found.temporary += 1
    found.temporary_bytes += _size(path)
    if not found.dry_run:
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            found.failed.append(f"{path}: {exc.strerror or exc}")


def _partitions(root: Path) -> dict[str, list[Path]]:
    """Every run partition folder (`<table>/convention=<name>/run=<key>`) by key, old layouts' tables too."""
    found: dict[str, list[Path]] = {}
    for table in _table_folders(root):
        for convention in _folders(table):
            if not convention.name.startswith("convention="):
                continue
            for run in _folders(convention):
                if run.name.startswith("run="):
                    found.setdefault(run.name.removeprefix("run="), []).append(run)
    return found


def _headers(root: Path) -> dict[str, Path]:
    folder = root / "entries"
    with contextlib.suppress(OSError):
        return {
            p.stem: p
            for p in (Path(e.path) for e in os.scandir(folder))
            if p.suffix == ".json" and not p.name.startswith(".")
        }
    return {}


def _table_folders(root: Path) -> Iterator[Path]:
    return (folder for folder in _folders(root) if folder.name not in _NOT_TABLES)


def _folders(path: Path) -> Iterator[Path]:
    with contextlib.suppress(OSError):
        for item in os.scandir(path):
            if item.is_dir(follow_symlinks=False):
                yield Path(item.path)


def _temporary_files(folder: Path) -> list[Path]:
    """The temporary files of writes cut short (`entries._write_atomic`: `.<name>.<random>.tmp`)."""
    with contextlib.suppress(OSError):
        return [Path(e.path) for e in os.scandir(folder) if e.name.startswith(".") and e.name.endswith(".tmp")]
    return []


def _unless_gone(function: object, path: str, info: tuple[type[BaseException], BaseException, object]) -> None:
    """`shutil.rmtree`'s error handler: a file or folder gone already is what removing it was for; any other
    error is raised (and reported)."""
    if not issubclass(info[0], FileNotFoundError):
        raise info[1]


def _present(path: Path) -> bool:
    """Whether anything (a file, a folder, a link) is at `path` now."""
    try:
        path.lstat()
    except FileNotFoundError:
        return False
    except OSError:
        return True  # there, but not ours to look at: counted, and its removal says what went wrong
    return True


def _size(path: Path) -> int:
    """Bytes of a file, or of every file under a folder (links not followed); 0 for what is gone."""
    try:
        info = path.lstat()
    except OSError:
        return 0
    if not path.is_dir() or path.is_symlink():
        return info.st_size
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(folder, name)).st_size
    return total


def _try_locked(root: Path, key: str, *, dry_run: bool) -> contextlib.AbstractContextManager[bool]:
    """`entries._locked` without waiting: True with the key's write lock held, False when another process
    holds it (it is writing that entry). Where locks are not available: True. A dry run makes no lock file:
    a key without one has no writer (a writer makes it before writing)."""
    if dry_run and not (root / "locks" / f"{key}.lock").exists():
        return contextlib.nullcontext(True)
    return E.held(root, f"{key}.lock")


def _remove_empty_folders(root: Path) -> None:
    """`convention=` folders (and tables) left empty once their runs are gone."""
    for table in _table_folders(root):
        for convention in _folders(table):
            with contextlib.suppress(OSError):
                convention.rmdir()  # only when empty
        with contextlib.suppress(OSError):
            table.rmdir()
