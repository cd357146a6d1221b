"""The report as LaTeX: a snippet per figure, main.tex, and main.pdf compiled by the TeX Live that
`make test` installs (scripts/system-deps.sh); each compiling test skips, with the reason, without it.

Figures here are tiny hand-made PDFs (no Chromium) except in the demo report at the end, which needs both
Chromium and LaTeX and checks main.pdf's pages and that every caption is in its text (pdftotext).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import unicodedata
from pathlib import Path

import pandas as pd
import pytest

from analysis.cli.main import main
from analysis.export import figures as E
from analysis.export import report as R
from analysis.export.latex import SYMBOLS, is_cjk
from analysis.export.tables import latex_escape

DEMO = Path(__file__).resolve().parent.parent / "data" / "demo"
HAVE_LATEX = R.latex_engine() is not None
HAVE_PDFTOTEXT = shutil.which("pdftotext") is not None
needs_latex = pytest.mark.skipif(
    not HAVE_LATEX, reason="no xelatex/pdflatex (make test installs TeX Live: scripts/system-deps.sh)"
)
needs_pdftotext = pytest.mark.skipif(not HAVE_PDFTOTEXT, reason="no pdftotext (poppler-utils: scripts/system-deps.sh)")
HOSTILE = r"run_1 & 100% #2 $x$ {y} ~z ^w \relax [o] <a>|b"
CHINESE = "餐厅-名称"


def _tiny_pdf(path: Path, width: float = 218.0, height: float = 120.0) -> None:
    """A valid one-page PDF with nothing drawn (what \\includegraphics needs, without Chromium)."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {width} {height}] /Resources << >> /Contents 4 0 R >>".encode(),
        b"<< /Length 16 >>\nstream\n0 0 m 10 10 l S\nendstream",
    ]
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    path.write_bytes(out)


def _fake_figures(stems: list, *, formats: tuple = ("pdf",), progress: object = None, **_: object) -> None:
    for _figure, stem in stems:
        for fmt in formats:
            path = stem.with_name(f"{stem.name}.{fmt}")
            if fmt == "pdf":
                _tiny_pdf(path)
            else:
                path.write_bytes(b"")
            if callable(progress):
                progress(path)


def _hostile_plan() -> R.ReportPlan:
    import plotly.graph_objects as go

    frame = pd.DataFrame(
        {"run": [HOSTILE, "b"], "domain": [CHINESE, "hotel"], "JGA": [0.5, 0.625], "lo": [0.4, 0.5], "hi": [0.6, 0.7]}
    )
    return R.ReportPlan(
        title=f"Workspace {HOSTILE}",
        figures=[
            R.FigureItem(f"slot-f1-{R._slug(HOSTILE)}", f"Per-slot F1 of run {HOSTILE}: b − a ±0.1, Δ.", go.Figure()),
            R.FigureItem("domain-jga-multiwoz-2.1", f"JGA per domain of {CHINESE}.", go.Figure()),
            R.FigureItem("domain-jga-multiwoz-2.1", "Same name as the one before: written as -2.", go.Figure()),
        ],
        tables=[
            R.TableItem("leaderboard", f"Leaderboard of {HOSTILE}.", frame, {"intervals": {"JGA": ("lo", "hi")}}),
        ],
        notes=[f"run {HOSTILE}x not loaded: broken"],
        warnings=[f"Dataset versions differ within MultiWOZ: {HOSTILE} (2.1) vs b (2.4)."],
    )


def _words(text: str) -> str:
    """Text as pdftotext may give it back: NFKC, lower case, letters, digits and CJK only (hyphenation,
    line breaks, ligatures and TeX's quotes and dashes do not matter)."""
    text = unicodedata.normalize("NFKC", text).lower()
    return "".join(re.findall(r"[0-9a-z\u4e00-\u9fff]", text))


HAVE_CJKUTF8 = bool(shutil.which("kpsewhich")) and bool(
    subprocess.run(["kpsewhich", "CJKutf8.sty"], capture_output=True, text=True, check=False).stdout.strip()
)


def _as_printed(text: str, engine: str) -> str:
    """What an engine prints of `text`: pdflatex prints CJK with CJKutf8 (when installed) and other
    characters its fonts lack as [U+XXXX]."""
    if engine == "xelatex":
        return text

    def shown(c: str) -> str:
        kept = ord(c) <= 0x17F or c in R._PDFLATEX_CHARS or c in SYMBOLS or (HAVE_CJKUTF8 and is_cjk(c))
        return c if kept else f"[U+{ord(c):04X}]"

    return "".join(shown(c) for c in text)


