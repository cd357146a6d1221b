"""The file kinds of an export: figure and table formats, their extensions and MIME types, safe names.

Shared by `analysis.export.figures`, `analysis.export.tables`, the report and the dashboard's download
buttons; imports nothing heavy.
"""

from __future__ import annotations

import re

FIGURE_FORMATS = ("pdf", "svg", "png")
TABLE_FORMATS = ("latex", "markdown", "csv")
EXTENSIONS = {"pdf": "pdf", "svg": "svg", "png": "png", "latex": "tex", "markdown": "md", "csv": "csv"}
MIME_TYPES = {
    "pdf": "application/pdf",
    "svg": "image/svg+xml",
    "png": "image/png",
    "latex": "application/x-tex",
    "markdown": "text/markdown",
    "csv": "text/csv",
}


def file_name(name: str, fmt: str) -> str:
    """A safe file name for a download: `name` with runs of unsafe characters as `-`, plus the extension.

    >>> file_name("per-slot F1 simulated-A/mwz", "latex")
    'per-slot-F1-simulated-A-mwz.tex'
    """
    stem = re.sub(r"[^\w.\-]+", "-", name, flags=re.UNICODE).strip("-.") or "figure"
    return f"{stem}.{EXTENSIONS[fmt]}"
