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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from analysis import registry
from analysis.escaping import markdown_text
from analysis.export import latex as L
from analysis.export.files import TABLE_FORMATS
from analysis.export.latex import latex_text
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

_LABEL_UNSAFE = re.compile(r"[^A-Za-z0-9:._/-]")


def latex_escape(text: object) -> str:
    r"""Text safe anywhere in a LaTeX table (cell, header, caption, note) under pdflatex and XeLaTeX
    (`analysis.export.latex.latex_text`): the ten special characters and `< > | [ ]` escaped, symbols as
    commands (`$\lambda$`, `$-$`, `$\Delta$`), CJK runs in `\dstcjk{}`, control characters (NUL, tab, line
    breaks: a blank line ends a paragraph inside a tabular) as spaces, and a leading `*` braced so it is not
    read as `\*`.

    >>> latex_escape("taxi-leaveAt_100% & #1")
    'taxi-leaveAt\\_100\\% \\& \\#1'
    >>> latex_escape("*a<b>|[c]\n\n")
    '{*}a\\textless{}b\\textgreater{}\\textbar{}{[}c{]}  '
    """
    return latex_text(text)


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


def choose_columns(columns: Sequence[object], chosen: Sequence[str]) -> list[Any]:
    """The `columns` a user chose, in the order chosen, each named by its machine name or its header
    (`header`, case-insensitive); an unknown name is refused with the names there are.

    >>> choose_columns(["run_id", "jga", "slot_f1_micro"], ["run", "JGA"])
    ['run_id', 'jga']
    >>> choose_columns(["run_id", "jga"], ["run", "F1"])
    Traceback (most recent call last):
    ...
    ValueError: no column F1: the table's columns are run, JGA
    """
    by_name: dict[str, Any] = {}
    for column in columns:
        by_name.setdefault(str(column).lower(), column)
        by_name.setdefault(header(column).lower(), column)
    picked = []
    for name in chosen:
        column = by_name.get(str(name).strip().lower())
        if column is None:
            raise ValueError(f"no column {name}: the table's columns are {', '.join(header(c) for c in columns)}")
        picked.append(column)
    return list(dict.fromkeys(picked))


@dataclass(frozen=True)
class _Cells:
    header: list[str]
    rows: list[list[str]]
    bold: list[list[bool]]
    numeric: list[bool]
    note: str = ""  # said under the table: how best values were picked when runs are not all comparable
    # column widths per (type size, stacked): the layout search measures the same cells many times
    measured: dict[tuple[str, bool], tuple[list[float], list[float]]] = field(
        default_factory=dict, compare=False, repr=False
    )


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
    shown: Sequence[str] | None = None,
) -> _Cells:
    intervals = {**found_intervals(list(frame.columns)), **dict(intervals or {})}
    intervals = {k: v for k, v in intervals.items() if k in frame.columns and all(c in frame.columns for c in v)}
    hidden = {c for pair in intervals.values() for c in pair} | set(INTERNAL_COLUMNS)
    columns = [c for c in frame.columns if c not in hidden]
    if shown is not None:
        columns = choose_columns(columns, shown)
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


# How a table is fitted to the page, tried in order until its estimated width fits: the environment
# (`table`: one column, `table*`: both), the type size (never below 7 pt) and whether an interval goes under
# its value (stacked) rather than beside it. A table no layout fits is split into parts of columns.
LAYOUTS = (
    ("table", "", False),
    ("table", "\\small", False),
    ("table", "\\footnotesize", False),
    ("table", "\\small", True),
    ("table", "\\footnotesize", True),
    ("table*", "", False),
    ("table*", "\\small", False),
    ("table*", "\\footnotesize", False),
    ("table*", "\\small", True),
    ("table*", "\\footnotesize", True),
    ("table*", "\\scriptsize", True),
)
_SMALLER = {
    "": "\\small",
    "\\small": "\\footnotesize",
    "\\footnotesize": "\\scriptsize",
    "\\scriptsize": "\\scriptsize",
}
_MARGIN = 0.94  # room for what the estimate misses (kerning, rounding)
_MIN_WRAP_PT = 50.0  # a wrapped text column is never narrower


