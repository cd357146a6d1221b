"""SGD / MultiWOZ 2.2 dialogue files as the declared format `sgd` of the generic pipeline.

One file (`dialogues_001.json`, `.gz`, `.zip`) or a directory of `dialogues_*.json[.gz]` (read as one
list by `analysis.formats.sgd_files.directory_records`). Gold and predictions share the shape: the SGD
baseline writes its predictions into copies of the dialogue files, so a prediction file is read as a
gold-shaped file and the loader takes its states as the prediction (`load_run(pred_dir, gold_dir)`).

Mapping onto the canonical tables: one turn per USER turn (`turn_index` counts user turns from 0),
`user` its utterance and `system` the system reply after it; per frame, domain = the service
(`Restaurants_2`), slot = the slot name, value = the acceptable values joined by `|` (the codebase's
way of writing alternatives: a gold `["6 pm", "18:00"]` accepts either). Intents, requested slots and
the schema's categorical / seen flags are the SGD evaluator's business (`analysis.sgd`).
"""

from __future__ import annotations

from typing import Any

from analysis.errors import InputError
from analysis.formats.engine import Collector
from analysis.formats.sgd_files import FORMAT, dialogues_table
from analysis.formats.states import EQ, Triple


def detect(records: Any) -> bool:
    """A list of dialogues whose turns carry upper-case `speaker` (USER / SYSTEM) and `frames`."""
    first = records[0] if isinstance(records, list) and records else None
    if not (isinstance(first, dict) and "dialogue_id" in first and isinstance(first.get("turns"), list)):
        return False
    turns = first["turns"]
    return (
        bool(turns)
        and isinstance(turns[0], dict)
        and turns[0].get("speaker") in ("USER", "SYSTEM")
        and ("frames" in turns[0])
    )


def parse(records: Any, c: Collector) -> None:
    """Validated by `analysis.formats.sgd_files` (one message at the first bad dialogue and turn), then one
    turn row and one state per user turn."""
    if type(records) is not list:
        raise InputError(c.path, FORMAT, "the top level must be a JSON list of dialogues")
    seen: set[Any] = set()
    for position, dialogue in enumerate(records):
        dialogue_id = dialogue.get("dialogue_id") if type(dialogue) is dict else None
        if type(dialogue_id) is not str or not dialogue_id.strip():
            raise InputError(
                c.path, FORMAT, f"dialogue {position}: dialogue_id must be a non-empty string, got {dialogue_id!r}"
            )
        if dialogue_id in seen:
            raise InputError(
                c.path, FORMAT, "dialogue id occurs twice; dialogues are never merged", dialogue_id=dialogue_id
            )
        seen.add(dialogue_id)
    table = dialogues_table(records, [c.path] * len(records), c.path)
    states: dict[tuple[str, int], list[Triple]] = {}
    frames = table.frames
    for dialogue_id, turn, service, values in zip(
        frames["dialogue_id"], frames["turn_index"], frames["service"], frames["slot_values"], strict=True
    ):
        triples = states.setdefault((dialogue_id, int(turn)), [])
        triples.extend((service, slot, EQ, "|".join(alternatives)) for slot, alternatives in values.items())
    turns = table.turns
    for dialogue_id, turn, user, system in zip(
        turns["dialogue_id"], turns["turn_index"], turns["user"], turns["system"], strict=True
    ):
        t = int(turn)
        attrs = {"user": user} if system is None else {"user": user, "system": system}
        c.add_turn(dialogue_id, t, **attrs)
        c.add_state("gold", dialogue_id, t, states.get((dialogue_id, t), []).__iter__)


SGD_FORMATS: tuple[dict[str, Any], ...] = (
    {
        "name": "sgd",
        "container": "json",
        "sides": "gold",
        "summary": "SGD / MultiWOZ 2.2 dialogues (dialogues_*.json, or their directory): user-turn frames per "
        "service with state.slot_values lists; predictions are copies of these files",
        "example": '[{"dialogue_id": "1_00000", "services": ["Restaurants_2"], "turns": [{"speaker": "USER", '
        '"utterance": "...", "frames": [{"service": "Restaurants_2", "slots": [], "state": {"active_intent": '
        '"ReserveRestaurant", "requested_slots": [], "slot_values": {"date": ["the 8th"]}}}]}]}]',
        "detect": detect,
        "parse": parse,
        "default_convention": "sgd",
    },
)
