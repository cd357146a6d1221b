"""The store writes a table under the Arrow schema kept for its columns' names and dtypes
(`entries._arrow_table`) instead of asking `pa.Table.from_pandas` for it each time (issue 43: about 6 ms a
run). The bytes must be the very bytes `from_pandas` gives, for every table of a run, and a table whose
dtypes differ in any way (a categorical's categories, the columns' own dtype, attrs) gets its own schema."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from analysis.scoring import score_run
from analysis.store import entries
from analysis.workspace import load_entry, read_manifest
from tests.conftest import ROOT

DEMO = ROOT / "data" / "demo" / "workspace.toml"


def _from_pandas_bytes(frame: pd.DataFrame, bare: bool) -> bytes:
    entries._SCHEMAS.clear()
    return entries._parquet_bytes(frame, bare=bare)[0]


@pytest.mark.parametrize(
    ("name", "convention"),
    [
        ("simulated-A-mwz-en-predicted", None),
        ("simulated-B-mwz-en-predicted-s1", "mwzeval"),
        ("crosswoz-rule-dst", None),
    ],
)
def test_every_table_of_a_run_is_written_as_from_pandas_writes_it(name, convention):
    entry = {e.name: e for e in read_manifest(DEMO).entries}[name]
    tables = entries._tables(score_run(load_entry(entry), convention), "0" * 64)
    for table, frame in tables.items():
        bare = table in entries.BARE_TABLES
        want = _from_pandas_bytes(frame, bare)
        assert entries._SCHEMAS, "the first write keeps the schema"
        again = entries._parquet_bytes(frame, bare=bare)[0]  # under the kept schema
        assert again == want, table
        # Another run's table of the same shape: other values, written under the kept schema.
        shuffled = frame.iloc[::-1].reset_index(drop=True)
        kept = entries._parquet_bytes(shuffled, bare=bare)[0]
        assert kept == _from_pandas_bytes(shuffled, bare), table


def _categorical(categories: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"x": pd.Categorical(["a", "b", None], categories=categories), "y": [1.0, np.nan, 3.0]})


def test_a_table_whose_dtypes_differ_gets_its_own_schema():
    entries._SCHEMAS.clear()
    two = entries._parquet_bytes(_categorical(["a", "b"]))[0]
    three = entries._parquet_bytes(_categorical(["a", "b", "c"]))[0]
    assert three == _from_pandas_bytes(_categorical(["a", "b", "c"]), False)
    assert three != two
    table = pa.Table.from_pandas(_categorical(["a", "b", "c"]), preserve_index=False)
    assert table.column("y").null_count == 1  # NaN is null, as from_pandas makes it


def test_attrs_and_other_indexes_are_left_to_from_pandas():
    frame = _categorical(["a", "b"])
    entries._SCHEMAS.clear()
    entries._parquet_bytes(frame)
    with_attrs = frame.copy()
    with_attrs.attrs["note"] = "kept in pandas' metadata"
    assert entries._parquet_bytes(with_attrs)[0] == _from_pandas_bytes(with_attrs, False)
    indexed = frame.set_axis(["p", "q", "r"])
    assert entries._parquet_bytes(indexed)[0] == _from_pandas_bytes(indexed, False)
    text_columns = frame.copy()
    text_columns.columns = pd.Index(["x", "y"], dtype="str")
    entries._parquet_bytes(frame)
    assert entries._parquet_bytes(text_columns)[0] == _from_pandas_bytes(text_columns, False)
