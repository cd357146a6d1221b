"""The ``prune`` sub-command: what the score store holds that this version of the tool never reads, removed.

``python -m analysis prune [--dry-run] [--json]``

Each upgrade of the tool (or edit of a scorer module) changes the scorer's version, which every entry's key
names: the entries written before stay on disk, read by no one (about 1 GB per 1,000 MultiWOZ-size runs).
``prune`` removes them, with the damaged entries, the parts a cut-short write left without a header and the
temporary files of writes cut short (`analysis.store.prune`); an entry being written is left alone. Then the
same for the parse cache (`analysis.formats.cache_prune`): entries of files edited, moved or gone or of
another version of the readers, and staging folders of writes cut short. Prints what it kept and what it
removed, by kind, with the bytes; ``--dry-run`` only says what it would remove. JSON: the store's object,
with the parse cache's under ``parse_cache`` (null when there is none).

Exit 0 when everything it found was removed (or, with ``--dry-run``, looked at); 2 when something could not
be removed (a read-only store, say), or when there is no store (``DST_CACHE_DIR`` set to an empty string).
A store shared by machines running other versions of the tool loses their entries too: they score them again.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

__all__ = ["register", "run"]

SHOWN = 10  # damaged entries and failures listed one by one, then counted


def register(subparsers: Any) -> None:
    """Add the ``prune`` sub-parser to an ``argparse`` subparsers object (``func=run``)."""
    parser = subparsers.add_parser(
        "prune",
        help="remove from the score store and the parse cache what this version never reads (older versions' "
        "entries, damaged ones)",
        description=(
            "Remove from the score store (DST_CACHE_DIR) the entries other scorer versions or layouts wrote, damaged "
            "entries, parts without a header and temporary files of writes cut short; entries being written are "
            "left alone. Then from the parse cache the entries of files edited, moved or gone or of another "
            "version of the readers, and staging folders of writes cut short. Exit 2 when something could not be "
            "removed."
        ),
    )
    parser.add_argument("--dry-run", action="store_true", help="only say what would be removed")
    parser.add_argument("--json", action="store_true", help="the outcome as one JSON object")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from analysis.formats.cache import cache_dir
    from analysis.formats.cache_prune import prune_cache
    from analysis.store import entries
    from analysis.store.prune import prune

    root = entries.store_root()
    if root is None:
        print(
            "python -m analysis prune: the score store is off (DST_CACHE_DIR is empty): nothing to prune",
            file=sys.stderr,
        )
        return 2
    found = prune(root, dry_run=args.dry_run) if root.is_dir() else None
    parsed = cache_dir()
    cached = prune_cache(parsed, dry_run=args.dry_run) if parsed is not None and parsed.is_dir() else None
    if args.json:
        out: dict[str, Any] = found.to_dict() if found is not None else {"store": str(root), "exists": False}
        out["parse_cache"] = cached.to_dict() if cached is not None else None
        print(json.dumps(out, ensure_ascii=False))
    else:
        lines = _lines(found) if found is not None else [f"prune: no score store at {_plain(str(root))}"]
        print("\n".join([*lines, *(_cache_lines(cached) if cached is not None else [])]))
    failed = [*(found.failed if found is not None else []), *(cached.failed if cached is not None else [])]
    if failed:
        print(
            f"python -m analysis prune: {len(failed)} could not be removed; the first: {_plain(failed[0])}",
            file=sys.stderr,
        )
        return 2
    return 0


def _cache_lines(found: Any) -> list[str]:
    """The parse cache's part of the report (`analysis.formats.cache_prune`)."""
    removed = "would remove" if found.dry_run else "removed"
    lines = [
        f"prune: parse cache {_plain(found.root)}" + (" (dry run: nothing removed)" if found.dry_run else ""),
        f"  kept {_entries(found.kept)} of files as they are today: {_size(found.kept_bytes)}",
    ]
    if found.stale:
        lines.append(
            f"  {removed} {_entries(found.stale)} of files edited, moved or gone, or of another version of the "
            f"readers: {_size(found.stale_bytes)}"
        )
    if found.temporary:
        folders = f"{found.temporary:,} staging folder{'' if found.temporary == 1 else 's'}"
        lines.append(f"  {removed} {folders} of writes cut short: {_size(found.temporary_bytes)}")
    lines.append(f"{'would free' if found.dry_run else 'freed'} {_size(found.freed_bytes)}")
    return lines


def _lines(found: Any) -> list[str]:
    removed = "would remove" if found.dry_run else "removed"
    lines = [
        f"prune: score store {_plain(found.root)}" + (" (dry run: nothing removed)" if found.dry_run else ""),
        f"  kept {_entries(found.kept)} of this scorer: {_size(found.kept_bytes)}",
    ]
    others = sum(found.other_versions.values())
    if others:
        lines.append(f"  {removed} {_entries(others)} other scorer versions wrote: {_size(found.other_bytes)}")
        lines += [f"    version {label}: {n:,}" for label, n in found.other_versions.most_common(SHOWN)]
        if len(found.other_versions) > SHOWN:
            lines.append(f"    and {len(found.other_versions) - SHOWN} other versions")
    if found.damaged:
        lines.append(f"  {removed} {_entries(len(found.damaged), 'damaged ')}: {_size(found.damaged_bytes)}")
        lines += [f"    {_plain(key)}: {_plain(why)}" for key, why in found.damaged[:SHOWN]]
        if len(found.damaged) > SHOWN:
            lines.append(f"    and {len(found.damaged) - SHOWN} more")
    if found.orphans:
        lines.append(
            f"  {removed} the parts of {found.orphans:,} run{'' if found.orphans == 1 else 's'} without a header "
            "(a write cut short): "
            f"{_size(found.orphan_bytes)}"
        )
    if found.temporary:
        files = f"{found.temporary:,} temporary file{'' if found.temporary == 1 else 's'}"
        lines.append(f"  {removed} {files} of writes cut short: {_size(found.temporary_bytes)}")
    if found.busy:
        lines.append(f"  left {_entries(found.busy)} being written now (another process holds the lock)")
    lines.append(f"{'would free' if found.dry_run else 'freed'} {_size(found.freed_bytes)}")
    return lines


def _plain(text: str) -> str:
    """File names and reasons from the store as literal text: a control character (a terminal's escape, a line
    break in a crafted file name) shown as its escape, not acted on."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def _entries(n: int, kind: str = "") -> str:
    return f"{n:,} {kind}{'entry' if n == 1 else 'entries'}"


def _size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"
