"""First step of the pipeline: bytes on disk (plain, .gz or .zip) to parsed JSON, JSONL or CSV records.

Every file is read under limits, checked while streaming so that a hostile file is refused before it
costs memory: only regular files are read (a FIFO, a device or a directory is refused at once), the
file's size on disk, its unpacked size, the unpacking ratio of an archive and the nesting depth of JSON.
Each limit has a default fitted to real files (the largest, CrossWOZ test, is 39 MB unpacked at a ratio
of 29; real nesting stays under 10 levels) and an environment variable to change it (`LIMITS`).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import lzma
import os
import re
import stat
import sys
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from analysis import settings as environment
from analysis.errors import InputError

MiB = 1024**2
CHUNK = 4 * MiB  # archives are unpacked this much at a time, never with an unbounded read()
RATIO_FLOOR = 16 * MiB  # the unpacking ratio is judged only past this much output: small files may pack tightly


@dataclass(frozen=True)
class Limit:
    name: str
    env: str  # its environment variable: type, default and meaning in `analysis.settings.SETTINGS`


LIMITS = (
    Limit("file_bytes", "DST_MAX_FILE_BYTES"),
    Limit("unpacked_bytes", "DST_MAX_BYTES"),
    Limit("directory_bytes", "DST_MAX_DIRECTORY_BYTES"),
    Limit("ratio", "DST_MAX_RATIO"),
    Limit("depth", "DST_MAX_DEPTH"),
)


def limit(name: str, path: str = "", fmt: str | None = None) -> int:
    """The limit in force: its environment variable when set to a positive integer, else its default
    (`analysis.settings`); a variable set to anything else is an `InputError` naming it."""
    spec = next(s for s in LIMITS if s.name == name)
    try:
        return environment.positive_int(spec.env)
    except ValueError as exc:
        raise InputError(path, fmt, str(exc)) from None


def _size(n: int) -> str:
    return f"{n / MiB:,.0f} MiB" if n >= MiB else f"{n:,} bytes"


def too_big(name: str, fmt: str | None, what: str, env: str, cap: int) -> InputError:
    return InputError(name, fmt, f"{what} is larger than the limit of {_size(cap)} ({env}; set it to allow more)")


def special_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _read_disk(path: str | Path, name: str, fmt: str | None, cap: int) -> bytes:
    """A regular file's bytes, at most `cap`. The descriptor is checked with fstat after opening (no
    race with a path swapped in between); O_NONBLOCK keeps opening a FIFO from waiting for a writer."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise InputError(name, fmt, "file not found") from None
    except IsADirectoryError:
        raise InputError(name, fmt, "is a directory, not a file") from None
    except OSError as exc:
        raise InputError(name, fmt, f"cannot read file: {exc.strerror or exc}") from None
    try:
        status = os.fstat(fd)
        if stat.S_ISDIR(status.st_mode):
            raise InputError(name, fmt, "is a directory, not a file")
        if not stat.S_ISREG(status.st_mode):
            raise InputError(name, fmt, f"is {special_kind(status.st_mode)}: only regular files are read")
        if status.st_size > cap:
            raise too_big(name, fmt, "file", "DST_MAX_FILE_BYTES", cap)
        handle = os.fdopen(fd, "rb", buffering=0)
    except BaseException:
        os.close(fd)
        raise
    with handle:
        try:
            chunks = []
            total = 0
            while total <= cap:
                chunk = handle.read(min(CHUNK, cap + 1 - total))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
        except OSError as exc:
            raise InputError(name, fmt, f"cannot read file: {exc.strerror or exc}") from None
    if total > cap:  # grew while being read
        raise too_big(name, fmt, "file", "DST_MAX_FILE_BYTES", cap)
    return b"".join(chunks)


