"""Paper styling of dashboard figures: presets of physical size and font sizes, and `style_figure`.

`style_figure(fig, style=, width=)` restyles a copy of a dashboard figure for print: the preset's
physical width (ACL/EMNLP single column 3.03 in, double column 6.3 in; 96 layout px per inch),
every font at least 8 pt at that size (axis titles, tick labels, legend, annotations, colour bars,
text in cells and on bars), Liberation Sans (fonts-liberation) with Noto Sans CJK SC
(fonts-noto-cjk) for Chinese, the colour-blind-safe palette of `analysis.palette` as the colourway
for traces without a colour of their own (run colours come from `figures.run_colours`), interval
bands kept as fills without edge lines, the legend above the plot in as many rows as it needs (the
canvas grows; it never scrolls), and, in paper style, no title inside the figure (captions belong
to LaTeX). `analysis.export.figures` renders the result.
"""

from __future__ import annotations

import base64
import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

from analysis.figures import template_for
from analysis.palette import OKABE_ITO

STYLES = ("paper", "slides")
WIDTHS = ("single", "double")
PX_PER_IN = 96.0  # plotly layout pixels are CSS pixels
DPI = 300
PX_PER_PT = PX_PER_IN / 72
FONT_FAMILY = "Liberation Sans, Noto Sans CJK SC, DejaVu Sans, sans-serif"
# PDF: Chromium's PDF backend (Skia) embeds a CFF-outline font (Noto CJK) as Type 3 glyph drawings, which
# venues' checkers reject; CJK text there is set in Droid Sans Fallback (fonts-droid-fallback), TrueType
# outlines embedded as a CID TrueType font, symbols in DejaVu Sans (TrueType: ✓ and the like), Noto CJK only for
# a character all of them lack.
PDF_FONT_FAMILY = "Liberation Sans, Droid Sans Fallback, DejaVu Sans, Noto Sans CJK SC, sans-serif"


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
        """Device pixels per layout pixel of the PNG: 300/96, nudged a quarter pixel up so Chromium's
        truncation of width x scale (604.8 x 3.125 = 1889.99...) still gives the 1890 pixels of 6.3 in."""
        return (self.png_width() + 0.25) / self.width_px

    def png_width(self) -> int:
        """Width of the PNG in pixels: inches x 300.

        >>> PRESETS["paper", "single"].png_width(), PRESETS["paper", "double"].png_width()
        (909, 1890)
        """
        return round(self.width_in * DPI)


