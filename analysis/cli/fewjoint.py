"""The ``fewjoint`` sub-command: score a few-shot joint NLU system over seeds from the command line.

``python -m analysis fewjoint --gold EPISODES --pred P1 [P2 ...] [--averaging episode|micro] [--json]
[--system S1 [S2 ...] [--resamples 1000] [--seed 0]]``

Prints a readable table (or, with ``--json``, the dict of ``FewJointResult.to_dict``); warnings go to
stderr. ``--system`` (one name per ``--pred``) groups the files into systems, each file a seed: every system is
scored, and every pair compared over seeds and sentences with a hierarchical bootstrap
(``analysis.fewjoint.compare``; JSON: ``{"systems": {name: result}, "comparison": ...}``). ``InputError`` propagates to the top-level CLI, which prints its one-line message and exits 2.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from analysis.fewjoint.align import load_fewjoint_system
from analysis.fewjoint.scoring import AVERAGINGS, METRICS, FewJointResult, score_fewjoint

__all__ = ["register", "render_table", "run"]


def register(subparsers: Any) -> None:
    """Add the ``fewjoint`` sub-parser to an ``argparse`` subparsers object (``func=run``)."""
    parser = subparsers.add_parser(
        "fewjoint",
        help="score few-shot joint NLU predictions (FewJoint): intent accuracy, slot F1, sentence accuracy",
        description=(
            "Score one system (one prediction file per seed, JSONL or conlleval text, auto-detected) "
            "against MetaDialog episode gold. Only query utterances are scored."
        ),
    )
    parser.add_argument("--gold", required=True, help="MetaDialog episode file, e.g. FewJoint1.1/5shot/test.json")
    parser.add_argument("--pred", required=True, nargs="+", help="prediction files, one per seed")
    parser.add_argument(
        "--averaging",
        choices=AVERAGINGS,
        default="episode",
        help="episode: per-episode intent accuracy and slot F1, then the mean (reference); micro: pooled",
    )
    parser.add_argument("--name", default="system", help="system name recorded in the results")
    parser.add_argument("--shots", type=int, default=None, help="shot setting K (default: parsed from --gold)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument(
        "--system",
        nargs="+",
        help="the system of each --pred, in the same order (one name per file): the files of one system are its "
        "seeds, and every pair of systems is compared over seeds and sentences (hierarchical bootstrap)",
    )
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples of --system (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the resampling of --system (default 0)")
    parser.set_defaults(func=run)


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.4f}"


def render_table(result: FewJointResult) -> str:
    """A plain-text report: headline metrics over seeds, per seed, per domain, alignment problems."""
    data = result.to_dict()
    shots = f", {result.shots}-shot" if result.shots is not None else ""
    lines = [
        f"FewJoint: {result.system}{shots}, {len(result.seeds)} seed(s), {result.n_queries} queries, "
        f"averaging={result.averaging} (std: sample, ddof=1)",
        "",
        f"{'metric':<20}{'mean':>10}{'std':>10}  per seed",
    ]
    for metric in METRICS:
        entry = data[metric]
        per_seed = "  ".join(f"{seed}:{_fmt(v)}" for seed, v in entry["per_seed"].items())
        lines.append(f"{metric:<20}{_fmt(entry['mean']):>10}{_fmt(entry['std']):>10}  {per_seed}")
    lines += [
        "",
        f"{'domain':<20}{'queries':>8}{'intent acc':>12}{'slot F1':>10}{'sentence':>10}  (means over seeds)",
    ]
    for domain, entry in data["per_domain"].items():
        lines.append(
            f"{domain:<20}{entry['n_queries']:>8}{_fmt(entry['intent_accuracy']['mean']):>12}"
            f"{_fmt(entry['slot_f1']['mean']):>10}{_fmt(entry['sentence_accuracy']['mean']):>10}"
        )
    lines += [
        "",
        "ill-formed BIO tags per seed: "
        + ", ".join(f"{seed}: {v['tags']} in {v['queries']} queries" for seed, v in data["ill_formed_bio"].items()),
    ]
    problems = {seed: {k: n for k, n in counts.items() if n} for seed, counts in data["alignment"]["counts"].items()}
    if any(problems.values()):
        lines.append(
            "alignment problems: "
            + "; ".join(
                f"seed {seed}: " + ", ".join(f"{n} {k}" for k, n in c.items()) for seed, c in problems.items() if c
            )
        )
    else:
        lines.append("alignment: every gold query has exactly one prediction in every seed")
    return "\n".join(lines)


def _refuse_unaligned(system: Any, gold: str) -> None:
    """A seed none of whose predictions lands on a gold query (wrong gold, wrong split, keys that do not
    match) would score every query as wrong and exit 0: an `InputError` naming the file and its first
    prediction instead."""
    from analysis.errors import InputError

    status = system.predictions
    for seed, path, fmt in zip(system.seeds, system.pred_paths, system.formats, strict=True):
        if (status.loc[status["seed"] == seed, "alignment_status"] != "missing").any():
            continue
        extra = system.alignment[(system.alignment["seed"] == seed) & (system.alignment["kind"] == "extra")]
        first = (
            f"; its first prediction (domain {extra.iloc[0]['domain']!r}, episode {extra.iloc[0]['episode']}, "
            f"query {extra.iloc[0]['query_index']}) has no gold query"
            if len(extra)
            else ""
        )
        raise InputError(
            path,
            fmt,
            f"no prediction aligns with a query of the gold {gold} (nothing to score: are these predictions for "
            f"this gold and split?){first}",
        )


def _score(args: argparse.Namespace, name: str, paths: list[str]) -> FewJointResult:
    system = load_fewjoint_system(args.gold, paths, name=name, shots=args.shots)
    _refuse_unaligned(system, args.gold)
    result = score_fewjoint(system, averaging=args.averaging)
    for warning in result.warnings:
        print(f"warning: {name + ': ' if args.system else ''}{warning}", file=sys.stderr)
    return result


def _systems(args: argparse.Namespace) -> dict[str, list[str]]:
    """The prediction files of each ``--system`` name, in the order first named (an ``InputError`` when the
    names do not pair up with the files one to one)."""
    from analysis.errors import InputError

    if len(args.system) != len(args.pred):
        raise InputError(
            args.pred[0],
            None,
            f"--system names {len(args.system)} systems for {len(args.pred)} --pred files: give one per file",
        )
    grouped: dict[str, list[str]] = {}
    for name, path in zip(args.system, args.pred, strict=True):
        grouped.setdefault(name, []).append(path)
    if len(grouped) < 2:
        raise InputError(args.pred[0], None, f"--system names one system ({args.system[0]}): compare needs two or more")
    return grouped


def _compare(args: argparse.Namespace) -> int:
    from analysis.fewjoint.compare import compare_fewjoint, text_report

    results = {name: _score(args, name, paths) for name, paths in _systems(args).items()}
    comparison = compare_fewjoint(results, n_resamples=args.resamples, seed=args.seed)
    if args.json:
        out = {"systems": {n: r.to_dict() for n, r in results.items()}, "comparison": comparison.to_dict()}
        print(json.dumps(out, ensure_ascii=False, indent=2, allow_nan=False))
    else:
        print("\n\n".join([*(render_table(r) for r in results.values()), text_report(comparison)]))
    return 0


def run(args: argparse.Namespace) -> int:
    """Score and print; returns the exit code (0). ``InputError`` propagates to the caller (exit 2), also
    when no prediction of a seed aligns with a gold query."""
    from analysis.fewjoint.episodes import GOLD_FORMAT
    from analysis.formats.reading import preflight

    # FewJoint files are parsed by their own reader: the shared reader's checks first (limits, special
    # files, JSON depth, lone surrogates, over-long numbers), so a hostile file is one line, not a traceback.
    preflight(args.gold, fmt=GOLD_FORMAT)
    for path in args.pred:
        preflight(path)
    if args.system:
        return _compare(args)
    result = _score(args, args.name, args.pred)
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False, indent=2, allow_nan=False))
    else:
        print(render_table(result))
    return 0
