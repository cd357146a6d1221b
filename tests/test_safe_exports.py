"""Issue 14 req 4: every CSV the project writes is safe to open in a spreadsheet (OWASP CSV injection),
and every LaTeX table escapes what comes from data (compiled with pdflatex where TeX is installed)."""

from __future__ import annotations

import ast
import csv
import io
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from analysis import export as E
from analysis.export import report as R
from analysis.review import AnnotationStore, Item
from analysis.safe_csv import FORMULA_TRIGGERS, frame_csv, neutralise_cell, restore_cell
from tests.export_inspect import latex_environments_balanced

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = [
    '=HYPERLINK("http://evil.example","x")',
    "+1+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(A1:A9)",
    "\t=1",
    "\r=1",
    "'=already quoted",
]
LATEX_HOSTILE = [
    r"a\b{c}$d&e#f^g_h%i~j",
    "<script>|pipe|",
    "[2pt] bracket",
    "*starred",
    "line\n\nbreak\ttab\x00nul",
    r"\input{/etc/passwd}",
    "}\\end{tabular}",
]


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


@pytest.mark.parametrize("trigger", FORMULA_TRIGGERS)
def test_every_trigger_is_prefixed_and_quoted(trigger: str) -> None:
    text = frame_csv(pd.DataFrame({"name": [f"{trigger}1+1", "plain"]}))
    assert text.splitlines()[1] == f'"\'{trigger}1+1"' or trigger == "\r"  # a CR stays inside its quotes
    assert _rows(text)[1:] == [[f"'{trigger}1+1"], ["plain"]]


def test_table_csv_neutralises_text_and_keeps_numbers() -> None:
    frame = pd.DataFrame(
        {"run": HOSTILE, "delta": [-0.5, 0.25, -1.0, 0.0, 2.0, -3.5, 1.0], "n": [-1, 2, 3, 4, 5, 6, 7]}
    )
    frame["=header"] = ["-0.5"] * len(frame)  # a text column holding a number-like string is text
    text = E.table_bytes(frame, "csv").decode("utf-8")
    rows = _rows(text)
    assert rows[0] == ["run", "delta", "n", "'=header"]
    assert [r[0] for r in rows[1:]] == [neutralise_cell(h) for h in HOSTILE]
    assert all(r[0].startswith("'") for r in rows[1:])
    assert text.splitlines()[1].startswith('"\'=HYPERLINK(""http')  # quoted, inner quotes doubled
    # Numbers the project computed are written bare: -0.5 is a number in the spreadsheet, not a formula.
    assert text.splitlines()[1].endswith(',-0.5,-1,"\'-0.5"')
    back = pd.read_csv(io.StringIO(text))
    assert list(back["delta"]) == list(frame["delta"]) and list(back["n"]) == list(frame["n"])


def test_restore_undoes_neutralise() -> None:
    for text in [*HOSTILE, "", "'", "''", "'plain", "plain", "it's", "''=x"]:
        assert restore_cell(str(neutralise_cell(text))) == text


def test_annotations_csv_export_is_neutralised_and_round_trips(tmp_path: Path) -> None:
    store = AnnotationStore(f"sqlite:///{tmp_path / 'a.sqlite'}")
    for n, comment in enumerate(HOSTILE):
        item = Item("=ds", f"-dlg{n}", n, domain="@hotel", slot="+area", run_id="=run")
        store.annotate(item, ["other"], comment.replace("\r", " "), reviewer=f"@rev{n}")
    path = tmp_path / "export.csv"
    assert store.export_csv(path) == len(HOSTILE)
    rows = _rows(path.read_text(encoding="utf-8"))
    header = rows[0]
    for row in rows[1:]:
        cells = dict(zip(header, row, strict=True))
        for column in ("dataset", "dialogue_id", "domain", "slot", "run_id", "reviewer"):
            assert cells[column].startswith("'"), (column, cells[column])
        assert not cells["comment"] or cells["comment"][0] not in FORMULA_TRIGGERS
    before = store.annotations()
    assert store.import_csv(path) == 0  # the neutralised export reads back as exactly what was stored
    other = AnnotationStore(f"sqlite:///{tmp_path / 'b.sqlite'}")
    assert other.import_csv(path) == len(HOSTILE)
    columns = ["item_key", "reviewer", "comment", "tags", "dataset", "dialogue_id", "domain", "slot", "run_id"]
    assert other.annotations()[columns].to_dict("records") == before[columns].to_dict("records")


