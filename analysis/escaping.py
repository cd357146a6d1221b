"""Text from data, manifests and URLs shown as literal text: Plotly labels and Markdown, never markup.

Plotly renders a subset of HTML in every text it draws (`<a href>`, `<b>`, `<br>`, `<span style>`), and
Markdown turns `[x](url)`, `![x](url)`, bare `http://...` and (in Streamlit) `:red[...]`, `$...$` into
links, images, colours and LaTeX. A run named `<a href=...>` must stay those characters on screen and in
every exported file, so every string that carries data goes through one of these on its way out.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import plotly.graph_objects as go

_PLOTLY = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def plotly_text(value: object) -> str:
    """`value` as text Plotly draws literally: `<`, `>` and `&` as entities (Plotly shows them as the
    characters, and an exported SVG keeps them as text). Markup that code adds around it stays markup.

    >>> plotly_text('<a href="http://x">run</a> & co')
    '&lt;a href="http://x"&gt;run&lt;/a&gt; &amp; co'
    """
    return str(value).translate(_PLOTLY)


# The characters that open a Markdown construct anywhere in a line (CommonMark, GFM, and Streamlit's
# `:directive[...]`, `:material/icon:`, emoji `:code:` and `$` LaTeX; a colon only before a name, and the
# slash of `:material/`, which Streamlit rewrites in the source before parsing); the rest
# is left alone so the text stays readable raw (`MultiWOZ 2.1`, `hotel-book_day`, `R&B`, `a: b` unchanged).
_MARKDOWN = re.compile(r"([\\`*\[\]<>!|$~#]|:(?=[\w+-])|(?<=:material)/|(?<!\w)_|_(?!\w)|&(?=#?\w+;))")
# ... and those that open one only at the start of the text (newlines are spaces): a list, a quote.
_LEADING = re.compile(r"^(\s*)(\d+)?([-+.)])(?=\s|$)")
# GFM autolink literals (`http://...`, `www.x`, `a@b.c`) are found in the text after parsing, so escapes do
# not stop them: an invisible WORD JOINER (U+2060) inside the pattern does, and the text reads the same.
_AUTOLINK = re.compile(r"(?i)(?<=:)(?=//)|(?<=\bwww)(?=\.)|(?=@)")
_JOINER = "\u2060"


def markdown_text(value: object) -> str:
    r"""`value` as literal Markdown text, in a file or on Streamlit's screen: no link, image, autolink,
    HTML, emphasis, LaTeX (`$`), Streamlit directive (`:red[...]`, `:material/...:`) or emoji code survives;
    a newline is a space, and a word joiner (U+2060, invisible) goes inside `://`, before `.` after `www`
    and before `@`.

    >>> print(markdown_text("![x](http://h:9/p.png) :red[hi] $x$ www.a.org").replace("\u2060", "<WJ>"))
    \!\[x\](http:<WJ>//h\:9/p.png) \:red\[hi\] \$x\$ www<WJ>.a.org
    >>> markdown_text(":material/home:"), markdown_text("1. x")
    ('\\:material\\/home:', '1\\. x')
    >>> markdown_text("- MultiWOZ 2.1 hotel-book_day R&B <b>")
    '\\- MultiWOZ 2.1 hotel-book_day R&B \\<b\\>'
    """
    text = _AUTOLINK.sub(_JOINER, " ".join(str(value).splitlines()))
    return _LEADING.sub(_escape_leading, _MARKDOWN.sub(r"\\\1", text), count=1)


def _escape_leading(found: re.Match[str]) -> str:
    """`- x`, `+ x`, `1. x`, `1) x` at the start: the mark escaped (a digit cannot be)."""
    space, number, mark = found.group(1), found.group(2) or "", found.group(3)
    if mark in ".)" and not number:
        return found.group(0)
    return f"{space}{number}\\{mark}"


# Trace attributes whose strings Plotly draws (as labels, hover text or legend entries) and that carry
# data; templates (`hovertemplate`, `texttemplate`) are code and escape their data where they are built.
_TRACE_TEXT = ("x", "y", "z", "text", "hovertext", "customdata", "name", "labels", "parents", "ids")
_AXIS_TEXT = ("categoryarray", "tickvals", "ticktext")
_DONE = "plain_text"  # the layout.meta flag: a figure is escaped once, however often it is styled


def _label(value: str) -> str:
    """`plotly_text`, but a line break stays one: builders write `<br>` into cell text (a break from data
    breaks a line too, which draws nothing and links nothing)."""
    return plotly_text(value).replace("&lt;br&gt;", "<br>")


def _escaped(value: Any) -> Any:
    """`value` with its strings `_label`ed; `value` itself (the same object) when nothing needed escaping,
    so the caller need not assign it back (a Plotly assignment validates the whole array again)."""
    if isinstance(value, str):
        label = _label(value)
        return value if label == value else label
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "OUS" and value.size:
            escaped = np.vectorize(_escaped, otypes=[object])(value)
            if value.dtype.kind == "O" and all(a is b for a, b in zip(escaped.flat, value.flat, strict=True)):
                return value
            return escaped
        return value
    if isinstance(value, list | tuple):
        items = [_escaped(v) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return type(value)(items)
    return value


def literal_text(value: Any) -> Any:
    """Text of a figure (escaped by `plain_figure_text`) as the data has it, in strings, lists and tuples;
    anything else as it is. `html.unescape` is the exact inverse of the escaping: every `&` in escaped
    text begins an entity the escaping wrote.

    >>> literal_text(["B&amp;B", "&lt;br&gt;", 3])
    ['B&B', '<br>', 3]
    """
    if isinstance(value, str):
        return html.unescape(value)
    if isinstance(value, list | tuple):
        return type(value)(literal_text(v) for v in value)
    return value


def literal_point(point: Mapping[str, Any]) -> dict[str, Any]:
    """A point Streamlit returns for a click on a figure (its `x`, `y`, `customdata`, `legendgroup`, taken
    from the figure's escaped data, `plain_figure_text`) with its text as the data has it, so a page can
    look it up: a value `B&B` comes back as `B&amp;B` and matches nothing (`literal_text`).

    >>> literal_point({"x": "B&amp;B", "y": 0.5, "customdata": ["&lt;a&gt;", 3], "curve_number": 1})
    {'x': 'B&B', 'y': 0.5, 'customdata': ['<a>', 3], 'curve_number': 1}
    """
    return {
        k: literal_text(v) if k in ("x", "y", "customdata", "legendgroup", "text", "hovertext") else v
        for k, v in point.items()
    }


def _escape_title(owner: Any) -> None:
    title = getattr(owner, "title", None)
    if title is None:
        return
    if title.text:
        title.text = _label(title.text)
    subtitle = getattr(title, "subtitle", None)
    if subtitle is not None and subtitle.text:
        subtitle.text = _label(subtitle.text)


def _axes(layout: Any) -> Iterable[Any]:
    for name in layout:
        if name.startswith(("xaxis", "yaxis")) and layout[name] is not None:
            yield layout[name]


def plain_figure_text(fig: go.Figure) -> go.Figure:
    """Escape (once: the figure remembers it in `layout.meta`) every string Plotly would read as markup:
    the traces' data, names and text, the titles, axis titles and categories, legend title, annotations.
    Hover templates are code and keep their `<b>`/`<br>`; what they interpolate with `%{...}` is the
    escaped data; a `<br>` stays a line break everywhere. Returns `fig`.

    >>> fig = plain_figure_text(go.Figure(go.Bar(x=["<b>a</b>"], y=[1], name="<a href='x'>r</a>")))
    >>> fig.data[0].x, fig.data[0].name
    (('&lt;b&gt;a&lt;/b&gt;',), "&lt;a href='x'&gt;r&lt;/a&gt;")
    >>> plain_figure_text(fig).data[0].x  # a second call changes nothing
    ('&lt;b&gt;a&lt;/b&gt;',)
    """
    meta = fig.layout.meta
    if isinstance(meta, dict) and meta.get(_DONE):
        return fig
    for trace in fig.data:
        for name in _TRACE_TEXT:
            if name in trace and trace[name] is not None:
                value = trace[name]
                escaped = _escaped(value)
                if escaped is not value:
                    trace[name] = escaped
        legendgroup = getattr(trace, "legendgrouptitle", None)
        if legendgroup is not None and legendgroup.text:
            legendgroup.text = _label(legendgroup.text)
        colorbar = getattr(trace, "colorbar", None)
        if colorbar is not None:
            _escape_title(colorbar)
        marker_colorbar = getattr(getattr(trace, "marker", None), "colorbar", None)
        if marker_colorbar is not None:
            _escape_title(marker_colorbar)
    layout = fig.layout
    _escape_title(layout)
    _escape_title(layout.legend)
    for axis in _axes(layout):
        _escape_title(axis)
        for name in _AXIS_TEXT:
            if axis[name] is not None:
                value = axis[name]
                escaped = _escaped(value)
                if escaped is not value:
                    axis[name] = escaped
    for annotation in layout.annotations:
        if annotation.text:
            annotation.text = _label(annotation.text)
        # an annotation placed on a category names it as the (escaped) axis does
        for name in ("x", "y"):
            if isinstance(annotation[name], str):
                annotation[name] = _label(annotation[name])
    layout.meta = {**(meta if isinstance(meta, dict) else {}), _DONE: True}
    return fig