def _pdf_pages(path: Path, *, raw: bool = False) -> list[str]:
    """The text of each page; `raw`: in content order (a paragraph running on into the next column stays whole)."""
    options = ["-raw"] if raw else []
    text = subprocess.run(
        ["pdftotext", *options, "-enc", "UTF-8", str(path), "-"], capture_output=True, check=True
    ).stdout
    return text.decode("utf-8").split("\f")[:-1]  # pdftotext ends every page with a form feed


# --- snippets and main.tex, no LaTeX needed --------------------------------------------------------


def test_figure_snippet_escapes_the_caption_and_labels_the_figure() -> None:
    text = R.figure_snippet("slot-f1-run_1", f"Per-slot F1 of {HOSTILE}.", "slot-f1-run_1.pdf")
    assert "\\begin{figure}[t]" in text and "\\end{figure}" in text
    assert "\\includegraphics[width=\\columnwidth]{{slot-f1-run_1}.pdf}" in text
    assert f"\\caption{{Per-slot F1 of {latex_escape(HOSTILE)}.}}" in text
    assert "\\label{fig:slot-f1-run_1}" in text
    caption = text.split("\\caption", 1)[1].split("\n", 1)[0]
    assert not re.search(r"(?<!\\)[&%#$_^~]", caption)  # every special character escaped
    assert "\\{y\\}" in caption and "\\textbackslash{}relax" in caption
    wide = R.figure_snippet("a.b", "c", "a.b.pdf", wide=True)
    assert "\\begin{figure*}[t]" in wide and "width=\\textwidth" in wide and "{{a.b}.pdf}" in wide


def test_main_tex_inputs_every_snippet_and_the_notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(R.E, "write_figures", _fake_figures)  # the package report.py calls
    written = R.write_report(_hostile_plan(), tmp_path, formats=("pdf",), progress=False)
    main_tex = (tmp_path / "main.tex").read_text(encoding="utf-8")
    inputs = re.findall(r"^\\input\{([^}]+)\}$", main_tex, flags=re.M)
    figures = [w for w in written if w.kind == "figure"]
    assert [w.name for w in figures] == [
        f"slot-f1-{R._slug(HOSTILE)}",
        "domain-jga-multiwoz-2.1",
        "domain-jga-multiwoz-2.1-2",  # a second figure of one name does not overwrite the first
    ]
    assert inputs == [*(f"fig-{w.name}.tex" for w in figures), "leaderboard.tex"]
    assert all((tmp_path / name).is_file() for name in inputs)
    assert latex_escape(_hostile_plan().warnings[0]) in main_tex
    assert latex_escape(_hostile_plan().notes[0]) in main_tex
    # pdflatex's branch sets CJK with CJKutf8, or declares it missing without; no raw Chinese in main.tex
    # itself; symbols are commands in the snippets (the minus sign: $-$), nothing to declare
    assert "\\usepackage{CJKutf8}" in main_tex
    assert "\\DeclareUnicodeCharacter{9910}{\\missingchar{9910}}" in main_tex
    assert "\\DeclareUnicodeCharacter{2212}" not in main_tex
    assert "b $-$ a $\\pm$0.1, $\\Delta$" in (tmp_path / f"fig-slot-f1-{R._slug(HOSTILE)}.tex").read_text(
        encoding="utf-8"
    )
    assert not re.search("[\u4e00-\u9fff]", main_tex)
    index = (tmp_path / "index.md").read_text(encoding="utf-8")
    assert "## Whole report" in index and "(main.tex)" in index and "main.pdf" not in index
    assert all(f"(fig-{w.name}.tex)" in index for w in figures)


def test_main_tex_without_pdf_figures_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(R.E, "write_figures", _fake_figures)  # the package report.py calls
    R.write_report(_hostile_plan(), tmp_path, formats=("svg",), progress=False)
    main_tex = (tmp_path / "main.tex").read_text(encoding="utf-8")
    assert "fig-" not in main_tex and "\\input{leaderboard.tex}" in main_tex
    assert "main.tex holds no figure" in (tmp_path / "index.md").read_text(encoding="utf-8")


