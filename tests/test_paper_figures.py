"""Paper-ready figures (issue 18 req 1): every figure kind, on the demo's runs, at ACL widths, in PDF, SVG and PNG.

* sizes: single column 3.03 in and double column 6.3 in: the PDF page, the SVG width and the PNG pixels at
  300 dpi agree;
* nothing clipped: every word of the PDF (pdftotext -bbox), every text element of the SVG (its box measured
  in Chromium) and every inked pixel of the PNG lie inside the canvas;
* fonts of at least 8 pt at print size, in the styled figure's JSON and in the rendered SVG;
* one palette (analysis.palette) on every figure kind, interval bands without edge lines;
* 11 runs on the turn-depth and per-domain charts: every run's legend entry (or row label) inside the canvas.

All figures are rendered in one kaleido batch per width (one browser), then measured.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from analysis import figures as F
from analysis import palette, seeds, views
from analysis.export import figures as E
from analysis.export import report as R
from analysis.export.style import PX_PER_PT, preset, style_figure
from analysis.fewjoint import figures as FF
from analysis.reconcile import figures as CF
from analysis.review import figures as RF
from tests.export_inspect import png_info

pytestmark = pytest.mark.slow  # renders every figure through kaleido's chromium once per module (75 s)

DEMO = Path(__file__).resolve().parent.parent / "data" / "demo"
HAVE_CHROMIUM = Path("/usr/bin/chromium").exists() or E.browser_path() is not None
HAVE_POPPLER = shutil.which("pdftotext") is not None
MIN_PT = 8.0
MIN_PX = MIN_PT * PX_PER_PT - 0.01
SCREENSHOTS = Path(__file__).resolve().parent / "screenshots" / "figures"


# --- every figure kind on the demo's runs --------------------------------------------------------


@pytest.fixture(scope="module")
def demo() -> dict[str, Any]:
    if not (DEMO / "workspace.toml").exists():
        pytest.skip("demo workspace missing (data/demo)")
    from analysis.fewjoint.scoring import score_fewjoint
    from analysis.scoring import score_run
    from analysis.workspace import load_workspace

    ws = load_workspace(DEMO / "workspace.toml")
    scoreds = {name: score_run(run, run.meta.convention) for name, run in ws.runs.items()}
    fewjoint = {name: score_fewjoint(system) for name, system in ws.fewjoint.items()}
    return {"ws": ws, "scoreds": scoreds, "fewjoint": fewjoint}


def _eleven(demo: dict[str, Any]) -> list[Any]:
    runs = list(demo["scoreds"].values())
    assert len(runs) >= 11, "the demo has 12 runs"
    return runs[:11]


def figure_kinds(demo: dict[str, Any]) -> dict[str, tuple[str, go.Figure]]:
    """Every figure kind: name -> (the builder's qualified name, the dashboard's figure on demo data)."""
    from analysis.reconcile.core import reconcile

    scoreds = demo["scoreds"]
    names = list(scoreds)
    en_pred = next(n for n in names if "mwz-en-predicted" in n)
    en_gold = next(n for n in names if "mwz-en-gold" in n)
    zh_pred = next(n for n in names if "mwz-zh-predicted" in n)
    a, b, zh = scoreds[en_pred], scoreds[en_gold], scoreds[zh_pred]
    three = [a, b, zh]
    eleven = _eleven(demo)
    colours = F.run_colours([*names, *demo["fewjoint"]])
    board = views.leaderboard(list(scoreds.values()))
    summary = views.crosslingual_summary(a, zh)
    turns, _ = views.dialogue_view(a, str(a.turns["dialogue_id"].iloc[0]))
    slots = views.slot_table(a)
    worst = slots.sort_values("f1").iloc[0]
    confusions = views.value_confusions(a, domain=str(worst["domain"]), slot=str(worst["slot"]))
    same_gold = next(g for g in views.gold_groups(list(scoreds.values())) if len(g) >= 2)
    group = [scoreds[r] for r in same_gold[:3]]
    matrix_runs = [s for s in scoreds.values() if "mwz" in s.metas[0].run_id][:3]
    result = next(iter(demo["fewjoint"].values()))
    from analysis.crosslingual import language_matrix

    kinds: dict[str, tuple[str, go.Figure]] = {}

    def add(name: str, builder: Any, fig: go.Figure) -> None:
        kinds[name] = (f"{builder.__module__}.{builder.__qualname__}", fig)

    add("leaderboard", F.leaderboard_bar, F.leaderboard_bar(board, colours=colours))
    add("slot_f1", F.slot_f1_bar, F.slot_f1_bar(slots, run_id=en_pred))
    add("outcome_mix", F.outcome_mix_bar, F.outcome_mix_bar(views.outcome_mix(three, by="domain")))
    add("confusion", F.confusion_heatmap, F.confusion_heatmap(confusions))
    add("domains", F.grouped_jga_bar, F.grouped_jga_bar(views.domain_jga(three), by="domain", colours=colours))
    add("domains_11", F.jga_heatmap, F.grouped_jga_bar(views.domain_jga(eleven), by="domain", highlight=en_pred))
    add("depth", F.depth_lines, F.depth_lines(views.depth_jga(three), colours=colours))
    add("depth_11", F.depth_lines, F.depth_lines(views.depth_jga(eleven), colours=colours, highlight=en_pred))
    curve = views.compounding_curve(a, b)
    add("compounding", F.compounding_figure, F.compounding_figure(curve, predicted_run=en_pred, gold_run=en_gold))
    add("origins", F.origins_bar, F.origins_bar(views.origins_by_depth(three)))
    add("first_error", F.first_error_bar, F.first_error_bar(views.first_error_distribution(three), colours=colours))
    add("first_error_11", F.first_error_bar, F.first_error_bar(views.first_error_distribution(eleven)))
    add("agreement", F.agreement_heatmap, F.agreement_heatmap(summary["cells"], run_a=en_pred, run_b=zh_pred))
    add("gap", F.gap_bar, F.gap_bar(summary["gaps"]["slot"], by="slot_a"))
    add("turn_strip", F.turn_strip, F.turn_strip(turns, current=1))
    add("significance", F.significance_heatmap, F.significance_heatmap(views.significance_table(group)))
    add("delta", F.delta_bar, F.delta_bar(views.pair_deltas(group[0], group[1], scope="domain")))
    lang = language_matrix(matrix_runs, by="domain", pivot=matrix_runs[0].metas[0].run_id)
    add("language", F.language_heatmap, F.language_heatmap(lang, by="domain", pivot=matrix_runs[0].metas[0].run_id))
    add("empty", F.empty_figure, F.empty_figure("no turns", "screen"))
    # FewJoint
    from analysis.fewjoint.scoring import fewjoint_leaderboard

    add("fj_leaderboard", FF.leaderboard_bar, FF.leaderboard_bar(fewjoint_leaderboard(demo["fewjoint"].values())))
    add("fj_breakdown", FF.breakdown_bar, FF.breakdown_bar(result, by="domain"))
    add("fj_intents", FF.intent_confusion_heatmap, FF.intent_confusion_heatmap(result))
    add("fj_slot_types", FF.slot_type_prf_bar, FF.slot_type_prf_bar(result))
    # review and reconciliation
    counts = pd.DataFrame(
        {
            "domain": ["hotel", "hotel", "restaurant", ""],
            "slot": ["area", "pricerange", "food", ""],
            "tag": ["wrong value", "annotation error", "wrong value", "other"],
            "n": [3, 2, 1, 1],
            "n_items": [3, 2, 1, 1],
        }
    )
    add("tag_counts", RF.tag_counts_bar, RF.tag_counts_bar(counts))
    rec = reconcile(demo["ws"].runs[en_pred], ["exact", "mwzeval", "trade"])
    add("conventions", CF.convention_bar, CF.convention_bar(rec.table()))
    add("causes", CF.cause_bar, CF.cause_bar(rec.causes("exact", "mwzeval"), a="exact", b="mwzeval"))
    if hasattr(RF, "confusion_heatmap"):  # the review queue's gold -> predicted counts (episodes or turns)
        pairs = confusions.rename(columns={"gold": "row"}).assign(gold=confusions["gold"], domain="d", slot="s")
        add("review_confusion", RF.confusion_heatmap, RF.confusion_heatmap(pairs))
    add("message", F.empty_figure, F.empty_figure("No annotations yet: tag error turns to see counts here.", "screen"))
    # the report's own figures (intervals) and the seed chart
    cis = R._cis_by_run({n: scoreds[n] for n in names[:3]}, n_resamples=50)
    add("report_leaderboard", R.leaderboard_figure, R.leaderboard_figure(board.head(3), cis, colours=colours))
    domain_ci = R._concat_ci(eleven, by="domain", n_resamples=50)
    depth_ci = R._concat_ci(eleven, by="turn_index", n_resamples=50)
    add(
        "report_domains_3",
        R.domain_figure,
        R.domain_figure(R._concat_ci(three, by="domain", n_resamples=50), colours=colours),
    )
    add("report_domains_11", R.domain_figure, R.domain_figure(domain_ci, colours=colours))
    add("report_depth_11", R.depth_figure, R.depth_figure(depth_ci, colours=colours))
    add("report_fj_seeds", R.fewjoint_seeds_figure, R.fewjoint_seeds_figure(result, colour=colours[result.system]))
    table = seeds.seed_table(board, ["jga"])
    add("seeds", seeds.seed_bar, seeds.seed_bar(table, metric="jga", colours=colours))
    add("overview", seeds.overview_bar, seeds.overview_bar(board, metric="jga", colours=colours))
    return kinds


# --- measuring rendered files ----------------------------------------------------------------------


@functools.cache  # a rendered PDF is read by two tests (its page size, its words): poppler runs once per file
def pdf_words(path: Path) -> tuple[tuple[float, float], list[tuple[str, float, float, float, float]]]:
    """The page size (pt) and every word with its box (pt, y down) from poppler's `pdftotext -bbox`."""
    out = subprocess.run(
        ["pdftotext", "-bbox", str(path), "-"], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    page = re.search(r'<page width="([\d.]+)" height="([\d.]+)"', out)
    assert page, f"{path}: no page in pdftotext's output"
    words = [
        (html_unescape(m.group(5)), float(m.group(1)), float(m.group(2)), float(m.group(3)), float(m.group(4)))
        for m in re.finditer(
            r'<word xMin="([-\d.]+)" yMin="([-\d.]+)" xMax="([-\d.]+)" yMax="([-\d.]+)">(.*?)</word>', out
        )
    ]
    return (float(page.group(1)), float(page.group(2))), words


def html_unescape(text: str) -> str:
    import html

    return html.unescape(text)


SVG_MEASURE = """() => {
  const root = document.querySelector('svg');
  const vb = root.viewBox.baseVal;
  const box = root.getBoundingClientRect();
  const scale = vb.width / box.width;
  const texts = [];
  for (const el of root.querySelectorAll('text')) {
    const content = (el.textContent || '').trim();
    if (!content) continue;
    const style = getComputedStyle(el);
    if (style.display === 'none' || style.visibility === 'hidden' || style.opacity === '0') continue;
    const b = el.getBoundingClientRect();
    if (b.width === 0 && b.height === 0) continue;
    let hidden = false;
    for (let p = el; p && p !== root; p = p.parentElement) {
      if (getComputedStyle(p).display === 'none' || getComputedStyle(p).opacity === '0') hidden = true;
    }
    if (hidden) continue;
    texts.push({text: content, cls: el.getAttribute('class') || '',
      group: (el.parentElement && el.parentElement.getAttribute('class')) || '', x0: (b.left - box.left) * scale,
      y0: (b.top - box.top) * scale, x1: (b.right - box.left) * scale, y1: (b.bottom - box.top) * scale,
      size: parseFloat(style.fontSize) * scale});
  }
  const bars = [...root.querySelectorAll('rect.scrollbar')].filter(r => r.getBBox().height > 0).length;
  return {width: vb.width, height: vb.height, texts: texts, scrollbars: bars};
}"""


def svg_texts(paths: list[Path]) -> dict[Path, dict[str, Any]]:
    """Each SVG opened in Chromium: its viewBox and every visible text element's box and font size
    (viewBox units, i.e. CSS px at print size).

    Measured in a thread of its own: in the full suite the browser tests' pytest-playwright leaves an
    asyncio loop running in the main thread, and Playwright's sync API refuses to start inside one."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(_svg_texts, paths).result()


def _svg_texts(paths: list[Path]) -> dict[Path, dict[str, Any]]:
    from playwright.sync_api import sync_playwright

    out = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1400})
            for path in paths:
                page.set_content(path.read_text(encoding="utf-8"))
                page.evaluate("document.fonts.ready")
                out[path] = page.evaluate(SVG_MEASURE)
        finally:
            browser.close()
    return out


def png_ink(path: Path) -> tuple[tuple[int, int], tuple[int, int, int, int] | None]:
    """The PNG's size and the bounding box (x0, y0, x1, y1) of every pixel that is not the white background."""
    from PIL import Image

    with Image.open(path) as image:
        pixels = np.asarray(image.convert("RGB"), dtype=np.int16)
    ink = (np.abs(pixels - 255).max(axis=2)) > 8
    rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    size = (pixels.shape[1], pixels.shape[0])
    if not len(rows):
        return size, None
    return size, (int(cols[0]), int(rows[0]), int(cols[-1]), int(rows[-1]))


# --- which builders make figures -------------------------------------------------------------------

NOT_KINDS = {"analysis.figures.apply_style", "analysis.export.report._add_error_bars"}


def _figure_builders() -> set[str]:
    """Every function of the figure modules (and the report's figure functions) that returns a go.Figure."""
    found = set()
    for module in (F, FF, RF, CF, R, seeds):
        for name, function in inspect.getmembers(module, inspect.isfunction):
            if function.__module__ != module.__name__:
                continue
            returns = inspect.signature(function).return_annotation
            if returns in (go.Figure, "go.Figure"):
                found.add(f"{module.__name__}.{name}")
    return found - NOT_KINDS


@pytest.fixture(scope="module")
def kinds(demo: dict[str, Any]) -> dict[str, tuple[str, go.Figure]]:
    return figure_kinds(demo)


@pytest.mark.slow
def test_every_figure_builder_is_a_kind_here(kinds: dict[str, tuple[str, go.Figure]]) -> None:
    builders = _figure_builders()
    assert len(builders) >= 25, builders
    covered = {qualified for qualified, _ in kinds.values()}
    assert builders <= covered, f"figure builders not rendered by this test: {sorted(builders - covered)}"


# --- styled JSON: fonts, palette, bands -------------------------------------------------------------


def _font_sizes(node: Any, path: str = "") -> Iterator[tuple[str, float]]:
    if isinstance(node, dict):
        for key, value in node.items():
            where = f"{path}.{key}"
            if key == "size" and "font" in path.rsplit(".", 1)[-1] and isinstance(value, (int, float)):
                yield where, float(value)
            else:
                yield from _font_sizes(value, where)
    elif isinstance(node, (list, tuple)):
        for i, value in enumerate(node):
            yield from _font_sizes(value, f"{path}[{i}]")


@pytest.mark.parametrize("width", ["single", "double"])
def test_styled_fonts_are_at_least_8pt(kinds: dict[str, tuple[str, go.Figure]], width: str) -> None:
    for name, (_, fig) in kinds.items():
        styled = style_figure(fig, style="paper", width=width).to_plotly_json()
        sizes = list(_font_sizes(styled))
        assert any(where.startswith(".layout.font") for where, _ in sizes), name
        small = [(where, size) for where, size in sizes if size < MIN_PX]
        assert not small, f"{name}: fonts below {MIN_PT} pt: {small}"
        layout = styled["layout"]
        for axis in [k for k in layout if re.fullmatch(r"[xy]axis\d*", k)]:
            assert layout[axis]["tickfont"]["size"] >= MIN_PX, (name, axis)
        assert layout["legend"]["font"]["size"] >= MIN_PX, name
        assert layout.get("uniformtext", {}).get("minsize", 0) >= MIN_PX, name  # bar texts never shrink


def _trace_colours(trace: dict[str, Any]) -> Iterator[str]:
    for part, key in (("marker", "color"), ("line", "color"), ("error_y", "color"), ("error_x", "color")):
        value = trace.get(part, {}).get(key)
        if isinstance(value, str):
            yield value
        elif isinstance(value, (list, tuple, np.ndarray)):
            yield from (str(v) for v in value if isinstance(v, str))
    if isinstance(trace.get("fillcolor"), str):
        yield trace["fillcolor"]


@pytest.mark.slow
def test_every_figure_uses_only_the_palette(kinds: dict[str, tuple[str, go.Figure]]) -> None:
    for name, (_, fig) in kinds.items():
        for styled in (fig, style_figure(fig)):
            data = styled.to_plotly_json()
            assert [c.upper() for c in data["layout"].get("colorway", [])] == list(palette.OKABE_ITO), name
            for trace in data["data"]:
                kind = trace.get("type")
                if kind == "heatmap":
                    resolved = go.Heatmap(trace).colorscale
                    assert palette.check_scale(resolved), (name, "colour scale", resolved)
                    continue
                colours = list(_trace_colours(trace))
                assert colours, f"{name}: trace {trace.get('name')!r} has no colour of its own"
                off = [c for c in colours if not palette.check_colour(c)]
                assert not off, f"{name}: trace {trace.get('name')!r} uses colours outside the palette: {off}"
            for shape in data["layout"].get("shapes", []):
                for colour in (shape.get("line", {}).get("color"), shape.get("fillcolor")):
                    assert colour is None or palette.check_colour(colour), (name, shape)


def test_palette_is_not_plotly_default() -> None:
    assert not palette.check_colour("#636efa") and not palette.check_colour("#EF553B")
    assert palette.check_colour("rgba(0,114,178,0.15)") and palette.check_colour("#444444")


def test_interval_bands_are_fills_without_edges(kinds: dict[str, tuple[str, go.Figure]]) -> None:
    from analysis.export.style import is_band

    checked = 0
    for name in ("depth", "depth_11", "report_depth_11"):
        fig = kinds[name][1]
        runs = {t.legendgroup or t.name for t in fig.data if not is_band(t)}
        for styled in (fig, style_figure(fig, width="single"), style_figure(fig, width="double")):
            bands = [t for t in styled.data if t.fill not in (None, "none")]
            assert len(bands) >= len(runs), (name, len(bands), len(runs))  # one band per run at least
            for band in bands:
                assert band.line.width == 0 or band.mode == "none", f"{name}: band {band.name!r} has an edge line"
                checked += 1
    assert checked > 40


def test_highlighted_run_stands_out(kinds: dict[str, tuple[str, go.Figure]]) -> None:
    fig = kinds["depth_11"][1]
    lines = [t for t in fig.data if t.fill in (None, "none")]
    focus = [t for t in lines if t.opacity == 1.0]
    assert len(focus) == 1 and "mwz-en-predicted" in focus[0].name
    assert all(t.opacity < 1 and t.line.width < focus[0].line.width for t in lines if t is not focus[0])
    assert fig.data[-1].name == focus[0].name  # drawn on top
    shapes = kinds["domains_11"][1].layout.shapes  # the heatmap outlines the run's row
    assert len(shapes) == 1 and shapes[0].line.width == 2
    few = pd.DataFrame(
        {"run_id": ["a", "b"] * 2, "turn_index": [0, 0, 1, 1], "jga": [0.9, 0.8, 0.7, 0.6], "n_turns": 4}
    )
    alike = F.depth_lines(few, highlight="a")  # two runs: compared side by side, none muted
    assert {t.opacity for t in alike.data} == {1.0} and {t.line.width for t in alike.data} == {None}


# --- rendered files --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rendered(kinds: dict[str, tuple[str, go.Figure]], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every kind at both widths in PDF, SVG and PNG (one kaleido batch per width), and the SVG texts."""
    if not HAVE_CHROMIUM:
        pytest.skip("no Chromium (make test installs it)")
    out: dict[str, Any] = {}
    # One browser (with write_figures' tabs) for both widths, and one measuring browser for every SVG,
    # instead of two of each: the same files, rendered and measured the same way.
    with E.export_session():
        for width in ("single", "double"):
            folder = tmp_path_factory.mktemp(f"figures-{width}")
            E.write_figures([(fig, folder / name) for name, (_, fig) in kinds.items()], width=width)
            out[width] = folder
    measured = svg_texts([out[width] / f"{name}.svg" for width in ("single", "double") for name in kinds])
    for width in ("single", "double"):
        out[width, "svg"] = {path: m for path, m in measured.items() if path.parent == out[width]}
    return out


def _pdf_page(path: Path) -> tuple[float, float]:
    return pdf_words(path)[0]


@pytest.mark.slow
@pytest.mark.parametrize("width", ["single", "double"])
def test_pdf_svg_png_widths_agree_at_acl_sizes(rendered: dict[str, Any], kinds: dict, width: str) -> None:
    width_in = {"single": 3.03, "double": 6.3}[width]
    assert preset("paper", width).width_in == width_in
    folder = rendered[width]
    for name in kinds:
        root = ET.fromstring((folder / f"{name}.svg").read_text(encoding="utf-8"))
        view = [float(v) for v in root.get("viewBox", "").split()]
        assert root.get("width") == f"{width_in:g}in", name
        assert view[2] == pytest.approx(width_in * 96, abs=0.01), name
        assert float(root.get("height", "0in")[:-2]) == pytest.approx(view[3] / 96, abs=0.001), name
        if HAVE_POPPLER:
            page_w, page_h = _pdf_page(folder / f"{name}.pdf")
            assert page_w == pytest.approx(width_in * 72, abs=0.01), (name, page_w)
            assert page_h == pytest.approx(view[3] * 0.75, abs=0.01), (name, page_h)
        info = png_info((folder / f"{name}.png").read_bytes())
        assert info["dpi"] == 300
        assert info["width"] == round(width_in * 300), (name, info)
        assert abs(info["height"] - view[3] / 96 * 300) <= 1, (name, info)


@pytest.mark.parametrize("width", ["single", "double"])
def test_svg_text_inside_canvas_and_at_least_8pt(rendered: dict[str, Any], kinds: dict, width: str) -> None:
    folder = rendered[width]
    for name in kinds:
        measured = rendered[width, "svg"][folder / f"{name}.svg"]
        assert measured["texts"], name
        assert measured["scrollbars"] == 0, f"{name}: the legend scrolls"
        w, h = measured["width"], measured["height"]
        for text in measured["texts"]:
            box = (text["x0"], text["y0"], text["x1"], text["y1"])
            inside = box[0] >= -0.5 and box[1] >= -0.5 and box[2] <= w + 0.5 and box[3] <= h + 0.5
            assert inside, f"{name} ({width}): {text['text']!r} at {box} outside the {w:g} x {h:g} canvas"
            assert text["size"] / PX_PER_PT >= MIN_PT - 0.01, f"{name}: {text['text']!r} at {text['size']:.2f} px"


@pytest.mark.parametrize("width", ["single", "double"])
def test_tick_labels_do_not_overlap(rendered: dict[str, Any], kinds: dict, width: str) -> None:
    """Tick labels of one axis (wrapped, upright or level) never draw over each other."""
    folder = rendered[width]
    for name in kinds:
        measured = rendered[width, "svg"][folder / f"{name}.svg"]
        for group in ("xtick", "ytick"):
            boxes = [t for t in measured["texts"] if t["group"] == group]
            for i, a in enumerate(boxes):
                for b in boxes[i + 1 :]:
                    overlap_x = min(a["x1"], b["x1"]) - max(a["x0"], b["x0"])
                    overlap_y = min(a["y1"], b["y1"]) - max(a["y0"], b["y0"])
                    assert overlap_x <= 1 or overlap_y <= 1, f"{name} ({width}): {a['text']!r} over {b['text']!r}"


CJK = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef]")


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_POPPLER, reason="pdftotext/pdftoppm (poppler-utils) not installed")
@pytest.mark.parametrize("width", ["single", "double"])
def test_pdf_words_and_ink_inside_the_page(rendered: dict[str, Any], kinds: dict, width: str, tmp_path: Path) -> None:
    """Word boxes from pdftotext (font boxes, so 1 pt of slack for ascent/descent; CJK words skipped:
    poppler's boxes of upright CJK glyphs are wrong) and the page rendered at 150 dpi by pdftoppm: no ink
    on its outermost pixels."""
    folder = rendered[width]
    for name in kinds:
        (page_w, page_h), words = pdf_words(folder / f"{name}.pdf")
        assert words, name
        for word, x0, y0, x1, y1 in words:
            if CJK.search(word):
                continue
            inside = x0 >= -1 and y0 >= -1 and x1 <= page_w + 1 and y1 <= page_h + 1
            assert inside, f"{name} ({width}): PDF word {word!r} at {(x0, y0, x1, y1)} outside {page_w} x {page_h}"
        stem = tmp_path / name
        subprocess.run(
            ["pdftoppm", "-r", "150", "-png", "-singlefile", str(folder / f"{name}.pdf"), str(stem)],
            check=True,
            timeout=60,
        )
        (w, h), ink = png_ink(stem.with_suffix(".png"))
        assert ink is not None, name
        assert ink[0] >= 1 and ink[1] >= 1 and ink[2] <= w - 2 and ink[3] <= h - 2, (name, width, ink, (w, h))


