"""The canonical run model every format loads into: metadata, a turns table and gold/pred state tables."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

import pandas as pd

from analysis.errors import InputError

HISTORY_MODES = ("predicted", "gold")
TURN_KEY = ["dialogue_id", "turn_index"]
STATE_COLUMNS = ["dialogue_id", "turn_index", "domain", "slot", "relation", "value"]
# A turns column: True where an LLM's output text held no state that could be read (`analysis.formats.more`
# sets it; scoring adds it as False to every other run and counts such a turn as wrong).
UNPARSEABLE_COLUMN = "pred_unparseable"
# Turns columns beside it, set on the unparseable turns only (null elsewhere; absent when a file has none):
# the text as the model wrote it, and why it could not be read (a shape of `analysis.formats.llm_text`).
UNPARSEABLE_TEXT_COLUMN = "pred_unparseable_text"
UNPARSEABLE_REASON_COLUMN = "pred_unparseable_reason"
# The domain under which a reader keeps a predicted string that does not split into domain, slot and value
# (`analysis.formats.states.predicted_triple_strings`); scoring counts it as an off-vocabulary prediction.
NOT_TRIPLE_DOMAIN = "(not domain-slot-value)"


def dialogue_key(ids: pd.Series) -> pd.Series:
    """Pairing key: case-insensitive, `.json` suffix ignored (TRADE keeps it, mwzeval drops it).
    Computed once per distinct id (a dialogue has many turns), then spread back over the rows."""
    codes, uniques = pd.factorize(ids, use_na_sentinel=False)
    keys = pd.Series(uniques).astype("str").str.strip().str.lower().str.removesuffix(".json")
    return pd.Series(keys.to_numpy()[codes], index=ids.index, dtype="str")


@dataclass(frozen=True)
class RunInfo:
    """What a run is, as declared: which system produced it, on which data, how its predictions were made.

    The one definition of a run's descriptive metadata. A manifest's `[[runs]]` entry (`name` is
    `run_id`) reads every field from the key of the same name, the dashboard's `RunSource` carries it
    whole, `analysis.loading.load_run(meta=...)` takes it whole and the loaded run's `RunMeta` extends it.
    A new field added here is read from manifests and reaches the scored run with no other edit (only the
    views that show metadata list their columns).

    `history` is `predicted` when the model saw its own previous state (JGA) and `gold` when it was
    fed the gold previous state (GJGA); the two runs of one system pair up on the compounding page.
    `convention` is None when the files' own convention decides (`analysis.loading`).
    """

    run_id: str = ""
    system: str = ""
    dataset: str = ""
    language: str = ""
    split: str = "test"
    history: str = "predicted"
    seed: int | None = None
    convention: str | None = None
    pred_deltas: bool = False  # predictions hold each turn's changes only (analysis.formats.more)
    # SGD / MultiWOZ 2.2 (the `sgd` convention): the evaluated split's schema and the training schema
    # (its services are seen, the others unseen), as paths; "" for none (`analysis.sgd`).
    schema: str = ""
    train_schema: str = ""
    # The JGA the run's paper publishes (a fraction, or a percentage above 1): the Overview and the
    # report decompose the gap between it and the run's own number (`analysis.reconcile.gap`).
    published_jga: float | None = None

    def __post_init__(self) -> None:
        if self.history not in HISTORY_MODES:
            raise ValueError(f"history must be one of {', '.join(HISTORY_MODES)}, got {self.history!r}")
        if self.published_jga is not None and not 0 <= self.published_jga <= 100:
            raise ValueError(f"published_jga must be a fraction or a percentage, got {self.published_jga!r}")


INFO_FIELDS = tuple(f.name for f in fields(RunInfo))


@dataclass(frozen=True)
class RunMeta(RunInfo):
    """A loaded run's metadata: its `RunInfo` with the convention settled (the declared one, else the
    files' own) and what loading found: the files read and their formats."""

    convention: str = "exact"
    sources: tuple[str, ...] = ()
    formats: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class AlignmentReport:
    """How predictions paired with gold. Nothing is dropped silently: every mismatch is counted here.

    A gold turn without a prediction is scored as an empty prediction (`missing_turns`); a predicted
    turn or dialogue without gold cannot be scored and is counted in `extra_turns` / `extra_dialogues`.
    """

    gold_dialogues: int = 0
    gold_turns: int = 0
    pred_dialogues: int = 0
    pred_turns: int = 0
    missing_dialogues: list[str] = field(default_factory=list)
    extra_dialogues: list[str] = field(default_factory=list)
    missing_turns: int = 0
    missing_turn_examples: list[tuple[str, int]] = field(default_factory=list)
    extra_turns: int = 0
    extra_turn_examples: list[tuple[str, int]] = field(default_factory=list)
    turn_count_mismatches: list[tuple[str, int, int]] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not (self.missing_dialogues or self.extra_dialogues or self.missing_turns or self.extra_turns)

    def warnings(self) -> list[str]:
        """Human-readable lines for every mismatch, shown by the CLI and the dashboard."""
        lines = []
        if self.missing_dialogues:
            lines.append(
                f"{len(self.missing_dialogues)} gold dialogues have no predictions "
                f"(scored as empty), e.g. {', '.join(self.missing_dialogues[:3])}"
            )
        if self.missing_turns:
            ex = ", ".join(f"{d} turn {t}" for d, t in self.missing_turn_examples[:3])
            lines.append(f"{self.missing_turns} gold turns have no prediction (scored as empty), e.g. {ex}")
        if self.extra_dialogues:
            lines.append(
                f"{len(self.extra_dialogues)} predicted dialogues match no gold dialogue (not scored), "
                f"e.g. {', '.join(self.extra_dialogues[:3])}"
            )
        if self.extra_turns:
            ex = ", ".join(f"{d} turn {t}" for d, t in self.extra_turn_examples[:3])
            lines.append(f"{self.extra_turns} predicted turns match no gold turn (not scored), e.g. {ex}")
        if self.turn_count_mismatches:
            d, g, p = self.turn_count_mismatches[0]
            lines.append(
                f"{len(self.turn_count_mismatches)} dialogues differ in turn count, e.g. {d}: {g} gold vs {p} predicted"
            )
        for key, value in self.notes.items():
            if value:
                lines.append(f"{key.replace('_', ' ')}: {value}")
        return lines

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["ok"] = self.ok
        out["warnings"] = self.warnings()
        return out


