"""`python -m analysis sniff FILE`: the structure a file's records have, and a mapping proposed to read it.

The proposal is a `Mapping` (`analysis.formats.mapping`) guessed from the first records' field names and
value shapes, then tried on the whole file: the output says how many turns it reads, or the one-line
error it meets. A file of a known format names that format (it reads without any flag); a family
declared as a mapping shows its declaration, a starting point for a variant.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

from analysis.errors import InputError
from analysis.formats.engine import Collector, json_type_name
from analysis.formats.families import CHECKDST_BOOK_SLOTS
from analysis.formats.mapping import ENCODINGS, KEY, SELF, Mapping, read_mapping
from analysis.formats.reading import parse_records

SAMPLE = 20  # records looked at for the guesses
DIALOGUE_NAMES = ("dialogue_id", "dial_id", "dialog_id", "dialogue_idx", "dialogue", "ID", "id", "conversation_id")
TURN_NAMES = ("turn_id", "turn_index", "turn_idx", "turn", "turn_num", "turn_number", "utt_idx")
ID_NAMES = ("dial_id", "flag", "id", "ID", "key", "sample_id", "example_id", "guid", "uid")
GOLD_NAMES = (
    "gold",
    "gold_state",
    "ground_truth",
    "slot_values",
    "belief_state",
    "turn_belief",
    "gt",
    "gt_m21",
    "label",
    "labels",
    "target",
    "reference",
    "gold_belief",
)
PRED_NAMES = (
    "pred",
    "prediction",
    "predict",
    "predicted",
    "pred_state",
    "pred_belief",
    "pred_bs_ptr",
    "pr",
    "predicted_state",
    "pred_slot_values",
    "output_state",
)
USER_NAMES = ("user", "usr", "transcript", "user_utterance", "utterance")
TURN_LIST_NAMES = ("turns", "turn_details", "dialogue", "log", "turn_list", "utterances")
_ID_SPLITS = {"-": r"^(?P<dialogue>.+)-(?P<turn>\d+)$", "_": r"^(?P<dialogue>.+)_(?P<turn>\d+)$"}


def _shape(value: Any, depth: int = 0) -> str:
    """A short description of a JSON value's shape: `object of 3 strings`, `array of 2 objects`."""
    if type(value) is dict:
        if not value:
            return "empty object"
        kinds = {json_type_name(v).removeprefix("a JSON ").removeprefix("JSON ") for v in value.values()}
        inner = kinds.pop() + "s" if len(kinds) == 1 else "mixed values"
        return f"object of {len(value)} {inner}"
    if type(value) is list:
        if not value:
            return "empty array"
        kinds = {json_type_name(v).removeprefix("a JSON ").removeprefix("JSON ") for v in value}
        inner = kinds.pop() + "s" if len(kinds) == 1 else "mixed items"
        return f"array of {len(value)} {inner}"
    return json_type_name(value).removeprefix("a JSON ").removeprefix("JSON ")


def _example(value: Any, limit: int = 70) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _locate(records: Any) -> tuple[str, Any, str]:
    """(records path, the records container, how each record relates to turns: 'turn', 'dialogue-list'
    (a dialogue record that is itself its list or object of turns), 'dialogue-field:<key>')."""
    container = records
    path = ""
    if type(container) is dict and len(container) == 1:
        ((key, only),) = container.items()
        if type(only) in (list, dict) and only:
            container, path = only, key
    sample = _sample(container)
    if not sample:
        return path, container, "turn"
    if all(type(r) is list for r in sample) or (
        type(container) is dict
        and all(type(r) is dict and r and all(type(v) is dict for v in r.values()) for r in sample)
        and not any(_named(r, GOLD_NAMES + PRED_NAMES) for r in sample)
    ):
        return path, container, "dialogue-list"
    first = sample[0]
    if type(first) is dict:
        for key in (*TURN_LIST_NAMES, *first):
            value = first.get(key)
            if (
                type(value) is list
                and value
                and type(value[0]) is dict
                and key not in GOLD_NAMES + PRED_NAMES
                and _named(value[0], GOLD_NAMES + PRED_NAMES + ("state",))
            ):
                return path, container, f"dialogue-field:{key}"
    return path, container, "turn"


def _sample(container: Any) -> list[Any]:
    items = list(container.values())[:SAMPLE] if type(container) is dict else container[:SAMPLE]
    return items if type(container) in (dict, list) else []


def _named(record: Any, names: tuple[str, ...]) -> str | None:
    return next((n for n in names if type(record) is dict and n in record), None)


