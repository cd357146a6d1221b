"""Command line: `python -m analysis {metrics,formats,conventions,...}`; bad input exits 2 with one line."""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import json
import os
import re
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from analysis import settings as environment
from analysis.cli import ONE_SHOT
from analysis.conventions import CONVENTIONS
from analysis.errors import InputError
from analysis.formats import FORMATS, format_names

EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One line on stderr, like every other bad-input message of this tool.
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see --help)\n")


def _metrics(args: argparse.Namespace) -> int:
    from analysis.model import RunInfo
    from analysis.store.runs import scored_files
    from analysis.suite import LABELS, metric_suite

    mapping = None
    if args.mapping is not None:
        from analysis.formats.mapping import parse_mapping_option

        mapping = parse_mapping_option(args.mapping)
    # Read back from the score store when it holds this run (the same files, options and convention),
    # else parsed and scored (and stored with --store). A run parsed here is kept for the vocabulary check.
    loaded: list[Any] = []

    files: dict[str, Any] = {  # how the files are read: the same for the scorer and for the loaded run
        "pred_format": args.format,
        "gold_format": args.gold_format,
        "meta": RunInfo(history=args.history),
        "pred_deltas": args.pred_deltas,
        "pred_mapping": mapping,
        "gold_field": args.gold_field,
    }

    def load() -> Any:
        from analysis.loading import load_run

        loaded.append(load_run(args.pred, args.gold, **files))
        return loaded[-1]

    scored = scored_files(args.pred, args.gold, convention=args.convention, run=load, store=args.store, **files)
    fmt = scored.metas[0].formats[0]
    try:
        result = metric_suite(scored, group_by=args.group_by)
    except ValueError as exc:
        raise InputError(args.pred, fmt, str(exc)) from None
    if result["convention"] == "sgd":  # the SGD evaluator's own numbers, from the schema
        from analysis.sgd.scoring import add_to_suite

        add_to_suite(
            result, pred=args.pred, gold=args.gold or args.pred, schema=args.schema, train_schema=args.train_schema
        )
    elif args.schema or args.train_schema:
        raise InputError(args.pred, fmt, "--schema and --train-schema apply to the sgd convention only")
    extra = _explain(args, scored, mapping, result, loaded[0] if loaded else None)
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2))
        return 0
    print("\n".join([_table(result, LABELS), *extra]))
    return 0


def _explain(
    args: argparse.Namespace, scored: Any, mapping: Any, result: dict[str, Any], loaded: Any = None
) -> list[str]:
    """The vocabulary check and the published gap (`analysis.cli.explain`), the run parsed only when needed
    (`loaded`: the run as `metrics` parsed it already, if it did)."""
    from analysis.cli.explain import explain
    from analysis.loading import load_run

    def load() -> Any:
        if loaded is not None:
            return loaded
        return load_run(
            args.pred,
            args.gold,
            pred_format=args.format,
            gold_format=args.gold_format,
            meta=scored.metas[0],
            pred_deltas=args.pred_deltas,
            pred_mapping=mapping,
            gold_field=args.gold_field,
        )

    try:
        return explain(args, scored, load, result)
    except ValueError as exc:
        raise InputError(args.pred, scored.metas[0].formats[0], str(exc)) from None


def _fmt(value: Any) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _table(result: dict[str, Any], labels: dict[str, str]) -> str:
    run = result["runs"][0]
    lines = [
        f"run {run['run_id']}  ({' + '.join(run['formats'])})  convention: {result['convention']}"
        + (f" (subtask {result['subtask']})" if result.get("subtask") else ""),
        f"{result['n_dialogues']} dialogues, {result['n_turns']} turns",
    ]
    for found in result.get("gold_input", {}).values():  # how the scorer met the gold, when it was not as given
        if found["status"] != "as given" or "values to predict" in found["note"]:
            lines.append(f"gold {found['status']}: {found['note']}")
    lines.append("")
    width = max(len(v) for v in labels.values())
    lead = result.get("scorer_metrics")
    shown = [k for k in labels if k in result]
    if lead:  # the scorer's own lines first, in its order and under its names; then the rest, this tool's
        own = [m["metric"] for m in lead["metrics"]]
        name_width = max(len(m["name"]) for m in lead["metrics"])
        lines.append(lead["heading"][0].upper() + lead["heading"][1:] + ":")
        lines += [
            f"  {m['name']:<{name_width}}  {_fmt(result[m['metric']])}  ({labels[m['metric']]})"
            for m in lead["metrics"]
        ]
        lines += ["", "Other metrics (this tool's, not printed by that scorer):"]
        shown = [k for k in shown if k not in own]
    lines += [f"  {labels[k]:<{width}}  {_fmt(result[k])}" for k in shown]
    if result.get("unread_gold"):
        lines += ["", f"Every metric n/a: {result['unread_gold']}"]
    elif result.get("not_applicable"):
        from analysis.suite import not_applicable_text

        lines += ["", not_applicable_text(result["not_applicable"])]
    if "sgd" in result:
        from analysis.sgd.scoring import table_lines

        lines += table_lines(result)
    lines += ["", "JGA by turn:"]
    lines += [f"  turn {t:>3}  {_fmt(v)}" for t, v in list(result["jga_by_turn"].items())[:25]]
    lines += ["", "Per-domain JGA:"]
    lines += [f"  {d:<20}  {_fmt(v)}" for d, v in result["per_domain_jga"].items()]
    if "groups" in result:
        lines += ["", f"JGA by {result['group_by']}:"]
        lines += [f"  {g:<20}  {_fmt(v['jga'])}  ({v['n_turns']} turns)" for g, v in result["groups"].items()]
    warnings = result["alignment"].get("warnings", [])
    lines += ["", "Alignment: " + ("ok" if not warnings else "")]
    lines += [f"  ! {w}" for w in warnings]
    return "\n".join(lines)


