"""Paper-ready files from dashboard figures and frames: PDF, SVG and PNG figures, LaTeX/Markdown/CSV tables.

The dashboard's download buttons and `python -m analysis report` call the same functions, so a
downloaded file is byte-for-byte what the report writes (`figure_bytes`, `table_bytes`).

Figures
    `style_figure(fig, style=, width=)` restyles a copy of a dashboard figure for print: the preset's
    physical width (single column 3.3 in, double column 7.0 in; 96 layout px per inch), font sizes in
    points readable at that width, Liberation Sans (fonts-liberation) with Noto Sans CJK SC
    (fonts-noto-cjk) for Chinese, the colour-blind-safe Okabe-Ito colourway for traces without a
    colour of their own (run colours come from `figures.run_colours`), and, in paper style, no title
    inside the figure (captions belong to LaTeX). Rendering goes through kaleido and the system
    Chromium: PDF and SVG at scale 1 (so the PDF page is exactly the preset's width), PNG at
    300/96 so that pixels = inches x 300, with a pHYs chunk declaring 300 dpi.

Fonts
    PDF: Chromium's PDF backend (Skia) embeds every font it uses as a subset (Liberation Sans as a
    TrueType CID font, CJK glyphs as Type 3 vector glyphs), so the PDF is self-contained vector.
    SVG: text stays text (selectable, searchable, editable); the SVG gets a `<style>` element with an
    `@font-face` rule whose source is a `data:font/ttf;base64,` subset of Liberation Sans (regular,
    and bold when used) holding only the glyphs the figure's text uses (unused glyph outlines are
    emptied, glyph ids, metrics and kerning kept), about 30-40 kB. Characters outside Liberation Sans
    (Chinese, Korean) are embedded too: a second `@font-face` holds a subset of Noto Sans CJK SC
    (fonts-noto-cjk, a CFF font, subset with fontTools) with just the CJK characters drawn, so the SVG
    renders the same on a machine without that font.

Tables
    `table_bytes(frame, "latex" | "markdown" | "csv", ...)`. LaTeX uses booktabs (\\toprule, \\midrule,
    \\bottomrule), puts the best value of each metric column in bold (higher is better unless the
    column is in `lower_better`; ties are all bold), comparing only comparable runs: in a table of runs
    of several datasets, splits, conventions or history modes (`views.comparable_groups`, the rule of
    the Overview's comparability warnings) each group gets its own best, and a note under the table says
    so. It shows an interval as `0.519 [0.500, 0.540]`
    (a percentile interval is not symmetric, so no +/-). Special characters of run and slot names are
    escaped; Chinese text is written as UTF-8 as is -- compile with XeLaTeX or LuaLaTeX and
    `\\usepackage{xeCJK}`. Markdown is a GitHub pipe table with the same cells. CSV keeps every column
    (intervals as their own columns) at full precision; its text cells are quoted and those a spreadsheet
    would evaluate as a formula get a leading `'` (`analysis.export.safe_csv`; numbers stay numbers).
"""

from __future__ import annotations

import base64
import contextlib
import io
import math
import re
import struct
import threading
import unicodedata
import xml.etree.ElementTree as ET
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis.escaping import markdown_text
from analysis.export.safe_csv import frame_csv
from analysis.figures import OKABE_ITO
from analysis.views import comparable_groups

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
STYLES = ("paper", "slides")
WIDTHS = ("single", "double")
PX_PER_IN = 96.0  # plotly layout pixels are CSS pixels
DPI = 300
PX_PER_PT = PX_PER_IN / 72
FONT_FAMILY = "Liberation Sans, Noto Sans CJK SC, DejaVu Sans, sans-serif"
INSTALL_HINT = (
    "figure export needs Chromium and the fonts: `apt-get install chromium fonts-liberation fonts-noto-cjk` "
    "(`make test` and `make run` install them via scripts/system-deps.sh)"
)
FONT_FILES = {
    "regular": (
        "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
        "/usr/share/fonts/truetype/liberation2/LiberationSans-Regular.ttf",
    ),
    "bold": (
        "/usr/share/fonts/truetype/liberation/LiberationSans-Bold.ttf",
        "/usr/share/fonts/truetype/liberation2/LiberationSans-Bold.ttf",
    ),
}


class ExportUnavailable(RuntimeError):
    """Figure export cannot run here (no Chromium); the message says how to install it."""


