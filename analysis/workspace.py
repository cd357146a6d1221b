"""A workspace: a TOML manifest listing runs (files relative to it), loaded with failures kept per run.

Manifest shape (all paths relative to the manifest)::

    [workspace]
    name = "Demo"
    convention = "exact"            # optional: the convention of every run that does not name its own

    [[runs]]
    name = "rule-dst-zh"            # unique run id
    system = "CrossWOZ rule DST"
    dataset = "CrossWOZ"            # e.g. "MultiWOZ 2.1": versions are compared, 2.1 vs 2.4 differ
    language = "zh"
    split = "test"
    history = "gold"                # predicted (JGA) or gold (GJGA)
    seed = 1
    convention = "exact"            # optional: see "Which convention a run is scored under" below
    pred = "crosswoz/rule_preds.json"
    gold = "crosswoz/test.json.zip" # optional when the prediction file carries gold
    format = "nested"               # optional: forced prediction format
    gold_format = "crosswoz"        # optional: forced gold format

    [[mappings]]                    # optional ontology alignment override between two runs
    a = "mwz-en"
    b = "mwz-zh"
    slots = { "restaurant-area" = "餐厅-区域" }

    [[fewjoint]]                    # optional FewJoint systems: episode gold and one file per seed
    name = "my-system"
    gold = "fewjoint/5shot/test.json"
    pred = ["seed1.jsonl", "seed2.jsonl", "seed3.jsonl", "seed4.jsonl", "seed5.jsonl"]
    shots = 5                       # optional: read from the gold path (`5shot`) when absent

Which convention a run is scored under (the dashboard's "as declared per run", the report's default):

1. the run's own `convention` key;
2. else the `[workspace]` `convention` key, when the manifest writes one: an explicit choice made once
   for the whole table, so it also overrides a format's own convention (a manifest that writes
   `convention = "trade"` keeps scoring every run under TRADE's rules, whatever the files' formats).
   It is not merely the dashboard's starting choice: that would override the runs' own keys too, and
   leave the report and the exports scoring the runs differently from the dashboard;
3. else the format's own, as the CLI and the upload form choose it (`analysis.loading`): `trade` for
   TRADE output and for nested per-turn files (`gt`/`pr` and the like) over TRADE's 30 MultiWOZ slots,
   `mwzeval` for mwzeval-style outputs, `dstc9`, `risawoz`, and `exact` for everything else.

Runs left to their formats' conventions may end up under different ones; every view that sets them side
by side says so (`analysis.views.comparability_warnings`), and the sidebar can score them all under one.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.conventions import CONVENTIONS
from analysis.errors import InputError
from analysis.loading import load_run
from analysis.model import HISTORY_MODES, Run

RUN_KEYS = {
    "name",
    "system",
    "dataset",
    "language",
    "split",
    "history",
    "seed",
    "convention",
    "pred",
    "gold",
    "format",
    "gold_format",
    "description",
}


@dataclass(frozen=True)
class RunEntry:
    """One `[[runs]]` entry, paths resolved against the manifest's folder."""

    name: str
    pred: Path
    gold: Path | None = None
    system: str = ""
    dataset: str = ""
    language: str = ""
    split: str = "test"
    history: str = "predicted"
    seed: int | None = None
    convention: str | None = None  # None: the files' own convention (`analysis.loading`)
    format: str | None = None
    gold_format: str | None = None
    description: str = ""


@dataclass(frozen=True)
class FewJointEntry:
    """One `[[fewjoint]]` entry: a few-shot joint NLU system, one prediction file per seed."""

    name: str
    gold: Path
    pred: tuple[Path, ...]
    shots: int | None = None
    description: str = ""


@dataclass
class Workspace:
    """The manifest's runs, those that loaded and those that failed (name -> one-line error)."""

    path: Path
    name: str
    convention: str | None  # the `[workspace]` key as written; None: each run's format decides
    entries: list[RunEntry]
    runs: dict[str, Run] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    mappings: list[dict[str, Any]] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    fewjoint_entries: list[FewJointEntry] = field(default_factory=list)
    fewjoint: dict[str, Any] = field(default_factory=dict)  # name -> FewJointSystem

    @property
    def root(self) -> Path:
        return self.path.parent


