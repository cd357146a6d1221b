"""Issue 18 req 2 (paper-ready tables) and req 8 (honest heatmaps).

Tables: booktabs LaTeX with human headers and no internal columns, intervals folded into the metric
cell as `[low, high]` or `±half-width`, the best value bolded per column (per domain in a per-domain
table) among comparable runs only, a caption and a label on every table, and the same leaderboard
LaTeX from the dashboard's export and from the report. Heatmaps: the colour scale starts at 0, the
colour bar has a title, and an empty cell is blank while a cell of one is coloured.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from analysis import export as E
from analysis import figures as F
from analysis.export import tables as T
from analysis.model import RunInfo
from tests.export_inspect import latex_environments_balanced

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "data" / "demo" / "workspace.toml"

# The Overview's leaderboard frame as the page passes it to `ui.show_table` (machine names, the sorted
# metric's bounds, the internal columns at the end).
BOARD = pd.DataFrame(
    {
        "run_id": ["mwz_a", "mwz_b", "cw_a"],
        "system": ["A", "B", "A"],
        "dataset": ["MultiWOZ 2.1", "MultiWOZ 2.1", "CrossWOZ"],
        "language": ["en", "en", "zh"],
        "split": ["test"] * 3,
        "history": ["predicted"] * 3,
        "convention": ["exact"] * 3,
        "n_dialogues": [100, 100, 80],
        "n_turns": [700, 700, 600],
        "jga": [0.519, 0.625, 0.9],
        "slot_f1_micro": [0.93, 0.91, 0.97],
        "jga_low": [0.507, 0.600, 0.88],
        "jga_high": [0.531, 0.650, 0.92],
        "not_applicable": ["", "", "Slot accuracy n/a: x"],
        "n_warnings": [0, 2, 0],
        "warnings": ["", "w1 | w2", ""],
    }
)


def _dashboard_latex(frame: pd.DataFrame, name: str, **options: object) -> str:
    from ui import place

    return place._table_file(frame, "latex", name=name, **options).decode("utf-8")  # type: ignore[arg-type]


def _header(tex: str) -> str:
    return tex.split("\\toprule", 1)[1].split("\\midrule", 1)[0].strip()


def _body_rows(tex: str) -> list[str]:
    body = tex.split("\\midrule", 1)[1].split("\\bottomrule", 1)[0]
    return [line for line in body.strip().splitlines() if line.endswith("\\\\")]


def _floats(tex: str) -> list[str]:
    """The table floats of a snippet (a table too wide for the page prints in parts of its columns)."""
    return ["\\begin{table" + part for part in tex.split("\\begin{table")[1:]]


def test_dashboard_leaderboard_latex_is_booktabs_with_human_headers_and_no_internal_columns() -> None:
    tex = _dashboard_latex(BOARD, "leaderboard", na_rep="n/a")
    assert latex_environments_balanced(tex)
    floats = _floats(tex)
    for part in floats:
        for rule in ("\\toprule", "\\midrule", "\\bottomrule"):
            assert part.count(rule) == 1
    # 11 columns do not fit ACL's page at 8 pt: parts, each led by the run column, all columns once.
    rows = [re.sub(r"\s*(\\\\|\\tabularnewline)$", "", _header(part)) for part in floats]
    headers = [h.replace("\\raggedright ", "").strip() for row in rows for h in row.split("&")]
    assert [h for h in headers if h != "run"] == [
        "system",
        "dataset",
        "language",
        "split",
        "history",
        "convention",
        "dialogues",
        "turns",
        "JGA",
        "Slot F1 (micro)",
    ]
    assert "\\_" not in _header(tex)  # no snake_case header
    for internal in ("warning", "not\\_applicable", "applicable", "w1"):
        assert internal not in tex.split("\\begin{tabular}")[1]
    assert "\\caption{Leaderboard (part 1 of" in tex and "\\label{tab:leaderboard}" in tex
    # Chosen columns: one float, booktabs, the bounds folded into the JGA cell, never a column of their own.
    tex = _dashboard_latex(BOARD, "leaderboard", na_rep="n/a", columns=["run", "dataset", "JGA", "slot_f1_micro"])
    assert len(_floats(tex)) == 1
    assert re.search(r"\\begin\{tabular\}\{llrr\}", tex)
    assert _header(tex) == "run & dataset & JGA & Slot F1 (micro) \\\\"
    assert "\\caption{Leaderboard.}" in tex and "\\label{tab:leaderboard}" in tex
    rows = _body_rows(tex)
    assert len(rows) == 3
    assert re.search(r"0\.519 \{\\(small|footnotesize|scriptsize) \{\[\}0\.507, 0\.531\{\]\}\}", rows[0])
    assert "\\textbf{0.625} {" in rows[1] and "{[}0.600, 0.650{]}" in rows[1]
    assert "\\textbf{0.600}" not in tex and "\\textbf{0.650}" not in tex
    # One bold per metric column among the two comparable MultiWOZ runs; CrossWOZ's run stands alone
    # (its higher numbers are not the MultiWOZ runs' best), even with the columns that say so left out.
    assert tex.count("\\textbf{") == 2
    assert "\\textbf{0.930}" in rows[0] and "\\textbf" not in rows[2]
    with pytest.raises(ValueError, match="no column F2: the table's columns are run, system"):
        _dashboard_latex(BOARD, "leaderboard", columns=["run", "F2"])


def test_interval_forms_pm_and_brackets() -> None:
    chosen = {"columns": ["run", "JGA", "Slot F1 (micro)"]}
    pm = _dashboard_latex(BOARD, "leaderboard", interval_form="pm", **chosen)
    assert re.search(r"0\.519 \{\\\w+ \$\\pm\$0\.012\}", pm) and re.search(
        r"\\textbf\{0\.625\} \{\\\w+ \$\\pm\$0\.025\}", pm
    )
    assert "[0.507, 0.531]" not in pm and "$\\pm$ is half the width" in pm
    brackets = _dashboard_latex(BOARD, "leaderboard", interval_form="brackets", **chosen)
    assert "{[}0.507, 0.531{]}" in brackets and "$\\pm$" not in brackets
    markdown = E.table_bytes(BOARD, "markdown", interval_form="pm").decode()
    assert "| 0.519 ±0.012 |" in markdown and "| **0.625** ±0.025 |" in markdown
    assert "| run | system |" in markdown and "warnings" not in markdown
    with pytest.raises(ValueError, match="interval_form has to be one of brackets, pm"):
        E.table_bytes(BOARD, "latex", interval_form="plusminus")
    assert E.table_bytes(BOARD, "csv", columns=["run", "JGA"]).decode().splitlines()[0] == (
        '"run_id","jga","jga_low","jga_high"'
    )
    # CSV keeps every column, bounds and diagnostics included, at full precision.
    csv = E.table_bytes(BOARD, "csv").decode()
    header = [c.strip('"') for c in csv.splitlines()[0].split(",")]
    assert header[-5:] == ["jga_low", "jga_high", "not_applicable", "n_warnings", "warnings"]


def _per_domain() -> pd.DataFrame:
    rows = []
    values = {  # run -> domain -> JGA; cw_a is best everywhere but on another dataset
        "mwz_a": {"hotel": 0.5, "taxi": 0.8, "train": 0.6},
        "mwz_b": {"hotel": 0.7, "taxi": 0.6, "train": 0.65},
        "cw_a": {"hotel": 0.95, "taxi": 0.95, "train": 0.95},
    }
    for run, domains in values.items():
        for domain, jga in domains.items():
            rows.append(
                {"run_id": run, "domain": domain, "jga": jga, "n_turns": 50, "jga_low": jga - 0.1, "jga_high": jga}
            )
    return pd.DataFrame(rows)


METAS = {
    "mwz_a": RunInfo(run_id="mwz_a", dataset="MultiWOZ 2.1", split="test", history="predicted"),
    "mwz_b": RunInfo(run_id="mwz_b", dataset="MultiWOZ 2.1", split="test", history="predicted"),
    "cw_a": RunInfo(run_id="cw_a", dataset="CrossWOZ", split="test", history="predicted"),
}


def test_per_domain_table_bolds_one_best_per_domain_among_comparable_runs() -> None:
    from ui import place

    frame = _per_domain()
    groups = place.run_groups(frame, METAS)
    assert groups is not None and len(set(groups)) == 2
    tex = _dashboard_latex(frame, "per-domain JGA", groups=groups)
    assert "\\caption{Per-domain JGA.}" in tex and "\\label{tab:per-domain-jga}" in tex
    assert _header(tex) == "run & domain & JGA & turns \\\\"
    bold = {tuple(r.split(" & ")[:2]): "\\textbf" in r for r in _body_rows(tex)}
    # One best per domain (not one for the whole table), among the MultiWOZ runs only.
    assert [k for k, b in bold.items() if b] == [("mwz\\_a", "taxi"), ("mwz\\_b", "hotel"), ("mwz\\_b", "train")]
    assert tex.count("\\textbf{") == 3
    assert "best value per domain" in tex
    # Without the runs' metadata every run is compared, still per domain: cw_a wins each domain.
    alone = _dashboard_latex(frame, "per-domain JGA")
    assert [k for k, b in {tuple(r.split(" & ")[:2]): "\\textbf" in r for r in _body_rows(alone)}.items() if b] == [
        ("cw\\_a", "hotel"),
        ("cw\\_a", "taxi"),
        ("cw\\_a", "train"),
    ]


def test_wide_per_domain_table_bolds_per_column() -> None:
    wide = _per_domain().pivot_table(index="run_id", columns="domain", values="jga").reset_index()
    wide = wide.set_index("run_id").loc[["mwz_a", "mwz_b"]].reset_index()  # the two MultiWOZ runs
    tex = E.table_bytes(wide, "latex", caption="JGA per domain").decode()
    rows = _body_rows(tex)
    assert tex.count("\\textbf{") == 3
    assert "\\textbf{0.800}" in rows[0] and "\\textbf{0.700}" in rows[1] and "\\textbf{0.650}" in rows[1]
    assert "\\label{tab:jga-per-domain}" in tex


def test_direction_of_best_comes_from_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    frame = BOARD.iloc[:2][["run_id", "dataset", "jga"]]
    assert "\\textbf{0.625}" in E.table_bytes(frame, "latex").decode()
    monkeypatch.setattr(T, "_LOWER_BETTER", {"jga"})  # as if the registry said lower is better
    assert "\\textbf{0.519}" in E.table_bytes(frame, "latex").decode()


def test_every_latex_table_has_a_caption_and_a_label() -> None:
    tex = E.table_bytes(BOARD[["run_id", "jga"]], "latex").decode()
    assert "\\caption{Table.}" in tex and "\\label{tab:table}" in tex
    tex = E.table_bytes(BOARD[["run_id", "jga"]], "latex", caption="Runs & 95% intervals").decode()
    assert "\\label{tab:runs-95-intervals}" in tex


@pytest.fixture(scope="module")
def demo_report(demo_plan) -> tuple[object, dict[str, object]]:
    """The demo's report plan with the dashboard's 1,000 resamples (`demo_plan`, planned once per session)."""
    return demo_plan, {t.name: t for t in demo_plan.tables}


@pytest.mark.slow
@pytest.mark.parametrize("form", ["brackets", "pm"])
def test_dashboard_and_report_write_the_same_leaderboard_latex(demo_report: tuple, form: str) -> None:
    from analysis.views import comparable_groups
    from analysis.workspace import read_manifest
    from ui import data, place

    _, tables = demo_report
    item = tables["leaderboard"]
    report = E.table_bytes(item.frame, "latex", caption=item.caption, **{"interval_form": form, **item.options})
    sources, failed = data.load_workspace(read_manifest(DEMO))
    assert not failed
    export_as = place.leaderboard_export(list(sources), sources=sources, choice=data.DECLARED)
    dashboard = place._table_file(pd.DataFrame(), "latex", name="leaderboard", interval_form=form, export_as=export_as)
    assert dashboard.decode() == report.decode()
    tex = report.decode()
    assert "\\label{tab:leaderboard}" in tex and "\\caption{Leaderboard: " in tex
    assert "\\_" not in _header(tex) and "warning" not in _header(tex) and " low" not in _header(tex)
    assert ("$\\pm$0" in tex) == (form == "pm") and (re.search(r"\{\\\w+ \{\[\}0\.", tex) is not None) == (
        form == "brackets"
    )
    # One bold per metric column in every group of two or more comparable runs.
    sizes = comparable_groups(item.frame).value_counts()
    n_metrics = len(item.options["intervals"])
    assert tex.count("\\textbf{") == n_metrics * int((sizes > 1).sum())


@pytest.mark.slow
def test_report_domain_table_bolds_per_domain_among_comparable_runs(demo_report: tuple) -> None:
    from analysis.views import comparable_groups

    _, tables = demo_report
    item = tables["domain-jga"]
    frame = item.frame
    tex = E.table_bytes(frame, "latex", caption=item.caption, **item.options).decode()
    keys = comparable_groups(frame) + "/" + frame["domain"]
    expected = int((keys.value_counts() > 1).sum())  # one winner per (comparable group, domain) of 2+ runs
    assert tex.count("\\textbf{") >= expected > 1  # ties are all bold
    rows = _body_rows(tex)
    winners = [r for r in rows if "\\textbf" in r]
    # never two winners of one domain in one comparable group, unless tied
    seen = {}
    for row in winners:
        cells = row.split(" & ")
        key = (cells[0], cells[2], cells[3], cells[4])  # dataset, history, convention, domain
        value = re.search(r"\\textbf\{([^}]*)\}", row).group(1)  # type: ignore[union-attr]
        assert seen.setdefault(key, value) == value
    assert "history" in _header(tex) and "convention" in _header(tex)


def test_report_cli_takes_the_interval_form(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from analysis.cli.main import build_parser
    from analysis.export import report as R

    args = build_parser().parse_args(["report", str(DEMO), "--out", str(tmp_path), "--intervals", "pm"])
    seen: dict[str, object] = {}
    monkeypatch.setattr(R, "build_report", lambda *a, **k: seen.update(k) or [])
    assert args.func(args) == 0
    assert seen["intervals"] == "pm"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["report", str(DEMO), "--out", str(tmp_path), "--intervals", "pct"])


@pytest.mark.slow
def test_latex_tables_compile_with_pdflatex(tmp_path: Path) -> None:
    pdflatex = shutil.which("pdflatex")
    if pdflatex is None:
        pytest.skip("pdflatex not installed (TeX is not a test dependency; install texlive-latex-extra to run this)")
    tables = [_dashboard_latex(BOARD, "leaderboard", interval_form=f) for f in ("pm", "brackets")]
    document = "\n".join([r"\documentclass{article}", r"\usepackage{booktabs}", r"\begin{document}", *tables])
    (tmp_path / "t.tex").write_text(document + "\n\\end{document}\n", encoding="utf-8")
    done = subprocess.run(
        [pdflatex, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", "t.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-3000:]


# --- heatmaps (req 8) ------------------------------------------------------------------------------


def _heatmap(fig: object) -> dict:
    traces = [t for t in fig.to_plotly_json()["data"] if t["type"] == "heatmap"]  # type: ignore[attr-defined]
    assert len(traces) == 1
    return traces[0]


def _colour_at(scale: list, position: float) -> str:
    """The scale's colour at or just below `position` (enough to tell white from a colour)."""
    colour = scale[0][1]
    for at, value in scale:
        if float(at) <= position:
            colour = value
    return str(colour).lower()