def _unpack(read: Callable[[int], bytes], packed: Callable[[], int], name: str, fmt: str | None, what: str) -> bytes:
    """Everything `read` yields, in bounded chunks, refused as soon as a size or ratio limit is passed."""
    cap = limit("unpacked_bytes", name, fmt)
    ratio = limit("ratio", name, fmt)
    chunks = []
    total = 0
    while True:
        chunk = read(CHUNK)
        if not chunk:
            break
        total += len(chunk)
        if total > cap:
            raise too_big(name, fmt, f"{what} unpacked", "DST_MAX_BYTES", cap)
        if total > RATIO_FLOOR and total > ratio * max(packed(), 1):  # packed bytes read so far
            raise InputError(
                name,
                fmt,
                f"{what} unpacks more than {ratio} times its packed size of {_size(packed())} "
                "(a decompression bomb?) (DST_MAX_RATIO; set it to allow more)",
            )
        chunks.append(chunk)
    return b"".join(chunks)


# Zip compression methods Python reads: stored, deflate, bzip2, lzma.
_ZIP_METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}
_ZIP_METHOD_NAMES = {
    1: "shrink",
    6: "implode",
    9: "Deflate64",
    10: "PKWARE implode",
    18: "IBM TERSE",
    19: "LZ77",
    93: "Zstandard",
    95: "xz",
    96: "JPEG",
    97: "WavPack",
    98: "PPMd",
    99: "AES",
}


MEMBER_SEPARATOR = "::"  # `archive.zip::path/inside.json` names one member of an archive of several


def split_member(path: str | Path) -> tuple[str, str | None]:
    """(the archive's path, the member named after `::`) for `archive.zip::path/inside.json`, else
    (the path, None).

    >>> split_member("runs/a.zip::out/pred.json"), split_member("runs/pred.json")
    (('runs/a.zip', 'out/pred.json'), ('runs/pred.json', None))
    """
    text = str(path)
    archive, sep, member = text.partition(MEMBER_SEPARATOR)
    if sep and archive.lower().endswith(".zip") and member:
        return archive, member
    return text, None


def _unzip(data: bytes, name: str, fmt: str | None, chosen: str | None = None) -> bytes:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        members = [m for m in zf.infolist() if not m.is_dir() and not m.filename.startswith("__MACOSX")]
        if chosen is not None:
            named = [m for m in members if m.filename == chosen]
            if not named:
                listed = ", ".join(m.filename for m in members) or "none"
                raise InputError(name, fmt, f"zip archive has no member {chosen!r}; its members: {listed}")
            members = named
        # A ConvLab-3 unified dataset's data.zip holds data/dialogues.json beside ontology.json.
        dialogues = [m for m in members if m.filename.rsplit("/", 1)[-1] == "dialogues.json"]
        members = dialogues if len(members) > 1 and len(dialogues) == 1 else members
        if len(members) != 1:
            archive = name.rsplit("/", 1)[-1]
            found = (
                f"found {len(members)}: {', '.join(m.filename for m in members)} "
                f"(name one as {archive}{MEMBER_SEPARATOR}<member>)"
                if members
                else "found: none"
            )
            raise InputError(name, fmt, f"zip archive must hold exactly one file, {found}")
        member = members[0]
        what = f"zip member {member.filename!r}"
        if member.flag_bits & 0x1:
            raise InputError(name, fmt, f"{what} is encrypted: password-protected archives are not read")
        if member.compress_type not in _ZIP_METHODS:
            method = _ZIP_METHOD_NAMES.get(member.compress_type, "unknown")
            raise InputError(
                name,
                fmt,
                f"{what} uses compression method {member.compress_type} ({method}), which is not supported "
                "(stored, deflate, bzip2 and lzma are)",
            )
        cap = limit("unpacked_bytes", name, fmt)
        if member.file_size > cap:  # the declared size: refused before unpacking anything
            raise too_big(name, fmt, f"{what} unpacked", "DST_MAX_BYTES", cap)
        with zf.open(member) as handle:
            return _unpack(handle.read, lambda: member.compress_size, name, fmt, what)


