"""Review items: what a reviewer annotates, its stable key, the tag taxonomy, and the checks every value
passes before it is written.

An *item* is a turn (optionally one slot of it, optionally in one run) of a dataset. Its key is a
readable string of its normalised components (`item_key`), so it is the same across reloads and
re-runs of the same data: it never depends on `tid` or on row order.

An item may stand for an *error episode* (`analysis.review.analysis.error_episodes`): one error carried
over several consecutive turns. It is keyed by its first turn (the key above, so a one-turn episode and a
turn item are the same item) and carries its span: `last_turn` (the turn index of its last turn) and
`n_turns` (how many turns it covers); both default to a one-turn span. The span is stored with the
annotation (`SPAN_COLUMNS`), never part of the key: tagging the item tags the span.

Values are checked before they are written (`InvalidAnnotationError`, a ValueError): reviewer name at most
`MAX_REVIEWER` (100) characters, a tag `MAX_TAG` (64), a comment `MAX_COMMENT` (4,000), dataset,
dialogue id, domain, slot and run id `MAX_COMPONENT` (200) each and the item key 1,024, turn index
below 2**31; no NUL anywhere, no other control character (a comment may hold tabs and line breaks),
no lone surrogate. Lengths are characters after NFC normalisation. The same rules hold on every backend
of the store (`analysis.review.store`).

Nothing here touches a database (no SQLAlchemy): a page that only builds items imports this module alone.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

DEFAULT_TAGS = (
    "gold annotation error",
    "normalisation mismatch",
    "missed update",
    "wrong value",
    "hallucinated slot",
    "dontcare confusion",
    "coreference",
    "inherited error",
    "other",
)
ITEM_COLUMNS = ["dataset", "dialogue_id", "turn_index", "domain", "slot", "run_id"]
# The span of an item that is an error episode: its last turn's index and its number of turns (one-turn
# item: last_turn = turn_index, n_turns = 1). Stored with each annotation, not part of the key.
SPAN_COLUMNS = ["last_turn", "n_turns"]
# What the annotation export adds to each row from the runs loaded when it is written, under the
# convention in force (`analysis.review.analysis.annotation_context`); derived, never stored.
CONTEXT_COLUMNS = ["convention", "outcome", "gold", "predicted"]
_KEY_SEPARATOR = "|"
_KEY_VERSION = "v1"
# Limits of what is written, the same on every backend (checked before the database sees a value;
# lengths in characters after NFC normalisation, as PostgreSQL's varchar counts them).
MAX_REVIEWER = 100
MAX_TAG = 64
MAX_COMMENT = 4000
MAX_COMPONENT = 200  # dataset, dialogue id, domain, slot, run id
MAX_KEY = 1024  # the item_key column
MAX_TURN_INDEX = 2**31 - 1  # PostgreSQL's integer


# ------------------------------------------------------------------------------------------- checks


class InvalidAnnotationError(ValueError):
    """A value refused before it is written (too long, a NUL or control character, not valid Unicode):
    the same rule on SQLite and PostgreSQL, one short message naming the field and the limit."""


def _check_text(value: object, what: str, limit: int, *, multiline: bool = False) -> str:
    r"""`value` normalised (`_norm`) and checked: at most `limit` characters, no NUL, no control
    character (a comment may hold line breaks and tabs), encodable as UTF-8.

    >>> _check_text(" ana ", "reviewer name", 100)
    'ana'
    >>> _check_text("a\x00b", "comment", 10, multiline=True)
    Traceback (most recent call last):
    ...
    analysis.review.items.InvalidAnnotationError: comment holds a NUL character (\x00), which is refused: remove it
    """
    text_value = _norm(value)
    if "\x00" in text_value:
        raise InvalidAnnotationError(f"{what} holds a NUL character (\\x00), which is refused: remove it")
    allowed = "\t\n\r" if multiline else ""
    bad = next((ch for ch in text_value if unicodedata.category(ch) == "Cc" and ch not in allowed), None)
    if bad is not None:
        kind = "a line break or tab" if bad in "\t\n\r" else f"a control character (U+{ord(bad):04X})"
        rule = "" if multiline else "; it must be one line of printable text"
        raise InvalidAnnotationError(f"{what} holds {kind}, which is refused{rule}")
    try:
        text_value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidAnnotationError(f"{what} is not valid Unicode (it holds a lone surrogate)") from None
    if len(text_value) > limit:
        raise InvalidAnnotationError(f"{what} is {len(text_value):,} characters long; the limit is {limit:,}")
    return text_value


def _shown(value: object, limit: int = 60) -> str:
    """A value quoted in a message, cut short (a message stays one short line)."""
    text_value = repr(_norm(value))
    return text_value if len(text_value) <= limit else text_value[: limit - 1] + "…"


# ----------------------------------------------------------------------------------------------- items


@dataclass(frozen=True)
class Item:
    """What a reviewer annotates: a turn, optionally one slot (domain + slot) and one run.

    An error episode is the item of its first turn with its span (`last_turn`, `n_turns`; default: the
    one turn); the span is not part of the key.

    >>> Item("MultiWOZ 2.1", "MUL0001.json", 3, domain="hotel", slot="area").key
    'v1|MultiWOZ 2.1|MUL0001.json|3|hotel|area|'
    >>> Item("MultiWOZ 2.1", "MUL0001.json", 3, domain="hotel", slot="area", last_turn=6, n_turns=4).span()
    {'last_turn': 6, 'n_turns': 4}
    """

    dataset: str
    dialogue_id: str
    turn_index: int
    domain: str | None = None
    slot: str | None = None
    run_id: str | None = None
    last_turn: int | None = None
    n_turns: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.turn_index, bool) or not isinstance(self.turn_index, int | np.integer):
            raise ValueError(f"turn_index must be an integer, got {self.turn_index!r}")
        if int(self.turn_index) < 0:
            raise ValueError(f"turn_index must be >= 0, got {self.turn_index}")
        if int(self.turn_index) > MAX_TURN_INDEX:
            raise InvalidAnnotationError(f"turn_index {self.turn_index} is over the limit of {MAX_TURN_INDEX:,}")
        for name in ("dataset", "dialogue_id", "domain", "slot", "run_id"):
            _check_text(getattr(self, name), name, MAX_COMPONENT)
        if not _norm(self.dialogue_id):
            raise ValueError("an item needs a dialogue_id")
        if _norm(self.domain) and not _norm(self.slot):
            raise ValueError("an item with a domain needs a slot")
        if len(self.key) > MAX_KEY:
            raise InvalidAnnotationError(
                f"the item's key is {len(self.key):,} characters long; the limit is {MAX_KEY:,}"
            )
        for name in SPAN_COLUMNS:
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | np.integer)):
                raise ValueError(f"{name} must be an integer, got {value!r}")
        span = self.span()
        first = int(self.turn_index)
        if not first <= span["last_turn"] <= MAX_TURN_INDEX:
            raise ValueError(
                f"last_turn {span['last_turn']} must lie from the first turn ({first}) to {MAX_TURN_INDEX:,}"
            )
        if not 1 <= span["n_turns"] <= span["last_turn"] - first + 1:
            raise ValueError(
                f"n_turns {span['n_turns']} must lie from 1 to the turns from {first} to {span['last_turn']}"
                f" ({span['last_turn'] - first + 1})"
            )

    def span(self) -> dict[str, int]:
        """`last_turn` and `n_turns` as stored: the episode's span, or the one turn of a plain item."""
        last = int(self.turn_index) if self.last_turn is None else int(self.last_turn)
        count = (
            (1 if last == int(self.turn_index) else last - int(self.turn_index) + 1)
            if self.n_turns is None
            else int(self.n_turns)
        )
        return {"last_turn": last, "n_turns": count}

    @property
    def key(self) -> str:
        return item_key(
            self.dataset, self.dialogue_id, self.turn_index, slot=_slot_pair(self.domain, self.slot), run_id=self.run_id
        )

    def components(self) -> dict[str, Any]:
        """The normalised components as stored (None for an absent slot or run)."""
        domain, slot = _slot_pair(self.domain, self.slot) or (None, None)
        return {
            "dataset": _norm(self.dataset),
            "dialogue_id": _norm(self.dialogue_id),
            "turn_index": int(self.turn_index),
            "domain": None if domain is None else _norm(domain),
            "slot": None if slot is None else _norm(slot),
            "run_id": _norm(self.run_id) or None,
        }


