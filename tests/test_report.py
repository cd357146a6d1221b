"""The `report` sub-command: a small real workspace (three demo runs, a mapping, a FewJoint system)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from analysis import figures as F
from analysis import metrics as M
from analysis.cli.main import main
from analysis.errors import InputError
from analysis.export import browser as export_browser
from analysis.export import figures as E
from analysis.export import report as R
from analysis.scoring import score_run
from analysis.workspace import load_workspace
from tests.export_inspect import latex_environments_balanced, pdf_info, png_info, svg_info

DEMO = Path(__file__).resolve().parent.parent / "data" / "demo"
HAVE_CHROMIUM = Path("/usr/bin/chromium").exists() or E.browser_path() is not None
needs_chromium = pytest.mark.skipif(not HAVE_CHROMIUM, reason="no Chromium (make test installs it)")
RUNS = ["simulated-A-mwz-en-predicted", "simulated-A-mwz-en-gold", "simulated-A-mwz-zh-predicted"]


def _small_workspace(folder: Path) -> Path:
    """A manifest over three of the demo's runs (absolute paths), its en/zh mapping and its FewJoint system."""
    demo = (DEMO / "workspace.toml").read_text(encoding="utf-8")
    blocks = re.split(r"\n(?=\[\[)", demo)
    keep = ['[workspace]\nname = "Report test"\nconvention = "exact"\nallow_outside_root = true\n']
    for block in blocks:
        name = re.search(r'^name = "([^"]+)"', block, flags=re.M)
        is_mapping = block.startswith("[[mappings]]") and f'a = "{RUNS[0]}"' in block
        if (
            (block.startswith("[[runs]]") and name and name.group(1) in RUNS)
            or is_mapping
            or block.startswith("[[fewjoint]]")
        ):
            keep.append(block)
    text = "\n".join(keep)
    text = re.sub(r'(pred|gold) = "([^"]+)"', lambda m: f'{m.group(1)} = "{(DEMO / m.group(2)).as_posix()}"', text)
    text = re.sub(
        r"pred = \[([^\]]+)\]",
        lambda m: (
            "pred = ["
            + ", ".join(f'"{(DEMO / p.strip().strip(chr(34))).as_posix()}"' for p in m.group(1).split(","))
            + "]"
        ),
        text,
    )
    path = folder / "workspace.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def workspace_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (DEMO / "workspace.toml").exists():
        pytest.skip("demo workspace missing")
    return _small_workspace(tmp_path_factory.mktemp("ws"))


@pytest.fixture(scope="module")
def report(workspace_path: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[R.Written]]:
    """One report for every test below, written with one browser."""
    if not HAVE_CHROMIUM:
        pytest.skip("no Chromium (make test installs it)")
    out = tmp_path_factory.mktemp("report")
    written = R.build_report(workspace_path, out, n_resamples=200, progress=False, pdf=False)  # PDF: test_report_latex
    return out, written


@pytest.fixture(scope="module")
def plan(workspace_path: Path) -> R.ReportPlan:
    """The small workspace's report plan, planned once for the three tests that read it (200 resamples: the
    pairwise test compares with `compare` at 200; the others' interval checks hold at any count). Read it,
    never change it."""
    return R.plan_report(load_workspace(workspace_path), n_resamples=200)


# --- planning, no browser -------------------------------------------------------------------------


def test_small_workspace_loads(workspace_path: Path) -> None:
    ws = load_workspace(workspace_path)
    assert list(ws.runs) == RUNS and not ws.failed
    assert list(ws.fewjoint) == ["simulated"]


def test_crosslingual_pairs_from_mappings_and_shared_dialogues() -> None:
    if not (DEMO / "workspace.toml").exists():
        pytest.skip("demo workspace missing")
    ws = load_workspace(DEMO / "workspace.toml")
    scoreds = {r: score_run(run) for r, run in ws.runs.items()}
    pairs = R.crosslingual_pairs(ws, scoreds)
    assert pairs[:2] == [
        ("simulated-A-mwz-en-predicted", "simulated-A-mwz-zh-predicted"),
        ("simulated-A-crosswoz-zh-predicted", "simulated-A-crosswoz-en-predicted"),
    ]
    # found without a mapping: same system and history, other language, same dialogues
    assert ("simulated-A-mwz-en-gold", "simulated-A-mwz-zh-gold") in pairs
    # never across systems or history modes
    assert all(scoreds[a].metas[0].system == scoreds[b].metas[0].system for a, b in pairs)
    assert all(scoreds[a].metas[0].history == scoreds[b].metas[0].history for a, b in pairs)