@dataclass
class Run:
    """One run before any convention: every gold turn, and raw gold and predicted states.

    `turns`: one row per (dialogue_id, turn_index), with `user`, `system` (the reply after the user
    turn), dialogue attributes such as `type`, and `pred_missing`. `gold` / `pred`: one row per raw
    state entry (`STATE_COLUMNS`), empty strings already dropped. `listed_slots` holds every
    (domain, slot) the gold file lists, empty ones included (the DSTC9 slot-accuracy ontology).
    """

    meta: RunMeta
    turns: pd.DataFrame
    gold: pd.DataFrame
    pred: pd.DataFrame
    listed_slots: frozenset[tuple[str, str]]
    alignment: AlignmentReport
    # The gold file's distinct per-turn listings, indexed by `turns["listing"]` (see ParsedFile).
    listings: tuple[tuple[tuple[str, str], ...], ...] = ()
    # What is derived from the gold file alone, shared by every run scored against it in this process (the
    # gold file's `ParsedFile.derived`; see `analysis.gold_side`); never part of the value.
    gold_side: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        validate_run(self)


def validate_run(run: Run) -> None:
    """Structural checks, once at load: the invariants every metric relies on."""
    where = ", ".join(run.meta.sources) or run.meta.run_id
    fmt = "+".join(run.meta.formats) or None
    missing = [c for c in [*TURN_KEY, "user", "system", "pred_missing"] if c not in run.turns.columns]
    if missing:
        raise InputError(where, fmt, f"turns table lacks columns {missing}")
    duplicated = run.turns.duplicated(TURN_KEY)
    if duplicated.any():
        first = run.turns.loc[duplicated.idxmax()]
        raise InputError(
            where, fmt, "duplicate turn", dialogue_id=str(first["dialogue_id"]), turn=int(first["turn_index"])
        )
    for side, table in (("gold", run.gold), ("pred", run.pred)):
        if list(table.columns[: len(STATE_COLUMNS)]) != STATE_COLUMNS:
            raise InputError(where, fmt, f"{side} state table has columns {list(table.columns)}")
        if table["value"].isna().any():
            raise InputError(where, fmt, f"{side} state table holds missing values")