def _norm(value: object) -> str:
    """Unicode NFC, surrounding whitespace stripped; None/NaN become ''."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return unicodedata.normalize("NFC", str(value)).strip()


def _slot_pair(domain: str | None, slot: str | None) -> tuple[str, str] | None:
    if slot is None or _norm(slot) == "":
        return None
    return (_norm(domain), _norm(slot))


def split_slot(slot: str | tuple[str, str] | None) -> tuple[str, str] | None:
    """`(domain, slot)` from a pair or a `domain-slot` string (split at the first hyphen).

    >>> split_slot("restaurant-book day"), split_slot(("餐厅", "区域")), split_slot("area")
    (('restaurant', 'book day'), ('餐厅', '区域'), ('', 'area'))
    """
    if slot is None:
        return None
    if isinstance(slot, tuple):
        return _slot_pair(slot[0], slot[1])
    text_slot = _norm(slot)
    if not text_slot:
        return None
    domain, sep, name = text_slot.partition("-")
    return (domain.strip(), name.strip()) if sep and name.strip() else ("", text_slot)


def _escape(component: str) -> str:
    return component.replace("%", "%25").replace(_KEY_SEPARATOR, "%7C")


def item_key(
    dataset: str,
    dialogue_id: str,
    turn_index: int,
    slot: str | tuple[str, str] | None = None,
    run_id: str | None = None,
) -> str:
    """The stable key of an item: `v1|dataset|dialogue|turn|domain|slot|run`, components NFC-normalised
    and stripped, `|` and `%` percent-escaped, absent slot or run left empty.

    It depends only on what the item is, never on `tid` or row order, so it survives reloads and re-runs.

    >>> item_key("CrossWOZ", " 1001 ", 2, slot="餐厅-区域", run_id="rule")
    'v1|CrossWOZ|1001|2|餐厅|区域|rule'
    >>> item_key("MultiWOZ 2.1", "a|b", 0) == item_key("MultiWOZ 2.1", "a|b", 0, slot=None, run_id="")
    True
    """
    if isinstance(turn_index, bool) or not isinstance(turn_index, int | np.integer):
        raise ValueError(f"turn_index must be an integer, got {turn_index!r}")
    pair = split_slot(slot)
    domain, name = pair if pair is not None else ("", "")
    parts = [_norm(dataset), _norm(dialogue_id), str(int(turn_index)), domain, name, _norm(run_id)]
    return _KEY_SEPARATOR.join([_KEY_VERSION, *(_escape(p) for p in parts)])


def _key_part(values: pd.Series) -> pa.Array:
    """A key component of every row (normalised, escaped: `_escape(_norm(v))`), as an Arrow string array.
    Each distinct value is normalised once, by `item_key`'s own functions: a column holds few of them
    (datasets, dialogues, slots, runs), and normalising per row is most of the cost of a queue's keys."""
    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    done = pa.array([_escape(_norm(v)) for v in uniques], type=pa.large_string())
    return done.take(pa.array(codes, type=pa.int64()))