@pytest.mark.slow
def test_plan_uses_dashboard_builders_and_run_colours(plan: R.ReportPlan) -> None:
    names = [f.name for f in plan.figures]
    assert names[0] == "leaderboard"
    assert {f"slot-f1-{R._slug(r)}" for r in RUNS} <= set(names)
    assert {"domain-jga-multiwoz-2.1", "depth-jga-multiwoz-zh", "compounding-simulated-a-mwz-en-predicted"} <= set(
        names
    )
    assert "crosslingual-slot-simulated-a-mwz-en-predicted-vs-simulated-a-mwz-zh-predicted" in names
    assert "fewjoint-seeds-simulated" in names
    colours = F.run_colours([*RUNS, "simulated"])
    by_name = {f.name: f.figure for f in plan.figures}
    (bars,) = by_name["leaderboard"].data  # one trace, each bar its run's colour
    board_colours = dict(zip(bars.x, bars.marker.color, strict=True))
    assert board_colours == {r: colours[r] for r in RUNS}
    for run in RUNS:
        assert by_name[f"slot-f1-{R._slug(run)}"].data[0].marker.color == colours[run]
    depth_lines = {t.name: t.line.color for t in by_name["depth-jga-multiwoz-2.1"].data if t.mode}
    assert depth_lines == {RUNS[0]: colours[RUNS[0]], RUNS[1]: colours[RUNS[1]]}
    # intervals really are drawn: asymmetric error bars around each bar
    bar = by_name["leaderboard"].data[0]
    assert bar.error_y.visible and bar.error_y.array[0] > 0 and bar.error_y.arrayminus[0] > 0


@pytest.mark.slow  # plans a report (`plan_report`): a report build
def test_leaderboard_numbers_are_the_metrics_modules(workspace_path: Path, plan: R.ReportPlan) -> None:
    ws = load_workspace(workspace_path)
    table = next(t for t in plan.tables if t.name == "leaderboard").frame
    for run_id, run in ws.runs.items():
        scored = score_run(run)
        row = table[table["run"] == run_id].iloc[0]
        assert row["JGA"] == pytest.approx(M.joint_goal_accuracy(scored))
        assert row["JGA low"] <= row["JGA"] <= row["JGA high"]
        assert row["JGA high"] - row["JGA low"] > 0.01


@pytest.mark.slow  # plans a report (`plan_report`): a report build
def test_pairwise_table_has_the_compare_numbers_and_significance_marks(
    workspace_path: Path, plan: R.ReportPlan
) -> None:
    from analysis.compare import compare
    from analysis.export.tables import table_bytes

    ws = load_workspace(workspace_path)
    pairwise = [t for t in plan.tables if t.name.startswith("pairwise-")]
    assert len(pairwise) == 1  # predicted and gold history of run A share multiwoz21's gold; zh is alone
    item = pairwise[0]
    assert "Holm" in item.caption
    table = item.frame
    scoreds = {r: score_run(ws.runs[r]) for r in RUNS[:2]}
    result = compare(scoreds, metrics=R.PAIRWISE_METRICS, n_resamples=200)
    assert table["pair (b − a)"].tolist() == [f"{RUNS[1]} − {RUNS[0]}"] * 2
    expected = result.overall().reset_index(drop=True)
    assert table["Δ"].tolist() == pytest.approx(expected["delta"].tolist())
    assert table["Δ low"].tolist() == pytest.approx(expected["low"].tolist())
    assert table["sig."].tolist() == ["*" if s else "n.s." for s in expected["significant"]]
    assert table["sig."].tolist()[0] == "*"  # JGA of the gold-history run is far above the predicted one
    jga = table[table["metric"] == "JGA"].iloc[0]
    mc = result.mcnemar.iloc[0]
    assert f"only b {mc['b01']} / only a {mc['b10']} turns" in jga["McNemar (turn JGA)"]
    markdown = table_bytes(table, "markdown", **item.options).decode()
    first_row = markdown.splitlines()[2]
    assert f"{jga['Δ']:.3f} [" in first_row and r"| \* |" in first_row  # markdown escapes the mark


