"""A quick `import analysis` and command line: the package loads its public names lazily (PEP 562), and
each sub-command imports only what it uses (issue 15, requirements 4 and 7). Module lists are read from
`sys.modules` in a fresh interpreter, since this test process has imported everything already."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import analysis
from tests.conftest import ROOT

HEAVY = ("pandas", "numpy", "pyarrow", "plotly", "streamlit", "sqlalchemy", "kaleido", "fontTools")
# What no DST metrics command needs: the report and figure stack, the dashboard, the review store.
NOT_FOR_METRICS = (
    "analysis.export",
    "analysis.figures",
    "analysis.review",
    "analysis.cli.report",
    "analysis.cli.reconcile",
    "analysis.cli.fewjoint",
    "plotly",
    "streamlit",
    "sqlalchemy",
    "kaleido",
)


def _modules_after(code: str, cwd: Path = ROOT) -> set[str]:
    """The modules a fresh interpreter holds after running `code` (which may print to stdout)."""
    probe = f"{code}\nimport sys, json\nprint('\\nMODULES ' + json.dumps(sorted(sys.modules)))\n"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("MODULES "))
    return set(json.loads(line.removeprefix("MODULES ")))


def _loaded(modules: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(p for p in prefixes if any(m == p or m.startswith(p + ".") for m in modules))


def _cli(*argv: str) -> str:
    """Run the command line's main in the probe; SystemExit (--help) is a normal end."""
    return (
        "from analysis.cli.main import main\n"
        "try:\n"
        f"    code = main({list(argv)!r})\n"
        "except SystemExit as stop:\n"
        "    code = stop.code\n"
        "assert code == 0, code\n"
    )


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("quick") / "run.jsonl"
    turns = [
        {"dialogue_id": "d1", "turn_index": 0, "gold": {"hotel": {"area": "east"}}, "pred": {"hotel": {"area": "east"}}},
        {"dialogue_id": "d1", "turn_index": 1, "gold": {"hotel": {"area": "east", "stars": "4"}}, "pred": []},
        {"dialogue_id": "d2", "turn_index": 0, "gold": {"taxi": {"leaveat": "10:00"}}, "pred": [["taxi", "leaveat", "10:00"]]},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(t) + "\n" for t in turns), encoding="utf-8")
    return path


def test_import_analysis_loads_nothing_heavy() -> None:
    modules = _modules_after("import analysis")
    assert _loaded(modules, HEAVY) == []
    assert sorted(m for m in modules if m.startswith("analysis.")) == ["analysis.errors"]


def test_every_public_name_resolves() -> None:
    assert len(analysis.__all__) == len(set(analysis.__all__)) >= 15
    assert set(analysis.__all__) == set(analysis._LAZY) | {"InputError"}
    for name in analysis.__all__:
        assert getattr(analysis, name) is not None, name
    assert set(analysis.__all__) <= set(dir(analysis))
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = analysis.no_such_name  # type: ignore[attr-defined]


def test_lazy_names_are_the_real_objects() -> None:
    from analysis import metrics as M
    from analysis.loading import load_run
    from analysis.scoring import score_run

    assert analysis.load_run is load_run and analysis.score_run is score_run and analysis.metrics is M


@pytest.mark.slow
def test_star_import_in_a_fresh_interpreter() -> None:
    modules = _modules_after(
        "from analysis import *\nassert callable(load_run) and callable(metrics.joint_goal_accuracy)"
    )
    assert "pandas" in modules  # the names are there, and now loaded


@pytest.mark.slow
@pytest.mark.parametrize("argv", [("formats",), ("conventions", "--json")], ids=lambda a: a[0])
def test_listing_commands_import_no_report_stack(argv: tuple[str, ...]) -> None:
    assert _loaded(_modules_after(_cli(*argv)), NOT_FOR_METRICS) == []


@pytest.mark.slow
def test_metrics_imports_only_what_it_uses(small_run: Path) -> None:
    modules = _modules_after(_cli("metrics", "--pred", str(small_run), "--json"))
    assert {"analysis.loading", "analysis.scoring", "analysis.suite"} <= modules  # it did run
    assert _loaded(modules, NOT_FOR_METRICS) == []


@pytest.mark.slow
@pytest.mark.parametrize(
    ("command", "unused"),
    [
        ("fewjoint", ("analysis.export", "analysis.cli.report", "analysis.cli.reconcile", "plotly", "streamlit")),
        ("reconcile", ("analysis.export", "analysis.cli.report", "analysis.cli.fewjoint", "plotly", "streamlit")),
        ("report", ("analysis.cli.fewjoint", "analysis.cli.reconcile", "streamlit")),
    ],
)
def test_each_sub_command_imports_only_its_own_module(command: str, unused: tuple[str, ...]) -> None:
    modules = _modules_after(_cli(command, "--help") + "print()\n")
    assert f"analysis.cli.{command}" in modules
    assert _loaded(modules, unused) == []


@pytest.mark.slow
def test_help_still_lists_every_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "analysis", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    for command in ("metrics", "formats", "conventions", "fewjoint", "reconcile", "report"):
        assert command in done.stdout


@pytest.mark.slow
def test_the_program_ends_at_once_with_its_whole_output(small_run: Path) -> None:
    """`python -m analysis metrics` skips Python's teardown (os._exit): the output is still complete and
    flushed, and the exit codes are the command's."""
    done = subprocess.run(
        [sys.executable, "-m", "analysis", "metrics", "--pred", str(small_run), "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and done.stderr == "", done.stderr
    result = json.loads(done.stdout)
    assert result["n_turns"] == 3 and result["jga"] == pytest.approx(2 / 3)
    bad = subprocess.run(
        [sys.executable, "-m", "analysis", "metrics", "--pred", str(small_run.with_name("absent.json"))],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert bad.returncode == 2 and bad.stdout == "" and len(bad.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_a_reader_gone_before_the_output_is_no_error() -> None:
    """Like `... | head -c 0`: the reader closed the pipe before the command wrote (the program waits
    0.5 s first), so the final flush fails: still exit 0 and nothing on stderr."""
    program = (
        "import sys, time\nfrom analysis.cli.main import main\n"
        "sys.argv = ['dst-analysis', 'conventions', '--json']\ntime.sleep(0.5)\nsys.exit(main())\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", program], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        process.stdout.close()
        assert process.wait(timeout=120) == 0
        assert process.stderr.read() == b""
