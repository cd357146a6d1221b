"""What the score store trusts of a file before a reader takes it: a regular file of bounded size (never a
FIFO or a device, which would block or never end), a JSON header of bounded size and depth with every field
a reader takes, and Parquet parts with the columns the queries read. A file that fails is damaged: the
caller (`analysis.store.entries`) removes its entry with one warning line and the run is scored again."""

from __future__ import annotations

from typing import Any

# The regular-file reads are the package's (the parse cache reads its files the same way), re-exported here.
from analysis.safety import Damaged, file_kind, read_regular, regular_size, special

__all__ = ["Damaged", "file_kind", "read_regular", "regular_size", "special"]

# A header holds a run's metadata, alignment report (its missing and extra dialogue ids among them) and
# ontology: a few kB for MultiWOZ, well under a MB for any real run; its nesting is 5 levels deep.
HEADER_MAX_BYTES = 32 << 20
HEADER_MAX_DEPTH = 16
# The small files beside the entries (remembered digests and module lists): one line each.
MEMO_MAX_BYTES = 1 << 20
# The columns every query or reader of a table takes, whatever else a run's table holds (a dataset's own
# turn attributes, the metrics of its subtask): a part without them is not one of this store's.
COLUMNS: dict[str, tuple[str, ...]] = {
    "turns": ("run_id", "tid", "dialogue_id", "turn_index", "joint_correct"),
    "slots": ("run_id", "tid", "dialogue_id", "turn_index", "domain", "slot", "outcome"),
    "runs": ("run_id", "store_key", "convention_label", "n_dialogues", "n_turns"),
    "dialogues": ("run_id", "d", "dialogue_key", "dialogue_id"),
    "domains": ("run_id", "domain", "jga", "n_turns"),
    "domain_parts": ("run_id", "domain", "d", "num", "den", "rows"),
    "depth": ("run_id", "turn_index", "jga", "n_turns"),
    "depth_metrics": ("run_id", "turn_index", "n_turns", "jga"),
    "depth_parts": ("run_id", "turn_index", "d", "num", "den", "rows"),
    "slot_table": ("run_id", "slot_name", "domain", "slot", "f1", "support"),
    "picker": ("run_id", "dialogue_id", "n_turns", "error_turns", "first_error_turn", "compounding_run", "position"),
}


def parse_header(data: bytes) -> Any:
    """The JSON of a header's bytes; `Damaged` when it is not UTF-8 JSON or nests deeper than
    `HEADER_MAX_DEPTH` (Python's parser gives up by itself, with a RecursionError, a thousand levels down)."""
    import json

    try:
        header = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        reason = "it nests too deeply" if isinstance(exc, RecursionError) else f"not JSON: {exc}"
        raise Damaged(reason) from None
    if _depth(header) > HEADER_MAX_DEPTH:
        raise Damaged(f"it nests deeper than {HEADER_MAX_DEPTH} levels")
    return header


def _depth(value: Any) -> int:
    """How deep lists and objects nest in a parsed JSON value (a scalar: 0), walked without recursion."""
    deepest = 0
    pending = [(value, 1)]
    while pending:
        item, level = pending.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, level)
        if level <= HEADER_MAX_DEPTH:
            pending += [(child, level + 1) for child in children]
    return deepest


def header_problem(
    header: Any, key: str, *, schema_version: int, scorer_version: str, tables: tuple[str, ...], meta_fields: set[str]
) -> str | None:
    """Why a parsed header is not a whole header of entry `key` written by this scorer (None: it is): every
    field a reader takes, with its type."""
    if not isinstance(header, dict):
        return "it is not a JSON object"
    if header.get("key") != key:
        return "it names another entry"
    if header.get("schema_version") != schema_version or header.get("scorer_version") != scorer_version:
        return (
            f"it was written by another scorer (version {header.get('scorer_version')!r}, layout "
            f"{header.get('schema_version')!r}; this one: {scorer_version!r}, layout {schema_version})"
        )
    if not isinstance(header.get("convention"), str) or not header["convention"]:
        return "it names no convention"
    if header.get("subtask") is not None and not isinstance(header["subtask"], str):
        return "its subtask is not a name"
    meta = header.get("meta")
    if not isinstance(meta, dict) or not isinstance(meta.get("run_id"), str):
        return "it has no run metadata with a run id"
    unknown = sorted(set(meta) - meta_fields)
    if unknown:
        return f"its run metadata has fields no run has ({', '.join(map(str, unknown[:3]))})"
    if not isinstance(header.get("alignment"), dict):
        return "it has no alignment report"
    ontology = header.get("ontology")
    if not isinstance(ontology, list) or not all(
        isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair) for pair in ontology
    ):
        return "its ontology is not a list of (domain, slot) pairs"
    if "attributes" in header and not isinstance(header["attributes"], dict):
        return "its attribute counts are not an object"
    files = header.get("tables")
    if not isinstance(files, dict):
        return "it lists no tables"
    for table in tables:
        want = files.get(table)
        if not (
            isinstance(want, dict)
            and _count(want.get("rows"))
            and _count(want.get("bytes"))
            and isinstance(want.get("sha256"), str)
            and len(want["sha256"]) == 64
        ):
            return f"it does not record the rows, size and digest of its {table} table"
    return None


def _count(value: Any) -> bool:
    return type(value) is int and value >= 0


def missing_columns(table: str, names: list[str]) -> list[str]:
    """The columns `COLUMNS` lists for `table` that a part's schema lacks."""
    have = set(names)
    return [c for c in COLUMNS.get(table, ()) if c not in have]
