"""Cross-run tables as DuckDB queries over the stored Parquet files: only the runs and columns asked for.

The numbers are the in-memory code's (stored per run by `analysis.store.parts`); DuckDB selects, filters,
sorts and sums them. Intervals are the dialogue bootstrap of `analysis.stats` on the per-dialogue parts
DuckDB pulls (`d`, numerator, denominator per dialogue): the same resample matrix for the same seed, so
the same interval as `stats.bootstrap_ci` on the whole run, without loading its turns.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa

from analysis import registry as R
from analysis import stats
from analysis.errors import InputError
from analysis.store.entries import Entry
from analysis.store.parts import GCA_PARTS, METRIC_COLUMNS, headline_bounds, jga_bounds
from analysis.views import INTERVAL_RESAMPLES, META_COLUMNS, PICKER_COLUMNS, PICKER_SORTS


def connect() -> duckdb.DuckDBPyConnection:
    """A connection of its own to this process's in-memory DuckDB database (no database file; the Parquet
    files are the data): a cursor of one database opened once per process, instead of a database per query
    (15 ms each, about 200 on the pages of one AppTest file). Each caller gets its own cursor, as DuckDB asks
    of threads sharing a database; a forked child opens its own database (DuckDB's are not fork-safe)."""
    global _DATABASE
    with _DATABASE_LOCK:
        if _DATABASE is None or _DATABASE[0] != os.getpid():
            # nothing kept between queries: a store file rewritten in place is read afresh by the next one
            config: dict[str, str | bool | int | float | list[str]] = {
                "threads": max(1, min(2, _cpus())),
                "enable_external_file_cache": False,
            }
            _DATABASE = (os.getpid(), duckdb.connect(config=config))
        return _DATABASE[1].cursor()


_DATABASE: tuple[int, duckdb.DuckDBPyConnection] | None = None  # (the process that opened it, the database)
_DATABASE_LOCK = threading.Lock()


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _files(entries: Sequence[Entry], table: str) -> list[str]:
    return [str(e.path(table)) for e in entries]


_STR_TYPES = {
    pa.string(): pd.StringDtype("pyarrow", na_value=np.nan),
    pa.large_string(): pd.StringDtype("pyarrow", na_value=np.nan),
}


def _read(
    con: duckdb.DuckDBPyConnection,
    entries: Sequence[Entry],
    table: str,
    sql: str,
    params: Any = None,
    *,
    via_arrow: bool = False,
) -> pd.DataFrame:
    """`sql` with `t` the table's files of `entries`, plus `run`: the entry's position in `entries` (an
    integer: cheaper to carry over a million dialogue rows than the key). The files' own columns keep
    their names, `convention` included (the Hive path's partition is not read as a column here);
    `file_row_number` is a row's place in its file (a join keeps no order: sort on `run, file_row_number`).
    `via_arrow`: fetched as an Arrow table, strings as pandas' `str` (what `.df()` gives them), at less
    than half `.df()`'s cost; when a column is of another type, or numbers or booleans hold a null
    (`.df()` and Arrow convert those differently), the query is fetched by `.df()` instead."""
    if not entries:
        raise ValueError("no runs to query")
    files = _files(entries, table)
    # Each file is read once and its rows joined to every position that lists it: an entry listed twice
    # (two positions) has its rows once under each, never twice under both.
    source = (
        "read_parquet($sources, hive_partitioning = false, union_by_name = true, filename = true, "
        "file_row_number = true)"
    )
    positions = "(SELECT unnest($files) AS filename, generate_subscripts($files, 1) - 1 AS run)"
    query = f"WITH t AS (SELECT * EXCLUDE (filename) FROM {source} JOIN {positions} USING (filename)) {sql}"
    bound = {"files": files, "sources": list(dict.fromkeys(files)), **(params or {})}
    try:
        if via_arrow:
            table_ = con.sql(query, params=bound).to_arrow_table()
            if all(_arrow_as_df(column) for column in table_.columns):
                return table_.to_pandas(types_mapper=_STR_TYPES.get)
        return con.execute(query, bound).df()
    except duckdb.Error as exc:  # a file changed under us; the store's checks run before, so rare
        raise _unqueryable(files[0], exc) from exc


def _arrow_as_df(column: pa.ChunkedArray) -> bool:
    """Whether Arrow's pandas conversion of the column (strings mapped by `_STR_TYPES`) equals `.df()`'s:
    strings, and numbers or booleans without a null."""
    kind = column.type
    if kind in _STR_TYPES:
        return True
    numeric = pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind)
    return numeric and column.null_count == 0