def _check_counts(trace: dict, *, zero: tuple[int, int], one: tuple[int, int]) -> None:
    assert trace["zmin"] == 0
    title = trace["colorbar"]["title"]
    assert title.get("text") if isinstance(title, dict) else title, "the colour bar needs a title"
    z = trace["z"]
    assert z[zero[0]][zero[1]] is None  # an empty cell is blank ...
    if "text" in trace and trace.get("texttemplate") and trace["text"] is not None:
        assert trace["text"][zero[0]][zero[1]] in ("", None) or "0" in trace["text"][zero[0]][zero[1]]
    value = float(z[one[0]][one[1]])
    assert value > 0
    scale = trace["colorscale"]
    assert isinstance(scale, (list, tuple)), "an explicit scale whose low end is a colour, not white"
    position = (value - trace["zmin"]) / (trace["zmax"] - trace["zmin"]) if trace.get("zmax") else 0.0
    assert _colour_at(scale, position) not in ("#ffffff", "white", "rgb(255,255,255)", "#fff")


def test_confusion_heatmap_zero_is_blank_and_one_is_coloured() -> None:
    confusions = pd.DataFrame({"gold": ["a", "a", "b"], "predicted": ["x", "y", "x"], "n": [1, 30, 2]})
    trace = _heatmap(F.confusion_heatmap(confusions))
    gold, pred = ["a", "b"], ["x", "y"]
    assert trace["y"] == gold and trace["x"] == pred
    _check_counts(trace, zero=(1, 1), one=(0, 0))
    assert trace["text"][1][1] == "" and trace["text"][0][0] == "1" and trace["text"][1][0] == "2"
    assert trace["colorbar"]["title"]["text"] == "slot rows"


