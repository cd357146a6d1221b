"""Files to a validated `Run`: parse gold and predictions, pair them on dialogue id and turn, report."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.conventions import CONVENTIONS, MULTIWOZ30, convention_name
from analysis.errors import InputError
from analysis.formats import FORMATS_BY_NAME, ParsedFile, parse_file
from analysis.formats.engine import DIALOGUES_WITHOUT_TURNS
from analysis.formats.llm_text import AccumulationTooLarge
from analysis.formats.mapping import CHANGES_NOTE, Mapping
from analysis.formats.more import DELTA_NOTE, accumulate_deltas, delta_warning
from analysis.formats.vectors import FORMAT as VECTORS
from analysis.model import (
    INFO_FIELDS,
    STATE_COLUMNS,
    UNPARSEABLE_COLUMN,
    UNPARSEABLE_REASON_COLUMN,
    UNPARSEABLE_TEXT_COLUMN,
    AlignmentReport,
    Run,
    RunInfo,
    RunMeta,
    dialogue_key,
)

EXAMPLES = 5


def load_run(
    pred: str | Path,
    gold: str | Path | None = None,
    *,
    pred_format: str | None = None,
    gold_format: str | None = None,
    meta: RunInfo | None = None,
    pred_data: bytes | None = None,
    gold_data: bytes | None = None,
    pred_deltas: bool | None = None,
    cache_pred: bool = True,
    pred_mapping: Mapping | None = None,
    gold_field: str | None = None,
) -> Run:
    """Load one run. With `gold`, predictions pair with that file; otherwise the prediction file must
    carry gold itself (TRADE, nested, RiSAWOZ, our JSONL/CSV), or be a gold-shaped file scored against
    itself. `meta` says what the run is (`RunInfo`); its empty `run_id` and `system` default to the
    prediction file's name, and a `convention` of None to the files' own. `*_data` pass uploaded bytes
    instead of reading the path (the path still names the file). `pred_deltas` (default: `meta`'s)
    reads each predicted turn as the slots that turn changed and accumulates them
    (`analysis.formats.more`); otherwise a prediction that looks like deltas is noted in the report.
    `cache_pred=False`: the prediction file's parse is not added to the parse cache (batch scoring into
    the score store, which keeps what is read from it).
    `pred_mapping` reads the prediction file by a declared mapping instead of a format, and `gold_field`
    names the field read as gold in it, for files that hold more than one (`analysis.formats.mapping`).
    """
    pred_file = parse_file(
        pred, fmt=pred_format, data=pred_data, store_cache=cache_pred, mapping=pred_mapping, gold_field=gold_field
    )
    gold_file = parse_file(gold, fmt=gold_format, data=gold_data) if gold is not None else None
    notes: dict[str, object] = dict(pred_file.notes)
    if gold_file is None:
        if pred_file.gold is None or pred_file.pred is None:
            raise _not_self_contained(pred, pred_file)
        turns = pred_file.turns
        gold_states, pred_states, listed = pred_file.gold, pred_file.pred, pred_file.listed_slots
        listings = pred_file.listings
        if "pred_missing" not in turns:  # a format may mark turns it holds no prediction for (ConvLab-3)
            turns = turns.assign(pred_missing=False)
        report = _self_report(turns)
    else:
        _refuse_vectors(((pred, pred_file), (gold, gold_file)))
        if gold_file.gold is None:
            raise InputError(str(gold), gold_file.fmt, "this file holds predictions only and cannot serve as gold")
        # A gold-shaped file given as predictions contributes its states (e.g. scored against itself).
        pred_side = pred_file.pred if pred_file.pred is not None else pred_file.states
        if pred_file.gold is not None and pred_file.pred is not None:
            notes["embedded_gold_replaced_by"] = Path(str(gold)).name
        turns, pred_states, report = align(gold_file, pred_file, pred_side)
        if UNPARSEABLE_COLUMN in pred_file.turns:
            turns = _with_unparseable(turns, pred_file.turns)
        gold_states, listed = gold_file.gold, gold_file.listed_slots
        listings = gold_file.listings
        # Both files may list dialogues without turns: counted apart, so the report says which file did.
        empty_pred = notes.pop(DIALOGUES_WITHOUT_TURNS, 0)
        notes.update(gold_file.notes)
        notes["gold_dialogues_without_turns"] = notes.pop(DIALOGUES_WITHOUT_TURNS, 0)
        notes["predicted_dialogues_without_turns"] = empty_pred
    deltas = pred_deltas if pred_deltas is not None else bool(meta is not None and meta.pred_deltas)
    pred_states = _read_as_deltas(pred, pred_file, gold_file, turns, gold_states, pred_states, deltas, notes)
    report.notes.update({k: v for k, v in notes.items() if v})
    formats = (pred_file.fmt,) if gold_file is None else (pred_file.fmt, gold_file.fmt)
    sources = (str(pred),) if gold is None else (str(pred), str(gold))
    info = meta if meta is not None else RunInfo()
    stem = Path(str(pred)).name.split(".")[0]
    declared = {name: getattr(info, name) for name in INFO_FIELDS} | {
        "pred_deltas": deltas,
        "run_id": info.run_id or stem,
        "system": info.system or stem,
        "convention": info.convention or _default_convention_of(formats, gold_states),
    }
    run_meta = RunMeta(**declared, sources=sources, formats=formats)
    shared = (gold_file if gold_file is not None else pred_file).derived
    return Run(run_meta, turns.reset_index(drop=True), gold_states, pred_states, listed, report, listings, shared)


def _not_self_contained(pred: str | Path, pred_file: ParsedFile) -> InputError:
    """Why a file given alone cannot be scored: it lacks gold or predictions."""
    if pred_file.pred is not None:
        return InputError(str(pred), pred_file.fmt, "this file holds predictions only: pass the gold file too (--gold)")
    return InputError(
        str(pred),
        pred_file.fmt,
        "this file holds gold states only: pass it as --gold with a prediction file "
        "(to score it against itself, pass it as both --pred and --gold)",
    )


def _refuse_vectors(sides: tuple[tuple[str | Path | None, ParsedFile], ...]) -> None:
    for side, parsed in sides:
        if parsed.fmt == VECTORS:
            # Its states are placeholders standing for right and wrong: only its own pair means anything.
            raise InputError(
                str(side),
                parsed.fmt,
                "a correctness-vector file carries its own gold (0/1 per slot, no values) and is scored "
                "alone: pass it without a second file",
            )


def _with_unparseable(turns: pd.DataFrame, pred_turns: pd.DataFrame) -> pd.DataFrame:
    """An LLM file's unparseable turns, onto the gold turns, with the text and reason of each (the dialogue
    viewer shows them), where the file has any."""
    kept = [c for c in (UNPARSEABLE_TEXT_COLUMN, UNPARSEABLE_REASON_COLUMN) if c in pred_turns]
    flags = pred_turns[["dialogue_id", "turn_index", UNPARSEABLE_COLUMN, *kept]]
    flagged = flags.assign(_key=dialogue_key(flags["dialogue_id"])).drop(columns="dialogue_id")
    turns = turns.drop(columns=[UNPARSEABLE_COLUMN, *kept], errors="ignore")  # the gold file's own: not these
    turns = turns.assign(_key=dialogue_key(turns["dialogue_id"])).merge(flagged, on=["_key", "turn_index"], how="left")
    turns = turns.drop(columns="_key")
    turns[UNPARSEABLE_COLUMN] = turns[UNPARSEABLE_COLUMN].eq(True).to_numpy(dtype=bool)  # unpaired: False
    return turns


def _read_as_deltas(
    pred: str | Path,
    pred_file: ParsedFile,
    gold_file: ParsedFile | None,
    turns: pd.DataFrame,
    gold_states: pd.DataFrame,
    pred_states: pd.DataFrame,
    deltas: bool,
    notes: dict[str, object],
) -> pd.DataFrame:
    """The predicted states, accumulated over each dialogue when `deltas` asks; otherwise as they are, with
    a note in `notes` when they look like deltas (`delta_warning`)."""
    if deltas and pred_file.notes.get(CHANGES_NOTE):
        raise InputError(
            str(pred),
            pred_file.fmt,
            "this format already accumulates each turn's changes over the dialogue; drop --pred-deltas "
            "(manifest: pred_deltas), which would accumulate the states a second time",
        )
    if deltas:
        try:
            return accumulate_deltas(turns, pred_states)
        except AccumulationTooLarge as problem:
            raise InputError(str(pred), pred_file.fmt, str(problem)) from None
    # The gold side of the check is computed once per gold file (its `derived`, shared by the copies
    # the memory cache hands out): only the prediction side is new for each run.
    source = gold_file if gold_file is not None else pred_file
    notes[DELTA_NOTE] = delta_warning(turns, gold_states, pred_states, source.derived)
    return pred_states


# When the two files' formats are scored under different communities' conventions, the first one listed
# here wins (a TRADE file, gold and predictions in one, decides over a prediction file beside it).
PRECEDENCE = ("trade", "mwzeval", "dstc9", "risawoz", "convlab3", "sgd", "dstc10", "icdst", "checkdst", "fga-trippy")


def _default_convention(formats: tuple[str, ...]) -> str:
    """The convention a file's own community scores it under: what its `FormatSpec` declares."""
    declared = [spec.default_convention for spec in map(FORMATS_BY_NAME.get, formats) if spec is not None]
    named = [c for c in declared if c != "exact"]
    if not named:
        return "exact"
    return min(named, key=lambda c: PRECEDENCE.index(c) if c in PRECEDENCE else len(PRECEDENCE))


