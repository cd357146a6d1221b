"""Schema-guided dialogue files (SGD, MultiWOZ 2.2) and their schemas, read into tables.

A dialogue file is a JSON list of dialogues `{"dialogue_id", "services", "turns": [{"speaker",
"utterance", "frames": [...]}]}`; a USER turn's frame (one per service) carries `state`:
`{"active_intent", "requested_slots", "slot_values": {slot: [acceptable values]}}`. The SGD baseline
writes its predictions into copies of these files, so gold and predictions are read alike.

Input may be one file (`.json`, `.json.gz`, a single-member `.zip`) or a directory holding
`dialogues_*.json[.gz]` (the dataset's split layout; `dialogues_and_metrics.json`, the evaluator's own
output, is skipped). A dialogue id found twice, in one file or across files, is refused: never merged.

Malformed input raises one `InputError` naming the file, the format `sgd`, the dialogue and the turn.

The readers' stage (`analysis.formats`): the declared format `sgd` (`analysis.formats.sgd`) parses
through it, and the SGD evaluator (`analysis.sgd`, which re-exports the public names) scores its tables.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.errors import InputError
from analysis.formats.reading import limit, parse_records, read_bytes, too_big

FORMAT = "sgd"
# The dataset's own dialogue files (`dialogues_001.json`, also `test_dialogues_001.json.gz`); not the
# evaluator's `dialogues_and_metrics.json`.
DIALOGUE_FILE = re.compile(r"dialogues_\d+\.json(\.gz)?$")
SCHEMA_FILES = ("schema.json", "schema.json.gz")
FRAME_COLUMNS = [
    "dialogue_id",
    "turn_index",
    "service",
    "active_intent",
    "requested_slots",
    "slot_values",
    "spans",
]


@dataclass(frozen=True)
class Service:
    """One service of a schema: its slots in schema order, which are categorical, and its intents."""

    name: str
    slots: tuple[str, ...]
    categorical: tuple[bool, ...]
    intents: tuple[str, ...]

    @property
    def domain(self) -> str:
        """The evaluator's domain of a service: its name up to the first underscore (`Restaurants_2`)."""
        return self.name.split("_")[0]


@dataclass(frozen=True)
class Schema:
    """A schema file: services by name, in file order."""

    path: str
    services: dict[str, Service]

    def __contains__(self, name: object) -> bool:
        return name in self.services

    def __getitem__(self, name: str) -> Service:
        return self.services[name]

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self.services)


@dataclass(frozen=True)
class SgdDialogues:
    """Dialogue files as tables.

    `frames`: one row per USER-turn frame: `dialogue_id`, `turn_index` (0-based index of the user turn in
    its dialogue), `service`, `active_intent`, `requested_slots` (tuple), `slot_values` (dict slot ->
    tuple of acceptable values), `spans` (tuple of (slot, start, exclusive_end), None when the frame has
    no `slots` key). `turns`: one row per USER turn: `dialogue_id`, `turn_index`, `user` (utterance),
    `system` (the system reply after it, None when none), `n_frames`. `sources`: the files read.
    """

    frames: pd.DataFrame
    turns: pd.DataFrame
    sources: tuple[str, ...]
    dialogue_ids: tuple[str, ...]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Cyclic garbage collection off while millions of acyclic objects (decoded JSON, rows) are made:
    its passes grow with the heap, so a full SGD test set would pay for them more than linearly."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def dialogue_files(path: str | Path) -> list[Path]:
    """The dialogue files of `path`: itself, or a directory's `dialogues_*.json[.gz]` in name order."""
    p = Path(path)
    if not p.is_dir():
        return [p]
    files = sorted(f for f in p.iterdir() if f.is_file() and DIALOGUE_FILE.search(f.name))
    if not files:
        raise InputError(str(p), FORMAT, "directory holds no SGD dialogue files (dialogues_*.json or .json.gz)")
    return files


