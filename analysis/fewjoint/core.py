"""Few-shot joint NLU (FewJoint): episode gold + per-seed prediction files -> query table -> metrics.

Pipeline place: this module is the FewJoint edge *and* its metrics. ``load_fewjoint_system`` reads
MetaDialog episode gold and one prediction file per seed, validates them once and aligns them by
``(domain, episode, query_index)``; ``score_fewjoint`` turns the aligned system into tidy frames.

Gold format (MetaDialog episodes, e.g. ``FewJoint1.1/5shot/test.json``)::

    {domain: [{"support": {"seq_ins": [[tok, ...]], "seq_outs": [[BIO, ...]], "labels": [[intent]]},
               "query":   {... same shape ...}}, ...]}

``episode`` is the position of the episode in the domain's list, ``query_index`` the position of the
utterance in the episode's ``query`` lists (both 0-based). Support utterances are never scored.

Prediction formats (one file per seed; detected from the content, not the file name):

``jsonl`` -- one JSON object per line, one line per query::

    {"domain": "weather", "episode": 0, "query_index": 3, "pred_intent": "ask_weather",
     "pred_tags": ["O", "B-city", "I-city"], "tokens": ["in", "new", "york"]}

  ``tokens`` is optional (checked against gold when present). A ``"split"`` field, when present, must
  be ``"query"``; ``"support"`` is refused because support utterances are not scored.

``conlleval`` -- conlleval-style text, one block per query, blocks separated by a blank line::

    # query: weather 0 3
    # intent: ask_weather ask_weather
    in O O
    new B-city B-city
    york I-city O

  ``# query: <domain> <episode> <query_index>`` locates the block; ``# intent: <gold> <pred>`` gives
  the gold intent (checked against the episode gold) and the predicted intent; then one line per token
  ``<token> <gold tag> <predicted tag>`` separated by whitespace (so tokens, domains and intents cannot
  contain whitespace). A marker line is ``#`` followed by one of ``query:``, ``intent:``, ``support:``;
  any other line is a token line (a token may be ``#``). ``-DOCSTART-`` lines are ignored.
  ``# support: ...`` is refused.

Alignment never drops anything: every gold query gets one row per seed. A missing prediction is scored
as wrong (intent wrong, no predicted chunks, tags wrong) and counted; a prediction whose token count
differs from gold keeps its intent but its tags are scored as wrong (no predicted chunks); extra
predictions (no such gold query) are reported and not scored. ``FewJointSystem.alignment`` lists every
problem by location.

Slot F1 follows conlleval's chunking (lenient: a chunk starts at ``B-X``, or at ``I-X`` after ``O`` or
after another type; ``E-``/``S-`` prefixes follow conlleval too). Tags must be ``O`` or
``<B|I|E|S>-<type>``. ``I-X`` not preceded by ``B-X``/``I-X`` is *ill-formed* BIO: it is still scored
leniently, and counted per query and per seed.

Averaging (recorded in every result): ``"episode"`` is the reference implementation's -- intent
accuracy and slot F1 per episode, then the mean over episodes; sentence accuracy pooled over queries.
``"micro"`` pools every metric over all queries. Over seeds: mean and *sample* standard deviation
(``ddof=1``; NaN for a single seed) plus each seed's value. Empty slices give NaN, never 0; slot F1 is
NaN only when a slice has neither gold nor predicted chunks.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.errors import InputError
from analysis.formats.reading import decode_text, read_bytes

__all__ = [
    "AVERAGINGS",
    "ERROR_KINDS",
    "METRICS",
    "MIN_SEEDS",
    "FewJointGold",
    "FewJointResult",
    "FewJointSystem",
    "conlleval_chunks",
    "count_ill_formed",
    "detect_prediction_format",
    "fewjoint_leaderboard",
    "load_fewjoint_gold",
    "load_fewjoint_system",
    "read_fewjoint_predictions",
    "score_fewjoint",
    "shots_from_path",
    "slot_f1",
]

AVERAGINGS: tuple[str, ...] = ("episode", "micro")
MIN_SEEDS = 5
GOLD_FORMAT = "fewjoint-episodes"
PRED_FORMATS: tuple[str, ...] = ("jsonl", "conlleval")
METRICS: tuple[str, ...] = ("intent_accuracy", "slot_f1", "sentence_accuracy")
# Closed vocabulary of the queries table's `error_kind` column.
ERROR_KINDS: tuple[str, ...] = ("correct", "intent", "slots", "intent+slots", "missing", "token_count")
# Closed vocabulary of the alignment frame's `kind` column, with what scoring does about each.
ALIGNMENT_CONSEQUENCES: dict[str, str] = {
    "missing": "scored as wrong",
    "token_count": "tags scored as wrong (no predicted chunks)",
    "extra": "not scored (no such gold query)",
    "token_text": "scored (tokens differ from gold text)",
    "gold_tag": "scored against the episode gold (file's gold column differs)",
    "gold_intent": "scored against the episode gold (file's gold intent differs)",
}
KEY = ["domain", "episode", "query_index"]
_TAG_RE = re.compile(r"^(O|[BIES]-\S+)$")
_SEED_RE = re.compile(r"seed[_-]?(\d+)", re.IGNORECASE)
_SHOTS_RE = re.compile(r"(?<![0-9])(\d+)[-_]?shot", re.IGNORECASE)


# --------------------------------------------------------------------------------------------------
# Data holders
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FewJointGold:
    """Validated episode gold: one row per query utterance and one per support utterance.

    Both frames have ``domain, episode, index, tokens, tags, intent`` (``index`` is ``query_index`` in
    ``queries`` and ``support_index`` in ``support``).
    """

    path: str
    queries: pd.DataFrame
    support: pd.DataFrame
    shots: int | None = None


@dataclass(frozen=True)
class FewJointSystem:
    """One system: episode gold plus one aligned prediction table per seed.

    ``predictions`` has one row per (seed, gold query) -- missing predictions included, flagged in
    ``alignment_status`` -- with ``pred_intent`` and ``pred_tags``; ``alignment`` lists every problem
    found while aligning (``seed, domain, episode, query_index, kind, detail, consequence``).
    """

    name: str
    gold: FewJointGold
    seeds: tuple[str, ...]
    pred_paths: tuple[str, ...]
    formats: tuple[str, ...]
    predictions: pd.DataFrame
    alignment: pd.DataFrame
    shots: int | None = None


@dataclass(frozen=True)
class FewJointResult:
    """All FewJoint metrics for one system, as tidy frames (see ``score_fewjoint``)."""

    system: str
    shots: int | None
    averaging: str
    seeds: tuple[str, ...]
    n_queries: int
    queries: pd.DataFrame
    per_seed: pd.DataFrame
    summary: pd.DataFrame
    per_domain: pd.DataFrame
    per_intent: pd.DataFrame
    per_slot_type: pd.DataFrame
    confusion: pd.DataFrame
    alignment: pd.DataFrame
    ill_formed_bio: pd.DataFrame
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (what ``python -m analysis fewjoint --json`` prints); NaN becomes null."""
        out: dict[str, Any] = {
            "system": self.system,
            "shots": self.shots,
            "n_queries": self.n_queries,
            "n_seeds": len(self.seeds),
            "averaging": self.averaging,
            "std": "sample standard deviation over seeds (ddof=1)",
        }
        for metric in METRICS:
            row = self.summary.loc[self.summary["metric"] == metric].iloc[0]
            out[metric] = {
                "mean": _json_float(row["mean"]),
                "std": _json_float(row["std"]),
                "per_seed": {
                    str(s): _json_float(v) for s, v in zip(self.per_seed["seed"], self.per_seed[metric], strict=True)
                },
            }
        per_domain: dict[str, Any] = {}
        for domain, frame in self.per_domain.groupby("domain", sort=True):
            entry: dict[str, Any] = {"n_queries": int(frame["n_queries"].iloc[0])}
            for metric in METRICS:
                values = frame[metric].to_numpy(dtype=float)
                entry[metric] = {
                    "mean": _json_float(_nanmean(values)),
                    "std": _json_float(_sample_std(values)),
                    "per_seed": {str(s): _json_float(v) for s, v in zip(frame["seed"], values, strict=True)},
                }
            per_domain[str(domain)] = entry
        out["per_domain"] = per_domain
        out["warnings"] = list(self.warnings)
        out["ill_formed_bio"] = {
            str(r.seed): {"tags": int(r.n_ill_formed), "queries": int(r.n_ill_formed_queries)}
            for r in self.ill_formed_bio.itertuples()
        }
        counts = self.alignment.groupby(["seed", "kind"], observed=True).size()
        out["alignment"] = {
            "counts": {
                str(seed): {k: int(counts.get((seed, k), 0)) for k in ALIGNMENT_CONSEQUENCES} for seed in self.seeds
            },
            "records": [
                {
                    "seed": str(r.seed),
                    "domain": str(r.domain),
                    "episode": int(r.episode),
                    "query_index": int(r.query_index),
                    "kind": str(r.kind),
                    "detail": str(r.detail),
                }
                for r in self.alignment.itertuples()
            ],
        }
        return out


