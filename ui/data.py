"""Loading and caching for the dashboard: runs keyed by file path + modification time (uploads by content
hash), scored per convention, and any `analysis` view cached on those keys. No widget is read here."""

from __future__ import annotations

import hashlib
import importlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import streamlit as st

from analysis.errors import InputError
from analysis.model import Run
from analysis.safety import upload_limit_bytes
from analysis.scoring import Scored, score_run
from analysis.workspace import RunEntry, Workspace, load_entry, read_manifest

DECLARED = "declared"


@dataclass(frozen=True)
class RunSource:
    """Where a run comes from and what it is; `*_stamp` (mtime+size or content hash) keys every cache."""

    run_id: str
    pred: str
    gold: str | None
    pred_stamp: str
    gold_stamp: str | None
    pred_format: str | None = None
    gold_format: str | None = None
    system: str = ""
    dataset: str = ""
    language: str = ""
    split: str = "test"
    history: str = "predicted"
    seed: int | None = None
    convention: str | None = None
    uploaded: bool = False

    @property
    def key(self) -> str:
        return repr(self)

    def entry(self) -> RunEntry:
        """The manifest entry this source stands for (an upload's paths are its file names)."""
        return RunEntry(
            name=self.run_id,
            pred=Path(self.pred),
            gold=Path(self.gold) if self.gold else None,
            system=self.system,
            dataset=self.dataset,
            language=self.language,
            split=self.split,
            history=self.history,
            seed=self.seed,
            convention=self.convention,
            format=self.pred_format,
            gold_format=self.gold_format,
        )


def file_stamp(path: str | Path | None) -> str | None:
    if path is None:
        return None
    try:
        stat = os.stat(path)
    except OSError:
        return "missing"
    return f"{stat.st_mtime_ns}:{stat.st_size}"


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def source_from_entry(entry: RunEntry) -> RunSource:
    return RunSource(
        run_id=entry.name,
        pred=str(entry.pred),
        gold=str(entry.gold) if entry.gold else None,
        pred_stamp=file_stamp(entry.pred) or "",
        gold_stamp=file_stamp(entry.gold),
        pred_format=entry.format,
        gold_format=entry.gold_format,
        system=entry.system,
        dataset=entry.dataset,
        language=entry.language,
        split=entry.split,
        history=entry.history,
        seed=entry.seed,
        convention=entry.convention,
    )


@st.cache_resource(show_spinner=False, max_entries=8)
def _upload_store() -> dict[str, bytes]:
    """Uploaded file contents by content hash (process-wide, so cached loads can find them)."""
    return {}


def remember_upload(data: bytes) -> str:
    digest = content_hash(data)
    _upload_store()[digest] = data
    return digest


@st.cache_resource(show_spinner=False, max_entries=16)
def _manifest(path: str, stamp: str | None) -> Workspace | str:
    try:
        return read_manifest(path)
    except InputError as exc:
        return str(exc)


def manifest_path(given: str | Path) -> str:
    """A manifest path as every cache keys it: absolute, relative ones taken from the working directory
    (`app.py --workspace` and `scripts/serve.py --workspace` must key the same workspace alike)."""
    path = Path(given)
    return str(path if path.is_absolute() else (Path.cwd() / path).resolve())


def open_manifest(path: str) -> Workspace | str:
    """The parsed manifest (cached on path + mtime), or its one-line error."""
    return _manifest(path, file_stamp(path))


@st.cache_resource(show_spinner=False, max_entries=128)
def _load(key: str, _source: RunSource) -> Run | str:
    source = _source
    store = _upload_store()
    try:
        return load_entry(
            source.entry(),
            pred_data=store.get(source.pred_stamp) if source.uploaded else None,
            gold_data=store.get(source.gold_stamp or "") if source.uploaded and source.gold_stamp else None,
        )
    except InputError as exc:
        return str(exc)
    except (ValueError, KeyError, TypeError) as exc:  # a file no declared format can read
        return f"{source.pred}: cannot load: {' '.join(str(exc).split())}"


def load(source: RunSource) -> Run | str:
    """The loaded run or its one-line error (both cached, so a failing file is read once)."""
    return _load(source.key, source)


def load_workspace(
    workspace: Workspace, before: Callable[[int, RunSource], None] | None = None
) -> tuple[dict[str, RunSource], dict[str, str]]:
    """Every run of the manifest loaded (cached): the sources of those that loaded, in manifest order,
    and the one-line error of each that failed. `before(i, source)` is called before each load."""
    sources: dict[str, RunSource] = {}
    failed: dict[str, str] = {}
    for i, entry in enumerate(workspace.entries):
        source = source_from_entry(entry)
        if before is not None:
            before(i, source)
        result = load(source)
        if isinstance(result, str):
            failed[entry.name] = result
        else:
            sources[entry.name] = source
    return sources, failed


def effective_convention(source: RunSource, choice: str) -> str | None:
    return source.convention if choice == DECLARED else choice


@st.cache_resource(show_spinner=False, max_entries=256)
def _score(key: str, convention: str | None, _source: RunSource) -> Scored:
    run = load(_source)
    if isinstance(run, str):
        raise InputError(_source.pred, None, run)
    return score_run(run, convention)


def scored(source: RunSource, choice: str) -> Scored:
    return _score(source.key, effective_convention(source, choice), source)


def function_named(name: str) -> Callable[..., Any]:
    """The function `module.qualname` names (cache keys carry names, not function objects)."""
    module, _, attr = name.rpartition(".")
    return getattr(importlib.import_module(module), attr)


@st.cache_data(show_spinner=False, max_entries=1024)
def _view(name: str, keys: tuple, params: tuple, _args: tuple) -> Any:
    def materialise(arg: Any) -> Any:
        if isinstance(arg, tuple) and arg and isinstance(arg[0], RunSource):
            return scored(arg[0], arg[1])
        if isinstance(arg, list):
            return [materialise(a) for a in arg]
        return arg

    return function_named(name)(*[materialise(a) for a in _args], **dict(params))


def compute(fn: Callable[..., Any], args: Sequence[Any], params: dict[str, Any], choice: str) -> Any:
    """`fn(*args, **params)` with run sources in `args` replaced by their scored tables; cached."""

    def key_of(arg: Any) -> Any:
        if isinstance(arg, tuple) and arg and isinstance(arg[0], RunSource):
            return (arg[0].key, effective_convention(arg[0], arg[1]))
        if isinstance(arg, list):
            return tuple(key_of(a) for a in arg)
        return arg

    keys = tuple(key_of(a) for a in args)
    frozen = tuple(sorted(params.items()))
    return _view(f"{fn.__module__}.{fn.__qualname__}", keys, frozen, tuple(args))


def upload_source(
    name: str, pred_name: str, pred_data: bytes, gold_name: str | None, gold_data: bytes | None, fmt: str | None
) -> RunSource:
    pred_hash = remember_upload(pred_data)
    gold_hash = remember_upload(gold_data) if gold_data is not None else None
    return RunSource(
        run_id=name,
        pred=pred_name,
        gold=gold_name,
        pred_stamp=pred_hash,
        gold_stamp=gold_hash,
        pred_format=fmt,
        system=name,
        uploaded=True,
    )


def upload_limit_mb(workspace: Workspace | None) -> float:
    """The upload limit in MB (`analysis.safety`: DST_MAX_UPLOAD_MB, the manifest's [dashboard]
    max_upload_mb, else 200)."""
    return upload_limit_bytes(workspace.settings if workspace is not None else None) / 1024 / 1024


def with_convention(source: RunSource, convention: str | None) -> RunSource:
    return replace(source, convention=convention)