def test_no_latex_is_a_clear_error_and_no_pdf_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(R.E, "write_figures", _fake_figures)  # the package report.py calls
    monkeypatch.setattr(R, "latex_engine", lambda: None)
    with pytest.raises(R.CompileError, match=r"no LaTeX to compile main\.tex: install xelatex or pdflatex"):
        R.write_report(_hostile_plan(), tmp_path, formats=("pdf",), progress=False, pdf=True)
    assert (tmp_path / "main.tex").exists() and (tmp_path / "index.md").exists()
    assert not (tmp_path / "main.pdf").exists()

    def failing(*_: object, **__: object) -> list[R.Written]:
        raise R.CompileError("out/main.tex did not compile with xelatex: ! Undefined control sequence. (l.3 \\x)")

    monkeypatch.setattr(R, "build_report", failing)
    assert main(["report", "ws.toml", "--out", str(tmp_path), "--no-progress"]) == 4
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "! Undefined control sequence. (l.3 \\x)" in err
    assert "Traceback" not in err


# --- compiled --------------------------------------------------------------------------------------


@needs_latex
def test_compile_failure_reports_the_first_error_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(R.E, "write_figures", _fake_figures)  # the package report.py calls
    monkeypatch.setattr(R, "figure_snippet", lambda *a, **k: "\\begin{figure}\\undefinedreportmacro\\end{figure}\n")
    (tmp_path / "main.pdf").write_bytes(b"an earlier report's PDF")
    with pytest.raises(R.CompileError) as info:
        R.write_report(_hostile_plan(), tmp_path, formats=("pdf",), progress=False, pdf=True)
    message = str(info.value)
    assert "did not compile with" in message and "Undefined control sequence" in message
    assert "fig-slot-f1" in message and "undefinedreportmacro" in message  # the file, line and context
    assert (tmp_path / "main.log").exists() and not (tmp_path / "main.pdf").exists()
    assert "main.pdf not written" in (tmp_path / "index.md").read_text(encoding="utf-8")


@pytest.mark.slow
@needs_latex
@needs_pdftotext
@pytest.mark.parametrize("engine", ["xelatex", "pdflatex"])
def test_hostile_names_compile_and_print_literally(
    engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not shutil.which(engine):
        pytest.skip(f"no {engine} (make test installs it: scripts/system-deps.sh)")
    chosen = R.latex_engine(engine)
    monkeypatch.setattr(R, "latex_engine", lambda: chosen)
    monkeypatch.setattr(R.E, "write_figures", _fake_figures)  # the package report.py calls
    plan = _hostile_plan()
    written = R.write_report(plan, tmp_path, formats=("pdf",), progress=False, pdf=True)
    document = next(w for w in written if w.kind == "document")
    assert [p.name for p in document.files] == ["main.tex", "main.pdf"] and engine in document.caption
    pages = _pdf_pages(tmp_path / "main.pdf")
    text = _words("".join(pages))
    for caption in [f.caption for f in plan.figures] + [t.caption for t in plan.tables] + plan.warnings:
        assert _words(_as_printed(caption, engine)) in text, caption
    raw = "".join(pages)
    # the special characters print as themselves, not as TeX commands or lost
    for piece in ("run_1 & 100% #2 $x$ {y} ~z ^w \\relax [o]", "<a>|b"):
        assert piece in " ".join(raw.split()), piece
    assert (CHINESE in raw) if engine == "xelatex" or HAVE_CJKUTF8 else ("[U+9910]" in raw)


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory: pytest.TempPathFactory, demo_plan: R.ReportPlan) -> tuple[Path, list[R.Written]]:
    """The demo's report written and compiled into main.pdf, from the session's plan (`demo_plan`; `build_report`
    plans, then writes as here: test_report.py builds a report from its manifest)."""
    if not (Path("/usr/bin/chromium").exists() or E.browser_path() is not None):
        pytest.skip("no Chromium (make test installs it)")
    if not HAVE_LATEX or not HAVE_PDFTOTEXT:
        pytest.skip("no LaTeX or pdftotext (make test installs them: scripts/system-deps.sh)")
    out = tmp_path_factory.mktemp("demo-report")
    # PDF figures only: every test here reads the figure PDFs, the snippets, main.tex/main.pdf and index.md,
    # never an SVG or PNG (main.tex includes the PDFs); SVG and PNG of a built report are test_report.py's.
    return out, R.write_report(demo_plan, out, formats=("pdf",), progress=False, pdf=True)


