"""What each scorer reads as gold, between loading and scoring: a convention named after a scorer meets a
gold file in the scorer's own form (scored as given), in a form that scorer's own pipeline converts (prepared
the same way here, and said), or in a form it never reads (n/a, with the reason): never a silent number.

A gold format is one the project reads (`analysis.formats`); `gold_input(convention, run)` says which of the
three a run is under a convention, and `prepare` applies it. `score_run` calls `prepare`; the note travels in
the scored run's alignment (`NOTE`), and every metric of a run whose gold the scorer would not read is n/a
with the reason (`not_read`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Literal

import numpy as np
import pandas as pd

from analysis.conventions import COMMON_EMPTY, Convention
from analysis.model import Run

NOTE = "scorer_input"  # the alignment note's key: {"status": ..., "note": ...}
Status = Literal["as given", "prepared", "n/a"]

# Gold-only files are datasets in their release form: a scorer reads them only through its own conversion.
# Any other file holds gold and predictions together, written by the pipeline that made them (a system's
# output, the project's own JSONL/CSV): its gold is read as written, whichever scorer is named.
# Dataset files in their release form (gold only), as `analysis.formats` reads them.
DATASET_FORMATS = ("multiwoz", "crosswoz", "dstc9", "dstc10", "sgd", "convlab3-dialogues")


@dataclass(frozen=True)
class Scorer:
    """A scorer a convention is named after: its name, and the gold formats it reads as given."""

    name: str
    own_formats: tuple[str, ...]


SCORERS: Mapping[str, Scorer] = MappingProxyType(
    {
        "trade": Scorer("TRADE", ("trade",)),
        "dstc9": Scorer("DSTC9 track 2", ("dstc9",)),
        "dstc9-multiwoz": Scorer("DSTC9 track 2", ("dstc9",)),
        "dstc9-crosswoz": Scorer("DSTC9 track 2", ("dstc9",)),
        "mwzeval": Scorer("mwzeval", ()),
        "convlab3": Scorer("ConvLab-3", ("convlab3", "convlab3-dialogues")),
        "sgd": Scorer("the SGD evaluator", ("sgd",)),
        "dstc10": Scorer("DSTC10 track 2's scores.py", ("dstc10",)),
        "fga-trippy": Scorer("the FGA repository's compute_accuracy_trippy.py", ("correctness-vectors",)),
        "risawoz": Scorer("the RiSAWOZ evaluation", ("risawoz",)),
        "icdst": Scorer("IC-DST's evaluate_metrics.py", ("icdst", "icdst-completion")),
        "checkdst": Scorer("CheckDST", ("checkdst",)),
    }
)


@dataclass(frozen=True)
class GoldInput:
    """How a scorer-named convention meets a run's gold: `status`, what was done or why not (`note`), and
    the preparation (`prepare`: the run as that scorer's pipeline would hand it over) when prepared."""

    status: Status
    note: str
    prepare: Callable[[Run], Run] | None = None


# --- ConvLab-3: data/unified_datasets/multiwoz21/preprocess.py (ConvLab/ConvLab-3) -----------------------------
# The unified state of a user turn is the next system turn's metadata written into a full empty state: the
# domains and slots below, every one listed at every turn (police and bus dropped, `ticket` and `booked`
# skipped). Each value stripped, `do nt care` / `do n't care` made `dontcare`, and `?`, `none`, `not mentioned`
# made empty; slot names lower-cased and renamed where the domain has no slot of that name.
CONVLAB3_MWZ_STATE: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "attraction": ("type", "name", "area"),
        "hotel": (
            "name",
            "area",
            "parking",
            "price range",
            "stars",
            "internet",
            "type",
            "book stay",
            "book day",
            "book people",
        ),
        "restaurant": ("food", "price range", "name", "area", "book time", "book day", "book people"),
        "taxi": ("leave at", "destination", "departure", "arrive by"),
        "train": ("leave at", "destination", "day", "arrive by", "departure", "book people"),
        "hospital": ("department",),
    }
)
CONVLAB3_MWZ_NAMES: Mapping[str, str] = MappingProxyType(
    {
        "pricerange": "price range",
        "arrive": "arrive by",
        "arriveby": "arrive by",
        "leave": "leave at",
        "leaveat": "leave at",
        "depart": "departure",
        "dest": "destination",
        "people": "book people",
        "stay": "book stay",
    }
)
CONVLAB3_MWZ_DOMAIN_NAMES: Mapping[tuple[str, str], str] = MappingProxyType(
    {
        ("hotel", "day"): "book day",
        ("hotel", "price"): "price range",
        ("restaurant", "day"): "book day",
        ("restaurant", "time"): "book time",
        ("restaurant", "price"): "price range",
    }
)
CONVLAB3_MWZ_EMPTY = frozenset({"?", "none", "not mentioned"})
CONVLAB3_MWZ_DONTCARE = frozenset({"do nt care", "do n't care"})
CONVLAB3_MWZ_SKIPPED = frozenset({"ticket", "booked"})


