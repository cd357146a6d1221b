"""State shapes found in the wild, flattened to (domain, slot, relation, value) rows before any convention."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

from analysis.model import NOT_TRIPLE_DOMAIN

Triple = tuple[str, str, str, str]  # domain, slot, relation, value

EQ = "="  # the relation of every ordinary state; RiSAWOZ spans may carry others


class StateError(Exception):
    """Raised inside a flattener; the engine adds file, format, dialogue and turn before re-raising."""

    def __init__(self, problem: str, field: str | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.field = field


MAX_VALUE_CHARS = 10_000  # a slot value longer than this is a broken file, not a prediction


def coerce_value(value: Any, where: str) -> str | None:
    """One slot value as text: lists become `|`-joined alternatives, numbers their decimal form.

    >>> coerce_value(["a", "b"], "x"), coerce_value(3, "x"), coerce_value(None, "x")
    ('a|b', '3', None)
    """
    if value is None:
        return None
    if isinstance(value, str):
        if len(value) > MAX_VALUE_CHARS:
            raise StateError(f"value of {len(value):,} characters is too long (limit {MAX_VALUE_CHARS:,})", where)
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        # Python's json reads NaN and Infinity, which JSON does not have: most likely a missing value
        # written by json.dumps. Refused, not kept as the value "nan" (a false prediction) nor dropped.
        raise StateError(f"slot value {value} is not JSON (a missing value is null or absent)", where)
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list):
        parts = [coerce_value(v, where) for v in value]
        kept = [p for p in parts if p]
        return "|".join(kept) if kept else None
    raise StateError(f"slot value must be a string, number or list, got {_json_type(value)}", where)


def _json_type(value: Any) -> str:
    """The JSON type of a decoded `value`, with its article: "an object", "a string", "a null".

    >>> _json_type([1]), _json_type(2.5)
    ('an array', 'a number')
    """
    name = {
        dict: "object",
        list: "array",
        str: "string",
        bool: "boolean",
        type(None): "null",
        int: "number",
        float: "number",
    }.get(type(value), type(value).__name__)
    return f"{'an' if name[:1] in 'aeiou' else 'a'} {name}"


def nested_state(state: Any, field: str, *, skip_slots: frozenset[str] = frozenset()) -> Iterator[Triple]:
    """`{domain: {slot: value}}`; empty strings are yielded too (the caller records listed slots)."""
    if state is None:
        return
    if not isinstance(state, dict):
        raise StateError(f"state must be an object {{domain: {{slot: value}}}}, got {_json_type(state)}", field)
    for domain, slots in state.items():
        if not isinstance(slots, dict):
            raise StateError(
                f"state of domain {domain!r} must be an object {{slot: value}}, got {_json_type(slots)}",
                field,
            )
        for slot, value in slots.items():
            if slot in skip_slots:
                continue
            text = coerce_value(value, f"{field}.{domain}.{slot}")
            yield str(domain), str(slot), EQ, "" if text is None else text


def multiwoz_metadata(metadata: Any, field: str) -> Iterator[Triple]:
    """MultiWOZ `metadata`: `{domain: {"semi": {...}, "book": {"booked": [...], slot: value}}}`.

    Booking slots keep their bare names (`day`, `people`, `stay`, `time`), as in the DSTC9 files:
    no MultiWOZ domain has a `semi` and a `book` slot of the same name, so nothing collides.
    """
    if not isinstance(metadata, dict):
        raise StateError(f"metadata must be an object, got {_json_type(metadata)}", field)
    for domain, parts in metadata.items():
        if not isinstance(parts, dict):
            raise StateError(f"metadata of domain {domain!r} must be an object", field)
        for part in ("semi", "book"):
            slots = parts.get(part, {})
            if not isinstance(slots, dict):
                raise StateError(f"metadata {domain}.{part} must be an object", f"{field}.{domain}.{part}")
            for slot, value in slots.items():
                if slot == "booked":
                    continue
                text = coerce_value(value, f"{field}.{domain}.{part}.{slot}")
                yield str(domain), str(slot), EQ, "" if text is None else text


def triple_strings(items: Any, field: str) -> Iterator[Triple]:
    """TRADE's `["domain-slot-value", ...]`: split at the first two hyphens (slot names hold none)."""
    if not isinstance(items, list):
        raise StateError(f"expected a list of 'domain-slot-value' strings, got {_json_type(items)}", field)
    for item in items:
        if not isinstance(item, str):
            raise StateError(f"expected 'domain-slot-value' strings, got {_json_type(item)}", field)
        parts = item.split("-", 2)
        if len(parts) != 3:
            raise StateError(f"{item!r} is not of the form 'domain-slot-value'", field)
        yield parts[0], parts[1], EQ, parts[2]


