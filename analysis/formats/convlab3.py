"""ConvLab-3's unified files as declared formats: prediction samples and unified dialogues, one turn a user turn.

Both are JSON lists. `convlab3` is what `convlab/base_models/t5/dst/merge_predict_res.py` writes: one
sample per user turn, `{"dialogue_id", "utt_idx", "utterance", "state", "predictions": {"state"}}`, maybe
with `context` (earlier turns, each possibly with its own `state`: history, never this sample's gold),
`speaker` and `dataset`. `convlab3-dialogues` is a unified dataset's `dialogues.json` (also its
`dummy_data.json`, or `data.zip` holding `data/dialogues.json`): dialogues with `turns`, user turns
carrying `state`.

Rules shared by both, so a prediction file aligns with the unified gold of the same data:

- The dialogue id is the one ConvLab-3 prediction samples carry: a dialogue's `original_id` (e.g.
  `SNG01856.json`, which also pairs with raw MultiWOZ files), its `dialogue_id` in sample files.
- `turn_index` of a user turn is `utt_idx // 2` when all the dialogue's user turns have the same
  `utt_idx` parity: then the dialogue alternates user/system (ConvLab-3 merges consecutive turns of one
  speaker), starting with the user (0, 2, 4, ...) or with the system (1, 3, 5, ...), and a sample left
  out of a prediction file does not shift the turns after it. Otherwise the turn index is the rank of
  the user turn by `utt_idx` within the dialogue. `utt_idx` is kept as a turn column.
- `user` is the user utterance; `system` is the reply *after* it: in a sample file, the `system`
  entries of the next sample's `context` that come after this user turn (none for a dialogue's last
  sample, or when the context does not reach back to it); in a dialogues file, the system turns
  between this user turn and the next. A system utterance that opens a dialogue (before the first
  user turn) has no turn to go with and is not shown.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Any

from analysis.errors import InputError
from analysis.formats.engine import Collector, json_type_name
from analysis.formats.states import EQ, StateError, Triple, coerce_value

MAX_UTT_IDX = 20_000  # two utterances per turn, within the engine's 10,000 turns per dialogue
TEST_SPLIT = "test"  # the split merge_predict_res.py predicts


def _kind(value: Any) -> str:
    """`a JSON array`, `JSON null`: the engine's name with the article right for "JSON" (never "an")."""
    name = json_type_name(value)
    return name if name.startswith("JSON") else "a " + name.split(" ", 1)[1]


def _fail(
    c: Collector, problem: str, *, dialogue_id: Any = None, turn: int | None = None, field: str | None = None
) -> InputError:
    """An error at a sample the engine's location (`Collector.at`) may not know yet."""
    return InputError(
        c.path, c.fmt, problem, dialogue_id=None if dialogue_id is None else str(dialogue_id), turn=turn, field=field
    )


def _utt_idx(c: Collector, raw: Any, what: str, dialogue_id: str) -> int:
    if type(raw) is not int or not 0 <= raw <= MAX_UTT_IDX:
        shown = "missing" if raw is None else f"{raw!r}"
        raise _fail(
            c,
            f"{what}: utt_idx must be an integer in 0..{MAX_UTT_IDX}, got {shown}",
            dialogue_id=dialogue_id,
            field="utt_idx",
        )
    return raw


def _turn_indices(utt_indices: list[int]) -> list[int]:
    """Turn index of each user turn of one dialogue, from its sorted `utt_idx` values (module docstring).

    >>> _turn_indices([0, 2, 6]), _turn_indices([1, 3]), _turn_indices([0, 1, 3])
    ([0, 1, 3], [0, 1], [0, 1, 2])
    """
    if len({u & 1 for u in utt_indices}) <= 1:
        return [u >> 1 for u in utt_indices]
    return list(range(len(utt_indices)))