def _default_convention_of(formats: tuple[str, ...], gold_states: pd.DataFrame) -> str:
    """The file's own convention, also from what it holds where the format alone does not say: a nested
    per-turn file (the `gt`/`pr` layout of the Granular_Change_Accuracy and FGA repositories) over TRADE's
    30 MultiWOZ slots comes out of TRADE's preprocessing, and those repositories score it TRADE-style."""
    by_format = _default_convention(formats)
    if by_format == "exact" and "nested" in formats and _over_trade_slots(gold_states):
        return "trade"
    return by_format


def _over_trade_slots(states: pd.DataFrame) -> bool:
    """Whether the gold slot names, under TRADE's aliases (`book day` -> `day`), are some of its 30 slots.
    Gold only: a prediction's stray slot is the model's error, not a sign of another dataset."""
    trade = CONVENTIONS["trade"]
    names = states[["domain", "slot"]].drop_duplicates()
    named = {convention_name(d, s, trade) for d, s in zip(names["domain"], names["slot"], strict=True)}
    return bool(named) and named <= MULTIWOZ30


def _self_report(turns: pd.DataFrame) -> AlignmentReport:
    missing = turns[turns["pred_missing"]] if "pred_missing" in turns else turns.iloc[:0]
    n_dialogues = int(turns["dialogue_id"].nunique())
    return AlignmentReport(
        gold_dialogues=n_dialogues,
        gold_turns=len(turns),
        pred_dialogues=int(turns.loc[~turns.index.isin(missing.index), "dialogue_id"].nunique()),
        pred_turns=len(turns) - len(missing),
        missing_turns=len(missing),
        missing_turn_examples=_examples(missing, "dialogue_id"),
    )