@pytest.mark.slow
def test_demo_main_pdf_has_every_caption_and_no_empty_page(demo_report: tuple[Path, list[R.Written]]) -> None:
    out, written = demo_report
    document = next(w for w in written if w.kind == "document")
    assert [p.name for p in document.files] == ["main.tex", "main.pdf"]
    engine = "xelatex" if "xelatex" in document.caption else "pdflatex"
    info = subprocess.run(["pdfinfo", str(out / "main.pdf")], capture_output=True, text=True, check=True).stdout
    n_pages = int(re.search(r"^Pages:\s+(\d+)", info, flags=re.M).group(1))  # type: ignore[union-attr]
    pages = [_words(p) for p in _pdf_pages(out / "main.pdf")]
    assert len(pages) == n_pages
    figures = [w for w in written if w.kind == "figure"]
    tables = [w for w in written if w.kind == "table"]
    where: dict[str, list[int]] = {}
    for item in figures + tables:
        caption = _words(_as_printed(item.caption, engine))
        where[item.name] = [at for at, page in enumerate(pages) if caption in page]
        assert where[item.name], f"caption of {item.name} not in main.pdf"
    # Pages: the front matter (title, comparability notes), then pages of floats only, none empty.
    float_pages = {at for found in where.values() for at in found}
    front = min(float_pages)
    assert front >= 1 and all(pages[at] for at in range(front))
    assert "comparability" in pages[0] and "differentdatasets" in "".join(pages[:front])
    assert n_pages == front + len(float_pages), "a page without any figure or table"
    raw = " ".join(" ".join(_pdf_pages(out / "main.pdf")).split())
    assert len(re.findall(r"Figure \d+:", raw)) == len(figures)
    # a table too wide or too long for one page prints in parts, each a float of its own
    floats = sum((out / f"{t.name}.tex").read_text(encoding="utf-8").count("\\begin{table") for t in tables)
    assert floats >= len(tables) and len(re.findall(r"Table \d+:", raw)) == floats
    if engine == "xelatex":
        assert "餐厅" in raw  # the per-domain table's Chinese domains, in Noto CJK


@pytest.mark.slow
def test_demo_index_has_every_comparability_note(demo_report: tuple[Path, list[R.Written]]) -> None:
    from analysis import views
    from analysis.scoring import score_run
    from analysis.workspace import load_workspace

    out, _ = demo_report
    ws = load_workspace(DEMO / "workspace.toml")
    scoreds = [score_run(run, run.meta.convention) for run in ws.runs.values()]
    board = views.leaderboard(scoreds)
    notes = R.comparability_notes(board, scoreds)
    assert views.comparability_warnings(board) == notes[: len(views.comparability_warnings(board))]
    assert any(
        n.startswith("Alignment of simulated-C-mwz-en-predicted: 5 gold turns have no prediction") for n in notes
    )
    index = (out / "index.md").read_text(encoding="utf-8")
    pdf_text = _words("".join(_pdf_pages(out / "main.pdf", raw=True)))  # a note may run on into the next column
    for note in notes:
        assert f"- {note}" in index.replace("\\", "")
        assert _words(note) in pdf_text


