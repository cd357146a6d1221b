"""The scored-run store: every run scored once per convention, kept as a Parquet dataset on disk, and
the cross-run tables (leaderboard with intervals, per-slot, per-domain, the dialogue viewer's filters)
as DuckDB queries over it. See docs/store.md for the schema and queries from elsewhere.

`entries` writes, checks and reads entries (`score`, `ensure`, `load`); `parts` builds the small per-run
tables from the in-memory code; `queries` runs DuckDB over the stored files.
"""

from __future__ import annotations

from analysis.store.entries import (
    TABLES,
    Entry,
    ensure,
    entry_key,
    entry_options,
    load,
    lookup,
    save,
    score,
    scorer_version,
    store_root,
)

__all__ = [
    "TABLES",
    "Entry",
    "ensure",
    "entry_key",
    "entry_options",
    "load",
    "lookup",
    "save",
    "score",
    "scorer_version",
    "store_root",
]
