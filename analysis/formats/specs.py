"""Declared formats: each is a detector plus a walk over records into the shared Collector."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from itertools import chain, repeat
from operator import itemgetter
from typing import Any

import numpy as np
import pyarrow as pa

from analysis.formats.convlab3 import CONVLAB3_FORMATS
from analysis.formats.dstc10 import DSTC10_FORMATS
from analysis.formats.engine import MAX_TURNS_PER_DIALOGUE, Collector, expect, split_triples
from analysis.formats.families import FAMILY_FORMATS
from analysis.formats.mapping import Mapping
from analysis.formats.more import MORE_FORMATS
from analysis.formats.sgd import SGD_FORMATS
from analysis.formats.states import (
    any_state,
    multiwoz_metadata,
    nested_state,
    parse_span,
)
from analysis.formats.vectors import VECTOR_FORMATS

# CrossWOZ's Chinese dialogue types and the short codes CrossWOZ-en and the paper use.
CROSSWOZ_TYPES = {
    "单领域": "S",
    "独立多领域": "M",
    "独立多领域+交通": "M+T",
    "不独立多领域": "CM",
    "不独立多领域+交通": "CM+T",
}
# Key pairs under which nested per-turn files hold (gold, prediction), most specific first.
KEY_PAIRS = (("turn_belief", "pred_belief"), ("gold", "pred"), ("gt", "pr"))


@dataclass(frozen=True, kw_only=True)
class FormatSpec:
    name: str
    container: str  # json, jsonl or csv
    sides: str  # "both": gold and prediction; "gold": a gold-shaped single state; "pred": predictions only
    summary: str
    example: str
    detect: Callable[[Any], bool]
    parse: Callable[[Any, Collector], None]
    # Predictions name only the slots a system emitted, so a predicted "" is kept (see Collector).
    keep_empty_pred: bool = False
    # The convention the format's own community scores it under (`analysis.loading` reads it when a run
    # declares none): a file written by a scorer's pipeline is scored by that scorer's rules.
    default_convention: str = "exact"
    # A format declared as a mapping (`analysis.formats.mapping`): its declaration, read by the one engine.
    mapping: Mapping | None = None
    # False: read only when named (`--format`, manifest `format`), because another format's detector accepts
    # the same files (`icdst-completion` reads an `icdst` file another way).
    detected: bool = True


def _dialogue_id(c: Collector, raw: Any) -> str:
    """A dialogue id from a record: a non-empty string or an integer, nothing else."""
    if isinstance(raw, bool) or not isinstance(raw, str | int) or (isinstance(raw, str) and not raw.strip()):
        raise c.error(f"dialogue_id must be a non-empty string or an integer, got {raw!r}", "dialogue_id")
    return str(raw)


def _first(mapping: Any) -> Any:
    if isinstance(mapping, dict) and mapping:
        return next(iter(mapping.values()))
    return None


def _first_turn(records: Any) -> Any:
    first = _first(records)
    if isinstance(first, list) and first:
        return first[0]
    if isinstance(first, dict):
        return _first(first)
    return None


def _dialogues(records: Any, c: Collector, shape: type) -> list[tuple[str, Any]]:
    expect(c, records, dict, "the top level", None)
    out = []
    for dialogue_id, body in records.items():
        c.at(dialogue_id)
        expect(c, body, shape, "a dialogue")
        out.append((str(dialogue_id), body))
    return out


# --- a. TRADE -------------------------------------------------------------------------------------


def _detect_trade(records: Any) -> bool:
    turn = _first_turn(records)
    return (
        isinstance(turn, dict)
        and isinstance(turn.get("turn_belief"), list)
        and ("pred_bs_ptr" in turn or "pred_belief" in turn)
    )


def _parse_trade(records: Any, c: Collector) -> None:
    first = _first_turn(records)
    pred_key = "pred_bs_ptr" if "pred_bs_ptr" in first else "pred_belief"  # one key for the whole file
    if _trade_columns(records, c, pred_key):
        return
    # Something unusual somewhere: record by record, whose checks name the first problem.
    for dialogue_id, turns in _dialogues(records, c, dict):
        for raw_turn, body in turns.items():
            c.at(dialogue_id, raw_turn)
            t = c.turn_index(raw_turn)
            expect(c, body, dict, "a turn")
            for key in ("turn_belief", pred_key):
                if key not in body:
                    raise c.error("missing key", key)
            c.add_turn(dialogue_id, t)
            c.add_triple_strings("gold", dialogue_id, t, body["turn_belief"], "turn_belief")
            c.add_triple_strings("pred", dialogue_id, t, body[pred_key], pred_key)


def _trade_columns(records: Any, c: Collector, pred_key: str) -> bool:
    """Read a regular TRADE file whole, as the record-by-record walk would, but with the triples split by
    one Arrow pass per side (`split_triples`) and both sides' rows recorded as columns: a quarter of the
    walk's time. False, with nothing recorded, at the first thing the walk would refuse or treat specially
    (a turn key that is not plain digits, a missing key, a state that is not a list of strings, a triple
    without two hyphens, an empty name or value, a very long value, a turn index given twice)."""
    if type(records) is not dict:
        return False
    dialogues: list[str] = []
    turn_dialogue: list[int] = []
    turn_numbers: list[int] = []
    gold: list[str] = []  # every turn's items, in order, and how many each turn has
    pred: list[str] = []
    gold_counts: list[int] = []
    pred_counts: list[int] = []
    for position, (dialogue_id, turns) in enumerate(records.items()):
        if type(turns) is not dict:
            return False
        dialogues.append(dialogue_id)
        numbers = []
        for raw_turn, body in turns.items():
            if not (type(raw_turn) is str and raw_turn.isascii() and raw_turn.isdigit() and len(raw_turn) <= 18):
                return False
            if type(body) is not dict:
                return False
            gold_items, pred_items = body.get("turn_belief"), body.get(pred_key)
            if type(gold_items) is not list or type(pred_items) is not list:
                return False
            numbers.append(int(raw_turn))
            gold += gold_items
            gold_counts.append(len(gold_items))
            pred += pred_items
            pred_counts.append(len(pred_items))
        if len(set(numbers)) != len(numbers) or (numbers and max(numbers) > MAX_TURNS_PER_DIALOGUE):
            return False
        turn_numbers += numbers
        turn_dialogue += repeat(position, len(numbers))
    split = [split_triples(gold), split_triples(pred)]  # refuses anything but strings, too
    if split[0] is None or split[1] is None:
        return False
    ids = pa.array(dialogues, type=pa.large_string())
    row_turn = np.arange(len(turn_numbers))
    for dialogue_id in dialogues:
        c.at(dialogue_id)
    numbers_array = np.array(turn_numbers, dtype=np.int64)
    for position, number in zip(turn_dialogue, turn_numbers, strict=True):
        c.add_turn(dialogues[position], number)
    turn_ids = np.array(turn_dialogue, dtype=np.int64)
    for side, counts, (domains, slots, values) in (("gold", gold_counts, split[0]), ("pred", pred_counts, split[1])):
        rows = np.repeat(row_turn, counts)
        c.add_state_arrays(side, ids.take(turn_ids[rows]), numbers_array[rows], domains, slots, values)
    return True


# --- b. mwzeval-style predictions ------------------------------------------------------------------


def _detect_mwzeval(records: Any) -> bool:
    turn = _first_turn(records)
    return isinstance(turn, dict) and "state" in turn and not {"usr", "sys"} & turn.keys()


def _parse_mwzeval(records: Any, c: Collector) -> None:
    dialogues = _dialogues(records, c, list)
    if _plain_mwzeval(dialogues, c):
        return
    # Something unusual somewhere: turn by turn, whose checks name the first problem.
    for dialogue_id, turns in dialogues:
        for t, body in enumerate(turns):
            c.at(dialogue_id, t)
            expect(c, body, dict, "a turn")
            if "state" not in body:
                raise c.error("missing key", "state")
            c.add_turn(dialogue_id, t)
            state = body["state"]
            c.add_state("pred", dialogue_id, t, partial(nested_state, state, "state"), state=state)


_STATE = itemgetter("state")
_ONLY_DICT = frozenset({dict})


def _plain_mwzeval(dialogues: list[tuple[str, list[Any]]], c: Collector) -> bool:
    """Every turn of every dialogue recorded at once by `Collector.add_prediction_turns` (a turn's index is
    its position in the dialogue's list) when each turn is an object with a plain `state`; False, with
    nothing recorded, for anything else: the caller then reads turn by turn, as before."""
    lists = [turns for _, turns in dialogues]
    bodies = list(chain.from_iterable(lists))
    if not _ONLY_DICT.issuperset(map(type, bodies)):
        return False
    try:
        states = list(map(_STATE, bodies))
    except KeyError:
        return False
    sizes = list(map(len, lists))
    dialogue_ids = list(chain.from_iterable(map(repeat, (d for d, _ in dialogues), sizes)))
    turn_indices = list(chain.from_iterable(map(range, sizes)))
    return c.add_prediction_turns(dialogue_ids, turn_indices, states)


# --- c. MultiWOZ raw dialogues ------------------------------------------------------------------


def _detect_multiwoz(records: Any) -> bool:
    first = _first(records)
    return isinstance(first, dict) and isinstance(first.get("log"), list)


def _parse_multiwoz(records: Any, c: Collector) -> None:
    for dialogue_id, body in _dialogues(records, c, dict):
        log = expect(c, body.get("log"), list, "log", "log")
        if len(log) % 2:
            c.at(dialogue_id, len(log) // 2)
            raise c.error("log has an odd number of entries: the last user turn has no system reply", "log")
        # Dialogue kind from the id prefix: SNG single-domain, MUL/PMUL multi-domain.
        kind = next((p for p in ("PMUL", "MUL", "SNG", "SSNG", "WOZ") if dialogue_id.upper().startswith(p)), "")
        for t in range(len(log) // 2):
            c.at(dialogue_id, t)
            user, system = log[2 * t], log[2 * t + 1]
            expect(c, user, dict, "a log entry", "log")
            expect(c, system, dict, "a log entry", "log")
            c.add_turn(dialogue_id, t, user=user.get("text"), system=system.get("text"), type=kind)
            c.add_state("gold", dialogue_id, t, partial(multiwoz_metadata, system.get("metadata"), "metadata"))


# --- d. CrossWOZ raw dialogues ------------------------------------------------------------------


def _detect_crosswoz(records: Any) -> bool:
    first = _first(records)
    return isinstance(first, dict) and isinstance(first.get("messages"), list)


def _parse_crosswoz(records: Any, c: Collector) -> None:
    for dialogue_id, body in _dialogues(records, c, dict):
        messages = expect(c, body.get("messages"), list, "messages", "messages")
        raw_type = body.get("type")
        kind = CROSSWOZ_TYPES.get(raw_type, raw_type) if isinstance(raw_type, str) else ""
        t = 0
        for i, message in enumerate(messages):
            c.at(dialogue_id, t)
            expect(c, message, dict, "a message", "messages")
            if message.get("role") != "usr":
                continue
            reply = messages[i + 1] if i + 1 < len(messages) else None
            if not isinstance(reply, dict) or reply.get("role") != "sys":
                raise c.error("user message is not followed by a system message holding the state", "messages")
            if "sys_state_init" not in reply:
                raise c.error("system message has no sys_state_init", "sys_state_init")
            c.add_turn(dialogue_id, t, user=message.get("content"), system=reply.get("content"), type=kind)
            state = reply["sys_state_init"]
            c.add_state(
                "gold",
                dialogue_id,
                t,
                partial(nested_state, state, "sys_state_init", skip_slots=frozenset({"selectedResults"})),
            )
            t += 1


# --- e. DSTC9 track-2 gold and submissions --------------------------------------------------------


def _detect_dstc9_gold(records: Any) -> bool:
    turn = _first_turn(records)
    return isinstance(turn, dict) and "state" in turn and "usr" in turn


def _parse_dstc9_gold(records: Any, c: Collector) -> None:
    for dialogue_id, turns in _dialogues(records, c, list):
        for t, body in enumerate(turns):
            c.at(dialogue_id, t)
            expect(c, body, dict, "a turn")
            if "state" not in body:
                raise c.error("missing key", "state")
            following = turns[t + 1] if t + 1 < len(turns) else None
            # `sys` is the reply *before* this user turn; our `system` column is the reply after it.
            system = following.get("sys") if isinstance(following, dict) else None
            attrs: dict[str, Any] = {"user": body.get("usr"), "system": system}
            if isinstance(body.get("type"), str):
                attrs["type"] = CROSSWOZ_TYPES.get(body["type"], body["type"])
            c.add_turn(dialogue_id, t, **attrs)
            c.add_state("gold", dialogue_id, t, partial(nested_state, body["state"], "state"))


def _detect_dstc9_submission(records: Any) -> bool:
    turn = _first_turn(records)
    if not isinstance(turn, dict) or not turn:
        return False
    return all(isinstance(v, dict) and all(not isinstance(x, dict) for x in v.values()) for v in turn.values())


def _parse_dstc9_submission(records: Any, c: Collector) -> None:
    for dialogue_id, turns in _dialogues(records, c, list):
        for t, state in enumerate(turns):
            c.at(dialogue_id, t)
            c.add_turn(dialogue_id, t)
            c.add_state("pred", dialogue_id, t, partial(nested_state, state, "state"))


# --- f. nested per-turn files with gold and prediction under a key pair ---------------------------


def _key_pair(turn: Any) -> tuple[str, str] | None:
    if isinstance(turn, dict):
        for pair in KEY_PAIRS:
            if pair[0] in turn and pair[1] in turn:
                return pair
    return None


def _detect_nested(records: Any) -> bool:
    turn = _first_turn(records)
    return _key_pair(turn) is not None and not _detect_trade(records)


def _parse_nested(records: Any, c: Collector) -> None:
    pair = _key_pair(_first_turn(records))
    assert pair is not None  # detection or the forced-format check guarantees it
    gold_key, pred_key = pair
    expect(c, records, dict, "the top level")
    for dialogue_id, turns in records.items():
        dialogue_id = str(dialogue_id)
        c.at(dialogue_id)
        if isinstance(turns, list):
            items = []
            for position, body in enumerate(turns):
                c.at(dialogue_id, position)
                expect(c, body, dict, "a turn")
                items.append((body.get("turn", position), body))
        elif isinstance(turns, dict):
            items = list(turns.items())
        else:
            raise c.error("a dialogue must be a list of turns or an object keyed by turn")
        for raw_turn, body in items:
            c.at(dialogue_id, raw_turn)
            t = c.turn_index(raw_turn)
            expect(c, body, dict, "a turn")
            for key in (gold_key, pred_key):
                if key not in body:
                    raise c.error("missing key", key)
            c.add_turn(dialogue_id, t)
            c.add_state("gold", dialogue_id, t, partial(any_state, body[gold_key], gold_key))
            c.add_state("pred", dialogue_id, t, partial(any_state, body[pred_key], pred_key))


# --- g. RiSAWOZ span strings ---------------------------------------------------------------------


def _detect_risawoz_jsonl(records: Any) -> bool:
    return (
        isinstance(records, list)
        and bool(records)
        and {"dialogue_id", "turn_index", "gold", "prediction"} <= records[0].keys()
    )


def _parse_risawoz_jsonl(records: Any, c: Collector) -> None:
    for line, record in enumerate(records, start=1):
        c.at(record.get("dialogue_id", f"<line {line}>"), record.get("turn_index"))
        for key in ("dialogue_id", "turn_index", "gold", "prediction"):
            if key not in record:
                raise c.error(f"line {line} lacks a required key", key)
        dialogue_id = _dialogue_id(c, record["dialogue_id"])
        t = c.turn_index(record["turn_index"], "turn_index")
        gold, prediction = record["gold"], record["prediction"]
        expect(c, gold, str, "gold span state", "gold")
        expect(c, prediction, (str, type(None)), "prediction span state", "prediction")
        c.add_turn(dialogue_id, t, user=_risawoz_user(record.get("input")))
        c.add_state("gold", dialogue_id, t, partial(parse_span, gold, "gold"))
        _add_prediction_span(c, dialogue_id, t, prediction or "null", "prediction")


def _add_prediction_span(c: Collector, dialogue_id: str, t: int, span: str, field: str) -> None:
    """A model's span may be garbled: keep what parses, count the turn, never fail the file."""
    strict_ok = True
    try:
        parse_span(span, field)
    except Exception:
        strict_ok = False
    if not strict_ok:
        c.note("unparsable_prediction_turns")
    c.add_state("pred", dialogue_id, t, partial(parse_span, span, field, lenient=True))


def _risawoz_user(model_input: Any) -> str | None:
    if not isinstance(model_input, str) or "USER:" not in model_input:
        return None
    return model_input.rsplit("USER:", 1)[1].replace("<endofhistory>", "").strip()


def _detect_dialogues_predictions(records: Any) -> bool:
    first = _first(records)
    if not (isinstance(first, dict) and isinstance(first.get("turns"), dict)):
        return False
    turn = _first(first["turns"])
    return isinstance(turn, dict) and isinstance(turn.get("state"), str | type(None))


def _parse_dialogues_predictions(records: Any, c: Collector) -> None:
    for dialogue_id, body in _dialogues(records, c, dict):
        turns = expect(c, body.get("turns"), dict, "turns", "turns")
        indices = []
        for key, value in turns.items():
            c.at(dialogue_id, key)
            indices.append((c.turn_index(key), value))
        # stanford-oval/dialogues numbers turns from 1; ours start at 0.
        base = 1 if indices and min(i for i, _ in indices) == 1 else 0
        for index, turn in indices:
            t = index - base
            c.at(dialogue_id, t)
            expect(c, turn, dict, "a turn")
            span = turn.get("state")
            expect(c, span, (str, type(None)), "state", "state")
            c.add_turn(dialogue_id, t)
            _add_prediction_span(c, dialogue_id, t, span or "null", "state")


# --- h. our own JSONL and CSV ---------------------------------------------------------------------


def _detect_jsonl(records: Any) -> bool:
    return isinstance(records, list) and bool(records) and {"dialogue_id", "turn_index"} <= records[0].keys()


def _parse_jsonl(records: Any, c: Collector) -> None:
    sides = [s for s in ("gold", "pred") if s in records[0]]
    if not sides:
        raise c.error("line 1 has neither 'gold' nor 'pred'", "gold")
    if sides == ["pred"] and _plain_predictions(records, c):
        return
    for line, record in enumerate(records, start=1):
        c.at(record.get("dialogue_id", f"<line {line}>"), record.get("turn_index"))
        for key in ("dialogue_id", "turn_index", *sides):
            if key not in record:
                raise c.error(f"line {line} lacks a required key", key)
        dialogue_id = _dialogue_id(c, record["dialogue_id"])
        t = c.turn_index(record["turn_index"], "turn_index")
        attrs = {k: record[k] for k in ("user", "system") if k in record}
        c.add_turn(dialogue_id, t, **attrs)
        for side in sides:
            # A state object of strings only takes the collector's fast path; anything else is flattened
            # (and checked) by `any_state`, as before.
            c.add_state(side, dialogue_id, t, partial(any_state, record[side], side), state=record[side])


_ID_TURN_PRED = itemgetter("dialogue_id", "turn_index", "pred")


def _plain_predictions(records: list[dict[str, Any]], c: Collector) -> bool:
    """A predictions-only file of plain lines (a string dialogue id, an int turn index, a state object of
    strings, no utterances) recorded at once by `Collector.add_prediction_turns`; False, with nothing
    recorded, for anything else: the caller then reads line by line, as before."""
    if any(map(dict.__contains__, records, repeat("user"))) or any(map(dict.__contains__, records, repeat("system"))):
        return False
    try:
        dialogue_ids, turn_indices, states = zip(*map(_ID_TURN_PRED, records), strict=True)
    except KeyError:
        return False
    return c.add_prediction_turns(dialogue_ids, turn_indices, states)


CSV_COLUMNS = ("dialogue_id", "turn_index", "side", "domain", "slot", "value")


def _detect_csv(records: Any) -> bool:
    return isinstance(records, list) and (not records or set(CSV_COLUMNS) <= records[0].keys())


def _parse_csv(records: Any, c: Collector) -> None:
    if not records:
        raise c.error("CSV has a header but no rows")
    missing = [k for k in CSV_COLUMNS if k not in records[0]]
    if missing:
        raise c.error(f"CSV lacks columns {', '.join(missing)} (needs {', '.join(CSV_COLUMNS)})")
    # Turns are listed by any row; a turn whose states are all empty is a row with empty domain/slot.
    grouped: dict[tuple[str, int], dict[str, list[tuple[str, str, str, str]]]] = {}
    for line, row in enumerate(records, start=2):
        c.at(row["dialogue_id"], row["turn_index"])
        dialogue_id = _dialogue_id(c, row["dialogue_id"])
        t = c.turn_index(row["turn_index"], "turn_index")
        side = row["side"]
        if side not in ("gold", "pred", ""):
            raise c.error(f"CSV line {line}: side must be 'gold' or 'pred', got {side!r}", "side")
        entry = grouped.setdefault((dialogue_id, t), {"gold": [], "pred": []})
        if side and row["domain"] and row["slot"]:
            relation = row.get("relation") or "="
            entry[side].append((row["domain"], row["slot"], relation, row["value"] or ""))
    sides = [s for s in ("gold", "pred") if any(states[s] for states in grouped.values())]
    for (dialogue_id, t), states in grouped.items():
        c.add_turn(dialogue_id, t)
        for side in sides:
            c.add_state(side, dialogue_id, t, partial(iter, states[side]))


FORMATS: tuple[FormatSpec, ...] = (
    *(FormatSpec(**fields) for fields in FAMILY_FORMATS),  # real files' families, declared as mappings
    *(FormatSpec(**fields) for fields in MORE_FORMATS),  # before jsonl: an LLM record has its two keys
    FormatSpec(
        name="risawoz",
        container="jsonl",
        sides="both",
        summary="X-RiSAWOZ per-turn JSONL with span-string gold and prediction",
        example='{"dialogue_id": "d1", "turn_index": 0, "gold": "( hotel ) area equal_to \\" east \\"", "prediction": "null"}',
        detect=_detect_risawoz_jsonl,
        parse=_parse_risawoz_jsonl,
        default_convention="risawoz",
    ),
    FormatSpec(
        name="jsonl",
        container="jsonl",
        sides="both",
        summary="our JSONL: one turn a line, gold and pred as state objects or triple lists",
        example='{"dialogue_id": "MUL0001", "turn_index": 0, "gold": {"hotel": {"area": "east"}}, '
        '"pred": [["hotel", "area", "east"]], "user": "a hotel in the east"}',
        detect=_detect_jsonl,
        parse=_parse_jsonl,
    ),
    FormatSpec(
        name="csv",
        container="csv",
        sides="both",
        summary="our CSV of triples: one row per (dialogue, turn, side, domain, slot)",
        example="dialogue_id,turn_index,side,domain,slot,value\\nMUL0001,0,gold,hotel,area,east",
        detect=_detect_csv,
        parse=_parse_csv,
    ),
    FormatSpec(
        name="trade",
        container="json",
        sides="both",
        summary="TRADE output: turn_belief and pred_bs_ptr (or pred_belief) triple strings",
        example='{"MUL0001.json": {"0": {"turn_belief": ["hotel-area-east"], "pred_bs_ptr": ["hotel-area-east"]}}}',
        detect=_detect_trade,
        parse=_parse_trade,
        default_convention="trade",
    ),
    FormatSpec(
        name="dialogues",
        container="json",
        sides="pred",
        summary="stanford-oval/dialogues predictions: span-string states keyed by turn",
        example='{"d1": {"turns": {"1": {"state": "( hotel ) area equal_to \\" east \\""}}}}',
        detect=_detect_dialogues_predictions,
        parse=_parse_dialogues_predictions,
        default_convention="risawoz",
    ),
    FormatSpec(
        name="multiwoz",
        container="json",
        sides="gold",
        summary="MultiWOZ / MultiWOZ-zh raw dialogues (ConvLab-2 test.json): log with metadata",
        example='{"MUL0001.json": {"goal": {}, "log": [{"text": "hi", "metadata": {}}, '
        '{"text": "hello", "metadata": {"hotel": {"semi": {"area": "east"}, "book": {"booked": []}}}}]}}',
        detect=_detect_multiwoz,
        parse=_parse_multiwoz,
    ),
    FormatSpec(
        name="crosswoz",
        container="json",
        sides="gold",
        summary="CrossWOZ / CrossWOZ-en raw dialogues: messages with sys_state_init, type",
        example='{"1": {"type": "单领域", "messages": [{"role": "usr", "content": "..."}, '
        '{"role": "sys", "content": "...", "sys_state_init": {"酒店": {"名称": ""}}}]}}',
        detect=_detect_crosswoz,
        parse=_parse_crosswoz,
    ),
    FormatSpec(
        name="dstc9",
        container="json",
        sides="gold",
        summary="DSTC9 track-2 gold: per turn sys, usr and the full state",
        example='{"MUL0001": [{"sys": null, "usr": "hi", "state": {"hotel": {"area": "east", "name": ""}}}]}',
        detect=_detect_dstc9_gold,
        parse=_parse_dstc9_gold,
        default_convention="dstc9",
    ),
    FormatSpec(
        name="nested",
        container="json",
        sides="both",
        summary="per-turn gold and prediction under gold/pred, gt/pr or turn_belief/pred_belief",
        example='{"MUL0001": [{"turn": 0, "gold": {"hotel": {"area": "east"}}, "pred": {"hotel": {"area": "west"}}}]}',
        detect=_detect_nested,
        parse=_parse_nested,
    ),
    FormatSpec(
        name="mwzeval",
        container="json",
        sides="pred",
        summary="mwzeval-style predictions: per dialogue a list of turns with a state",
        example='{"mul0001": [{"response": "...", "state": {"hotel": {"area": "east"}}}]}',
        detect=_detect_mwzeval,
        parse=_parse_mwzeval,
        keep_empty_pred=True,
        default_convention="mwzeval",
    ),
    FormatSpec(
        name="dstc9-submission",
        container="json",
        sides="pred",
        summary="DSTC9 track-2 submission: per dialogue a list of bare states",
        example='{"MUL0001": [{"hotel": {"area": "east", "name": ""}}]}',
        detect=_detect_dstc9_submission,
        parse=_parse_dstc9_submission,
        default_convention="dstc9",
    ),
    *(FormatSpec(**fields) for fields in DSTC10_FORMATS),  # a list of bare states, values as lists
    *(FormatSpec(**fields) for fields in VECTOR_FORMATS),  # dialogues of turns of 0/1 per slot, no values
    *(FormatSpec(**fields) for fields in SGD_FORMATS),  # before convlab3-dialogues: both are dialogue lists
    *(FormatSpec(**fields) for fields in CONVLAB3_FORMATS),
)
FORMATS_BY_NAME = {spec.name: spec for spec in FORMATS}