PRESETS: dict[tuple[str, str], Preset] = {
    # ACL/EMNLP: \columnwidth 3.03 in (7.7 cm), \textwidth 6.3 in (16 cm). Fonts: nothing below 8 pt.
    ("paper", "single"): Preset("paper", "single", 3.03, 2.3, 8, 8, 8, 11, (6, 6, 6, 6), False, 1.5),
    ("paper", "double"): Preset("paper", "double", 6.3, 2.6, 9, 8, 8, 11, (6, 8, 6, 6), False, 1.75),
    ("slides", "single"): Preset("slides", "single", 3.03, 2.8, 10, 9, 9, 12.5, (6, 6, 30, 6), True, 2.0),
    ("slides", "double"): Preset("slides", "double", 6.3, 4.0, 14, 12, 12, 17, (8, 10, 50, 8), True, 2.5),
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
    """Rows a figure needs vertically: categories of horizontal bars or heatmap rows, else 0."""
    rows = 0
    for trace in fig.data:
        kind = getattr(trace, "type", "")
        if (
            (kind == "bar" and getattr(trace, "orientation", None) == "h") or kind == "heatmap"
        ) and trace.y is not None:
            rows = max(rows, len({str(v) for v in trace.y}))
    return rows


_TOKEN = re.compile(r"&(?:[A-Za-z]+|#\d+|#x[0-9A-Fa-f]+);|<br>|.", re.S)
_BREAK_AFTER = frozenset("-_ /·.")


def wrap_label(label: str, limit: int) -> str:
    """A long category label in lines of at most `limit` characters, broken after - _ space / · or .
    (a piece longer than the limit is cut), joined by <br> for Plotly.

    Labels reach here escaped for Plotly (`escaping.plotly_text`): an entity such as `&lt;` counts as one
    character and is never cut, or a hostile `<a ...>` name would print as `&l` / `t;`.

    >>> wrap_label("simulated-B-mwz-en-predicted-s1", 15)
    'simulated-B-<br>mwz-en-<br>predicted-s1'
    >>> wrap_label("hotel", 15)
    'hotel'
    >>> wrap_label("click&lt;/a&gt;x" * 2, 6)
    'click&lt;<br>/<br>a&gt;xcli<br>ck&lt;/<br>a&gt;x'
    """
    tokens = _TOKEN.findall(label)
    if len(tokens) <= limit:
        return label
    pieces: list[list[str]] = [[]]
    for token in tokens:  # pieces end after a break character
        pieces[-1].append(token)
        if token in _BREAK_AFTER:
            pieces.append([])
    cut: list[list[str]] = []
    for piece in pieces:
        while len(piece) > limit:
            cut.append(piece[:limit])
            piece = piece[limit:]
        if piece:
            cut.append(piece)
    lines: list[list[str]] = [[]]
    for piece in cut:
        if lines[-1] and len(lines[-1]) + len(piece) > limit:
            lines.append([])
        lines[-1].extend(piece)
    return "<br>".join("".join(line).strip() for line in lines)


def _axis_categories(fig: go.Figure, axis: str) -> dict[str, list[str]]:
    """Category labels on each x (or y) axis of a figure: axis layout name -> labels in order."""
    out: dict[str, dict[str, None]] = {}
    for trace in fig.data:
        kind = getattr(trace, "type", "")
        if kind not in ("bar", "heatmap", "box", "scatter"):
            continue
        values = getattr(trace, axis)
        if values is None or isinstance(values, dict):  # a typed binary array holds numbers, not categories
            continue
        values = list(values)
        if not values or not all(isinstance(v, str) for v in values):
            continue
        ref = getattr(trace, f"{axis}axis") or axis
        name = f"{axis}axis{ref[1:]}"
        out.setdefault(name, {}).update(dict.fromkeys(values))
    return {name: list(labels) for name, labels in out.items()}


def _label_limit(spec: Preset, tick_px: float, axis: str = "x") -> int:
    """Characters of a category label per line: upright x labels about 30% of the figure's width, row
    labels beside the plot about 40%."""
    share = 0.3 if axis == "x" else 0.4
    return max(10, int(spec.width_px * share / (0.55 * tick_px)))


def _wrap_categories(out: go.Figure, fig: go.Figure, spec: Preset, tick_px: float) -> int:
    """Wrap long category labels (run names, domain-slot names) on every axis; returns the most lines a
    y label got (each category row then needs that many lines of height)."""
    most = 1
    columns = len(_x_categories(fig))
    for axis in ("x", "y"):
        limit = _label_limit(spec, tick_px, axis)
        if axis == "y" and any(getattr(t, "type", "") == "heatmap" for t in fig.data):
            label_px = limit * 0.55 * tick_px
            if columns * 1.25 * tick_px > spec.width_px - label_px - 70:  # crowded columns: narrower row labels
                limit = max(8, int(spec.width_px * 0.25 / (0.55 * tick_px)))
        for name, labels in _axis_categories(fig, axis).items():
            layout_axis = out.layout[name]
            if layout_axis is None or layout_axis.type not in (None, "-", "category"):
                continue
            if layout_axis.tickmode == "array":
                continue
            # every category labelled (Plotly skips some when they crowd), long ones on several lines
            wrapped = [wrap_label(v, limit) for v in labels]
            layout_axis.update(tickmode="array", tickvals=labels, ticktext=wrapped)
            if axis == "y":
                most = max(most, *(w.count("<br>") + 1 for w in wrapped))
    return most


def _x_categories(fig: go.Figure) -> list[str]:
    """Category labels along x of vertical bar charts and heatmaps (empty for numeric axes)."""
    labels: dict[str, None] = {}
    for trace in fig.data:
        kind = getattr(trace, "type", "")
        if kind not in ("bar", "heatmap") or getattr(trace, "orientation", None) == "h" or trace.x is None:
            continue
        if isinstance(trace.x, dict):  # a typed binary array holds numbers, not categories
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
        "maxheight": 9.0 * PX_PER_IN,  # never a scrolling legend: every entry shows, the canvas grows
    }
    if not entries:
        return layout, 0.0
    longest = max(len(e) for e in entries) * 0.55 * legend_px + 45  # symbol and gap: about 45 px
    available = spec.width_px - 70  # the legend spans the plot area, not the y axis' labels and title
    columns = max(1, min(len(entries), int(available // longest)))
    if columns > 1:
        layout |= {"entrywidth": int(available // columns) - 45, "entrywidthmode": "pixels"}
    rows = math.ceil(len(entries) / columns)
    return layout, rows * (legend_px * 1.3 + 6) + 4


def _height_px(fig: go.Figure, spec: Preset, legend_height: float, below: float = 0.0, lines: int = 1) -> float:
    """The canvas height: the preset's, or what the category rows need; plus the legend above and upright
    x labels below (`below`), so margins never squeeze the plot away."""
    base = spec.height_in * PX_PER_IN
    rows = _category_rows(fig)
    if rows:
        row_px = max(spec.row_pt * PX_PER_PT, lines * spec.tick_pt * PX_PER_PT * 1.25)
        base = max(base * 0.6, rows * row_px + 3 * spec.font_pt * PX_PER_PT)
    base += below
    panels = _subplot_rows(fig)
    if panels > 1:
        base = max(base, panels * 1.2 * PX_PER_IN)
    return float(min(base + legend_height, 9.0 * PX_PER_IN))


def style_figure(fig: go.Figure, *, style: str = "paper", width: str = "single") -> go.Figure:
    """A restyled copy of `fig` for print or slides (the input is left as it is).

    >>> f = style_figure(go.Figure(go.Bar(x=[1], y=[2]), layout={"title": {"text": "T"}}))
    >>> f.layout.width, f.layout.title.text, f.layout.font.size
    (290.88, None, 10.67)
    """
    spec = preset(style, width)
    font_px = round(spec.font_pt * PX_PER_PT, 2)
    tick_px = round(spec.tick_pt * PX_PER_PT, 2)
    fig = _transposed_if_crowded(fig, spec, tick_px)
    fig = _bars_turned_if_crowded(fig, spec, tick_px)
    out = go.Figure(fig)
    left, right, top, bottom = spec.margin
    legend, legend_height = _legend(fig, spec)
    out.update_layout(
        template=template_for(out, "simple_white"),
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
    lines = _wrap_categories(out, fig, spec, tick_px)
    out.update_layout(height=_height_px(fig, spec, legend_height, lines=lines))
    limit = _label_limit(spec, tick_px)
    categories = _x_categories(fig)
    wrapped = [wrap_label(v, limit) for v in categories]
    labels = [line for v in wrapped for line in v.split("<br>")]
    if labels and len(categories) * max(len(v) for v in labels) * 0.55 * tick_px > spec.width_px * 0.5:
        out.update_xaxes(tickangle=-90)  # long category labels read better upright than overlapping
        # Upright, a label of n lines is n lines thick: when the categories leave no room for that, the
        # labels stay on one line each (the canvas grows downwards instead).
        thickness = max(v.count("<br>") + 1 for v in wrapped) * 1.25 * tick_px
        if len(categories) * thickness > spec.width_px * 0.6:
            labels = categories
            for name in _axis_categories(fig, "x"):
                if out.layout[name].ticktext is not None:
                    out.layout[name].ticktext = out.layout[name].tickvals
        below = max(len(v) for v in labels) * 0.6 * tick_px
        out.update_layout(height=_height_px(fig, spec, legend_height, below, lines))
    for annotation in out.layout.annotations:
        annotation.font.size = max(font_px, annotation.font.size or 0) if style == "slides" else font_px
    for trace in out.data:
        _style_trace(trace, spec, font_px=font_px, tick_px=tick_px)
    out.update_layout(uniformtext={"minsize": tick_px, "mode": "show"})  # bar texts never shrink below 8 pt
    return out


def _array(values: Any) -> np.ndarray:
    """A trace's 2-D array, also when it is Plotly's typed binary form ({'dtype', 'bdata', 'shape'})."""
    if isinstance(values, dict) and "bdata" in values:
        flat = np.frombuffer(base64.b64decode(values["bdata"]), dtype=np.dtype(values["dtype"]))
        shape = [int(n) for n in str(values.get("shape", len(flat))).split(",")]
        return flat.reshape(shape)
    return np.asarray(values, dtype=object)


def _transposed_if_crowded(fig: go.Figure, spec: Preset, tick_px: float) -> go.Figure:
    """A heatmap with more columns than its width can label at 8 pt (upright labels need 1.25 lines each)
    and fewer rows than columns, turned a quarter: rows become columns, the hover and an outlined row
    follow. Other figures are returned as they are."""
    heatmaps = [t for t in fig.data if getattr(t, "type", "") == "heatmap"]
    if len(heatmaps) != 1 or len(fig.data) != 1 or heatmaps[0].x is None or heatmaps[0].y is None:
        return fig
    trace = heatmaps[0]
    columns, rows = [str(v) for v in trace.x], [str(v) for v in trace.y]
    label_px = min(max(len(v) for v in rows), _label_limit(spec, tick_px, "y")) * 0.55 * tick_px
    room = spec.width_px - label_px - 70
    if len(columns) * 1.25 * tick_px <= room or len(rows) >= len(columns):
        return fig
    data = trace.to_plotly_json()
    turned: dict[str, Any] = {**data, "x": rows, "y": columns}
    for key in ("z", "text", "customdata"):
        if data.get(key) is not None and not isinstance(data[key], str):
            array = _array(data[key])
            if array.ndim == 2:
                turned[key] = array.T.tolist()
    template = data.get("hovertemplate")
    if isinstance(template, str):
        turned["hovertemplate"] = template.replace("%{x}", "\0").replace("%{y}", "%{x}").replace("\0", "%{y}")
    out = go.Figure(go.Heatmap(turned), layout=fig.layout)
    x_title, y_title = fig.layout.xaxis.title.text, fig.layout.yaxis.title.text
    out.update_xaxes(title_text=y_title, autorange=None)
    out.update_yaxes(title_text=x_title, autorange="reversed")
    shapes = []
    for shape in fig.layout.shapes:
        if shape.xref == "paper" and shape.yref == "y":  # an outlined row is now an outlined column
            shape = go.layout.Shape(shape.to_plotly_json()).update(
                xref="x", yref="paper", x0=shape.y0, x1=shape.y1, y0=0, y1=1
            )
        shapes.append(shape)
    out.layout.shapes = shapes
    return out


def _swap_xy(template: Any) -> Any:
    if not isinstance(template, str):
        return template
    return template.replace("%{x", "%{\0").replace("%{y", "%{x").replace("%{\0", "%{y")


def _bars_turned_if_crowded(fig: go.Figure, spec: Preset, tick_px: float) -> go.Figure:
    """A vertical bar chart (one plot) with more categories than its width can label upright at 8 pt,
    turned into horizontal bars: the categories become rows (first at the top), the axes trade places
    with their titles, ranges and formats, error bars and hover follow."""
    categories = _x_categories(fig)
    bars = [t for t in fig.data if getattr(t, "type", "") == "bar"]
    if not categories or len(bars) != len(fig.data) or any(t.orientation == "h" for t in bars):
        return fig
    layout = fig.layout.to_plotly_json()
    if any(re.fullmatch(r"[xy]axis\d+", k) for k in layout):
        return fig
    if len(categories) * 1.25 * tick_px <= spec.width_px - 60:
        return fig
    data = []
    for trace in bars:
        item = trace.to_plotly_json()
        item["x"], item["y"] = item.get("y"), item.get("x")
        item["orientation"] = "h"
        item["error_x"], item["error_y"] = item.pop("error_y", None), item.pop("error_x", None)
        item = {k: v for k, v in item.items() if v is not None}
        item["hovertemplate"] = _swap_xy(item.get("hovertemplate"))
        data.append(go.Bar(item))
    layout["xaxis"], layout["yaxis"] = layout.get("yaxis", {}), layout.get("xaxis", {})
    layout["yaxis"] = {**layout["yaxis"], "autorange": "reversed"}
    layout["yaxis"].pop("range", None)
    layout["yaxis"].pop("tickangle", None)
    for shape in layout.get("shapes", []):
        shape["xref"], shape["yref"] = shape.get("yref"), shape.get("xref")
        shape["x0"], shape["y0"], shape["x1"], shape["y1"] = (
            shape.get("y0"),
            shape.get("x0"),
            shape.get("y1"),
            shape.get("x1"),
        )
    return go.Figure(data=data, layout=layout)


def is_band(trace: Any) -> bool:
    """An interval band or shaded area: a filled scatter trace whose line is not drawn."""
    if getattr(trace, "type", "") != "scatter" or trace.fill in (None, "none"):
        return False
    return trace.mode == "none" or (trace.line is not None and trace.line.width == 0)


def _style_trace(trace: Any, spec: Preset, *, font_px: float, tick_px: float) -> None:
    """Line widths, bar outlines, error bars, colour bars and text sizes of one trace for print."""
    kind = getattr(trace, "type", "")
    if kind == "scatter" and is_band(trace):
        trace.line.width = 0  # a band is its fill: an edge line would read as two more series
    elif kind == "scatter" and trace.mode and "lines" in trace.mode:
        width = trace.line.width
        # a highlighted run (figures.depth_lines(highlight=)) keeps its relative weight
        trace.line.width = spec.line_width if width is None else spec.line_width * width / 2.0
        trace.marker.size = 2.5 * spec.line_width
    if kind == "bar":
        trace.marker.line = {"width": 0}
        if trace.error_y is not None and trace.error_y.visible is not False and trace.error_y.array is not None:
            trace.error_y.thickness = 0.75
            trace.error_y.width = 2
    if kind in ("heatmap", "contour", "histogram2d") or (kind in ("scatter", "bar") and trace.marker.showscale):
        bar = trace.colorbar if kind != "scatter" and kind != "bar" else trace.marker.colorbar
        bar.tickfont = {"size": tick_px}
        bar.title.font = {"size": tick_px}
        bar.title.side = "right"
        bar.thickness = 8
        bar.outlinewidth = 0
    if hasattr(trace, "textfont") and (trace.text is not None or trace.texttemplate):
        trace.textfont.size = tick_px
        if kind == "heatmap":
            _fit_cell_text(trace, spec, tick_px)


def _fit_cell_text(trace: Any, spec: Preset, tick_px: float) -> None:
    """Drop a heatmap's cell text when 8 pt numbers cannot fit the cells at this width (the colour and the
    colour bar still carry the values; the dashboard and the tables show the numbers)."""
    if trace.x is None or trace.text is None:
        return
    columns = len(trace.x)  # the cell values may be typed binary arrays; the labels are a plain list
    if not columns:
        return
    texts = [str(v) for row in trace.text for v in (row if isinstance(row, (list, tuple)) else [row])]
    lines = [part for text in texts for part in re.split(r"<br\s*/?>", text)]
    longest = max((len(t) for t in lines), default=4)
    rows = [str(v) for v in trace.y] if trace.y is not None else []
    label_chars = min(max((len(v) for v in rows), default=0), _label_limit(spec, tick_px, "y"))
    # the plot area: the width less the row labels, the colour bar with its ticks and title, the margins
    plot_px = spec.width_px - label_chars * 0.55 * tick_px - 70
    if longest * 0.55 * tick_px > plot_px / columns:
        trace.texttemplate = None
        trace.text = None