def test_first_error_heatmap_starts_at_zero() -> None:
    runs = [f"r{i}" for i in range(5)]  # beyond four runs the bars become a heatmap
    rows = []
    for i, run in enumerate(runs):
        rows += [
            {"run_id": run, "label": "0", "share": 0.0 if i == 0 else 0.1, "n_dialogues": 0 if i == 0 else 1},
            {"run_id": run, "label": "none", "share": 1.0 if i == 0 else 0.9, "n_dialogues": 10 if i == 0 else 9},
        ]
    trace = _heatmap(F.first_error_bar(pd.DataFrame(rows)))
    _check_counts(trace, zero=(0, 0), one=(1, 0))


def test_agreement_heatmap_has_a_titled_scale_from_zero() -> None:
    counts = {"both_correct": 50, "only_a": 1, "only_b": 0, "both_wrong": 7}
    trace = _heatmap(F.agreement_heatmap(counts, run_a="a", run_b="b"))
    assert trace.get("showscale", True) is not False
    _check_counts(trace, zero=(1, 0), one=(0, 1))


def test_jga_heatmap_scale_is_zero_to_one_with_a_title() -> None:
    frame = pd.DataFrame(
        {"run_id": ["a", "a", "b"], "domain": ["hotel", "taxi", "hotel"], "jga": [0.0, 0.5, 1.0], "n_turns": [5] * 3}
    )
    trace = _heatmap(F.jga_heatmap(frame, by="domain"))
    assert trace["zmin"] == 0 and trace["zmax"] == 1 and trace["colorbar"]["title"]["text"] == "JGA"
    assert trace["text"][1][1] == ""  # no value (run b has no taxi turns): blank; a JGA of 0 is a value


