"""Figure and table export: presets, table files, font subsets, and (with Chromium) the rendered files."""

from __future__ import annotations

import contextlib
import io
import re
import struct
import threading
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import pytest
from fontTools.ttLib import TTFont

from analysis import export as E
from analysis import figures as F
from analysis.export import browser as export_browser
from analysis.export import figures as export_figures
from analysis.export import fonts
from tests.export_inspect import latex_environments_balanced, pdf_info, png_info, svg_info

HAVE_CHROMIUM = Path("/usr/bin/chromium").exists() or E.browser_path() is not None
needs_chromium = pytest.mark.skipif(not HAVE_CHROMIUM, reason="no Chromium (make test installs it)")
RUNS = ["mwz_en-predicted", "mwz-zh 中文"]


def _figures() -> dict[str, go.Figure]:
    colours = F.run_colours(RUNS)
    board = pd.DataFrame(
        {
            "run_id": RUNS,
            "system": ["A", "A"],
            "dataset": ["MultiWOZ 2.1", "MultiWOZ-zh"],
            "convention": ["exact", "exact"],
            "n_turns": [10, 10],
            "n_dialogues": [2, 2],
            "history": ["predicted", "predicted"],
            "jga": [0.5, 0.25],
        }
    )
    depth = pd.DataFrame(
        {"run_id": RUNS * 3, "turn_index": [0, 0, 1, 1, 2, 2], "jga": [0.9, 0.8, 0.7, 0.6, 0.5, 0.4], "n_turns": 4}
    )
    return {
        "bar": F.leaderboard_bar(board, colours=colours, style="paper"),
        "lines": F.depth_lines(depth, colours=colours, style="paper"),
    }


# --- no browser needed ---------------------------------------------------------------------------


def test_presets_widths_and_png_pixels() -> None:
    assert E.preset("paper", "single").width_in == 3.03  # ACL/EMNLP \columnwidth
    assert E.preset("paper", "double").width_in == 6.3  # ACL/EMNLP \textwidth
    assert E.preset("paper", "single").png_width() == 909
    assert E.preset("slides", "double").png_width() == 1890
    with pytest.raises(ValueError, match="style has to be one of paper, slides"):
        E.preset("poster", "single")
    with pytest.raises(ValueError, match="width has to be one of single, double"):
        E.preset("paper", "triple")


def test_a_subtitle_goes_with_its_title() -> None:
    fig = F.agreement_heatmap({"both_correct": 3, "only_a": 1, "only_b": 1, "both_wrong": 0}, run_a="x", run_b="y")
    assert fig.layout.title.text == "Agreement over paired turns" and fig.layout.title.subtitle.text == "A = x, B = y"
    paper = E.style_figure(fig, style="paper", width="single")
    slides = E.style_figure(fig, style="slides", width="double")
    assert paper.layout.title.text is None and paper.layout.title.subtitle.text is None
    assert slides.layout.title.subtitle.text == "A = x, B = y"


def test_style_figure_paper_drops_title_slides_keeps_it() -> None:
    fig = _figures()["bar"]
    assert fig.layout.title.text  # the dashboard figure has a title
    paper = E.style_figure(fig, style="paper", width="single")
    slides = E.style_figure(fig, style="slides", width="double")
    assert paper.layout.title.text is None
    assert slides.layout.title.text == fig.layout.title.text
    assert fig.layout.title.text and fig.layout.width is None  # the input is untouched
    assert paper.layout.width == pytest.approx(3.03 * 96)
    assert slides.layout.width == pytest.approx(6.3 * 96)
    assert "Liberation Sans" in paper.layout.font.family
    assert paper.layout.font.size == pytest.approx(8 * 96 / 72, abs=0.01)  # 8 pt at print size
    # run colours are the dashboard's, untouched by styling
    (bars,) = paper.data  # one trace, a colour per bar
    assert list(bars.marker.color) == [F.run_colours(RUNS)[r] for r in RUNS]


def test_tall_horizontal_bars_get_taller_figures() -> None:
    table = pd.DataFrame(
        {
            "slot_name": [f"hotel-s{i}" for i in range(40)],
            "f1": [i / 40 for i in range(40)],
            "precision": 0.5,
            "recall": 0.5,
            "support": 3,
        }
    )
    short = E.style_figure(F.slot_f1_bar(table.head(3), run_id="r"))
    tall = E.style_figure(F.slot_f1_bar(table, run_id="r"))
    assert tall.layout.height > short.layout.height
    assert tall.layout.height >= 40 * 9.5 * 96 / 72  # one readable row per slot


