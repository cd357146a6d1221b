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
    from analysis.store.disk import look, plain

    found = look(dry_run=args.dry_run)
    if found.root is None:
        print(
            "python -m analysis prune: the score store is off (DST_CACHE_DIR is empty): nothing to prune",
            file=sys.stderr,
        )
        return 2
    print(json.dumps(found.to_dict(), ensure_ascii=False) if args.json else "\n".join(found.lines()))
    if found.failed:
        print(
            f"python -m analysis prune: {len(found.failed)} could not be removed; the first: {plain(found.failed[0])}",
            file=sys.stderr,
        )
        return 2
    return 0