def leaderboard(
    entries: Sequence[Entry],
    *,
    sort: str | None = None,
    resamples: int = INTERVAL_RESAMPLES,
    intervals: Sequence[str] | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
) -> pd.DataFrame:
    """`views.leaderboard` of the stored runs: one row per run (in `entries` order, or sorted by `sort`,
    best first), every headline metric, the 95% interval of `sort` (`<sort>_low`, `<sort>_high`), and of
    each metric of `intervals` too (e.g. `registry.NAMES` for all). Runs under the SGD convention are
    not computed here (their JGA/AGA are the SGD evaluator's)."""
    con = con or connect()
    # A metric without a dialogue bootstrap (DSTC10's value/none P/R/F1) has no interval columns.
    names = list(dict.fromkeys([*([sort] if sort in stats.METRICS else []), *(intervals or [])]))
    names = [name for name in names if name in stats.METRICS or name not in R.NAMES]
    stored = resamples == INTERVAL_RESAMPLES and bool(names) and all(n in stats.METRICS for n in names)
    # The intervals asked for, out of each run's stored `bounds` (listed in `stats.METRICS` order, checked;
    # DuckDB counts from 1): the rest of that column is not fetched. Picked by position, not by a filter
    # per metric, which costs DuckDB about 0.3 s more over 1,000 runs.
    at = {name: i + 1 for i, name in enumerate(stats.METRICS)}
    picked = "".join(
        f", bounds[{at[name]}].{side} AS {METRIC_COLUMNS[name]}__{side}"
        for name in (names if stored else [])
        for side in ("low", "high")
    )
    if stored:
        picked += ", list_transform(bounds, lambda b: b.metric) = $bounds_order AS bounds_in_order"
    params = {"bounds_order": list(stats.METRICS)} if stored else None
    board = _read(con, entries, "runs", f"SELECT * EXCLUDE (bounds){picked} FROM t", params)
    positions = pd.DataFrame({"run": np.arange(len(entries), dtype="int64")})
    board = positions.merge(board, on="run", how="left").sort_values("run", kind="stable")
    board = board.rename(columns={**{v: k for k, v in METRIC_COLUMNS.items()}, "convention_label": "convention"})
    if "seed" in board:  # as a frame of Python ints and Nones holds it: int64, float64 with NaN, or all None
        seed = board["seed"]
        if seed.isna().all():
            board["seed"] = pd.Series([None] * len(seed), index=seed.index, dtype=object)
        else:
            board["seed"] = seed.astype("int64") if not seed.isna().any() else seed.astype("float64")
    if resamples > 0 and names:
        bounds = (stored and _stored_bounds(board, names, resamples)) or intervals_of(
            entries, names, resamples=resamples, con=con
        )
        for name in names:
            low, high = bounds[name]
            board[f"{name}_low"] = low
            board[f"{name}_high"] = high
    front = [*META_COLUMNS, "convention", "n_dialogues", "n_turns", *R.NAMES]
    interval_columns = [f"{n}_{side}" for n in names for side in ("low", "high") if resamples > 0]
    columns = [*front, *interval_columns, "not_applicable", "n_warnings", "warnings"]
    board = board[[c for c in columns if c in board.columns]].reset_index(drop=True)
    if sort is not None and len(board):
        if sort not in board.columns:
            raise ValueError(f"sort has to be a leaderboard column, got {sort!r}")
        best_first = R.get(sort).higher_is_better if sort in R.LABELS else True
        board = board.sort_values(sort, ascending=not best_first, kind="stable", na_position="last")
        board = board.reset_index(drop=True)
    return board


def _stored_bounds(
    board: pd.DataFrame, names: Sequence[str], resamples: int
) -> dict[str, tuple[np.ndarray, np.ndarray]] | None:
    """The intervals of `names` out of each run's stored `bounds` (computed when it was scored, from the same
    parts by `headline_bounds`, as `intervals_of` computes them; picked as `<column>__low`, `__high`), when
    every run has them for `resamples`, in `stats.METRICS` order; else None."""
    # A row without them (a null under `union_by_name`) compares unequal as a float NaN, never skipped as NA.
    if "bounds_resamples" not in board or not bool((board["bounds_resamples"].astype("float64") == resamples).all()):
        return None
    if not bool(board["bounds_in_order"].eq(True).all()):
        return None
    return {
        name: (
            board[f"{METRIC_COLUMNS[name]}__low"].to_numpy(dtype="float64", na_value=np.nan),
            board[f"{METRIC_COLUMNS[name]}__high"].to_numpy(dtype="float64", na_value=np.nan),
        )
        for name in names
    }