def read_bytes(path: str | Path, *, fmt: str | None = None, data: bytes | None = None) -> bytes:
    """The file's content, unpacked when it is a .gz or a single-member .zip archive, within `LIMITS`."""
    name = str(path)
    for spec in LIMITS:  # a mistyped variable is reported whatever the file, not only when its limit applies
        limit(spec.name, name, fmt)
    cap = limit("file_bytes", name, fmt)
    archive, member = split_member(path)
    if data is None:
        data = _read_disk(archive, name, fmt, cap)
    elif len(data) > cap:
        raise too_big(name, fmt, "file", "DST_MAX_FILE_BYTES", cap)
    if data[:2] == b"\x1f\x8b":
        packed = io.BytesIO(data)
        try:
            with gzip.GzipFile(fileobj=packed) as gz:
                return _unpack(gz.read, packed.tell, name, fmt, "gzip archive")
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(name, fmt, f"corrupt or truncated gzip archive ({exc})") from None
    if member is not None and data[:4] != b"PK\x03\x04":
        raise InputError(name, fmt, f"{archive} is not a zip archive, so it has no member {member!r}")
    if data[:4] == b"PK\x03\x04" or name.endswith(".zip"):
        try:
            return _unzip(data, name, fmt, member)
        except zipfile.BadZipFile as exc:
            raise InputError(name, fmt, f"corrupt or truncated zip archive ({exc})") from None
        except InputError:
            raise
        except (NotImplementedError, RuntimeError, OSError, EOFError, zlib.error, lzma.LZMAError, ValueError) as exc:
            # bz2/lzma data errors, a method zipfile knows but cannot unpack here, a bad password flag.
            raise InputError(name, fmt, f"zip archive cannot be unpacked ({type(exc).__name__}: {exc})") from None
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


# --- JSON structure: depth and keys, scanned before parsing ----------------------------------------

# Only quotes, brackets and colons matter to nesting; everything else is deleted before the scan (a C
# pass), after escaped backslashes and quotes are blanked (same length, so positions still map to lines).
_STRUCTURAL = b'"[]{}:'
_NOT_STRUCTURAL = bytes(b for b in range(256) if b not in _STRUCTURAL)
_BLOCK = 8 * MiB


@dataclass
class _Structure:
    too_deep_at: int  # index of the first bracket nested deeper than the limit, -1 when none
    keys: int  # object keys at any depth: colons outside strings (compared with the parsed keys: duplicates)


_STEP = np.zeros(256, dtype=np.int8)  # +1 for an opening bracket, -1 for a closing one
_STEP[[ord("["), ord("{")]] = 1
_STEP[[ord("]"), ord("}")]] = -1


def _scan(buf: bytes, max_depth: int) -> _Structure:
    """Nesting of JSON text outside strings, in blocks of numpy passes (no recursion, bounded memory)."""
    codes = np.frombuffer(buf, dtype=np.uint8)
    parity, depth, keys = 0, 0, 0
    for start in range(0, len(codes), _BLOCK):
        block = codes[start : start + _BLOCK]
        quotes = np.cumsum(block == 34, dtype=np.uint8)  # wraps at 256: only its parity is used
        outside = (quotes & 1) == parity
        kept = block[outside]
        levels = np.cumsum(_STEP[kept], dtype=np.int32)
        levels += depth
        if len(levels) and int(levels.max()) > max_depth:
            return _Structure(start + int(np.flatnonzero(outside)[np.argmax(levels > max_depth)]), keys)
        keys += int(np.count_nonzero(kept == 58))
        parity ^= int(quotes[-1]) & 1
        depth = int(levels[-1]) if len(levels) else depth
    return _Structure(-1, keys)