def _encoding(values: list[Any]) -> str:
    """The encoding the sampled state values look like (`ENCODINGS`)."""
    present = [v for v in values if v not in (None, "", {}, [])]
    if not present:
        return "auto"
    value = present[0]
    if type(value) is dict:
        inner = list(value.values())
        if inner and all(type(v) is dict for v in inner):
            if any({"semi", "book"} & v.keys() for v in inner):
                return "semi_book"
            return "nested"
        if all("-" in str(k) for v in present if type(v) is dict for k in v):
            return "flat"
        return "nested"
    if type(value) is list:
        if all(type(v) is str for v in value):
            return "triple_strings" if all(v.count("-") >= 2 for v in value) else "auto"
        return "triples"
    if type(value) is str:
        return "span" if value.lstrip().startswith("(") else "linearised"
    return "auto"


def propose(records: Any) -> dict[str, Any]:
    """A mapping for `records`, as a dict of the fields that differ from the defaults (maybe incomplete)."""
    path, container, kind = _locate(records)
    fields: dict[str, Any] = {}
    if path:
        fields["records"] = path
    sample = _sample(container)
    if kind == "dialogue-list":
        fields["turns"] = SELF
        fields["dialogue"] = KEY
        inner = sample[0] if sample else []
        fields["turn"] = "@index" if type(inner) is list else KEY
        turns = [t for d in sample for t in (d if type(d) is list else d.values())][:SAMPLE]
    elif kind.startswith("dialogue-field:"):
        fields["turns"] = kind.split(":", 1)[1]
        first = sample[0]
        fields["dialogue"] = _named(first, DIALOGUE_NAMES) or (KEY if type(container) is dict else "")
        turns = [t for d in sample for t in d[fields["turns"]]][:SAMPLE]
        fields["turn"] = _named(turns[0], TURN_NAMES) or "@index"
    else:
        turns = sample
        keyed = _keyed_ids(container)
        id_field = _id_field(turns) if keyed is None else (KEY, keyed)
        if id_field is not None:
            fields["id"], separator = id_field
            if separator != "-":
                fields["id_pattern"] = _ID_SPLITS[separator]
        else:
            first = turns[0] if turns else {}
            fields["dialogue"] = _named(first, DIALOGUE_NAMES) or ""
            fields["turn"] = _named(first, TURN_NAMES) or _kind_field(turns, _is_turn_number)
            if not fields["dialogue"]:
                taken = {fields["turn"]}
                fields["dialogue"] = _kind_field(turns, _is_text, taken)
    first_turn = turns[0] if turns and type(turns[0]) is dict else {}
    golds = [n for n in first_turn if n in GOLD_NAMES or re.search(r"gold|truth|^gt", n)]
    preds = [n for n in first_turn if n in PRED_NAMES or (re.search(r"pred", n) and n not in golds)]
    golds = [n for n in golds if type(first_turn[n]) in (dict, list, str)]
    preds = [n for n in preds if type(first_turn[n]) in (dict, list, str, type(None))]
    gold = next((n for n in GOLD_NAMES if n in golds), golds[0] if golds else "")
    pred = next((n for n in PRED_NAMES if n in preds), preds[0] if preds else "")
    if bool(gold) != bool(pred):  # the other side: the one other field of the same type, if any
        known = gold or pred
        used = {known, fields.get("dialogue"), fields.get("turn"), fields.get("id")}
        alike = [n for n in first_turn if n not in used and type(first_turn[n]) is type(first_turn[known])]
        if len(alike) == 1:
            gold, pred = (gold, alike[0]) if gold else (alike[0], pred)
    if gold:
        fields["gold"] = gold
        if len(golds) > 1:
            fields["gold_choices"] = golds
    if pred:
        fields["pred"] = pred
    encodings = {
        side: _encoding([t.get(name) for t in turns if type(t) is dict])
        for side, name in (("gold", gold), ("pred", pred))
        if name
    }
    if len(set(encodings.values())) == 1:
        fields["encoding"] = next(iter(encodings.values()))
    else:
        for side, encoding in encodings.items():
            fields[f"{side}_encoding"] = encoding
    texts = [t.get(n) for t in turns if type(t) is dict for n in (gold, pred) if n]
    if "linearised" in encodings.values() and any(type(v) is str and " book " in f" {v}" for v in texts):
        fields["multiword_slots"] = list(CHECKDST_BOOK_SLOTS)  # MultiWOZ's `book day`, ... as one slot
    user = _named(first_turn, USER_NAMES)
    if user and type(first_turn[user]) is str:
        fields["user"] = user
    return {k: v for k, v in fields.items() if v != "" and not (k == "encoding" and v == "auto")}


def _keyed_ids(container: Any) -> str | None:
    """The separator when an object's keys are `<dialogue><sep><turn>` (SOM-DST-style), else None."""
    if type(container) is not dict or not container:
        return None
    keys = list(container)[:SAMPLE]
    return next((sep for sep, p in _ID_SPLITS.items() if all(re.match(p, str(k)) for k in keys)), None)


