"""FewJoint slot chunks: conlleval's chunking of BIO tag sequences, vectorised over a flat tag array.

Slot F1 follows conlleval's chunking (lenient: a chunk starts at ``B-X``, or at ``I-X`` after ``O`` or
after another type; ``E-``/``S-`` prefixes follow conlleval too). Tags must be ``O`` or
``<B|I|E|S>-<type>`` (the readers check it). ``I-X`` not preceded by ``B-X``/``I-X`` is *ill-formed*
BIO: it is still chunked leniently, and counted (``count_ill_formed``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

_PREFIXES = "OBIES"


def _split_tags(flat_tags: Sequence[str] | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(prefix code, type code, type names) for every tag; prefix codes index ``_PREFIXES``."""
    codes, uniques = pd.factorize(np.asarray(flat_tags, dtype=object), sort=False)
    prefixes = np.empty(len(uniques), dtype=np.int8)
    type_names: list[str] = []
    type_codes = np.empty(len(uniques), dtype=np.int64)
    seen: dict[str, int] = {"": 0}
    type_names.append("")
    for i, tag in enumerate(uniques):
        tag = str(tag)
        if tag == "O":
            prefixes[i], kind = 0, ""
        else:
            prefixes[i] = _PREFIXES.index(tag[0])
            kind = tag[2:]
        if kind not in seen:
            seen[kind] = len(type_names)
            type_names.append(kind)
        type_codes[i] = seen[kind]
    return prefixes[codes], type_codes[codes], np.asarray(type_names, dtype=object)


def _chunk_bounds(
    prefix: np.ndarray, kind: np.ndarray, first: np.ndarray, last: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Start and end positions of every conlleval chunk in a flat tag array.

    ``first``/``last`` mark sentence starts/ends; chunks never cross them (as if ``O`` sat between
    sentences). Tags are prefix codes into ``_PREFIXES`` and integer type codes (0 = no type).
    """
    o_, b_, i_, e_, s_ = range(5)  # the conlleval prefix letters O, B, I, E, S
    prev_p = np.roll(prefix, 1)
    prev_t = np.roll(kind, 1)
    prev_p[first] = o_
    prev_t[first] = 0
    start = (
        (prefix == b_)
        | (prefix == s_)
        | ((prev_p == e_) & ((prefix == e_) | (prefix == i_)))
        | ((prev_p == s_) & ((prefix == e_) | (prefix == i_)))
        | ((prev_p == o_) & ((prefix == e_) | (prefix == i_)))
        | ((prefix != o_) & (prev_t != kind))
    )
    next_p = np.roll(prefix, -1)
    next_t = np.roll(kind, -1)
    next_p[last] = o_
    next_t[last] = 0
    end = (
        (prefix == e_)
        | (prefix == s_)
        | (((prefix == b_) | (prefix == i_)) & ((next_p == b_) | (next_p == s_) | (next_p == o_)))
        | ((prefix != o_) & (kind != next_t))
    )
    starts = np.flatnonzero(start)
    ends = np.flatnonzero(end)
    if starts.shape != ends.shape or np.any(starts > ends):  # pragma: no cover - invariant of the rules
        raise RuntimeError("conlleval chunking produced unpaired chunk boundaries")
    return starts, ends


def _flatten(tag_lists: Sequence[Sequence[str]]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    lengths = np.fromiter((len(t) for t in tag_lists), dtype=np.int64, count=len(tag_lists))
    flat = np.fromiter((tag for tags in tag_lists for tag in tags), dtype=object, count=int(lengths.sum()))
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    sentence = np.repeat(np.arange(len(tag_lists)), lengths)
    return flat, lengths, offsets, sentence


def _chunk_arrays(
    tag_lists: Sequence[Sequence[str]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per chunk: sentence (position in ``tag_lists``), type name, start and inclusive end in the sentence."""
    flat, lengths, offsets, sentence = _flatten(tag_lists)
    if flat.size == 0:
        empty = np.empty(0, np.int64)
        return empty, np.empty(0, dtype=object), empty, empty
    prefix, kind, names = _split_tags(flat)
    nonempty = lengths > 0
    first = np.zeros(flat.size, dtype=bool)
    last = np.zeros(flat.size, dtype=bool)
    first[offsets[:-1][nonempty]] = True
    last[offsets[1:][nonempty] - 1] = True
    starts, ends = _chunk_bounds(prefix, kind, first, last)
    sent = sentence[starts]
    return sent, names[kind[ends]], starts - offsets[sent], ends - offsets[sent]


def _chunks_frame(tag_lists: Sequence[Sequence[str]]) -> pd.DataFrame:
    """One row per chunk: ``sentence`` (position in ``tag_lists``), ``type``, ``start``, ``end``."""
    sent, types, starts, ends = _chunk_arrays(tag_lists)
    return pd.DataFrame({"sentence": sent, "type": types, "start": starts, "end": ends})


def conlleval_chunks(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """Chunks ``(type, start, end)`` (inclusive end) of one tag sequence, with conlleval's lenient rules.

    >>> conlleval_chunks(["B-city", "I-city", "O", "I-date", "I-time", "B-date"])
    [('city', 0, 1), ('date', 3, 3), ('time', 4, 4), ('date', 5, 5)]
    """
    _, types, starts, ends = _chunk_arrays([list(tags)])
    return [(str(t), int(s), int(e)) for t, s, e in zip(types, starts, ends, strict=True)]


def _ill_formed_per_sentence(tag_lists: Sequence[Sequence[str]]) -> np.ndarray:
    flat, lengths, offsets, sentence = _flatten(tag_lists)
    if flat.size == 0:
        return np.zeros(len(tag_lists), dtype=np.int64)
    prefix, kind, _ = _split_tags(flat)
    prev_p = np.roll(prefix, 1)
    prev_t = np.roll(kind, 1)
    starts = offsets[:-1][lengths > 0]
    prev_p[starts] = 0
    prev_t[starts] = 0
    bad = (prefix == 2) & ~(((prev_p == 1) | (prev_p == 2)) & (prev_t == kind))
    return np.bincount(sentence[bad], minlength=len(tag_lists))


def count_ill_formed(tags: Sequence[str]) -> int:
    """Number of ``I-X`` tags not preceded by ``B-X`` or ``I-X`` of the same type.

    >>> count_ill_formed(["O", "I-city", "B-date", "I-time", "I-time"])
    2
    """
    return int(_ill_formed_per_sentence([list(tags)])[0])
