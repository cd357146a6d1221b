"""The demo's Schema-Guided Dialogue (SGD) excerpt and its simulated tracker.

`build_sgd_demo` copies a fixed pick of SGD test dialogues (unmodified) and the test and train schemas
into the demo workspace, and writes one simulated prediction file: a copy of the excerpt whose USER
frames' states a seeded simulated tracker rewrote, the way the SGD baseline writes its predictions into
copies of the dialogue files. The tracker's errors persist: a value it got wrong stays wrong on the
following turns of that service while the gold value is unchanged (the compounding the Turn depth page
shows), and it errs more on services absent from the training schema (unseen), as real trackers do.
"""

from __future__ import annotations

import copy
import gzip
import json
import random
from pathlib import Path
from typing import Any

from analysis.demo.simulate import pick_dialogues

SGD_DIR = "sgd"
N_DIALOGUES = 120
SEED = 7
GOLD = f"{SGD_DIR}/test/dialogues_001.json.gz"
TEST_SCHEMA = f"{SGD_DIR}/test/schema.json.gz"
TRAIN_SCHEMA = f"{SGD_DIR}/train_schema.json.gz"
PREDICTED = f"{SGD_DIR}/simulated-sgd-predicted/dialogues_001.json.gz"
FILES = (GOLD, TEST_SCHEMA, TRAIN_SCHEMA, PREDICTED)
RUN = {
    "name": "simulated-sgd-predicted",
    "system": "simulated-SGD",
    "dataset": "SGD",
    "language": "en",
    "split": "test",
    "history": "predicted",
    "seed": SEED,
    "convention": "sgd",
    "pred": PREDICTED,
    "gold": GOLD,
    "schema": TEST_SCHEMA,
    "train_schema": TRAIN_SCHEMA,
    "description": "Simulated by analysis.demo.sgd over the real SGD gold: a copy of the dialogue files with "
    "the USER frames' states rewritten (values dropped, replaced, misspelled; intents and requested slots "
    "changed), errors kept while the gold value holds, twice as many on unseen services. Scored by the SGD "
    "evaluator (convention sgd) with the test and train schemas.",
}

# Per-value error rates of the simulated tracker on seen services; unseen services get UNSEEN_FACTOR times.
RATES = {"drop": 0.04, "replace": 0.03, "misspell": 0.02, "intent": 0.02, "requested_drop": 0.04, "spurious": 0.01}
UNSEEN_FACTOR = 2.0


def _read(path: Path) -> Any:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)


def _write(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True)
    with gzip.GzipFile(path, "wb", mtime=0) as handle:  # mtime 0: the same bytes on every build
        handle.write(text.encode("utf-8"))


def _misspell(value: str, rng: random.Random) -> str:
    """Two neighbouring letters swapped (or one doubled in a one-letter word): a near miss the evaluator's
    fuzzy matching gives partial credit."""
    if len(value) < 2:
        return value + value
    i = rng.randrange(len(value) - 1)
    swapped = value[:i] + value[i + 1] + value[i] + value[i + 2 :]
    return swapped if swapped != value else value + value[-1]


def _values_by_slot(dialogues: list[dict[str, Any]], schemas: dict[str, Any]) -> dict[tuple[str, str], list[str]]:
    """Values a replacement can draw from: the schema's possible values of a categorical slot, else the
    values the excerpt's gold gives that slot."""
    seen: dict[tuple[str, str], set[str]] = {}
    for service in schemas.values():
        for slot in service["slots"]:
            if slot["possible_values"]:
                seen[(service["service_name"], slot["name"])] = set(slot["possible_values"])
    for dialogue in dialogues:
        for turn in dialogue["turns"]:
            for frame in turn["frames"]:
                for slot, values in frame.get("state", {}).get("slot_values", {}).items():
                    key = (frame["service"], slot)
                    if key not in seen or not any(s["possible_values"] for s in _slots(schemas, key)):
                        seen.setdefault(key, set()).update(values)
    return {key: sorted(values) for key, values in seen.items()}


def _slots(schemas: dict[str, Any], key: tuple[str, str]) -> list[dict[str, Any]]:
    service = schemas.get(key[0])
    return [] if service is None else [s for s in service["slots"] if s["name"] == key[1]]