@pytest.mark.slow
@pytest.mark.parametrize("width", ["single", "double"])
def test_png_ink_inside_a_margin(rendered: dict[str, Any], kinds: dict, width: str) -> None:
    folder = rendered[width]
    for name in kinds:
        (w, h), ink = png_ink(folder / f"{name}.png")
        assert ink is not None, name
        margin = 2  # pixels at 300 dpi: the outermost two rows and columns are background
        inside = ink[0] >= margin and ink[1] >= margin and ink[2] < w - margin and ink[3] < h - margin
        assert inside, f"{name} ({width}): ink {ink} touches the {w} x {h} border"


@pytest.mark.parametrize("name", ["depth_11", "report_depth_11", "domains_11", "report_domains_11"])
@pytest.mark.parametrize("width", ["single", "double"])
def test_eleven_runs_every_run_labelled_inside(
    rendered: dict[str, Any], demo: dict[str, Any], name: str, width: str
) -> None:
    """Eleven runs: each run's legend entry (lines) or row label (heatmap) is drawn inside the canvas."""
    runs = [s.metas[0].run_id for s in _eleven(demo)]
    measured = rendered[width, "svg"][rendered[width] / f"{name}.svg"]
    assert measured["scrollbars"] == 0
    w, h = measured["width"], measured["height"]
    labels = {re.sub(r"\s", "", t["text"]): t for t in measured["texts"]}
    for run in runs:
        text = labels.get(run)
        assert text is not None, f"{name}: no label of run {run!r} in {sorted(labels)[:20]}"
        assert text["x0"] >= 0 and text["x1"] <= w and text["y0"] >= 0 and text["y1"] <= h, (run, text)
    if "depth" in name and width == "double":  # the legend uses the width: two columns, not eleven rows
        assert len({round(labels[run]["x0"]) for run in runs}) >= 2


def test_style_json_round_trip_keeps_sizes(kinds: dict[str, tuple[str, go.Figure]]) -> None:
    """The dashboard caches figures as JSON: styling a round-tripped figure gives the same size."""
    fig = kinds["domains_11"][1]
    again = go.Figure(json.loads(fig.to_json()))
    assert style_figure(again).layout.height == style_figure(fig).layout.height


def test_save_png_renderings_of_pdfs(rendered: dict[str, Any]) -> None:
    """A few PDFs rendered by poppler, kept small under tests/screenshots/figures/ for people to look at."""
    if not HAVE_POPPLER:
        pytest.skip("pdftoppm (poppler-utils) not installed")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for width, name in (
        ("single", "depth_11"),
        ("single", "domains"),
        ("double", "report_domains_11"),
        ("single", "fj_leaderboard"),
    ):
        stem = SCREENSHOTS / f"{name}-{width}"
        subprocess.run(
            ["pdftoppm", "-r", "110", "-png", "-singlefile", str(rendered[width] / f"{name}.pdf"), str(stem)],
            check=True,
            timeout=60,
        )
        assert png_info(stem.with_suffix(".png").read_bytes())["width"] > 300