def _state_triples(state: Any, field: str, where: str, gold: dict[str, Any] | None = None) -> Iterator[Triple]:
    """A state `{domain: {slot: value}}`. Gold (`gold` None) lists every slot, "" included, and its values
    must be strings (the official scorer calls `.split()` on them). A prediction (`gold` given) must hold
    strings at the slots the gold state lists; elsewhere the scorer ignores the slot, so lists and
    numbers are read as usual (`a|b` alternatives, decimal text)."""
    if type(state) is not dict:
        raise StateError(f"{where}: state must be an object {{domain: {{slot: value}}}}, got {_kind(state)}", field)
    for domain, slots in state.items():
        if type(slots) is not dict:
            raise StateError(f"{where}: state of domain {domain!r} must be an object, got {_kind(slots)}", field)
        for slot, value in slots.items():
            if type(value) is not str:
                at = f"{field}.{domain}.{slot}"
                if gold is None:
                    raise StateError(
                        f"{where}: slot value must be a string (ConvLab-3's scorer splits it on '|'), "
                        f"got {_kind(value)}",
                        at,
                    )
                listed = gold.get(domain)
                if isinstance(listed, dict) and slot in listed:
                    raise StateError(
                        f"{where}: predicted value of a slot the gold state lists must be a string "
                        f"(ConvLab-3's scorer splits it), got {_kind(value)}",
                        at,
                    )
                text = coerce_value(value, at)
                value = "" if text is None else text
            yield domain, slot, EQ, value


# --- convlab3: prediction samples ------------------------------------------------------------------


def detect_samples(records: Any) -> bool:
    first = records[0] if isinstance(records, list) and records else None
    return isinstance(first, dict) and "utt_idx" in first and "dialogue_id" in first and "turns" not in first


def _reply_in_context(context: Any, after: int) -> str | None:
    """The system utterances at the end of `context` that come after utt_idx `after`, or None when a user
    turn (not in the file) sits between or the context does not say."""
    if type(context) is not list:
        return None
    reply: list[str] = []
    for entry in reversed(context):
        if type(entry) is not dict:
            return None
        utt = entry.get("utt_idx")
        if type(utt) is not int or utt <= after:
            break
        utterance = entry.get("utterance")
        if entry.get("speaker") != "system" or type(utterance) is not str:
            return None
        reply.append(utterance)
    return "\n".join(reversed(reply)) if reply else None


def _where(position: int, utt: int) -> str:
    return f"sample {position} (utt_idx {utt})"


