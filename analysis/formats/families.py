"""Real files' families declared as mappings (`analysis.formats.mapping`), each with its detector.

- `icdst`: the `running_log.json` of the IC-DST family of LLM trackers (Yushi-Hu/IC-DST,
  jlab-nlp/RefPyDST, custom-IC-DST, cwyoon-99/gpt-DST): a list of turn records with `ID`, `turn_id`,
  the gold state `slot_values` and the prediction `pred`, both cumulative and flat (`"taxi-leaveat":
  "17:15"`); `pred` is the state after the repository's own post-processing, the one its
  `evaluate_metrics.evaluate` scores against `slot_values`. The turn-level states are left aside.
- `icdst-completion` (named with `--format`, never detected: the file is an `icdst` one): the same
  records with the prediction read from the model's own words, `completion`, by
  `analysis.formats.llm_text`: each turn's text is the slots that turn changed (IC-DST prompts for the
  changes and applies them to the previous predicted state), accumulated over the dialogue, `[DELETE]`
  removing a slot; a text it cannot read is an unparseable turn (kept, counted, its text shown), which
  changes nothing. Gold stays `slot_values`. Against `icdst`, it shows what the repository's
  post-processing (typo fixes against the ontology, names without values skipped) adds to the score.
- `checkdst`: CheckDST's prediction JSONL (wise-east/CheckDST; ParlAI BART, SimpleTOD- and PPTOD-style
  linearised outputs converted for it): `dial_id` = `<dialogue>-<turn>`, `gold` and `pred` linearised
  strings (`hotel internet yes, hotel type guesthouse,`), split as its `extract_slot_from_string` splits
  them, with its domains and its `book day`/`book time`/`book people`/`book stay` slots.
  Values are kept as written: CheckDST's own value map (`centre` -> `center`, `4-star` -> `4`) is a
  convention's business.
- `llm-dst-eval`: SLEEPWALKERG/LLM-DST-EVAL's parsed turns (`results/parsed/*.json`): a list with
  `flag` = `<dialogue>.json-<turn>`, the prediction `predict` and two golds side by side,
  `ground_truth` (MultiWOZ 2.1, read by default) and `ground_truth_m24` (MultiWOZ 2.4), flat.
- `llm-dst-eval-dialogues`: the same repository's evaluated outputs (`output/*_parsed.json`): dialogues
  with `dialogue_idx` and `turn_details`, each turn `turn_idx`, `predict`, `gt_m21` (default), `gt_m24`.
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import partial
from typing import Any

from analysis.formats.mapping import DEFAULT_ID_PATTERN, LLM_TEXT, Mapping, read_mapping

CHECKDST_DOMAINS = ("attraction", "hotel", "hospital", "restaurant", "police", "taxi", "train")
CHECKDST_BOOK_SLOTS = ("book day", "book time", "book people", "book stay")
_ID = re.compile(DEFAULT_ID_PATTERN)

ICDST = Mapping(
    dialogue="ID",
    turn="turn_id",
    gold="slot_values",
    pred="pred",
    encoding="flat",
    user="dialog.usr.-1",
)
ICDST_COMPLETION = replace(ICDST, pred="completion", pred_encoding=LLM_TEXT, pred_changes=True)
CHECKDST = Mapping(
    id="dial_id",
    gold="gold",
    pred="pred",
    encoding="linearised",
    domains=CHECKDST_DOMAINS,
    multiword_slots=CHECKDST_BOOK_SLOTS,
    open_marks=("<bs>", "</bs>"),
    close_mark="</bs>",
)
LLM_DST_EVAL = Mapping(
    id="flag",
    gold="ground_truth",
    pred="predict",
    encoding="flat",
    user="user",
    gold_choices=("ground_truth", "ground_truth_m24"),
)
LLM_DST_EVAL_DIALOGUES = Mapping(
    dialogue="dialogue_idx",
    turns="turn_details",
    turn="turn_idx",
    gold="gt_m21",
    pred="predict",
    encoding="flat",
    user="user",
    gold_choices=("gt_m21", "gt_m24"),
)


def _first(records: Any) -> Any:
    return records[0] if type(records) is list and records else None


def detect_icdst(records: Any) -> bool:
    first = _first(records)
    return (
        type(first) is dict
        and {"ID", "turn_id", "slot_values", "pred"} <= first.keys()
        and type(first["slot_values"]) is dict
    )


def detect_icdst_completion(records: Any) -> bool:
    first = _first(records)
    return detect_icdst(records) and type(first.get("completion")) is str


def detect_checkdst(records: Any) -> bool:
    first = _first(records)
    return (
        type(first) is dict
        and type(first.get("dial_id")) is str
        and _ID.match(first["dial_id"]) is not None
        and type(first.get("gold")) is str
        and "pred" in first
        and type(first["pred"]) in (str, type(None))
    )


def detect_llm_dst_eval(records: Any) -> bool:
    first = _first(records)
    return (
        type(first) is dict
        and type(first.get("flag")) is str
        and _ID.match(first["flag"]) is not None
        and type(first.get("predict")) is dict
        and type(first.get("ground_truth")) is dict
    )


def detect_llm_dst_eval_dialogues(records: Any) -> bool:
    first = _first(records)
    if not (type(first) is dict and "dialogue_idx" in first and type(first.get("turn_details")) is list):
        return False
    turn = _first(first["turn_details"])
    return type(turn) is dict and {"turn_idx", "predict", "gt_m21"} <= turn.keys()


FAMILY_FORMATS: tuple[dict[str, Any], ...] = (
    {
        "name": "icdst",
        "container": "json",
        "sides": "both",
        "summary": "IC-DST-family running_log.json (IC-DST, RefPyDST, gpt-DST): turn records with ID, turn_id, "
        "flat gold slot_values and the post-processed prediction pred",
        "example": '[{"ID": "SNG0073.json", "turn_id": 0, "slot_values": {"taxi-leaveat": "17:15"}, '
        '"turn_slot_values": {"taxi-leaveat": "17:15"}, "pred": {"taxi-leaveat": "17:15"}, '
        '"completion": "taxi-leaveat = 17:15"}]',
        "detect": detect_icdst,
        "parse": partial(read_mapping, mapping=ICDST),
        "mapping": ICDST,
        "default_convention": "icdst",
    },
    {
        "name": "icdst-completion",
        "container": "json",
        "sides": "both",
        "summary": "an IC-DST-family running_log.json read from the model's own words: each turn's completion "
        "read as that turn's changes and accumulated over the dialogue, gold slot_values (--format only)",
        "example": '[{"ID": "SNG0073.json", "turn_id": 0, "slot_values": {"taxi-leaveat": "17:15"}, '
        '"pred": {"taxi-leaveat": "17:15"}, "completion": "taxi-leaveat = 17:15"}, '
        '{"ID": "SNG0073.json", "turn_id": 1, "slot_values": {}, "pred": {}, '
        '"completion": "taxi-leaveat = [DELETE]"}]',
        "detect": detect_icdst_completion,
        "parse": partial(read_mapping, mapping=ICDST_COMPLETION),
        "mapping": ICDST_COMPLETION,
        "default_convention": "icdst",
        "detected": False,
    },
    {
        "name": "checkdst",
        "container": "jsonl",
        "sides": "both",
        "summary": "CheckDST prediction JSONL (ParlAI BART, SimpleTOD/PPTOD-style): dial_id '<dialogue>-<turn>', "
        "linearised gold and pred 'domain slot value,' strings, split as CheckDST splits them",
        "example": '{"dial_id": "mul0003-0", "gold": "hotel internet yes, hotel type guesthouse,", '
        '"pred": "hotel internet yes, hotel book day sunday,"}',
        "detect": detect_checkdst,
        "parse": partial(read_mapping, mapping=CHECKDST),
        "mapping": CHECKDST,
        "default_convention": "checkdst",
    },
    {
        "name": "llm-dst-eval",
        "container": "json",
        "sides": "both",
        "summary": "LLM-DST-EVAL parsed turns: flag '<dialogue>-<turn>', flat predict, gold ground_truth "
        "(MultiWOZ 2.1, the default) or ground_truth_m24 (2.4; --gold-field)",
        "example": '[{"flag": "SNG0073.json-0", "predict": {"taxi-departure": "saint john s college"}, '
        '"ground_truth": {"taxi-departure": "saint johns college"}, '
        '"ground_truth_m24": {"taxi-departure": "saint johns college"}}]',
        "detect": detect_llm_dst_eval,
        "parse": partial(read_mapping, mapping=LLM_DST_EVAL),
        "mapping": LLM_DST_EVAL,
    },
    {
        "name": "llm-dst-eval-dialogues",
        "container": "json",
        "sides": "both",
        "summary": "LLM-DST-EVAL evaluated dialogues: dialogue_idx, turn_details with turn_idx, flat predict, "
        "gold gt_m21 (the default) or gt_m24 (--gold-field)",
        "example": '[{"dialogue_idx": "PMUL4648.json", "turn_details": [{"turn_idx": 0, '
        '"predict": {"restaurant-name": "nusha"}, "gt_m21": {}, "gt_m24": {"restaurant-name": "nusha"}}]}]',
        "detect": detect_llm_dst_eval_dialogues,
        "parse": partial(read_mapping, mapping=LLM_DST_EVAL_DIALOGUES),
        "mapping": LLM_DST_EVAL_DIALOGUES,
    },
)