@dataclass(frozen=True)
class Layout:
    """Where and how a table prints: environment, type size, intervals under their values or not, and the
    text columns set as wrapped paragraphs (`p{width}`: column index, width in points)."""

    env: str
    size: str
    stacked: bool
    wrap: tuple[tuple[int, float], ...] = ()

    def limit_pt(self) -> float:
        width = L.ACL.textwidth_pt if self.env == "table*" else L.ACL.columnwidth_pt
        return width * _MARGIN


def _parts(text: str, numeric: bool) -> tuple[str, str]:
    """A cell as (value, interval text with its brackets or ±), for measuring."""
    value, form, rest = _split_interval(text) if numeric else (text, "", "")
    if form == "[":
        return value, "[" + rest
    if form == "±":
        return value, "±" + rest
    return value, ""


def _words(text: str) -> list[str]:
    """The pieces a line may not be broken inside: split at spaces, after hyphens and in CJK text every
    two characters (CJKutf8 and xeCJK break between CJK characters, but not before closing punctuation:
    two is the safe guess; nor between a CJK character and a Latin letter next to it).

    >>> _words("taxi-leaveAt 餐厅名-名称: 12:30 帮我找CHAO吗")
    ['taxi-', 'leaveAt', '餐厅', '名-', '名称:', '12:30', '帮我', '找CHAO吗']
    """

    def pairs(run: re.Match[str]) -> str:
        chars = run.group()
        return " ".join(chars[at : at + 2] for at in range(0, len(chars), 2))

    spaced = L.CJK_RUN.sub(pairs, text)
    return [piece for word in spaced.split() for piece in re.split(r"(?<=-)", word) if piece]


def column_widths(cells: _Cells, layout: Layout) -> tuple[list[float], list[float]]:
    """Estimated printed width of each column on one line, and of its longest unbreakable piece (points,
    without the space between columns); measured once per type size and stacking."""
    key = (layout.size, layout.stacked)
    if key not in cells.measured:
        cells.measured[key] = _measure(cells, layout)
    return cells.measured[key]


def _measure(cells: _Cells, layout: Layout) -> tuple[list[float], list[float]]:
    size = L.SIZES[layout.size]
    small = L.SIZES[_SMALLER[layout.size]]
    widths = [L.text_width_pt(h, size) for h in cells.header]
    pieces = [max((L.text_width_pt(w, size) for w in _words(h)), default=0.0) for h in cells.header]
    for row, flags in zip(cells.rows, cells.bold, strict=True):
        for at, (text, strong) in enumerate(zip(row, flags, strict=True)):
            value, interval = _parts(text, cells.numeric[at])
            first = L.text_width_pt(value, size, bold=strong)
            second = L.text_width_pt(interval, small)
            if layout.stacked:
                width = max(first, second)
            else:
                width = first + (L.text_width_pt(" ", size) + second if interval else 0)
            widths[at] = max(widths[at], width)
            if cells.numeric[at]:
                pieces[at] = widths[at]
            else:
                longest = max((L.text_width_pt(w, size, bold=strong) for w in _words(value)), default=0.0)
                pieces[at] = max(pieces[at], longest)
    return widths, pieces


def table_width(cells: _Cells, layout: Layout, columns: Sequence[int] | None = None) -> float:
    """Estimated width of the table (or of its `columns`), the space around every column included."""
    widths, _ = column_widths(cells, layout)
    wrapped = dict(layout.wrap)
    chosen = range(len(widths)) if columns is None else columns
    return sum(wrapped.get(at, widths[at]) + 2 * L.TABCOLSEP_PT for at in chosen)


def _wrapped(cells: _Cells, layout: Layout, columns: Sequence[int], *, force: bool = False) -> Layout | None:
    """The layout with its widest text columns wrapped to one width (never narrower than their longest
    unbreakable piece nor `_MIN_WRAP_PT`) so that the table fits; None when no width does. `force`: the
    last resort, text columns wrapped to whatever width fits (a piece wider than it may stick out)."""
    widths, pieces = column_widths(cells, layout)
    text = [at for at in columns if not cells.numeric[at]]
    fixed = sum(widths[at] + 2 * L.TABCOLSEP_PT for at in columns if cells.numeric[at])
    available = layout.limit_pt() - fixed - 2 * L.TABCOLSEP_PT * len(text)

    def shown(at: int, cap: float) -> float:
        return min(widths[at], cap if force else max(pieces[at], _MIN_WRAP_PT, cap))

    if not text or (not force and sum(shown(at, 0.0) for at in text) > available):
        return None
    low, high = 0.0, max(widths[at] for at in text)
    for _ in range(30):  # the widest cap that fits
        middle = (low + high) / 2
        low, high = (middle, high) if sum(shown(at, middle) for at in text) <= available else (low, middle)
    wrap = tuple((at, round(shown(at, low), 1)) for at in text if shown(at, low) < widths[at])
    return Layout(layout.env, layout.size, layout.stacked, wrap)


