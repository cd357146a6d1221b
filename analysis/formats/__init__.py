"""Every supported file format, detected or forced, parsed by one engine into canonical tables."""

from __future__ import annotations

import gc
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from analysis.errors import InputError
from analysis.formats import cache
from analysis.formats.engine import Collector, ParsedFile, json_type_name
from analysis.formats.mapping import Mapping, mapping_summary, read_mapping
from analysis.formats.reading import parse_records
from analysis.formats.sgd_files import directory_records
from analysis.formats.specs import FORMATS, FORMATS_BY_NAME, FormatSpec

__all__ = ["FORMATS", "FormatSpec", "Mapping", "ParsedFile", "detect_format", "format_names", "parse_file"]
MAPPING_FORMAT = "mapping"  # the format name of a file read by a user's declared mapping


_MEMORY: OrderedDict[str, ParsedFile] = OrderedDict()
_MEMORY_LOCK = threading.Lock()
MEMORY_ENTRIES = 8  # parsed files kept in memory: a workspace's runs mostly share one or two gold files


def _shallow(parsed: ParsedFile) -> ParsedFile:
    """A copy whose tables share data but not identity (copy-on-write): callers may add columns freely."""
    return replace(
        parsed,
        turns=parsed.turns.copy(deep=False),
        gold=None if parsed.gold is None else parsed.gold.copy(deep=False),
        pred=None if parsed.pred is None else parsed.pred.copy(deep=False),
        notes=dict(parsed.notes),
    )


def _remember(key: str, parsed: ParsedFile) -> None:
    with _MEMORY_LOCK:
        _MEMORY[key] = _shallow(parsed)
        _MEMORY.move_to_end(key)
        while len(_MEMORY) > MEMORY_ENTRIES:
            _MEMORY.popitem(last=False)


def format_names() -> list[str]:
    return [spec.name for spec in FORMATS]


def detect_format(container: str, records: object) -> FormatSpec | None:
    """The first declared format whose container matches and whose detector accepts the records (formats
    read only when named left out)."""
    for spec in FORMATS:
        if spec.detected and spec.container == container and _detects(spec, records):
            return spec
    return None


def _detects(spec: FormatSpec, records: object) -> bool:
    """A detector's verdict; a detector tripping over an odd shape means the shape is not its format."""
    try:
        return bool(spec.detect(records))
    except (KeyError, TypeError, AttributeError, ValueError, IndexError, RecursionError):
        return False


def parse_file(
    path: str | Path,
    *,
    fmt: str | None = None,
    data: bytes | None = None,
    use_cache: bool = True,
    store_cache: bool = True,
    mapping: Mapping | None = None,
    gold_field: str | None = None,
) -> ParsedFile:
    """Read one file (plain, .gz, .zip or `archive.zip::member`) as `fmt`, or as a declared `mapping`
    (`analysis.formats.mapping`), or as the format detected from its content. `gold_field` names the
    field read as gold in a format declared as a mapping (or in `mapping`) that offers a choice.

    Any problem, from a missing file to a wrong type deep inside a state, is an `InputError` whose
    message names the file, the format and the first offending record. Files on disk are cached as
    Arrow IPC tables (`analysis.formats.cache`); uploaded `data` never is. `store_cache=False` reads the
    cache but does not add to it (nor to the memory of recent files): for a file read once, whose results
    are kept elsewhere (the score store's batch scoring).
    """
    if data is None and Path(path).is_dir():
        use_cache = False  # a directory (SGD's dialogues_*.json) keeps its stat when a file in it changes
    if mapping is not None and fmt is not None:
        raise InputError(str(path), fmt, "give a format or a mapping, not both")
    if data is None and use_cache:
        # Runs of one workspace share gold files: the last few parsed files are also kept in memory, keyed
        # like the disk cache (path, size, mtime, format, parser digest), so each is read once per process.
        how = fmt if mapping is None and gold_field is None else f"{fmt}\0{mapping and mapping.digest()}\0{gold_field}"
        key = cache.memory_key(Path(path), how)
        if key is not None:
            with _MEMORY_LOCK:
                remembered = _MEMORY.get(key)
            if remembered is not None:
                return _shallow(remembered)
        cached = cache.load_cached(Path(path), how)
        if cached is None:
            cached = parse_file(path, fmt=fmt, use_cache=False, mapping=mapping, gold_field=gold_field)
            if not store_cache:
                return cached
            cache.store(Path(path), how, cached)
        if key is not None and store_cache:
            _remember(key, cached)
        return cached
    # Garbage collection is off for the whole parse: the decoded JSON, the walk's rows and the tables are
    # acyclic (freed by reference counting), and each collection while they are alive traverses all of
    # them (on a MultiWOZ-size file, a full collection during the decode cost ~0.08 s of a 0.45 s parse).
    # The decoded records are dropped before collection resumes, so it finds little new to traverse.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _parse_uncached(path, fmt, data, mapping, gold_field)
    finally:
        if collecting:
            gc.enable()