def read_manifest(path: str | Path) -> Workspace:
    """Parse and check a manifest without loading any run file."""
    path = Path(path)
    if path.is_dir():
        path = path / "workspace.toml"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(str(path), "workspace", "manifest not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(str(path), "workspace", f"cannot read manifest: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(str(path), "workspace", f"malformed TOML: {exc}") from None
    head = data.get("workspace", {})
    if not isinstance(head, dict):
        raise InputError(str(path), "workspace", "[workspace] must be a table")
    convention = head.get("convention")  # absent: no workspace-wide choice, not `exact`
    if convention is not None and convention not in CONVENTIONS:
        raise InputError(str(path), "workspace", f"convention has to be one of {', '.join(CONVENTIONS)}")
    raw_runs = data.get("runs", [])
    if not isinstance(raw_runs, list) or not raw_runs:
        raise InputError(str(path), "workspace", "manifest lists no [[runs]]")
    entries: list[RunEntry] = []
    seen: set[str] = set()
    for i, raw in enumerate(raw_runs):
        entries.append(_entry(path, i, raw, seen, convention))
    mappings = data.get("mappings", [])
    if not isinstance(mappings, list):
        raise InputError(str(path), "workspace", "[[mappings]] must be an array of tables")
    settings = {k: v for k, v in data.items() if k not in ("workspace", "runs", "mappings", "fewjoint")}
    raw_fewjoint = data.get("fewjoint", [])
    if not isinstance(raw_fewjoint, list):
        raise InputError(str(path), "workspace", "[[fewjoint]] must be an array of tables")
    return Workspace(
        path,
        str(head.get("name", path.parent.name)),
        convention,
        entries,
        mappings=mappings,
        settings=settings | {"workspace": head},
        fewjoint_entries=[_fewjoint_entry(path, i, raw) for i, raw in enumerate(raw_fewjoint)],
    )


def _fewjoint_entry(path: Path, index: int, raw: Any) -> FewJointEntry:
    where = f"[[fewjoint]] #{index + 1}"
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not isinstance(raw.get("gold"), str):
        raise InputError(str(path), "workspace", f"{where} needs a name and a gold file")
    preds = raw.get("pred")
    if isinstance(preds, str):
        preds = [preds]
    if not isinstance(preds, list) or not preds or not all(isinstance(p, str) for p in preds):
        raise InputError(str(path), "workspace", f"{where} needs pred: a list of prediction files, one per seed")
    shots = raw.get("shots")
    if shots is not None and not isinstance(shots, int):
        raise InputError(str(path), "workspace", f"{where}: shots must be an integer")
    base = path.parent
    return FewJointEntry(
        name=raw["name"],
        gold=base / raw["gold"],
        pred=tuple(base / p for p in preds),
        shots=shots,
        description=str(raw.get("description", "")),
    )


def _entry(path: Path, index: int, raw: Any, seen: set[str], default_convention: str | None) -> RunEntry:
    where = f"[[runs]] #{index + 1}"
    if not isinstance(raw, dict):
        raise InputError(str(path), "workspace", f"{where} must be a table")
    unknown = sorted(set(raw) - RUN_KEYS)
    if unknown:
        raise InputError(str(path), "workspace", f"{where} has unknown keys {unknown}; known: {sorted(RUN_KEYS)}")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise InputError(str(path), "workspace", f"{where} needs a name")
    if name in seen:
        raise InputError(str(path), "workspace", f"{where}: run name {name!r} is used twice")
    seen.add(name)
    if not isinstance(raw.get("pred"), str):
        raise InputError(str(path), "workspace", f"run {name!r} needs a pred file")
    history = raw.get("history", "predicted")
    if history not in HISTORY_MODES:
        raise InputError(str(path), "workspace", f"run {name!r}: history has to be one of {HISTORY_MODES}")
    convention = raw.get("convention", default_convention)
    if convention is not None and convention not in CONVENTIONS:
        raise InputError(str(path), "workspace", f"run {name!r}: convention has to be one of {', '.join(CONVENTIONS)}")
    seed = raw.get("seed")
    if seed is not None and not isinstance(seed, int):
        raise InputError(str(path), "workspace", f"run {name!r}: seed must be an integer")
    base = path.parent
    return RunEntry(
        name=name,
        pred=base / raw["pred"],
        gold=base / raw["gold"] if isinstance(raw.get("gold"), str) else None,
        system=str(raw.get("system", name)),
        dataset=str(raw.get("dataset", "")),
        language=str(raw.get("language", "")),
        split=str(raw.get("split", "test")),
        history=history,
        seed=seed,
        convention=convention,
        format=raw.get("format"),
        gold_format=raw.get("gold_format"),
        description=str(raw.get("description", "")),
    )


def load_entry(entry: RunEntry, *, pred_data: bytes | None = None, gold_data: bytes | None = None) -> Run:
    """Load the run a manifest entry describes; `*_data`: uploaded bytes read instead of the paths."""
    return load_run(
        entry.pred,
        entry.gold,
        pred_format=entry.format,
        gold_format=entry.gold_format,
        run_id=entry.name,
        system=entry.system,
        dataset=entry.dataset,
        language=entry.language,
        split=entry.split,
        history=entry.history,
        seed=entry.seed,
        convention=entry.convention,
        pred_data=pred_data,
        gold_data=gold_data,
    )


def load_workspace(path: str | Path) -> Workspace:
    """Read the manifest and load every run; a run whose file is missing or malformed is recorded in
    `failed` with its one-line error, and the other runs still load."""
    workspace = read_manifest(path)
    for entry in workspace.entries:
        try:
            workspace.runs[entry.name] = load_entry(entry)
        except InputError as exc:
            workspace.failed[entry.name] = str(exc)
    for few in workspace.fewjoint_entries:
        from analysis.fewjoint import load_fewjoint_system  # only workspaces with FewJoint systems need it

        try:
            workspace.fewjoint[few.name] = load_fewjoint_system(few.gold, few.pred, name=few.name, shots=few.shots)
        except InputError as exc:
            workspace.failed[f"fewjoint:{few.name}"] = str(exc)
    return workspace