def fit_layout(cells: _Cells, columns: Sequence[int] | None = None) -> Layout | None:
    """The first of `LAYOUTS` whose estimated width fits its column or page, its long text columns
    wrapped when that makes it fit; None when none does."""
    chosen = list(range(len(cells.header))) if columns is None else list(columns)
    for env, size, stacked in LAYOUTS:
        layout = Layout(env, size, stacked)
        if table_width(cells, layout, chosen) <= layout.limit_pt():
            return layout
        wrapped = _wrapped(cells, layout, chosen)
        if wrapped is not None:
            return wrapped
    return None


def _fits(cells: _Cells, layout: Layout, columns: Sequence[int]) -> Layout | None:
    """`layout` for these columns as it is or with text columns wrapped, when either fits."""
    if table_width(cells, layout, columns) <= layout.limit_pt():
        return layout
    return _wrapped(cells, layout, columns)


def _pack(cells: _Cells, layout: Layout) -> list[list[int]] | None:
    """Columns packed in order into groups that fit `layout`, each with the first (naming) column."""
    groups: list[list[int]] = []
    current = [0]
    for at in range(1, len(cells.header)):
        if len(current) > 1 and _fits(cells, layout, [*current, at]) is None:
            groups.append(current)
            current = [0]
        if _fits(cells, layout, [*current, at]) is None:
            return None
        current.append(at)
    groups.append(current)
    return groups


def split_layout(cells: _Cells) -> tuple[Layout, list[list[int]]] | None:
    """For a table no layout fits whole: the page-wide layout whose packing needs the fewest parts (the
    larger type on a tie), and the column groups; every part is then set in that same type."""
    best: tuple[Layout, list[list[int]]] | None = None
    for env, size, stacked in LAYOUTS:
        if env != "table*":
            continue
        layout = Layout(env, size, stacked)
        groups = _pack(cells, layout)
        if groups is not None and (best is None or len(groups) < len(best[1])):
            best = (layout, groups)
    return best


# Lines of a table float on ACL's page (24.7 cm of text) at 11 pt and below, the caption and rules left room.
PAGE_LINES = {"": 48, "\\small": 52, "\\footnotesize": 58, "\\scriptsize": 64}


def row_lines(cells: _Cells, layout: Layout) -> list[int]:
    """The lines each row takes in `layout`: a wrapped cell as many as its estimated width needs, a
    stacked interval one more."""
    size = L.SIZES[layout.size]
    wrap = dict(layout.wrap)
    counts = []
    for row in cells.rows:
        lines = 1
        for column, text in enumerate(row):
            if column in wrap:
                lines = max(lines, math.ceil(L.text_width_pt(text, size) * 1.15 / wrap[column]))
            elif layout.stacked and cells.numeric[column] and _split_interval(text)[1]:
                lines = max(lines, 2)
        counts.append(lines)
    return counts


def _row_chunks(cells: _Cells, groups: Sequence[Sequence[int]], layouts: Sequence[Layout]) -> list[tuple[int, int]]:
    """Row ranges (start, end) that each fit one page in every column group's layout (a float cannot
    break across pages)."""
    per_group = [row_lines(_select(cells, g), lay) for g, lay in zip(groups, layouts, strict=True)]
    budget = min(PAGE_LINES[lay.size] for lay in layouts)
    chunks, start, used = [], 0, 0
    for at in range(len(cells.rows)):
        lines = max(counts[at] for counts in per_group)
        if used + lines > budget and at > start:
            chunks.append((start, at))
            start, used = at, 0
        used += lines
    chunks.append((start, len(cells.rows)))
    return chunks


def _select(cells: _Cells, columns: Sequence[int]) -> _Cells:
    return _Cells(
        [cells.header[at] for at in columns],
        [[row[at] for at in columns] for row in cells.rows],
        [[flags[at] for at in columns] for flags in cells.bold],
        [cells.numeric[at] for at in columns],
        cells.note,
    )