def records_of(path: str | Path) -> tuple[list[Any], list[str]]:
    """The dialogues of `path` (a file or a directory of them) as one list, and for each its file.

    Refuses a top level that is not a list of objects with a string `dialogue_id`, and a dialogue id
    that occurs twice (in one file or across the files of a directory)."""
    dialogues: list[Any] = []
    origin: list[str] = []
    seen: dict[str, str] = {}
    files = dialogue_files(path)
    # Each file is within the per-file limits, but 14 of them made 6.6 GB: their total is bounded too,
    # on disk before anything is read, then unpacked as each is read.
    cap = limit("directory_bytes", str(path), FORMAT) if len(files) > 1 else 0
    if cap and sum(_disk_size(f) for f in files) > cap:
        raise too_big(str(path), FORMAT, f"the total of the directory's {len(files)} dialogue files", ENV_TOTAL, cap)
    total = 0
    for file in files:
        name = str(file)
        if cap:
            raw = read_bytes(file, fmt=FORMAT)
            total += len(raw)
            if total > cap:
                raise too_big(str(path), FORMAT, "the unpacked total of the directory's dialogue files", ENV_TOTAL, cap)
            unpacked = raw if len(raw) <= limit("file_bytes", name, FORMAT) else None
            _, records = parse_records(file, fmt=FORMAT, data=unpacked)
            del raw, unpacked
        else:
            _, records = parse_records(file, fmt=FORMAT)
        if type(records) is not list:
            raise InputError(name, FORMAT, f"the top level must be a JSON list of dialogues, got {_kind(records)}")
        for position, dialogue in enumerate(records):
            if type(dialogue) is not dict:
                raise InputError(name, FORMAT, f"dialogue {position} must be an object, got {_kind(dialogue)}")
            dialogue_id = dialogue.get("dialogue_id")
            if type(dialogue_id) is not str or not dialogue_id.strip():
                raise InputError(
                    name,
                    FORMAT,
                    f"dialogue {position}: dialogue_id must be a non-empty string, got {dialogue_id!r}",
                    field="dialogue_id",
                )
            if dialogue_id in seen:
                where = "earlier in this file" if seen[dialogue_id] == name else f"in {Path(seen[dialogue_id]).name}"
                raise InputError(
                    name,
                    FORMAT,
                    f"dialogue id occurs twice (also {where}); dialogues are never merged",
                    dialogue_id=dialogue_id,
                )
            seen[dialogue_id] = name
            dialogues.append(dialogue)
            origin.append(name)
    return dialogues, origin


ENV_TOTAL = "DST_MAX_DIRECTORY_BYTES"


def _disk_size(file: Path) -> int:
    try:
        return file.stat().st_size
    except OSError:  # gone or unreadable: reading it says what is wrong
        return 0


def directory_records(path: str | Path, *, fmt: str | None = None) -> tuple[str, Any]:
    """A directory read as one file: SGD / MultiWOZ 2.2's `dialogues_*.json[.gz]`, the only format laid
    out as a directory, as one list of dialogues (a dialogue id in two files is refused)."""
    if fmt not in (None, "sgd"):
        raise InputError(
            str(path), fmt, f"is a directory, not a file: only the sgd format reads a directory, not {fmt}"
        )
    if not any(DIALOGUE_FILE.search(entry.name) for entry in Path(path).iterdir()):
        raise InputError(
            str(path),
            fmt,
            "is a directory, not a file (a directory is read only when it holds SGD dialogue files, dialogues_*.json)",
        )
    return "json", records_of(path)[0]


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


_ONLY_STR = frozenset({str})


def _string_list(value: Any) -> bool:
    return type(value) is list and _ONLY_STR.issuperset(map(type, value))


def read_dialogues(path: str | Path) -> SgdDialogues:
    """Read SGD / MultiWOZ 2.2 dialogue files (a file or a directory) into frame and turn tables."""
    with gc_paused():
        dialogues, origin = records_of(path)
        return dialogues_table(dialogues, origin, path)


def dialogues_table(dialogues: list[Any], origin: list[str], path: str | Path) -> SgdDialogues:
    """The tables of already parsed dialogues (`origin[i]` the file of `dialogues[i]`)."""
    f_rows: list[tuple[Any, ...]] = []
    t_rows: list[tuple[Any, ...]] = []
    for dialogue, name in zip(dialogues, origin, strict=True):
        dialogue_id = dialogue["dialogue_id"]
        turns = dialogue.get("turns")
        if type(turns) is not list:
            raise InputError(name, FORMAT, f"turns must be a list, got {_kind(turns)}", dialogue_id=dialogue_id)
        user_index = -1
        for number, turn in enumerate(turns):
            if type(turn) is not dict:
                raise InputError(
                    name, FORMAT, f"turn {number} must be an object, got {_kind(turn)}", dialogue_id=dialogue_id
                )
            speaker = turn.get("speaker")
            utterance = turn.get("utterance")
            if type(utterance) is not str:
                raise InputError(
                    name,
                    FORMAT,
                    f"turn {number} ({speaker}): utterance must be a string, got {_kind(utterance)}",
                    dialogue_id=dialogue_id,
                    field="utterance",
                )
            if speaker == "SYSTEM":
                if user_index >= 0 and t_rows[-1][3] is None:
                    last = t_rows[-1]
                    t_rows[-1] = (last[0], last[1], last[2], utterance, last[4])
                continue
            if speaker != "USER":
                raise InputError(
                    name,
                    FORMAT,
                    f"turn {number}: speaker must be USER or SYSTEM, got {speaker!r}",
                    dialogue_id=dialogue_id,
                    field="speaker",
                )
            user_index += 1
            frames = turn.get("frames")
            if type(frames) is not list:
                raise InputError(
                    name,
                    FORMAT,
                    f"user turn (turn {number} of the file): frames must be a list, got {_kind(frames)}",
                    dialogue_id=dialogue_id,
                    turn=user_index,
                    field="frames",
                )
            services: set[str] = set()
            for frame in frames:
                row = _frame(frame, name, dialogue_id, user_index)
                if row[2] in services:
                    raise InputError(
                        name,
                        FORMAT,
                        f"two frames of this turn are for service {row[2]!r}",
                        dialogue_id=dialogue_id,
                        turn=user_index,
                        field="frames",
                    )
                services.add(row[2])
                f_rows.append(row)
            t_rows.append((dialogue_id, user_index, utterance, None, len(frames)))
    frames_table = pd.DataFrame(f_rows, columns=FRAME_COLUMNS)
    frames_table["turn_index"] = frames_table["turn_index"].astype("int64")
    turns_table = pd.DataFrame(t_rows, columns=["dialogue_id", "turn_index", "user", "system", "n_frames"])
    turns_table["turn_index"] = turns_table["turn_index"].astype("int64")
    sources = tuple(dict.fromkeys(origin)) or (str(path),)
    return SgdDialogues(frames_table, turns_table, sources, tuple(d["dialogue_id"] for d in dialogues))


