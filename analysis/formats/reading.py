"""First step of the pipeline: bytes on disk (plain, .gz or .zip) to parsed JSON, JSONL or CSV records."""

from __future__ import annotations

import csv
import gzip
import io
import json
import zipfile
from pathlib import Path
from typing import Any

from analysis.errors import InputError

# A prediction file larger than this is refused before parsing: nothing in this field comes close
# (MultiWOZ test gold is about 20 MB unpacked), and a runaway file should not take the server down.
MAX_UNPACKED_BYTES = 2 * 1024**3


def read_bytes(path: str | Path, *, fmt: str | None = None, data: bytes | None = None) -> bytes:
    """The file's content, unpacked when it is a .gz or a single-member .zip archive."""
    name = str(path)
    if data is None:
        try:
            data = Path(path).read_bytes()
        except FileNotFoundError:
            raise InputError(name, fmt, "file not found") from None
        except IsADirectoryError:
            raise InputError(name, fmt, "is a directory, not a file") from None
        except OSError as exc:
            raise InputError(name, fmt, f"cannot read file: {exc.strerror or exc}") from None
    if data[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as gz:
                data = gz.read(MAX_UNPACKED_BYTES + 1)
        except (OSError, EOFError) as exc:
            raise InputError(name, fmt, f"corrupt or truncated gzip archive ({exc})") from None
    elif data[:4] == b"PK\x03\x04" or name.endswith(".zip"):
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                members = [m for m in zf.infolist() if not m.is_dir() and not m.filename.startswith("__MACOSX")]
                # A ConvLab-3 unified dataset's data.zip holds data/dialogues.json beside ontology.json.
                dialogues = [m for m in members if m.filename.rsplit("/", 1)[-1] == "dialogues.json"]
                members = dialogues if len(members) > 1 and len(dialogues) == 1 else members
                if len(members) != 1:
                    listed = ", ".join(m.filename for m in members[:5]) or "none"
                    raise InputError(name, fmt, f"zip archive must hold exactly one file, found: {listed}")
                if members[0].file_size > MAX_UNPACKED_BYTES:
                    raise InputError(name, fmt, "zip member is larger than 2 GiB unpacked")
                data = zf.read(members[0])
        except zipfile.BadZipFile as exc:
            raise InputError(name, fmt, f"corrupt or truncated zip archive ({exc})") from None
    if len(data) > MAX_UNPACKED_BYTES:
        raise InputError(name, fmt, "file is larger than 2 GiB unpacked")
    return data


def decode_text(data: bytes, name: str, fmt: str | None) -> str:
    if not data.strip():
        raise InputError(name, fmt, "file is empty")
    if b"\x00" in data[:4096]:
        raise InputError(name, fmt, "file is binary, not UTF-8 text (JSON, JSONL or CSV expected)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(name, fmt, f"file is not UTF-8 text (bad byte at offset {exc.start})") from None


def _json_error(name: str, fmt: str | None, text: str, exc: json.JSONDecodeError) -> InputError:
    # An unterminated string or a value cut at the very end means the text stopped early.
    truncated = exc.pos >= len(text.rstrip()) - 1 or exc.msg.startswith("Unterminated string")
    what = "truncated JSON" if truncated else "malformed JSON"
    message = exc.msg.removesuffix(" at")  # json says "Unterminated string starting at"
    return InputError(name, fmt, f"{what}: {message} (line {exc.lineno}, column {exc.colno})")


def parse_records(path: str | Path, *, fmt: str | None = None, data: bytes | None = None) -> tuple[str, Any]:
    """Parse a file into ("json", value), ("jsonl", [records]) or ("csv", [rows]); never a traceback."""
    name = str(path)
    text = decode_text(read_bytes(path, fmt=fmt, data=data), name, fmt)
    lowered = name.lower().removesuffix(".gz").removesuffix(".zip")
    stripped = text.lstrip()
    if lowered.endswith(".csv") or (stripped[:1] not in "{[" and "," in stripped.split("\n", 1)[0]):
        return "csv", _parse_csv(text, name, fmt)
    if lowered.endswith(".jsonl") or _looks_like_jsonl(stripped):
        return "jsonl", _parse_jsonl(text, name, fmt)
    try:
        return "json", json.loads(text)
    except json.JSONDecodeError as exc:
        raise _json_error(name, fmt, text, exc) from None
    except RecursionError:
        raise InputError(name, fmt, "JSON nested too deeply") from None


def _looks_like_jsonl(stripped: str) -> bool:
    first, _, rest = stripped.partition("\n")
    if not rest.strip() or not first.rstrip().endswith("}"):
        return False
    try:
        return isinstance(json.loads(first), dict)
    except json.JSONDecodeError:
        return False


def _parse_jsonl(text: str, name: str, fmt: str | None) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(name, fmt, f"line {lineno} is not valid JSON ({exc.msg})") from None
        if not isinstance(record, dict):
            raise InputError(name, fmt, f"line {lineno} is a JSON {type(record).__name__}, expected an object")
        records.append(record)
    return records


def _parse_csv(text: str, name: str, fmt: str | None) -> list[dict[str, str]]:
    reader = csv.DictReader(io.StringIO(text))
    rows: list[dict[str, str]] = []
    try:
        for row in reader:
            if None in row:
                raise InputError(name, fmt, f"CSV line {reader.line_num} has more fields than the header")
            rows.append(row)
    except csv.Error as exc:
        raise InputError(name, fmt, f"malformed CSV at line {reader.line_num}: {exc}") from None
    return rows