def _key_arrays(items: pd.DataFrame, variants: Sequence[tuple[bool, bool]]) -> list[pa.Array]:
    """The keys of `item_key_variants` as Arrow string arrays, joined by Arrow's element-wise join (one C
    pass over the rows, where object arrays cost ten Python-level concatenations of every row)."""
    n = len(items)
    blank = pa.array(np.full(n, "", dtype=object), type=pa.large_string()) if n else pa.array([], pa.large_string())

    def part(name: str) -> pa.Array:
        return _key_part(items[name]) if name in items.columns else blank

    version = pa.scalar(_KEY_VERSION, type=pa.large_string())
    turn = pa.array(items["turn_index"].to_numpy(dtype="int64")).cast(pa.large_string())
    head = [version, part("dataset"), part("dialogue_id"), turn]
    slot = part("slot") if any(s for s, _ in variants) else blank
    domain = pc.if_else(pc.not_equal(slot, ""), part("domain"), "") if any(s for s, _ in variants) else blank
    run = part("run_id") if any(r for _, r in variants) else blank
    out = []
    for with_slot, with_run in variants:
        pieces = [*head, domain if with_slot else blank, slot if with_slot else blank, run if with_run else blank]
        out.append(pc.binary_join_element_wise(*pieces, pa.scalar(_KEY_SEPARATOR, type=pa.large_string())))
    return out