LEADERBOARD = pd.DataFrame(
    {
        "run": ["sys_a 100%", "sys&b", "餐厅-区域 #3"],
        "turns": [10, 12, 9],
        "JGA": [0.5, 0.625, float("nan")],
        "JGA low": [0.4, 0.5, float("nan")],
        "JGA high": [0.6, 0.7, float("nan")],
        "gap": [0.1, -0.2, 0.05],
    }
)


def test_latex_table_booktabs_bold_intervals_escaping() -> None:
    text = E.table_bytes(
        LEADERBOARD,
        "latex",
        caption="Runs & 95% intervals",
        label="tab:x",
        intervals={"JGA": ("JGA low", "JGA high")},
        lower_better=["gap"],
    ).decode("utf-8")
    assert latex_environments_balanced(text)
    assert re.search(r"\\begin\{tabular\}\{p\{[\d.]+pt\}rrr\}", text)  # the long run names wrap in one column
    for rule in ("\\toprule", "\\midrule", "\\bottomrule"):
        assert text.count(rule) == 1
    body = text.split("\\midrule", 1)[1].split("\\bottomrule", 1)[0]
    rows = [line for line in body.strip().splitlines() if line.endswith("\\tabularnewline")]
    assert len(rows) == 3
    # the interval beside or (stacked) under its value, one size smaller, our own brackets braced
    assert rows[0].startswith(r"\raggedright sys\_a 100\% & 10 & ") and "{[}0.400, 0.600{]}" in rows[0]
    assert r"\textbf{0.625}" in rows[1] and "{[}0.500, 0.700{]}" in rows[1]
    # Chinese survives as UTF-8, in \dstcjk (CJKutf8 under pdflatex, as it is under XeLaTeX)
    assert r"sys\&b" in rows[1] and r"\#3" in rows[2] and "\\dstcjk{餐厅}-\\dstcjk{区域}" in rows[2]
    assert r"\textbf{-0.200}" in rows[1]  # lower is better for gap
    assert "--" in rows[2]  # NaN shown as a dash (–, typed --), never 0
    assert r"\caption{Runs \& 95\% intervals}" in text and r"\label{tab:x}" in text
    assert "JGA low" not in text  # the interval columns are folded into the JGA cells


def test_markdown_and_csv_tables() -> None:
    md = E.table_bytes(LEADERBOARD, "markdown", intervals={"JGA": ("JGA low", "JGA high")}, best=["JGA"]).decode()
    lines = md.strip().splitlines()
    assert lines[0] == "| run | turns | JGA | gap |"
    assert lines[1] == "| :--- | ---: | ---: | ---: |"
    assert lines[3] == "| sys&b | 12 | **0.625** [0.500, 0.700] | -0.200 |"
    assert len(lines) == 5
    csv = E.table_bytes(LEADERBOARD, "csv").decode("utf-8")
    back = pd.read_csv(pd.io.common.StringIO(csv))
    assert list(back.columns) == list(LEADERBOARD.columns)
    assert back["JGA"].iloc[1] == 0.625 and back["run"].iloc[2] == "餐厅-区域 #3"
    with pytest.raises(ValueError, match="format has to be one of latex, markdown, csv"):
        E.table_bytes(LEADERBOARD, "xlsx")


MIXED = pd.DataFrame(
    {
        "run": ["mwz-a", "mwz-b", "cw-a", "cw-b"],
        "dataset": ["MultiWOZ 2.1", "MultiWOZ 2.1", "CrossWOZ", "CrossWOZ"],
        "history": ["predicted"] * 4,
        "convention": ["trade"] * 4,
        "JGA": [0.5, 0.6, 0.8, 0.7],
    }
)


