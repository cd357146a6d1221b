"""Figure files: PDF, SVG and PNG written through kaleido and the system Chromium.

The dashboard's download buttons and `python -m analysis report` call the same functions, so a
downloaded file is byte-for-byte what the report writes: `figure_bytes` for one figure (a browser of
its own, or the one of an open `export_session`), `write_figures` for a batch (one browser, `BATCH_TABS`
tabs). Figures are styled by `analysis.export.style.style_figure` first. PDF and SVG render at scale 1
(so the PDF page is exactly the preset's width), PNG at 300/96 so that pixels = inches x 300, with a
pHYs chunk declaring 300 dpi. An SVG gets its physical size in inches and the glyphs it draws embedded
(`analysis.export.fonts`). kaleido is imported only when something is rendered.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
import struct
import sys
import xml.etree.ElementTree as ET
import zlib
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import plotly.graph_objects as go

from analysis.export import browser as B
from analysis.export.browser import BATCH_TABS, ExportUnavailableError, check_export
from analysis.export.files import EXTENSIONS, FIGURE_FORMATS
from analysis.export.fonts import cjk_font_face_css, font_face_css
from analysis.export.style import DPI, PDF_FONT_FAMILY, PX_PER_IN, Preset, preset, style_figure

_LOG = logging.getLogger(__name__)
T = TypeVar("T")


# --- rendering -----------------------------------------------------------------------------------


async def _print_pdf_edge_to_edge(tab: Any) -> str:
    """Chromium's Page.printToPDF of the rendered figure with no page margin.

    kaleido 1.x prints with a 0.1 in margin on every side while the page has the figure's exact size
    (CSS @page), so every PDF was shifted 0.1 in right and down and lost its bottom and right 0.1 in:
    the x-axis title and the descenders of tick labels (issue 18). With no margin the PDF page is the
    figure, as the SVG and PNG are (tests/test_paper_figures.py measures all three).
    """
    from kaleido._kaleido_tab._errors import _raise_error

    params = {
        "printBackground": True,
        "marginTop": 0,
        "marginBottom": 0,
        "marginLeft": 0,
        "marginRight": 0,
        "preferCSSPageSize": True,
        "pageRanges": "1",
    }
    response = await tab.send_command("Page.printToPDF", params=params)
    _raise_error(response)
    return str(response.get("result", {}).get("data"))


def _edge_to_edge_pdf() -> None:
    """Make kaleido's tabs print PDFs without margins (its tab module looks the function up per call)."""
    from kaleido._kaleido_tab import _devtools_utils

    if _devtools_utils.print_pdf is not _print_pdf_edge_to_edge:
        _devtools_utils.print_pdf = _print_pdf_edge_to_edge


TAB_RELOAD_EVERY = 100  # renders a kaleido tab serves between two reloads of its page


def _keep_tabs_loaded() -> None:
    """Make kaleido reload a tab's page every `TAB_RELOAD_EVERY` renders instead of after every one.

    kaleido 1.5 reloads its page (plotly.js and all) after each figure, about 0.2 s of a 0.3 s render.
    The page keeps no figure between renders (plotly.js draws into a detached element and purges it; a
    PDF's image and page size are replaced by the next one), so a kept page renders the same files:
    PNG bytes, PDF text boxes and rasters, and SVG trees equal but for plotly's random ids and the
    order of one rect's attributes (measured on every paper-figure kind in 3 formats at 2 widths;
    `tests/test_export.py` checks it on every run). The periodic reload bounds what a page can gather; a
    render that failed is followed by a reload at once. A kaleido without that method keeps its own behaviour.
    """
    from kaleido import kaleido as kaleido_module

    cls = kaleido_module.Kaleido
    original = getattr(cls, "_return_kaleido_tab", None)
    if original is None or getattr(original, "_dst_kept", False):
        return

    async def return_tab(self: Any, tab: Any) -> None:
        # kaleido returns the tab in a `finally`: a render that failed or timed out (its page may still be
        # drawing it, and would print into the next PDF) gets a fresh page, as kaleido always gives one
        failed = sys.exc_info()[0] is not None
        served = getattr(tab, "_dst_served", 0) + 1
        if failed or served >= TAB_RELOAD_EVERY:
            served = 0
            await tab.reload()
        tab._dst_served = served
        await self.tabs_ready.put(tab)

    return_tab._dst_kept = True  # type: ignore[attr-defined]
    cls._return_kaleido_tab = return_tab


