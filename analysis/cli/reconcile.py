"""The ``reconcile`` sub-command: one prediction file under several conventions, and why they differ.

``python -m analysis reconcile --pred P [--gold G] [--conventions OWN,OWN-lenient,exact,trade,dstc9,mwzeval,convlab3]
[--json] [--no-causes] [--examples N]``

JSON (values as fractions in [0, 1], NaN as null)::

    {"run_id": ..., "n_turns": ..., "pair_key": ...,
     "conventions": {name: {"jga", "slot_f1_micro", "slot_accuracy", "slot_f1_seed"}},
     "flips": {"a|b": {"a", "b", "count", "only_a", "only_b", "n_slots",
                       "causes": {cause: n_slots}, "examples": [{dialogue_id, turn_index, domain, slot,
                       gold, pred, outcome_a, outcome_b, cause}, ...]}}}

A pair key is ``a|b`` with ``a`` listed before ``b`` in ``--conventions``; ``count`` is the number of
turns whose joint correctness differs, ``only_a`` those correct under ``a`` only. ``causes`` counts the
responsible slots per cause (see ``analysis.reconcile.core``). An unknown convention name is bad input:
one line on stderr, exit 2.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from analysis.conventions import CONVENTIONS, Convention
from analysis.errors import InputError
from analysis.formats import format_names
from analysis.model import Run
from analysis.reconcile.core import CAUSE_LABELS, DEFAULT_CONVENTIONS, METRIC_LABELS, Reconciliation, reconcile
from analysis.reconcile.gap import gap_conventions
from analysis.scoring import Scored
from analysis.suite import gold_inputs

__all__ = ["parse_conventions", "register", "render_table", "run"]


def register(subparsers: Any) -> None:
    """Add the ``reconcile`` sub-parser to an ``argparse`` subparsers object (``func=run``)."""
    parser = subparsers.add_parser(
        "reconcile",
        help="one prediction file under several conventions: metrics side by side, flipped turns and causes",
        description=(
            "Score one run under each convention, show JGA and slot F1 side by side and, for every pair, "
            "the turns whose joint correctness flips with the responsible slots grouped by cause "
            "(dontcare policy, value normaliser, multiple gold values, fuzzy matching, slot alias, slot scope)."
        ),
    )
    parser.add_argument(
        "--store",
        action="store_true",
        help="keep the scored runs in the score store (DST_CACHE_DIR) so that the next command on the same files "
        "reads them back; without it a run the store holds is read, nothing written",
    )
    parser.add_argument("--pred", required=True, help="prediction file (or a file holding gold and prediction)")
    parser.add_argument("--gold", help="gold file, when the prediction file does not carry gold")
    parser.add_argument("--format", choices=format_names(), help="force the prediction file's format")
    parser.add_argument("--gold-format", choices=format_names(), help="force the gold file's format")
    parser.add_argument(
        "--conventions",
        default=None,
        help="comma-separated, in pair order (default: the run's own convention, its lenient variant, then "
        f"{','.join(DEFAULT_CONVENTIONS)}; known: {', '.join(CONVENTIONS)})",
    )
    parser.add_argument("--no-causes", action="store_true", help="flip counts only (skip the counterfactual scoring)")
    parser.add_argument("--examples", type=int, default=5, help="responsible slots listed per pair (default 5)")
    parser.add_argument("--json", action="store_true", help="one JSON object, values as fractions in [0, 1]")
    parser.set_defaults(func=run)


def parse_conventions(text: str, *, path: str, fmt: str | None) -> list[str]:
    """The comma list of convention names, checked: unknown or repeated names are bad input.

    >>> parse_conventions("exact, mwzeval", path="p.json", fmt="mwzeval")
    ['exact', 'mwzeval']
    """
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in CONVENTIONS]
    if unknown or not names:
        raise InputError(
            path, fmt, f"--conventions has to name conventions among {', '.join(CONVENTIONS)}, got {text!r}"
        )
    if len(set(names)) != len(names):
        raise InputError(path, fmt, f"--conventions names a convention twice: {text!r}")
    return names


def run(args: argparse.Namespace) -> int:
    from analysis.loading import load_run
    from analysis.store.runs import scored_files

    # The flips' causes need the parsed run; its tables under each convention are read back from the score
    # store when it holds them, else scored and stored.
    loaded = load_run(args.pred, args.gold, pred_format=args.format, gold_format=args.gold_format)
    if args.conventions is None:
        names = gap_conventions(loaded.meta.convention)
    else:
        names = parse_conventions(args.conventions, path=args.pred, fmt=args.format)

    def score(run: Run, convention: Convention) -> Scored:
        return scored_files(
            args.pred,
            args.gold,
            convention=convention.name,
            pred_format=args.format,
            gold_format=args.gold_format,
            run=lambda: run,
            store=args.store,
        )

    rec = reconcile(loaded, names, score=score)
    result = rec.to_dict(causes=not args.no_causes, examples=max(args.examples, 0))
    # How each scorer-named convention met the gold: as given, prepared as its own pipeline does, or n/a.
    result["gold_input"] = {name: found for name, s in rec.scored.items() for found in gold_inputs(s).values()}
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2))
        return 0
    print(render_table(rec, result))
    return 0


def _fmt(value: Any) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.4f}"


def render_table(rec: Reconciliation, result: dict[str, Any]) -> str:
    """Readable report: metrics per convention, flip counts per pair, causes and a few examples."""
    meta = rec.run.meta
    names = list(result["conventions"])
    width = max(12, *(len(n) + 2 for n in names))  # two spaces at least between two conventions' names
    first = max(24, *(len(label) + 1 for label in METRIC_LABELS.values()))  # the label column
    lines = [
        f"run {meta.run_id}  ({' + '.join(meta.formats)})  {result['n_turns']} turns",
        "",
        f"{'metric':<{first}}" + "".join(f"{n:>{width}}" for n in names),
    ]
    for key, label in METRIC_LABELS.items():
        lines.append(f"{label:<{first}}" + "".join(f"{_fmt(result['conventions'][n][key]):>{width}}" for n in names))
    for name, found in result.get("gold_input", {}).items():
        if found["status"] != "as given" or "values to predict" in found["note"]:
            lines.append(f"  {name}: gold {found['status']}: {found['note']}")
    lines += ["", "Turns whose joint correctness flips (a|b: total, correct under a only / under b only):"]
    for key, entry in result["flips"].items():
        lines.append(f"  {key:<22} {entry['count']:>6}   ({entry['only_a']} / {entry['only_b']})")
        if "causes" in entry:
            causes = ", ".join(f"{CAUSE_LABELS[c]} {n}" for c, n in entry["causes"].items())
            lines.append(f"  {'':<22} {entry['n_slots']} responsible slots: {causes or 'none'}")
            for ex in entry["examples"]:
                lines.append(
                    f"  {'':<24}{ex['dialogue_id']} turn {ex['turn_index']} {ex['domain']}-{ex['slot']}: "
                    f"gold {ex['gold']!r} pred {ex['pred']!r} -> {ex['outcome_a']} / {ex['outcome_b']} [{ex['cause']}]"
                )
    return "\n".join(lines)
