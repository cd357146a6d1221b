"""Guards: typed paths stay inside the workspace root, uploads are capped (a dashboard shared on a network), and
the files the package wrote and reads back (score store, parse cache) are read only as regular files of bounded size."""

from __future__ import annotations

import os
import stat
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


# Files the package wrote itself and reads back (the score store, the parse cache): a regular file of
# bounded size, never a FIFO or a device, which would block the reader or never end.


class Damaged(ValueError):
    """A file of the score store or the parse cache that is not what was written there; the message says why."""


def file_kind(mode: int) -> str:
    """What a file that is not a regular one is, in a word."""
    kinds = (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def special(mode: int) -> str | None:
    """What a FIFO, socket or device is, in a word; None for a regular file or a folder."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return file_kind(mode)


def regular_size(path: Path) -> int:
    """The size of a regular file; `Damaged` for anything else (checked with `stat`, nothing opened);
    `FileNotFoundError` when absent."""
    mode = os.stat(path)
    if not stat.S_ISREG(mode.st_mode):
        raise Damaged(f"{path} is {file_kind(mode.st_mode)}, not a file")
    return mode.st_size


def read_regular(path: Path, limit: int) -> bytes:
    """The bytes of a regular file of at most `limit` bytes. A special file is never opened for reading
    (a FIFO would block the reader, and with it a server's start-up); it is opened non-blocking and checked
    again, in case it was replaced meanwhile. `Damaged` otherwise; `FileNotFoundError` when absent."""
    size = regular_size(path)
    if size > limit:
        raise Damaged(f"{path} holds {size:,} bytes, more than the {limit:,} a file of its kind may")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise Damaged(f"{path} is {file_kind(mode)}, not a file")
        chunks = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise Damaged(f"{path} holds more than the {limit:,} bytes a file of its kind may")
    return data