def item_key_variants(items: pd.DataFrame, variants: Sequence[tuple[bool, bool]] = ((True, True),)) -> list[np.ndarray]:
    """`item_keys(items, with_slot=s, with_run=r)` for each (s, r) of `variants`, as object arrays, from
    components normalised once (the four keys that may cover an error row cost little more than one)."""
    return [keys.to_numpy(zero_copy_only=False).astype(object) for keys in _key_arrays(items, variants)]


def item_keys(items: pd.DataFrame, *, with_slot: bool = True, with_run: bool = True) -> pd.Series:
    """`item_key` for every row of a frame with ITEM_COLUMNS (missing dataset/domain/slot/run: empty),
    vectorised. `with_slot=False` / `with_run=False` give the keys of the covering turn / any-run item."""
    (keys,) = _key_arrays(items, [(with_slot, with_run)])
    return pd.Series(pd.array(keys, dtype="str"), index=items.index, name="item_key")


# -------------------------------------------------------------------------------------------- taxonomy


def taxonomy(workspace_settings: Mapping[str, Any] | None = None) -> list[str]:
    """The default tags followed by the manifest's `[review] extra_tags` (duplicates dropped).

    >>> taxonomy({"review": {"extra_tags": ["asr error", "other"]}})[-2:]
    ['other', 'asr error']
    """
    tags = list(DEFAULT_TAGS)
    review = (workspace_settings or {}).get("review", {})
    if not isinstance(review, Mapping):
        raise ValueError("[review] in the workspace manifest must be a table")
    extra = review.get("extra_tags", [])
    if not isinstance(extra, list) or not all(isinstance(t, str) for t in extra):
        raise ValueError("[review] extra_tags must be a list of strings")
    for raw in extra:
        tag = _check_text(raw, "[review] extra_tags: a tag", MAX_TAG)
        if not tag or ";" in tag:
            raise ValueError(f"[review] extra_tags: {raw!r} is not a usable tag (empty, or holds ';')")
        if tag.casefold() not in {t.casefold() for t in tags}:
            tags.append(tag)
    return tags


def _check_tags(tags: Iterable[str] | str, allowed: Sequence[str]) -> list[str]:
    """Tags in the taxonomy's spelling (matched case-insensitively), given order, duplicates dropped."""
    if isinstance(tags, str):
        tags = [tags]
    by_fold = {t.casefold(): t for t in allowed}
    checked: list[str] = []
    for raw in tags:
        tag = by_fold.get(_norm(raw).casefold())
        if tag is None:
            raise InvalidAnnotationError(f"tag {_shown(raw)} is not in the taxonomy; allowed: {', '.join(allowed)}")
        if tag not in checked:
            checked.append(tag)
    if not checked:
        raise ValueError(f"an annotation needs at least one tag; allowed: {', '.join(allowed)}")
    return checked


def _check_reviewer(reviewer: object) -> str:
    name = _check_text(reviewer, "the reviewer name", MAX_REVIEWER)
    if not name:
        raise InvalidAnnotationError("an annotation needs a reviewer name (non-empty)")
    return name


def _check_comment(comment: object) -> str:
    """The comment as stored: kept as typed (not stripped), checked like any text but lines allowed."""
    raw = "" if comment is None else str(comment)
    _check_text(raw, "the comment", MAX_COMMENT, multiline=True)
    if len(raw) > MAX_COMMENT:
        raise InvalidAnnotationError(f"the comment is {len(raw):,} characters long; the limit is {MAX_COMMENT:,}")
    return raw


def _check_key(key: object) -> str:
    return _check_text(key, "the item key", MAX_KEY)