def parse_samples(records: Any, c: Collector) -> None:
    """Samples grouped by dialogue and ordered by utt_idx; `state` is gold, `predictions.state` the
    prediction. A sample without `predictions` (or without its `state`) is a turn whose prediction is
    missing: `pred_missing`, counted by the loader, never an empty state."""
    if type(records) is not list:
        raise _fail(c, f"the top level must be a list of samples, got {_kind(records)}")
    by_dialogue: dict[str, list[tuple[int, int]]] = {}
    with_prediction = 0
    datasets: set[Any] = set()
    for position, sample in enumerate(records):
        if type(sample) is not dict:
            raise _fail(c, f"sample {position} must be an object, got {_kind(sample)}")
        raw_id = sample.get("dialogue_id")
        if type(raw_id) is not str:
            if type(raw_id) is not int:
                shown = "missing" if raw_id is None else _kind(raw_id)
                raise _fail(c, f"sample {position}: dialogue_id must be a string, got {shown}", field="dialogue_id")
            raw_id = str(raw_id)
        elif not raw_id.strip():
            raise _fail(c, f"sample {position}: dialogue_id must not be empty", field="dialogue_id")
        utt: Any = sample.get("utt_idx")
        if type(utt) is not int or not 0 <= utt <= MAX_UTT_IDX:  # checked inline: 7,372 calls on MultiWOZ
            _utt_idx(c, utt, f"sample {position}", raw_id)  # raises, naming the sample
        by_dialogue.setdefault(raw_id, []).append((utt, position))
        if sample.get("predictions") is not None:
            with_prediction += 1
        if "dataset" in sample:
            datasets.add(sample["dataset"])
    mark_missing = with_prediction > 0  # a file of samples without any prediction is gold only
    keep_dataset = len(datasets) > 1  # a file merged from several datasets (`multiwoz21+sgd`)
    for dialogue_id, entries in by_dialogue.items():
        entries.sort()
        turn_indices = _turn_indices([utt for utt, _ in entries])
        for i in range(1, len(entries)):
            if entries[i][0] == entries[i - 1][0]:
                utt, position = entries[i]
                raise _fail(
                    c,
                    f"samples {entries[i - 1][1]} and {position} of this dialogue have the same utt_idx {utt}",
                    dialogue_id=dialogue_id,
                    turn=turn_indices[i],
                    field="utt_idx",
                )
        for i, (utt, position) in enumerate(entries):
            t = turn_indices[i]
            sample = records[position]
            c.at(dialogue_id, t)
            if "state" not in sample:
                raise c.error(f"{_where(position, utt)} has no gold state", "state")
            gold = sample["state"]
            if type(gold) is not dict:
                raise c.error(
                    f"{_where(position, utt)}: state must be an object {{domain: {{slot: value}}}}, got {_kind(gold)}",
                    "state",
                )
            predictions = sample.get("predictions")
            if predictions is not None and type(predictions) is not dict:
                raise c.error(
                    f'{_where(position, utt)}: predictions must be an object {{"state": ...}}, got {_kind(predictions)}',
                    "predictions",
                )
            predicted = None if predictions is None else predictions.get("state")
            attrs: dict[str, Any] = {"user": sample.get("utterance"), "utt_idx": utt}
            reply = _reply_in_context(records[entries[i + 1][1]].get("context"), utt) if i + 1 < len(entries) else None
            if reply is not None:  # left out, not None: a file without any reply still gets a text column
                attrs["system"] = reply
            if mark_missing:
                attrs["pred_missing"] = predicted is None
            if keep_dataset:
                attrs["source_dataset"] = sample.get("dataset")
            c.add_turn(dialogue_id, t, **attrs)
            # A state of strings only is read directly; anything else is flattened by `_state_triples`,
            # which checks it and names what is wrong (the message is only built then).
            if not c.add_plain_state("gold", dialogue_id, t, gold):
                c.add_state("gold", dialogue_id, t, partial(_state_triples, gold, "state", _where(position, utt)))
            if predicted is not None and not c.add_plain_state("pred", dialogue_id, t, predicted):
                where = _where(position, utt)
                c.add_state(
                    "pred", dialogue_id, t, partial(_state_triples, predicted, "predictions.state", where, gold)
                )


# --- convlab3-dialogues: unified dialogues ---------------------------------------------------------


def detect_dialogues(records: Any) -> bool:
    first = records[0] if isinstance(records, list) and records else None
    if not (isinstance(first, dict) and "dialogue_id" in first and isinstance(first.get("turns"), list)):
        return False
    turns = first["turns"]
    return not turns or (isinstance(turns[0], dict) and "speaker" in turns[0] and "utterance" in turns[0])


def _dialogue_ids(c: Collector, dialogues: list[tuple[int, dict[str, Any]]]) -> list[str]:
    """`original_id` (what prediction samples carry) when every dialogue has a distinct one, else the
    unified `dialogue_id` (noted)."""
    originals = [str(o) if type(o) in (str, int) else "" for o in (d.get("original_id") for _, d in dialogues)]
    if all(o.strip() for o in originals) and len(set(originals)) == len(originals):
        return originals
    c.note("dialogues_keyed_by_unified_id_original_ids_not_unique")
    ids = []
    for position, dialogue in dialogues:
        raw = dialogue.get("dialogue_id")
        if type(raw) not in (str, int) or not str(raw).strip():
            raise _fail(
                c, f"dialogue {position}: dialogue_id must be a non-empty string, got {raw!r}", field="dialogue_id"
            )
        ids.append(str(raw))
    return ids