@pytest.mark.slow
def test_bad_workspace_is_input_error_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(InputError, match="manifest not found"):
        R.build_report(tmp_path / "nope.toml", tmp_path / "out", progress=False)
    assert main(["report", str(tmp_path / "nope.toml"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "nope.toml" in err


def test_bad_formats_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["report", "x.toml", "--out", str(tmp_path), "--formats", "pdf,eps"])
    assert info.value.code == 2
    assert "formats are a comma-separated list of pdf, svg, png" in capsys.readouterr().err


def test_no_chromium_stops_with_install_hint(
    workspace_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(export_browser, "browser_path", lambda: None)
    code = main(["report", str(workspace_path), "--out", str(tmp_path), "--resamples", "50", "--no-progress"])
    assert code == 3
    err = capsys.readouterr().err
    assert "apt-get install chromium" in err and "make test" in err


# --- the written report (Chromium) ----------------------------------------------------------------


@pytest.mark.slow
@needs_chromium
def test_index_lists_every_file(report: tuple[Path, list[R.Written]]) -> None:
    out, written = report
    files = {p.name for p in out.iterdir()}
    index = (out / "index.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"\]\(([^)]+)\)", index))
    assert listed == files - {"index.md", "index.html"}
    assert {p.name for w in written for p in w.files} == listed
    assert "index.html" in files
    assert all(w.caption for w in written)
    figures = [w for w in written if w.kind == "figure"]
    # PDF, SVG, PNG and the LaTeX snippet that includes the PDF with its caption
    assert all(
        [p.name for p in w.files] == [f"{w.name}.{x}" for x in ("pdf", "svg", "png")] + [f"fig-{w.name}.tex"]
        for w in figures
    )
    assert [[p.name for p in w.files] for w in written if w.kind == "document"] == [["main.tex"]]  # pdf=False
    main_tex = (out / "main.tex").read_text(encoding="utf-8")
    tables = [w.name for w in written if w.kind == "table"]
    # Every figure and table once; tables sit beside the figures they belong to (the order `main.tex` prints).
    assert sorted(re.findall(r"^\\input\{([^}]+)\}$", main_tex, flags=re.M)) == sorted(
        [*(f"fig-{w.name}.tex" for w in figures), *(f"{t}.tex" for t in tables)]
    )
    assert len(files) >= 40


@pytest.mark.slow
@needs_chromium
def test_every_figure_file_is_well_formed(report: tuple[Path, list[R.Written]]) -> None:
    from analysis.export.style import preset

    out, written = report
    spec = preset("paper", "single")
    for item in (w for w in written if w.kind == "figure"):
        pdf = pdf_info((out / f"{item.name}.pdf").read_bytes())
        assert pdf["pages"] == 1 and pdf["images"] == 0 and pdf["fonts_embedded"], item.name
        assert pdf["text"], item.name
        svg = svg_info((out / f"{item.name}.svg").read_bytes())
        assert svg["width"] == f"{spec.width_in:g}in" and svg["fonts"], item.name
        png = png_info((out / f"{item.name}.png").read_bytes())
        assert (png["width"], png["dpi"]) == (spec.png_width(), 300), item.name


@pytest.mark.slow
@needs_chromium
def test_paper_figures_have_no_title(report: tuple[Path, list[R.Written]]) -> None:
    out, _ = report
    texts = " ".join(svg_info((out / "leaderboard.svg").read_bytes())["texts"])
    assert "JGA per run" not in texts and "simulated-A-mwz-en-gold" in texts


def _rgb(hex_colour: str) -> str:
    red, green, blue = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgb({red}, {green}, {blue})"


@pytest.mark.slow
@needs_chromium
def test_same_run_same_colour_in_every_file(report: tuple[Path, list[R.Written]]) -> None:
    out, _ = report
    colours = F.run_colours([*RUNS, "simulated"])
    leaderboard = svg_info((out / "leaderboard.svg").read_bytes())["fills"]
    domains = svg_info((out / "domain-jga-multiwoz-2.1.svg").read_bytes())["fills"]
    for run in RUNS:
        assert _rgb(colours[run]) in leaderboard
        slot_fills = svg_info((out / f"slot-f1-{R._slug(run)}.svg").read_bytes())["fills"]
        assert _rgb(colours[run]) in slot_fills
        others = {_rgb(colours[r]) for r in RUNS if r != run}
        assert not others & slot_fills
    assert {_rgb(colours[r]) for r in RUNS[:2]} <= domains
    assert _rgb(colours[RUNS[2]]) not in domains  # the zh run is another dataset's figure


@pytest.mark.slow
@needs_chromium
def test_tables_latex_markdown_csv(report: tuple[Path, list[R.Written]]) -> None:
    out, _ = report
    tex = (out / "leaderboard.tex").read_text(encoding="utf-8")
    assert latex_environments_balanced(tex)
    body = tex.split("\\midrule", 1)[1].split("\\bottomrule", 1)[0]
    rows = [line for line in body.strip().splitlines() if line.endswith(("\\\\", "\\tabularnewline"))]
    assert [r.split(" & ")[0].replace("\\raggedright", "").strip() for r in rows] == RUNS
    # The three runs differ in history mode or dataset: no two are comparable, so no value is "best".
    assert not any("\\textbf{" in r for r in rows)
    assert "among comparable runs only" in tex
    csv = pd.read_csv(out / "leaderboard.csv")
    assert list(csv["run"]) == RUNS and {"JGA", "JGA low", "JGA high"} <= set(csv.columns)
    md = (out / "leaderboard.md").read_text(encoding="utf-8")
    assert md.count("\n| simulated-A") == 3
    seeds = pd.read_csv(out / "fewjoint-seeds-simulated.csv")
    assert list(seeds["metric"]) == ["intent accuracy", "slot F1", "sentence accuracy"]
    per_seed = seeds[[c for c in seeds.columns if c.startswith("seed ")]]
    assert per_seed.shape[1] == 5
    assert seeds["mean"].to_numpy() == pytest.approx(per_seed.mean(axis=1).to_numpy())
    assert seeds["std"].to_numpy() == pytest.approx(per_seed.std(axis=1, ddof=1).to_numpy())
    domain_tex = (out / "domain-jga.tex").read_text(encoding="utf-8")
    assert (latex_environments_balanced(domain_tex) and "餐厅" in domain_tex) or "旅馆" in domain_tex
