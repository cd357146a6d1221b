"""The ``compare`` sub-command: paired comparison of runs on the same gold (`analysis.compare`).

``python -m analysis compare --pred A --pred B [--pred C ...] [--gold G] [--convention X]
[--resamples 1000] [--min-support 10] [--shared-turns] [--system S --system T ...] [--json]``

Every pair (a, b) in the order given is compared as ``b - a``: every comparable metric overall, per domain
and per slot, with dialogue-clustered paired bootstrap intervals and p-values, McNemar on turn-level JGA,
and Holm's correction within each family (the output says which). JSON keys: ``runs``, ``pairs``,
``deltas`` (one record per pair, metric, scope and group), ``mcnemar`` (one per pair),
``multiple_testing``, ``skipped``, ``left_out`` (``--shared-turns``: the turns each run loses, and why).
Every delta carries its support; one whose runs differ in fewer than ``--min-support`` dialogues is not
tested. ``--system`` (one per ``--pred``) groups the runs by system, each run a seed, and compares the
systems' seed means with a hierarchical bootstrap (``analysis.seed_compare``). Bad input (a file that does not parse, runs on different gold or
under different conventions) is one line on stderr, exit 2.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from analysis.conventions import CONVENTIONS
from analysis.errors import InputError
from analysis.formats import format_names

__all__ = ["register", "run"]


def register(subparsers: Any) -> None:
    """Add the ``compare`` sub-parser to an ``argparse`` subparsers object (``func=run``)."""
    parser = subparsers.add_parser(
        "compare",
        help="paired comparison of runs on the same gold: deltas, bootstrap intervals, p-values, McNemar, Holm",
        description=(
            "Compare every pair of runs on the same gold (b - a): each comparable metric overall, per domain "
            "and per slot with paired cluster-bootstrap intervals and p-values over dialogues, McNemar on "
            "turn-level JGA, Holm-corrected within each family of tests."
        ),
    )
    parser.add_argument(
        "--store",
        action="store_true",
        help="keep the scored runs in the score store (DST_CACHE_DIR) so that the next command on the same files "
        "reads them back; without it a run the store holds is read, nothing written",
    )
    parser.add_argument(
        "--pred", action="append", required=True, help="a prediction file; give two or more (--pred A --pred B)"
    )
    parser.add_argument("--gold", help="gold file, when the prediction files do not carry gold (shared by all)")
    parser.add_argument("--format", choices=format_names(), help="force the prediction files' format")
    parser.add_argument("--gold-format", choices=format_names(), help="force the gold file's format")
    parser.add_argument(
        "--convention", choices=list(CONVENTIONS), help="score every run under this one (default: the files' own)"
    )
    parser.add_argument(
        "--metrics",
        default="",
        help="comma-separated metric keys, or 'all' for every metric with a dialogue bootstrap "
        "(default: JGA, slot F1, IAGA, RSA, FGA, turn-level accuracy, GCA)",
    )
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the resampled dialogues (default 0)")
    parser.add_argument("--alpha", type=float, default=0.05, help="significance level after Holm (default 0.05)")
    parser.add_argument(
        "--min-support",
        type=int,
        default=None,
        help="test a delta only when the runs differ in at least this many dialogues of its group "
        "(default 10; below it the delta and its counts are shown, with no interval, p or star)",
    )
    parser.add_argument(
        "--shared-turns",
        action="store_true",
        help="compare runs on one gold with turns missing on the turns all of them hold (the turns left out are named)",
    )
    parser.add_argument(
        "--system",
        action="append",
        help="the system of each --pred, in the same order (give it once per --pred): the runs of one system are "
        "its seeds, and systems are compared over seeds and dialogues with a hierarchical bootstrap",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object, values as fractions in [0, 1]")
    parser.set_defaults(func=run)


def _names(paths: list[str]) -> list[str]:
    """Run ids from the file names; a repeated name gets its position appended.

    >>> _names(["a/run.json", "b/run.json", "c.json"])
    ['run.json', 'run.json#2', 'c.json']
    """
    from pathlib import Path

    out: list[str] = []
    for i, path in enumerate(paths, start=1):
        name = Path(path).name
        out.append(name if name not in out else f"{name}#{i}")
    return out


def _metrics(text: str, path: str, fmt: str | None) -> tuple[str, ...] | None:
    """`--metrics`: None (the default set), every comparable metric for `all`, else the keys given."""
    from analysis.compare import COMPARABLE

    if not text.strip():
        return None
    if text.strip() == "all":
        return COMPARABLE
    keys = tuple(k.strip() for k in text.split(",") if k.strip())
    unknown = [k for k in keys if k not in COMPARABLE]
    if unknown or not keys:
        raise InputError(path, fmt, f"--metrics: unknown {unknown or text!r}; known: all, {', '.join(COMPARABLE)}")
    return keys


def run(args: argparse.Namespace) -> int:
    from analysis.compare import MIN_SUPPORT, compare, text_report
    from analysis.model import RunInfo
    from analysis.store.runs import scored_files

    paths: list[str] = args.pred
    if len(paths) < 2:
        raise InputError(paths[0], args.format, "compare needs two or more runs: give --pred twice or more")
    if len(set(paths)) != len(paths):
        twice = next(p for p in paths if paths.count(p) > 1)
        raise InputError(twice, args.format, "the same prediction file is given twice: compare distinct runs")
    if args.resamples < 1:
        raise InputError(paths[0], args.format, f"--resamples has to be a positive number, got {args.resamples}")
    if not 0 < args.alpha < 1:
        raise InputError(paths[0], args.format, f"--alpha has to be strictly between 0 and 1, got {args.alpha}")
    scored = {}  # each read back from the score store when it holds the run, else parsed, scored and stored
    for name, path in zip(_names(paths), paths, strict=True):
        scored[name] = scored_files(
            path,
            args.gold,
            convention=args.convention,
            pred_format=args.format,
            gold_format=args.gold_format,
            meta=RunInfo(run_id=name),
            store=args.store,
        )
    from analysis.scorer_inputs import unread_reasons

    unread = {run: why for one in scored.values() for run, why in unread_reasons(one.alignment).items()}
    if unread:  # a scorer's name over gold it never reads: no delta under that name (`views.unread_gold`)
        return _unread(args, list(scored), unread)
    metrics = _metrics(args.metrics, paths[0], args.format)
    min_support = MIN_SUPPORT if args.min_support is None else args.min_support
    if min_support < 0:
        raise InputError(paths[0], args.format, f"--min-support has to be 0 or more, got {min_support}")
    options = {"n_resamples": args.resamples, "seed": args.seed, "alpha": args.alpha, "min_support": min_support}
    if args.system:
        return _over_seeds(args, scored, metrics, options)
    result = compare(scored, metrics=metrics, shared_turns=args.shared_turns, **options)
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
        return 0
    print(text_report(result))
    return 0


def _over_seeds(args: argparse.Namespace, scored: dict, metrics: tuple[str, ...] | None, options: dict) -> int:
    """`--system`: the runs grouped by system (each run a seed), compared with the hierarchical bootstrap."""
    from analysis import seed_compare

    paths: list[str] = args.pred
    if len(args.system) != len(paths):
        raise InputError(
            paths[0],
            args.format,
            f"--system given {len(args.system)} time(s) for {len(paths)} --pred: give one system per prediction file",
        )
    systems: dict[str, list] = {}
    for system, run in zip(args.system, scored.values(), strict=True):
        systems.setdefault(system, []).append(run)
    if len(systems) < 2:
        raise InputError(paths[0], args.format, "--system names one system: compare two systems or more")
    result = seed_compare.compare_seeds(
        systems,
        metrics=metrics or ("jga",),
        scopes=("overall", "domain"),
        shared_turns=args.shared_turns,
        **options,
    )
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
    else:
        print(seed_compare.text_report(result))
    return 0


def _unread(args: argparse.Namespace, runs: list[str], unread: dict[str, str]) -> int:
    """No comparison when a run's numbers are n/a (its convention's scorer never reads its gold): each such
    run with the reason, and exit 0."""
    if args.json:
        print(
            json.dumps({"runs": runs, "unread_gold": unread, "pairs": [], "deltas": []}, ensure_ascii=False, indent=2)
        )
        return 0
    lines = ["No comparison: every number under the convention's name is n/a for"]
    lines += [f"  {run}: n/a: {reason}" for run, reason in unread.items()]
    print("\n".join(lines))
    return 0
