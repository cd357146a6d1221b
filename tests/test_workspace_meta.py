"""Run metadata is defined once (`analysis.model.RunInfo`) and passed whole: every field written in a
manifest reaches the manifest entry, the loaded and the scored run, the dashboard's `RunSource` (and its
cache key) and the run tables. The fields are iterated, so a field added to `RunInfo` and not wired
somewhere fails here."""

from __future__ import annotations

import json
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest

from analysis import views
from analysis.model import HISTORY_MODES, INFO_FIELDS, RunInfo, RunMeta
from analysis.scoring import score_run
from analysis.workspace import RUN_KEYS, RunEntry, load_entry, read_manifest
from ui import data

RUN_NAME = "declared-run"
FILE_CONVENTION = "exact"  # what the project's JSONL format is scored under when nothing is declared


def _declared() -> dict[str, Any]:
    """A value for every `RunInfo` field, each unlike its default (and the convention unlike the file's own),
    so a field that is dropped on the way shows as its default."""
    values: dict[str, Any] = {}
    for f in fields(RunInfo):
        if f.name == "run_id":
            value: Any = RUN_NAME
        elif f.name == "history":
            value = next(mode for mode in HISTORY_MODES if mode != f.default)
        elif f.name == "convention":
            value = "trade"
        elif f.type in ("str", "str | None"):
            value = f"{f.name} as declared"
        elif f.type in ("int", "int | None"):
            value = 7
        elif f.type in ("float", "float | None"):
            value = 0.5
        elif f.type == "bool":
            value = not f.default
        else:
            raise AssertionError(f"RunInfo.{f.name}: give this test a sample value of type {f.type}")
        assert value != f.default, f.name
        values[f.name] = value
    assert values["convention"] != FILE_CONVENTION
    return values


@pytest.fixture
def entry(tmp_path: Path) -> RunEntry:
    rows = [
        {
            "dialogue_id": f"MUL{d:04d}",
            "turn_index": t,
            "gold": {"hotel": {"area": "east", "stars": str(t + 1)}},
            "pred": {"hotel": {"area": "west" if d == 0 else "east", "stars": str(t + 1)}},
        }
        for d in range(3)
        for t in range(2)
    ]
    (tmp_path / "run.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    keys = {("name" if k == "run_id" else k): v for k, v in _declared().items()}
    lines = [f"{k} = {json.dumps(v)}" for k, v in keys.items()]  # a JSON string or integer is TOML too
    (tmp_path / "workspace.toml").write_text(
        '[workspace]\nname = "meta"\n\n[[runs]]\npred = "run.jsonl"\n' + "\n".join(lines) + "\n", encoding="utf-8"
    )
    return read_manifest(tmp_path / "workspace.toml").entries[0]


# Fields holding a path: the manifest's relative path arrives resolved against the manifest's folder.
PATH_FIELDS = frozenset({"schema", "train_schema"})
# Fields the run tables do not show (a file path is not what a run is): views.META_COLUMNS says so.
NOT_SHOWN = PATH_FIELDS


def _carries(got: Any, name: str, value: Any) -> bool:
    if name in PATH_FIELDS and isinstance(got, str) and got != value:
        return Path(got).is_absolute() and Path(got).name == value
    return got == value


def _mismatches(got: Any, where: str, skip: frozenset[str] = frozenset()) -> list[str]:
    """The declared fields `got` (an object, or a table row as a dict) does not carry as declared."""
    read = got.get if isinstance(got, dict) else lambda name, absent: getattr(got, name, absent)
    return [
        f"{where}: {name} = {read(name, '<absent>')!r}, declared {value!r}"
        for name, value in _declared().items()
        if name not in skip and not _carries(read(name, "<absent>"), name, value)
    ]


def test_every_field_is_a_manifest_key() -> None:
    assert {"name", *(name for name in INFO_FIELDS if name != "run_id")} <= RUN_KEYS


def test_the_loaded_metadata_extends_the_declared_one() -> None:
    """RunMeta adds what loading finds (the files and formats) and defines no field of its own twice."""
    assert issubclass(RunMeta, RunInfo)
    assert [f.name for f in fields(RunMeta)] == [*INFO_FIELDS, "sources", "formats"]


def test_every_field_reaches_the_entry_the_run_and_the_scored_run(entry: RunEntry) -> None:
    assert entry.name == RUN_NAME
    assert _mismatches(entry.meta, "entry.meta") == []
    run = load_entry(entry)
    assert _mismatches(run.meta, "run.meta") == []
    scored = score_run(run)
    assert _mismatches(scored.metas[0], "scored.metas[0]") == []
    assert scored.convention.name == entry.meta.convention


def test_every_field_reaches_the_dashboard_source_and_its_cache_key(entry: RunEntry) -> None:
    source = data.source_from_entry(entry)
    assert source.run_id == RUN_NAME
    assert _mismatches(source.meta, "source.meta") == []
    for f in fields(RunInfo):
        other = data.source_from_entry(replace(entry, meta=replace(entry.meta, **{f.name: f.default})))
        assert other.key != source.key, f"RunSource.key ignores {f.name}: runs differing in it would share a cache"
    run = data.load(source)
    assert not isinstance(run, str), run
    assert _mismatches(run.meta, "data.load(source).meta") == []
    assert data.scored(source, data.DECLARED).convention.name == entry.meta.convention


@pytest.mark.slow
def test_every_field_is_shown_in_the_run_table(entry: RunEntry) -> None:
    row = views.run_table([score_run(load_entry(entry))]).iloc[0].to_dict()
    assert _mismatches(row, "views.run_table", skip=NOT_SHOWN) == []
    assert not NOT_SHOWN & set(row) and not NOT_SHOWN & set(views.META_COLUMNS)
