"""Paper-ready files: figures and tables as files, and the report of a whole workspace.

The package is split by stage:

- `analysis.export.files`: formats, extensions, MIME types, safe file names;
- `analysis.export.style`: paper and slides presets, `style_figure`;
- `analysis.export.figures`: PDF, SVG and PNG through kaleido and Chromium (`figure_bytes`, `write_figures`);
- `analysis.export.fonts`: the font subsets embedded in SVG files (fontTools);
- `analysis.export.tables`: LaTeX, Markdown and CSV tables (`table_bytes`, its CSV through `analysis.safe_csv`);
- `analysis.export.report`: the report of a whole workspace (`python -m analysis report`).

The names of `__all__` are importable from the package itself; each is loaded from its module on first
use, so `analysis.export.tables` does not load plotly or the figure code, and nothing here imports
kaleido or starts a browser. Safe CSV cells (a spreadsheet never runs them as formulas) are
`analysis.safe_csv`, below every stage: the annotation store writes its CSV through it too.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from analysis.export.browser import BATCH_TABS, INSTALL_HINT, ExportUnavailableError, browser_path, check_export
    from analysis.export.figures import (
        export_session,
        figure_bytes,
        finish_svg,
        write_figures,
    )
    from analysis.export.files import EXTENSIONS, FIGURE_FORMATS, MIME_TYPES, TABLE_FORMATS, file_name
    from analysis.export.style import DPI, STYLES, WIDTHS, Preset, preset, style_figure
    from analysis.export.tables import latex_escape, latex_label, table_bytes

_HOMES = {
    "files": ("EXTENSIONS", "FIGURE_FORMATS", "MIME_TYPES", "TABLE_FORMATS", "file_name"),
    "style": ("DPI", "STYLES", "WIDTHS", "Preset", "preset", "style_figure"),
    "browser": ("BATCH_TABS", "INSTALL_HINT", "ExportUnavailableError", "browser_path", "check_export"),
    "figures": (
        "export_session",
        "figure_bytes",
        "finish_svg",
        "write_figures",
    ),
    "fonts": (),
    "tables": ("latex_escape", "latex_label", "table_bytes"),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "BATCH_TABS",
    "DPI",
    "EXTENSIONS",
    "FIGURE_FORMATS",
    "INSTALL_HINT",
    "MIME_TYPES",
    "STYLES",
    "TABLE_FORMATS",
    "WIDTHS",
    "ExportUnavailableError",
    "Preset",
    "browser_path",
    "check_export",
    "export_session",
    "figure_bytes",
    "file_name",
    "finish_svg",
    "latex_escape",
    "latex_label",
    "preset",
    "style_figure",
    "table_bytes",
    "write_figures",
]


def __getattr__(name: str) -> Any:
    """Load a public name, or a submodule, from its module on first use.

    >>> sorted(_HOME) == sorted(__all__)
    True
    >>> import analysis.export as export
    >>> export.file_name("JGA by turn", "pdf"), export.tables.__name__
    ('JGA-by-turn.pdf', 'analysis.export.tables')
    """
    if name in _HOMES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _HOME:
        value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
