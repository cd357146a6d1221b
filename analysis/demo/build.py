"""The embedded demo workspace: subsets of shippable real files plus simulated runs, built reproducibly.

``python -m analysis.demo.build REALDATA OUT`` (``make demo``) reads the files marked "may ship" in
``REALDATA/README.md`` and writes into ``OUT`` (``data/demo``):

- the same ``N_DIALOGUES`` MultiWOZ 2.1 test dialogues in English (``multiwoz21/``) and Chinese
  (``multiwoz_zh/``), and the same CrossWOZ test dialogues in Chinese (``crosswoz/``) and English
  (``crosswoz_en/``), in their raw formats, gzip-compressed; dialogues are the first by SHA-256 of
  their id, so the choice never depends on file order;
- the real predictions of CrossWOZ's rule-based tracker on those CrossWOZ dialogues
  (``crosswoz_ruledst/``, a gold-history run);
- simulated runs (``analysis.demo.simulate``) in our JSONL format, predictions only (``simulated/``);
- ``workspace.toml`` listing every run, and ``README.md`` describing every file, its source, its licence,
  the error model and the score of every run (computed by loading the written workspace).

Files are byte-identical between builds: fixed selection, fixed seeds, sorted JSON, gzip without a
timestamp. ``fewjoint/`` is written by ``analysis.demo.fewjoint`` when absent (the manifest lists it).
"""

from __future__ import annotations

import gzip
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.demo import sgd as sgd_demo
from analysis.demo.simulate import ErrorProfile, draw_predictions, pick_dialogues, prepare_gold
from analysis.formats import parse_file
from analysis.formats.reading import read_bytes
from analysis.metrics import joint_goal_accuracy
from analysis.scoring import score_run
from analysis.sgd import views as sgd_views
from analysis.sgd.scoring import ALL_SERVICES
from analysis.workspace import load_workspace

__all__ = ["DEMO_FILES", "N_DIALOGUES", "SYSTEMS", "SimulatedRun", "build_demo", "demo_files"]

N_DIALOGUES = 200
WORKSPACE_CONVENTION = "exact"
# The weaker second language of each corpus: machine-translated MultiWOZ-zh and CrossWOZ-en.
LANGUAGE_PENALTY = 1.5

# Raw inputs, relative to the realdata folder, and where their subsets go, relative to the demo folder.
SOURCES = {
    "multiwoz21": ("multiwoz21/test.json.zip", "multiwoz21/test_subset.json.gz"),
    "multiwoz_zh": ("multiwoz_zh/test.json.zip", "multiwoz_zh/test_subset.json.gz"),
    "crosswoz": ("crosswoz/test.json.zip", "crosswoz/test_subset.json.gz"),
    "crosswoz_en": ("crosswoz_en/test.json.zip", "crosswoz_en/test_subset.json.gz"),
    "crosswoz_ruledst": ("crosswoz_ruledst/test_preds.json", "crosswoz_ruledst/test_preds_subset.json.gz"),
}
DATASETS = {
    "multiwoz21": ("MultiWOZ 2.1", "en"),
    "multiwoz_zh": ("MultiWOZ-zh", "zh"),
    "crosswoz": ("CrossWOZ", "zh"),
    "crosswoz_en": ("CrossWOZ-en", "en"),
}

SYSTEMS = {
    "A": ErrorProfile(name="simulated-A", slot_seed=1),
    "B": ErrorProfile(name="simulated-B", strength=0.75, spurious=0.03, persist=0.9, slot_seed=2),
    "C": ErrorProfile(name="simulated-C", strength=1.35, slot_spread=0.8, slot_seed=3),
}


@dataclass(frozen=True)
class SimulatedRun:
    """One simulated run of the demo: which system, over which gold, how."""

    name: str
    system: str  # key of SYSTEMS
    corpus: str  # key of DATASETS
    history: str
    seed: int
    weaker_language: bool = False
    missing_turns: int = 0  # final turns of this many dialogues left out of the file (alignment warnings)

    @property
    def path(self) -> str:
        return f"simulated/{self.name}.jsonl.gz"

    def profile(self) -> ErrorProfile:
        base = SYSTEMS[self.system]
        return base.in_language(LANGUAGE_PENALTY) if self.weaker_language else base