def _is_turn_number(value: Any) -> bool:
    return (type(value) is int and value >= 0) or (type(value) is str and value.isascii() and value.isdigit())


def _is_text(value: Any) -> bool:
    return type(value) is str and 0 < len(value) <= 200


def _kind_field(turns: list[Any], test: Callable[[Any], bool], taken: AbstractSet[Any] = frozenset()) -> str:
    """The first field every sampled turn holds a value of `test` in, "" when none does."""
    dicts = [t for t in turns if type(t) is dict]
    if not dicts:
        return ""
    return next((n for n in dicts[0] if n not in taken and all(test(t.get(n)) for t in dicts)), "")


def _id_field(turns: list[Any]) -> tuple[str, str] | None:
    """(a field every sampled turn holds as `<dialogue><sep><turn>`, its separator), or None."""
    dicts = [t for t in turns if type(t) is dict]
    if not dicts or _named(dicts[0], TURN_NAMES):
        return None
    names = [n for n in ID_NAMES if n in dicts[0]] + [n for n in dicts[0] if n not in ID_NAMES]
    for name in names:
        for separator, pattern in _ID_SPLITS.items():
            if all(type(t.get(name)) is str and re.match(pattern, t[name]) for t in dicts):
                return name, separator
    return None


def try_mapping(name: str, records: Any, fields: dict[str, Any]) -> dict[str, Any]:
    """Read `records` with the mapping `fields`: {"reads": True, turns, dialogues} or {"reads": False, error}."""
    try:
        values: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()}
        mapping = Mapping(**values)
    except TypeError as exc:
        return {"reads": False, "error": str(exc)}
    problems = mapping.problems()
    if problems:
        return {"reads": False, "error": "; ".join(problems)}
    collector = Collector(name, "mapping", sides=tuple(s for s in ("gold", "pred") if getattr(mapping, s)))
    try:
        read_mapping(records, collector, mapping=mapping)
        parsed = collector.finish()
    except InputError as exc:
        return {"reads": False, "error": str(exc)}
    except (KeyError, TypeError, AttributeError, ValueError, IndexError, RecursionError) as exc:
        return {"reads": False, "error": f"unexpected structure ({type(exc).__name__}: {exc})"}
    return {
        "reads": True,
        "turns": len(parsed.turns),
        "dialogues": int(parsed.turns["dialogue_id"].nunique()),
        "gold_slots": 0 if parsed.gold is None else len(parsed.gold),
        "pred_slots": 0 if parsed.pred is None else len(parsed.pred),
        "notes": parsed.notes,
    }


def sniff(path: str | Path, *, data: bytes | None = None) -> dict[str, Any]:
    """What `python -m analysis sniff` shows: the structure of a file's records, the format detected (if
    any), and a proposed mapping with the result of reading the file by it. `data`: the file's bytes (an
    upload), read instead of `path`, which then only names it."""
    container_kind, records = parse_records(path, data=data)
    return sniff_records(str(path), container_kind, records)


def sniff_records(name: str, container_kind: str, records: Any) -> dict[str, Any]:
    """`sniff` of records already parsed (`parse_records`: the container kind and the value)."""
    from analysis.formats import FORMATS_BY_NAME, detect_format

    spec = detect_format(container_kind, records)
    records_path, container, kind = _locate(records)
    sample = _sample(container)
    first = sample[0] if sample else None
    record_fields = (
        [{"field": k, "shape": _shape(v), "example": _example(v)} for k, v in first.items()]
        if type(first) is dict
        else []
    )
    # A family declared as a mapping shows its declaration: the start of a variant's mapping.
    proposal = spec.mapping.declared() if spec is not None and spec.mapping is not None else propose(records)
    out: dict[str, Any] = {
        "file": name,
        "container": container_kind,
        "top_level": _shape(records),
        "records": records_path or "(top level)",
        "n_records": len(container) if type(container) in (dict, list) else 0,
        "record_kind": kind,
        "first_record": record_fields if record_fields else _example(first, 200),
        "detected_format": spec.name if spec is not None else None,
        "proposed_mapping": proposal,
        "encodings": list(ENCODINGS),
        "result": try_mapping(name, records, proposal),
        "manifest": manifest_line(proposal),
        "cli": cli_option(proposal),
    }
    if spec is not None:
        out["detected_summary"] = FORMATS_BY_NAME[spec.name].summary
    return out


def manifest_line(fields: dict[str, Any]) -> str:
    """The mapping as a manifest `[[runs]]` key: `mapping = { id = "dial_id", ... }`."""
    return "mapping = { " + ", ".join(f"{k} = {json.dumps(v, ensure_ascii=False)}" for k, v in fields.items()) + " }"