# --------------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------------


def _json_float(value: Any) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value


def _nanmean(values: np.ndarray) -> float:
    finite = values[~np.isnan(values)]
    return float(finite.mean()) if finite.size else float("nan")


def _sample_std(values: np.ndarray) -> float:
    finite = values[~np.isnan(values)]
    return float(finite.std(ddof=1)) if finite.size >= 2 else float("nan")


def _divide(num: Any, den: Any) -> Any:
    """num/den elementwise with NaN (not 0) where the denominator is 0."""
    num = np.asarray(num, dtype=float)
    den = np.asarray(den, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def slot_f1(n_correct: Any, n_gold: Any, n_pred: Any) -> Any:
    """Chunk F1 ``2*correct / (gold + pred)``; NaN only when there are neither gold nor predicted chunks.

    Equal to ``2PR/(P+R)`` whenever that is defined, and 0 when chunks exist but none is correct:

    >>> float(slot_f1(3, 4, 4)), float(slot_f1(0, 2, 0)), bool(np.isnan(slot_f1(0, 0, 0)))
    (0.75, 0.0, True)
    """
    return _divide(2 * np.asarray(n_correct, dtype=float), np.asarray(n_gold) + np.asarray(n_pred))


def shots_from_path(path: str | Path) -> int | None:
    """The shot setting K parsed from a path such as ``.../FewJoint1.1/5shot/test.json``.

    >>> shots_from_path("fewjoint/FewJoint1.1/10shot/test.json"), shots_from_path("episodes.json")
    (10, None)
    """
    for part in reversed(Path(path).parts):
        match = _SHOTS_RE.search(part)
        if match:
            return int(match.group(1))
    return None


def _seed_label(path: Path, position: int) -> str:
    match = _SEED_RE.search(path.stem)
    return match.group(1) if match else path.stem or str(position + 1)


def _where(domain: str, episode: int) -> str:
    return f"{domain}/{episode}"


# --------------------------------------------------------------------------------------------------
# Chunking (conlleval rules, vectorised over a flat tag array)
# --------------------------------------------------------------------------------------------------

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


# --------------------------------------------------------------------------------------------------
# Reading gold
# --------------------------------------------------------------------------------------------------


def _check_tags(tags: Any, path: str, fmt: str, where: str, turn: int, fieldname: str) -> list[str]:
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise InputError(path, fmt, "expected a list of tag strings", dialogue_id=where, turn=turn, field=fieldname)
    for tag in tags:
        if not _TAG_RE.match(tag):
            raise InputError(
                path,
                fmt,
                f"tag {tag!r} is not BIO: allowed are 'O' and 'B-<type>', 'I-<type>' (also 'E-', 'S-')",
                dialogue_id=where,
                turn=turn,
                field=fieldname,
            )
    return tags


def _read_part(part: Any, path: str, domain: str, episode: int, name: str) -> list[dict[str, Any]]:
    where = _where(domain, episode)
    if not isinstance(part, dict) or not {"seq_ins", "seq_outs", "labels"} <= part.keys():
        raise InputError(
            path,
            GOLD_FORMAT,
            f"{name} must be an object with seq_ins, seq_outs and labels",
            dialogue_id=where,
        )
    ins, outs, labels = part["seq_ins"], part["seq_outs"], part["labels"]
    if not (isinstance(ins, list) and isinstance(outs, list) and isinstance(labels, list)):
        raise InputError(path, GOLD_FORMAT, f"{name} seq_ins/seq_outs/labels must be lists", dialogue_id=where)
    if not len(ins) == len(outs) == len(labels):
        raise InputError(
            path,
            GOLD_FORMAT,
            f"{name} has {len(ins)} seq_ins, {len(outs)} seq_outs and {len(labels)} labels; they must be equal",
            dialogue_id=where,
        )
    rows = []
    for i, (tokens, tags, label) in enumerate(zip(ins, outs, labels, strict=True)):
        if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
            raise InputError(
                path,
                GOLD_FORMAT,
                "expected a list of token strings",
                dialogue_id=where,
                turn=i,
                field=f"{name}.seq_ins",
            )
        _check_tags(tags, path, GOLD_FORMAT, where, i, f"{name}.seq_outs")
        if len(tokens) != len(tags):
            raise InputError(
                path,
                GOLD_FORMAT,
                f"{len(tokens)} tokens but {len(tags)} tags",
                dialogue_id=where,
                turn=i,
                field=f"{name}.seq_outs",
            )
        if not (isinstance(label, list) and len(label) == 1 and isinstance(label[0], str)):
            raise InputError(
                path,
                GOLD_FORMAT,
                f"labels entry must be a one-element list [intent], got {label!r}",
                dialogue_id=where,
                turn=i,
                field=f"{name}.labels",
            )
        rows.append(
            {
                "domain": domain,
                "episode": episode,
                "index": i,
                "tokens": tokens,
                "tags": tags,
                "intent": label[0],
            }
        )
    return rows


def _text(path: Path, fmt: str) -> str:
    """A file's text through the shared reader: .gz/.zip unpacked, empty, binary and non-UTF-8 refused."""
    return decode_text(read_bytes(path, fmt=fmt), str(path), fmt)


def load_fewjoint_gold(path: str | Path, *, shots: int | None = None) -> FewJointGold:
    """Read and validate a MetaDialog episode file (``{domain: [{"support": ..., "query": ...}]}``).

    ``shots`` defaults to the K parsed from the path (``.../5shot/test.json`` -> 5), else None.
    """
    path = Path(path)
    spath = str(path)
    try:
        raw = json.loads(_text(path, GOLD_FORMAT))
    except json.JSONDecodeError as exc:
        raise InputError(spath, GOLD_FORMAT, f"not valid JSON: {exc}") from None
    if not isinstance(raw, dict) or not raw:
        raise InputError(spath, GOLD_FORMAT, "top level must be a non-empty object {domain: [episode, ...]}")
    query_rows: list[dict[str, Any]] = []
    support_rows: list[dict[str, Any]] = []
    for domain, episodes in raw.items():
        if not isinstance(episodes, list):
            raise InputError(spath, GOLD_FORMAT, "a domain must map to a list of episodes", dialogue_id=domain)
        for episode, content in enumerate(episodes):
            if not isinstance(content, dict) or not {"support", "query"} <= content.keys():
                raise InputError(
                    spath,
                    GOLD_FORMAT,
                    "an episode must be an object with 'support' and 'query'",
                    dialogue_id=_where(domain, episode),
                )
            query_rows += _read_part(content["query"], spath, domain, episode, "query")
            support_rows += _read_part(content["support"], spath, domain, episode, "support")
    if not query_rows:
        raise InputError(spath, GOLD_FORMAT, "no query utterances: there is nothing to score")
    columns = ["domain", "episode", "index", "tokens", "tags", "intent"]
    queries = pd.DataFrame(query_rows, columns=columns).rename(columns={"index": "query_index"})
    support = pd.DataFrame(support_rows, columns=columns).rename(columns={"index": "support_index"})
    return FewJointGold(
        path=spath,
        queries=queries,
        support=support,
        shots=shots if shots is not None else shots_from_path(path),
    )


# --------------------------------------------------------------------------------------------------
# Reading predictions
# --------------------------------------------------------------------------------------------------


def detect_prediction_format(path: str | Path) -> str:
    """``"jsonl"`` when the first non-blank line is a JSON object, else ``"conlleval"``."""
    path = Path(path)
    try:
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    return "jsonl" if line.lstrip().startswith("{") else "conlleval"
    except FileNotFoundError:
        raise InputError(str(path), None, "file not found") from None
    except UnicodeDecodeError:
        raise InputError(str(path), None, "not UTF-8 text") from None
    raise InputError(str(path), None, f"empty prediction file; expected one of {', '.join(PRED_FORMATS)}")


def _int_field(value: Any, path: str, fmt: str, where: str | None, turn: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(
            path,
            fmt,
            f"{name} must be a non-negative integer, got {value!r}",
            dialogue_id=where,
            turn=turn,
            field=name,
        )
    return value


def _read_jsonl(path: Path) -> pd.DataFrame:
    spath, fmt = str(path), "jsonl"
    rows: list[dict[str, Any]] = []
    for line_no, line in enumerate(_text(path, fmt).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(spath, fmt, f"line {line_no} is not valid JSON: {exc}") from None
        if not isinstance(obj, dict):
            raise InputError(spath, fmt, f"line {line_no} must be a JSON object")
        missing = [k for k in ("domain", "episode", "query_index", "pred_intent", "pred_tags") if k not in obj]
        if missing:
            raise InputError(
                spath,
                fmt,
                f"line {line_no} lacks {', '.join(missing)}; required are domain, episode, query_index, "
                "pred_intent, pred_tags (tokens optional)",
                field=missing[0],
            )
        domain = obj["domain"]
        if not isinstance(domain, str):
            raise InputError(spath, fmt, f"line {line_no}: domain must be a string", field="domain")
        episode = _int_field(obj["episode"], spath, fmt, domain, None, "episode")
        where = _where(domain, episode)
        split = obj.get("split", "query")
        if split != "query" or "support_index" in obj:
            raise InputError(
                spath,
                fmt,
                f"line {line_no} scores a support utterance (split={split!r}); FewJoint scores query utterances only",
                dialogue_id=where,
                turn=obj.get("query_index", obj.get("support_index")),
                field="split",
            )
        index = _int_field(obj["query_index"], spath, fmt, where, None, "query_index")
        if not isinstance(obj["pred_intent"], str):
            raise InputError(
                spath, fmt, "pred_intent must be a string", dialogue_id=where, turn=index, field="pred_intent"
            )
        tags = _check_tags(obj["pred_tags"], spath, fmt, where, index, "pred_tags")
        tokens = obj.get("tokens")
        if tokens is not None and (not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens)):
            raise InputError(
                spath, fmt, "tokens must be a list of strings", dialogue_id=where, turn=index, field="tokens"
            )
        if tokens is not None and len(tokens) != len(tags):
            raise InputError(
                spath,
                fmt,
                f"{len(tokens)} tokens but {len(tags)} pred_tags",
                dialogue_id=where,
                turn=index,
                field="pred_tags",
            )
        rows.append(
            {
                "domain": domain,
                "episode": episode,
                "query_index": index,
                "pred_intent": obj["pred_intent"],
                "pred_tags": tags,
                "pred_tokens": tokens,
                "file_gold_intent": None,
                "file_gold_tags": None,
            }
        )
    return _prediction_frame(rows)


def _read_conlleval(path: Path) -> pd.DataFrame:
    spath, fmt = str(path), "conlleval"
    rows: list[dict[str, Any]] = []
    block: dict[str, Any] | None = None

    def close(line_no: int) -> None:
        nonlocal block
        if block is None:
            return
        where = _where(block["domain"], block["episode"]) if "domain" in block else None
        if "domain" not in block:
            raise InputError(
                spath,
                fmt,
                f"block ending at line {line_no} has no '# query: <domain> <episode> <index>' line",
            )
        if "pred_intent" not in block:
            raise InputError(
                spath,
                fmt,
                "block has no '# intent: <gold> <pred>' line",
                dialogue_id=where,
                turn=block["query_index"],
            )
        tags = _check_tags(block["pred_tags"], spath, fmt, where or "", block["query_index"], "pred tag")
        _check_tags(block["file_gold_tags"], spath, fmt, where or "", block["query_index"], "gold tag")
        block["pred_tags"] = tags
        rows.append(block)
        block = None

    lines = _text(path, "conlleval").splitlines()
    for line_no, line in enumerate(lines, start=1):
        fields = line.split()
        if not fields:
            close(line_no)
            continue
        if fields[0] == "-DOCSTART-":
            continue
        if block is None:
            block = {"pred_tokens": [], "file_gold_tags": [], "pred_tags": []}
        if fields[0] == "#" and len(fields) >= 2 and fields[1] in ("query:", "intent:", "support:"):
            marker, values = fields[1], fields[2:]
            if marker == "support:":
                raise InputError(
                    spath,
                    fmt,
                    f"line {line_no} marks a support utterance; FewJoint scores query utterances only",
                    dialogue_id="/".join(values[:2]) or None,
                    turn=values[2] if len(values) > 2 else None,
                )
            if marker == "query:":
                if len(values) != 3:
                    raise InputError(
                        spath, fmt, f"line {line_no}: expected '# query: <domain> <episode> <query_index>'"
                    )
                if not (values[1].isdigit() and values[2].isdigit()):
                    raise InputError(
                        spath,
                        fmt,
                        f"line {line_no}: episode and query_index must be non-negative integers",
                        dialogue_id=values[0],
                    )
                if "domain" in block:
                    raise InputError(
                        spath, fmt, f"line {line_no}: second '# query:' line without a blank line before it"
                    )
                block.update(domain=values[0], episode=int(values[1]), query_index=int(values[2]))
            else:
                if len(values) != 2:
                    raise InputError(
                        spath, fmt, f"line {line_no}: expected '# intent: <gold intent> <predicted intent>'"
                    )
                block.update(file_gold_intent=values[0], pred_intent=values[1])
            continue
        if len(fields) != 3:
            raise InputError(
                spath,
                fmt,
                f"line {line_no}: expected '<token> <gold tag> <predicted tag>', got {len(fields)} fields",
                dialogue_id=_where(block["domain"], block["episode"]) if "domain" in block else None,
                turn=block.get("query_index"),
            )
        block["pred_tokens"].append(fields[0])
        block["file_gold_tags"].append(fields[1])
        block["pred_tags"].append(fields[2])
    close(len(lines) + 1)
    return _prediction_frame(rows)


def _prediction_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    columns = [*KEY, "pred_intent", "pred_tags", "pred_tokens", "file_gold_intent", "file_gold_tags"]
    frame = pd.DataFrame(rows, columns=columns)
    frame["episode"] = frame["episode"].astype("int64")
    frame["query_index"] = frame["query_index"].astype("int64")
    return frame


def read_fewjoint_predictions(path: str | Path, *, fmt: str | None = None) -> tuple[pd.DataFrame, str]:
    """Read one seed's prediction file; returns ``(rows, format)``. ``fmt`` overrides detection."""
    path = Path(path)
    fmt = fmt or detect_prediction_format(path)
    if fmt not in PRED_FORMATS:
        raise InputError(str(path), fmt, f"unknown prediction format; expected one of {', '.join(PRED_FORMATS)}")
    frame = _read_jsonl(path) if fmt == "jsonl" else _read_conlleval(path)
    if frame.empty:
        raise InputError(str(path), fmt, "no predictions in file")
    dup = frame.duplicated(KEY, keep="first")
    if dup.any():
        first = frame.loc[dup].iloc[0]
        raise InputError(
            str(path),
            fmt,
            "more than one prediction for the same query",
            dialogue_id=_where(first["domain"], int(first["episode"])),
            turn=int(first["query_index"]),
        )
    return frame, fmt


# --------------------------------------------------------------------------------------------------
# Alignment
# --------------------------------------------------------------------------------------------------


def _refuse_support(gold: FewJointGold, merged: pd.DataFrame, path: str, fmt: str) -> None:
    """InputError when a prediction file evidently scores support utterances."""
    support_text = {
        (d, e, tuple(t)): i
        for d, e, t, i in zip(
            gold.support["domain"],
            gold.support["episode"],
            gold.support["tokens"],
            gold.support["support_index"],
            strict=True,
        )
    }
    suspicious = merged.loc[
        merged["pred_tokens"].notna() & ((merged["_merge"] == "right_only") | merged["_text_differs"])
    ]
    for row in suspicious.itertuples():
        hit = support_text.get((row.domain, row.episode, tuple(row.pred_tokens)))
        if hit is not None:
            raise InputError(
                path,
                fmt,
                f"the prediction's tokens are support utterance {hit} of this episode, "
                f"not query {row.query_index}: "
                "support utterances must not be scored",
                dialogue_id=_where(row.domain, int(row.episode)),
                turn=int(row.query_index),
            )
    # Without tokens: an episode with exactly support+query predictions, the surplus beyond the queries.
    n_query = gold.queries.groupby(["domain", "episode"]).size()
    n_support = gold.support.groupby(["domain", "episode"]).size()
    n_pred = merged.loc[merged["_merge"] != "left_only"].groupby(["domain", "episode"]).size()
    n_extra = merged.loc[merged["_merge"] == "right_only"].groupby(["domain", "episode"]).size()
    for (domain, episode), extra in n_extra.items():
        key = (domain, episode)
        if key in n_query.index and extra > 0 and n_pred.get(key, 0) == n_query[key] + n_support.get(key, 0):
            raise InputError(
                path,
                fmt,
                f"{n_pred[key]} predictions for an episode with {n_query[key]} queries "
                f"and {n_support.get(key, 0)} "
                "support utterances: support utterances appear to have been scored",
                dialogue_id=_where(str(domain), int(episode)),
            )


def _align_seed(
    gold: FewJointGold, preds: pd.DataFrame, seed: str, path: str, fmt: str
) -> tuple[pd.DataFrame, pd.DataFrame]:
    gq = gold.queries.rename(columns={"tokens": "gold_tokens", "tags": "gold_tags", "intent": "gold_intent"})
    gq = gq.assign(_gold_order=np.arange(len(gq)))
    preds = preds.assign(_file_order=np.arange(len(preds)))
    merged = gq.merge(preds, on=KEY, how="outer", indicator=True, sort=False)
    # Gold order first, then extras in file order: reports and tables read in the order of the files.
    merged = merged.sort_values(["_gold_order", "_file_order"], na_position="last", kind="stable")
    merged = merged.reset_index(drop=True)
    both = (merged["_merge"] == "both").to_numpy()
    has_tokens = merged["pred_tokens"].notna().to_numpy()
    text_differs = np.zeros(len(merged), dtype=bool)
    idx = np.flatnonzero(both & has_tokens)
    text_differs[idx] = [
        list(a) != list(b)
        for a, b in zip(merged["gold_tokens"].to_numpy()[idx], merged["pred_tokens"].to_numpy()[idx], strict=True)
    ]
    merged["_text_differs"] = text_differs
    _refuse_support(gold, merged, path, fmt)

    problems: list[pd.DataFrame] = []

    def report(mask: np.ndarray, kind: str, details: Iterable[str]) -> None:
        sub = merged.loc[mask, KEY].copy()
        sub["kind"] = kind
        sub["detail"] = list(details)
        problems.append(sub)

    missing = (merged["_merge"] == "left_only").to_numpy()
    extra = (merged["_merge"] == "right_only").to_numpy()
    report(missing, "missing", ["no prediction for this query"] * int(missing.sum()))
    report(extra, "extra", ["no gold query at this location"] * int(extra.sum()))
    n_gold_tokens = np.array([len(t) if isinstance(t, list) else -1 for t in merged["gold_tokens"]])
    n_pred_tags = np.array([len(t) if isinstance(t, list) else -1 for t in merged["pred_tags"]])
    count_bad = both & (n_gold_tokens != n_pred_tags)
    report(
        count_bad,
        "token_count",
        [
            f"gold has {g} tokens, prediction {p} tags"
            for g, p in zip(n_gold_tokens[count_bad], n_pred_tags[count_bad], strict=True)
        ],
    )
    text_bad = text_differs & ~count_bad
    report(text_bad, "token_text", ["prediction tokens differ from gold tokens"] * int(text_bad.sum()))
    if merged["file_gold_tags"].notna().any():
        gtag_bad = np.zeros(len(merged), dtype=bool)
        sel = np.flatnonzero(both & ~count_bad & merged["file_gold_tags"].notna().to_numpy())
        gtag_bad[sel] = [
            list(a) != list(b)
            for a, b in zip(merged["gold_tags"].to_numpy()[sel], merged["file_gold_tags"].to_numpy()[sel], strict=True)
        ]
        report(
            gtag_bad,
            "gold_tag",
            ["the file's gold tag column differs from the episode gold"] * int(gtag_bad.sum()),
        )
        gint_bad = (
            both
            & merged["file_gold_intent"].notna().to_numpy()
            & (merged["file_gold_intent"].astype(object).to_numpy() != merged["gold_intent"].astype(object).to_numpy())
        )
        report(
            gint_bad,
            "gold_intent",
            [
                f"file says {a!r}, episode gold {b!r}"
                for a, b in zip(
                    merged.loc[gint_bad, "file_gold_intent"], merged.loc[gint_bad, "gold_intent"], strict=True
                )
            ],
        )
    alignment = pd.concat(problems, ignore_index=True)
    alignment.insert(0, "seed", seed)

    status = np.full(len(merged), "ok", dtype=object)
    status[text_bad] = "token_text"
    status[count_bad] = "token_count"
    status[missing] = "missing"
    merged["alignment_status"] = status
    aligned = merged.loc[~extra, [*KEY, "pred_intent", "pred_tags", "alignment_status"]].copy()
    aligned.insert(0, "seed", seed)
    return aligned, alignment


def load_fewjoint_system(
    gold_path: str | Path,
    pred_paths: Sequence[str | Path],
    *,
    name: str = "system",
    shots: int | None = None,
    seeds: Sequence[str] | None = None,
    fmt: str | None = None,
) -> FewJointSystem:
    """Read episode gold and one prediction file per seed, validate, and align them by location.

    Seed labels come from ``seeds`` or the file names (``..._seed3.jsonl`` -> ``"3"``, else the stem);
    ``shots`` defaults to the K in the gold path. Formats are detected per file unless ``fmt`` is given.
    Raises ``InputError`` for malformed files, duplicate seeds and predictions that score support.
    """
    if not pred_paths:
        raise InputError(str(gold_path), GOLD_FORMAT, "no prediction files given: pass one file per seed")
    gold = load_fewjoint_gold(gold_path, shots=shots)
    paths = [Path(p) for p in pred_paths]
    labels = list(seeds) if seeds is not None else [_seed_label(p, i) for i, p in enumerate(paths)]
    if len(labels) != len(paths):
        raise InputError(str(paths[0]), None, f"{len(labels)} seed labels for {len(paths)} prediction files")
    if len(set(labels)) != len(labels):
        dup = next(s for s in labels if labels.count(s) > 1)
        raise InputError(
            str(paths[labels.index(dup)]),
            None,
            f"seed label {dup!r} is used by more than one prediction file",
        )
    aligned, problems, formats = [], [], []
    for path, seed in zip(paths, labels, strict=True):
        preds, found = read_fewjoint_predictions(path, fmt=fmt)
        rows, alignment = _align_seed(gold, preds, seed, str(path), found)
        aligned.append(rows)
        problems.append(alignment)
        formats.append(found)
    predictions = pd.concat(aligned, ignore_index=True)
    alignment = pd.concat(problems, ignore_index=True)
    alignment["consequence"] = alignment["kind"].map(ALIGNMENT_CONSEQUENCES)
    return FewJointSystem(
        name=name,
        gold=gold,
        seeds=tuple(labels),
        pred_paths=tuple(str(p) for p in paths),
        formats=tuple(formats),
        predictions=predictions,
        alignment=alignment,
        shots=gold.shots,
    )


# --------------------------------------------------------------------------------------------------
# Scoring
# --------------------------------------------------------------------------------------------------


def _query_table(system: FewJointSystem) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-(seed, query) facts and the per-chunk table (gold and predicted chunks with ``correct``)."""
    gq = system.gold.queries.rename(columns={"tags": "gold_tags", "intent": "gold_intent"})
    queries = system.predictions.merge(gq, on=KEY, how="left", validate="many_to_one")
    queries = queries[
        ["seed", *KEY, "tokens", "gold_intent", "pred_intent", "gold_tags", "pred_tags", "alignment_status"]
    ]
    n = len(queries)
    status = queries["alignment_status"].to_numpy()
    scorable = (status != "missing") & (status != "token_count")
    # Unscorable tags count as "no predicted chunks", so their gold chunks are misses.
    pred_for_chunks = [p if ok else [] for p, ok in zip(queries["pred_tags"], scorable, strict=True)]
    gold_tags = queries["gold_tags"].tolist()

    gold_chunks = _chunks_frame(gold_tags)
    pred_chunks = _chunks_frame(pred_for_chunks)
    matched = gold_chunks.merge(pred_chunks, on=["sentence", "type", "start", "end"], how="inner")
    n_gold = np.bincount(gold_chunks["sentence"].to_numpy(), minlength=n)
    n_pred = np.bincount(pred_chunks["sentence"].to_numpy(), minlength=n)
    n_correct = np.bincount(matched["sentence"].to_numpy(), minlength=n)

    intent_correct = (
        queries["pred_intent"].astype(object).to_numpy() == queries["gold_intent"].astype(object).to_numpy()
    ) & (status != "missing")
    tags_equal = np.fromiter(
        (g == p for g, p in zip(gold_tags, queries["pred_tags"], strict=True)), dtype=bool, count=n
    )
    tags_correct = tags_equal & scorable
    ill = _ill_formed_per_sentence(pred_for_chunks)

    kind = np.select(
        [
            status == "missing",
            status == "token_count",
            intent_correct & tags_correct,
            tags_correct,
            intent_correct,
        ],
        ["missing", "token_count", "correct", "intent", "slots"],
        default="intent+slots",
    )
    queries = queries.assign(
        n_tokens=[len(t) for t in queries["tokens"]],
        intent_correct=intent_correct,
        tags_correct=tags_correct,
        sentence_correct=intent_correct & tags_correct,
        n_gold_chunks=n_gold,
        n_pred_chunks=n_pred,
        n_correct_chunks=n_correct,
        n_ill_formed=ill,
        error_kind=pd.Categorical(kind, categories=list(ERROR_KINDS)),
    )

    def label(chunks: pd.DataFrame, side: str) -> pd.DataFrame:
        out = chunks.assign(side=side)
        out["seed"] = queries["seed"].to_numpy()[out["sentence"].to_numpy()]
        return out

    matched_key = matched.assign(correct=True)
    pred_labelled = label(pred_chunks, "pred").merge(matched_key, on=["sentence", "type", "start", "end"], how="left")
    gold_labelled = label(gold_chunks, "gold").merge(matched_key, on=["sentence", "type", "start", "end"], how="left")
    chunks = pd.concat([gold_labelled, pred_labelled], ignore_index=True)
    chunks["correct"] = chunks["correct"].fillna(False).astype(bool)
    return queries, chunks


def _aggregate(queries: pd.DataFrame, *, by: list[str], averaging: str) -> pd.DataFrame:
    """Intent accuracy, slot P/R/F1 and sentence accuracy per ``by`` group with the given averaging."""
    sums = {
        "n_queries": ("intent_correct", "size"),
        "n_intent_correct": ("intent_correct", "sum"),
        "n_sentence_correct": ("sentence_correct", "sum"),
        "n_gold_chunks": ("n_gold_chunks", "sum"),
        "n_pred_chunks": ("n_pred_chunks", "sum"),
        "n_correct_chunks": ("n_correct_chunks", "sum"),
    }
    pooled = queries.groupby(by, observed=True, sort=True).agg(**sums).reset_index()
    pooled["sentence_accuracy"] = _divide(pooled["n_sentence_correct"], pooled["n_queries"])
    if averaging == "micro":
        pooled["intent_accuracy"] = _divide(pooled["n_intent_correct"], pooled["n_queries"])
        pooled["slot_precision"] = _divide(pooled["n_correct_chunks"], pooled["n_pred_chunks"])
        pooled["slot_recall"] = _divide(pooled["n_correct_chunks"], pooled["n_gold_chunks"])
        pooled["slot_f1"] = slot_f1(pooled["n_correct_chunks"], pooled["n_gold_chunks"], pooled["n_pred_chunks"])
        pooled["n_episodes"] = (
            queries.groupby(by, observed=True, sort=True)[["domain", "episode"]]
            .apply(lambda g: len(g.drop_duplicates()))
            .to_numpy()
        )
        return pooled
    episode_keys = by + [k for k in ("domain", "episode") if k not in by]
    per_episode = queries.groupby(episode_keys, observed=True, sort=True).agg(**sums).reset_index()
    per_episode["intent_accuracy"] = _divide(per_episode["n_intent_correct"], per_episode["n_queries"])
    per_episode["slot_precision"] = _divide(per_episode["n_correct_chunks"], per_episode["n_pred_chunks"])
    per_episode["slot_recall"] = _divide(per_episode["n_correct_chunks"], per_episode["n_gold_chunks"])
    per_episode["slot_f1"] = slot_f1(
        per_episode["n_correct_chunks"], per_episode["n_gold_chunks"], per_episode["n_pred_chunks"]
    )
    # mean() skips NaN: an episode with no chunks in this slice says nothing about slot F1.
    means = (
        per_episode.groupby(by, observed=True, sort=True)
        .agg(
            intent_accuracy=("intent_accuracy", "mean"),
            slot_precision=("slot_precision", "mean"),
            slot_recall=("slot_recall", "mean"),
            slot_f1=("slot_f1", "mean"),
            n_episodes=("intent_accuracy", "size"),
        )
        .reset_index()
    )
    return pooled.merge(means, on=by, how="left")


_RESULT_COLUMNS = [
    "intent_accuracy",
    "slot_f1",
    "sentence_accuracy",
    "slot_precision",
    "slot_recall",
    "n_queries",
    "n_episodes",
    "n_gold_chunks",
    "n_pred_chunks",
    "n_correct_chunks",
]


def score_fewjoint(system: FewJointSystem, *, averaging: str = "episode") -> FewJointResult:
    """Every FewJoint metric for a system, per seed and summarised over seeds.

    ``averaging="episode"`` (the reference implementation: intent accuracy and slot F1 per episode, then
    the mean over episodes; sentence accuracy pooled) or ``"micro"`` (all pooled over queries).
    Summaries over seeds are the mean and the sample standard deviation (``ddof=1``).
    """
    if averaging not in AVERAGINGS:
        raise ValueError(f"averaging must be one of {', '.join(AVERAGINGS)}, got {averaging!r}")
    queries, chunks = _query_table(system)
    seed_order = pd.CategoricalDtype(list(system.seeds), ordered=True)
    queries["seed"] = queries["seed"].astype(seed_order)
    chunks["seed"] = chunks["seed"].astype(seed_order)

    per_seed = _aggregate(queries, by=["seed"], averaging=averaging)
    counts = queries.groupby("seed", observed=True, sort=True).agg(
        n_missing=("error_kind", lambda k: int((k == "missing").sum())),
        n_token_count=("error_kind", lambda k: int((k == "token_count").sum())),
        n_ill_formed=("n_ill_formed", "sum"),
        n_ill_formed_queries=("n_ill_formed", lambda v: int((v > 0).sum())),
    )
    per_seed = per_seed.merge(counts.reset_index(), on="seed")
    per_seed["averaging"] = averaging
    per_seed = per_seed[
        [
            "seed",
            *_RESULT_COLUMNS,
            "n_missing",
            "n_token_count",
            "n_ill_formed",
            "n_ill_formed_queries",
            "averaging",
        ]
    ]

    summary = pd.DataFrame(
        {
            "metric": list(METRICS),
            "mean": [_nanmean(per_seed[m].to_numpy(dtype=float)) for m in METRICS],
            "std": [_sample_std(per_seed[m].to_numpy(dtype=float)) for m in METRICS],
            "n_seeds": len(system.seeds),
            "averaging": averaging,
            "system": system.name,
            "shots": system.shots,
        }
    )

    per_domain = _aggregate(queries, by=["seed", "domain"], averaging=averaging)[["seed", "domain", *_RESULT_COLUMNS]]
    per_domain["averaging"] = averaging
    per_intent = _aggregate(queries, by=["seed", "domain", "gold_intent"], averaging=averaging)[
        ["seed", "domain", "gold_intent", *_RESULT_COLUMNS]
    ]
    per_intent["averaging"] = averaging

    per_slot_type = _per_slot_type(chunks)
    confusion = (
        queries.assign(
            pred_intent=queries["pred_intent"].astype(object).where(queries["error_kind"] != "missing", "<missing>")
        )
        .groupby(["seed", "domain", "gold_intent", "pred_intent"], observed=True, sort=True)
        .size()
        .rename("count")
        .reset_index()
    )
    ill_formed = per_seed[["seed", "n_ill_formed", "n_ill_formed_queries"]].copy()

    warnings: list[str] = []
    if len(system.seeds) < MIN_SEEDS:
        warnings.append(
            f"only {len(system.seeds)} seed(s): FewJoint results are reported over {MIN_SEEDS} seeds; "
            "the mean and standard deviation over fewer are not comparable"
        )
    for row in per_seed.itertuples():
        if row.n_missing:
            warnings.append(f"seed {row.seed}: {row.n_missing} missing prediction(s) scored as wrong")
        if row.n_token_count:
            warnings.append(
                f"seed {row.seed}: {row.n_token_count} prediction(s) with the wrong token count scored as wrong"
            )
        if row.n_ill_formed:
            warnings.append(
                f"seed {row.seed}: {row.n_ill_formed} ill-formed BIO tag(s) (I-X not after B-X/I-X) in "
                f"{row.n_ill_formed_queries} queries, scored leniently as conlleval does"
            )
    n_extra = int((system.alignment["kind"] == "extra").sum())
    if n_extra:
        warnings.append(f"{n_extra} prediction(s) point at no gold query and were not scored (see alignment)")
    gold_ill = int(_ill_formed_per_sentence(system.gold.queries["tags"].tolist()).sum())
    if gold_ill:
        warnings.append(f"the gold has {gold_ill} ill-formed BIO tag(s)")

    return FewJointResult(
        system=system.name,
        shots=system.shots,
        averaging=averaging,
        seeds=system.seeds,
        n_queries=len(system.gold.queries),
        queries=queries,
        per_seed=per_seed,
        summary=summary,
        per_domain=per_domain,
        per_intent=per_intent,
        per_slot_type=per_slot_type,
        confusion=confusion,
        alignment=system.alignment,
        ill_formed_bio=ill_formed,
        warnings=warnings,
    )


def _per_slot_type(chunks: pd.DataFrame) -> pd.DataFrame:
    """Micro P/R/F1 per (seed, slot type) over all queries; ``support`` is the number of gold chunks."""
    counted = (
        chunks.assign(
            gold=chunks["side"] == "gold",
            pred=chunks["side"] == "pred",
            tp=(chunks["side"] == "gold") & chunks["correct"],
        )
        .groupby(["seed", "type"], observed=True, sort=True)
        .agg(n_gold=("gold", "sum"), n_pred=("pred", "sum"), n_correct=("tp", "sum"))
        .reset_index()
        .rename(columns={"type": "slot_type"})
    )
    counted["precision"] = _divide(counted["n_correct"], counted["n_pred"])
    counted["recall"] = _divide(counted["n_correct"], counted["n_gold"])
    counted["f1"] = slot_f1(counted["n_correct"], counted["n_gold"], counted["n_pred"])
    counted["support"] = counted["n_gold"]
    return counted


def fewjoint_leaderboard(results: Iterable[FewJointResult]) -> pd.DataFrame:
    """One row per (system, shots, metric) with mean, std (ddof=1), n_seeds and averaging.

    Several results of one system at different shot settings, or several systems, go side by side.
    """
    frames = [r.summary for r in results]
    if not frames:
        return pd.DataFrame(columns=["system", "shots", "metric", "mean", "std", "n_seeds", "averaging"])
    board = pd.concat(frames, ignore_index=True)
    board["shots"] = board["shots"].astype("Int64")
    return board[["system", "shots", "metric", "mean", "std", "n_seeds", "averaging"]]