@pytest.mark.slow
def test_report_csv_is_neutralised(tmp_path: Path) -> None:
    frame = pd.DataFrame({"run": HOSTILE[:3], "JGA": [0.5, -0.25, 0.75]})
    plan = R.ReportPlan("=title", tables=[R.TableItem("hostile", "=caption", frame)])
    R.write_report(plan, tmp_path, formats=(), progress=False)
    rows = _rows((tmp_path / "hostile.csv").read_text(encoding="utf-8"))
    assert [r[0] for r in rows[1:]] == [neutralise_cell(h) for h in HOSTILE[:3]]
    assert [r[1] for r in rows[1:]] == ["0.5", "-0.25", "0.75"]


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
def test_no_csv_is_written_around_the_safe_writer() -> None:
    """Every CSV goes through `analysis.safe_csv.frame_csv`: no other `to_csv` or `csv.writer` call
    in the code that writes files (analysis/, ui/, pages/, app.py)."""
    offenders = []
    for path in [*ROOT.glob("analysis/**/*.py"), *ROOT.glob("ui/*.py"), *ROOT.glob("pages/*.py"), ROOT / "app.py"]:
        if path.name == "safe_csv.py" or not path.exists():
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and (
                node.attr == "to_csv"
                or (
                    node.attr in ("writer", "DictWriter")
                    and isinstance(node.value, ast.Name)
                    and node.value.id == "csv"
                )
            ):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


# ------------------------------------------------------------------------------------------------- LaTeX


def _hostile_table() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "run": LATEX_HOSTILE,
            "slot & <name>": [f"s_{n}%" for n in range(len(LATEX_HOSTILE))],
            "JGA": [0.5, 0.25, 0.75, 0.1, 0.2, 0.3, 0.4],
            "lo": [0.4, 0.2, 0.7, 0.0, 0.1, 0.2, 0.3],
            "hi": [0.6, 0.3, 0.8, 0.2, 0.3, 0.4, 0.5],
        }
    )


def _latex(frame: pd.DataFrame) -> str:
    return E.table_bytes(
        frame,
        "latex",
        caption="Caption $x$ & {y} #1 ~ ^ _ % \\ < > | [z]",
        label="tab:x}y",
        intervals={"JGA": ("lo", "hi")},
    ).decode("utf-8")


def test_latex_escapes_every_special_character() -> None:
    tex = _latex(_hostile_table())
    body = tex[tex.index("\\toprule") :]
    assert r"a\textbackslash{}b\{c\}\$d\&e\#f\textasciicircum{}g\_h\%i\textasciitilde{}j" in body
    assert r"\textless{}script\textgreater{}\textbar{}pipe\textbar{}" in body
    assert "\n{[}2pt{]} bracket" in body  # a row opening with [ is not the optional argument of \\
    assert "\n{*}starred" in body
    assert "line  break tab nul" in body and "\x00" not in tex and "\t" not in tex
    assert r"\textbackslash{}input\{/etc/passwd\}" in body
    assert r"\}\textbackslash{}end\{tabular\}" in body
    assert r"slot \& \textless{}name\textgreater{}" in body
    assert r"\caption{Caption \$x\$ \& \{y\} \#1 \textasciitilde{} \textasciicircum{} \_ \% \textbackslash{} " in tex
    assert r"\label{tab:x-y}" in tex
    assert latex_environments_balanced(tex)
    assert re.search(r"0\.500 \{\\\w+ \{\[\}0\.400, 0\.600\{\]\}\}", tex)  # our own interval brackets, braced


@pytest.mark.slow
def test_latex_with_hostile_names_compiles(tmp_path: Path) -> None:
    pdflatex = shutil.which("pdflatex")
    if pdflatex is None:
        pytest.skip("pdflatex not installed (TeX is not a test dependency; install texlive-latex-extra to run this)")
    table = _latex(_hostile_table())
    document = "\n".join(
        # OT1, pdflatex's default font encoding, where a raw < > | would print as the wrong glyph
        [r"\documentclass{article}", r"\usepackage{booktabs}", r"\begin{document}", table, r"\end{document}", ""]
    )
    (tmp_path / "t.tex").write_text(document, encoding="utf-8")
    done = subprocess.run(
        [pdflatex, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", "t.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert (tmp_path / "t.pdf").exists()
    log = (tmp_path / "t.log").read_text(encoding="utf-8", errors="replace")
    assert "(/etc/passwd" not in log  # \input from a run name was text, not a command: no file opened