def test_a_table_mixing_two_datasets_bolds_one_best_per_dataset() -> None:
    md = E.table_bytes(MIXED, "markdown").decode()
    rows = {line.split("|")[1].strip(): line for line in md.splitlines() if line.startswith("| ") and "---" not in line}
    assert "**0.600**" in rows["mwz-b"] and "**0.800**" in rows["cw-a"]  # not only the overall best 0.800
    assert "**" not in rows["mwz-a"] + rows["cw-b"]
    assert "among comparable runs only" in md and "MultiWOZ 2.1, predicted history, trade" not in md
    assert "MultiWOZ 2.1, trade, predicted history" in md and "CrossWOZ, trade, predicted history" in md
    tex = E.table_bytes(MIXED, "latex").decode()
    assert tex.count("\\textbf{") == 2 and latex_environments_balanced(tex)
    assert "\\footnotesize Bold: the best value of each column among comparable runs only" in tex
    # One dataset: one best over all the runs, and no note.
    one = MIXED.assign(dataset="MultiWOZ 2.1")
    assert E.table_bytes(one, "latex").decode().count("\\textbf{") == 1
    assert "comparable" not in E.table_bytes(one, "markdown").decode()


def test_n_a_instead_of_a_dash_where_asked() -> None:
    frame = MIXED.assign(JGA=[0.5, float("nan"), 0.8, 0.7])
    assert (
        "| mwz-b | MultiWOZ 2.1 | predicted | trade | n/a |" in E.table_bytes(frame, "markdown", na_rep="n/a").decode()
    )
    assert "| mwz-b | MultiWOZ 2.1 | predicted | trade | – |" in E.table_bytes(frame, "markdown").decode()


def test_latex_balance_checker_catches_mismatch() -> None:
    assert not latex_environments_balanced("\\begin{table}\\begin{tabular}{l}\\end{table}")
    assert not latex_environments_balanced("\\begin{table}")


