"""Writing a workspace manifest from the dashboard: uploaded runs saved into the workspace, runs' metadata
edited, without ever losing an edit someone made to the file meanwhile.

- **Files** an upload brings are copied under the workspace root as `uploads/<safe name>`: the name is the
  upload's own file name reduced to letters, digits, `.`, `_` and `-` (no folder part, no leading dot); a
  file of that name with other content is never overwritten: the copy gets a content-digest suffix
  (`run-3f2a9c01d4e5.jsonl`), and the same content uploaded again reuses the file already there.
- **The manifest** is edited as text, so its comments and layout stay: a new run is a `[[runs]]` table
  appended at the end, an edited run has only its changed `key = value` lines rewritten (a trailing
  comment on such a line is kept). There is no TOML writer: values are written by `toml_value`.
- **Safety.** Every write holds a lock file in the workspace root (`fcntl.flock`), so two processes saving
  at once both land, one after the other. The caller passes the digest of the manifest it read
  (`Workspace.digest`); when the file changed since, it is read again and the change merged in when it
  does not touch what is being saved (another run added: both are kept), else refused with a message
  saying what changed. The new text is parsed back with `tomllib` and must hold exactly the intended
  data, then checked by `analysis.workspace.read_manifest` (the same rules as every manifest: types,
  history modes, conventions, paths inside the root), written to a temporary file in the same folder and
  moved over the manifest with `os.replace`: a reader sees the old file or the new one, never half of one.
- **A read-only root** (or a full disk) is `NotSavedError`, an `InputError` the dashboard turns into a warning
  while it keeps the upload for the session.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import re
import secrets
import tomllib
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.conventions import CONVENTIONS
from analysis.errors import InputError
from analysis.formats.mapping import Mapping
from analysis.model import HISTORY_MODES
from analysis.workspace import RunEntry, read_manifest

UPLOADS = "uploads"  # the folder under the workspace root that uploads are copied into
LOCK_NAME = ".dst-manifest.lock"
# The metadata the dashboard's forms set (the `[[runs]]` keys of the same names); `name` is set once.
METADATA_KEYS = ("system", "dataset", "language", "split", "history", "seed", "convention", "format", "description")
MAX_NAME = 100
MAX_TEXT = 200
MAX_DESCRIPTION = 2000
# Errors that mean "this root cannot be written", as opposed to a refusal of what is written.
UNWRITABLE = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT}
# Characters refused in metadata: line and paragraph breaks, control characters, and the bidirectional
# overrides that make a name read differently from what it is.
_BIDI = set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f")


class NotSavedError(InputError):
    """The workspace root cannot be written (read-only, no permission, full disk): nothing was saved."""


@dataclass(frozen=True)
class Saved:
    """What a save did: the run, the files it references (relative to the root; `new_files` were written
    by this save, the others were already there) and, when the manifest had changed since it was read,
    what changed (`merged`)."""

    manifest: Path
    name: str
    files: tuple[str, ...] = ()
    new_files: tuple[str, ...] = ()
    merged: str = ""


# --- values ----------------------------------------------------------------------------------------


def _digest_of_bytes(raw: bytes) -> str:
    text = raw.decode("utf-8", errors="surrogateescape").replace("\r\n", "\n").replace("\r", "\n")
    return hashlib.sha256(text.encode("utf-8", errors="surrogateescape")).hexdigest()


def toml_value(value: Any) -> str:
    r"""`value` (a string, integer or boolean, or a list or string-keyed table of them: a declared
    `mapping`) as TOML, on one line; strings as basic strings with every quote, backslash and control
    character escaped; a table key bare when it may be, else quoted so.

    >>> print(toml_value('a "b" \\ c\n'), toml_value(3), toml_value(True))
    "a \"b\" \\ c\n" 3 true
    >>> print(toml_value({"id": "dial_id", "turn_base": 1, "domains": ["hotel", "taxi"]}))
    { id = "dial_id", turn_base = 1, domains = ["hotel", "taxi"] }
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        if not value:
            return "{}"
        keys = [str(k) if re.fullmatch(r"[A-Za-z0-9_-]+", str(k)) else toml_value(str(k)) for k in value]
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in zip(keys, value.values(), strict=True)) + " }"
    if not isinstance(value, str):
        raise TypeError(f"no TOML form for {type(value).__name__}")
    out = ['"']
    for ch in value:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch in "\b\t\n\f\r":
            out.append({"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}[ch])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\u{code:04X}")
        elif 0xD800 <= code <= 0xDFFF:
            raise ValueError("a string holds a lone surrogate, which TOML cannot store")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _check_text(manifest: str, key: str, value: str, limit: int, *, name: bool = False) -> str:
    allowed = "\n\t" if key == "description" else ""  # a description may run over several lines
    bad = next(
        (
            ch
            for ch in value
            if (unicodedata.category(ch) in ("Cc", "Zl", "Zp", "Cs") or ch in _BIDI) and ch not in allowed
        ),
        None,
    )
    if bad is not None:
        raise InputError(manifest, "workspace", f"{key} holds the control character U+{ord(bad):04X}; use plain text")
    if len(value) > limit:
        raise InputError(manifest, "workspace", f"{key} is {len(value)} characters long; at most {limit}")
    if name:
        if not value.strip():
            raise InputError(manifest, "workspace", "the run needs a name")
        if value != value.strip():
            raise InputError(manifest, "workspace", f"run name {value!r} starts or ends with a space")
        if "," in value:  # links list runs separated by commas (`?runs=a,b`)
            raise InputError(manifest, "workspace", f"run name {value!r} holds a comma, which links use between runs")
    return value


def check_metadata(manifest: str | Path, values: dict[str, Any]) -> dict[str, Any]:
    """The form's metadata checked (the manifest reader's rules, and no control characters, no comma in
    a name, bounded lengths) and reduced to the keys to write: empty strings and None dropped (the run
    then takes the manifest's default), a seed given as text made an integer. One `InputError` naming the
    key and the value for the first bad one."""
    from analysis.formats import format_names

    where = str(manifest)
    table: dict[str, Any] = {}
    for key, value in values.items():
        if key not in ("name", *METADATA_KEYS):
            raise InputError(where, "workspace", f"{key!r} is not a run key the dashboard sets")
        if value is None or (isinstance(value, str) and not value.strip() and key != "name"):
            continue
        if key == "seed":
            if isinstance(value, str):
                text = value.strip()
                if not re.fullmatch(r"[+-]?\d{1,18}", text):
                    raise InputError(where, "workspace", f"seed must be an integer, got {value!r}")
                value = int(text)
            if isinstance(value, bool) or not isinstance(value, int):
                raise InputError(where, "workspace", f"seed must be an integer, got {value!r}")
            table[key] = value
            continue
        if not isinstance(value, str):
            raise InputError(where, "workspace", f"{key} must be a string, got {value!r}")
        limit = MAX_NAME if key == "name" else MAX_DESCRIPTION if key == "description" else MAX_TEXT
        table[key] = _check_text(where, key if key != "name" else "run name", value, limit, name=key == "name")
        if key != "name" and key != "description":
            table[key] = table[key].strip()
    if table.get("history", "predicted") not in HISTORY_MODES:
        raise InputError(where, "workspace", f"history has to be one of {HISTORY_MODES}, got {table['history']!r}")
    if "convention" in table and table["convention"] not in CONVENTIONS:
        raise InputError(where, "workspace", f"convention has to be one of {', '.join(CONVENTIONS)}")
    if "format" in table and table["format"] not in format_names():
        raise InputError(where, "workspace", f"format {table['format']!r} is not one of {', '.join(format_names())}")
    return table


def editable_values(entry: RunEntry) -> dict[str, Any]:
    """A run's metadata as the Edit run form shows it (the values in effect, defaults included)."""
    meta = entry.meta
    return {
        "system": meta.system,
        "dataset": meta.dataset,
        "language": meta.language,
        "split": meta.split,
        "history": meta.history,
        "seed": meta.seed,
        "convention": meta.convention,
        "format": entry.format,
        "description": entry.description,
    }


# --- files -----------------------------------------------------------------------------------------


def safe_file_name(name: str) -> str:
    """An uploaded file's name as it is stored: its last path part (either slash), every character but
    ASCII letters, digits, `.`, `_` and `-` made `_`, no leading dots, at most 120 characters with the
    extensions kept (a format is recognised by them).

    >>> safe_file_name("../../etc/pass wd.json.gz"), safe_file_name("..\\\\a\\\\.hidden"), safe_file_name("é")
    ('pass_wd.json.gz', 'hidden', 'upload')
    """
    base = re.split(r"[/\\]", name)[-1]
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", base).lstrip(".")
    if not safe.strip("_.-"):
        return "upload"
    if len(safe) > 120:
        stem, dot, suffix = safe.partition(".")
        safe = stem[: 120 - len(dot + suffix)] + dot + suffix if len(dot + suffix) < 60 else safe[:120]
    return safe


def _with_digest(name: str, digest: str) -> str:
    stem, dot, suffix = name.partition(".")
    return f"{stem}-{digest[:12]}{dot}{suffix}"


def _same_content(path: Path, digest: str) -> bool:
    try:
        with path.open("rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest() == digest
    except OSError:
        return False


def _upload_target(root: Path, file_name: str, data: bytes) -> tuple[str, bool]:
    """Where `data` goes under `root` (relative path) and whether it is already there with that content."""
    digest = hashlib.sha256(data).hexdigest()
    safe = safe_file_name(file_name)
    for candidate in (safe, _with_digest(safe, digest)):
        path = root / UPLOADS / candidate
        if not path.exists() and not path.is_symlink():
            return f"{UPLOADS}/{candidate}", False
        if path.is_file() and not path.is_symlink() and _same_content(path, digest):
            return f"{UPLOADS}/{candidate}", True
    raise InputError(
        file_name,
        "upload",
        f"{UPLOADS}/{safe} and {UPLOADS}/{_with_digest(safe, digest)} both exist with other content; rename the file",
    )


def _write_new(path: Path, data: bytes) -> None:
    """`data` written to `path`, which must not exist: a temporary file linked into place (a link never
    replaces an existing file), so a reader never sees a partial copy."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        with tmp.open("xb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.link(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


# --- the manifest text -----------------------------------------------------------------------------

_HEADER = re.compile(r"^[ \t]*\[\[?[^\[\]=]*\]\]?[ \t]*(#.*)?$")
_RUNS_HEADER = re.compile(r"^[ \t]*\[\[[ \t]*runs[ \t]*\]\][ \t]*(#.*)?$")
_KEY = re.compile(r"^[ \t]*(\"?)([A-Za-z0-9_-]+)\1[ \t]*=")


def _parses(text: str) -> dict[str, Any] | None:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def run_table_text(table: dict[str, Any], newline: str = "\n") -> str:
    """A `[[runs]]` table as text, `name` first."""
    keys = ["name", *[k for k in table if k != "name"]]
    return newline.join(["[[runs]]", *(f"{key} = {toml_value(table[key])}" for key in keys if key in table)]) + newline


def _appended(text: str, table: dict[str, Any]) -> str:
    nl = _newline(text)
    body = text if not text or text.endswith("\n") else text + nl
    return body + (nl if body.strip() else "") + run_table_text(table, nl)


def _value_lines(lines: list[str], start: int, end: int, rest: str) -> int:
    """How many lines the value starting at `rest` (the text after `=` on line `start`) takes."""
    for stop in range(start + 1, end + 1):
        body = "\n".join([rest, *(line.rstrip("\r") for line in lines[start + 1 : stop])])
        if _parses("v =" + body) is not None:
            return stop - start
    return 1


def _trailing_comment(rest: str) -> str:
    """The comment after a one-line value (`"a # b" # c` -> `# c`), or ""."""
    whole = _parses("v =" + rest)
    for match in re.finditer("#", rest):
        head = rest[: match.start()]
        if whole is not None and (_parses("v =" + head) or {}).get("v", object()) == whole.get("v"):
            return " " + rest[match.start() :].rstrip("\r")
    return ""


def _edited(text: str, index: int, changes: dict[str, Any]) -> str:
    """`text` with the `index`-th `[[runs]]` table's keys set (None: removed) in place."""
    lines = text.split("\n")
    headers = [i for i, line in enumerate(lines) if _HEADER.match(line.rstrip("\r"))]
    runs = [i for i in headers if _RUNS_HEADER.match(lines[i].rstrip("\r"))]
    if index >= len(runs):
        return text
    start = runs[index]
    end = next((i for i in headers if i > start), len(lines))
    nl_cr = "\r" if lines[start].endswith("\r") else ""
    i, last, found = start + 1, start, {}
    while i < end:
        match = _KEY.match(lines[i])
        if match is None:
            i += 1
            continue
        rest = lines[i][match.end() :]
        size = _value_lines(lines, i, end, rest)
        found[match.group(2)] = (i, size, rest)
        last = i + size - 1
        i += size
    replace: dict[int, tuple[int, list[str]]] = {}
    inserts: list[str] = []
    for key, value in changes.items():
        if key in found:
            at, size, rest = found[key]
            kept = _trailing_comment(rest) if size == 1 else ""
            new = [] if value is None else [f"{key} = {toml_value(value)}{kept}{nl_cr}"]
            replace[at] = (size, new)
        elif value is not None:
            inserts.append(f"{key} = {toml_value(value)}{nl_cr}")
    out: list[str] = []
    i = 0
    while i < len(lines):
        if i in replace:
            size, new = replace[i]
            out += new
            i += size
        else:
            out.append(lines[i])
            i += 1
        if i - 1 == last and inserts:
            out += inserts
            inserts = []
    return "\n".join(out)


# --- locking and writing ---------------------------------------------------------------------------


def _unwritable(manifest: Path, exc: OSError) -> NotSavedError:
    reason = {
        errno.ENOSPC: "the disk is full",
        errno.EDQUOT: "the disk quota is used up",
        errno.EROFS: "the workspace's file system is read-only",
    }.get(exc.errno or 0, "the workspace root is not writable")
    return NotSavedError(str(manifest), "workspace", f"not saved: {reason} ({manifest.parent})")


@contextlib.contextmanager
def _locked(manifest: Path) -> Iterator[None]:
    """The workspace root's write lock, held while the manifest is read, checked and replaced."""
    try:
        fd = os.open(manifest.parent / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as exc:
        if exc.errno in UNWRITABLE:
            raise _unwritable(manifest, exc) from None
        raise
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _read(manifest: Path) -> tuple[str, str]:
    """The manifest's text (line endings as in the file) and digest."""
    try:
        raw = manifest.read_bytes()
    except FileNotFoundError:
        raise InputError(str(manifest), "workspace", "manifest not found") from None
    try:
        return raw.decode("utf-8"), _digest_of_bytes(raw)
    except UnicodeDecodeError as exc:
        raise InputError(str(manifest), "workspace", f"cannot read manifest: {exc}") from None


def _replace(manifest: Path, text: str) -> None:
    """`text` checked by the manifest reader, then written over `manifest` atomically."""
    tmp = manifest.with_name(f".{manifest.name}.{secrets.token_hex(6)}.tmp")
    try:
        try:
            with tmp.open("x", encoding="utf-8", newline="") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            with contextlib.suppress(OSError):
                os.chmod(tmp, manifest.stat().st_mode & 0o7777)
        except OSError as exc:
            if exc.errno in UNWRITABLE:
                raise _unwritable(manifest, exc) from None
            raise
        try:
            read_manifest(tmp)
        except InputError as exc:
            raise InputError(str(manifest), "workspace", f"not saved: {exc.problem}") from None
        os.replace(tmp, manifest)
        with contextlib.suppress(OSError):  # the rename itself made durable
            fd = os.open(manifest.parent, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _runs_of(manifest: Path, text: str) -> list[dict[str, Any]]:
    data = _parses(text)
    if data is None:
        try:
            tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise InputError(str(manifest), "workspace", f"not saved: the manifest does not parse: {exc}") from None
    runs = (data or {}).get("runs", [])
    if not isinstance(runs, list):
        raise InputError(str(manifest), "workspace", "not saved: [[runs]] is not an array of tables")
    return runs


def _changed_note(manifest: Path, text: str) -> str:
    names = [r.get("name") for r in _runs_of(manifest, text) if isinstance(r, dict)]
    return f"{manifest.name} changed since it was read (it now lists {len(names)} runs); that change is kept"


# --- saving ----------------------------------------------------------------------------------------


def add_run(manifest: str | Path, table: dict[str, Any], *, expected_digest: str | None = None) -> Saved:
    """Append the `[[runs]]` table `table` (name, pred, ... as a manifest writes them) to `manifest`.

    `expected_digest`: the digest of the manifest the caller read; when the file changed since, the run
    is added to its current version unless that now has a run of the same name (refused)."""
    manifest = Path(manifest)
    with _locked(manifest):
        return _add_locked(manifest, table, expected_digest, ())


def _add_locked(
    manifest: Path, table: dict[str, Any], expected_digest: str | None, uploads: tuple[tuple[str, bytes], ...]
) -> Saved:
    text, digest = _read(manifest)
    runs = _runs_of(manifest, text)
    name = table.get("name")
    merged = _changed_note(manifest, text) if expected_digest is not None and digest != expected_digest else ""
    if any(isinstance(r, dict) and r.get("name") == name for r in runs):
        when = "was added to the manifest since you read it" if merged else "is already in the manifest"
        raise InputError(str(manifest), "workspace", f"not saved: a run named {name!r} {when}; choose another name")
    new_text = _appended(text, table)
    before, after = tomllib.loads(text), _parses(new_text)
    expected = {**before, "runs": [*runs, table]}
    if after != expected:
        raise InputError(
            str(manifest), "workspace", "not saved: appending a [[runs]] table to this manifest changes other keys"
        )
    written: list[str] = []
    try:
        for rel, data in uploads:
            path = manifest.parent / rel
            if not path.exists():
                path.parent.mkdir(exist_ok=True)
                _write_new(path, data)
                written.append(rel)
        _replace(manifest, new_text)
    except OSError as exc:
        _remove(manifest.parent, written)
        if exc.errno in UNWRITABLE:
            raise _unwritable(manifest, exc) from None
        raise
    except BaseException:
        _remove(manifest.parent, written)
        raise
    files = tuple(str(table[k]) for k in ("pred", "gold") if k in table)
    return Saved(manifest, str(name), files, tuple(written), merged)


def _remove(root: Path, written: list[str]) -> None:
    for rel in written:  # written by this save under the lock: no other save can have taken them up
        with contextlib.suppress(OSError):
            (root / rel).unlink()


def save_upload(
    manifest: str | Path,
    metadata: dict[str, Any],
    pred_name: str,
    pred_data: bytes,
    gold_name: str | None = None,
    gold_data: bytes | None = None,
    *,
    expected_digest: str | None = None,
    mapping: Mapping | None = None,
) -> Saved:
    """An uploaded run saved into the workspace: its prediction file (and gold file) copied under the
    root's `uploads/` folder and a `[[runs]]` table naming them, with `metadata` (`check_metadata`'s
    keys, `name` required), appended to the manifest; `mapping`: the declared mapping the prediction file
    was read by (`analysis.formats.mapping`), written as the run's `mapping` table so the workspace reads
    the file the same way. Raises `NotSavedError` when the root cannot be written, `InputError` for
    anything refused (nothing is then written)."""
    manifest = Path(manifest)
    table = check_metadata(manifest, metadata)
    if "name" not in table:
        raise InputError(str(manifest), "workspace", "the run needs a name")
    if mapping is not None:
        if "format" in table:
            raise InputError(str(manifest), "workspace", "not saved: give a format or a mapping, not both")
        table["mapping"] = mapping.declared()
    root = manifest.parent
    uploads = root / UPLOADS
    if uploads.is_symlink() or (uploads.exists() and not uploads.is_dir()):
        raise InputError(str(manifest), "workspace", f"not saved: {uploads} is not a plain folder of the workspace")
    with _locked(manifest):
        pred_rel, _ = _upload_target(root, pred_name, pred_data)
        files = [(pred_rel, pred_data)]
        full = {"name": table["name"], "pred": pred_rel}
        if gold_data is not None:
            gold_rel, _ = _upload_target(root, gold_name or "gold", gold_data)
            if gold_rel == pred_rel and gold_data != pred_data:  # two uploads of one name: the gold gets the suffix
                gold_rel = f"{UPLOADS}/{_with_digest(safe_file_name(gold_name or 'gold'), content_digest(gold_data))}"
            files.append((gold_rel, gold_data))
            full["gold"] = gold_rel
        full |= {k: v for k, v in table.items() if k != "name"}
        return _add_locked(manifest, full, expected_digest, tuple(files))


def content_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def edit_run(
    manifest: str | Path,
    name: str,
    values: dict[str, Any],
    *,
    seen: dict[str, Any] | None = None,
    expected_digest: str | None = None,
) -> Saved:
    """Set run `name`'s metadata to `values` (`check_metadata`'s keys but `name`; an empty value removes
    the key, the run then takes the default) in place, keeping the rest of the file as it is.

    `seen`: the run's values as the caller showed them (`editable_values`); with `expected_digest`, when
    the manifest changed since, the edit is merged unless the run is gone or one of the keys it changes
    was changed meanwhile (refused, saying which)."""
    manifest = Path(manifest)
    if "name" in values:
        raise InputError(str(manifest), "workspace", "a run's name is not edited here (links and mappings use it)")
    checked = check_metadata(manifest, values)
    wanted = {key: checked.get(key) for key in values}
    with _locked(manifest):
        text, digest = _read(manifest)
        runs = _runs_of(manifest, text)
        index = next((i for i, r in enumerate(runs) if isinstance(r, dict) and r.get("name") == name), None)
        if index is None:
            raise InputError(
                str(manifest), "workspace", f"not saved: the manifest has no run named {name!r} (removed?)"
            )
        merged = ""
        if expected_digest is not None and digest != expected_digest:
            merged = _changed_note(manifest, text)
            if seen is not None:
                data = tomllib.loads(text)
                current = _effective_values(data, runs[index])
                mine = _effective_values(data, {k: v for k, v in {**runs[index], **wanted}.items() if v is not None})
                clashes = [
                    f"{key} is now {current[key]!r} (was {seen.get(key)!r})"
                    for key in wanted
                    if current[key] != seen.get(key) and mine[key] != current[key]
                ]
                if clashes:
                    raise InputError(
                        str(manifest),
                        "workspace",
                        f"not saved: run {name!r} was edited meanwhile: {'; '.join(clashes)}; reload and edit again",
                    )
        changes = {k: v for k, v in wanted.items() if runs[index].get(k) != v}
        if not changes:
            return Saved(manifest, name, merged=merged)
        new_text = _edited(text, index, changes)
        expected_run = {k: v for k, v in {**runs[index], **changes}.items() if v is not None}
        before = tomllib.loads(text)
        after = _parses(new_text)
        if after != {**before, "runs": [*runs[:index], expected_run, *runs[index + 1 :]]}:
            raise InputError(
                str(manifest),
                "workspace",
                f"not saved: run {name!r}'s table is written in a way this editor cannot change in place; "
                "edit the manifest by hand",
            )
        try:
            _replace(manifest, new_text)
        except OSError as exc:
            if exc.errno in UNWRITABLE:
                raise _unwritable(manifest, exc) from None
            raise
    return Saved(manifest, name, merged=merged)


def _effective_values(data: dict[str, Any], raw: dict[str, Any]) -> dict[str, Any]:
    """`editable_values` of the run table `raw` of the manifest `data`: the manifest's defaults filled in
    as `analysis.workspace` fills them (system: the name; convention: the workspace's)."""
    head = data.get("workspace", {}) if isinstance(data.get("workspace"), dict) else {}
    defaults = {
        "system": raw.get("name"),
        "dataset": "",
        "language": "",
        "split": "test",
        "history": "predicted",
        "seed": None,
        "convention": head.get("convention"),
        "format": None,
        "description": "",
    }
    return {key: raw.get(key, default) for key, default in defaults.items()}
