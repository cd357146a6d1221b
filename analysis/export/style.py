"""Paper styling of dashboard figures: presets of physical size and font sizes, and `style_figure`.

`style_figure(fig, style=, width=)` restyles a copy of a dashboard figure for print: the preset's
physical width (single column 3.3 in, double column 7.0 in; 96 layout px per inch), font sizes in
points readable at that width, Liberation Sans (fonts-liberation) with Noto Sans CJK SC
(fonts-noto-cjk) for Chinese, the colour-blind-safe Okabe-Ito colourway for traces without a
colour of their own (run colours come from `figures.run_colours`), and, in paper style, no title
inside the figure (captions belong to LaTeX). `analysis.export.figures` renders the result.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from analysis.figures import OKABE_ITO

STYLES = ("paper", "slides")
WIDTHS = ("single", "double")
PX_PER_IN = 96.0  # plotly layout pixels are CSS pixels
DPI = 300
PX_PER_PT = PX_PER_IN / 72
FONT_FAMILY = "Liberation Sans, Noto Sans CJK SC, DejaVu Sans, sans-serif"


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
