"""Simulated DST systems: a documented, seeded error model applied to real gold states.

The demo workspace and the benchmarks need prediction runs for every page (JGA vs GJGA pairs, the
same system in two languages, several systems) where no real prediction file may ship. This module
perturbs gold turn states into predictions with an explicit error model; nothing here is a result of
a real system, and every run it makes is named "simulated".

Error model (all probabilities per gold slot row, i.e. per (dialogue, turn, domain, slot)):

- **Segments.** A gold slot keeps one value over a run of consecutive turns; such a run is a
  segment, and its first turn is the *update turn* (the turn the user set or changed the value).
- **Fresh errors.** At an update turn a slot is *missed* with probability ``miss`` and gets a *wrong
  value* with probability ``wrong``; on the other turns of a segment the fresh rates are multiplied
  by ``carry`` (a tracker mostly errs when a value is said). A wrong value is drawn uniformly from the
  other values of that slot seen in the gold (a slot with one value only is missed instead).
- **Per-slot rates.** Every rate is multiplied by a slot factor: ``exp(slot_spread * z)`` with
  ``z`` a standard normal drawn from the slot's name and ``slot_seed`` (so a system finds the same
  slots hard in every run), overridden by ``slot_factors`` where given, then normalised so that the
  update-turn rates average to the profile's rates over the gold rows.
- **Spurious slots.** Each turn, with probability ``spurious``, a slot absent from the gold of that
  turn is predicted: a gold row drawn from the whole gold table (so ontology slots and their values
  come in proportion to their frequency); a draw that collides with a gold slot is dropped.
- **Persistence (predicted history).** A model that reads its own previous state carries its errors:
  an error stays for a geometric number of turns (each further turn with probability ``persist``)
  until the gold changes the slot (the segment ends). A spurious slot persists the same way until the
  dialogue ends. With **gold history** the model is fed the gold previous state, so errors do not
  carry over: exactly the fresh errors remain. Both modes use the same draws from the same seed,
  so the gold-history errors of a run are a subset of its predicted-history errors.
- **System and language.** All rates are multiplied by ``language_penalty / strength``: a stronger
  system (``strength`` > 1) errs less, a weaker second language (``language_penalty`` > 1) more.
  Probabilities are capped at 0.95.

Everything is vectorised over the gold state table with numpy; a run is a function of (gold, profile,
history, seed) only.

>>> import pandas as pd
>>> gold = pd.DataFrame(
...     [("d1", 0, "hotel", "area", "=", "east"), ("d1", 1, "hotel", "area", "=", "east")],
...     columns=["dialogue_id", "turn_index", "domain", "slot", "relation", "value"],
... )
>>> turns = pd.DataFrame({"dialogue_id": ["d1", "d1"], "turn_index": [0, 1]})
>>> perfect = ErrorProfile(miss=0.0, wrong=0.0, spurious=0.0)
>>> simulate_predictions(gold, turns, profile=perfect, history="predicted", seed=1).equals(gold)
True
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from analysis.conventions import COMMON_EMPTY
from analysis.model import HISTORY_MODES, STATE_COLUMNS, AlignmentReport, Run

__all__ = [
    "ErrorProfile",
    "PreparedGold",
    "draw_predictions",
    "perturb_run",
    "prepare_gold",
    "simulate_predictions",
    "simulate_run",
]

MAX_PROBABILITY = 0.95


@dataclass(frozen=True)
class ErrorProfile:
    """The knobs of the error model (see the module docstring); defaults give a mid-strength tracker.

    >>> ErrorProfile().scale, ErrorProfile(strength=2.0, language_penalty=1.5).scale
    (1.0, 0.75)
    """

    name: str = "simulated"
    miss: float = 0.06
    wrong: float = 0.04
    spurious: float = 0.02
    carry: float = 0.1
    persist: float = 0.85
    strength: float = 1.0
    language_penalty: float = 1.0
    slot_spread: float = 0.5
    slot_seed: int = 0
    slot_factors: Mapping[str, float] = field(default_factory=dict)  # "domain-slot" -> raw factor

    def __post_init__(self) -> None:
        for name in ("miss", "wrong", "spurious", "carry", "persist"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"ErrorProfile.{name} has to be a probability in [0, 1], got {value!r}")
        if self.persist >= 1.0:
            raise ValueError("ErrorProfile.persist has to be below 1 (an error must be able to end)")
        for name in ("strength", "language_penalty"):
            if getattr(self, name) <= 0:
                raise ValueError(f"ErrorProfile.{name} has to be positive, got {getattr(self, name)!r}")
        if self.slot_spread < 0:
            raise ValueError(f"ErrorProfile.slot_spread has to be >= 0, got {self.slot_spread!r}")

    @property
    def scale(self) -> float:
        """The factor every rate is multiplied by: language penalty over system strength."""
        return self.language_penalty / self.strength

    def in_language(self, penalty: float) -> ErrorProfile:
        """The same system working in another language, `penalty` times as error-prone."""
        return replace(self, language_penalty=penalty)


@dataclass(frozen=True)
class PreparedGold:
    """Gold states as numpy arrays, computed once and reused by every simulated run over them.

    Rows are non-empty gold slot rows sorted by (dialogue, domain, slot, turn); turn rows are sorted
    by (dialogue, turn).
    """

    rows: pd.DataFrame  # STATE_COLUMNS, sorted as above
    turns: pd.DataFrame  # dialogue_id, turn_index, sorted
    row_turn: np.ndarray  # turn-row position of each gold row
    slot_code: np.ndarray  # code of (domain, slot) per row
    slot_names: list[str]  # "domain-slot" per code
    pos: np.ndarray  # position of the row inside its segment (0 = update turn)
    seg_start: np.ndarray  # row position where the row's segment starts
    value_pos: np.ndarray  # index of the row's value among its slot's distinct values
    value_count: np.ndarray  # number of distinct values of the row's slot
    value_offset: np.ndarray  # offset of the row's slot in `values`
    values: np.ndarray  # distinct values, grouped by slot code
    remaining: np.ndarray  # per turn row: turns left in its dialogue, this one included
    gold_keys: np.ndarray  # sorted turn_row * n_slots + slot_code of every gold row
    # String columns as pandas arrays, so an output column is one `take` (no Python objects).
    value_pool: pd.api.extensions.ExtensionArray  # the rows' values, then `values`
    row_relation: pd.api.extensions.ExtensionArray
    slot_domain: pd.api.extensions.ExtensionArray  # per slot code
    slot_slot: pd.api.extensions.ExtensionArray  # per slot code
    turn_dialogue: pd.api.extensions.ExtensionArray  # per turn row
    turn_number: np.ndarray  # turn index per turn row


def _non_empty(gold_states: pd.DataFrame) -> pd.DataFrame:
    values = gold_states["value"].astype("str")
    keep = gold_states["value"].notna() & ~values.str.strip().str.lower().isin(COMMON_EMPTY)
    return gold_states.loc[keep, STATE_COLUMNS]


def prepare_gold(gold_states: pd.DataFrame, turns: pd.DataFrame) -> PreparedGold:
    """Segment the gold and index its values (the part of a simulation that does not depend on the seed)."""
    turn_table = (
        turns[["dialogue_id", "turn_index"]]
        .drop_duplicates()
        .sort_values(["dialogue_id", "turn_index"], kind="stable")
        .reset_index(drop=True)
    )
    rows = (
        _non_empty(gold_states)
        .sort_values(["dialogue_id", "domain", "slot", "turn_index"], kind="stable")
        .drop_duplicates(["dialogue_id", "turn_index", "domain", "slot"])
        .reset_index(drop=True)
    )
    turn_pos = pd.MultiIndex.from_frame(turn_table).get_indexer(
        pd.MultiIndex.from_frame(rows[["dialogue_id", "turn_index"]])
    )
    if (turn_pos < 0).any():
        raise ValueError("gold states name turns that the turns table does not list")
    slot_table = rows[["domain", "slot"]].astype("str").drop_duplicates().sort_values(["domain", "slot"])
    slot_code = pd.MultiIndex.from_frame(slot_table).get_indexer(
        pd.MultiIndex.from_frame(rows[["domain", "slot"]].astype("str"))
    )
    slot_names = (slot_table["domain"] + "-" + slot_table["slot"]).tolist()
    value_code, _ = pd.factorize(rows["value"].astype("str"))
    dialogue_code, _ = pd.factorize(rows["dialogue_id"])
    turn_index = rows["turn_index"].to_numpy(dtype=np.int64)
    n = len(rows)
    new_segment = np.ones(n, dtype=bool)
    if n > 1:
        new_segment[1:] = (
            (dialogue_code[1:] != dialogue_code[:-1])
            | (slot_code[1:] != slot_code[:-1])
            | (turn_index[1:] != turn_index[:-1] + 1)
            | (value_code[1:] != value_code[:-1])
        )
    starts = np.flatnonzero(new_segment)
    seg_start = starts[np.cumsum(new_segment) - 1] if n else np.zeros(0, dtype=np.int64)
    pos = np.arange(n) - seg_start
    # Distinct values per slot, grouped by slot code; each row's value position in its slot's list.
    distinct = pd.DataFrame({"slot": slot_code, "value": rows["value"].astype("str").to_numpy()})
    distinct = distinct.drop_duplicates().sort_values(["slot", "value"], kind="stable").reset_index(drop=True)
    counts = np.bincount(distinct["slot"].to_numpy(), minlength=len(slot_names))
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    within = np.arange(len(distinct)) - offsets[distinct["slot"].to_numpy()]
    lookup = pd.MultiIndex.from_frame(distinct[["slot", "value"]])
    row_value_index = lookup.get_indexer(
        pd.MultiIndex.from_arrays([slot_code, rows["value"].astype("str").to_numpy()], names=["slot", "value"])
    )
    dialogue_of_turn, _ = pd.factorize(turn_table["dialogue_id"])
    sizes = np.bincount(dialogue_of_turn)
    first = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    remaining = sizes[dialogue_of_turn] - (np.arange(len(turn_table)) - first[dialogue_of_turn])
    n_slots = max(len(slot_names), 1)
    return PreparedGold(
        rows=rows,
        turns=turn_table,
        row_turn=turn_pos.astype(np.int64),
        slot_code=slot_code.astype(np.int64),
        slot_names=[str(s) for s in slot_names],
        pos=pos.astype(np.int64),
        seg_start=seg_start.astype(np.int64),
        value_pos=within[row_value_index].astype(np.int64),
        value_count=counts[slot_code].astype(np.int64),
        value_offset=offsets[slot_code],
        values=distinct["value"].to_numpy(dtype=object),
        remaining=remaining.astype(np.int64),
        gold_keys=np.sort(turn_pos.astype(np.int64) * n_slots + slot_code),
        value_pool=pd.concat([rows["value"].astype("str"), distinct["value"]], ignore_index=True).array,
        row_relation=rows["relation"].astype("str").array,
        slot_domain=slot_table["domain"].array,
        slot_slot=slot_table["slot"].array,
        turn_dialogue=turn_table["dialogue_id"].astype("str").array,
        turn_number=turn_table["turn_index"].to_numpy(dtype=np.int64),
    )


def _slot_factors(prepared: PreparedGold, profile: ErrorProfile) -> np.ndarray:
    """Per-slot rate multipliers, averaging 1 over the update turns of the gold."""
    raw = np.array(
        [
            profile.slot_factors.get(
                name,
                float(
                    np.exp(
                        profile.slot_spread
                        * np.random.default_rng([profile.slot_seed, zlib.crc32(name.encode("utf-8"))]).standard_normal()
                    )
                ),
            )
            for name in prepared.slot_names
        ],
        dtype=float,
    )
    updates = prepared.slot_code[prepared.pos == 0]
    mean = raw[updates].mean() if len(updates) else 1.0
    return raw / mean if mean > 0 else raw


def draw_predictions(
    prepared: PreparedGold, *, profile: ErrorProfile, history: str, seed: int | list[int]
) -> pd.DataFrame:
    """One simulated run's predicted states over prepared gold (STATE_COLUMNS, sorted by turn)."""
    if history not in HISTORY_MODES:
        raise ValueError(f"history has to be one of {', '.join(HISTORY_MODES)}, got {history!r}")
    rng = np.random.default_rng(seed)
    n, n_turns = len(prepared.rows), len(prepared.turns)
    # Every draw happens in both modes, in one order, so the two histories share their fresh errors.
    u = rng.random(n)
    length = rng.geometric(1.0 - profile.persist, n)
    pick = rng.random(n)
    u_spurious = rng.random(n_turns)
    spurious_row = rng.integers(0, max(n, 1), n_turns)
    spurious_length = rng.geometric(1.0 - profile.persist, n_turns)

    factor = _slot_factors(prepared, profile)[prepared.slot_code] if n else np.zeros(0)
    base = np.where(prepared.pos == 0, 1.0, profile.carry) * factor * profile.scale
    p_miss = np.minimum(profile.miss * base, MAX_PROBABILITY)
    p_wrong = np.minimum(profile.wrong * base, MAX_PROBABILITY - p_miss)
    event = u < p_miss + p_wrong
    is_wrong = (u >= p_miss) & event & (prepared.value_count > 1)
    shift = 1 + np.floor(pick * np.maximum(prepared.value_count - 1, 1)).astype(np.int64)
    wrong_index = prepared.value_offset + (prepared.value_pos + shift) % np.maximum(prepared.value_count, 1)

    if history == "gold":
        erroneous, source = event, np.arange(n)
    else:
        # Within a segment, an error starting at position j covers positions j .. j + length - 1.
        # Segments are contiguous and ordered, so a global running maximum offset by segment start
        # is a per-segment running maximum.
        reach = np.where(event, prepared.pos + length, 0)
        big = int(reach.max()) + 1 if n else 1
        covered = np.maximum.accumulate(prepared.seg_start * big + reach) if n else reach
        erroneous = covered - prepared.seg_start * big > prepared.pos
        latest = np.maximum.accumulate(np.where(event, np.arange(n), -1)) if n else np.zeros(0, dtype=np.int64)
        source = np.where(latest >= prepared.seg_start, latest, np.arange(n))
    kept = np.flatnonzero(~erroneous | is_wrong[source])
    # Value and relation of each output row as positions in `value_pool` and the gold rows.
    changed = erroneous[kept] & is_wrong[source[kept]]
    out_value = np.where(changed, n + wrong_index[source[kept]], kept)
    out_turn, out_slot, out_row = prepared.row_turn[kept], prepared.slot_code[kept], kept

    # Spurious slots: one drawn gold row per chosen turn, carried to later turns with predicted history.
    chosen = np.flatnonzero(u_spurious < min(profile.spurious * profile.scale, MAX_PROBABILITY))
    if n and len(chosen):
        span = np.ones(len(chosen), dtype=np.int64)
        if history == "predicted":
            span = np.minimum(spurious_length[chosen], prepared.remaining[chosen])
        turn_rows = np.repeat(chosen, span) + (np.arange(span.sum()) - np.repeat(np.cumsum(span) - span, span))
        source_rows = np.repeat(spurious_row[chosen], span)
        n_slots = len(prepared.slot_names)
        keys = turn_rows * n_slots + prepared.slot_code[source_rows]
        position = np.minimum(np.searchsorted(prepared.gold_keys, keys), len(prepared.gold_keys) - 1)
        collides = prepared.gold_keys[position] == keys
        # A turn gets one spurious value per slot: the earliest draw (a carried one before a fresh one).
        unique = np.zeros(len(keys), dtype=bool)
        unique[np.unique(keys, return_index=True)[1]] = True
        take = source_rows[~collides & unique]
        out_turn = np.concatenate([out_turn, turn_rows[~collides & unique]])
        out_slot = np.concatenate([out_slot, prepared.slot_code[take]])
        out_row = np.concatenate([out_row, take])
        out_value = np.concatenate([out_value, take])
    order = np.lexsort((out_slot, out_turn))
    turn_of, slot_of = out_turn[order], out_slot[order]
    return pd.DataFrame(
        {
            "dialogue_id": prepared.turn_dialogue.take(turn_of),
            "turn_index": prepared.turn_number[turn_of],
            "domain": prepared.slot_domain.take(slot_of),
            "slot": prepared.slot_slot.take(slot_of),
            "relation": prepared.row_relation.take(out_row[order]),
            "value": prepared.value_pool.take(out_value[order]),
        }
    ).astype({"value": "str"})