def predicted_triple_strings(items: Any, field: str) -> Iterator[Triple]:
    """`triple_strings` of a prediction: a string that is not `domain-slot-value` (a model's `2-norfolk
    street`, `arriveby`) is a prediction nothing can match, as TRADE's set comparison counts it, never a
    reason to refuse the file. It is kept whole as the slot and value of the marker domain
    NOT_TRIPLE_DOMAIN, so scoring counts it as an off-vocabulary prediction. Gold stays strict.

    >>> list(predicted_triple_strings(["hotel-area-east", "2-norfolk street"], "pred"))
    [('hotel', 'area', '=', 'east'), ('(not domain-slot-value)', '2-norfolk street', '=', '2-norfolk street')]
    """
    if not isinstance(items, list):
        raise StateError(f"expected a list of 'domain-slot-value' strings, got {_json_type(items)}", field)
    for item in items:
        if not isinstance(item, str):
            raise StateError(f"expected 'domain-slot-value' strings, got {_json_type(item)}", field)
        parts = item.split("-", 2)
        if len(parts) == 3 and parts[0] and parts[1]:
            yield parts[0], parts[1], EQ, parts[2]
        elif item.strip():
            yield NOT_TRIPLE_DOMAIN, item, EQ, item


def triple_list(items: Any, field: str) -> Iterator[Triple]:
    """`[[domain, slot, value], ...]` (our JSONL's alternative to a state object)."""
    if not isinstance(items, list):
        raise StateError(f"expected a list of [domain, slot, value] triples, got {_json_type(items)}", field)
    for item in items:
        if not (isinstance(item, list) and len(item) in (3, 4)):
            raise StateError("each triple must be a list [domain, slot, value] (or with a relation)", field)
        domain, slot, *rest = item
        if not (isinstance(domain, str) and domain and isinstance(slot, str) and slot):
            raise StateError(f"domain and slot must be non-empty strings, got {domain!r} / {slot!r}", field)
        relation, value = (EQ, rest[0]) if len(rest) == 1 else (str(rest[0]), rest[1])
        text = coerce_value(value, field)
        yield str(domain), str(slot), relation, "" if text is None else text


def any_state(state: Any, field: str) -> Iterator[Triple]:
    """Our JSONL accepts a state object, a triple list or a RiSAWOZ span string."""
    if isinstance(state, list):
        return triple_list(state, field)
    if isinstance(state, str):
        return iter(parse_span(state, field))
    return nested_state(state, field)


_TOKEN = re.compile(r'"[^"]*"?|[(),]|[^\s"(),]+')


def parse_span(span: str, field: str, *, lenient: bool = False) -> list[Triple]:
    """A RiSAWOZ span string, `( domain ) slot relation " value " , ...`, or `null` for an empty state.

    Quoted values may hold parentheses and commas; slot names may be several words (the relation is
    the last word before the quote). With `lenient`, unparsable pieces (a model's garbled output) are
    skipped instead of raising.

    >>> parse_span('( hotel ) price range equal_to " cheap | moderate " , area equal_to " east ( b ) "', "gold")
    [('hotel', 'price range', 'equal_to', 'cheap | moderate'), ('hotel', 'area', 'equal_to', 'east ( b )')]
    """
    text = span.strip()
    if not text or text == "null":
        return []
    tokens = _TOKEN.findall(text)
    triples: list[Triple] = []
    domain: str | None = None
    words: list[str] = []
    i = 0

    def fail(problem: str) -> list[Triple]:
        if lenient:
            return triples
        raise StateError(f"{problem} in span state {text[:80]!r}", field)

    while i < len(tokens):
        token = tokens[i]
        if token == "(":
            close = tokens.index(")", i) if ")" in tokens[i:] else -1
            if close < 0 or words:
                return fail("unbalanced '( domain )'")
            domain = " ".join(tokens[i + 1 : close])
            i = close + 1
        elif token == ",":
            if words:
                return fail("slot without a quoted value")
            i += 1
        elif token.startswith('"'):
            if domain is None or len(words) < 2 or len(token) < 2 or not token.endswith('"'):
                return fail("value without '( domain ) slot relation' before it")
            triples.append((domain, " ".join(words[:-1]), words[-1], token[1:-1].strip()))
            words = []
            i += 1
        elif token == ")":
            return fail("unexpected ')'")
        else:
            if domain is None:
                return fail("span state must start with '( domain )'")
            words.append(token)
            i += 1
    if words:
        return fail("trailing words without a value")
    return triples