SIMULATED = (
    SimulatedRun("simulated-A-mwz-en-predicted", "A", "multiwoz21", "predicted", 11),
    SimulatedRun("simulated-A-mwz-en-gold", "A", "multiwoz21", "gold", 11),
    SimulatedRun("simulated-A-mwz-zh-predicted", "A", "multiwoz_zh", "predicted", 12, weaker_language=True),
    SimulatedRun("simulated-A-mwz-zh-gold", "A", "multiwoz_zh", "gold", 12, weaker_language=True),
    SimulatedRun("simulated-B-mwz-en-predicted-s1", "B", "multiwoz21", "predicted", 21),
    SimulatedRun("simulated-B-mwz-en-predicted-s2", "B", "multiwoz21", "predicted", 22),
    SimulatedRun("simulated-B-mwz-en-predicted-s3", "B", "multiwoz21", "predicted", 23),
    SimulatedRun("simulated-C-mwz-en-predicted", "C", "multiwoz21", "predicted", 31, missing_turns=5),
    SimulatedRun("simulated-A-crosswoz-zh-predicted", "A", "crosswoz", "predicted", 41),
    SimulatedRun("simulated-A-crosswoz-en-predicted", "A", "crosswoz_en", "predicted", 42, weaker_language=True),
)
RULE_RUN = "crosswoz-rule-dst"


def demo_files() -> list[str]:
    """Every file `build_demo` writes, relative to the demo folder."""
    return sorted(
        [target for _, target in SOURCES.values()]
        + [run.path for run in SIMULATED]
        + list(sgd_demo.FILES)
        + ["workspace.toml", "README.md"]
    )


DEMO_FILES = tuple(demo_files())


def _load_json(path: Path) -> Any:
    return json.loads(read_bytes(path).decode("utf-8-sig"))


def _write_gz(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))


def _subset(records: dict[str, Any], keep: list[str]) -> dict[str, Any]:
    chosen = set(keep)
    return {k: v for k, v in records.items() if k in chosen}


def _dump(records: Any) -> str:
    return json.dumps(records, ensure_ascii=False, separators=(",", ":"))


def _jsonl(turns: pd.DataFrame, pred: pd.DataFrame) -> str:
    """Our JSONL, predictions only: one line a turn, `pred` as {domain: {slot: value}}."""
    states: dict[tuple[str, int], dict[str, dict[str, str]]] = {}
    for dialogue_id, turn, domain, slot, value in pred[
        ["dialogue_id", "turn_index", "domain", "slot", "value"]
    ].itertuples(index=False):
        states.setdefault((dialogue_id, int(turn)), {}).setdefault(domain, {})[slot] = value
    lines = [
        _dump({"dialogue_id": d, "turn_index": int(t), "pred": states.get((d, int(t)), {})})
        for d, t in turns[["dialogue_id", "turn_index"]].itertuples(index=False)
    ]
    return "\n".join(lines) + "\n"


def _drop_final_turns(turns: pd.DataFrame, n_dialogues: int, seed: int) -> pd.DataFrame:
    """Leave out the final turn of `n_dialogues` dialogues (a truncated prediction file)."""
    if not n_dialogues:
        return turns
    ids = sorted(turns["dialogue_id"].unique())
    chosen = np.random.default_rng(seed).choice(len(ids), size=n_dialogues, replace=False)
    dropped = {ids[i] for i in chosen}
    last = turns.groupby("dialogue_id", sort=False)["turn_index"].transform("max")
    return turns[~(turns["dialogue_id"].isin(dropped) & (turns["turn_index"] == last))]


def _slot_mapping(gold_a: pd.DataFrame, gold_b: pd.DataFrame) -> dict[str, str]:
    """Slot names of two translations of one corpus paired by position: both parsers walk the states in
    the same order, so row i of one is row i of the other; each slot takes its most frequent partner."""
    if len(gold_a) != len(gold_b) or not (gold_a["dialogue_id"].to_numpy() == gold_b["dialogue_id"].to_numpy()).all():
        return {}
    pairs = pd.DataFrame(
        {
            "a": (gold_a["domain"] + "-" + gold_a["slot"]).to_numpy(),
            "b": (gold_b["domain"] + "-" + gold_b["slot"]).to_numpy(),
        }
    )
    counts = pairs.value_counts().reset_index(name="n").sort_values(["a", "n", "b"], ascending=[True, False, True])
    best = counts.drop_duplicates("a")
    return dict(zip(best["a"], best["b"], strict=True))


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_toml_value(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)


def _table(header: str, entries: dict[str, Any]) -> str:
    return "\n".join([header, *(f"{k} = {_toml_value(v)}" for k, v in entries.items() if v is not None)]) + "\n"


