"""Guards for a dashboard shared on a network: typed paths stay inside the workspace root, uploads are capped."""

from __future__ import annotations

import os
from pathlib import Path

from analysis import settings as environment
from analysis.errors import InputError
from analysis.settings import DEFAULT_UPLOAD_MB

DEFAULT_UPLOAD_LIMIT_MB = DEFAULT_UPLOAD_MB


def resolve_inside(root: str | Path, typed: str) -> Path:
    """The path a user typed, resolved (symlinks included) and required to lie inside `root`.

    Relative paths are taken relative to `root`; `..`, absolute paths elsewhere and symlinks that lead
    out are refused with an `InputError`, so a shared server never reads files outside its data.

    >>> import tempfile; base = Path(tempfile.mkdtemp())
    >>> resolve_inside(base, "runs/a.json") == (base / "runs" / "a.json").resolve()
    True
    >>> resolve_inside(base, "../etc/passwd")
    Traceback (most recent call last):
    ...
    analysis.errors.InputError: ../etc/passwd [format: path]: path leads outside the workspace root ...
    """
    base = Path(root).resolve()
    text = typed.strip()
    if not text or "\x00" in text:
        raise InputError(typed or "<empty>", "path", "path is empty or holds a NUL character")
    candidate = Path(os.path.expanduser(text)) if text.startswith("~") else Path(text)
    resolved = (candidate if candidate.is_absolute() else base / candidate).resolve()
    if resolved != base and base not in resolved.parents:
        raise InputError(typed, "path", f"path leads outside the workspace root {base}; use a path inside it")
    return resolved


def workspace_root() -> Path:
    """Where typed paths may lead: `DST_WORKSPACE_ROOT`, else the folder the server was started in."""
    return Path(environment.raw("DST_WORKSPACE_ROOT") or os.getcwd()).resolve()


def upload_limit_bytes(settings: dict | None = None) -> int:
    """The upload cap: `DST_MAX_UPLOAD_MB`, else `[dashboard] max_upload_mb` in the manifest, else 200 MB."""
    configured: object = None
    if settings and isinstance(settings.get("dashboard"), dict):
        configured = settings["dashboard"].get("max_upload_mb")
    set_here = environment.raw("DST_MAX_UPLOAD_MB")
    if set_here is not None:
        configured = set_here
    try:
        megabytes = float(str(configured)) if configured is not None else DEFAULT_UPLOAD_LIMIT_MB
    except (TypeError, ValueError):
        megabytes = DEFAULT_UPLOAD_LIMIT_MB
    return int(megabytes * 1024 * 1024)


def _size(n_bytes: float) -> str:
    """A size as people read it: MB from a tenth of one, else kB (a 0.001 MB limit is not "0 MB")."""
    return f"{n_bytes / 1024**2:,.4g} MB" if n_bytes >= 1024**2 / 10 else f"{n_bytes / 1024:,.4g} kB"


def check_upload_size(name: str, size: int, limit: int) -> None:
    """Refuse an upload over the limit before parsing it (the upload form calls it for each file).

    >>> check_upload_size("run.jsonl", 4096, 1048)
    Traceback (most recent call last):
    ...
    analysis.errors.InputError: run.jsonl [format: upload]: file is 4 kB, over the upload limit of 1.023 kB
    """
    if size > limit:
        raise InputError(name, "upload", f"file is {_size(size)}, over the upload limit of {_size(limit)}")
