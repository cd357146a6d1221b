r"""Table files: LaTeX, Markdown and CSV from a frame (`table_bytes`), as the buttons and the report write them.

LaTeX uses booktabs (\toprule, \midrule, \bottomrule), puts the best value of each metric column in
bold (higher is better unless the registry or `lower_better` says otherwise; ties are all bold), comparing
only comparable runs: in a table of runs of several datasets, splits, conventions or history modes
(`views.comparable_groups`, the rule of the Overview's comparability warnings) each group gets its own
best, and a note under the table says so; in a long per-domain (per-slot, per-turn) table each domain is
its own group too. Headers are the registry's labels and plain words (`HEADERS`), never machine names;
internal columns (`INTERNAL_COLUMNS`: alignment warnings, not-applicable reasons, ids) are left out;
bound columns `<m>_low`/`<m>_high` (or `<m> low`/`<m> high`) are folded into the metric's cell, either
as `0.519 [0.500, 0.540]` (`interval_form="brackets"`, the default: a percentile interval need not be
symmetric) or `0.519 ±0.020` (`"pm"`: half the interval's width). Every LaTeX table has a caption and a
`\label` (derived from the caption when not given). Special characters of run and slot names are escaped; Chinese
text is written as UTF-8 as is -- compile with XeLaTeX or LuaLaTeX and `\usepackage{xeCJK}`. Markdown
is a GitHub pipe table with the same cells. CSV keeps every column (intervals as their own columns) at
full precision; its text cells are quoted and those a spreadsheet would evaluate as a formula get a
leading `'` (`analysis.safe_csv`; numbers stay numbers).
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

from analysis import registry
from analysis.escaping import markdown_text
from analysis.export.files import TABLE_FORMATS
from analysis.safe_csv import frame_csv
from analysis.views import comparable_groups

INTERVAL_FORMS = ("brackets", "pm")  # `0.519 [0.507, 0.531]` or `0.519 ±0.012`
# Columns a paper table never shows: alignment diagnostics, reasons said in the caption, internal ids.
INTERNAL_COLUMNS = frozenset(
    {"warnings", "n_warnings", "not_applicable", "tid", "note", "sgd_note", "pred_deltas", "_selected"}
)
# Headers as people read them: the registry's metric labels, then plain words for the usual columns;
# any other machine name loses its underscores.
HEADERS: dict[str, str] = {
    **registry.LABELS,
    "run_id": "run",
    "n_turns": "turns",
    "n_dialogues": "dialogues",
    "n_errors": "errors",
    "slot_name": "slot",
    "turn_index": "turn",
    "dialogue_id": "dialogue",
    "f1": "F1",
    "precision": "precision",
    "recall": "recall",
    "support": "support",
    "share": "share",
    "n": "count",
}
# Columns of a long table that name what a row measures (a domain, a slot, a turn depth): best values
# are compared within each of their values, never across them.
LONG_KEYS = ("domain", "slot", "slot_name", "service", "turn_index", "metric")
_LOWER_BETTER = {m.name for m in registry.METRICS if not m.higher_is_better}
_LOWER_BETTER |= {m.label for m in registry.METRICS if not m.higher_is_better}
_BOUND = re.compile(r"^(?P<base>.+?)(?:_| )(?P<end>low|high)$")

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


def header(column: object) -> str:
    """A column's header as people read it: the registry's label, a plain word, or the name without
    underscores.

    >>> header("slot_f1_micro"), header("n_turns"), header("first_error_turn"), header("JGA low")
    ('Slot F1 (micro)', 'turns', 'first error turn', 'JGA low')
    """
    name = str(column)
    return HEADERS.get(name, name.replace("_", " "))


def found_intervals(columns: Sequence[object]) -> dict[str, tuple[str, str]]:
    """Bound columns of the frame, by the column they bound: `jga_low`/`jga_high` or `JGA low`/`JGA high`.

    >>> found_intervals(["run", "jga", "jga_low", "jga_high", "JGA", "JGA low", "JGA high", "x_low"])
    {'jga': ('jga_low', 'jga_high'), 'JGA': ('JGA low', 'JGA high')}
    """
    names = [str(c) for c in columns]
    present = set(names)
    found: dict[str, tuple[str, str]] = {}
    for name in names:
        match = _BOUND.match(name)
        if match is None or match["end"] != "low" or match["base"] not in present:
            continue
        high = name[: -len("low")] + "high"
        if high in present:
            found[match["base"]] = (name, high)
    return found


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
    interval_form: str = "brackets",
    groups: Sequence[str] | None = None,
) -> _Cells:
    intervals = {**found_intervals(list(frame.columns)), **dict(intervals or {})}
    intervals = {k: v for k, v in intervals.items() if k in frame.columns and all(c in frame.columns for c in v)}
    hidden = {c for pair in intervals.values() for c in pair} | set(INTERNAL_COLUMNS)
    columns = [c for c in frame.columns if c not in hidden]
    float_columns = [c for c in columns if _is_number(frame[c]) and pd.api.types.is_float_dtype(frame[c])]
    best_columns = {c for c in (float_columns if best is None else best) if c in columns}
    lower = set(lower_better) | (_LOWER_BETTER & set(map(str, columns)))
    rows: list[list[str]] = []
    bold: list[list[bool]] = []
    # Best values only among comparable runs: one winner per group of `views.comparable_groups`, and in a
    # long table (a row per run and domain, slot or turn) per domain, slot or turn as well.
    labels = comparable_groups(frame) if groups is None else pd.Series(list(groups), index=frame.index, dtype=str)
    long_keys = [c for c in LONG_KEYS if c in frame.columns and c not in best_columns]
    keys = labels.astype(str)
    for key in long_keys:
        keys = keys + "\x1f" + frame[key].astype(str)
    winners: dict[tuple[str, str], float] = {}
    for column in best_columns:
        values = pd.to_numeric(frame[column], errors="coerce")
        for key, members in values.groupby(keys.to_numpy(), sort=False):
            if members.notna().sum() > 1:
                winners[(key, column)] = float(members.min() if column in lower else members.max())
    for key, (_, record) in zip(keys.to_numpy(), frame.iterrows(), strict=True):
        row, flags = [], []
        for column in columns:
            value = record[column]
            if _is_number(frame[column]):
                cell = _fmt_number(value, digits, na_rep)
                if column in intervals and not pd.isna(value):
                    low, high = (record[c] for c in intervals[column])
                    cell += _interval_text(low, high, digits, na_rep, interval_form)
            else:
                cell = "" if pd.isna(value) else str(value)
            row.append(cell)
            winner = winners.get((key, column))
            flags.append(winner is not None and not pd.isna(value) and round(float(value), 12) == round(winner, 12))
        rows.append(row)
        bold.append(flags)
    distinct = list(dict.fromkeys(labels))
    note = ""
    if best_columns and len(distinct) > 1:
        note = (
            "Bold: the best value of each column among comparable runs only (same dataset, split, convention "
            f"and history mode), one per group: {'; '.join(distinct)}."
        )
    if best_columns and long_keys and any(winners):
        per = " and ".join(header(k) for k in long_keys)
        note = " ".join(filter(None, [note, f"Bold: the best value per {per}."]))
    return _Cells([header(c) for c in columns], rows, bold, [_is_number(frame[c]) for c in columns], note)


def _interval_text(low: Any, high: Any, digits: int, na_rep: str, form: str) -> str:
    """` [low, high]` or ` ±half-width` after a value (empty when a bound is missing in the ± form)."""
    if form == "pm":
        if pd.isna(low) or pd.isna(high):
            return ""
        return f" ±{(float(high) - float(low)) / 2:.{digits}f}"
    return f" [{_fmt_number(low, digits, na_rep)}, {_fmt_number(high, digits, na_rep)}]"


def caption_from_name(name: str) -> str:
    """A table's caption from its name (the dashboard's tables have a name, not a caption).

    >>> caption_from_name("per-domain JGA"), caption_from_name("")
    ('Per-domain JGA.', 'Table.')
    """
    text = " ".join(str(name).split()).rstrip(".")
    return (text[:1].upper() + text[1:] + ".") if text else "Table."


def label_from_caption(caption: str) -> str:
    r"""A `\label` key from a caption: `tab:` and its first words, lower case, joined by `-`.

    >>> label_from_caption("Per-domain JGA (95% intervals).")
    'tab:per-domain-jga-95-intervals'
    """
    slug = re.sub(r"[^a-z0-9]+", "-", str(caption).lower()).strip("-")[:48].rstrip("-")
    return f"tab:{slug or 'table'}"


def _split_interval(text: str) -> tuple[str, str, str]:
    """A numeric cell as (value, form, rest): form is "[" for ` [lo, hi]`, "±" for ` ±h`, "" for none."""
    for sep, form in ((" [", "["), (" ±", "±")):
        if sep in text:
            value, _, rest = text.partition(sep)
            return value, form, rest
    return text, "", ""


def _latex(cells: _Cells, caption: str | None, label: str | None, interval_form: str = "brackets") -> str:
    def cell(text: str, strong: bool, numeric: bool) -> str:
        value, form, rest = _split_interval(text) if numeric else (text, "", "")
        shown = latex_escape(value)
        shown = rf"\textbf{{{shown}}}" if strong else shown
        if form == "[":
            inner = latex_escape(rest[:-1] if rest.endswith("]") else rest)  # our own "[lo, hi]" around it
            return shown + r" {\footnotesize[" + inner + "]}"
        if form == "±":
            return shown + r" {\footnotesize$\pm$" + latex_escape(rest) + "}"
        return shown

    caption = caption or "Table."
    label = label or label_from_caption(caption)
    align = "".join("r" if n else "l" for n in cells.numeric)
    shape = "[low, high] is" if interval_form == "brackets" else "$\\pm$ is half the width of"
    lines = [
        "% Generated by `python -m analysis`; needs \\usepackage{booktabs}.",
        "% Non-Latin text (e.g. Chinese) is UTF-8: compile with XeLaTeX/LuaLaTeX and \\usepackage{xeCJK}.",
        f"% Best value per metric column in bold (within each group of comparable runs); {shape} a 95% "
        "cluster-bootstrap interval.",
        "\\begin{table}[t]",
        "\\centering",
        f"\\caption{{{latex_escape(caption)}}}",
        f"\\label{{{latex_label(label)}}}",
        f"\\begin{{tabular}}{{{align}}}",
        "\\toprule",
    ]
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
            value, form, rest = _split_interval(text) if numeric else (text, "", "")
            value = clean(value)  # a number's "[lo, hi]" or "±h" is ours
            sep = {"[": " [", "±": " ±", "": ""}[form]
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
    interval_form: str = "brackets",
    groups: Sequence[str] | None = None,
) -> bytes:
    r"""A table file (UTF-8): `fmt` is latex, markdown or csv.

    `best`: metric columns whose best value is bold (default: every float column; `()` for none),
    higher is better unless the registry says lower is better or the column is in `lower_better`.
    `intervals` maps a column to its (low, high) columns (found by name when not given: `<m>_low` /
    `<m>_high`, `<m> low` / `<m> high`), shown as `value [low, high]` or, with `interval_form="pm"`,
    `value ±half-width` (LaTeX, Markdown) and kept as separate columns in the CSV, which has every
    column at full precision. LaTeX and Markdown leave out `INTERNAL_COLUMNS` and show `header`s; a
    LaTeX table always has a caption (default "Table.") and a label (default from the caption).
    `groups`: each row's group of comparable runs, for a table without the columns that say it (the
    dashboard passes its runs' metadata); default `views.comparable_groups(frame)`. Best values are compared within each group of
    comparable runs only (`views.comparable_groups`: dataset, split, convention, history mode, for the
    columns the frame has), and a note under the table says so when there are several groups. A missing
    value prints as `na_rep`: "–" for an empty slice, "n/a" where a metric's definition does not apply.

    >>> frame = pd.DataFrame({"run": ["a_1", "b"], "jga": [0.5, 0.625], "lo": [0.4, 0.5], "hi": [0.6, 0.7]})
    >>> print(table_bytes(frame, "markdown", intervals={"jga": ("lo", "hi")}).decode())
    | run | JGA |
    | :--- | ---: |
    | a_1 | 0.500 [0.400, 0.600] |
    | b | **0.625** [0.500, 0.700] |
    <BLANKLINE>
    >>> print(table_bytes(frame, "markdown", intervals={"jga": ("lo", "hi")}, interval_form="pm").decode())
    | run | JGA |
    | :--- | ---: |
    | a_1 | 0.500 ±0.100 |
    | b | **0.625** ±0.100 |
    <BLANKLINE>
    """
    if fmt not in TABLE_FORMATS:
        raise ValueError(f"format has to be one of {', '.join(TABLE_FORMATS)}, got {fmt!r}")
    if interval_form not in INTERVAL_FORMS:
        raise ValueError(f"interval_form has to be one of {', '.join(INTERVAL_FORMS)}, got {interval_form!r}")
    if fmt == "csv":
        return frame_csv(frame).encode("utf-8")
    cells = _cells(
        frame,
        best=best,
        intervals=intervals,
        lower_better=lower_better,
        digits=digits,
        na_rep=na_rep,
        interval_form=interval_form,
        groups=groups,
    )
    text = _latex(cells, caption, label, interval_form) if fmt == "latex" else _markdown(cells, caption)
    return text.encode("utf-8")


def _differ(rows: pd.DataFrame) -> list[str]:
    """The support of each delta: the dialogues where the runs differ, of the group's own."""
    return [f"{k:,} of {n:,}" for k, n in zip(rows["n_dialogues_differ"], rows["n_dialogues"], strict=True)]