def _describe(run: SimulatedRun) -> str:
    p = run.profile()
    text = (
        f"Simulated by analysis.demo.simulate over the real gold: system {run.system} (strength {p.strength}), "
        f"miss {p.miss}, wrong {p.wrong}, spurious {p.spurious}, carry {p.carry}, persist {p.persist}, "
        f"language penalty {p.language_penalty}, slot spread {p.slot_spread}, slot seed {p.slot_seed}."
    )
    if run.missing_turns:
        text += f" The final turn of {run.missing_turns} dialogues is deliberately left out of the file."
    return text


def build_demo(realdata: Path, out: Path) -> None:
    """Write the demo workspace into `out` from the shippable files under `realdata`."""
    realdata, out = Path(realdata), Path(out)
    raw = {key: _load_json(realdata / source) for key, (source, _) in SOURCES.items()}
    keep = {
        "multiwoz": pick_dialogues(set(raw["multiwoz21"]) & set(raw["multiwoz_zh"]), N_DIALOGUES),
        "crosswoz": pick_dialogues(
            set(raw["crosswoz"]) & set(raw["crosswoz_en"]) & set(raw["crosswoz_ruledst"]), N_DIALOGUES
        ),
    }
    for key, (_, target) in SOURCES.items():
        ids = keep["multiwoz" if key.startswith("multiwoz") else "crosswoz"]
        _write_gz(out / target, _dump(_subset(raw[key], ids)))

    golds = {key: parse_file(out / SOURCES[key][1]) for key in DATASETS}
    for run in SIMULATED:
        gold = golds[run.corpus]
        assert gold.gold is not None  # the four corpora are gold-shaped formats
        prepared = prepare_gold(gold.gold, gold.turns)
        pred = draw_predictions(prepared, profile=run.profile(), history=run.history, seed=run.seed)
        turns = _drop_final_turns(gold.turns, run.missing_turns, run.seed)
        _write_gz(out / run.path, _jsonl(turns, pred))

    mappings = []
    for a, b, run_a, run_b in (
        ("multiwoz21", "multiwoz_zh", "simulated-A-mwz-en-predicted", "simulated-A-mwz-zh-predicted"),
        ("crosswoz", "crosswoz_en", "simulated-A-crosswoz-zh-predicted", "simulated-A-crosswoz-en-predicted"),
    ):
        gold_a, gold_b = golds[a].gold, golds[b].gold
        assert gold_a is not None and gold_b is not None
        slots = _slot_mapping(gold_a, gold_b)
        if slots:
            mappings.append({"a": run_a, "b": run_b, "slots": slots})
    sgd_demo.build_sgd_demo(realdata, out)
    if not (out / "fewjoint" / "episodes.json").exists():
        from analysis.demo.fewjoint import build_fewjoint_demo  # written for the project, needs no realdata

        build_fewjoint_demo(out / "fewjoint")
    (out / "workspace.toml").write_text(_manifest(mappings), encoding="utf-8")
    (out / "README.md").write_text(_readme(out, keep), encoding="utf-8")


def _manifest(mappings: list[dict[str, Any]]) -> str:
    parts = [
        "# The demo workspace, written by `python -m analysis.demo.build ../shared/realdata data/demo` (do not edit).\n"
        '# Runs whose system contains "simulated" are made by analysis.demo.simulate, not by a real tracker.\n',
        _table("[workspace]", {"name": "Demo", "convention": WORKSPACE_CONVENTION}),
        # Generated and kept in git: the dashboard keeps uploads in their session and edits no run here.
        _table("[dashboard]", {"edit_manifest": False}),
        _table(
            "[[runs]]",
            {
                "name": RULE_RUN,
                "system": "CrossWOZ rule DST",
                "dataset": "CrossWOZ",
                "language": "zh",
                "split": "test",
                "history": "gold",
                "convention": "exact",
                "pred": SOURCES["crosswoz_ruledst"][1],
                "gold": SOURCES["crosswoz"][1],
                "description": "Real predictions of CrossWOZ's rule-based tracker (ConvLab-2 convlab2/dst/rule/crosswoz), "
                "fed the gold previous state at every turn; exact matching as in CrossWOZ's evaluator.",
            },
        ),
    ]
    for run in SIMULATED:
        dataset, language = DATASETS[run.corpus]
        parts.append(
            _table(
                "[[runs]]",
                {
                    "name": run.name,
                    "system": run.profile().name,
                    "dataset": dataset,
                    "language": language,
                    "split": "test",
                    "history": run.history,
                    "seed": run.seed,
                    "convention": WORKSPACE_CONVENTION,
                    "pred": run.path,
                    "gold": SOURCES[run.corpus][1],
                    "format": "jsonl",
                    "description": _describe(run),
                },
            )
        )
    parts.append(_table("[[runs]]", sgd_demo.RUN))
    parts += [_table("[[mappings]]", mapping) for mapping in mappings]
    # The FewJoint demo (written for the project by analysis.demo.fewjoint; FewJoint itself may not ship).
    parts.append(
        _table(
            "[[fewjoint]]",
            {
                "name": "simulated",
                "gold": "fewjoint/episodes.json",
                "pred": [f"fewjoint/simulated_seed{seed}.jsonl" for seed in range(1, 6)],
                "shots": 1,
                "description": "5 seeds of a simulated few-shot joint NLU system (analysis.demo.fewjoint).",
            },
        )
    )
    return "\n".join(parts)