@dataclass(frozen=True)
class Preset:
    """One style x width preset: physical size, font sizes in points, margins in layout pixels."""

    style: str
    width: str
    width_in: float
    height_in: float
    font_pt: float
    tick_pt: float
    legend_pt: float
    row_pt: float  # height of one category row of a horizontal bar chart
    margin: tuple[int, int, int, int]  # l, r, t, b in layout px (automargin grows them for labels)
    keep_title: bool
    line_width: float

    @property
    def width_px(self) -> float:
        return round(self.width_in * PX_PER_IN, 3)

    @property
    def png_scale(self) -> float:
        return DPI / PX_PER_IN

    def png_width(self) -> int:
        """Width of the PNG in pixels: inches x 300.

        >>> PRESETS["paper", "single"].png_width(), PRESETS["paper", "double"].png_width()
        (990, 2100)
        """
        return round(self.width_in * DPI)


PRESETS: dict[tuple[str, str], Preset] = {
    ("paper", "single"): Preset("paper", "single", 3.3, 2.4, 8, 7, 7, 9.5, (4, 6, 4, 4), False, 1.5),
    ("paper", "double"): Preset("paper", "double", 7.0, 2.9, 9, 8, 8, 10.5, (4, 8, 4, 4), False, 1.75),
    ("slides", "single"): Preset("slides", "single", 3.3, 2.8, 10, 9, 9, 12.5, (4, 6, 30, 4), True, 2.0),
    ("slides", "double"): Preset("slides", "double", 7.0, 4.2, 14, 12, 12, 17, (6, 10, 50, 6), True, 2.5),
}


def preset(style: str = "paper", width: str = "single") -> Preset:
    """The preset for a style and width; unknown names are refused with the allowed ones."""
    if style not in STYLES:
        raise ValueError(f"style has to be one of {', '.join(STYLES)}, got {style!r}")
    if width not in WIDTHS:
        raise ValueError(f"width has to be one of {', '.join(WIDTHS)}, got {width!r}")
    return PRESETS[style, width]


# --- styling -------------------------------------------------------------------------------------


def _category_rows(fig: go.Figure) -> int:
    """Rows a figure needs vertically: categories of horizontal bars (per subplot row), else 0."""
    rows = 0
    for trace in fig.data:
        if getattr(trace, "type", "") == "bar" and getattr(trace, "orientation", None) == "h" and trace.y is not None:
            rows = max(rows, len({str(v) for v in trace.y}))
    return rows


def _x_categories(fig: go.Figure) -> list[str]:
    """Category labels along x of vertical bar charts (empty for numeric axes)."""
    labels: dict[str, None] = {}
    for trace in fig.data:
        if getattr(trace, "type", "") != "bar" or getattr(trace, "orientation", None) == "h" or trace.x is None:
            continue
        values = list(trace.x)
        if values and all(isinstance(v, str) for v in values):
            labels.update(dict.fromkeys(values))
    return list(labels)


def _subplot_rows(fig: go.Figure) -> int:
    return sum(1 for key in fig.layout.to_plotly_json() if re.fullmatch(r"yaxis\d*", key)) or 1


def _legend_entries(fig: go.Figure) -> list[str]:
    """Names the legend shows (one per legend group), in trace order."""
    if fig.layout.showlegend is False:
        return []
    names: dict[str, None] = {}
    groups: set[str] = set()
    shown = [t for t in fig.data if t.showlegend is not False and t.name]
    if len(shown) < 2 and fig.layout.showlegend is not True:
        return []  # plotly hides the legend of a single trace
    for trace in shown:
        if trace.legendgroup:
            if trace.legendgroup in groups:
                continue
            groups.add(trace.legendgroup)
        names[str(trace.name)] = None
    return list(names)