def test_significance_heatmap_is_centred_on_zero_with_a_title() -> None:
    # A signed difference: the diverging scale is centred on 0 (its honest "start"), titled Δ.
    table = pd.DataFrame(
        {
            "row": ["a", "b"],
            "column": ["b", "a"],
            "delta": [0.1, -0.1],
            "low": [0.05, -0.15],
            "high": [0.15, -0.05],
            "significant": [True, True],
            "p_text": ["p 0.001"] * 2,
            "p_holm_text": ["Holm p 0.002"] * 2,
            "metric": ["jga"] * 2,
            "family_size": [1] * 2,
        }
    )
    trace = _heatmap(F.significance_heatmap(table))
    assert trace["zmid"] == 0 and trace["colorbar"]["title"]["text"] == "Δ"


@pytest.mark.parametrize("normalize", [True, False])
def test_fewjoint_intent_confusion_zero_is_blank(normalize: bool) -> None:
    from analysis.fewjoint.figures import intent_confusion_heatmap

    confusion = pd.DataFrame(
        {
            "domain": ["d"] * 3,
            "seed": ["1"] * 3,
            "gold_intent": ["a", "a", "b"],
            "pred_intent": ["a", "b", "b"],
            "count": [40, 1, 9],
        }
    )
    result = SimpleNamespace(confusion=confusion, seeds=["1"], system="s")
    trace = _heatmap(intent_confusion_heatmap(result, normalize=normalize))  # type: ignore[arg-type]
    _check_counts(trace, zero=(1, 0), one=(0, 1))
    assert trace["zmax"] == (1 if normalize else 40)


def test_an_empty_table_of_runs_still_exports() -> None:
    from ui import place

    empty = _per_domain().iloc[:0]
    assert place.run_groups(empty, METAS) is None
    tex = _dashboard_latex(empty, "per-domain JGA", groups=None)
    assert "\\toprule" in tex and "\\textbf" not in tex and "\\label{tab:per-domain-jga}" in tex