def align(
    gold_file: ParsedFile, pred_file: ParsedFile, pred_states: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame, AlignmentReport]:
    """Pair predicted turns with gold turns; gold turns are the universe that gets scored."""
    # A gold file's own `pred_missing` marks say nothing of this prediction file's turns. The gold side
    # (its turns keyed, as `_same_turns` compares them) is computed once per gold file (`derived`).
    gold_turns, gold_pairs = _gold_turns(gold_file)
    pred_turns = pred_file.turns
    if "pred_missing" in pred_turns:  # turns a format holds without a prediction (ConvLab-3) are missing
        pred_turns = pred_turns[~pred_turns["pred_missing"].to_numpy(dtype=bool)]
    # In the gold file's order (the usual case) the keys are the gold turns' own: nothing to key or check.
    in_order = _in_gold_order(gold_file, gold_pairs, pred_turns)
    if not in_order:
        pred_turns = _keyed_once(pred_file, pred_turns)
    if in_order or _same_turns(gold_turns, pred_turns, gold_pairs):
        # The very same (dialogue id, turn) pairs on both sides: nothing to pair or report, and the turns are
        # the gold file's own, aligned once per gold file.
        turns, report, _ = _gold_aligned(gold_file)
        return turns, pred_states[STATE_COLUMNS], copy.deepcopy(report)
    paired = _paired_by_key(gold_turns, pred_turns, pred_file, pred_states)
    if paired is not None:  # the same turns once ids are paired (mwzeval's `sng0073` for `SNG0073.json`)
        n_dialogues = int(gold_turns["_key"].nunique())
        report = AlignmentReport(n_dialogues, len(gold_turns), n_dialogues, len(pred_turns))
        return gold_turns.drop(columns="_key").assign(pred_missing=False), paired, report
    gold_ids = set(gold_turns["_key"].unique())
    pred_ids = set(pred_turns["_key"].unique())
    if not gold_ids & pred_ids:
        example = pred_turns.iloc[0]
        raise InputError(
            pred_file.path,
            pred_file.fmt,
            f"no predicted dialogue id matches the gold file {Path(gold_file.path).name} "
            f"(gold ids look like {gold_turns['dialogue_id'].iloc[0]!r})",
            dialogue_id=str(example["dialogue_id"]),
        )
    merged = gold_turns.merge(
        pred_turns.rename(columns={"dialogue_id": "_pred_id"}),
        on=["_key", "turn_index"],
        how="outer",
        indicator=True,
    )
    missing = merged[merged["_merge"] == "left_only"]
    extra = merged[merged["_merge"] == "right_only"]
    gold_counts = gold_turns.groupby("_key").size()
    pred_counts = pred_turns.groupby("_key").size()
    both = gold_counts.index.intersection(pred_counts.index)
    differ = both[(gold_counts[both] != pred_counts[both]).to_numpy()]
    id_of = gold_turns.drop_duplicates("_key").set_index("_key")["dialogue_id"]
    missing_dialogues = sorted(gold_ids - pred_ids)
    extra_dialogues = sorted(pred_ids - gold_ids)
    missing_in_known = missing[missing["_key"].isin(pred_ids)]
    extra_in_known = extra[extra["_key"].isin(gold_ids)]
    report = AlignmentReport(
        gold_dialogues=len(gold_ids),
        gold_turns=len(gold_turns),
        pred_dialogues=len(pred_ids),
        pred_turns=len(pred_turns),
        missing_dialogues=[str(id_of[k]) for k in missing_dialogues],
        extra_dialogues=sorted(
            pred_turns.drop_duplicates("_key").set_index("_key").loc[extra_dialogues, "dialogue_id"].astype(str)
        ),
        missing_turns=len(missing),
        missing_turn_examples=_examples(missing_in_known if len(missing_in_known) else missing, "dialogue_id"),
        extra_turns=len(extra),
        extra_turn_examples=_examples(extra_in_known if len(extra_in_known) else extra, "_pred_id"),
        turn_count_mismatches=[(str(id_of[k]), int(gold_counts[k]), int(pred_counts[k])) for k in differ],
    )
    matched = merged[merged["_merge"] == "both"]
    # Re-key predicted states to the gold dialogue ids, so both sides share one key.
    rekey = matched[["_pred_id", "turn_index", "dialogue_id"]].rename(columns={"dialogue_id": "_gold_id"})
    states = pred_states.merge(
        rekey, left_on=["dialogue_id", "turn_index"], right_on=["_pred_id", "turn_index"], how="inner"
    )
    states = states.drop(columns=["dialogue_id", "_pred_id"]).rename(columns={"_gold_id": "dialogue_id"})
    turns = gold_turns.drop(columns="_key")
    matched_keys = pd.MultiIndex.from_frame(matched[["dialogue_id", "turn_index"]])
    turns["pred_missing"] = ~pd.MultiIndex.from_frame(turns[["dialogue_id", "turn_index"]]).isin(matched_keys)
    return turns, states[STATE_COLUMNS], report