def _legend(fig: go.Figure, spec: Preset) -> tuple[dict[str, Any], float]:
    """Legend layout above the plot, in as many columns as the longest entry allows, and its height."""
    entries = _legend_entries(fig)
    legend_px = spec.legend_pt * PX_PER_PT
    layout: dict[str, Any] = {
        "font": {"size": round(legend_px, 2)},
        "orientation": "h",
        "yanchor": "bottom",
        "y": 1.0,
        "xanchor": "left",
        "x": 0,
        "title": {"font": {"size": round(legend_px, 2)}},
        "itemwidth": 30,
        "tracegroupgap": 0,
    }
    if not entries:
        return layout, 0.0
    longest = max(len(e) for e in entries) * 0.55 * legend_px + 40  # symbol and gap: about 40 px
    columns = max(1, min(len(entries), int(spec.width_px * 0.95 // longest)))
    if columns > 1:
        layout |= {"entrywidth": int(spec.width_px * 0.95 // columns) - 40, "entrywidthmode": "pixels"}
    rows = math.ceil(len(entries) / columns)
    return layout, rows * (legend_px * 1.3 + 6) + 4


def _height_px(fig: go.Figure, spec: Preset, legend_height: float) -> float:
    base = spec.height_in * PX_PER_IN
    rows = _category_rows(fig)
    if rows:
        base = max(base * 0.6, rows * spec.row_pt * PX_PER_PT + 3 * spec.font_pt * PX_PER_PT)
    panels = _subplot_rows(fig)
    if panels > 1:
        base = max(base, panels * 1.2 * PX_PER_IN)
    return float(min(base + legend_height, 9.0 * PX_PER_IN))


def style_figure(fig: go.Figure, *, style: str = "paper", width: str = "single") -> go.Figure:
    """A restyled copy of `fig` for print or slides (the input is left as it is).

    >>> f = style_figure(go.Figure(go.Bar(x=[1], y=[2]), layout={"title": {"text": "T"}}))
    >>> f.layout.width, f.layout.title.text, f.layout.font.size
    (316.8, None, 10.67)
    """
    spec = preset(style, width)
    out = go.Figure(fig)
    font_px = round(spec.font_pt * PX_PER_PT, 2)
    tick_px = round(spec.tick_pt * PX_PER_PT, 2)
    left, right, top, bottom = spec.margin
    legend, legend_height = _legend(fig, spec)
    out.update_layout(
        template="simple_white",
        colorway=list(OKABE_ITO),
        font={"family": FONT_FAMILY, "size": font_px, "color": "#000000"},
        width=spec.width_px,
        height=_height_px(fig, spec, legend_height),
        autosize=False,
        margin={"l": left, "r": right, "t": top, "b": bottom, "pad": 0, "autoexpand": True},
        legend=legend,
        paper_bgcolor="#ffffff",
        plot_bgcolor="#ffffff",
    )
    if spec.keep_title and out.layout.title.text:
        out.update_layout(title={"font": {"size": round(font_px * 1.15, 2)}, "x": 0, "xanchor": "left"})
    else:
        out.update_layout(title={"text": None, "subtitle": {"text": None}})
    axis = {
        "tickfont": {"size": tick_px},
        "title": {"font": {"size": font_px}, "standoff": 2},
        "automargin": True,
        "showline": True,
        "linecolor": "#000000",
        "linewidth": 0.75,
        "ticks": "outside",
        "ticklen": 3,
        "tickwidth": 0.75,
        "showgrid": True,
        "gridcolor": "#e5e5e5",
        "gridwidth": 0.5,
    }
    out.update_xaxes(**axis)
    out.update_yaxes(**axis)
    labels = _x_categories(fig)
    if labels and len(labels) * max(len(v) for v in labels) * 0.55 * tick_px > spec.width_px * 0.9:
        out.update_xaxes(tickangle=-90)  # long category labels read better upright than overlapping
    for annotation in out.layout.annotations:
        annotation.font.size = font_px
    for trace in out.data:
        kind = getattr(trace, "type", "")
        if kind == "scatter" and trace.mode and "lines" in trace.mode:
            trace.line.width = spec.line_width
            trace.marker.size = 2.5 * spec.line_width
        if kind == "bar":
            trace.marker.line = {"width": 0}
            if trace.error_y is not None and trace.error_y.visible:
                trace.error_y.thickness = 0.75
                trace.error_y.width = 2
    return out


# --- rendering -----------------------------------------------------------------------------------

_LOCK = threading.RLock()
_SESSION: dict[str, int] = {"depth": 0}


def browser_path() -> str | None:
    """The Chromium kaleido will use (BROWSER_PATH, then the usual names on PATH), or None."""
    try:
        from choreographer.browsers.chromium import Chromium

        return Chromium.find_browser(skip_local=False)
    except Exception:  # any failure to look means no usable browser
        return None


def check_export() -> str:
    """The browser path, or `ExportUnavailable` with the install hint."""
    found = browser_path()
    if not found:
        raise ExportUnavailable(f"no Chromium found: {INSTALL_HINT}")
    return found


def _server_running() -> bool:
    import kaleido

    server = getattr(kaleido, "_global_server", None)
    return bool(server is not None and server.is_running())


@contextlib.contextmanager
def export_session() -> Iterator[None]:
    """Keep one Chromium (kaleido's sync server) open for every render inside the block.

    Nested sessions share the browser; outside a session each render starts its own (about 2 s).
    """
    check_export()
    import kaleido

    with _LOCK:
        started = False
        if _SESSION["depth"] == 0 and not _server_running():
            kaleido.start_sync_server(mathjax=False, silence_warnings=True)
            started = True
        _SESSION["depth"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _SESSION["depth"] -= 1
            if started:
                kaleido.stop_sync_server(silence_warnings=True)


def _render(fig: go.Figure, fmt: str, spec: Preset) -> bytes:
    import kaleido

    opts = {
        "format": fmt,
        "width": fig.layout.width,
        "height": fig.layout.height,
        "scale": spec.png_scale if fmt == "png" else 1,
    }
    with _LOCK:  # the sync server answers on one queue: one request at a time
        if _server_running():
            data = kaleido.calc_fig_sync(fig.to_dict(), opts=opts)
        else:
            data = kaleido.calc_fig_sync(fig.to_dict(), opts=opts, kopts={"mathjax": False})
    if isinstance(data, BaseException):
        raise data
    return bytes(data)


def figure_bytes(fig: go.Figure, fmt: str, *, style: str = "paper", width: str = "single") -> bytes:
    """The file for one figure: `fmt` is pdf, svg or png (what the dashboard's buttons download).

    Raises `ExportUnavailable` when no Chromium is installed.
    """
    if fmt not in FIGURE_FORMATS:
        raise ValueError(f"format has to be one of {', '.join(FIGURE_FORMATS)}, got {fmt!r}")
    spec = preset(style, width)
    check_export()
    styled = style_figure(fig, style=style, width=width)
    data = _render(styled, fmt, spec)
    if fmt == "svg":
        return finish_svg(data, spec)
    if fmt == "png":
        return _png_with_dpi(data, DPI)
    return data


BATCH_TABS = 2  # browser tabs rendering at once in a batch (the machine has 2 cores)
BATCH_CHUNK = 6  # renders per request to the browser; the progress bar moves per chunk


def _opts(layout: Mapping[str, Any], fmt: str, spec: Preset) -> dict[str, Any]:
    return {
        "format": fmt,
        "width": layout.get("width"),
        "height": layout.get("height"),
        "scale": spec.png_scale if fmt == "png" else 1,
    }


def _finish_file(path: Path, fmt: str, spec: Preset) -> None:
    if fmt == "svg":
        path.write_bytes(finish_svg(path.read_bytes(), spec))
    elif fmt == "png":
        path.write_bytes(_png_with_dpi(path.read_bytes(), DPI))


def write_figures(
    figures: Sequence[tuple[go.Figure, Path]],
    *,
    formats: Sequence[str] = FIGURE_FORMATS,
    style: str = "paper",
    width: str = "single",
    progress: Any = None,
) -> list[Path]:
    """Write every (figure, path without extension) in every format: one browser for the whole batch,
    `BATCH_TABS` tabs rendering side by side; the files equal `figure_bytes`' (same styling and
    post-processing). `progress` is called with each written path. Returns the paths."""
    import kaleido

    for fmt in formats:
        if fmt not in FIGURE_FORMATS:
            raise ValueError(f"format has to be one of {', '.join(FIGURE_FORMATS)}, got {fmt!r}")
    spec = preset(style, width)
    check_export()
    jobs = []
    for fig, stem in figures:
        styled = style_figure(fig, style=style, width=width).to_dict()
        for fmt in formats:
            jobs.append((styled, fmt, stem.with_name(f"{stem.name}.{EXTENSIONS[fmt]}")))
    written: list[Path] = []
    with _LOCK:
        started = not _server_running()
        if started:
            kaleido.start_sync_server(n=BATCH_TABS, mathjax=False, silence_warnings=True)
        try:
            for at in range(0, len(jobs), BATCH_CHUNK):
                chunk = jobs[at : at + BATCH_CHUNK]
                specs = [{"fig": d, "path": str(p), "opts": _opts(d["layout"], fmt, spec)} for d, fmt, p in chunk]
                errors = kaleido.write_fig_from_object_sync(specs)
                if isinstance(errors, BaseException):
                    raise errors
                if errors:
                    raise RuntimeError(f"rendering failed: {errors[0]}")
                for _, fmt, path in chunk:
                    _finish_file(path, fmt, spec)
                    written.append(path)
                    if progress is not None:
                        progress(path)
        finally:
            if started:
                kaleido.stop_sync_server(silence_warnings=True)
    return written


def file_name(name: str, fmt: str) -> str:
    """A safe file name for a download: `name` with runs of unsafe characters as `-`, plus the extension.

    >>> file_name("per-slot F1 simulated-A/mwz", "latex")
    'per-slot-F1-simulated-A-mwz.tex'
    """
    stem = re.sub(r"[^\w.\-]+", "-", name, flags=re.UNICODE).strip("-.") or "figure"
    return f"{stem}.{EXTENSIONS[fmt]}"


# --- PNG -----------------------------------------------------------------------------------------


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def _png_with_dpi(data: bytes, dpi: int) -> bytes:
    """Insert (or replace) the pHYs chunk so viewers and LaTeX read the PNG as `dpi` dots per inch."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return data
    per_metre = round(dpi / 0.0254)
    phys = _png_chunk(b"pHYs", struct.pack(">IIB", per_metre, per_metre, 1))
    out, pos, inserted = [data[:8]], 8, False
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        end = pos + 12 + length
        if kind != b"pHYs":
            out.append(data[pos:end])
        if kind == b"IHDR" and not inserted:
            out.append(phys)
            inserted = True
        pos = end
    return b"".join(out)


def png_info(data: bytes) -> dict[str, Any]:
    """Width and height (IHDR) and declared dpi (pHYs, None when absent) of a PNG."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise ValueError("not a PNG file")
    width, height = struct.unpack(">II", data[16:24])
    dpi = None
    at = data.find(b"pHYs")
    if at > 0:
        x, _, unit = struct.unpack(">IIB", data[at + 4 : at + 13])
        dpi = round(x * 0.0254) if unit == 1 else None
    return {"width": width, "height": height, "dpi": dpi}


# --- SVG: physical size and embedded font subset --------------------------------------------------


class _TrueType:
    """Just enough of a TrueType (glyf) font to map characters to glyphs and drop unused outlines."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        (num_tables,) = struct.unpack(">H", data[4:6])
        self.tables: dict[str, tuple[int, int]] = {}
        for i in range(num_tables):
            tag, _, offset, length = struct.unpack(">4sIII", data[12 + 16 * i : 28 + 16 * i])
            self.tables[tag.decode("latin-1")] = (offset, length)
        if "glyf" not in self.tables or "loca" not in self.tables:
            raise ValueError("not a TrueType-outline font")
        head = self.table("head")
        (self.loca_format,) = struct.unpack(">h", head[50:52])
        (self.num_glyphs,) = struct.unpack(">H", self.table("maxp")[4:6])
        self.cmap = self._cmap()

    def table(self, tag: str) -> bytes:
        offset, length = self.tables[tag]
        return self.data[offset : offset + length]

    def _cmap(self) -> dict[int, int]:
        cmap = self.table("cmap")
        (count,) = struct.unpack(">H", cmap[2:4])
        subtables = {}
        for i in range(count):
            platform, encoding, offset = struct.unpack(">HHI", cmap[4 + 8 * i : 12 + 8 * i])
            subtables[platform, encoding] = offset
        mapping: dict[int, int] = {}
        for key in ((3, 1), (0, 3), (3, 10), (0, 4)):
            if key not in subtables:
                continue
            offset = subtables[key]
            (fmt,) = struct.unpack(">H", cmap[offset : offset + 2])
            if fmt == 4:
                mapping.update(self._format4(cmap, offset))
            elif fmt == 12:
                (groups,) = struct.unpack(">I", cmap[offset + 12 : offset + 16])
                for g in range(groups):
                    start, end, gid = struct.unpack(">III", cmap[offset + 16 + 12 * g : offset + 28 + 12 * g])
                    mapping.update({c: gid + c - start for c in range(start, end + 1)})
        return mapping

    @staticmethod
    def _format4(cmap: bytes, offset: int) -> dict[int, int]:
        (seg_x2,) = struct.unpack(">H", cmap[offset + 6 : offset + 8])
        n = seg_x2 // 2
        ends = struct.unpack(f">{n}H", cmap[offset + 14 : offset + 14 + seg_x2])
        starts_at = offset + 16 + seg_x2
        starts = struct.unpack(f">{n}H", cmap[starts_at : starts_at + seg_x2])
        deltas = struct.unpack(f">{n}h", cmap[starts_at + seg_x2 : starts_at + 2 * seg_x2])
        range_at = starts_at + 2 * seg_x2
        ranges = struct.unpack(f">{n}H", cmap[range_at : range_at + seg_x2])
        mapping: dict[int, int] = {}
        for i in range(n):
            for c in range(starts[i], ends[i] + 1):
                if c == 0xFFFF:
                    continue
                if ranges[i] == 0:
                    gid = (c + deltas[i]) & 0xFFFF
                else:
                    at = range_at + 2 * i + ranges[i] + 2 * (c - starts[i])
                    (gid,) = struct.unpack(">H", cmap[at : at + 2])
                    gid = (gid + deltas[i]) & 0xFFFF if gid else 0
                if gid:
                    mapping[c] = gid
        return mapping

    def _offsets(self) -> list[int]:
        loca = self.table("loca")
        if self.loca_format == 0:
            return [2 * v for v in struct.unpack(f">{self.num_glyphs + 1}H", loca[: 2 * (self.num_glyphs + 1)])]
        return list(struct.unpack(f">{self.num_glyphs + 1}I", loca[: 4 * (self.num_glyphs + 1)]))

    def subset(self, text: str) -> tuple[bytes, set[str]]:
        """The font with only the outlines `text` needs (glyph ids unchanged) and the characters covered."""
        covered = {ch for ch in set(text) if ord(ch) in self.cmap}
        glyf = self.table("glyf")
        offsets = self._offsets()
        keep = {0} | {self.cmap[ord(ch)] for ch in covered}
        todo = list(keep)
        while todo:  # composite glyphs pull in their components
            gid = todo.pop()
            glyph = glyf[offsets[gid] : offsets[gid + 1]]
            if len(glyph) < 10 or struct.unpack(">h", glyph[:2])[0] >= 0:
                continue
            pos = 10
            while True:
                flags, component = struct.unpack(">HH", glyph[pos : pos + 4])
                if component not in keep:
                    keep.add(component)
                    todo.append(component)
                pos += 4 + (4 if flags & 0x1 else 2)
                pos += 2 if flags & 0x8 else 4 if flags & 0x40 else 8 if flags & 0x80 else 0
                if not flags & 0x20:
                    break
        parts, new_offsets, at = [], [], 0
        for gid in range(self.num_glyphs):
            new_offsets.append(at)
            if gid in keep:
                glyph = glyf[offsets[gid] : offsets[gid + 1]]
                glyph += b"\0" * (-len(glyph) % 4)
                parts.append(glyph)
                at += len(glyph)
        new_offsets.append(at)
        if self.loca_format == 0:
            loca = struct.pack(f">{len(new_offsets)}H", *(o // 2 for o in new_offsets))
        else:
            loca = struct.pack(f">{len(new_offsets)}I", *new_offsets)
        tables = {tag: self.table(tag) for tag in self.tables}
        tables["glyf"], tables["loca"] = b"".join(parts), loca
        head = bytearray(tables["head"])
        head[8:12] = b"\0\0\0\0"
        tables["head"] = bytes(head)
        return _assemble(tables), covered


def _checksum(data: bytes) -> int:
    padded = data + b"\0" * (-len(data) % 4)
    return sum(struct.unpack(f">{len(padded) // 4}I", padded)) & 0xFFFFFFFF


def _assemble(tables: Mapping[str, bytes]) -> bytes:
    """An sfnt file from its tables (sorted directory, 4-byte aligned, checksums and head adjustment)."""
    tags = sorted(tables)
    n = len(tags)
    power = 2 ** int(math.log2(n))
    header = struct.pack(">IHHHH", 0x00010000, n, power * 16, int(math.log2(power)), n * 16 - power * 16)
    offset = 12 + 16 * n
    directory, body = [], []
    for tag in tags:
        data = tables[tag]
        directory.append(struct.pack(">4sIII", tag.encode("latin-1"), _checksum(data), offset, len(data)))
        padded = data + b"\0" * (-len(data) % 4)
        body.append(padded)
        offset += len(padded)
    font = bytearray(header + b"".join(directory) + b"".join(body))
    if "head" in tables:
        head_at = 12 + 16 * n + sum(len(b) for b in body[: tags.index("head")])
        adjustment = (0xB1B0AFBA - _checksum(bytes(font))) & 0xFFFFFFFF
        font[head_at + 8 : head_at + 12] = struct.pack(">I", adjustment)
    return bytes(font)


@lru_cache(maxsize=4)
def _font(weight: str) -> _TrueType | None:
    for candidate in FONT_FILES[weight]:
        path = Path(candidate)
        if path.is_file():
            return _TrueType(path.read_bytes())
    return None


_SVG = "{http://www.w3.org/2000/svg}"


def _svg_text(root: ET.Element) -> tuple[str, str]:
    """All characters drawn as regular and as bold text in an SVG."""
    regular: list[str] = []
    bold: list[str] = []
    for element in root.iter():
        if element.tag not in (f"{_SVG}text", f"{_SVG}tspan") or not element.text:
            continue
        style = element.get("style", "") + " " + element.get("font-weight", "")
        (bold if re.search(r"bold|[6-9]00", style) else regular).append(element.text)
        if element.tail:
            regular.append(element.tail)
    return "".join(regular), "".join(bold)


def font_face_css(regular: str, bold: str = "") -> str:
    """`@font-face` rules embedding subsets of Liberation Sans for the given characters ("" if not installed)."""
    rules = []
    for weight, text, css_weight in (("regular", regular, "normal"), ("bold", bold, "bold")):
        font = _font(weight) if text else None
        if font is None:
            continue
        data, covered = font.subset(text)
        if not covered:
            continue
        encoded = base64.b64encode(data).decode("ascii")
        rules.append(
            "@font-face{font-family:'Liberation Sans';font-style:normal;"
            f"font-weight:{css_weight};src:url(data:font/ttf;base64,{encoded}) format('truetype');}}"
        )
    return "".join(rules)


CJK_FONT_FILES = {
    "regular": "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "bold": "/usr/share/fonts/opentype/noto/NotoSansCJK-Bold.ttc",
}
CJK_FAMILY = "Noto Sans CJK SC"


def cjk_font_face_css(regular: str, bold: str = "") -> str:
    """`@font-face` rules embedding subsets of Noto Sans CJK SC for the characters Liberation Sans lacks."""
    from fontTools import subset
    from fontTools.ttLib import TTCollection

    rules = []
    for weight, text, css_weight in (("regular", regular, "normal"), ("bold", bold, "bold")):
        wanted = {ord(ch) for ch in text if ord(ch) > 0x2E7F}  # CJK and beyond: what Liberation Sans lacks
        path = Path(CJK_FONT_FILES[weight])
        if not wanted or not path.is_file():
            continue
        collection = TTCollection(str(path))
        font = next(f for f in collection.fonts if f["name"].getDebugName(1) == CJK_FAMILY)
        options = subset.Options()
        options.name_IDs = ["*"]
        options.notdef_outline = True
        subsetter = subset.Subsetter(options=options)
        subsetter.populate(unicodes=wanted)
        subsetter.subset(font)
        buffer = io.BytesIO()
        font.save(buffer)
        encoded = base64.b64encode(buffer.getvalue()).decode("ascii")
        rules.append(
            f"@font-face{{font-family:'{CJK_FAMILY}';font-style:normal;font-weight:{css_weight};"
            f"src:url(data:font/otf;base64,{encoded}) format('opentype');}}"
        )
    return "".join(rules)


def finish_svg(data: bytes, spec: Preset) -> bytes:
    """Physical size in inches on the root element and the glyphs used embedded (Latin and CJK)."""
    text = data.decode("utf-8")
    root = ET.fromstring(text)
    height_in = float(root.get("viewBox", "0 0 0 0").split()[3]) / PX_PER_IN
    regular, bold = _svg_text(root)
    css = font_face_css(regular, bold) + cjk_font_face_css(regular, bold)
    open_tag = re.search(r"<svg\b[^>]*>", text)
    if open_tag is None:
        return data
    tag = open_tag.group(0)
    tag = re.sub(r'\swidth="[^"]*"', f' width="{spec.width_in:g}in"', tag, count=1)
    tag = re.sub(r'\sheight="[^"]*"', f' height="{height_in:.4g}in"', tag, count=1)
    style = f'<style type="text/css">{css}</style>' if css else ""
    text = text[: open_tag.start()] + tag + style + text[open_tag.end() :]
    return text.encode("utf-8")


def svg_info(data: bytes) -> dict[str, Any]:
    """What an SVG holds: size attributes, texts, fill colours, embedded font faces (parses it)."""
    root = ET.fromstring(data.decode("utf-8"))
    texts = ["".join(e.itertext()) for e in root.iter(f"{_SVG}text")]
    fills = set(re.findall(r"fill:\s*(rgb\([^)]*\)|#[0-9a-fA-F]{3,6})", data.decode("utf-8")))
    faces = re.findall(r"@font-face\{[^}]*\}", data.decode("utf-8"))
    return {"width": root.get("width"), "height": root.get("height"), "texts": texts, "fills": fills, "fonts": faces}


# --- PDF inspection (no poppler needed) ----------------------------------------------------------


def _pdf_objects(data: bytes) -> dict[int, bytes]:
    objects = {}
    for match in re.finditer(rb"(\d+)\s+0\s+obj\b(.*?)endobj", data, flags=re.S):
        objects[int(match.group(1))] = match.group(2)
    return objects


def _stream(body: bytes) -> bytes:
    match = re.search(rb"stream\r?\n(.*?)\r?\nendstream", body, flags=re.S)
    if not match:
        return b""
    raw = match.group(1)
    if b"/FlateDecode" in body.split(b"stream", 1)[0]:
        with contextlib.suppress(zlib.error):
            return zlib.decompressobj().decompress(raw)
    return raw


def _to_unicode(cmap: bytes) -> dict[int, str]:
    mapping: dict[int, str] = {}

    def chars(hexa: bytes) -> str:
        return bytes.fromhex(hexa.decode()).decode("utf-16-be", errors="replace")

    for block in re.findall(rb"beginbfchar(.*?)endbfchar", cmap, flags=re.S):
        for src, dst in re.findall(rb"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>", block):
            mapping[int(src, 16)] = chars(dst)
    for block in re.findall(rb"beginbfrange(.*?)endbfrange", cmap, flags=re.S):
        for lo, hi, dst in re.findall(rb"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>", block):
            base = chars(dst)
            for k, code in enumerate(range(int(lo, 16), int(hi, 16) + 1)):
                mapping[code] = base[:-1] + chr(ord(base[-1]) + k)
    return mapping


def pdf_info(data: bytes) -> dict[str, Any]:
    """Pages, fonts (base names and whether each is embedded), raster images, and the text drawn.

    Text comes from the content streams' show-text operators decoded with each font's ToUnicode map.
    """
    objects = _pdf_objects(data)
    pages = [o for o in objects.values() if re.search(rb"/Type\s*/Page(?![a-zA-Z])", o)]
    fonts: dict[int, dict[str, Any]] = {}
    for number, body in objects.items():
        if not re.search(rb"/Type\s*/Font\b", body):
            continue
        name = re.search(rb"/BaseFont\s*/([^\s/<>\[\]]+)", body)
        subtype = re.search(rb"/Subtype\s*/(\w+)", body)
        unicode_ref = re.search(rb"/ToUnicode\s+(\d+)\s+0\s+R", body)
        fonts[number] = {
            "name": name.group(1).decode() if name else "",
            "subtype": subtype.group(1).decode() if subtype else "",
            "to_unicode": _to_unicode(_stream(objects.get(int(unicode_ref.group(1)), b""))) if unicode_ref else {},
            "bytes_per_code": 2 if subtype and subtype.group(1) == b"Type0" else 1,
        }
    embedded = []
    for body in objects.values():
        subtype = re.search(rb"/Subtype\s*/(\w+)", body)
        if not re.search(rb"/Type\s*/Font\b", body) or not subtype or subtype.group(1) in (b"Type0", b"Type3"):
            continue  # a Type 0 font's glyphs live in its descendant; a Type 3 font's glyphs are PDF drawings
        descriptor = re.search(rb"/FontDescriptor\s+(\d+)\s+0\s+R", body)
        held = objects.get(int(descriptor.group(1)), b"") if descriptor else b""
        embedded.append(bool(re.search(rb"/FontFile[23]?\s", held)))
    texts: list[str] = []
    for page in pages:
        resources = dict(re.findall(rb"/(F\d+)\s+(\d+)\s+0\s+R", page))
        contents = re.search(rb"/Contents\s+(\d+)\s+0\s+R", page)
        if not contents:
            continue
        stream = _stream(objects.get(int(contents.group(1)), b""))
        current: dict[str, Any] = {}
        for op in re.finditer(rb"/(F\d+)\s+[\d.]+\s+Tf|\[(.*?)\]\s*TJ|<([0-9A-Fa-f]*)>\s*Tj", stream, flags=re.S):
            if op.group(1):
                current = fonts.get(int(resources.get(op.group(1), b"0")), {})
                continue
            hexes = re.findall(rb"<([0-9A-Fa-f]*)>", op.group(2)) if op.group(2) is not None else [op.group(3)]
            width = 2 * current.get("bytes_per_code", 1)
            table = current.get("to_unicode", {})
            texts.append(
                "".join(
                    table.get(int(h[i : i + width], 16), "") for h in hexes for i in range(0, len(h) - width + 1, width)
                )
            )
    media = re.search(rb"/MediaBox\s*\[\s*([\d.\s-]+)\]", data)
    box = [float(v) for v in media.group(1).split()] if media else []
    return {
        "pages": len(pages),
        "fonts": sorted({f["name"] for f in fonts.values() if f["name"]}),
        "font_subtypes": sorted({f["subtype"] for f in fonts.values()}),
        "fonts_embedded": bool(embedded) and all(embedded),
        "images": len(re.findall(rb"/Subtype\s*/Image\b", data)),
        "text": "".join(texts),
        "size_in": ((box[2] - box[0]) / 72, (box[3] - box[1]) / 72) if len(box) == 4 else None,
    }


# --- tables --------------------------------------------------------------------------------------

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


def latex_environments_balanced(text: str) -> bool:
    r"""Every \begin{env} closed by a matching \end{env} in order.

    >>> latex_environments_balanced("\\begin{table}\\begin{tabular}{l}\\end{tabular}\\end{table}")
    True
    """
    stack: list[str] = []
    for kind, env in re.findall(r"\\(begin|end)\{([^}]*)\}", text):
        if kind == "begin":
            stack.append(env)
        elif not stack or stack.pop() != env:
            return False
    return not stack
