"""FewJoint predictions: one file per seed, in either of two formats (``read_fewjoint_predictions``).

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
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.errors import InputError
from analysis.fewjoint.episodes import KEY, _check_tags, _text, _where

PRED_FORMATS: tuple[str, ...] = ("jsonl", "conlleval")


def detect_prediction_format(path: str | Path) -> str:
    """``"jsonl"`` when the first non-blank line is a JSON object, else ``"conlleval"``."""
    path = Path(path)
    # Through the shared reader, as the file is then read: `.gz` and `.zip` unpacked, a FIFO, a binary or
    # non-UTF-8 file refused without waiting.
    try:
        text = _text(path, None)
    except InputError as exc:
        if exc.problem != "file is empty":
            raise
        text = ""
    first = text.lstrip()
    if first:
        return "jsonl" if first.startswith("{") else "conlleval"
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
    lines = _text(path, "conlleval").splitlines()
    for line_no, line in enumerate(lines, start=1):
        fields = line.split()
        if not fields:
            if block is not None:
                rows.append(_closed_block(block, line_no, spath, fmt))
                block = None
            continue
        if fields[0] == "-DOCSTART-":
            continue
        if block is None:
            block = {"pred_tokens": [], "file_gold_tags": [], "pred_tags": []}
        if fields[0] == "#" and len(fields) >= 2 and fields[1] in ("query:", "intent:", "support:"):
            _read_marker(block, fields[1], fields[2:], line_no, spath, fmt)
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
    if block is not None:
        rows.append(_closed_block(block, len(lines) + 1, spath, fmt))
    return _prediction_frame(rows)


def _read_marker(block: dict[str, Any], marker: str, values: list[str], line_no: int, spath: str, fmt: str) -> None:
    """A conlleval block's `# query:` or `# intent:` line into `block`; a `# support:` line is refused."""
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
            raise InputError(spath, fmt, f"line {line_no}: expected '# query: <domain> <episode> <query_index>'")
        if not (values[1].isdigit() and values[2].isdigit()):
            raise InputError(
                spath,
                fmt,
                f"line {line_no}: episode and query_index must be non-negative integers",
                dialogue_id=values[0],
            )
        if "domain" in block:
            raise InputError(spath, fmt, f"line {line_no}: second '# query:' line without a blank line before it")
        block.update(domain=values[0], episode=int(values[1]), query_index=int(values[2]))
    else:
        if len(values) != 2:
            raise InputError(spath, fmt, f"line {line_no}: expected '# intent: <gold intent> <predicted intent>'")
        block.update(file_gold_intent=values[0], pred_intent=values[1])


def _closed_block(block: dict[str, Any], line_no: int, spath: str, fmt: str) -> dict[str, Any]:
    """A finished conlleval block as a prediction row: it must have named its query and intents; its tags
    are checked (`_check_tags`)."""
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
    return block


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
