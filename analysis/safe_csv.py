"""CSV files safe to open in a spreadsheet: every CSV the project writes goes through `frame_csv`.

A text cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return is read by Excel,
LibreOffice and Google Sheets as a formula (CSV injection), so it is neutralised as OWASP recommends:
a single quote `'` is put in front (the spreadsheet shows the text, not a formula) and every text cell
is written inside double quotes (embedded quotes doubled), so no delimiter inside a cell can start a
new one.

Numbers are not text: a column of numbers (int, float, bool), and a number inside a text column, is
written bare and unchanged, so a negative delta the project computed (`-0.5`) stays the number -0.5.
Only text can come from data (run, slot and value names, reviewers' comments), and only text is
neutralised: the string `"-0.5"` in a text column becomes `'-0.5` (still readable, never evaluated).

A text that already starts with quotes followed by a trigger (`'=x`) gets one more quote, so the
rule can be undone exactly (`restore_cell`): importing an exported CSV gives back what was exported.
"""

from __future__ import annotations

import csv
import io
import numbers
from pathlib import Path

import pandas as pd

FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def _needs_quote(text: str) -> bool:
    rest = text.lstrip("'")
    return rest[:1] in FORMULA_TRIGGERS and rest != ""


def neutralise_cell(value: object) -> object:
    """A text cell a spreadsheet will not evaluate; numbers and missing values unchanged.

    >>> neutralise_cell("=HYPERLINK(\\"http://x\\")"), neutralise_cell("-0.5"), neutralise_cell(-0.5)
    ('\\'=HYPERLINK("http://x")', "'-0.5", -0.5)
    >>> neutralise_cell("'=1"), neutralise_cell("it's fine")
    ("''=1", "it's fine")
    """
    if value is None or isinstance(value, numbers.Number):
        return value
    text = str(value)
    return "'" + text if _needs_quote(text) else text


def restore_cell(text: str) -> str:
    """The text `neutralise_cell` was given (for importing a CSV the project wrote).

    >>> all(restore_cell(neutralise_cell(t)) == t for t in ["=1", "'=1", "''-x", "'plain", "a", ""])
    True
    """
    if text.startswith("'") and _needs_quote(text[1:]):
        return text[1:]
    return text


def neutralise_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy whose text cells and column names are neutralised; numeric columns untouched."""
    out = frame.copy()
    for column in out.columns:
        series = out[column]
        if pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
            continue
        out[column] = series.astype(object).map(lambda v: None if _missing(v) else neutralise_cell(v))
    out.columns = [neutralise_cell(c) if isinstance(c, str) else c for c in out.columns]
    return out


def _missing(value: object) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # a tuple or list is a value, not missing
        return False


def frame_csv(frame: pd.DataFrame, path: str | Path | None = None, *, columns: list[str] | None = None) -> str:
    """The frame as CSV text (UTF-8, `\\n` line ends, no index), neutralised; written to `path` if given.

    >>> print(frame_csv(pd.DataFrame({"run": ["=cmd|' /C calc'!A0", "b"], "delta": [-0.5, 0.25]})), end="")
    "run","delta"
    "'=cmd|' /C calc'!A0",-0.5
    "b",0.25
    """
    if columns is not None:
        frame = frame[columns]
    buffer = io.StringIO()
    neutralise_frame(frame).to_csv(buffer, index=False, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC)
    text = buffer.getvalue()
    if path is not None:
        Path(path).write_text(text, encoding="utf-8", newline="")
    return text