def _png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    raw = b"".join(b"\0" + b"\xff" * width * 3 for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def test_png_dpi_chunk() -> None:
    marked = export_figures._png_with_dpi(_png(4, 3), 300)
    assert png_info(marked) == {"width": 4, "height": 3, "dpi": 300}
    assert png_info(export_figures._png_with_dpi(marked, 300))["dpi"] == 300  # replaced, not duplicated
    assert marked.count(b"pHYs") == 1


@pytest.mark.skipif(fonts.font_data("regular") is None, reason="fonts-liberation not installed")
def test_font_subset_keeps_used_glyphs_only() -> None:
    whole = fonts.font_data("regular")
    assert whole is not None
    data, covered = fonts.subset_font(whole, "JGA run_a 中")
    assert covered == set("JGA run_a ") and "中" not in covered
    assert len(data) < len(whole) / 2
    font, small = TTFont(io.BytesIO(whole)), TTFont(io.BytesIO(data))  # small: still a well-formed font
    ids = {ch: font.getGlyphID(font.getBestCmap()[ord(ch)]) for ch in "JGA run_aQ"}
    assert all(small.getGlyphID(small.getBestCmap()[ord(ch)]) == ids[ch] for ch in covered)  # same glyph ids
    glyphs = small["glyf"]
    used = glyphs[small.getGlyphName(ids["J"])]
    assert used.numberOfContours > 0  # the outlines of the used glyphs
    assert ids["Q"] < small["maxp"].numGlyphs
    unused = glyphs[small.getGlyphName(ids["Q"])]
    assert unused.numberOfContours == 0


def test_finish_svg_sets_inches_and_embeds_font() -> None:
    raw = (
        b'<svg xmlns="http://www.w3.org/2000/svg" width="290.88" height="230.4" viewBox="0 0 290.88 230.4">'
        b"<text style=\"font-family: 'Liberation Sans'; font-size: 10px\">JGA run</text></svg>"
    )
    done = E.finish_svg(raw, E.preset("paper", "single"))
    root = ET.fromstring(done)
    assert root.get("width") == "3.03in" and root.get("height") == "2.4in"
    if fonts.font_data("regular") is not None:
        assert re.search(rb"@font-face\{font-family:'Liberation Sans';.*base64,", done)


def test_file_names_and_mime_types() -> None:
    assert E.file_name("JGA by turn depth", "pdf") == "JGA-by-turn-depth.pdf"
    assert E.file_name("gap 餐厅/区域", "markdown") == "gap-餐厅-区域.md"
    assert set(E.MIME_TYPES) == {*E.FIGURE_FORMATS, *E.TABLE_FORMATS}


def test_missing_chromium_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(export_browser, "browser_path", lambda: None)
    with pytest.raises(E.ExportUnavailableError, match="apt-get install chromium") as info:
        E.figure_bytes(_figures()["bar"], "pdf")
    assert isinstance(info.value, RuntimeError)
    assert "make test" in str(info.value)


def test_a_tab_is_reloaded_every_n_renders_and_after_a_failed_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """kaleido's tab return as `_keep_tabs_loaded` makes it: a reload after every TAB_RELOAD_EVERY renders and
    after any render that raised (kaleido returns the tab in a `finally`), the tab always put back."""
    import asyncio

    from kaleido import kaleido as kaleido_module

    export_figures._keep_tabs_loaded()
    return_tab = kaleido_module.Kaleido._return_kaleido_tab
    monkeypatch.setattr(export_figures, "TAB_RELOAD_EVERY", 3)

    class Tab:
        reloads = 0

        async def reload(self) -> None:
            self.reloads += 1

    class Owner:
        def __init__(self) -> None:
            self.tabs_ready: asyncio.Queue[Tab] = asyncio.Queue()

    async def render(owner: Owner, tab: Tab, fails: bool) -> None:  # kaleido's `_render_task`, in short
        try:
            if fails:
                raise TimeoutError("the render timed out")
        finally:
            await return_tab(owner, tab)

    async def renders(outcomes: str) -> tuple[int, int]:
        owner, tab = Owner(), Tab()
        for outcome in outcomes:
            with contextlib.suppress(TimeoutError):
                await render(owner, tab, outcome == "x")
        return tab.reloads, owner.tabs_ready.qsize()

    def run(outcomes: str) -> tuple[int, int]:
        # a loop of its own, in a thread of its own: a browser test before this one in the same worker leaves
        # Playwright's loop running in this thread, where asyncio.run is refused
        answer: list[tuple[int, int]] = []
        thread = threading.Thread(target=lambda: answer.append(asyncio.run(renders(outcomes))))
        thread.start()
        thread.join()
        return answer[0]

    assert run("..") == (0, 2)  # kept
    assert run("......") == (2, 6)  # every third
    assert run(".x") == (1, 2)  # the failure reloads at once
    assert run(".x...") == (2, 5)  # and restarts the count


# --- rendered files (Chromium) -------------------------------------------------------------------


@pytest.fixture(scope="module")
def rendered() -> dict[tuple[str, str, str], bytes]:
    """Every test figure in every format at both widths, rendered with one browser."""
    if not HAVE_CHROMIUM:
        pytest.skip("no Chromium (make test installs it)")
    out = {}
    with E.export_session():
        for name, fig in _figures().items():
            for width in E.WIDTHS:
                for fmt in E.FIGURE_FORMATS:
                    out[name, width, fmt] = E.figure_bytes(fig, fmt, width=width)
    return out


@pytest.mark.slow
@needs_chromium
def test_pdf_single_page_vector_with_embedded_fonts_and_text(rendered: dict) -> None:
    for (name, width, fmt), data in rendered.items():
        if fmt != "pdf":
            continue
        info = pdf_info(data)
        assert data.startswith(b"%PDF-")
        assert info["pages"] == 1, name
        assert info["images"] == 0, name  # vector: no raster image inside
        assert info["fonts_embedded"], info
        assert any("LiberationSans" in f for f in info["fonts"]), info["fonts"]
        assert info["size_in"][0] == pytest.approx(E.preset("paper", width).width_in, rel=0.01)
        # Chromium's PDF backend draws some one-stroke glyphs (_ and sometimes -) as lines, not text
        letters = re.sub(r"[\W_]", "", info["text"])
        assert "mwzenpredicted" in letters and "mwzzh" in letters and "JGA" in letters, (name, info["text"])


@pytest.mark.slow  # every figure rendered by Chromium (kaleido)
@needs_chromium
def test_svg_parses_with_size_and_font_face(rendered: dict) -> None:
    for (name, width, fmt), data in rendered.items():
        if fmt != "svg":
            continue
        info = svg_info(data)  # parses with xml.etree
        assert info["width"] == f"{E.preset('paper', width).width_in:g}in"
        assert any("mwz_en-predicted" in t for t in info["texts"]), name
        assert info["fonts"] and "base64," in info["fonts"][0]
        assert not any("Kaleido" in t for t in info["texts"])


@pytest.mark.slow  # every figure rendered by Chromium (kaleido)
@needs_chromium
def test_png_pixels_match_width_at_300_dpi(rendered: dict) -> None:
    for (_, width, fmt), data in rendered.items():
        if fmt != "png":
            continue
        info = png_info(data)
        assert info["width"] == E.preset("paper", width).png_width()
        assert info["dpi"] == 300
        assert info["height"] > 300


def _rgb(hex_colour: str) -> str:
    red, green, blue = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgb({red}, {green}, {blue})"


@pytest.mark.slow  # every figure rendered by Chromium (kaleido)
@needs_chromium
def test_same_run_same_colour_across_files(rendered: dict) -> None:
    colours = F.run_colours(RUNS)
    bar = svg_info(rendered["bar", "single", "svg"])["fills"]
    lines = rendered["lines", "single", "svg"].decode()
    for run in RUNS:
        assert _rgb(colours[run]) in bar
        assert f"stroke: {_rgb(colours[run])}" in lines


@pytest.mark.slow
@needs_chromium
def test_figure_bytes_outside_a_session_starts_its_own_browser() -> None:
    data = E.figure_bytes(_figures()["bar"], "svg", style="slides", width="double")
    assert "JGA per run" in "".join(svg_info(data)["texts"])  # slides keep the title


@pytest.mark.slow
@needs_chromium
def test_svg_embeds_the_cjk_glyphs_it_draws() -> None:
    import base64
    import io

    from fontTools.ttLib import TTFont

    labels = ["餐厅-区域", "旅馆-价格范围"]
    fig = go.Figure(go.Bar(x=labels, y=[0.5, 0.7]))
    svg = E.figure_bytes(fig, "svg", style="paper", width="single").decode("utf-8")
    ET.fromstring(svg)  # still parses
    match = re.search(r"font-family:'Noto Sans CJK SC'[^}]*base64,([A-Za-z0-9+/=]+)\)", svg)
    assert match, "no embedded Noto Sans CJK SC subset"
    font = TTFont(io.BytesIO(base64.b64decode(match.group(1))))
    covered = set(font.getBestCmap())
    assert {ord(ch) for ch in "".join(labels) if ord(ch) > 0x2E7F} <= covered
    assert len(covered) < 100  # a subset, not the 30 MB font


def _same_drawing(svg: bytes) -> str:
    """An SVG's canonical tree without what differs between any two renders of one figure: plotly's
    random ids (clip paths, traces, colour bars, gradients) and the embedded font subsets' dates."""
    text = ET.canonicalize(svg.decode("utf-8"))
    text = re.sub(r"base64,[A-Za-z0-9+/=]+", "base64,FONT", text)
    for uid in set(re.findall(r"clip([0-9a-f]{6})", text)):
        text = text.replace(uid, "UID")
    text = re.sub(r"(cb|trace)[0-9a-f]{6}", r"\1UID", text)
    return re.sub(r"\b[0-9a-f]{8}\b", "GID", text)


@pytest.mark.slow
@needs_chromium
def test_a_kept_tab_renders_what_a_reloaded_tab_renders(monkeypatch: pytest.MonkeyPatch) -> None:
    """kaleido's tab is reloaded every TAB_RELOAD_EVERY renders, not after each: the files are the same."""
    figures = {
        "lines": _figures()["lines"],  # a legend
        "heatmap": go.Figure(go.Heatmap(z=[[0.1, 0.9], [0.5, 0.3]], x=["a", "b"], y=["c", "d"])),
        "cjk": go.Figure(go.Bar(x=["餐厅-区域", "旅馆-价格范围"], y=[0.5, 0.7])),
    }

    def render_all() -> dict[tuple[str, str], bytes]:
        return {(n, f): E.figure_bytes(fig, f) for n, fig in figures.items() for f in E.FIGURE_FORMATS}

    with E.export_session():
        monkeypatch.setattr(export_figures, "TAB_RELOAD_EVERY", 1)  # kaleido's own way: a fresh page each time
        reloaded = render_all()
        monkeypatch.undo()
        kept = render_all()
    from kaleido import kaleido as kaleido_module

    assert getattr(kaleido_module.Kaleido._return_kaleido_tab, "_dst_kept", False), "kaleido's tab return not kept"
    assert len({_same_drawing(kept[n, "svg"]) for n in figures}) == len(figures)  # the comparison can tell them apart
    for (name, fmt), data in kept.items():
        before = reloaded[name, fmt]
        if fmt == "png":
            assert data == before, name
        elif fmt == "svg":
            assert _same_drawing(data) == _same_drawing(before), name
        else:
            assert pdf_info(data) == pdf_info(before), name
