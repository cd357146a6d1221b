"""What the parse cache (`analysis.formats.cache`, the `parsed/` folder) holds that no read will ever ask for,
found and removed by `python -m analysis prune` beside the score store's dead entries.

An entry's key is the digest of its file's path, size and modification time and of the parser's source, so
an edited, moved or deleted file, and every upgrade of the tool, leave the entries written before on disk,
read by no one (MultiWOZ's gold: 0.85 MB an entry). Each header names the file it was parsed from and how
(`source`, `read_as`): an entry whose file has another key today (`cache.key_today`) is stale. So is one
whose header cannot be read (damaged, or written by a version before the headers named their file), and so
are the staging folders of writes cut short (`.tmp-*`, left by a process that was killed) once they are an
hour old: a live write finishes in seconds. Whole entries of files as they are today are kept.

Removing an entry another process is reading makes that read a miss (the file is parsed again); a write is
never disturbed, since entries are published by an atomic rename and young staging folders are left alone.
Folders linked from elsewhere and files that are not the cache's are neither followed nor removed.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.formats import cache
from analysis.safety import read_regular

__all__ = ["CachePruned", "prune_cache"]

STAGING_AGE_S = 3600.0  # a staging folder older than this belongs to a write that was cut short


@dataclass
class CachePruned:
    """What `prune_cache` found (and removed, unless `dry_run`)."""

    root: str
    dry_run: bool
    kept: int = 0
    kept_bytes: int = 0
    stale: int = 0  # entries of files edited, moved or gone, of another parser version, or unreadable
    stale_bytes: int = 0
    temporary: int = 0  # staging folders of writes cut short
    temporary_bytes: int = 0
    failed: list[str] = field(default_factory=list)

    @property
    def freed_bytes(self) -> int:
        return self.stale_bytes + self.temporary_bytes

    def to_dict(self) -> dict[str, Any]:
        return {
            "parse_cache": self.root,
            "kept": {"entries": self.kept, "bytes": self.kept_bytes},
            "stale": {"entries": self.stale, "bytes": self.stale_bytes},
            "temporary": {"folders": self.temporary, "bytes": self.temporary_bytes},
            "freed_bytes": self.freed_bytes if not self.dry_run else 0,
            "would_free_bytes": self.freed_bytes if self.dry_run else 0,
            "failed": self.failed,
        }


def prune_cache(root: Path, *, dry_run: bool = False, now: float | None = None) -> CachePruned:
    """Find (and, unless `dry_run`, remove) the parse cache's stale entries and old staging folders at
    `root` (the `parsed/` folder)."""
    found = CachePruned(str(root), dry_run)
    moment = time.time() if now is None else now
    for child in sorted(root.iterdir()):
        if child.is_symlink() or not child.is_dir():
            continue  # not the cache's: neither followed nor removed
        size, modified = _walked(child)
        staging = child.name.startswith(".tmp-")
        if staging and moment - modified < STAGING_AGE_S:
            continue  # perhaps a write going on now
        if not staging and _reachable(child):
            found.kept += 1
            found.kept_bytes += size
            continue
        if not dry_run and not _remove(child, found):
            continue  # removed meanwhile (another prune at the same time): counted by that one
        if staging:
            found.temporary += 1
            found.temporary_bytes += size
        else:
            found.stale += 1
            found.stale_bytes += size
    return found


def _reachable(entry: Path) -> bool:
    """Whether a read of the entry's file, as it is today, would ask for this entry."""
    try:
        parsed = json.loads(read_regular(entry / "header.json", cache.HEADER_MAX_BYTES))
    except (OSError, ValueError, RecursionError):  # absent, special, too large, not UTF-8 JSON, nested too deeply
        return False
    return isinstance(parsed, dict) and cache.key_today(parsed) == entry.name


def _remove(folder: Path, found: CachePruned) -> bool:
    """Remove `folder`: False when it was gone already (nothing to count), True otherwise (removed, or the
    reason it could not be in `found.failed`)."""
    try:
        cache.remove_entry(folder, "pruned")
    except FileNotFoundError:
        if not folder.exists():
            return False
        found.failed.append(f"{folder}: a file under it vanished while it was being removed")
    except OSError as problem:
        found.failed.append(f"{folder}: {problem.strerror or problem}")
    return True


def _walked(folder: Path) -> tuple[int, float]:
    """The bytes of the files under `folder` and the latest modification time of it and them (a write adds
    files to a staging folder), in one walk that does not follow links."""
    total, latest = 0, 0.0
    for base, _, files in os.walk(folder):
        for path in [base, *(os.path.join(base, name) for name in files)]:
            try:
                found = os.lstat(path)
            except OSError:
                continue
            latest = max(latest, found.st_mtime)
            if path != base:
                total += found.st_size
    return total, latest
