"""The ``store`` sub-command: every run of a workspace scored into the score store, before anyone opens it.

``python -m analysis store WORKSPACE [--workers N] [--json] [--no-progress]``

A sweep's runs, written by a job script, can be scored where they were made (on every core of that machine:
``--workers``, or ``DST_SCORE_WORKERS``) so that the dashboard, started later on the same store
(``DST_CACHE_DIR``), opens them as a restart does. The runs are scored as the dashboard scores a new
workspace (``analysis.isolated_jobs.score_entries_isolated``: batches of runs per child process, each run
within the worker's CPU-time and memory limits), under each run's declared convention; a run the store
holds already is only looked up.

Prints what was stored, what the store held already and one line for each run that could not be stored
(its files do not load, its convention refuses it, or it went past a limit); a progress line on stderr
every 5 s. Once new runs were scored, also how much the store holds that this version never reads (older
versions' entries: ``python -m analysis prune`` removes them). Exit 0 when every run is in the store; 2 when a run is not, or the manifest is bad, or there is
no store (``DST_CACHE_DIR`` set to an empty string). FewJoint systems are not kept in the score store: the
dashboard scores them when it shows them.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["register", "run"]

PROGRESS_EVERY_S = 5.0


def _workers(text: str) -> int:
    if not text.isascii() or not text.isdigit() or int(text) <= 0:
        raise argparse.ArgumentTypeError(f"--workers is a positive integer, got {text!r}")
    return int(text)


def register(subparsers: Any) -> None:
    """Add the ``store`` sub-parser to an ``argparse`` subparsers object (``func=run``)."""
    parser = subparsers.add_parser(
        "store",
        help="score every run of a workspace into the score store (a sweep, before the dashboard opens it)",
        description=(
            "Every run of a workspace manifest read, scored under its declared convention and saved in the "
            "score store (DST_CACHE_DIR), several processes at a time; runs the store holds are only looked up. "
            "Exit 2 when a run could not be stored."
        ),
    )
    parser.add_argument("workspace", help="workspace manifest (workspace.toml) or its folder")
    parser.add_argument(
        "--workers",
        type=_workers,
        default=None,
        help="processes scoring at a time (default: DST_SCORE_WORKERS, else the cores, at most 2)",
    )
    parser.add_argument("--json", action="store_true", help="the outcome as one JSON object")
    parser.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from analysis.errors import InputError
    from analysis.isolated_jobs import Elsewhere, NotLoaded, score_entry_isolated
    from analysis.store import entries
    from analysis.store import runs as store_runs
    from analysis.workspace import read_manifest

    workspace = read_manifest(args.workspace)
    manifest = str(workspace.path)
    root = entries.store_root()
    if root is None:
        raise InputError(manifest, "workspace", "the score store is off (DST_CACHE_DIR is empty): nothing to store")
    try:
        workers = args.workers or store_runs.default_workers()
    except ValueError as exc:  # DST_SCORE_WORKERS that is not a positive integer
        raise InputError(manifest, "workspace", str(exc)) from None
    started = time.perf_counter()
    names = [entry.meta.run_id for entry in workspace.entries]
    already: list[str] = []
    failed: dict[str, str] = {}
    jobs: list[tuple[Any, str | None, str]] = []
    owners: list[str] = []
    for name, entry in zip(names, workspace.entries, strict=True):
        convention = entry.meta.convention
        try:
            key = store_runs.key(entry, convention, root)
        except OSError:  # a special or unreadable file: its reader's one line, from a worker within the limits
            answer = score_entry_isolated(entry, convention)
            failed[name] = _line(answer, entry) or f"{Path(str(entry.pred)).name}: cannot score"
            continue
        if entries.lookup(root, key, deep=False) is not None:
            already.append(name)
        else:
            jobs.append((entry, convention, key))
            owners.append(name)

    answers = _scored(jobs, root, workers, progress=not args.no_progress)
    stored: list[str] = []
    for i, (entry, _, _) in enumerate(jobs):
        found = answers.get(i, NotLoaded(f"{Path(str(entry.pred)).name}: cannot score"))
        if isinstance(found, Elsewhere):  # another process (a second `store`, a dashboard) stored it meanwhile
            already.append(owners[i])
            continue
        line = _line(found, entry)
        if line is None:
            stored.append(owners[i])
        else:
            failed[owners[i]] = line
    seconds = time.perf_counter() - started
    order = {name: n for n, name in enumerate(names)}
    not_stored = dict(sorted(failed.items(), key=lambda item: order[item[0]]))
    outcome = {
        "workspace": manifest,
        "store": str(root),
        "workers": workers,
        "seconds": round(seconds, 3),
        "stored": stored,
        "already_stored": already,
        "not_stored": not_stored,
        "unread": _unread(root) if stored else None,
    }
    if args.json:
        print(json.dumps(outcome, ensure_ascii=False, indent=2))
    else:
        print("\n".join(_lines(outcome, workspace.name, len(names), len(workspace.fewjoint_entries))))
    return 2 if not_stored else 0


def _scored(jobs: list[tuple[Any, str | None, str]], root: Path, workers: int, *, progress: bool) -> dict[int, Any]:
    """The batch scorer's answer for each job (by index), with a progress line on stderr every
    PROGRESS_EVERY_S seconds and at the end (`progress`)."""
    from analysis.isolated_jobs import Elsewhere, NotLoaded, Refused, Unwritten, score_entries_isolated
    from analysis.pace import Pace

    answers: dict[int, NotLoaded | Refused | Elsewhere | Unwritten | None] = {}
    lock = threading.Lock()
    said = [-math.inf]
    pace = Pace()  # the pace of the scoring alone, not of the look-ups before

    def done(i: int, answer: NotLoaded | Refused | Elsewhere | Unwritten | None) -> None:
        with lock:
            answers[i] = answer
            now, line = time.monotonic(), pace(len(answers), len(jobs))  # at every answer: its pace
            if progress and (len(answers) == len(jobs) or now - said[0] >= PROGRESS_EVERY_S):
                said[0] = now
                print(f"store: scoring {len(jobs):,} new runs: {line}", file=sys.stderr, flush=True)

    score_entries_isolated(jobs, root, workers=workers, done=done)
    return answers


def _unread(root: Path) -> dict[str, int]:
    """What the store holds that this version never reads (older versions' entries, damaged ones, writes cut
    short), as `prune --dry-run` counts it: said once runs were scored (after minutes of scoring, reading the
    headers costs 1-2 s per 1,000 entries; a `store` that only looked runs up stays quick)."""
    from analysis.store.prune import prune

    found = prune(root, dry_run=True)
    entries = sum(found.other_versions.values()) + len(found.damaged) + found.orphans
    return {"entries": entries, "bytes": found.freed_bytes}


def _lines(outcome: dict[str, Any], name: str, runs: int, fewjoint: int) -> list[str]:
    """The outcome as text: counts, then the one line of each run not stored."""
    workers = outcome["workers"]
    lines = [
        f"workspace {name!r}: {runs:,} runs; score store {outcome['store']}",
        f"  stored now: {len(outcome['stored']):,} ({outcome['seconds']:.1f} s, {workers} "
        f"worker{'s' if workers > 1 else ''})",
        f"  already in the store: {len(outcome['already_stored']):,}",
        f"  not stored: {len(outcome['not_stored']):,}",
        *(f"    {run}: {line}" for run, line in outcome["not_stored"].items()),
    ]
    if fewjoint:
        what = (
            "1 FewJoint system: scored when the dashboard shows it"
            if fewjoint == 1
            else (f"{fewjoint} FewJoint systems: scored when the dashboard shows them")
        )
        lines.append(f"  {what} (not kept in the score store)")
    unread = outcome.get("unread")
    if unread and unread["bytes"]:
        from analysis.store.disk import entries_text, size_text

        lines.append(
            f"  the store also holds {size_text(unread['bytes'])} this version never reads ({entries_text(unread['entries'])} "
            "of other versions, damaged or cut short): python -m analysis prune removes them"
        )
    return lines


def _line(answer: object, entry: Any) -> str | None:
    """None for a stored run; else its one line (a `NotLoaded`'s or an `Unwritten`'s, or the scorer's refusal
    naming the file)."""
    from analysis.isolated_jobs import NotLoaded, Refused, Unwritten
    from analysis.scoring import Scored

    if answer is None or isinstance(answer, Scored):
        return None
    if isinstance(answer, NotLoaded | Unwritten):
        return answer.line
    if isinstance(answer, Refused):
        return f"{Path(answer.path or str(entry.pred)).name}: {answer.problem}"
    return f"{Path(str(entry.pred)).name}: cannot score"