def simulate_predictions(
    gold_states: pd.DataFrame,
    turns: pd.DataFrame,
    *,
    profile: ErrorProfile,
    history: str,
    seed: int,
) -> pd.DataFrame:
    """Predicted states of a simulated system over gold states (STATE_COLUMNS), deterministic in `seed`.

    `turns` lists every turn (dialogue_id, turn_index), empty-state turns included, so spurious slots
    can land anywhere. Empty gold markers (``""``, ``none``, ``not mentioned``, ``未提及``) are not states.
    """
    return draw_predictions(prepare_gold(gold_states, turns), profile=profile, history=history, seed=seed)


def _simulated_run(run: Run, pred: pd.DataFrame, *, run_id: str, system: str, history: str, seed: int | None) -> Run:
    meta = replace(run.meta, run_id=run_id, system=system, history=history, seed=seed)
    n_dialogues = int(run.turns["dialogue_id"].nunique())
    report = AlignmentReport(
        gold_dialogues=n_dialogues, gold_turns=len(run.turns), pred_dialogues=n_dialogues, pred_turns=len(run.turns)
    )
    return Run(meta, run.turns.assign(pred_missing=False), run.gold, pred, run.listed_slots, report, run.listings)


def simulate_run(
    run: Run, *, profile: ErrorProfile, history: str = "predicted", seed: int, run_id: str | None = None
) -> Run:
    """A run whose predictions are simulated over `run`'s gold (its own predictions are ignored)."""
    prepared = prepare_gold(run.gold, run.turns)
    pred = draw_predictions(prepared, profile=profile, history=history, seed=seed)
    return _simulated_run(
        run,
        pred,
        run_id=run_id or f"{profile.name}-{history}-{seed}",
        system=profile.name,
        history=history,
        seed=seed,
    )