def _kaleido_as_used_here() -> None:
    """kaleido's two changes of ours, made before any render: edge-to-edge PDFs and kept tabs."""
    _edge_to_edge_pdf()
    _keep_tabs_loaded()


@contextlib.contextmanager
def export_session() -> Iterator[None]:
    """Keep one Chromium open for every render inside the block (`analysis.export.browser.session`).

    Nested sessions share the browser; outside a session each render starts its own (about 2 s). Without
    Chromium, `ExportUnavailableError` (the browser's start checks).
    """
    _kaleido_as_used_here()
    with B.session():
        yield


def _ask(request: Callable[[Any], Awaitable[T]], renders: int, tabs: int = BATCH_TABS) -> T:
    """`request(kaleido)` answered by the session's browser (outside a session, one of its own). A browser
    that hangs is killed and a fresh one asked once more; a second hang is an `ExportUnavailableError`."""
    with B.LOCK:  # one request at a time
        browser = B.current()
        own = browser is None
        if browser is None:
            browser = B.Browser(tabs)
        try:
            try:
                return browser.ask(request, renders)
            except B.BrowserHungError as first:
                _LOG.warning("%s; asking a fresh browser again", first)
                browser = B.replace(browser)
                try:
                    return browser.ask(request, renders)
                except B.BrowserHungError as again:
                    raise ExportUnavailableError(f"{again}, and before that {first}") from None
        finally:
            if own:
                browser.close()


def for_format(figure: dict[str, Any], fmt: str) -> dict[str, Any]:
    """A styled figure (as a dict) as it renders in `fmt`: a PDF's text in `PDF_FONT_FAMILY` (TrueType
    fonts only, so no Type 3 font in the file), other formats as they are."""
    if fmt != "pdf":
        return figure
    layout = figure.get("layout", {})
    return {**figure, "layout": {**layout, "font": {**layout.get("font", {}), "family": PDF_FONT_FAMILY}}}


def _render(fig: go.Figure, fmt: str, spec: Preset) -> bytes:
    _kaleido_as_used_here()
    opts = {
        "format": fmt,
        "width": fig.layout.width,
        "height": fig.layout.height,
        "scale": spec.png_scale if fmt == "png" else 1,
    }
    figure = for_format(fig.to_dict(), fmt)
    return bytes(_ask(lambda kaleido: kaleido.calc_fig(figure, opts=opts), renders=1, tabs=1))