def _in_gold_order(gold_file: ParsedFile, gold_pairs: pd.DataFrame, pred_turns: pd.DataFrame) -> bool:
    """Whether the predicted turns are the gold file's (dialogue id, turn index) pairs, ids as written, in
    the gold file's order, and no two gold turns share a pairing key and turn (then `_keyed_once` finds none
    twice on the predicted side either, and `_same_turns` holds)."""
    if len(gold_pairs) != len(pred_turns):
        return False
    return bool(gold_pairs.equals(_turn_pairs(pred_turns))) and not _gold_aligned(gold_file)[2]


def _gold_aligned(gold_file: ParsedFile) -> tuple[pd.DataFrame, AlignmentReport, bool]:
    """`align`'s turns and report for a prediction file holding the gold file's very turns, and whether two
    gold turns share a pairing key and turn index: computed once per gold file (its `derived`, as
    `_gold_turns`). Shared: the caller copies the report (its lists change)."""
    found = gold_file.derived.get("align_same")
    if found is None:
        gold_turns, _ = _gold_turns(gold_file)
        twice = bool(gold_turns.duplicated(["_key", "turn_index"]).any())
        turns = gold_turns.drop(columns="_key")
        turns["pred_missing"] = False
        found = (turns, _self_report(turns), twice)
        gold_file.derived["align_same"] = found
    return found