def intervals_of(
    entries: Sequence[Entry],
    metrics: Sequence[str],
    *,
    resamples: int = INTERVAL_RESAMPLES,
    level: float = 0.95,
    seed: int = 0,
    con: duckdb.DuckDBPyConnection | None = None,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per metric: (low, high) arrays, one value per entry, of `stats.bootstrap_ci(run, metric)`; from the
    per-dialogue parts only. Runs with the same number of dialogues share one resample matrix product."""
    con = con or connect()
    columns = ["run", "d"]
    for name in metrics:
        if name not in stats.METRICS:
            raise ValueError(f"metric has to be one of {', '.join(stats.METRICS)}, got {name!r}")
        col = METRIC_COLUMNS[name]
        columns += list(GCA_PARTS) if R.get(name).interval == "gca" else [f"{col}__num", f"{col}__den"]
    selected = ", ".join(dict.fromkeys(columns))
    # Numbers only, never null (a run's parts are counts and sums): Arrow's fetch gives `.df()`'s frame for less.
    parts = _read(con, entries, "dialogues", f"SELECT {selected} FROM t ORDER BY run, d", via_arrow=True)
    return headline_bounds(parts, len(entries), metrics, resamples=resamples, level=level, seed=seed)


def slot_tables(entries: Sequence[Entry], *, con: duckdb.DuckDBPyConnection | None = None) -> pd.DataFrame:
    """`views.slot_table` of each run, one frame (with `run_id`), runs in `entries` order."""
    con = con or connect()
    table = _read(con, entries, "slot_table", "SELECT * EXCLUDE (file_row_number) FROM t ORDER BY run, file_row_number")
    return table.drop(columns=["run"]).reset_index(drop=True)


def domain_jga(
    entries: Sequence[Entry], *, resamples: int = INTERVAL_RESAMPLES, con: duckdb.DuckDBPyConnection | None = None
) -> pd.DataFrame:
    """`views.domain_jga` of the runs: per run and domain, JGA, `n_turns` and its 95% interval
    (`jga_low`, `jga_high`) from the per-(domain, dialogue) parts."""
    return _jga_by(entries, ("domains", "domain_parts"), "domain", resamples, con or connect())


def depth_jga(
    entries: Sequence[Entry], *, resamples: int = INTERVAL_RESAMPLES, con: duckdb.DuckDBPyConnection | None = None
) -> pd.DataFrame:
    """`views.depth_jga` of the runs: per run and turn depth, JGA, `n_turns` and its 95% interval
    (`jga_low`, `jga_high`) from the per-(turn index, dialogue) parts."""
    return _jga_by(entries, ("depth", "depth_parts"), "turn_index", resamples, con or connect())


def depth_metrics(entries: Sequence[Entry], *, con: duckdb.DuckDBPyConnection | None = None) -> pd.DataFrame:
    """`views.depth_metrics` of the runs: per run and turn depth, `n_turns`, JGA and the metrics beside it."""
    con = con or connect()
    sql = "SELECT * EXCLUDE (file_row_number) FROM t ORDER BY run, file_row_number"
    return _read(con, entries, "depth_metrics", sql).drop(columns=["run"]).reset_index(drop=True)


def _jga_by(
    entries: Sequence[Entry], tables: tuple[str, str], by: str, resamples: int, con: duckdb.DuckDBPyConnection
) -> pd.DataFrame:
    """The stored table (JGA per run and `by`) with its 95% dialogue-bootstrap interval: as stored (each
    run's, computed when it was scored) for `INTERVAL_RESAMPLES`, else from the parts table (`tables`: both
    names) by `parts.jga_bounds`."""
    table, parts_table = tables
    frame = _read(con, entries, table, "SELECT * EXCLUDE (file_row_number) FROM t ORDER BY run, file_row_number")
    stored = {"jga_low", "jga_high"} <= set(frame.columns)
    if resamples == INTERVAL_RESAMPLES and stored:
        return frame.drop(columns=["run"]).reset_index(drop=True)
    frame = frame.drop(columns=[c for c in ("jga_low", "jga_high") if c in frame.columns])
    if resamples > 0 and len(frame):
        sql = f"SELECT run, {by}, d, num, den FROM t ORDER BY run, {by}, d"
        parts = _read(con, entries, parts_table, sql)
        n_dialogues = dict(
            zip(
                *_read(con, entries, "runs", "SELECT run, n_dialogues FROM t").to_dict("list").values(),
                strict=True,
            )
        )
        found = jga_bounds(parts, by, n_dialogues, resamples)
        if len(found):
            found = found.astype({by: frame[by].dtype})
            frame = frame.merge(found, on=["run", by], how="left")
    return frame.drop(columns=["run"]).reset_index(drop=True)


def error_items(entries: Sequence[Entry], *, con: duckdb.DuckDBPyConnection | None = None) -> pd.DataFrame:
    """`analysis.review.analysis.error_items` of the stored runs, one frame, runs in `entries` order: the
    error rows of their `slots` tables (only the columns the review reads), in each file's order."""
    from analysis.outcomes import ERROR_OUTCOMES
    from analysis.review.analysis import ERROR_ITEM_READ, as_error_items
    from analysis.scoring import OUTCOME_DTYPE

    con = con or connect()
    columns = ", ".join(ERROR_ITEM_READ)
    sql = f"SELECT {columns} FROM t WHERE outcome IN (SELECT unnest($outcomes)) ORDER BY run, file_row_number"
    rows = _read(con, entries, "slots", sql, {"outcomes": list(ERROR_OUTCOMES)}, via_arrow=True)
    rows["outcome"] = pd.Categorical(rows["outcome"], dtype=OUTCOME_DTYPE)
    datasets = {e.run_id: e.header["meta"]["dataset"] for e in entries}
    return as_error_items(rows, datasets)


def first_error_distribution(entries: Sequence[Entry], *, con: duckdb.DuckDBPyConnection | None = None) -> pd.DataFrame:
    """`views.first_error_distribution` of the stored runs, from their picker tables' first error turns."""
    from analysis.views import first_error_counts

    con = con or connect()
    sql = "SELECT run_id, dialogue_id, first_error_turn FROM t ORDER BY run, file_row_number"
    return first_error_counts(_read(con, entries, "picker", sql))


def attribute_columns(entries: Sequence[Entry], *, con: duckdb.DuckDBPyConnection | None = None) -> list[str]:
    """`views.attribute_columns` of the stored runs: their turns tables' columns beyond the standard ones
    (read from each file's schema) with at most 100 distinct values (counted by DuckDB, nulls left out as
    pandas' `nunique` does), in order of first appearance."""
    from analysis.views import STANDARD_TURN_COLUMNS

    con = con or connect()
    names: dict[str, None] = {}
    for entry in entries:
        counted = _counted(entry)
        if counted is not None:  # counted when the run was scored (`entries.save`), as the view counts
            names.update(dict.fromkeys(c for c, n in counted.items() if n <= 100))
            continue
        extra = [c for c in _turn_columns(entry) if c not in STANDARD_TURN_COLUMNS]
        if not extra:
            continue
        path = entry.path("turns")
        counts = ", ".join(f"count(DISTINCT {_quoted(c)})" for c in extra)
        try:
            found = con.execute(f"SELECT {counts} FROM read_parquet($file)", {"file": str(path)}).fetchone()
        except duckdb.Error as exc:
            raise _unqueryable(path, exc) from exc
        for column, n in zip(extra, found or (), strict=True):
            if n <= 100:
                names[column] = None
    return list(names)


def jga_by_attribute(
    entries: Sequence[Entry], *, attribute: str, con: duckdb.DuckDBPyConnection | None = None
) -> pd.DataFrame:
    """`views.jga_by_attribute` of the stored runs: the view itself (the metrics module's JGA), run by run on
    the four turn columns it reads (`run_id`, `tid`, the attribute, `joint_correct`) of the stored turns
    tables, not on the runs read back whole. Runs whose turns have no such column are left out, as there."""
    from analysis.conventions import get_convention
    from analysis.metrics import SLOT_LEVEL
    from analysis.scoring import Scored
    from analysis.views import jga_by_attribute as view

    if attribute in SLOT_LEVEL:
        raise ValueError(f"{attribute} is a slot-level column, not a dialogue attribute")
    con = con or connect()
    have = [entry for entry in entries if _has_column(entry, attribute)]
    if not have:
        return view([], attribute=attribute)
    sql = f"SELECT run, run_id, tid, {_quoted(attribute)}, joint_correct FROM t ORDER BY run, file_row_number"
    turns = _read(con, have, "turns", sql, via_arrow=True)

    # One call over all runs (the view groups by run and value, so each run's rows are its own call's),
    # then the runs put back in `entries` order, as the view lists them run by run.
    def scored(rows: pd.DataFrame) -> Scored:
        return Scored(get_convention(have[0].convention), [], rows.drop(columns="run"), pd.DataFrame(), pd.DataFrame())

    if len({e.run_id for e in have}) < len(have):  # one run id twice: run by run, as the view would
        return view([scored(part) for _, part in turns.groupby("run", sort=True)], attribute=attribute)
    table = view([scored(turns)], attribute=attribute)
    if not len(table):
        return table
    position = turns.drop_duplicates("run_id").set_index("run_id")["run"]
    order = np.argsort(table["run_id"].map(position).to_numpy(), kind="stable")
    return table.iloc[order].reset_index(drop=True)


def _has_column(entry: Entry, column: str) -> bool:
    """Whether the entry's turns table has `column`: an attribute its header counted when it was scored
    needs no file opened; any other name is looked up in the file's schema."""
    counted = _counted(entry)
    return (counted is not None and column in counted) or column in _turn_columns(entry)


def _counted(entry: Entry) -> dict[str, int] | None:
    """The attribute counts the entry's header holds (`entries.save`), or None when it holds none, or
    anything but names and counts (then the turns file itself is read)."""
    counted = entry.header.get("attributes")
    if not isinstance(counted, dict):
        return None
    if not all(isinstance(c, str) and type(n) is int for c, n in counted.items()):
        return None
    return counted


def _turn_columns(entry: Entry) -> list[str]:
    """The columns of the entry's stored turns table, read from its file's schema (no row read)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = entry.path("turns")
    try:
        return list(pq.read_schema(path).names)
    except (OSError, pa.ArrowException) as exc:
        raise _unqueryable(path, exc) from exc


def _unqueryable(path: object, exc: Exception) -> InputError:
    """The one error a store file that cannot be read gives (as `_read` words it)."""
    return InputError(str(path), "parquet", f"the score store cannot be queried: {' '.join(str(exc).split())}")


def _quoted(name: str) -> str:
    """A column name as a SQL identifier: in double quotes, a quote inside doubled (a data file's attribute
    name may hold any character)."""
    return '"' + name.replace('"', '""') + '"'


def pick_dialogues(
    entry: Entry,
    *,
    search: str = "",
    sort: str = "file order",
    first_error: tuple[int, int] | None = None,
    min_errors: int = 0,
    min_run: int = 0,
    con: duckdb.DuckDBPyConnection | None = None,
) -> pd.DataFrame:
    """`views.pick_dialogues` of one stored run as one DuckDB query: the stored picker table filtered,
    narrowed by a literal, case-insensitive `search` over utterances, values and slot names, and sorted."""
    if sort not in PICKER_SORTS:
        raise ValueError(f"sort has to be one of {list(PICKER_SORTS)}, got {sort!r}")
    con = con or connect()
    where = ["error_turns >= $min_errors", "compounding_run >= $min_run"]
    params: dict[str, Any] = {"min_errors": int(min_errors), "min_run": int(min_run)}
    if first_error is not None:
        where.append("first_error_turn BETWEEN $low AND $high")
        params |= {"low": float(first_error[0]), "high": float(first_error[1])}
    text = search.strip()
    if text:
        params |= {"text": text.lower(), "turns": str(entry.path("turns")), "slots": str(entry.path("slots"))}
        where.append(
            """dialogue_id IN (
                SELECT dialogue_id FROM read_parquet($turns)
                WHERE contains(lower(coalesce("user", '')), $text) OR contains(lower(coalesce("system", '')), $text)
                UNION
                SELECT dialogue_id FROM read_parquet($slots)
                WHERE contains(lower(coalesce(gold_display, '')), $text)
                   OR contains(lower(coalesce(pred_display, '')), $text)
                   OR contains(lower(domain || '-' || slot), $text))"""
        )
    order = PICKER_SORTS[sort]
    by = "position"
    if order is not None:
        column, ascending = order
        by = f"{column} {'ASC' if ascending else 'DESC'} NULLS LAST, position"
    columns = ", ".join(PICKER_COLUMNS)
    sql = f"SELECT {columns} FROM t WHERE {' AND '.join(where)} ORDER BY {by}"
    table = _read(con, [entry], "picker", sql, params)
    return table.reset_index(drop=True)


def run_table(entries: Sequence[Entry], *, con: duckdb.DuckDBPyConnection | None = None) -> pd.DataFrame:
    """`views.run_table` of the stored runs (metadata, `convention`: the convention's name) plus their
    `n_turns` and `n_dialogues`, one row per run in `entries` order: what captions and comparability
    warnings need, from the `runs` table alone."""
    con = con or connect()
    meta = ", ".join(f'"{c}"' for c in META_COLUMNS)
    table = _read(
        con, entries, "runs", f"SELECT {meta}, convention_name AS convention, n_turns, n_dialogues FROM t ORDER BY run"
    )
    if "seed" in table:  # as `views.run_table` holds it: Python ints, None where a run has none
        table["seed"] = pd.Series([None if pd.isna(s) else int(s) for s in table["seed"]], dtype=object)
    return table.reset_index(drop=True)