def figure_bytes(fig: go.Figure, fmt: str, *, style: str = "paper", width: str = "single") -> bytes:
    """The file for one figure: `fmt` is pdf, svg or png (what the dashboard's buttons download).

    Raises `ExportUnavailableError` when no Chromium is installed.
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
    return finish_pdf(data, spec, float(styled.layout.height))


BATCH_CHUNK = 6  # renders per request to the browser; the progress bar moves per chunk


def _opts(layout: Mapping[str, Any], fmt: str, spec: Preset) -> dict[str, Any]:
    return {
        "format": fmt,
        "width": layout.get("width"),
        "height": layout.get("height"),
        "scale": spec.png_scale if fmt == "png" else 1,
    }


def _finish_file(path: Path, fmt: str, spec: Preset, height_px: float) -> None:
    if fmt == "svg":
        path.write_bytes(finish_svg(path.read_bytes(), spec))
    elif fmt == "png":
        path.write_bytes(_png_with_dpi(path.read_bytes(), DPI))
    elif fmt == "pdf":
        path.write_bytes(finish_pdf(path.read_bytes(), spec, height_px))


def _write_request(specs: list[dict[str, Any]], kaleido: Any) -> Awaitable[Any]:
    return kaleido.write_fig_from_object(specs)  # the render errors, a tuple (kaleido's cancel_on_error=False)


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
    for fmt in formats:
        if fmt not in FIGURE_FORMATS:
            raise ValueError(f"format has to be one of {', '.join(FIGURE_FORMATS)}, got {fmt!r}")
    spec = preset(style, width)
    check_export()
    _kaleido_as_used_here()
    jobs = []
    for fig, stem in figures:
        styled = style_figure(fig, style=style, width=width).to_dict()
        for fmt in formats:
            jobs.append((styled, fmt, stem.with_name(f"{stem.name}.{EXTENSIONS[fmt]}")))
    written: list[Path] = []
    with export_session():
        for at in range(0, len(jobs), BATCH_CHUNK):
            chunk = jobs[at : at + BATCH_CHUNK]
            specs = [
                {"fig": for_format(d, fmt), "path": str(p), "opts": _opts(d["layout"], fmt, spec)}
                for d, fmt, p in chunk
            ]
            errors = _ask(functools.partial(_write_request, specs), renders=len(specs))
            if errors:
                raise RuntimeError(f"rendering failed: {errors[0]}")
            for styled_dict, fmt, path in chunk:
                _finish_file(path, fmt, spec, float(styled_dict["layout"]["height"]))
                written.append(path)
                if progress is not None:
                    progress(path)
    return written


# --- PDF: the exact page size -------------------------------------------------------------------


def finish_pdf(data: bytes, spec: Preset, height_px: float) -> bytes:
    """The page box set to exactly the preset's width and the figure's height in points.

    Chromium rounds a printed page to 1/150 in, so a 3.03 in figure came out 3.0267 in wide. The page
    boxes are rewritten in place, padded with spaces to their old length so the cross-reference offsets
    stay valid (a box that would not fit is left as Chromium wrote it).
    """
    width_pt = round(spec.width_in * 72, 3)
    height_pt = round(height_px / PX_PER_IN * 72, 3)

    def exact(match: re.Match[bytes]) -> bytes:
        return f"{match.group(1).decode()} [0 0 {width_pt:g} {height_pt:g}]".encode()

    boxed = re.sub(rb"(/MediaBox|/CropBox|/TrimBox|/BleedBox|/ArtBox)\s*\[[^\]]*\]", exact, data)
    return _rebuild_xref(boxed) if boxed != data else data


def _rebuild_xref(data: bytes) -> bytes:
    """The classic cross-reference table and startxref recomputed from where each object now starts
    (after an edit changed lengths); a PDF without a classic table is returned unchanged."""
    table = re.search(rb"\nxref\r?\n0 (\d+)\r?\n", data)
    if table is None:
        return data
    count = int(table.group(1))
    offsets = {int(m.group(1)): m.start(1) for m in re.finditer(rb"(?:^|[\r\n])(\d+) 0 obj\b", data)}
    if any(n not in offsets for n in range(1, count)):
        return data
    rows = [b"0000000000 65535 f \n"] + [b"%010d 00000 n \n" % offsets[n] for n in range(1, count)]
    start = table.start() + 1
    end = data.find(b"trailer", start)
    if end < 0:
        return data
    head = data[:start] + b"xref\n0 %d\n" % count + b"".join(rows)
    tail = re.sub(rb"startxref\s+\d+", b"startxref\n%d" % start, data[end:], count=1)
    return head + tail


# --- PNG: declared resolution --------------------------------------------------------------------


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


# --- SVG: physical size and embedded font subsets ------------------------------------------------


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