def _marks(rows: pd.DataFrame) -> np.ndarray:
    """`*` significant after Holm, `n.s.` tested and not, `not tested` below the minimum support."""
    return np.where(rows["significant"], "*", np.where(rows["tested"].astype(bool), "n.s.", "not tested"))


def seed_delta_table(result: Any) -> pd.DataFrame:
    """The report's table of systems compared over their seeds (`analysis.seed_compare.SeedComparison`): one
    row per pair of systems and metric (overall), b − a of the seed means with the hierarchical bootstrap's
    interval, p, Holm p, support and mark; `attrs["note"]` says how (for the caption)."""
    from analysis.seed_compare import METHOD

    overall = result.deltas[result.deltas["scope"] == "overall"]
    table = pd.DataFrame(
        {
            "systems (b − a)": overall["b"] + " − " + overall["a"],
            "seeds (a, b)": overall["n_seeds_a"].astype(str) + ", " + overall["n_seeds_b"].astype(str),
            "metric": overall["label"],
            "a": overall["estimate_a"].astype(float),
            "b": overall["estimate_b"].astype(float),
            "Δ": overall["delta"].astype(float),
            "Δ low": overall["low"].astype(float),
            "Δ high": overall["high"].astype(float),
            "p": overall["p_text"].str.replace(r"^p ", "", regex=True),
            "Holm p": overall["p_holm_text"].str.replace(r"^Holm p ", "", regex=True),
            "dialogues differ": _differ(overall),
            "sig.": _marks(overall),
        }
    ).reset_index(drop=True)
    table.attrs["note"] = (
        f"{METHOD}; Holm-corrected over the pairs of each metric; a system of one seed is resampled over dialogues only."
    )
    return table


def pairwise_delta_table(result: Any, *, metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """The report's table of pairwise deltas from an `analysis.compare.Comparison`: one row per pair and
    metric (overall), b − a with its paired interval, the bootstrap p and the Holm-corrected p, the support
    (dialogues where the runs differ) and a significance mark (`*`: Holm p <= alpha, `n.s.` otherwise, `not
    tested` below the minimum support); JGA rows also carry McNemar's test on
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
            "dialogues differ": _differ(overall),
            "sig.": _marks(overall),
            "McNemar (turn JGA)": [
                mcnemar_text(a, b, m) for a, b, m in zip(overall["a"], overall["b"], overall["metric"], strict=True)
            ],
        }
    ).reset_index(drop=True)
    table.attrs["note"] = result.holm_note
    return table