def _keyed_once(pred_file: ParsedFile, pred_turns: pd.DataFrame) -> pd.DataFrame:
    """The predicted turns with their dialogue pairing key `_key`; two dialogues of one key naming the same
    turn are an `InputError` at the first such turn."""
    pred_turns = pred_turns[["dialogue_id", "turn_index"]].copy()
    pred_turns["_key"] = dialogue_key(pred_turns["dialogue_id"])
    twice = pred_turns.duplicated(["_key", "turn_index"])
    if twice.any():
        row = pred_turns[twice].iloc[0]
        raise InputError(
            pred_file.path,
            pred_file.fmt,
            "two dialogues map to the same id once case and '.json' are ignored",
            dialogue_id=str(row["dialogue_id"]),
            turn=int(row["turn_index"]),
        )
    return pred_turns


def _paired_by_key(
    gold_turns: pd.DataFrame, pred_turns: pd.DataFrame, pred_file: ParsedFile, pred_states: pd.DataFrame
) -> pd.DataFrame | None:
    """When both sides list the same (dialogue, turn) pairs once dialogue ids are paired by `_key` (ids that
    differ in case or a `.json` suffix only: mwzeval's lowercase ids against MultiWOZ's `SNG0073.json`), and
    each gold dialogue has a key of its own: the predicted states re-keyed to the gold ids, rows in their
    order, exactly as the general pairing of `align` gives them (its outer merge, group-bys and re-keying
    merge: 35 ms of a MultiWOZ-size file, this 12 ms). None in any other case, which `align` then pairs and
    reports in full: turns a format holds without a prediction, a state of an unlisted turn, two gold ids of
    one key."""
    if len(gold_turns) != len(pred_turns) or len(pred_turns) != len(pred_file.turns) or not len(pred_turns):
        return None
    codes, keys = pd.factorize(pd.concat([gold_turns["_key"], pred_turns["_key"]], ignore_index=True))
    gold_key, pred_key = codes[: len(gold_turns)].astype("int64"), codes[len(gold_turns) :].astype("int64")
    gold_turn = gold_turns["turn_index"].to_numpy(dtype="int64")
    pred_turn = pred_turns["turn_index"].to_numpy(dtype="int64")
    state_turn = pred_states["turn_index"].to_numpy(dtype="int64")
    span = int(max(gold_turn.max(), pred_turn.max(), state_turn.max(initial=0))) + 1  # no two turns one code
    gold_at, pred_at = np.sort(gold_key * span + gold_turn), np.sort(pred_key * span + pred_turn)
    if not np.array_equal(gold_at, pred_at) or not (np.diff(gold_at) > 0).all():  # the same turns, each once
        return None
    gold_id_codes, gold_ids = pd.factorize(gold_turns["dialogue_id"])
    if len(gold_ids) != len(pd.unique(gold_key)):  # two gold ids share a key: paired turn by turn below
        return None
    id_of_key = np.full(len(keys), -1, dtype="int64")
    id_of_key[gold_key] = gold_id_codes
    # Each state row's key, through its dialogue id (the prediction file's ids, keyed as its turns are).
    row_codes, row_ids = pd.factorize(pred_states["dialogue_id"])
    row_keys = pd.Index(keys).get_indexer(dialogue_key(pd.Series(row_ids, dtype="str")))
    if (row_keys < 0).any():
        return None
    row_key = row_keys[row_codes]
    row_at = row_key * span + state_turn
    if not np.isin(row_at, pred_at).all():  # a state of a turn the prediction file does not list
        return None
    states = pred_states[STATE_COLUMNS].reset_index(drop=True)
    states["dialogue_id"] = pd.Series(np.asarray(gold_ids, dtype=object)[id_of_key[row_key]], dtype="str")
    return states