def _frame(frame: Any, name: str, dialogue_id: str, turn: int) -> tuple[Any, ...]:
    def fail(problem: str, field: str) -> InputError:
        return InputError(name, FORMAT, problem, dialogue_id=dialogue_id, turn=turn, field=field)

    if type(frame) is not dict:
        raise fail(f"a frame must be an object, got {_kind(frame)}", "frames")
    service = frame.get("service")
    if type(service) is not str or not service:
        raise fail(f"frame service must be a non-empty string, got {service!r}", "service")
    state = frame.get("state")
    if type(state) is not dict:
        raise fail(f"user frame of {service} has no state object (got {_kind(state)})", "state")
    intent = state.get("active_intent")
    if type(intent) is not str:
        raise fail(f"{service}: active_intent must be a string, got {_kind(intent)}", "state.active_intent")
    requested = state.get("requested_slots")
    if not _string_list(requested):
        raise fail(f"{service}: requested_slots must be a list of strings", "state.requested_slots")
    raw_values = state.get("slot_values")
    if type(raw_values) is not dict:
        raise fail(f"{service}: slot_values must be an object {{slot: [values]}}", "state.slot_values")
    values: dict[str, tuple[str, ...]] = {}
    for slot, listed in raw_values.items():
        if not _string_list(listed) or not listed:
            shown = "an empty list" if listed == [] else _kind(listed)
            raise fail(
                f"{service}: slot_values[{slot!r}] must be a non-empty list of strings, got {shown}",
                f"state.slot_values.{slot}",
            )
        values[slot] = tuple(listed)
    spans = None
    raw_spans = frame.get("slots")
    if raw_spans is not None:
        if type(raw_spans) is not list:
            raise fail(f"{service}: slots (spans) must be a list, got {_kind(raw_spans)}", "slots")
        try:
            spans = tuple((s["slot"], int(s["start"]), int(s["exclusive_end"])) for s in raw_spans)
        except (KeyError, TypeError, ValueError):
            raise fail(f"{service}: each slot span needs slot, start and exclusive_end", "slots") from None
    return (dialogue_id, turn, service, intent, tuple(requested or ()), values, spans)


def schema_beside(path: str | Path) -> Path | None:
    """`schema.json[.gz]` in the directory of `path` (or in `path` itself when it is a directory)."""
    p = Path(path)
    folder = p if p.is_dir() else p.parent
    for name in SCHEMA_FILES:
        if (folder / name).is_file():
            return folder / name
    return None


def read_schema(path: str | Path) -> Schema:
    """A schema file (`schema.json`, `.gz` or `.zip`): a list of services with `service_name`, `slots`
    (`name`, `is_categorical`) and `intents` (`name`)."""
    name = str(path)
    if Path(path).is_dir():
        found = schema_beside(path)
        if found is None:
            raise InputError(name, "sgd-schema", "directory holds no schema.json")
        name, path = str(found), found
    _, records = parse_records(path, fmt="sgd-schema")
    if type(records) is not list or not records:
        raise InputError(
            name, "sgd-schema", f"a schema must be a non-empty JSON list of services, got {_kind(records)}"
        )
    services: dict[str, Service] = {}
    for position, entry in enumerate(records):
        if type(entry) is not dict or type(entry.get("service_name")) is not str:
            raise InputError(name, "sgd-schema", f"service {position} must be an object with a service_name")
        service = entry["service_name"]
        slots = entry.get("slots")
        if type(slots) is not list or not all(
            type(s) is dict and type(s.get("name")) is str and type(s.get("is_categorical")) is bool for s in slots
        ):
            raise InputError(
                name, "sgd-schema", f"service {service}: slots must be a list of {{name, is_categorical}} objects"
            )
        intents = entry.get("intents", [])
        if type(intents) is not list or not all(type(i) is dict and type(i.get("name")) is str for i in intents):
            raise InputError(name, "sgd-schema", f"service {service}: intents must be a list of {{name}} objects")
        if service in services:
            raise InputError(name, "sgd-schema", f"service {service} is listed twice")
        services[service] = Service(
            service,
            tuple(s["name"] for s in slots),
            tuple(s["is_categorical"] for s in slots),
            tuple(i["name"] for i in intents),
        )
    return Schema(name, services)
