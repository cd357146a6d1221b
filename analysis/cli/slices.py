"""The ``slices`` sub-command: the worst slices of one run over turn features (`analysis.slices`).

``python -m analysis slices --pred P [--gold G] [--train T] [--convention X] [--top 10] [--max-predicates 3]
[--min-support 0.01] [--alpha 0.95] [--resamples 1000] [--seed 0] [--exclude FEATURE ...] [--json]``

sliceline searches the turn features (domain set, turn depth, gold slots, dontcare, new values said in the
user turn, previous turn correct, dialogue attributes, and with ``--train`` values unseen in training) with
the error 1 - turn JGA; its slices are ranked by JGA gap with their support and a dialogue-bootstrap interval.
``--train`` is a file with gold states (e.g. the training split), read as gold and scored under the run's
convention. A run without errors, or with no feature of two levels, prints why and finds no slice (exit 0);
bad input (a file that does not parse, a run without turns, bad settings) is one line on stderr, exit 2.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from analysis.conventions import CONVENTIONS
from analysis.formats import format_names

__all__ = ["register", "run"]


def register(subparsers: Any) -> None:
    """Add the ``slices`` sub-parser to an ``argparse`` subparsers object (``func=run``)."""
    from analysis import slices as S

    parser = subparsers.add_parser(
        "slices",
        help="the worst slices of a run over turn features (sliceline), ranked by JGA gap with intervals",
        description=(
            "Find the slices of turns where a run does worst (sliceline over turn features, error = 1 - turn JGA), "
            "ranked by the gap between the run's JGA and the slice's, with support and a 95% dialogue-bootstrap "
            "interval of the slice's JGA."
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
    parser.add_argument("--train", help="a file with gold states of the training data: adds the 'unseen value' feature")
    parser.add_argument("--format", choices=format_names(), help="force the prediction file's format")
    parser.add_argument("--gold-format", choices=format_names(), help="force the gold (and training) file's format")
    parser.add_argument("--convention", choices=list(CONVENTIONS), help="default: the format's own community's")
    parser.add_argument("--top", type=int, default=S.TOP, help=f"slices kept (default {S.TOP})")
    parser.add_argument(
        "--max-predicates",
        type=int,
        default=S.MAX_PREDICATES,
        help=f"feature levels per slice (default {S.MAX_PREDICATES})",
    )
    parser.add_argument(
        "--min-support",
        type=float,
        default=S.MIN_SUPPORT,
        help=f"a slice's least share of the turns, or number of turns when >= 1 (default {S.MIN_SUPPORT}, "
        f"never below {S.MIN_TURNS} turns)",
    )
    parser.add_argument("--alpha", type=float, default=S.ALPHA, help=f"sliceline's weight of error vs size ({S.ALPHA})")
    parser.add_argument("--resamples", type=int, default=S.RESAMPLES, help=f"bootstrap resamples ({S.RESAMPLES})")
    parser.add_argument("--seed", type=int, default=0, help="seed of the resampled dialogues (default 0)")
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="FEATURE",
        help="leave a feature out of the search, e.g. --exclude 'previous turn' (repeatable)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object, values as fractions in [0, 1]")
    parser.set_defaults(func=run)


def _text(report: Any) -> str:
    lines = [
        f"run {report.run_id}: JGA {'n/a' if report.jga != report.jga else f'{report.jga:.4f}'} over {report.n_turns:,} turns, {report.n_dialogues:,} dialogues",
        f"features searched: {', '.join(report.features) or 'none'}",
    ]
    if report.constant:
        lines.append(f"left out (one level in this run): {', '.join(report.constant)}")
    if report.same:
        lines.append(f"left out (the same split of the turns as another feature): {', '.join(report.same)}")
    if report.grouped:
        lines.append(f"rare levels grouped as '(other levels)': {', '.join(report.grouped)}")
    if report.settings.get("excluded"):
        lines.append(f"left out as asked (--exclude): {', '.join(report.settings['excluded'])}")
    settings = report.settings
    lines.append(
        f"search: {settings['method']}; top {settings['top']}, at most {settings['max_predicates']} feature levels, "
        f"at least {settings['min_support_turns']} turns, alpha {settings['alpha']}; interval: {settings['interval']}"
    )
    lines.append("")
    if report.note:
        return "\n".join([*lines, report.note])
    for row in report.slices.to_dict("records"):
        lines.append(
            f"{row['rank']:>3}. JGA {row['jga']:.4f} [{row['jga_low']:.4f}, {row['jga_high']:.4f}]  gap {row['gap']:+.4f}"
            f"  {row['turns']:,} turns, {row['dialogues']:,} dialogues  {row['slice']}"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from analysis.slices import find_slices
    from analysis.store.runs import scored_files

    # Each read back from the score store when it holds the run, else parsed and scored (stored with --store).
    scored = scored_files(
        args.pred,
        args.gold,
        convention=args.convention,
        pred_format=args.format,
        gold_format=args.gold_format,
        store=args.store,
    )
    train = None
    if args.train:
        train = scored_files(
            args.train,
            args.train,
            convention=scored.convention.name,
            pred_format=args.gold_format,
            gold_format=args.gold_format,
            store=args.store,
        )
    report = find_slices(
        scored,
        train,
        top=args.top,
        max_predicates=args.max_predicates,
        min_support=args.min_support,
        alpha=args.alpha,
        resamples=args.resamples,
        seed=args.seed,
        exclude=tuple(args.exclude),
    )
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False, indent=2))
        return 0
    print(_text(report))
    return 0
