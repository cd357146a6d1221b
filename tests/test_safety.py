"""Typed paths stay inside the workspace root; uploads over the limit are refused before parsing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from analysis.errors import InputError
from analysis.safety import check_upload_size, resolve_inside, upload_limit_bytes


def test_paths_inside_the_root_resolve(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    assert resolve_inside(tmp_path, "runs/a.json") == (tmp_path / "runs" / "a.json").resolve()
    assert resolve_inside(tmp_path, str(tmp_path / "runs")) == (tmp_path / "runs").resolve()
    assert resolve_inside(tmp_path, "runs/../runs/b.json").name == "b.json"


@pytest.mark.parametrize("typed", ["../outside.json", "/etc/passwd", "runs/../../x", "~/.ssh/id_rsa", "", "a\x00b"])
def test_paths_leaving_the_root_are_refused(tmp_path: Path, typed: str) -> None:
    with pytest.raises(InputError, match=r"\[format: path\]"):
        resolve_inside(tmp_path / "root", typed)


def test_symlinks_out_of_the_root_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    secret = tmp_path / "secret.json"
    secret.write_text("{}")
    os.symlink(secret, root / "link.json")
    with pytest.raises(InputError, match="outside the workspace root"):
        resolve_inside(root, "link.json")


def test_upload_limit(monkeypatch) -> None:
    assert upload_limit_bytes() == 200 * 1024 * 1024
    assert upload_limit_bytes({"dashboard": {"max_upload_mb": 5}}) == 5 * 1024 * 1024
    monkeypatch.setenv("DST_MAX_UPLOAD_MB", "1")
    assert upload_limit_bytes({"dashboard": {"max_upload_mb": 5}}) == 1024 * 1024
    with pytest.raises(InputError, match="over the upload limit of 1 MB"):
        check_upload_size("big.json", 2 * 1024 * 1024, upload_limit_bytes())
    check_upload_size("small.json", 10, upload_limit_bytes())