def _escapes(data: bytes) -> tuple[bytes, bool]:
    """(`data` with each escaped quote made `_`, positions unchanged; whether a `\\ud800`-`\\udfff` escape
    occurs). Backslashes are rare: found with memchr, then placed by numpy, never a loop over bytes."""
    if data.find(b"\\") < 0:
        return data, False
    codes = np.frombuffer(data, dtype=np.uint8)
    slashes = np.flatnonzero(codes == 92)
    order = np.arange(len(slashes))
    new_run = np.ones(len(slashes), dtype=bool)
    new_run[1:] = slashes[1:] != slashes[:-1] + 1
    run_start = np.maximum.accumulate(np.where(new_run, order, 0))
    escaped = slashes[(order - run_start) % 2 == 0] + 1  # a run's 1st, 3rd, ... backslash escapes the next byte
    escaped = escaped[escaped < len(codes)]
    unicode = escaped[codes[escaped] == ord("u")]
    unicode = unicode[unicode + 2 < len(codes)]
    surrogate = bool(  # \\u then d/D then 8-f/8-F (| 0x20 lower-cases ASCII letters, keeps digits)
        np.any(((codes[unicode + 1] | 0x20) == ord("d")) & np.isin(codes[unicode + 2] | 0x20, list(b"89abcdef")))
    )
    quotes = escaped[codes[escaped] == 34]
    if not len(quotes):
        return data, surrogate
    out = bytearray(data)
    np.frombuffer(out, dtype=np.uint8)[quotes] = ord("_")
    return bytes(out), surrogate


def _check_structure(data: bytes, name: str, fmt: str | None, jsonl: bool) -> tuple[int, bool]:
    """Refuse JSON nested deeper than DST_MAX_DEPTH (naming the line); (how many object keys the text
    holds at any depth, whether a surrogate escape occurs)."""
    max_depth = limit("depth", name, fmt)
    blanked, surrogates = _escapes(data)
    # Two quotes with nothing structural between them are an ordinary string: dropping them changes no parity.
    found = _scan(blanked.translate(None, _NOT_STRUCTURAL).replace(b'""', b""), max_depth)
    if found.too_deep_at < 0:
        return found.keys, surrogates
    at = _scan(blanked, max_depth).too_deep_at  # the same scan with positions kept, for the line
    line = blanked.count(b"\n", 0, at) + 1
    problem = f"JSON nested too deeply: more than {max_depth} levels (DST_MAX_DEPTH; set it to allow more)"
    raise InputError(name, fmt, f"line {line}: {problem}" if jsonl else f"{problem} (line {line})")


class _Duplicated(dict[str, Any]):
    """A parsed object that had a key twice (only built when looking for the duplicate)."""

    duplicate: str = ""


def _pairs_keeping_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    built = dict(pairs)
    if len(built) == len(pairs):
        return built
    seen: set[str] = set()
    marked = _Duplicated(built)
    marked.duplicate = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
    return marked


def _first_duplicate(value: Any) -> tuple[str, list[str]] | None:
    """(the key named twice, the path of keys and indices to the object holding it) of the first object,
    in document order, that had a key twice; None when none did."""
    stack: list[tuple[Any, list[str]]] = [(value, [])]
    while stack:
        node, path = stack.pop()
        if isinstance(node, _Duplicated):
            return node.duplicate, path
        children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        stack.extend(reversed([(child, [*path, str(key)]) for key, child in children]))
    return None


def _pointer(path: list[str]) -> str:
    """A JSON Pointer (RFC 6901) to the object: `/MUL0001.json/3/belief_state`."""
    return "".join("/" + part.replace("~", "~0").replace("/", "~1") for part in path)


