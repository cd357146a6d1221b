"""`scripts/serve.py` (what `make run` starts): the workspace warm-up, then the Streamlit server. It says on
stderr when the workspace is ready, or why it could not warm it, and starts the server either way."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from analysis.workspace import read_manifest

ROOT = Path(__file__).resolve().parents[1]
SERVE = ROOT / "scripts" / "serve.py"
DEMO = ROOT / "data" / "demo" / "workspace.toml"


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(workspace: Path) -> Iterator[tuple[str, list[str]]]:
    """The launcher on a free port; yields its URL and its stderr lines so far (a live list)."""
    port = _port()
    options = ["--server.headless", "true", "--server.address", "127.0.0.1", "--server.port", str(port)]
    process = subprocess.Popen(
        [sys.executable, str(SERVE), "--workspace", str(workspace), *options, "--browser.gatherUsageStats", "false"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(process.stderr or []), daemon=True).start()
    try:
        yield f"http://127.0.0.1:{port}", lines
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


def _line(lines: list[str], prefix: str, timeout: float = 240) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [line for line in lines if line.startswith(prefix)]
        if found:
            return found[0].strip()
        time.sleep(0.1)
    raise AssertionError(f"no line starting {prefix!r} within {timeout} s; stderr: {''.join(lines)[-2000:]}")


def _healthy(url: str, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=5) as response:
                return response.status == 200
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@pytest.mark.skipif(not DEMO.exists(), reason=f"the demo workspace {DEMO} is absent (make demo)")
def test_the_launcher_warms_every_run_of_the_workspace() -> None:
    runs = len(read_manifest(DEMO).entries)
    with serving(DEMO) as (url, lines):
        line = _line(lines, "dashboard: workspace")
        assert line.startswith(f"dashboard: workspace ready: {runs} runs; "), line
        assert "first views computed" in line and line.endswith("starting the server"), line
        assert _healthy(url)
        assert not any("Traceback" in entry for entry in lines), "".join(lines)


def test_a_broken_workspace_is_reported_and_the_server_keeps_serving(tmp_path: Path) -> None:
    manifest = tmp_path / "workspace.toml"
    manifest.write_text("[workspace\nname = 'broken'\n", encoding="utf-8")
    with serving(manifest) as (url, lines):
        line = _line(lines, "dashboard: workspace")
        assert line.startswith("dashboard: workspace not warmed: "), line
        assert str(manifest) in line  # the one-line error names the file
        assert _healthy(url)