def _gold_turns(gold_file: ParsedFile) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The gold file's turns without its `pred_missing` marks, with their dialogue pairing key `_key`, and
    its (dialogue id, turn index) pairs as `_same_turns` compares them: once per gold file (its `derived`,
    shared by the copies the parse cache hands out). Shared: copy to change."""
    found = gold_file.derived.get("align_gold")
    if found is None:
        gold_turns = gold_file.turns.drop(columns="pred_missing", errors="ignore")
        gold_turns["_key"] = dialogue_key(gold_turns["dialogue_id"])
        found = (gold_turns, _turn_pairs(gold_turns))
        gold_file.derived["align_gold"] = found
    return found[0], found[1]


def _turn_pairs(turns: pd.DataFrame) -> pd.DataFrame:
    columns = ["dialogue_id", "turn_index"]
    return turns[columns].astype({"dialogue_id": "str", "turn_index": "int64"}).reset_index(drop=True)


def _same_turns(gold_turns: pd.DataFrame, pred_turns: pd.DataFrame, gold_pairs: pd.DataFrame | None = None) -> bool:
    """Whether both sides list exactly the same (dialogue id, turn index) pairs, ids as written
    (`gold_pairs`: the gold side's pairs, `_turn_pairs(gold_turns)`, if known)."""
    if len(gold_turns) != len(pred_turns):
        return False
    columns = ["dialogue_id", "turn_index"]
    gold = gold_pairs if gold_pairs is not None else _turn_pairs(gold_turns)
    pred = _turn_pairs(pred_turns)
    if gold.equals(pred):
        # In the same order (a prediction file written in gold order): the same pairs, none twice, since
        # the caller has refused a prediction file naming a turn twice.
        return True
    if gold.duplicated().any():
        return False
    gold = gold.sort_values(columns, kind="stable").reset_index(drop=True)
    pred = pred.sort_values(columns, kind="stable").reset_index(drop=True)
    return bool(gold.equals(pred))


def _examples(frame: pd.DataFrame, id_column: str) -> list[tuple[str, int]]:
    head = frame.head(EXAMPLES)
    return [(str(d), int(t)) for d, t in zip(head[id_column], head["turn_index"], strict=True)]
