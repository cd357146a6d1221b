"""What the score store and the parse cache hold on disk, and what `prune` removes from them: both looked at
(or pruned) at once, and told as text lines. Shared by `python -m analysis prune` and the dashboard's Disk box.

The store's part is `analysis.store.prune` (entries of other scorer versions or layouts, damaged entries,
parts without a header, temporary files of writes cut short); the parse cache's is
`analysis.formats.cache_prune` (entries of files edited, moved or gone or of another version of the readers,
staging folders of writes cut short). Names read from the disk (folders, keys, reasons) are shown as literal
text: a control character in a crafted file name is shown as its escape, never acted on.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.formats.cache import cache_dir
from analysis.formats.cache_prune import CachePruned, prune_cache
from analysis.store import entries
from analysis.store.prune import Pruned, prune

__all__ = ["SHOWN", "Disk", "entries_text", "look", "plain", "size_text"]

SHOWN = 10  # damaged entries and other versions listed one by one, then counted


@dataclass
class Disk:
    """What `look` found (and removed, unless `dry_run`): the store's folder (None: the store is off,
    `DST_CACHE_DIR` empty), its findings (None: no folder yet) and the parse cache's (None: no folder)."""

    root: Path | None
    dry_run: bool
    store: Pruned | None
    cache: CachePruned | None

    @property
    def failed(self) -> list[str]:
        """What could not be removed, one line each (store first)."""
        return [*(self.store.failed if self.store else []), *(self.cache.failed if self.cache else [])]

    @property
    def freed_bytes(self) -> int:
        """Bytes removed (or, in a dry run, that would be)."""
        return (self.store.freed_bytes if self.store else 0) + (self.cache.freed_bytes if self.cache else 0)

    @property
    def kept_bytes(self) -> int:
        """Bytes of what this version reads: the store's entries and the parse cache's entries kept."""
        return (self.store.kept_bytes if self.store else 0) + (self.cache.kept_bytes if self.cache else 0)

    def to_dict(self) -> dict[str, Any]:
        """`prune --json`: the store's object (`Pruned.to_dict`), the parse cache's under `parse_cache`."""
        out: dict[str, Any] = (
            self.store.to_dict() if self.store is not None else {"store": str(self.root), "exists": False}
        )
        out["parse_cache"] = self.cache.to_dict() if self.cache is not None else None
        return out

    def lines(self) -> list[str]:
        """The report as text: the store's part, then the parse cache's (a store that is on: `root` given)."""
        store = (
            _store_lines(self.store)
            if self.store is not None
            else [f"prune: no score store at {plain(str(self.root))}"]
        )
        return [*store, *(_cache_lines(self.cache) if self.cache is not None else [])]


def look(*, dry_run: bool) -> Disk:
    """The store (`entries.store_root`) and the parse cache (`cache.cache_dir`) pruned, or only looked at
    with `dry_run`; a folder that does not exist is not created."""
    root = entries.store_root()
    if root is None:
        return Disk(None, dry_run, None, None)
    found = prune(root, dry_run=dry_run) if root.is_dir() else None
    parsed = cache_dir()
    cached = prune_cache(parsed, dry_run=dry_run) if parsed is not None and parsed.is_dir() else None
    return Disk(root, dry_run, found, cached)


def _cache_lines(found: CachePruned) -> list[str]:
    removed = "would remove" if found.dry_run else "removed"
    lines = [
        f"prune: parse cache {plain(found.root)}" + (" (dry run: nothing removed)" if found.dry_run else ""),
        f"  kept {entries_text(found.kept)} of files as they are today: {size_text(found.kept_bytes)}",
    ]
    if found.stale:
        lines.append(
            f"  {removed} {entries_text(found.stale)} of files edited, moved or gone, or of another version of the "
            f"readers: {size_text(found.stale_bytes)}"
        )
    if found.temporary:
        folders = f"{found.temporary:,} staging folder{'' if found.temporary == 1 else 's'}"
        lines.append(f"  {removed} {folders} of writes cut short: {size_text(found.temporary_bytes)}")
    lines.append(f"{'would free' if found.dry_run else 'freed'} {size_text(found.freed_bytes)}")
    return lines


def _store_lines(found: Pruned) -> list[str]:
    removed = "would remove" if found.dry_run else "removed"
    lines = [
        f"prune: score store {plain(found.root)}" + (" (dry run: nothing removed)" if found.dry_run else ""),
        f"  kept {entries_text(found.kept)} of this scorer: {size_text(found.kept_bytes)}",
    ]
    others = sum(found.other_versions.values())
    if others:
        lines.append(f"  {removed} {entries_text(others)} other scorer versions wrote: {size_text(found.other_bytes)}")
        lines += [f"    version {plain(label)}: {n:,}" for label, n in found.other_versions.most_common(SHOWN)]
        if len(found.other_versions) > SHOWN:
            lines.append(f"    and {len(found.other_versions) - SHOWN} other versions")
    if found.damaged:
        lines.append(f"  {removed} {entries_text(len(found.damaged), 'damaged ')}: {size_text(found.damaged_bytes)}")
        lines += [f"    {plain(key)}: {plain(why)}" for key, why in found.damaged[:SHOWN]]
        if len(found.damaged) > SHOWN:
            lines.append(f"    and {len(found.damaged) - SHOWN} more")
    if found.orphans:
        lines.append(
            f"  {removed} the parts of {found.orphans:,} run{'' if found.orphans == 1 else 's'} without a header "
            f"(a write cut short): {size_text(found.orphan_bytes)}"
        )
    if found.temporary:
        files = f"{found.temporary:,} temporary file{'' if found.temporary == 1 else 's'}"
        lines.append(f"  {removed} {files} of writes cut short: {size_text(found.temporary_bytes)}")
    if found.busy:
        lines.append(f"  left {entries_text(found.busy)} being written now (another process holds the lock)")
    lines.append(f"{'would free' if found.dry_run else 'freed'} {size_text(found.freed_bytes)}")
    return lines


def plain(text: str) -> str:
    """A name or reason from the disk as literal text: a control character (a terminal's escape, a line break
    in a crafted file name) shown as its escape, not acted on."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def entries_text(n: int, kind: str = "") -> str:
    return f"{n:,} {kind}{'entry' if n == 1 else 'entries'}"


def size_text(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"