def _formats(args: argparse.Namespace) -> int:
    width = max(len(spec.name) for spec in FORMATS)
    for spec in FORMATS:
        print(f"{spec.name:<{width}} {spec.summary}\n{'':<{width}} e.g. {spec.example}")
    return 0


def _sniff(args: argparse.Namespace) -> int:
    from analysis.formats.sniff import sniff, sniff_text

    found = sniff(args.file)
    print(json.dumps(found, ensure_ascii=False, indent=2) if args.json else sniff_text(found))
    return 0


def _conventions(args: argparse.Namespace) -> int:
    if args.json:
        print(json.dumps({n: c.describe() for n, c in CONVENTIONS.items()}, ensure_ascii=False, indent=2))
        return 0
    for name, conv in CONVENTIONS.items():
        print(f"{name:<10} {conv.notes}")
    return 0


# Sub-commands living in their own modules, each exposing register(subparsers); a module is imported only
# for its own command (or for --help and a mistyped command, which list them all).
COMMAND_MODULES = {
    "compare": "analysis.cli.compare",
    "fewjoint": "analysis.cli.fewjoint",
    "reconcile": "analysis.cli.reconcile",
    "report": "analysis.cli.report",
    "prune": "analysis.cli.prune",
    "slices": "analysis.cli.slices",
    "store": "analysis.cli.store",
}


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; given the arguments, only what their command needs (the other commands' modules
    import the report and figure stack: about 0.2 s that `metrics` or `fewjoint` would wait for)."""
    parser = _Parser(prog="python -m analysis", description="DST and few-shot joint NLU evaluation")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    m = sub.add_parser("metrics", help="every DST metric of one prediction file")
    m.add_argument(
        "--store",
        action="store_true",
        help="keep the scored runs in the score store (DST_CACHE_DIR) so that the next command on the same files "
        "reads them back; without it a run the store holds is read, nothing written",
    )
    m.add_argument("--pred", required=True, help="prediction file (or a file holding gold and prediction)")
    m.add_argument("--gold", help="gold file, when the prediction file does not carry gold")
    m.add_argument("--format", choices=format_names(), help="force the prediction file's format")
    m.add_argument("--gold-format", choices=format_names(), help="force the gold file's format")
    m.add_argument(
        "--mapping",
        metavar="KEY=VALUE,...",
        help="read the prediction file by a declared mapping instead of a format, e.g. "
        "'id=dial_id,gold=gold,pred=pred,encoding=linearised' (keys: python -m analysis sniff FILE proposes them)",
    )
    m.add_argument(
        "--gold-field",
        help="the field read as gold where the file holds several (llm-dst-eval: ground_truth or ground_truth_m24)",
    )
    m.add_argument("--convention", choices=list(CONVENTIONS), help="default: the format's own community's")
    m.add_argument("--history", choices=["predicted", "gold"], default="predicted")
    m.add_argument(
        "--pred-deltas",
        action="store_true",
        help="each predicted turn holds only the slots it changed: accumulate them (value none or '' deletes)",
    )
    m.add_argument("--schema", help="sgd: the evaluated split's schema.json (default: one beside the gold files)")
    m.add_argument("--train-schema", help="sgd: the training schema.json; its services are seen, the others unseen")
    m.add_argument("--group-by", help="also JGA per value of this column (turn_index, type, domain, slot)")
    m.add_argument(
        "--published",
        type=float,
        metavar="JGA",
        help="the JGA the paper publishes (fraction or percentage): the gap to it, decomposed into causes",
    )
    m.add_argument("--json", action="store_true", help="one JSON object, values as fractions in [0, 1]")
    m.set_defaults(func=_metrics)
    f = sub.add_parser("formats", help="list the supported formats with an example each")
    f.set_defaults(func=_formats)
    s = sub.add_parser("sniff", help="show a file's structure and propose a mapping that reads it")
    s.add_argument("file", help="a JSON or JSONL file (plain, .gz, .zip or archive.zip::member)")
    s.add_argument("--json", action="store_true", help="the structure and the proposal as one JSON object")
    s.set_defaults(func=_sniff)
    c = sub.add_parser("conventions", help="list the scoring conventions")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=_conventions)
    first = next((a for a in argv if not a.startswith("-")), None) if argv is not None else None
    if first in ONE_SHOT:
        return parser
    for module in [COMMAND_MODULES[first]] if first in COMMAND_MODULES else COMMAND_MODULES.values():
        try:
            register = importlib.import_module(module).register
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            continue
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns its exit code. Without `argv`, main is the program itself (`python -m
    analysis`, `dst-analysis`): it reads `sys.argv`, and a built-in command ends the process at once."""
    if argv is None:
        gc.disable()  # until the command's modules are imported (already off under `analysis.cli.entry.run`)
    arguments = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(arguments).parse_args(arguments)
    if argv is None:
        _settle(args.command)
    code = _run(args)
    if argv is None and args.command in ONE_SHOT:
        _exit_now(code)
    return code