def _collecting() -> tuple[list[dict[str, Any]], Callable[[dict[str, Any]], dict[str, Any]]]:
    """(a list, an `object_hook` that appends to it every object json builds). The keys those objects
    hold are compared with the colons the scan found: a duplicate key, at any depth, leaves the parsed
    objects with fewer keys than the text. Appending is all the hook does (counting there cost +10% on a
    MultiWOZ-size prediction file; `sum(map(len, objects))` afterwards costs nothing measurable)."""
    objects: list[dict[str, Any]] = []

    def hook(obj: dict[str, Any], _append: Callable[[dict[str, Any]], None] = objects.append) -> dict[str, Any]:
        _append(obj)
        return obj

    return objects, hook


_DUPLICATE = "the second would silently replace the first; give each its own key"


# --- text checks Python's json module leaves to us --------------------------------------------------

_ESCAPES = re.compile(
    r"\\\\|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[dD][89a-fA-F][0-9a-fA-F]{2}"
)


def _lone_surrogate(text: str) -> int:
    """Offset of a `\\udXXX` escape that is not half of a surrogate pair (json would accept it, and the
    string could then never be written as UTF-8), or -1."""
    if "\\u" not in text or ("\\ud" not in text and "\\uD" not in text):
        return -1
    for match in _ESCAPES.finditer(text):
        if len(match.group()) == 6:
            return match.start()
    return -1


def _long_number(text: str, digits: int) -> re.Match[str] | None:
    """The first run of more than `digits` digits. Tried only where a run starts (the look-behind): a
    plain `\\d{N,}` retries inside every shorter run, N steps per digit (a 1.7 MB text of 4,300-digit
    numbers took 44 s)."""
    return re.search(rf"(?<!\d)\d{{{digits + 1}}}", text)


def _position(text: str, offset: int) -> str:
    line = text.count("\n", 0, offset) + 1
    return f"line {line}, column {offset - (text.rfind(chr(10), 0, offset) + 1) + 1}"


def _value_error(name: str, fmt: str | None, text: str, exc: ValueError) -> InputError:
    """json's errors that are not JSONDecodeError: an integer longer than Python converts."""
    match = _long_number(text, sys.get_int_max_str_digits())
    where = f" ({_position(text, match.start())})" if match else ""
    return InputError(
        name, fmt, f"a number has more than {sys.get_int_max_str_digits():,} digits, too long to read{where}"
    )


_CR_ONLY = (
    "lines end in a carriage return (CR) alone, as in old Mac OS files: JSON Lines records end in a line "
    "feed (LF or CRLF); convert the line ends"
)


def _cr_only(text: str) -> bool:
    """Line ends that are CR alone: json reads the whole text as one line with extra data after its first
    record, which says nothing about the cause."""
    return "\n" not in text and "\r" in text.strip()


def _json_error(name: str, fmt: str | None, text: str, exc: json.JSONDecodeError) -> InputError:
    if exc.msg == "Extra data" and _cr_only(text):
        return InputError(name, fmt, _CR_ONLY)
    # An unterminated string or a value cut at the very end means the text stopped early.
    truncated = exc.pos >= len(text.rstrip()) - 1 or exc.msg.startswith("Unterminated string")
    what = "truncated JSON" if truncated else "malformed JSON"
    message = exc.msg.removesuffix(" at")  # json says "Unterminated string starting at"
    return InputError(name, fmt, f"{what}: {message} (line {exc.lineno}, column {exc.colno})")


def _load_json(text: str, name: str, fmt: str | None, hook: Callable[[dict[str, Any]], Any] | None = None) -> Any:
    try:
        return json.loads(text, object_hook=hook)
    except json.JSONDecodeError as exc:
        raise _json_error(name, fmt, text, exc) from None
    except RecursionError:  # DST_MAX_DEPTH set above what the parser can nest
        raise InputError(name, fmt, "JSON nested too deeply for the parser") from None
    except ValueError as exc:
        raise _value_error(name, fmt, text, exc) from None


def _check_surrogates(text: str, name: str, fmt: str | None) -> None:
    surrogate = _lone_surrogate(text)
    if surrogate >= 0:
        escape = text[surrogate : surrogate + 6]
        where = _position(text, surrogate)
        raise InputError(name, fmt, f"lone UTF-16 surrogate {escape} in a string ({where}): not valid Unicode text")