def simulate_predictions(
    dialogues: list[dict[str, Any]],
    test_schema: list[dict[str, Any]],
    train_services: set[str],
    *,
    seed: int = SEED,
    rates: dict[str, float] | None = None,
) -> list[dict[str, Any]]:
    """A copy of `dialogues` whose USER frames' states a simulated tracker rewrote (see the module)."""
    rates = RATES if rates is None else rates
    rng = random.Random(seed)
    schemas = {s["service_name"]: s for s in test_schema}
    pool = _values_by_slot(dialogues, schemas)
    out = copy.deepcopy(dialogues)
    for dialogue in out:
        # What the tracker believes, per (service, slot): (gold values it answered, its value).
        belief: dict[tuple[str, str], tuple[tuple[str, ...], list[str]]] = {}
        for turn in dialogue["turns"]:
            if turn["speaker"] != "USER":
                continue
            for frame in turn["frames"]:
                state = frame.get("state")
                if state is None:
                    continue
                service = frame["service"]
                factor = 1.0 if service in train_services else UNSEEN_FACTOR
                rate = {name: min(0.9, p * factor) for name, p in rates.items()}
                predicted: dict[str, list[str]] = {}
                for slot, gold in state["slot_values"].items():
                    key = (service, slot)
                    held = belief.get(key)
                    if held is not None and held[0] == tuple(gold):
                        if held[1]:
                            predicted[slot] = held[1]  # an earlier answer (right or wrong) carried over
                        continue
                    draw = rng.random()
                    if draw < rate["drop"]:
                        value: list[str] = []
                    elif draw < rate["drop"] + rate["replace"]:
                        others = [v for v in pool.get(key, []) if v not in gold]
                        value = [rng.choice(others)] if others else [gold[0]]
                    elif draw < rate["drop"] + rate["replace"] + rate["misspell"]:
                        value = [_misspell(gold[0], rng)]
                    else:
                        value = [gold[0]]
                    belief[key] = (tuple(gold), value)
                    if value:
                        predicted[slot] = value
                if rng.random() < rate["spurious"]:
                    unused = [
                        s["name"]
                        for s in schemas[service]["slots"]
                        if s["name"] not in state["slot_values"] and pool.get((service, s["name"]))
                    ]
                    if unused:
                        slot = rng.choice(unused)
                        predicted[slot] = [rng.choice(pool[(service, slot)])]
                intent = state["active_intent"]
                if intent != "NONE" and rng.random() < rate["intent"]:
                    others = [i["name"] for i in schemas[service]["intents"] if i["name"] != intent]
                    intent = rng.choice(others) if others else intent
                requested = [s for s in state["requested_slots"] if rng.random() >= rate["requested_drop"]]
                frame["state"] = {"active_intent": intent, "requested_slots": requested, "slot_values": predicted}
    return out


def build_sgd_demo(realdata: Path, out: Path, n_dialogues: int = N_DIALOGUES) -> dict[str, Any]:
    """Write the SGD excerpt, its schemas and the simulated predictions under `out`; returns what was
    picked (dialogue ids, services, which of them are unseen) for the demo's README."""
    sgd = Path(realdata) / "sgd"
    dialogues = [d for path in sorted(sgd.glob("test_dialogues_*.json.gz")) for d in _read(path)]
    by_id = {d["dialogue_id"]: d for d in dialogues}
    keep = sorted(pick_dialogues(by_id, n_dialogues), key=lambda i: tuple(int(p) for p in i.split("_")))
    excerpt = [by_id[i] for i in keep]
    test_schema = _read(sgd / "test_schema.json.gz")
    train_schema = _read(sgd / "train_schema.json.gz")
    used = sorted({s for d in excerpt for s in d["services"]})
    train_services = {s["service_name"] for s in train_schema}
    out = Path(out)
    _write(out / GOLD, excerpt)
    _write(out / TEST_SCHEMA, test_schema)
    _write(out / TRAIN_SCHEMA, train_schema)
    _write(out / PREDICTED, simulate_predictions(excerpt, test_schema, train_services))
    return {"dialogues": keep, "services": used, "unseen": [s for s in used if s not in train_services]}