def perturb_run(
    run: Run,
    *,
    n_runs: int,
    seed: int,
    profile: ErrorProfile | None = None,
    history: str = "predicted",
) -> list[Run]:
    """`n_runs` simulated runs over one gold (benchmarks): the gold is prepared once, then each run is a
    few numpy draws seeded with ``[seed, i]``; run i is named ``simulated-{i}``.
    """
    profile = profile or ErrorProfile()
    prepared = prepare_gold(run.gold, run.turns)
    return [
        _simulated_run(
            run,
            draw_predictions(prepared, profile=profile, history=history, seed=[seed, i]),
            run_id=f"simulated-{i}",
            system=profile.name,
            history=history,
            seed=seed * 1_000 + i,
        )
        for i in range(n_runs)
    ]


def pick_dialogues(ids: Iterable[str], n: int) -> list[str]:
    """The `n` ids with the smallest SHA-256 digest, in that order (independent of file order): the gold
    dialogues every demo excerpt keeps (`analysis.demo.build`, `analysis.demo.sgd`).

    >>> pick_dialogues(["a", "b", "c"], 2) == pick_dialogues(["c", "b", "a"], 2)
    True
    """
    return sorted(ids, key=lambda i: hashlib.sha256(str(i).encode("utf-8")).hexdigest())[:n]
