"""FewJoint gold: MetaDialog episode files, read and validated once (``load_fewjoint_gold``).

Gold format (MetaDialog episodes, e.g. ``FewJoint1.1/5shot/test.json``)::

    {domain: [{"support": {"seq_ins": [[tok, ...]], "seq_outs": [[BIO, ...]], "labels": [[intent]]},
               "query":   {... same shape ...}}, ...]}

``episode`` is the position of the episode in the domain's list, ``query_index`` the position of the
utterance in the episode's ``query`` lists (both 0-based); ``KEY`` (``domain, episode, query_index``)
locates a query in gold and predictions alike. Support utterances are never scored.

Tags must be ``O`` or ``<B|I|E|S>-<type>``; the prediction readers (``analysis.fewjoint.predictions``)
check theirs with the same rule.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.errors import InputError
from analysis.formats.reading import decode_text, read_bytes

GOLD_FORMAT = "fewjoint-episodes"
KEY = ["domain", "episode", "query_index"]
_TAG_RE = re.compile(r"^(O|[BIES]-\S+)$")
_SHOTS_RE = re.compile(r"(?<![0-9])(\d+)[-_]?shot", re.IGNORECASE)


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


def _where(domain: str, episode: int) -> str:
    return f"{domain}/{episode}"


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


def _text(path: Path, fmt: str | None) -> str:
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