README_HEAD = """# Demo workspace

The workspace `make run` opens by default (`workspace.toml`). Everything here except `fewjoint/`
(see its own README) is written by `analysis/demo/build.py`:

```
.venv/bin/python -m analysis.demo.build ../shared/realdata data/demo     # or: make demo
```

A test rebuilds it from `../shared/realdata` and checks every file is byte-identical. Runs whose system
name contains **simulated** are made by the project's error model (below), not by a real tracker:
they exist so that every page has content; do not quote their numbers as results.

## Files

| file | content | source | licence |
|---|---|---|---|
| `multiwoz21/test_subset.json.gz` | {n_mwz} MultiWOZ 2.1 test dialogues, raw ConvLab-2 format | thu-coai/ConvLab-2 `data/multiwoz/test.json.zip` | MultiWOZ: MIT; ConvLab-2: Apache-2.0 |
| `multiwoz_zh/test_subset.json.gz` | the same dialogues in MultiWOZ-zh (machine-translated, DSTC9 track 2) | thu-coai/ConvLab-2 `data/multiwoz_zh/test.json.zip` | Apache-2.0 |
| `crosswoz/test_subset.json.gz` | {n_cw} CrossWOZ test dialogues, raw format | thu-coai/CrossWOZ `data/crosswoz/test.json.zip` | Apache-2.0 |
| `crosswoz_en/test_subset.json.gz` | the same dialogues in CrossWOZ-en (DSTC9 track 2) | thu-coai/ConvLab-2 `data/crosswoz_en/test.json.zip` | Apache-2.0 |
| `crosswoz_ruledst/test_preds_subset.json.gz` | real predictions of CrossWOZ's rule-based tracker on those dialogues (gold history) | ConvLab-2 `convlab2/dst/rule/crosswoz`, re-run on CrossWOZ test | Apache-2.0 |
| `simulated/*.jsonl.gz` | simulated predictions, our JSONL format (`dialogue_id`, `turn_index`, `pred`), gold from the subset files | `analysis/demo/simulate.py` over the gold above | as the gold it perturbs |
| `sgd/test/dialogues_001.json.gz` | {n_sgd} Schema-Guided Dialogue (SGD) test dialogues, unmodified | google-research-datasets/dstc8-schema-guided-dialogue `test/dialogues_*.json` | CC BY-SA 4.0 |
| `sgd/test/schema.json.gz`, `sgd/train_schema.json.gz` | the SGD test and train schemas, unmodified (a test service absent from the train schema is unseen) | the same repository, `test/schema.json`, `train/schema.json` | CC BY-SA 4.0 |
| `sgd/simulated-sgd-predicted/dialogues_001.json.gz` | simulated predictions: a copy of the SGD excerpt whose USER frames' states were rewritten | `analysis/demo/sgd.py` over the SGD excerpt | CC BY-SA 4.0 (derived from it) |
| `workspace.toml` | the manifest: every run with dataset, language, history, seed, convention | generated | — |

Attribution: `NOTICE`. Dialogues are the {n_mwz} (MultiWOZ) and {n_cw} (CrossWOZ) test ids with the smallest
SHA-256 digest; the same ids in both languages of each corpus; the {n_sgd} SGD test dialogues likewise.
Raw JSON subsets keep every field of the original dialogues.

## Runs

JGA under each run's convention, computed while building (workspace convention: `{convention}`; the
SGD run's is the SGD evaluator's joint goal accuracy over frames, with fuzzy partial credit).

| run | system | dataset | language | history | seed | turns | JGA |
|---|---|---|---|---|---|---|---|
"""