def _parse_uncached(
    path: str | Path, fmt: str | None, data: bytes | None, mapping: Mapping | None, gold_field: str | None
) -> ParsedFile:
    name = str(path)
    if fmt is not None and fmt not in FORMATS_BY_NAME:
        raise InputError(name, fmt, f"unknown format {fmt!r}; known formats: {', '.join(format_names())}")
    if mapping is not None:
        return _parse_mapped(name, data, mapping, gold_field)
    if data is None and Path(path).is_dir():
        container, records = directory_records(path, fmt=fmt)
    else:
        container, records = parse_records(path, fmt=fmt, data=data)
    if fmt is None:
        spec = detect_format(container, records)
        if spec is None:
            raise InputError(name, None, _undetected(container, records))
    else:
        spec = FORMATS_BY_NAME[fmt]
        if spec.container != container and not (spec.container == "jsonl" and container == "json"):
            raise InputError(name, fmt, f"format {fmt} is {spec.container}, but the file reads as {container}")
        if container == "json" and spec.container == "jsonl" and isinstance(records, list):
            item = next((i for i, record in enumerate(records) if not isinstance(record, dict)), None)
            if item is not None:
                what = json_type_name(records[item])
                raise InputError(
                    name, fmt, f"item {item} of the JSON array is {what}, expected an object (one {fmt} record)"
                )
            container = "jsonl"  # a JSON array of line records is accepted for JSONL formats
        if not _detects(spec, records):
            raise InputError(name, fmt, f"content does not have the {fmt} shape: {spec.summary}; e.g. {spec.example}")
    collector = Collector(
        name,
        spec.name,
        sides=("gold", "pred") if spec.sides == "both" else (spec.sides,),
        keep_empty_pred=spec.keep_empty_pred,
    )
    parse = spec.parse
    if gold_field is not None:
        if spec.mapping is None or not spec.mapping.gold:
            raise InputError(name, spec.name, f"the {spec.name} format has no choice of gold field (--gold-field)")
        parse = partial(read_mapping, mapping=replace(spec.mapping, gold=gold_field), gold_chosen=True)
    box = [records]
    del records  # held by `box` alone, so that `_walk` frees them before building the tables
    return _walk(parse, box, collector)


def _parse_mapped(name: str, data: bytes | None, mapping: Mapping, gold_field: str | None) -> ParsedFile:
    """A file read by a user's declared mapping: JSON or JSONL, whatever its shape."""
    problems = mapping.problems()
    if problems:
        raise InputError(name, MAPPING_FORMAT, "unusable mapping: " + "; ".join(problems))
    _, records = parse_records(name, fmt=MAPPING_FORMAT, data=data)
    chosen = gold_field is not None
    if gold_field is not None:
        mapping = replace(mapping, gold=gold_field)
    collector = Collector(
        name,
        f"{MAPPING_FORMAT} ({mapping_summary(mapping)})",
        sides=tuple(s for s in ("gold", "pred") if getattr(mapping, s)),
    )
    box = [records]
    del records
    parsed = _walk(partial(read_mapping, mapping=mapping, gold_chosen=chosen), box, collector)
    parsed.fmt = MAPPING_FORMAT
    return parsed


def _walk(parse: Callable[[Any, Collector], None], box: list[Any], collector: Collector) -> ParsedFile:
    """Parse the records `box` holds (its only reference to them) into tables."""
    records = box.pop()
    try:
        parse(records, collector)
    except InputError:
        raise
    except (KeyError, TypeError, AttributeError, ValueError, IndexError, RecursionError) as exc:
        # A shape no check anticipated: still one message at the record being read, never a traceback.
        raise collector.error(f"unexpected structure ({type(exc).__name__}: {exc})") from None
    del records  # freed now, while collection is still off (see parse_file)
    return collector.finish()


def _undetected(container: str, records: object) -> str:
    if isinstance(records, dict) and not records:
        shape = "an empty JSON object"
    elif isinstance(records, list) and not records:
        shape = "an empty list"
    elif isinstance(records, dict):
        shape = "a JSON object whose entries match no known format"
    else:
        shape = f"{container} records of no known shape"
    return f"format not recognised ({shape}); known formats: {', '.join(format_names())} (python -m analysis formats)"