def mapping_option(fields: dict[str, Any]) -> str:
    """The mapping as `parse_mapping_option` reads it back: `key=value,...` (lists `a|b`), or an inline
    table when a value holds a comma or a quote, or starts or ends with a space, or a list item holds `|`.

    >>> mapping_option({"id": "dial_id", "pred": "pred", "multiword_slots": ["book day", "book time"]})
    'id=dial_id,pred=pred,multiword_slots=book day|book time'
    >>> mapping_option({"dialogue": "conv", "turn": "step", "pred": "a,b"})
    '{ dialogue = "conv", turn = "step", pred = "a,b" }'
    """
    values = {k: "|".join(v) if isinstance(v, list) else str(v) for k, v in fields.items()}
    piped = any("|" in item for v in fields.values() if isinstance(v, list) for item in v)
    if piped or any("," in v or "'" in v or v != v.strip() for v in values.values()):
        return "{ " + ", ".join(f"{k} = {json.dumps(v, ensure_ascii=False)}" for k, v in fields.items()) + " }"
    return ",".join(f"{k}={v}" for k, v in values.items())


def cli_option(fields: dict[str, Any]) -> str:
    """The mapping as the CLI's `--mapping` option (`mapping_option`, quoted for a shell)."""
    return f"--mapping '{mapping_option(fields)}'"


def structure_text(found: dict[str, Any]) -> list[str]:
    """The lines of `sniff_text` that say what the file holds: its container, records, detected format
    and first record's fields."""
    lines = [
        f"file: {found['file']}",
        f"read as {found['container']}: {found['top_level']}; records at {found['records']} "
        f"({found['n_records']:,}, each a {found['record_kind'].split(':')[0].replace('-', ' ')})",
    ]
    if found["detected_format"]:
        lines.append(f"detected format: {found['detected_format']} (reads without a flag): {found['detected_summary']}")
    else:
        lines.append("detected format: none (format not recognised): read it by the mapping below")
    lines += ["", "first record:"]
    if isinstance(found["first_record"], list):
        width = max((len(f["field"]) for f in found["first_record"]), default=0)
        lines += [f"  {f['field']:<{width}}  {f['shape']:<24}  {f['example']}" for f in found["first_record"]]
    else:
        lines.append(f"  {found['first_record']}")
    return lines


def brief_text(found: dict[str, Any], *, fields: int = 12) -> str:
    """What the file holds, briefly and in a narrow column (the upload form): its container, records and
    the first record's first `fields` fields, one a line, unpadded.

    >>> print(brief_text(sniff_records("x.jsonl", "jsonl", [{"conv": "d1", "step": 1, "hyp": "a b c,"}]), fields=2))
    read as jsonl: array of 1 objects
    records at (top level): 1, each a turn
    first record:
      conv: string "d1"
      step: number 1
      … 1 more field
    """
    lines = [
        f"read as {found['container']}: {found['top_level']}",
        f"records at {found['records']}: {found['n_records']:,}, each a "
        + found["record_kind"].split(":")[0].replace("-", " "),
        "first record:",
    ]
    first = found["first_record"]
    if isinstance(first, list):
        lines += [f"  {f['field']}: {f['shape']} {f['example']}" for f in first[:fields]]
        if len(first) > fields:
            more = len(first) - fields
            lines.append(f"  … {more:,} more field{'s' if more > 1 else ''}")
    else:
        lines.append(f"  {first}")
    return "\n".join(lines)


def verdict_text(result: dict[str, Any]) -> str:
    """What reading the file by the proposed mapping gave (`try_mapping`), in words."""
    return (
        f"reads {result['turns']:,} turns in {result['dialogues']:,} dialogues "
        f"({result['gold_slots']:,} gold, {result['pred_slots']:,} predicted slot values)"
        if result["reads"]
        else f"does not read the file yet: {result['error']}"
    )


def sniff_text(found: dict[str, Any]) -> str:
    lines = structure_text(found)
    result = found["result"]
    lines += [
        "",
        f"proposed mapping ({verdict_text(result)}):",
        f"  manifest [[runs]]:  {found['manifest']}",
        f"  command line:       {found['cli']}",
        "  keys: records, turns, dialogue, turn, id, id_pattern, gold, pred, encoding "
        f"({', '.join(found['encodings'])}), gold_encoding, pred_encoding, user, ... (analysis/formats/mapping.py)",
    ]
    if result["reads"] and result["notes"]:
        lines.append("  notes: " + "; ".join(f"{k.replace('_', ' ')}: {v}" for k, v in result["notes"].items()))
    return "\n".join(lines)
