"""The ``report`` sub-command: every dashboard figure and table of a workspace as paper-ready files.

``python -m analysis report WORKSPACE --out DIR [--formats pdf,svg,png] [--style paper|slides]
[--width single|double] [--convention NAME] [--resamples N] [--intervals brackets|pm] [--columns A,B,...]
[--pdf|--no-pdf] [--grayscale] [--no-progress]``

Writes the figures (one browser for the batch, a progress bar on stderr), the tables (LaTeX,
Markdown, CSV), a LaTeX snippet per figure (``fig-<name>.tex``), ``main.tex`` (the whole report) and
``index.md`` / ``index.html`` listing every file with a caption and the comparability notes; with
``--pdf`` (the default when xelatex or pdflatex is installed) compiles ``main.tex`` into ``main.pdf``. Prints the index
path and the file count. A bad workspace or an unwritable folder is an ``InputError`` (exit 2); a
machine without Chromium stops with exit 3 and the install hint; a ``main.tex`` that does not compile
(or ``--pdf`` without LaTeX) is exit 4 with the log's first error line, every other file written.
"""

from __future__ import annotations

import argparse
import stat
import sys
import time
from pathlib import Path
from typing import Any

from analysis.conventions import CONVENTIONS
from analysis.export.figures import ExportUnavailableError
from analysis.export.files import FIGURE_FORMATS
from analysis.export.style import STYLES, WIDTHS

__all__ = ["EXIT_NO_BROWSER", "EXIT_NO_PDF", "register", "run"]

EXIT_NO_BROWSER = 3
EXIT_NO_PDF = 4


def _formats(text: str) -> list[str]:
    chosen = [f.strip().lower() for f in text.split(",") if f.strip()]
    wrong = [f for f in chosen if f not in FIGURE_FORMATS]
    if wrong or not chosen:
        raise argparse.ArgumentTypeError(
            f"formats are a comma-separated list of {', '.join(FIGURE_FORMATS)}, got {text!r}"
        )
    return list(dict.fromkeys(chosen))


def register(subparsers: Any) -> None:
    """Add the ``report`` sub-parser to an ``argparse`` subparsers object (``func=run``)."""
    parser = subparsers.add_parser(
        "report",
        help="write every figure and table of a workspace as paper-ready files (PDF/SVG/PNG, LaTeX/Markdown/CSV)",
        description=(
            "Paper report of a workspace: leaderboard with bootstrap intervals, per-slot F1, per-domain JGA, "
            "JGA by turn depth, JGA vs GJGA, cross-lingual gaps and FewJoint seeds, plus an index."
        ),
    )
    parser.add_argument("workspace", help="workspace manifest (workspace.toml) or its folder")
    parser.add_argument("--out", required=True, help="output folder (created when missing)")
    parser.add_argument(
        "--formats", type=_formats, default=list(FIGURE_FORMATS), help="figure formats, e.g. pdf,svg,png (default)"
    )
    parser.add_argument("--style", choices=STYLES, default="paper", help="paper: no titles in figures (default)")
    parser.add_argument("--width", choices=WIDTHS, default="single", help="single (3.3 in) or double (7.0 in) column")
    parser.add_argument("--convention", choices=list(CONVENTIONS), help="score every run under this convention")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples for intervals (1000)")
    parser.add_argument(
        "--intervals",
        choices=("brackets", "pm"),
        default="brackets",
        help="intervals in tables: brackets `0.519 [0.507, 0.531]` (default) or pm `0.519 ±0.012` (half-width)",
    )
    parser.add_argument(
        "--columns",
        type=lambda text: [c.strip() for c in text.split(",") if c.strip()],
        default=None,
        help="the leaderboard table's columns, e.g. run,JGA,'Slot F1 (micro)' (default: all, in as many parts as "
        "the page needs; a table wider than a column spans both)",
    )
    parser.add_argument(
        "--pdf",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="compile main.tex into main.pdf with xelatex (or pdflatex) (default: when one is installed)",
    )
    parser.add_argument(
        "--grayscale", action="store_true", help="every trace also gets a marker or bar pattern: apart printed in grey"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(func=run)


def _manifest_is_a_file(workspace: str) -> None:
    """A manifest that is a FIFO or a device would hang or never end the TOML reader: refused first."""
    from analysis.errors import InputError
    from analysis.formats.reading import special_kind

    path = Path(workspace)
    path = path / "workspace.toml" if path.is_dir() else path
    try:
        mode = path.stat().st_mode
    except OSError:
        return  # a missing manifest is the workspace reader's message
    if not stat.S_ISREG(mode):
        raise InputError(str(path), "workspace", f"is {special_kind(mode)}: only regular files are read")


def run(args: argparse.Namespace) -> int:
    from analysis.export.report import MAIN_PDF, CompileError, build_report, check_columns

    _manifest_is_a_file(args.workspace)
    try:
        check_columns(getattr(args, "columns", None))
    except ValueError as exc:
        print(f"report: --columns: {exc}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    try:
        written = build_report(
            args.workspace,
            args.out,
            formats=args.formats,
            style=args.style,
            width=args.width,
            convention=args.convention,
            n_resamples=args.resamples,
            progress=not args.no_progress,
            intervals=args.intervals,
            pdf=args.pdf,
            columns=getattr(args, "columns", None),
            grayscale=getattr(args, "grayscale", False),
        )
    except ExportUnavailableError as exc:
        print(f"report: {exc}", file=sys.stderr)
        return EXIT_NO_BROWSER
    except CompileError as exc:
        print(f"report: every file but main.pdf written to {args.out}; {exc}", file=sys.stderr)
        return EXIT_NO_PDF
    n_files = sum(len(w.files) for w in written) + 2
    compiled = any(p.name == MAIN_PDF for w in written for p in w.files)
    whole = f"{args.out}/{MAIN_PDF}" if compiled else f"{args.out}/main.tex (not compiled)"
    print(
        f"wrote {n_files} files to {args.out} in {time.perf_counter() - started:.1f} s; "
        f"index: {args.out}/index.md; whole report: {whole}"
    )
    return 0