# What `_metrics` imports on first use (the other built-in commands need nothing beyond this module's).
COMMAND_IMPORTS = {"metrics": ("analysis.store.runs", "analysis.model", "analysis.suite")}


def _settle(command: str) -> None:
    """Before a command of the program runs: import its modules, freeze every object built so far (the
    modules, classes and functions of ~700 modules, alive to the end of the process) so that no garbage
    collection traverses them again, and resume collection, which was off during the imports. Together
    ~0.05 s of a 0.9 s `metrics` run: otherwise each full collection walks all of pandas' objects."""
    try:
        for module in COMMAND_IMPORTS.get(command, ()):
            importlib.import_module(module)
    finally:
        gc.freeze()
        gc.enable()


def _exit_now(code: int) -> NoReturn:
    """End the process without Python's teardown, which frees every object of the ~700 modules and the
    run's tables one by one: 0.1 s of a 1 s `metrics` run. Only for the built-in commands, which leave
    nothing for an exit handler (no browser, child process or temporary file; the parse cache is
    written before the tables are scored)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BrokenPipeError, ValueError):  # a reader that left (`| head`), a closed stream
            stream.flush()
    os._exit(code)


def _run(args: argparse.Namespace) -> int:
    try:
        return int(args.func(args))
    except InputError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # output piped into `head`: not an error of ours
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print(f"python -m analysis {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # the last resort: never a traceback for the user
        return _unforeseen(args.command, exc)


def _unforeseen(command: str, exc: BaseException) -> int:
    """An error no check anticipated: one line on stderr (exit 2, as input it could not read), the
    traceback only where asked for: on stderr with DST_DEBUG=1, appended to the file DST_LOG names."""
    line = f"python -m analysis {command}: unexpected error reading the input ({_summary(exc)})"
    log = environment.text("DST_LOG")
    if log:
        try:
            with open(log, "a", encoding="utf-8") as handle:
                handle.write(f"{line}\n{''.join(traceback.format_exception(exc))}\n")
            line += f"; traceback in {log}"
        except OSError as err:
            line += f"; cannot write DST_LOG {log}: {err.strerror or err}"
    if environment.flag("DST_DEBUG"):
        traceback.print_exception(exc, file=sys.stderr)
    elif not log:
        line += "; set DST_DEBUG=1 for the traceback"
    print(line, file=sys.stderr)
    return EXIT_BAD_INPUT


def _summary(exc: BaseException) -> str:
    """The exception's kind and first line, without this program's own file paths."""
    text = str(exc).splitlines()[0] if str(exc).strip() else ""
    for root in {str(Path(__file__).resolve().parent.parent), sys.prefix, sys.base_prefix}:
        text = re.sub(re.escape(root) + r"[^\s'\"]*", "<code>", text)
    text = text if len(text) <= 200 else text[:197] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