README_TAIL = """
`{missing_run}` leaves out the final turn of {missing} dialogues on purpose, so the alignment warnings
have something to show (those turns are scored as empty predictions).

`[[mappings]]` pairs the slot names of the two languages of each corpus (derived by position: both
translations list the slots of a state in the same order).

## The error model of the simulated runs

`analysis/demo/simulate.py` (module docstring) perturbs the gold states of every turn, deterministically
from a seed (numpy `Generator`):

- a gold slot keeps one value over consecutive turns (a segment); at its first turn (the update) it is
  **missed** with probability `miss` or gets a **wrong value** (another value of that slot seen in the
  gold) with probability `wrong`; on the other turns of the segment these rates are multiplied by
  `carry`;
- rates differ **per slot** (a log-normal factor with spread `slot_spread`, fixed per system by
  `slot_seed`, normalised to average 1);
- each turn may gain a **spurious** slot (a gold slot and value from elsewhere in the data) with
  probability `spurious`;
- with **predicted history** an error **persists** to the next turn with probability `persist`, until
  the gold changes the slot; with **gold history** errors do not carry over (the same draws are used,
  so a gold-history run's errors are a subset of its predicted-history twin's);
- every rate is multiplied by `language_penalty / strength`: systems differ in `strength`, and the
  weaker second language of each corpus (MultiWOZ-zh, CrossWOZ-en: translations) has a penalty of {penalty}.

| system | strength | miss | wrong | spurious | carry | persist | slot spread |
|---|---|---|---|---|---|---|---|
"""


def _readme(out: Path, keep: dict[str, list[str]]) -> str:
    workspace = load_workspace(out / "workspace.toml")
    if workspace.failed:
        raise RuntimeError(f"demo runs failed to load: {workspace.failed}")
    lines = [
        README_HEAD.format(
            n_mwz=len(keep["multiwoz"]),
            n_cw=len(keep["crosswoz"]),
            n_sgd=sgd_demo.N_DIALOGUES,
            convention=workspace.convention,
        )
    ]
    for entry in workspace.entries:
        run = workspace.runs[entry.name]
        meta = entry.meta
        jga = joint_goal_accuracy(score_run(run, meta.convention))
        if meta.convention == "sgd":  # under the SGD evaluator's name, its own joint goal accuracy
            result = sgd_views.result_of(run.meta)
            assert not isinstance(result, str), result
            jga = result.table[ALL_SERVICES]["joint_goal_accuracy"]
        seed = "" if meta.seed is None else str(meta.seed)
        lines.append(
            f"| `{entry.name}` | {meta.system} | {meta.dataset} | {meta.language} | {meta.history} | {seed} "
            f"| {len(run.turns)} | {jga:.4f} |\n"
        )
    lines.append(_sgd_readme(workspace))
    missing = next(run for run in SIMULATED if run.missing_turns)
    lines.append(README_TAIL.format(missing_run=missing.name, missing=missing.missing_turns, penalty=LANGUAGE_PENALTY))
    for key, p in SYSTEMS.items():
        lines.append(
            f"| {p.name} ({key}) | {p.strength} | {p.miss} | {p.wrong} | {p.spurious} | {p.carry} | {p.persist} "
            f"| {p.slot_spread} |\n"
        )
    return "".join(lines)


def _sgd_readme(workspace: Any) -> str:
    """The SGD run's numbers as the SGD evaluator prints them, over all, seen and unseen services."""
    run = workspace.runs[sgd_demo.RUN["name"]]
    result = sgd_views.result_of(run.meta)
    assert not isinstance(result, str), result
    lines = [
        "\nThe SGD run (`analysis/demo/sgd.py`, module docstring) as the SGD evaluator scores it (convention `sgd`,"
        " the\ntest and train schemas; a service absent from the train schema is unseen):\n\n",
        "| services | intent accuracy | requested slots F1 | average goal accuracy | joint goal accuracy |\n",
        "|---|---|---|---|---|\n",
    ]
    for collection, label in sgd_views.COLLECTIONS.items():
        values = result.table[collection]
        lines.append(
            f"| {label} | {values['active_intent_accuracy']:.4f} | {values['requested_slots_f1']:.4f} "
            f"| {values['average_goal_accuracy']:.4f} | {values['joint_goal_accuracy']:.4f} |\n"
        )
    return "".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m analysis.demo.build REALDATA OUT", file=sys.stderr)
        return 2
    build_demo(Path(args[0]), Path(args[1]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
