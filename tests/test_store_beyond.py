"""The score store beyond one machine (issue 43): docs/store.md's Spark and S3 blocks, run as written over a
stored workspace, give DuckDB's numbers; two dashboard servers started together on one empty store both
answer, and the store they filled is whole."""

from __future__ import annotations

import ast
import logging
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pytest

from analysis.scoring import score_run
from analysis.store import entries
from analysis.store import runs as store_runs
from analysis.workspace import load_entry, read_manifest
from tests.conftest import ROOT

DOCS = ROOT / "docs" / "store.md"
DEMO = ROOT / "data" / "demo" / "workspace.toml"
SERVE = ROOT / "scripts" / "serve.py"
DOCUMENTED_FOLDER = "/shared/dst-cache/scored"
COLUMNS = ["run_id", "n_turns", "jga", "slot_f1_micro", "fga_0_5"]


def documented_block(language: str, marker: str) -> str:
    """The first ```<language> block of docs/store.md that contains `marker`, as written there."""
    blocks = re.findall(rf"```{language}\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S)
    found = [block for block in blocks if marker in block]
    assert found, f"docs/store.md has no ```{language} block with {marker!r}"
    return found[0]


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                assert response.status == 200
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three demo runs scored under `exact` and saved into a store folder, as a workspace leaves them."""
    root = tmp_path_factory.mktemp("store") / "scored"
    manifest = {e.name: e for e in read_manifest(DEMO).entries}
    for name in ("crosswoz-rule-dst", "simulated-A-mwz-en-predicted", "simulated-B-mwz-en-predicted-s1"):
        assert entries.save(root, f"exact-{name}", score_run(load_entry(manifest[name]), "exact")) is not None
    return root


def duckdb_board(root: Path) -> pd.DataFrame:
    """docs/store.md's SQL block over the folder: the numbers every other path must give."""
    query = documented_block("sql", "read_parquet")
    assert DOCUMENTED_FOLDER in query
    return duckdb.connect().execute(query.replace(DOCUMENTED_FOLDER, str(root))).df()


@pytest.mark.slow
def test_spark_runs_the_documented_leaderboard_and_gets_duckdbs_numbers(stored: Path, tmp_path: Path) -> None:
    from pyspark.sql import SparkSession

    block = documented_block("python", "spark.read.parquet")
    assert f'"{DOCUMENTED_FOLDER}/runs"' in block
    # The block ends with `<board>.show()`: it is run as written, then the same expression is collected.
    shown = ast.parse(block).body[-1]
    assert isinstance(shown, ast.Expr) and isinstance(shown.value, ast.Call), block
    assert isinstance(shown.value.func, ast.Attribute) and shown.value.func.attr == "show", block
    ordered = ast.unparse(shown.value.func.value)
    spark = (
        SparkSession.builder.master("local[1]")
        .appName("dst-store-test")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.local.dir", str(tmp_path))
        .getOrCreate()
    )
    try:
        namespace: dict[str, Any] = {"spark": spark}
        exec(block.replace(DOCUMENTED_FOLDER, str(stored)), namespace)
        rows = [row.asDict() for row in eval(ordered, namespace).collect()]
    finally:
        spark.stop()
    want = duckdb_board(stored)
    assert len(want) == 3
    got = pd.DataFrame(rows, columns=COLUMNS)
    # The same rows in the same order (by JGA, highest first), the very same doubles.
    pd.testing.assert_frame_equal(got, want[COLUMNS], check_exact=True, check_dtype=False)


@contextmanager
def s3_endpoint() -> Iterator[str]:
    """moto's S3-compatible server on a free loopback port, stopped afterwards."""
    port = _port()
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        _wait(f"{url}/moto-api/")
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.mark.slow
def test_duckdb_over_s3_runs_the_documented_leaderboard(stored: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import s3fs

    block = documented_block("python", "s3fs")
    assert "s3://bucket/dst-cache/scored/runs/" in block
    with s3_endpoint() as url:
        for name, value in {
            "AWS_ENDPOINT_URL": url,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
        }.items():
            monkeypatch.setenv(name, value)
        bucket = s3fs.S3FileSystem(skip_instance_cache=True)
        bucket.mkdir("bucket")
        bucket.put(str(stored), "bucket/dst-cache/scored", recursive=True)
        assert len(bucket.glob("bucket/dst-cache/scored/runs/*/*/*.parquet")) == 3
        namespace: dict[str, Any] = {}
        exec(block, namespace)  # as written: nothing replaced
        board = namespace["board"]
    pd.testing.assert_frame_equal(board, duckdb_board(stored), check_exact=True)


# The runs the two servers race on: one of each reader and convention partition the demo has (a CrossWOZ JSON
# file, a JSONL file, an SGD directory scored under `sgd`). What is proven is two writers of the same entries
# at once, which every run gives; the demo's other ten runs only made each server's warm-up longer.
RACED = ("crosswoz-rule-dst", "simulated-A-mwz-en-predicted", "simulated-sgd-predicted")


def raced_workspace(folder: Path) -> Path:
    """The demo manifest cut to RACED, its paths absolute."""
    blocks = re.split(r"\n(?=\[\[)", DEMO.read_text(encoding="utf-8"))
    keep = ['[workspace]\nname = "Raced"\nconvention = "exact"\nallow_outside_root = true\n']
    for block in blocks:
        name = re.search(r'^name = "([^"]+)"', block, flags=re.M)
        if block.startswith("[[runs]]") and name is not None and name.group(1) in RACED:
            keep.append(block)
    text = re.sub(
        r'"([^"]+\.(?:gz|json|jsonl))"', lambda m: f'"{(DEMO.parent / m.group(1)).as_posix()}"', "\n".join(keep)
    )
    path = folder / "workspace.toml"
    path.write_text(text, encoding="utf-8")
    return path


@contextmanager
def serving(cache: Path, workspace: Path) -> Iterator[tuple[str, list[str], subprocess.Popen[str]]]:
    """scripts/serve.py on `workspace` and a free port, its store under `cache`."""
    port = _port()
    options = ["--server.headless", "true", "--server.address", "127.0.0.1", "--server.port", str(port)]
    process = subprocess.Popen(
        [sys.executable, str(SERVE), "--workspace", str(workspace), *options, "--browser.gatherUsageStats", "false"],
        cwd=ROOT,
        env={**os.environ, "DST_CACHE_DIR": str(cache)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(process.stderr or []), daemon=True).start()
    try:
        yield f"http://127.0.0.1:{port}", lines, process
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()


def _ready(lines: list[str], timeout: float = 400) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [line for line in lines if line.startswith("dashboard: workspace")]
        if found:
            return found[0].strip()
        time.sleep(0.2)
    raise AssertionError(f"no warm-up line within {timeout} s; stderr: {''.join(lines)[-2000:]}")


@pytest.mark.slow
def test_two_servers_on_one_shared_store_both_answer_and_leave_it_whole(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = tmp_path / "shared-cache"
    manifest = raced_workspace(tmp_path)
    items = read_manifest(manifest).entries
    assert [item.name for item in items] == list(RACED)
    with serving(cache, manifest) as (first, first_lines, _), serving(cache, manifest) as (second, second_lines, _):
        # Both start on the same empty store at once: both score and write the same runs.
        for lines in (first_lines, second_lines):
            line = _ready(lines)
            assert line.startswith(f"dashboard: workspace ready: {len(items)} runs"), line
        for url in (first, second):
            _wait(f"{url}/_stcore/health")
            _wait(f"{url}/")
        # Each server writes its scored runs in a background thread after it answers: wait for every header.
        headers = [
            entries.header_path(cache / "scored", store_runs.key(item, item.meta.convention, cache / "scored"))
            for item in items
        ]
        deadline = time.monotonic() + 300
        while not all(path.exists() for path in headers) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert all(path.exists() for path in headers), [
            i.name for i, h in zip(items, headers, strict=True) if not h.exists()
        ]
        for lines in (first_lines, second_lines):
            text = "".join(lines)
            assert "Traceback" not in text, text[-3000:]
            assert not re.search(r"damaged|removed|rescor", text, re.I), text[-3000:]
    root = cache / "scored"
    assert not list(root.rglob("*.tmp")), "a temporary file was left behind"
    # Every run's entry is whole: header, every table's size, row count and SHA-256 (a damaged one would be
    # removed with a warning; none is), and what it holds is this process's own scoring of the run.
    with caplog.at_level(logging.WARNING):
        for item in items:
            found = entries.lookup(root, store_runs.key(item, item.meta.convention, root), deep=True)
            assert found is not None, item.name
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    for item in items[:2]:
        back = entries.load(root, store_runs.key(item, item.meta.convention, root))
        assert back is not None
        fresh = score_run(load_entry(item), item.meta.convention)
        pd.testing.assert_frame_equal(back.turns, fresh.turns)
        pd.testing.assert_frame_equal(back.slots, fresh.slots)
    # A third start finds every run stored and writes nothing.
    before = {p: p.stat().st_mtime_ns for p in root.rglob("*.parquet")}
    for item in items:
        store_runs.ensure_all([item], item.meta.convention, workers=1, root=root)
    assert {p: p.stat().st_mtime_ns for p in root.rglob("*.parquet")} == before