def preflight(path: str | Path, *, fmt: str | None = None) -> None:
    """The checks `parse_records` makes before parsing (limits, special files, encoding, JSON depth, lone
    surrogates, over-long numbers), for readers that parse a file's text themselves (FewJoint)."""
    name = str(path)
    raw = read_bytes(path, fmt=fmt)
    text = decode_text(raw, name, fmt)
    if text.lstrip()[:1] not in ("{", "["):
        return
    jsonl = name.lower().removesuffix(".gz").removesuffix(".zip").endswith(".jsonl")
    if _check_structure(raw, name, fmt, jsonl)[1]:
        _check_surrogates(text, name, fmt)
    digits = sys.get_int_max_str_digits()
    match = _long_number(text, digits) if digits else None
    if match:
        where = _position(text, match.start())
        raise InputError(name, fmt, f"a number has more than {digits:,} digits, too long to read ({where})")


def parse_records(path: str | Path, *, fmt: str | None = None, data: bytes | None = None) -> tuple[str, Any]:
    """Parse a file into ("json", value), ("jsonl", [records]) or ("csv", [rows]); never a traceback."""
    name = str(path)
    raw = read_bytes(path, fmt=fmt, data=data)
    text = decode_text(raw, name, fmt)
    lowered = name.lower().removesuffix(".gz").removesuffix(".zip")
    stripped = text.lstrip()
    if lowered.endswith(".csv") or (stripped[:1] not in "{[" and "," in stripped.split("\n", 1)[0]):
        return "csv", _parse_csv(text, name, fmt)
    jsonl = lowered.endswith(".jsonl") or _looks_like_jsonl(stripped)
    keys, surrogates = _check_structure(raw, name, fmt, jsonl)
    if surrogates:
        _check_surrogates(text, name, fmt)
    objects, hook = _collecting()
    if jsonl:
        records = _parse_jsonl_joined(text, hook)
        if records is None:
            objects.clear()  # a joined decode that failed part way left objects behind
            records = _parse_jsonl(text, name, fmt, hook)
        if sum(map(len, objects)) != keys:
            _find_jsonl_duplicate(text, name, fmt)
        return "jsonl", records
    value = _load_json(text, name, fmt, hook)
    if sum(map(len, objects)) != keys:
        _raise_duplicate(json.loads(text, object_pairs_hook=_pairs_keeping_duplicates), name, fmt)
    return "json", value


def _raise_duplicate(marked: Any, name: str, fmt: str | None) -> None:
    """Refuse the first key named twice in one object, at any depth (a dialogue, a turn, a slot of a
    state, ...): json would keep the last silently. The record is the top-level key (a dialogue, in the
    formats keyed by dialogue) or the array item holding it; the problem gives the path below it."""
    found = _first_duplicate(marked)
    if found is None:
        return
    duplicate, path = found
    if not path:
        raise InputError(name, fmt, f"duplicate top-level key {duplicate!r}: {_DUPLICATE}")
    below = f" (in the object at {_pointer(path)})" if len(path) > 1 else ""
    if isinstance(marked, list):
        item = marked[int(path[0])]
        named = item.get("dialogue_id") if isinstance(item, dict) else None
        raise InputError(
            name,
            fmt,
            f"item {path[0]} of the array has the key {duplicate!r} twice{below}: {_DUPLICATE}",
            dialogue_id=str(named) if isinstance(named, str | int) and not isinstance(named, bool) else None,
        )
    raise InputError(name, fmt, f"duplicate key {duplicate!r} in one object{below}: {_DUPLICATE}", dialogue_id=path[0])


_NON_SPACE = re.compile(r"\S")