def _convlab3_name(domain: str, slot: str) -> str:
    slot = slot.lower()
    if slot in CONVLAB3_MWZ_STATE.get(domain, ()):
        return slot
    return CONVLAB3_MWZ_NAMES.get(slot, CONVLAB3_MWZ_DOMAIN_NAMES.get((domain, slot), slot))


def _convlab3_names(states: pd.DataFrame) -> pd.DataFrame:
    """Domains lower-cased and slot names in ConvLab-3's unified MultiWOZ names, once per distinct name."""
    domains = states["domain"].str.lower()
    # Each column factorised on its own and the pair of codes made one integer (as `scoring._rename_gold`): a
    # MultiIndex's factorize builds a tuple per row (21 ms of a MultiWOZ-size run's 50,000 slot rows).
    d_codes, d_names = pd.factorize(domains, use_na_sentinel=False)
    s_codes, s_names = pd.factorize(states["slot"], use_na_sentinel=False)
    width = max(len(s_names), 1)
    pairs, codes = np.unique(d_codes.astype("int64") * width + s_codes, return_inverse=True)
    mapped = [_convlab3_name(str(d_names[p // width]), str(s_names[p % width])) for p in pairs.tolist()]
    return states.assign(
        domain=domains, slot=pd.array(mapped, dtype="str").take(codes.reshape(-1)) if len(codes) else states["slot"]
    )


def _prepare_convlab3_multiwoz(run: Run) -> Run:
    gold = run.gold.assign(domain=run.gold["domain"].str.lower())
    gold = gold[gold["domain"].isin(list(CONVLAB3_MWZ_STATE)) & ~gold["slot"].str.lower().isin(CONVLAB3_MWZ_SKIPPED)]
    gold = _convlab3_names(gold)
    value = gold["value"].str.strip()
    value = value.where(~value.isin(list(CONVLAB3_MWZ_DONTCARE)), "dontcare")
    gold = gold.assign(value=value)[~value.isin(list(CONVLAB3_MWZ_EMPTY)) & value.ne("")]
    listing = tuple((d, s) for d, slots in CONVLAB3_MWZ_STATE.items() for s in slots)
    turns = run.turns.assign(listing=np.zeros(len(run.turns), dtype="int64"), n_listed=len(listing))
    return replace(
        run,
        turns=turns,
        gold=gold.reset_index(drop=True),
        pred=_convlab3_names(run.pred),
        listed_slots=frozenset(listing),
        listings=(listing,),
    )


CONVLAB3_MULTIWOZ_NOTE = (
    "raw MultiWOZ gold prepared as ConvLab-3's own preprocessing makes it (data/unified_datasets/multiwoz21/"
    "preprocess.py): 'not mentioned', 'none' and '?' empty, 'do n't care' is dontcare, values stripped, "
    "police and bus dropped, ticket and booked skipped, every one of its 31 slots listed at every turn, slot "
    "names renamed to its unified names (price range, book day, leave at, ...) on both sides"
)

# --- DSTC9 track 2: convlab2/dst/dstc9/utils.py, prepare_data (thu-coai/ConvLab-2) ----------------------------
# Subtask multiwoz reads MultiWOZ-zh's raw test.json: per turn the next system turn's metadata, semi and book
# flattened into one state per domain, the police, hospital and bus domains (警察机关, 医院, 公共汽车) dropped.
DSTC9_ZH_DROPPED = frozenset({"警察机关", "医院", "公共汽车"})


def _prepare_dstc9_multiwoz_zh(run: Run) -> Run:
    keep = ~run.gold["domain"].isin(list(DSTC9_ZH_DROPPED))
    listed = frozenset(p for p in run.listed_slots if p[0] not in DSTC9_ZH_DROPPED)
    listings = tuple(tuple(p for p in listing if p[0] not in DSTC9_ZH_DROPPED) for listing in run.listings)
    turns = run.turns
    if "listing" in turns and listings:
        sizes = np.array([len(listing) for listing in listings], dtype="int64")
        turns = turns.assign(n_listed=sizes[turns["listing"].to_numpy(dtype="int64")])
    gold = run.gold[keep].reset_index(drop=True)
    return replace(run, turns=turns, gold=gold, listed_slots=listed, listings=listings)


DSTC9_MULTIWOZ_ZH_NOTE = (
    "raw MultiWOZ-zh gold prepared as DSTC9's own gold conversion makes it (ConvLab-2 convlab2/dst/dstc9/"
    "utils.py, prepare_data, subtask multiwoz): the police, hospital and bus domains dropped, semi and book "
    "slots in one state per domain"
)


def _is_chinese(run: Run) -> bool:
    domains = pd.unique(run.gold["domain"].astype("str"))
    return any(any(ord(ch) > 0x2E80 for ch in str(d)) for d in domains)


# --- Other scorers' conversions of raw MultiWOZ that this tool follows through the convention's own rules -----
MWZEVAL_MULTIWOZ_NOTE = (
    "raw MultiWOZ 2.1 gold read the way mwzeval's MultiWOZ 2.2 loader builds gold states (its own gold is "
    "MultiWOZ 2.2): 'not mentioned' and 'none' empty, dontcare dropped, the first of several values, booking "
    "slots in 2.2 names (bookday, bookpeople, bookstay, booktime), then its normalize_data"
)
TRADE_MULTIWOZ_NOTE = (
    "raw MultiWOZ gold read as TRADE's preprocessing (create_data.py) leaves it in the respects this tool "
    "follows: 'not mentioned' empty, names lower-cased, police, hospital and bus outside its 30 slots; its "
    "label fixes (fix_general_label_error) are not applied, so where they would rewrite a gold value this is "
    "not TRADE's number"
)


def _raw_multiwoz(conv: Convention, run: Run) -> GoldInput:
    """A raw MultiWOZ (or MultiWOZ-zh) dialogue file as gold, under each scorer."""
    name, scorer = conv.name, SCORERS[conv.name]
    zh = _is_chinese(run)
    if name == "convlab3" and not zh:
        return GoldInput("prepared", CONVLAB3_MULTIWOZ_NOTE, _prepare_convlab3_multiwoz)
    if name.startswith("dstc9") and zh and conv.subtask != "crosswoz":
        return GoldInput("prepared", DSTC9_MULTIWOZ_ZH_NOTE, _prepare_dstc9_multiwoz_zh)
    if name == "mwzeval" and not zh:
        return GoldInput("prepared", MWZEVAL_MULTIWOZ_NOTE)
    if name == "trade" and not zh:
        return GoldInput("prepared", TRADE_MULTIWOZ_NOTE)
    if name.startswith("dstc9"):
        return GoldInput(
            "n/a",
            "DSTC9 track 2 scored MultiWOZ-zh (subtask multiwoz) and CrossWOZ-en (crosswoz); its gold conversion "
            "reads those files only, and its value map leaves English MultiWOZ's 'not mentioned' a value to "
            "predict: a number no DSTC9 scorer printed",
        )
    language = "MultiWOZ-zh" if zh else "raw MultiWOZ"
    return GoldInput("n/a", f"{scorer.name} never reads {language} dialogues as gold: {_never_reads(conv)}")


def _never_reads(conv: Convention) -> str:
    scorer = SCORERS[conv.name]
    own = " or ".join(f"{fmt} files" for fmt in scorer.own_formats) or "its own MultiWOZ 2.2 download"
    return (
        f"it reads its gold from {own}, and this tool does not reproduce a conversion of this file into that "
        "form; its rules applied to this gold as written would score placeholders and names that scorer never sees"
    )


def _placeholders(conv: Convention, run: Run) -> tuple[int, list[str]]:
    """Gold values that raw datasets write for an empty slot ('not mentioned', 'none', '未提及') and that this
    convention scores as values: how many, and which."""
    forms = sorted(COMMON_EMPTY - conv.empty_values - {""})
    if not forms or run.gold.empty:
        return 0, []
    lowered = run.gold["value"].str.strip().str.lower()
    found = lowered[lowered.isin(forms)]
    return len(found), sorted(pd.unique(found).tolist())


def gold_format(run: Run) -> str:
    """The format the run's gold was read from ("" when the run was built in code)."""
    return run.meta.formats[-1] if run.meta.formats else ""


def gold_input(conv: Convention, run: Run) -> GoldInput | None:
    """How the scorer a convention is named after meets this run's gold; None when the convention is named
    after no scorer ('exact', 'mwzeval-lenient': this tool's own rules, whatever the file)."""
    scorer = SCORERS.get(conv.name)
    if scorer is None:
        return None
    fmt = gold_format(run)
    if fmt in scorer.own_formats:
        return GoldInput("as given", f"{fmt} is {scorer.name}'s own gold format")
    if fmt == "multiwoz":
        return _raw_multiwoz(conv, run)
    if fmt == "crosswoz" and conv.name.startswith("dstc9"):
        return GoldInput(
            "n/a",
            "DSTC9's gold conversion of a CrossWOZ file (convlab2/dst/dstc9/utils.py, prepare_data) also fills "
            "an empty name from the system's single selected result while the domain's state is unchanged, "
            "which this tool's CrossWOZ reader does not: score against its DSTC9-shaped gold instead",
        )
    if fmt in DATASET_FORMATS:
        return GoldInput("n/a", f"{scorer.name} never reads a {fmt} file as gold: {_never_reads(conv)}")
    # A file holding its own gold (a system's output, the project's JSONL/CSV, a run built in code).
    what = f"a {fmt} file" if fmt else "this run"
    note = f"{what} carries its own gold, scored as written under {scorer.name}'s rules"
    count, forms = _placeholders(conv, run)
    if count:
        note += (
            f"; its gold holds {count:,} values {', '.join(repr(f) for f in forms)} that raw datasets write for an "
            f"empty slot and {scorer.name} scores as values to predict (its own pipeline empties them before "
            "scoring): convert the gold with that pipeline, or read it under a convention that treats them as empty"
        )
    return GoldInput("as given", note)


def prepare(run: Run, conv: Convention) -> tuple[Run, GoldInput | None]:
    """The run as the convention's scorer would be handed it, and how (None: a convention of this tool's own)."""
    found = gold_input(conv, run)
    if found is not None and found.prepare is not None:
        run = found.prepare(run)
    return run, found


WARNING_PREFIX = "gold under "  # how the run's warning line about its gold starts (`warning`)


def warning(conv: Convention, found: GoldInput) -> str | None:
    """The line shown with the run's warnings: a prepared gold, a gold the scorer never reads (every metric
    n/a), or a caveat on gold scored as given; None for gold read as given with nothing to say.

    >>> warning(Convention("trade", ""), GoldInput("n/a", "never"))
    'gold under trade n/a (every metric): never'
    """
    if found.status == "n/a":
        return f"{WARNING_PREFIX}{conv.name} n/a (every metric): {found.note}"
    if found.status == "prepared" or "values to predict" in found.note:
        return f"{WARNING_PREFIX}{conv.name} {found.status}: {found.note}"
    return None


def unread_reasons(alignments: Mapping[str, Mapping[str, object]]) -> dict[str, str]:
    """The runs (ids) whose gold their convention's scorer never reads (`NOTE` status n/a), each with why.

    >>> unread_reasons({"a": {"notes": {NOTE: {"status": "n/a", "note": "never"}}}, "b": {}})
    {'a': 'never'}
    """
    out = {}
    for run_id, alignment in alignments.items():
        notes = alignment.get("notes") or {}
        found = notes.get(NOTE) if isinstance(notes, Mapping) else None
        if isinstance(found, Mapping) and found.get("status") == "n/a":
            out[run_id] = str(found.get("note", ""))
    return out


def unread_runs(alignments: Mapping[str, Mapping[str, object]]) -> set[str]:
    """The runs (ids) whose gold their convention's scorer never reads (`NOTE` status n/a)."""
    return set(unread_reasons(alignments))


def not_read(alignments: Mapping[str, Mapping[str, object]]) -> str | None:
    """Why every metric of these runs is n/a (a run's gold its scorer never reads), or None: from the scored
    runs' alignment notes ('NOTE')."""
    reasons = list(unread_reasons(alignments).items())
    if not reasons:
        return None
    if len(alignments) == 1:
        return reasons[0][1]
    return "; ".join(f"run {run_id}: {reason}" for run_id, reason in reasons)
