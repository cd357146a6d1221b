"""`pip install .` into a fresh venv: the package with every subpackage, the `dst-analysis` command, the
public API and the "From a notebook" lines of docs/cli.md, all used from a folder outside the repository.

Offline and fast: the fresh venv has no packages of its own, a .pth file lets it see this test's
environment (the pinned dependencies, pip and setuptools), and the project is installed with
`--no-deps --no-build-isolation --no-index`. What the dependencies would be is checked apart: the
installed metadata lists exactly requirements.txt.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

from tests.conftest import ROOT

DIST = "dst-error-analysis"


def _requirements() -> list[str]:
    lines = (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
    return [line.split("#")[0].strip() for line in lines if line.split("#")[0].strip()]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    return env | {"PIP_NO_INPUT": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "DST_CACHE_DIR": ""}


def _run(argv: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the project installed from a copy of its sources; returns the venv folder."""
    base = tmp_path_factory.mktemp("install")
    src = base / "src"
    src.mkdir()
    for name in ("pyproject.toml", "requirements.txt", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    # A copy, so the build's build/ and *.egg-info never land in the working tree.
    shutil.copytree(ROOT / "analysis", src / "analysis", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    env = base / "venv"
    made = _run([sys.executable, "-m", "venv", "--without-pip", str(env)], base)
    assert made.returncode == 0, made.stderr
    python = env / "bin" / "python"
    site = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], base)
    # This environment's packages, after the venv's own: the dependencies without a download.
    (Path(site.stdout.strip()) / "_deps_of_the_test_environment.pth").write_text(
        sysconfig.get_path("purelib") + "\n", encoding="utf-8"
    )
    pip = [str(python), "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", str(src)]
    installed = _run(pip, base, timeout=300)
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    return env


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A working folder outside the repository, with the demo data at data/ as docs/cli.md assumes."""
    (tmp_path / "data").symlink_to(ROOT / "data", target_is_directory=True)
    return tmp_path


def test_dependencies_are_requirements_txt_once() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "dependencies" not in project["project"], "one list: requirements.txt"
    assert "dependencies" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["dependencies"] == {"file": ["requirements.txt"]}
    assert project["project"]["scripts"] == {"dst-analysis": "analysis.cli.entry:run"}
    # setuptools reads the file line by line: options (-r, --hash) would break the build.
    assert not [r for r in _requirements() if r.startswith("-")]


@pytest.mark.slow
def test_every_module_is_installed(venv: Path, outside: Path) -> None:
    probe = "import analysis, json; print(json.dumps(analysis.__path__[0]))"
    done = _run([str(venv / "bin" / "python"), "-c", probe], outside)
    assert done.returncode == 0, done.stderr
    installed = Path(json.loads(done.stdout))
    assert installed.is_relative_to(venv), f"analysis imported from {installed}, not from the venv"
    # Every file, not only modules: a data file read at run time (a template, a font, JSON) must be
    # declared as package data, or the installed package would miss it.
    ours = {p.relative_to(ROOT / "analysis") for p in _files(ROOT / "analysis")}
    theirs = {p.relative_to(installed) for p in _files(installed)}
    assert sorted(map(str, ours - theirs)) == [], "files missing from the installed package (an __init__.py?)"


def _files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"]


def test_installed_metadata_lists_requirements_txt(venv: Path, outside: Path) -> None:
    probe = f"import importlib.metadata as m, json; print(json.dumps(m.requires({DIST!r})))"
    done = _run([str(venv / "bin" / "python"), "-c", probe], outside)
    assert done.returncode == 0, done.stderr
    assert sorted(json.loads(done.stdout)) == sorted(_requirements())


@pytest.mark.slow
def test_dst_analysis_command_is_python_m_analysis(venv: Path, outside: Path) -> None:
    command = _run([str(venv / "bin" / "dst-analysis"), "formats"], outside)
    module = _run([str(venv / "bin" / "python"), "-m", "analysis", "formats"], outside)
    assert command.returncode == 0, command.stderr
    assert command.stdout == module.stdout
    assert re.search(r"^jsonl\s", command.stdout, re.M)
    wrong = _run([str(venv / "bin" / "dst-analysis"), "metrics", "--pred", "no-such-file.json"], outside)
    assert wrong.returncode == 2 and len(wrong.stderr.strip().splitlines()) == 1


def test_public_api_from_outside_the_repository(venv: Path, outside: Path) -> None:
    probe = (
        "import sys, json, analysis\n"
        "heavy = 'pandas' in sys.modules\n"
        "missing = [n for n in analysis.__all__ if getattr(analysis, n, None) is None]\n"
        "print(json.dumps({'heavy': heavy, 'missing': missing, 'n': len(analysis.__all__)}))\n"
    )
    done = _run([str(venv / "bin" / "python"), "-c", probe], outside)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"heavy": False, "missing": [], "n": len(_public_names())}


def _public_names() -> list[str]:
    import analysis

    return list(analysis.__all__)


def notebook_code() -> str:
    """The first Python block under the "From a notebook" heading of docs/cli.md (the README links it)."""
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    section = text.split("\n## From a notebook\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, 'docs/cli.md: "From a notebook" has no ```python block'
    return match.group(1)


def test_documented_notebook_lines_run_outside_the_repository(venv: Path, outside: Path) -> None:
    script = outside / "notebook.py"
    script.write_text(
        notebook_code()
        + "\nimport json\n"
        + "print(json.dumps({'type': type(by_domain).__name__, 'columns': list(by_domain.columns),\n"
        + "    'domains': sorted(by_domain['domain']), 'jga': by_domain['jga'].tolist(),\n"
        + "    'n_turns': by_domain['n_turns'].tolist(), 'traces': len(fig.data), 'figure': type(fig).__name__}))\n",
        encoding="utf-8",
    )
    done = _run([str(venv / "bin" / "python"), str(script)], outside)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["type"] == "DataFrame"
    assert result["columns"] == ["run_id", "domain", "jga", "n_turns"]
    assert result["domains"] == ["attraction", "hotel", "restaurant", "taxi", "train"]
    assert all(0 < jga < 1 for jga in result["jga"]) and all(n > 0 for n in result["n_turns"])
    assert result["figure"] == "Figure" and result["traces"] == 1


def readme_commands() -> list[str]:
    """The command lines of the README's "Open your own file" block, comments removed."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Open your own file\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```sh\n(.*?)```", section, re.S)
    assert match, 'README.md: "Open your own file" has no ```sh block'
    return [line.split("#", 1)[0].strip() for line in match.group(1).splitlines() if line.strip()]


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
def test_readme_own_file_command_runs_from_any_folder(venv: Path, outside: Path) -> None:
    """The README's `pip install .` then `dst-analysis metrics --pred ... --gold ...`, from a folder outside
    the repository, on a demo run: the same output as `python -m analysis` in the repository."""
    commands = readme_commands()
    assert commands[0] == "pip install ."  # what the `venv` fixture did
    cli = next(c for c in commands if c.startswith("dst-analysis "))
    pred = "data/demo/simulated/simulated-A-mwz-en-predicted.jsonl.gz"
    gold = "data/demo/multiwoz21/test_subset.json.gz"
    argv = cli.replace("preds.jsonl", pred).replace("gold.json", gold).split()
    assert argv == ["dst-analysis", "metrics", "--pred", pred, "--gold", gold], cli
    done = _run([str(venv / "bin" / argv[0]), *argv[1:]], outside)
    here = _run([sys.executable, "-m", "analysis", *argv[1:]], ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout == here.stdout
    assert re.search(r"^\s+JGA\s+0\.\d{4}$", done.stdout, re.M)
    make = next(c for c in commands if c.startswith("make run"))
    assert make == "make run WORKSPACE=path/to/workspace.toml"
    assert "WORKSPACE ?=" in (ROOT / "Makefile").read_text(encoding="utf-8")