def _looks_like_jsonl(stripped: str) -> bool:
    """A first line that is a JSON object, with more text after it. Read in place: copying the rest of a
    large file (to strip it) cost 10 ms on an 8.6 MB JSON list."""
    end = stripped.find("\n")
    if end < 0 or not stripped[:end].rstrip().endswith("}") or _NON_SPACE.search(stripped, end + 1) is None:
        return False
    try:
        return isinstance(json.loads(stripped[:end]), dict)
    except (ValueError, RecursionError):
        return False


def _lines(text: str) -> list[str]:
    # Lines end at "\n" only: JSON strings may hold U+2028 and other characters str.splitlines() splits on.
    return text.split("\n")


# A comma between two objects, spaces allowed: in a JSON array of objects every item boundary is one.
_OBJECT_BOUNDARY = re.compile(r"\}\s*,\s*\{")


def _parse_jsonl_joined(text: str, hook: Callable[[dict[str, Any]], Any] | None) -> list[dict[str, Any]] | None:
    """The lines' objects decoded as one JSON array (their lines joined by commas), about twice as fast
    as a decode per line (one call, and repeated keys shared); None when that is not exactly the lines'
    own objects, or anything is unusual: then the caller decodes line by line, as before.

    Exact because the text holds no `},{` (spaces allowed) anywhere: in an array of n objects each of
    the n - 1 item boundaries is such a comma, so with none in the lines, every one is a joining comma,
    and n items from n lines are the n lines, each one whole object."""
    lines = text.split("\n")
    if lines and not lines[-1].strip():
        lines.pop()  # the usual final newline (or trailing spaces)
    if not lines or not all(lines) or _OBJECT_BOUNDARY.search(text) is not None:
        return None
    try:
        records = json.loads(f"[{','.join(lines)}]", object_hook=hook)
    except (ValueError, RecursionError):
        return None
    if len(records) != len(lines) or not all(type(record) is dict for record in records):
        return None
    return records


def _parse_jsonl(
    text: str, name: str, fmt: str | None, hook: Callable[[dict[str, Any]], Any] | None = None
) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    decode = json.JSONDecoder(object_hook=hook).decode  # one decoder for all lines (json.loads builds one a call)
    for lineno, line in enumerate(_lines(text), start=1):
        if not line.strip():
            continue
        try:
            record = decode(line)
        except json.JSONDecodeError as exc:
            if exc.msg == "Extra data" and _cr_only(text):
                raise InputError(name, fmt, _CR_ONLY) from None
            raise InputError(name, fmt, f"line {lineno} is not valid JSON ({exc.msg})") from None
        except RecursionError:
            raise InputError(name, fmt, f"line {lineno}: JSON nested too deeply for the parser") from None
        except ValueError as exc:
            raise InputError(name, fmt, f"line {lineno}: {_value_error(name, fmt, line, exc).problem}") from None
        if not isinstance(record, dict):
            raise InputError(name, fmt, f"line {lineno} is a JSON {type(record).__name__}, expected an object")
        records.append(record)
    return records


def _find_jsonl_duplicate(text: str, name: str, fmt: str | None) -> None:
    for lineno, line in enumerate(_lines(text), start=1):
        if line.strip():
            found = _first_duplicate(json.loads(line, object_pairs_hook=_pairs_keeping_duplicates))
            if found is not None:
                duplicate, path = found
                below = f" (in the object at {_pointer(path)})" if path else ""
                raise InputError(name, fmt, f"line {lineno} has the key {duplicate!r} twice{below}: {_DUPLICATE}")


def _parse_csv(text: str, name: str, fmt: str | None) -> list[dict[str, str]]:
    nul = text.find("\x00")
    if nul >= 0:  # past the first 4 KiB `decode_text` looks at: a name or value would hold it unseen
        line = text.count("\n", 0, nul) + 1
        raise InputError(name, fmt, f"CSV line {line} holds a NUL character (\\x00): text fields cannot hold one")
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