def _latex(cells: _Cells, caption: str | None, label: str | None, interval_form: str = "brackets") -> str:
    """The table as LaTeX snippets fitted to ACL's page (`fit_layout`): one table, or parts of its columns
    (the first column repeated in each) when no layout fits, each part its own float."""
    caption = caption or "Table."
    label = label or label_from_caption(caption)
    layout = fit_layout(cells)
    split = split_layout(cells) if layout is None and len(cells.header) > 2 else None
    if split is None:
        if layout is None:  # nothing fits, not even in parts: the smallest type, text wrapped as narrow as it takes
            last = Layout(*LAYOUTS[-1])
            layout = _wrapped(cells, last, list(range(len(cells.header))), force=True) or last
        groups, layouts = [list(range(len(cells.header)))], [layout]
    else:
        chosen, groups = split
        layouts = [_fits(_select(cells, g), chosen, list(range(len(g)))) or chosen for g in groups]
    chunks = _row_chunks(cells, groups, layouts)
    n_parts = len(groups) * len(chunks)
    if n_parts == 1:
        return _latex_float(cells, caption, label, interval_form, layouts[0])
    parts: list[str] = []
    total = len(cells.rows)
    for start, end in chunks:
        rows = _Cells(cells.header, cells.rows[start:end], cells.bold[start:end], cells.numeric, cells.note)
        for group, layout_n in zip(groups, layouts, strict=True):
            n = len(parts) + 1
            which = f", rows {start + 1}-{end} of {total}" if len(chunks) > 1 else ""
            shown = f"{caption.rstrip('.')} (part {n} of {n_parts}{which})."
            where = label if n == 1 else f"{label}-part{n}"
            parts.append(_latex_float(_select(rows, group), shown, where, interval_form, layout_n, header=n == 1))
    return "".join(parts)


def _latex_float(
    cells: _Cells, caption: str, label: str, interval_form: str, layout: Layout, *, header: bool = True
) -> str:
    inner = _SMALLER[layout.size]

    def cell(text: str, strong: bool, numeric: bool) -> str:
        value, form, rest = _split_interval(text) if numeric else (text, "", "")
        shown = latex_escape(value)
        shown = rf"\textbf{{{shown}}}" if strong else shown
        if form == "[":
            extra = "{[}" + latex_escape(rest[:-1] if rest.endswith("]") else rest) + "{]}"  # our own "[lo, hi]"
        elif form == "±":
            extra = "$\\pm$" + latex_escape(rest)
        else:
            return shown
        if layout.stacked:
            return "\\begin{tabular}[t]{@{}r@{}}" + shown + " \\\\ {" + inner + " " + extra + "}\\end{tabular}"
        return shown + " {" + inner + " " + extra + "}"

    wrap = dict(layout.wrap)
    align = "".join(f"p{{{wrap[at]:g}pt}}" if at in wrap else ("r" if n else "l") for at, n in enumerate(cells.numeric))
    end = r" \\" if not wrap else r" \tabularnewline"  # \raggedright in a p cell redefines \\

    def ragged(at: int, text: str) -> str:
        return "\\raggedright " + text if at in wrap else text

    shape = "[low, high] is" if interval_form == "brackets" else "$\\pm$ is half the width of"
    texts = " ".join([caption, cells.note, *cells.header, *(t for row in cells.rows for t in row)])
    lines = []
    if header:
        lines += [
            "% Generated by `python -m analysis`; needs \\usepackage{booktabs}. Compiles with pdflatex and XeLaTeX.",
        ]
        if any(any(flags) for flags in cells.bold):
            lines.append("% Best value per metric column in bold (within each group of comparable runs).")
        if any(_split_interval(t)[1] for row in cells.rows for t, n in zip(row, cells.numeric, strict=True) if n):
            lines.append(f"% {shape[0].upper() + shape[1:]} a 95% cluster-bootstrap interval.")
        if L.has_cjk(texts):
            lines.append("% " + L.CJK_NEEDS)
        beyond = L.beyond_pdflatex(texts)
        if beyond:
            lines.append("% Characters pdflatex cannot print (" + " ".join(sorted(beyond)) + "): compile with XeLaTeX.")
        if layout.env == "table*":
            lines.append(
                "% Wider than one column: spans both (table*); --columns / the export's column picker narrow it."
            )
    if L.has_cjk(texts):
        lines.append(L.CJK_PREAMBLE)
    if L.beyond_pdflatex(texts):
        lines.append(L.CHAR_PREAMBLE)
    lines += [
        f"\\begin{{{layout.env}}}[t]",
        "\\centering",
        *([layout.size] if layout.size else []),
        f"\\caption{{{latex_escape(caption)}}}",
        f"\\label{{{latex_label(label)}}}",
        f"\\begin{{tabular}}{{{align}}}",
        "\\toprule",
    ]
    lines.append(" & ".join(ragged(at, latex_escape(h)) for at, h in enumerate(cells.header)) + end)
    lines.append("\\midrule")
    for row, flags in zip(cells.rows, cells.bold, strict=True):
        parts = [ragged(at, cell(t, b, n)) for at, (t, b, n) in enumerate(zip(row, flags, cells.numeric, strict=True))]
        lines.append(" & ".join(parts) + end)
    lines += ["\\bottomrule", "\\end{tabular}"]
    if cells.note:
        lines.append(f"\\par\\smallskip{{\\footnotesize {latex_escape(cells.note)}}}")
    lines += [f"\\end{{{layout.env}}}", ""]
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
    columns: Sequence[str] | None = None,
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
    `columns`: the columns shown, by machine name or header, in that order (default: all but the internal
    ones); best values are still compared over the whole frame's groups of comparable runs. LaTeX fits
    ACL's page (`fit_layout`): one column, both (`table*`), smaller type (never below 8 pt), intervals under
    their values, long text wrapped, or, when nothing fits, parts of the columns.

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
        if columns is not None:  # the chosen columns with their bounds, at full precision
            bounds = {**found_intervals(list(frame.columns)), **dict(intervals or {})}
            keep = choose_columns([c for c in frame.columns if c not in INTERNAL_COLUMNS], columns)
            frame = frame[list(dict.fromkeys(c for k in keep for c in (k, *bounds.get(k, ())) if c in frame.columns))]
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
        shown=columns,
    )
    text = _latex(cells, caption, label, interval_form) if fmt == "latex" else _markdown(cells, caption)
    return text.encode("utf-8")