def test_notes_name_runs_of_one_dataset_on_different_gold(monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    board = pd.DataFrame(
        {
            "run_id": ["a", "b", "c"],
            "dataset": ["MultiWOZ 2.1"] * 3,
            "split": ["test"] * 3,
            "convention": ["exact"] * 3,
            "history": ["predicted"] * 3,
            "not_applicable": ["", "Slot accuracy n/a: slots outside the ontology", ""],
            "warnings": ["", "", "2 gold turns have no prediction | 1 dialogue differs"],
            "jga": np.array([0.5, 0.6, 0.7]),
        }
    )

    monkeypatch.setattr(R.views, "gold_groups", lambda scoreds: [["a", "c"]])
    notes = R.comparability_notes(board, [])
    assert notes[0].startswith("Not on the same gold although of one dataset, split, convention and history mode")
    assert "a, c vs b" in notes[0]
    assert "Not applicable: b: Slot accuracy n/a: slots outside the ontology." in notes
    assert "Alignment of c: 2 gold turns have no prediction; 1 dialogue differs." in notes


# --- issue 42: every snippet and main.tex compile in an ACL-like two-column page, with both engines -----

REAL_WORKSPACE_RUNS = {  # real files: a CrossWOZ run (Chinese names), a Chinese RiSAWOZ run, a MultiWOZ run
    "crosswoz-rule-dst": ("CrossWOZ", "zh", ("crosswoz_ruledst/test_preds.json", "crosswoz/test.json.zip")),
    "xrisawoz-zh": ("RiSAWOZ", "zh", ("xrisawoz_llm/zh.jsonl",)),
    "mlcsg-trade": ("MultiWOZ 2.1", "en", ("mlcsg/all_prediction_TRADE.json",)),
}


def _snippets(out: Path) -> list[str]:
    return sorted(p.name for p in out.glob("*.tex") if p.name != R.MAIN_TEX and not p.name.startswith("acl-"))


def _assert_compiles(out: Path, engine: str, tmp_path: Path) -> None:
    """Every snippet of the report in one ACL-like document, and main.tex, under `engine`: no error, no
    overfull box over 1 pt, no Type 3 font in the PDFs (the figures' included); every figure PDF too."""
    from tests import acl_latex

    snippets = _snippets(out)
    assert any(s.startswith("fig-") for s in snippets) and any(not s.startswith("fig-") for s in snippets)
    paper = acl_latex.compile_snippets(out, snippets, engine, name="acl")
    assert paper.problems() == [], (engine, paper.problems(), paper.errors[:3])
    whole = acl_latex.compile_tex(out, R.MAIN_TEX, engine, build=tmp_path / engine)
    assert whole.problems() == [], (engine, whole.problems(), whole.errors[:3])
    assert paper.font_types and whole.font_types
    for pdf in sorted(out.glob("*.pdf")):
        assert "Type 3" not in acl_latex.pdf_font_types(pdf), pdf.name


@pytest.mark.slow
@needs_latex
@pytest.mark.parametrize("engine", ["pdflatex", "xelatex"])
def test_demo_snippets_and_main_compile_in_an_acl_page(
    demo_report: tuple[Path, list[R.Written]], engine: str, tmp_path: Path
) -> None:
    from tests.acl_latex import HAVE_TEX

    if not HAVE_TEX:
        pytest.skip("pdflatex, xelatex and pdffonts are needed (scripts/system-deps.sh)")
    _assert_compiles(demo_report[0], engine, tmp_path)


@pytest.fixture(scope="module")
def real_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.conftest import realdata_path

    if not (Path("/usr/bin/chromium").exists() or E.browser_path() is not None):
        pytest.skip("no Chromium (make test installs it)")
    if not HAVE_LATEX:
        pytest.skip("no LaTeX (make test installs it: scripts/system-deps.sh)")
    blocks = ['[workspace]\nname = "Real files 真实"\nallow_outside_root = true\n']
    for name, (dataset, language, files) in REAL_WORKSPACE_RUNS.items():
        paths = [realdata_path(*f.split("/")).as_posix() for f in files]
        gold = f'gold = "{paths[1]}"\n' if len(paths) > 1 else ""
        blocks.append(
            f'[[runs]]\nname = "{name}"\nsystem = "{name}"\ndataset = "{dataset}"\nlanguage = "{language}"\n'
            f'pred = "{paths[0]}"\n{gold}'
        )
    folder = tmp_path_factory.mktemp("real-report")
    (folder / "workspace.toml").write_text("\n".join(blocks), encoding="utf-8")
    out = folder / "out"
    R.build_report(folder / "workspace.toml", out, formats=("pdf",), n_resamples=50, progress=False)
    return out


@pytest.mark.slow
@pytest.mark.realdata
@pytest.mark.parametrize("engine", ["pdflatex", "xelatex"])
def test_real_report_snippets_and_main_compile_in_an_acl_page(real_report: Path, engine: str, tmp_path: Path) -> None:
    from tests.acl_latex import HAVE_TEX

    if not HAVE_TEX:
        pytest.skip("pdflatex, xelatex and pdffonts are needed (scripts/system-deps.sh)")
    _assert_compiles(real_report, engine, tmp_path)


def test_grayscale_report_gives_every_trace_its_marker_or_pattern(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import plotly.graph_objects as go

    from analysis.palette import DISTINCT, pattern

    seen: list = []

    def capture(stems: list, **options: object) -> None:
        seen.extend(figure for figure, _ in stems)
        _fake_figures(stems, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(R.E, "write_figures", capture)
    bars = go.Figure([go.Bar(x=["a", "b"], y=[1, 2], marker_color=[DISTINCT[0], DISTINCT[9]])])
    plan = R.ReportPlan("grey", figures=[R.FigureItem("bars", "Bars.", bars)])
    R.write_report(plan, tmp_path, formats=("pdf",), progress=False, grayscale=True)
    assert list(seen[0].data[0].marker.pattern.shape) == ["", pattern(9)[0]] and pattern(9) != pattern(0)
    assert bars.data[0].marker.pattern.shape is None  # the plan's own figure is left as it was
    with pytest.raises(ValueError, match="no column F2"):
        R.write_report(plan, tmp_path, formats=("pdf",), progress=False, columns=["run", "F2"])
