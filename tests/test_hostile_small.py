"""Issue 40's smaller faults and input sizes: each hostile or careless input gives one line (or is read), never a hang or an
error box. (CR-only JSON Lines and a NUL in a CSV slot name are corpus cases in tests/malformed.)"""

from __future__ import annotations

import copy
import gzip
import importlib.util
import json
import os
import threading
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import test_sgd as sgd
from test_fewjoint import PREDS, write_conll, write_jsonl

from analysis.errors import InputError
from analysis.fewjoint.predictions import read_fewjoint_predictions
from analysis.loading import load_run
from analysis.review.store import AnnotationStore
from analysis.sgd import read_dialogues
from analysis.workspace import read_manifest
from ui import data as ui_data
from ui.review import import_upload

ROOT = Path(__file__).resolve().parents[1]


def _within(seconds: float, action: Callable[[], Any]) -> Any:
    """`action()`'s result, failing (not hanging) when it takes longer than `seconds`."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = action()
        except BaseException as exc:  # handed to the test thread
            out["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still waiting after {seconds} s"
    if "error" in out:
        raise out["error"]
    return out["value"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_fifo_typed_as_the_manifest_path_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "workspace.toml"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match=r"cannot read manifest: is a named pipe \(FIFO\)"):
        _within(10, lambda: read_manifest(fifo))
    shown = _within(10, lambda: ui_data.open_manifest(str(fifo)))  # what the sidebar shows
    assert shown == f"{fifo} [format: workspace]: cannot read manifest: is a named pipe (FIFO)"
    with pytest.raises(InputError, match=r"cannot read manifest: is a named pipe"):
        _within(10, lambda: read_manifest(tmp_path))  # a folder holding it: its workspace.toml


def test_a_missing_or_huge_manifest_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="manifest not found"):
        read_manifest(tmp_path / "none.toml")
    huge = tmp_path / "huge.toml"
    with huge.open("wb") as handle:
        handle.truncate(17 * 1024 * 1024)
    with pytest.raises(InputError, match=r"limit 16,777,216\)"):
        read_manifest(huge)


@pytest.mark.parametrize("writer", [write_jsonl, write_conll], ids=["jsonl", "conlleval"])
def test_fewjoint_predictions_are_read_from_gz(tmp_path: Path, writer: Callable[[Path, Any], Path]) -> None:
    plain = writer(tmp_path / "seed1.jsonl", PREDS)
    packed = tmp_path / "seed1.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    expected, fmt = read_fewjoint_predictions(plain)
    got, got_fmt = read_fewjoint_predictions(packed)
    assert got_fmt == fmt
    assert got.equals(expected)


def test_fewjoint_predictions_refuse_a_fifo_and_binary_in_one_line(tmp_path: Path) -> None:
    binary = tmp_path / "seed1.jsonl"
    binary.write_bytes(b"\x00\x01" * 100)
    with pytest.raises(InputError, match="file is binary"):
        read_fewjoint_predictions(binary)
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "seed2.jsonl"
        os.mkfifo(fifo)
        with pytest.raises(InputError, match="named pipe"):
            _within(10, lambda: read_fewjoint_predictions(fifo))


GOOD = {"item_key": "x", "dialogue_id": "d", "turn_index": 0, "reviewer": "r", "tags": []}
HOSTILE_IMPORTS: dict[str, tuple[bytes, str]] = {
    "nested.json": (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    "bigint.json": (b'{"annotations": [' + b"9" * 5000 + b"]}", "more than 4,300 digits"),
    "nan.json": (json.dumps([{**GOOD, "turn_index": float("nan")}]).encode(), "row 1"),
    "nul.json": (json.dumps([{**GOOD, "dataset": "a\x00"}]).encode(), "NUL character"),
    "latin1.json": ("é".encode("latin-1"), "cannot read JSON"),
    "binary.csv": (bytes(range(256)) * 10, "cannot read CSV"),
    "unclosed.csv": (b'item_key,dialogue_id,turn_index,reviewer,tags\n"x,d,0,r,\n', "cannot read CSV"),
    "empty.csv": (b"", "cannot read CSV"),
}


@pytest.mark.parametrize("name", list(HOSTILE_IMPORTS))
def test_a_hostile_annotation_import_is_one_line(tmp_path: Path, name: str) -> None:
    data, contains = HOSTILE_IMPORTS[name]
    with AnnotationStore(f"sqlite:///{tmp_path / 'annotations.sqlite'}") as store:
        kind, line = import_upload(store, name, data)
        assert kind == "error" and "\n" not in line, line
        assert line.startswith(f"{name} [format: annotations-"), line
        assert contains in line, line
        assert store.annotations().empty


def _sgd_directory(folder: Path, files: int, *, packed: bool = False) -> Path:
    """`files` dialogue files of one dialogue each, padded with spaces to about 10 kB unpacked."""
    folder.mkdir()
    for i in range(files):
        one = copy.deepcopy(sgd.GOLD)
        one["dialogue_id"] = f"{i}_00000"
        text = (json.dumps([one]) + " " * 10_000).encode()
        name = f"dialogues_{i + 1:03d}.json"
        if packed:
            (folder / (name + ".gz")).write_bytes(gzip.compress(text))
        else:
            (folder / name).write_bytes(text)
    return folder


@pytest.mark.parametrize("packed", [False, True], ids=["plain", "gz"])
def test_a_directory_of_files_is_bounded_in_total(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, packed: bool
) -> None:
    folder = _sgd_directory(tmp_path / "test", 14, packed=packed)
    assert len(read_dialogues(folder).dialogue_ids) == 14  # the defaults: read
    monkeypatch.setenv("DST_MAX_DIRECTORY_BYTES", str(100_000))  # each file is far under the per-file limits
    with pytest.raises(InputError) as caught:
        read_dialogues(folder)
    message = str(caught.value)
    assert message.startswith(f"{folder} [format: sgd]: the ")
    assert "is larger than the limit of 100,000 bytes (DST_MAX_DIRECTORY_BYTES; set it to allow more)" in message
    assert ("unpacked total" if packed else "total of the directory's 14 dialogue files") in message


def test_pred_deltas_that_would_grow_quadratically_are_refused_naming_the_limit(tmp_path: Path) -> None:
    """10,001 turns of one dialogue, each adding a slot: the cumulative states would hold n(n+1)/2 = 50 million
    rows (22 GB before the limit); refused in one line naming the file and the limit."""
    path = tmp_path / "deltas.jsonl"
    lines = (json.dumps(ours_line(t)) for t in range(10_001))
    path.write_text("\n".join(lines) + "\n")
    started = time.process_time()
    with pytest.raises(InputError) as caught:
        load_run(path, pred_deltas=True)
    assert str(caught.value) == (
        f"{path} [format: jsonl]: the turn-level changes accumulate into 50,015,001 cumulative state rows "
        "(limit 5,000,000)"
    )
    assert time.process_time() - started < 30


def ours_line(turn: int) -> dict[str, Any]:
    return {"dialogue_id": "d", "turn_index": turn, "gold": {}, "pred": {"hotel": {f"slot {turn}": "x"}}}


def _serve() -> Any:
    spec = importlib.util.spec_from_file_location("serve_script", ROOT / "scripts" / "serve.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_upload_is_capped_at_what_the_readers_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 190 MiB upload passed the 200 MB upload limit, was received whole, shipped to the parsing child and
    only then refused by the 64 MiB reader limit (+182 MB held after its session closed). The cap the
    browser and the server's streaming count enforce is now the smaller of the two."""
    for name in ("DST_MAX_UPLOAD_MB", "DST_MAX_FILE_BYTES"):
        monkeypatch.delenv(name, raising=False)
    assert ui_data.upload_limit_mb(None) == 64
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["server"]["maxUploadSize"] == 64
    serve = _serve()
    assert serve.upload_cap_mb(str(ROOT / "data" / "demo" / "workspace.toml")) == 64
    monkeypatch.setenv("DST_MAX_UPLOAD_MB", "10")
    assert ui_data.upload_limit_mb(None) == 10 and serve.upload_cap_mb("no such manifest") == 10
    monkeypatch.delenv("DST_MAX_UPLOAD_MB")
    monkeypatch.setenv("DST_MAX_FILE_BYTES", str(3 * 1024 * 1024))
    assert ui_data.upload_limit_mb(None) == 3 and serve.upload_cap_mb("no such manifest") == 3
