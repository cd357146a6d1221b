r"""Table files: LaTeX, Markdown and CSV from a frame (`table_bytes`), as the buttons and the report write them.

LaTeX uses booktabs (\toprule, \midrule, \bottomrule), puts the best value of each metric column in
bold (higher is better unless the column is in `lower_better`; ties are all bold), comparing only
comparable runs: in a table of runs of several datasets, splits, conventions or history modes
(`views.comparable_groups`, the rule of the Overview's comparability warnings) each group gets its own
best, and a note under the table says so. It shows an interval as `0.519 [0.500, 0.540]` (a percentile
interval is not symmetric, so no +/-). Special characters of run and slot names are escaped; Chinese
text is written as UTF-8 as is -- compile with XeLaTeX or LuaLaTeX and `\usepackage{xeCJK}`. Markdown
is a GitHub pipe table with the same cells. CSV keeps every column (intervals as their own columns) at
full precision; its text cells are quoted and those a spreadsheet would evaluate as a formula get a
leading `'` (`analysis.export.safe_csv`; numbers stay numbers).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analysis.escaping import markdown_text
from analysis.export.files import TABLE_FORMATS
from analysis.export.safe_csv import frame_csv
from analysis.views import comparable_groups

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    # OT1 (pdflatex's default font encoding) has no < > |: they would print as an inverted !, ? and a dash.
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    # A cell opening a row right after \\ (or the header after \toprule) must not be read as their
    # optional argument: `[2pt]` there is a length, `[x]` an error.
    "[": "{[}",
    "]": "{]}",
}
_LABEL_UNSAFE = re.compile(r"[^A-Za-z0-9:._/-]")


def latex_escape(text: object) -> str:
    r"""Text safe anywhere in a LaTeX table (cell, header, caption, note): the ten special characters
    and `< > | [ ]` escaped, control characters (NUL, tab, line breaks: a blank line ends a paragraph
    inside a tabular) as spaces, and a leading `*` braced so it is not read as `\*`.

    >>> latex_escape("taxi-leaveAt_100% & #1")
    'taxi-leaveAt\\_100\\% \\& \\#1'
    >>> latex_escape("*a<b>|[c]\n\n")
    '{*}a\\textless{}b\\textgreater{}\\textbar{}{[}c{]}  '
    """
    escaped = "".join(_LATEX_SPECIAL.get(ch, " " if unicodedata.category(ch) == "Cc" else ch) for ch in str(text))
    return "{*}" + escaped[1:] if escaped.startswith("*") else escaped


def latex_label(text: str) -> str:
    r"""A `\label` key: characters other than letters, digits and `: . _ / -` become `-`.

    >>> latex_label("tab:leader board}")
    'tab:leader-board-'
    """
    return _LABEL_UNSAFE.sub("-", text)


def _is_number(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def _fmt_number(value: Any, digits: int, na_rep: str = "–") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)) or pd.isna(value):
        return na_rep
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    number = float(value)
    return f"{int(number):,}" if number.is_integer() and abs(number) >= 10 else f"{number:.{digits}f}"


@dataclass(frozen=True)
class _Cells:
    header: list[str]
    rows: list[list[str]]
    bold: list[list[bool]]
    numeric: list[bool]
    note: str = ""  # said under the table: how best values were picked when runs are not all comparable


def _cells(
    frame: pd.DataFrame,
    *,
    best: Sequence[str] | None,
    intervals: Mapping[str, tuple[str, str]] | None,
    lower_better: Sequence[str],
    digits: int,
    na_rep: str = "–",
) -> _Cells:
    intervals = dict(intervals or {})
    hidden = {c for pair in intervals.values() for c in pair}
    columns = [c for c in frame.columns if c not in hidden]
    float_columns = [c for c in columns if _is_number(frame[c]) and pd.api.types.is_float_dtype(frame[c])]
    best_columns = set(float_columns if best is None else best)
    rows: list[list[str]] = []
    bold: list[list[bool]] = []
    # Best values only among comparable runs: one winner per group of `views.comparable_groups`.
    groups = comparable_groups(frame).to_numpy()
    winners: dict[tuple[str, str], float] = {}
    for column in best_columns:
        values = pd.to_numeric(frame[column], errors="coerce")
        for group, members in values.groupby(groups, sort=False):
            if members.notna().sum() > 1:
                winners[(group, column)] = float(members.min() if column in lower_better else members.max())
    for group, (_, record) in zip(groups, frame.iterrows(), strict=True):
        row, flags = [], []
        for column in columns:
            value = record[column]
            if _is_number(frame[column]):
                cell = _fmt_number(value, digits, na_rep)
                if column in intervals and not pd.isna(value):
                    low, high = (record[c] for c in intervals[column])
                    cell += f" [{_fmt_number(low, digits, na_rep)}, {_fmt_number(high, digits, na_rep)}]"
            else:
                cell = "" if pd.isna(value) else str(value)
            row.append(cell)
            winner = winners.get((group, column))
            flags.append(winner is not None and not pd.isna(value) and round(float(value), 12) == round(winner, 12))
        rows.append(row)
        bold.append(flags)
    distinct = list(dict.fromkeys(groups))
    note = ""
    if best_columns and len(distinct) > 1:
        note = (
            "Bold: the best value of each column among comparable runs only (same dataset, split, convention "
            f"and history mode), one per group: {'; '.join(distinct)}."
        )
    return _Cells([str(c) for c in columns], rows, bold, [_is_number(frame[c]) for c in columns], note)


def _latex(cells: _Cells, caption: str | None, label: str | None) -> str:
    def cell(text: str, strong: bool, numeric: bool) -> str:
        if numeric and " [" in text:
            value, _, rest = text.partition(" [")
            shown = latex_escape(value)
            inner = latex_escape(rest[:-1] if rest.endswith("]") else rest)  # our own "[lo, hi]" around it
            return (rf"\textbf{{{shown}}}" if strong else shown) + r" {\footnotesize[" + inner + "]}"
        shown = latex_escape(text)
        return rf"\textbf{{{shown}}}" if strong else shown

    align = "".join("r" if n else "l" for n in cells.numeric)
    lines = [
        "% Generated by `python -m analysis report`; needs \\usepackage{booktabs}.",
        "% Non-Latin text (e.g. Chinese) is UTF-8: compile with XeLaTeX/LuaLaTeX and \\usepackage{xeCJK}.",
        "% Best value per metric column in bold (within each group of comparable runs); [low, high] is a 95% "
        "cluster-bootstrap interval.",
        "\\begin{table}[t]",
        "\\centering",
    ]
    if caption:
        lines.append(f"\\caption{{{latex_escape(caption)}}}")
    if label:
        lines.append(f"\\label{{{latex_label(label)}}}")
    lines += [f"\\begin{{tabular}}{{{align}}}", "\\toprule"]
    lines.append(" & ".join(latex_escape(h) for h in cells.header) + r" \\")
    lines.append("\\midrule")
    for row, flags in zip(cells.rows, cells.bold, strict=True):
        parts = [cell(t, b, n) for t, b, n in zip(row, flags, cells.numeric, strict=True)]
        lines.append(" & ".join(parts) + r" \\")
    lines += ["\\bottomrule", "\\end{tabular}"]
    if cells.note:
        lines.append(f"\\par\\smallskip{{\\footnotesize {latex_escape(cells.note)}}}")
    lines += ["\\end{table}", ""]
    return "\n".join(lines)


def _markdown(cells: _Cells, caption: str | None) -> str:
    def clean(text: str) -> str:  # text from data stays text: no link, image, HTML or `|` column break
        return markdown_text(text)

    lines = [f"**{clean(caption)}**", ""] if caption else []
    lines.append("| " + " | ".join(clean(h) for h in cells.header) + " |")
    lines.append("| " + " | ".join("---:" if n else ":---" for n in cells.numeric) + " |")
    for row, flags in zip(cells.rows, cells.bold, strict=True):
        shown = []
        for text, strong, numeric in zip(row, flags, cells.numeric, strict=True):
            value, sep, rest = text.partition(" [")
            value, rest = clean(value), (rest if numeric else clean(rest))  # a number's "[lo, hi]" is ours
            shown.append((f"**{value}**" if strong and value else value) + sep + rest)
        lines.append("| " + " | ".join(shown) + " |")
    if cells.note:
        lines += ["", f"_{clean(cells.note)}_"]
    return "\n".join(lines) + "\n"


def table_bytes(
    frame: pd.DataFrame,
    fmt: str,
    *,
    caption: str | None = None,
    label: str | None = None,
    best: Sequence[str] | None = None,
    intervals: Mapping[str, tuple[str, str]] | None = None,
    lower_better: Sequence[str] = (),
    digits: int = 3,
    na_rep: str = "–",
) -> bytes:
    r"""A table file (UTF-8): `fmt` is latex, markdown or csv.

    `best`: metric columns whose best value is bold (default: every float column; `()` for none),
    higher is better unless the column is in `lower_better`. `intervals` maps a column to its
    (low, high) columns, shown as `value [low, high]` (LaTeX, Markdown) and kept as separate columns
    in the CSV, which has every column at full precision. Best values are compared within each group of
    comparable runs only (`views.comparable_groups`: dataset, split, convention, history mode, for the
    columns the frame has), and a note under the table says so when there are several groups. A missing
    value prints as `na_rep`: "–" for an empty slice, "n/a" where a metric's definition does not apply.

    >>> frame = pd.DataFrame({"run": ["a_1", "b"], "jga": [0.5, 0.625], "lo": [0.4, 0.5], "hi": [0.6, 0.7]})
    >>> print(table_bytes(frame, "markdown", intervals={"jga": ("lo", "hi")}).decode())
    | run | jga |
    | :--- | ---: |
    | a_1 | 0.500 [0.400, 0.600] |
    | b | **0.625** [0.500, 0.700] |
    <BLANKLINE>
    """
    if fmt not in TABLE_FORMATS:
        raise ValueError(f"format has to be one of {', '.join(TABLE_FORMATS)}, got {fmt!r}")
    if fmt == "csv":
        return frame_csv(frame).encode("utf-8")
    cells = _cells(frame, best=best, intervals=intervals, lower_better=lower_better, digits=digits, na_rep=na_rep)
    text = _latex(cells, caption, label) if fmt == "latex" else _markdown(cells, caption)
    return text.encode("utf-8")


def pairwise_delta_table(result: Any, *, metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """The report's table of pairwise deltas from an `analysis.compare.Comparison`: one row per pair and
    metric (overall), b − a with its paired interval, the bootstrap p and the Holm-corrected p, and a
    significance mark (`*`: Holm p <= alpha, `n.s.` otherwise); JGA rows also carry McNemar's test on
    turn-level JGA (turns only b / only a got right, its Holm p and mark). `attrs["note"]` says how the
    p-values were corrected (for the caption).
    """
    overall = result.overall()
    if metrics is not None:
        overall = overall[overall["metric"].isin(list(metrics))]
    mcnemar = result.mcnemar.set_index(["a", "b"]) if len(result.mcnemar) else None

    def mcnemar_text(a: str, b: str, metric: str) -> str:
        if metric != "jga" or mcnemar is None or (a, b) not in mcnemar.index:
            return ""
        m = mcnemar.loc[(a, b)]
        mark = "*" if m["significant"] else "n.s."
        return f"only b {int(m['b01'])} / only a {int(m['b10'])} turns, Holm p = {m['p_holm']:.3g} {mark}"

    table = pd.DataFrame(
        {
            "pair (b − a)": overall["b"] + " − " + overall["a"],
            "metric": overall["label"],
            "a": overall["estimate_a"].astype(float),
            "b": overall["estimate_b"].astype(float),
            "Δ": overall["delta"].astype(float),
            "Δ low": overall["low"].astype(float),
            "Δ high": overall["high"].astype(float),
            "p": overall["p_text"].str.replace(r"^p ", "", regex=True),
            "Holm p": overall["p_holm_text"].str.replace(r"^Holm p ", "", regex=True),
            "sig.": np.where(overall["significant"], "*", "n.s."),
            "McNemar (turn JGA)": [
                mcnemar_text(a, b, m) for a, b, m in zip(overall["a"], overall["b"], overall["metric"], strict=True)
            ],
        }
    ).reset_index(drop=True)
    table.attrs["note"] = result.holm_note
    return table