def _differ(rows: pd.DataFrame) -> list[str]:
    """The support of each delta: the dialogues where the runs differ, of the group's own."""
    return [f"{k:,} of {n:,}" for k, n in zip(rows["n_dialogues_differ"], rows["n_dialogues"], strict=True)]


def _marks(rows: pd.DataFrame) -> np.ndarray:
    """`*` significant after Holm, `n.s.` tested and not, `not tested` below the minimum support."""
    return np.where(rows["significant"], "*", np.where(rows["tested"].astype(bool), "n.s.", "not tested"))


def _delta_table(
    overall: pd.DataFrame, leading: dict[str, Any], trailing: dict[str, Any] | None = None
) -> pd.DataFrame:
    """A table of deltas b − a, one row per pair and metric of `overall` (a comparison's overall rows): the
    `leading` columns naming the pair, the metric, both estimates, the delta and its interval, p, Holm p,
    support and mark (`_differ`, `_marks`), then the `trailing` columns."""
    return pd.DataFrame(
        {
            **leading,
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
            **(trailing or {}),
        }
    ).reset_index(drop=True)


def seed_delta_table(result: Any) -> pd.DataFrame:
    """The report's table of systems compared over their seeds (`analysis.seed_compare.SeedComparison`): one
    row per pair of systems and metric (overall), b − a of the seed means with the hierarchical bootstrap's
    interval, p, Holm p, support and mark; `attrs["note"]` says how (for the caption)."""
    from analysis.seed_compare import METHOD

    overall = result.deltas[result.deltas["scope"] == "overall"]
    table = _delta_table(
        overall,
        {
            "systems (b − a)": overall["b"] + " − " + overall["a"],
            "seeds (a, b)": overall["n_seeds_a"].astype(str) + ", " + overall["n_seeds_b"].astype(str),
        },
    )
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

    table = _delta_table(
        overall,
        {"pair (b − a)": overall["b"] + " − " + overall["a"]},
        {
            "McNemar (turn JGA)": [
                mcnemar_text(a, b, m) for a, b, m in zip(overall["a"], overall["b"], overall["metric"], strict=True)
            ]
        },
    )
    table.attrs["note"] = result.holm_note
    return table