def parse_dialogues(records: Any, c: Collector) -> None:
    """User turns with a `state` become gold turns. A file holding a `test` split besides others is read
    as its test split (the split ConvLab-3 predicts; the others are counted in a note). User turns
    without `state` (datasets without state annotation, e.g. dailydialog) cannot be scored: they are
    counted in a note and left out; a file with no state at all is refused."""
    if type(records) is not list:
        raise _fail(c, f"the top level must be a list of dialogues, got {_kind(records)}")
    for position, dialogue in enumerate(records):
        if type(dialogue) is not dict:
            raise _fail(c, f"dialogue {position} must be an object, got {_kind(dialogue)}")
    splits = {d.get("data_split") for d in records}
    dialogues = list(enumerate(records))
    if TEST_SPLIT in splits and len(splits) > 1:
        dialogues = [(p, d) for p, d in dialogues if d.get("data_split") == TEST_SPLIT]
        c.note("dialogues_of_other_splits_not_read", len(records) - len(dialogues))
    keep_dataset = len({d.get("dataset") for _, d in dialogues}) > 1
    without_state = 0
    for dialogue_id, (position, dialogue) in zip(_dialogue_ids(c, dialogues), dialogues, strict=True):
        c.at(dialogue_id)
        turns = dialogue.get("turns")
        if type(turns) is not list:
            raise c.error(f"dialogue {position}: turns must be a list, got {_kind(turns)}", "turns")
        ordered: list[tuple[int, int, dict[str, Any]]] = []
        for number, turn in enumerate(turns):
            if type(turn) is not dict:
                raise c.error(f"dialogue {position}: turn {number} must be an object, got {_kind(turn)}", "turns")
            utt = _utt_idx(c, turn.get("utt_idx"), f"dialogue {position}, turn {number}", dialogue_id)
            ordered.append((utt, number, turn))
        ordered.sort(key=lambda entry: entry[0])
        for i in range(1, len(ordered)):
            if ordered[i][0] == ordered[i - 1][0]:
                raise c.error(f"dialogue {position}: two turns have the same utt_idx {ordered[i][0]}", "utt_idx")
        user_at = [i for i, (_, _, turn) in enumerate(ordered) if turn.get("speaker") == "user"]
        turn_indices = _turn_indices([ordered[i][0] for i in user_at])
        for k, i in enumerate(user_at):
            utt, _, turn = ordered[i]
            if "state" not in turn:
                without_state += 1
                continue
            t = turn_indices[k]
            c.at(dialogue_id, t)
            end = user_at[k + 1] if k + 1 < len(user_at) else len(ordered)
            between = ordered[i + 1 : end]  # the system turns up to the next user turn
            replies = [e[2]["utterance"] for e in between if type(e[2].get("utterance")) is str]
            attrs: dict[str, Any] = {"user": turn.get("utterance"), "utt_idx": utt}
            if replies and len(replies) == len(between):
                attrs["system"] = "\n".join(replies)
            if keep_dataset:
                attrs["source_dataset"] = dialogue.get("dataset")
            c.add_turn(dialogue_id, t, **attrs)
            where = f"dialogue {position}, utt_idx {utt}"
            c.add_state(
                "gold", dialogue_id, t, partial(_state_triples, turn["state"], "state", where), state=turn["state"]
            )
    if without_state:
        c.note("user_turns_without_state_not_read", without_state)
    if not c.turn_rows:
        raise _fail(c, f"no user turn holds a state: {without_state} user turns read, none annotated for DST")


CONVLAB3_FORMATS: tuple[dict[str, Any], ...] = (
    {
        "name": "convlab3",
        "container": "json",
        "sides": "both",
        "summary": "ConvLab-3 unified predictions (merge_predict_res.py): a list of user-turn samples "
        "with gold state and predictions.state",
        "example": '[{"dialogue_id": "MUL0484.json", "utt_idx": 0, "utterance": "...", '
        '"state": {"hotel": {"area": "east", "name": ""}}, "predictions": {"state": {"hotel": {"area": "east"}}}}]',
        "detect": detect_samples,
        "parse": parse_samples,
        "default_convention": "convlab3",
    },
    {
        "name": "convlab3-dialogues",
        "container": "json",
        "sides": "gold",
        "summary": "ConvLab-3 unified dialogues (dialogues.json, dummy_data.json, data.zip): turns with "
        "speaker, utt_idx and, on user turns, state",
        "example": '[{"dialogue_id": "multiwoz21-test-0", "original_id": "MUL0484.json", "data_split": "test", '
        '"turns": [{"speaker": "user", "utterance": "...", "utt_idx": 0, "state": {"hotel": {"area": ""}}}]}]',
        "detect": detect_dialogues,
        "parse": parse_dialogues,
        "default_convention": "convlab3",
    },
)
