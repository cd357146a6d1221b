"""Bad input: every malformed file gives one `InputError` line naming file, format and first record.

The corpus lives in tests/malformed (built by tests/malformed/make_corpus.py, expectations in
tests/malformed/EXPECTED.json). Each file goes through `load_run` (and `parse_file` when the file
alone is enough to tell), through `analysis.cli.main.main` in process, and ten representative ones through
`python -m analysis` in a subprocess.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from analysis.cli.main import main as cli_main
from analysis.errors import InputError
from analysis.formats import format_names, parse_file
from analysis.loading import load_run
from analysis.workspace import load_workspace

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "malformed"
EXPECTED: dict[str, dict[str, Any]] = json.loads((CORPUS / "EXPECTED.json").read_text(encoding="utf-8"))


def _load_generator() -> Any:
    spec = importlib.util.spec_from_file_location("make_corpus", CORPUS / "make_corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve string annotations through sys.modules
    spec.loader.exec_module(module)
    return module


GENERATOR = _load_generator()

# Core defects found by this corpus. Each maps a file to (which checks it breaks, why). "location":
# only the record location in the message is wrong; "message": the CLI line is wrong too; "accepted":
# the file loads without any error. Remove an entry once the core is fixed (strict xfail will say so).
# Core bugs this corpus found are fixed; a new one goes here as (kind, reason) with a strict xfail.
KNOWN_BUGS: dict[str, tuple[str, str]] = {}

# Which test scopes each kind of bug breaks: "api" checks the full message with its location, "cli"
# the one stderr line, "same" only compares two messages (so only an accepted file breaks it).
AFFECTS = {"accepted": {"api", "cli", "same"}, "message": {"api", "cli"}, "location": {"api"}}

# A spread over the categories and format families, run as real processes (each costs ~0.5 s of CPU).
SUBPROCESS_CASES = [
    "trade_truncated.json",
    "binary_noise.json",
    "trade_turn_belief_string.json",
    "mwzeval_ids_nomatch.json",
    "unknown_object.json",
    "mixed_trade_then_mwzeval.json",
    "two_members.zip",
    "is_a_directory.json",
    "forced_trade_on_mwzeval.json",
    "crosswoz_no_state.json",
]


def _params(scope: str, names: list[str] | None = None) -> list[Any]:
    """The corpus as pytest params; known core bugs that break this scope become strict xfails."""
    params = []
    for name in names or sorted(EXPECTED):
        marks = []
        if name in KNOWN_BUGS:
            kind, reason = KNOWN_BUGS[name]
            if scope in AFFECTS[kind]:
                marks.append(pytest.mark.xfail(strict=True, reason=f"core bug: {reason}"))
        params.append(pytest.param(name, marks=marks, id=name))
    return params


def _paths(name: str) -> tuple[Path, Path | None]:
    """(the malformed file, its partner or None) for one case."""
    partner = EXPECTED[name].get("pred_with")
    return CORPUS / name, (CORPUS / partner if partner else None)


def _load(name: str) -> None:
    path, partner = _paths(name)
    e = EXPECTED[name]
    if e.get("role", "pred") == "gold":
        assert partner is not None
        load_run(partner, path, gold_format=e.get("gold_format"))
    else:
        load_run(path, partner, pred_format=e.get("force"))


def _cli_args(name: str) -> list[str]:
    path, partner = _paths(name)
    e = EXPECTED[name]
    if e.get("role", "pred") == "gold":
        assert partner is not None
        args = ["metrics", "--pred", str(partner), "--gold", str(path)]
        return args + (["--gold-format", e["gold_format"]] if "gold_format" in e else [])
    args = ["metrics", "--pred", str(path)]
    args += ["--gold", str(partner)] if partner else []
    return args + (["--format", e["force"]] if "force" in e else [])


def _check_line(name: str, message: str, *, cli: bool = False) -> None:
    """What every bad-input line must say: one line, the file, `[format: X]`, the problem."""
    e = EXPECTED[name]
    assert message, f"{name}: empty message"
    assert "\n" not in message and "\r" not in message, f"{name}: message spans lines: {message!r}"
    assert "Traceback" not in message
    if cli and e.get("cli") == "argparse":  # an unknown --format is refused by the argument parser itself
        assert "invalid choice" in message and repr(e["force"]) in message, message
        return
    assert message.startswith(f"{CORPUS / name} [format: {e['format']}]: "), message
    assert e["contains"] in message, f"{name}: {e['contains']!r} not in {message!r}"


def _check_location(name: str, exc: InputError) -> None:
    e = EXPECTED[name]
    message = str(exc)
    if "dialogue_id" in e:
        assert exc.dialogue_id == str(e["dialogue_id"]), message
        assert f"dialogue {e['dialogue_id']!r}" in message, message
    if "turn" in e:
        assert str(exc.turn) == str(e["turn"]), message
        assert f"turn {e['turn']}" in message, message
    if "field" in e:
        assert exc.field == e["field"], message
        assert f"field {e['field']!r}" in message, message
    if {"dialogue_id", "turn", "field"} & e.keys():
        assert "(first offending record: " in message, message


# --- (a) the API: load_run and parse_file --------------------------------------------------------


@pytest.mark.parametrize("name", _params("api"))
def test_load_run_raises_one_line_naming_file_format_and_record(name: str) -> None:
    with pytest.raises(InputError) as caught:
        _load(name)
    exc = caught.value
    _check_line(name, str(exc))
    assert exc.path == str(CORPUS / name)
    assert exc.fmt == EXPECTED[name]["format"]
    _check_location(name, exc)


@pytest.mark.parametrize("name", _params("api", [n for n, e in EXPECTED.items() if e["stage"] == "parse"]))
def test_parse_file_alone_gives_the_same_message(name: str) -> None:
    e = EXPECTED[name]
    with pytest.raises(InputError) as from_parse:
        parse_file(CORPUS / name, fmt=e.get("force") or e.get("gold_format"))
    with pytest.raises(InputError) as from_load:
        _load(name)
    assert str(from_parse.value) == str(from_load.value)
    _check_line(name, str(from_parse.value))
    _check_location(name, from_parse.value)


UPLOADABLE = [n for n, e in EXPECTED.items() if (CORPUS / n).is_file() and e.get("role", "pred") == "pred"]


@pytest.mark.parametrize("name", _params("same", UPLOADABLE))
def test_uploaded_bytes_give_the_same_message_as_the_path(name: str) -> None:
    path, partner = _paths(name)
    force = EXPECTED[name].get("force")
    with pytest.raises(InputError) as from_path:
        load_run(path, partner, pred_format=force)
    with pytest.raises(InputError) as from_bytes:
        load_run(path, partner, pred_format=force, pred_data=path.read_bytes())
    assert str(from_bytes.value) == str(from_path.value)


# --- (b) the command line --------------------------------------------------------------------------


def _run_main(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = cli_main(args)
    except SystemExit as exc:  # argparse refusing an option value
        code = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("name", _params("cli"))
def test_cli_main_exits_2_with_one_line(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run_main(_cli_args(name), capsys)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, f"{name}: exit {code}, stdout {out[:200]!r}"
    assert len(lines) == 1, f"{name}: stderr has {len(lines)} lines: {err!r}"
    assert out == ""
    _check_line(name, lines[0], cli=True)


@pytest.fixture(scope="module")
def subprocess_results() -> dict[str, subprocess.CompletedProcess[str]]:
    """The representative cases through `python -m analysis`, two at a time (the machine is shared)."""

    def run(name: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "analysis", *_cli_args(name)]
        return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False, timeout=60)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(SUBPROCESS_CASES, pool.map(run, SUBPROCESS_CASES), strict=True))


@pytest.mark.slow
@pytest.mark.parametrize("name", _params("cli", SUBPROCESS_CASES))
def test_python_m_analysis_exits_2_with_one_line(
    name: str, subprocess_results: dict[str, subprocess.CompletedProcess[str]]
) -> None:
    done = subprocess_results[name]
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, f"{name}: exit {done.returncode}, stderr {done.stderr!r}"
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"{name}: stderr has {len(lines)} lines: {done.stderr!r}"
    assert done.stdout == ""
    _check_line(name, lines[0], cli=True)


# --- (c) the corpus itself -------------------------------------------------------------------------


def test_corpus_is_large_and_covers_every_category_and_family() -> None:
    files = [n for n in EXPECTED if (CORPUS / n).is_file()]
    assert len(files) >= 30, len(files)
    categories = {e["category"] for e in EXPECTED.values()}
    families = {e["family"] for e in EXPECTED.values()}
    assert set(GENERATOR.CATEGORIES) <= categories, set(GENERATOR.CATEGORIES) - categories
    assert set(GENERATOR.FAMILIES) <= families, set(GENERATOR.FAMILIES) - families
    assert categories <= set(GENERATOR.CATEGORIES) and families <= set(GENERATOR.FAMILIES)
    # The specific shapes the brief names.
    assert any(n.endswith(".gz") for n in files) and sum(n.endswith(".zip") for n in files) >= 3
    assert max((CORPUS / n).stat().st_size for n in files if EXPECTED[n]["category"] == "huge_values") > 10_000
    assert (CORPUS / "utf16.json").read_bytes()[:2] in (b"\xff\xfe", b"\xfe\xff")
    assert (CORPUS / "is_a_directory.json").is_dir() and not (CORPUS / "does_not_exist.json").exists()
    assert any(e["category"] == "ids_match_nothing" and "pred_with" in e for e in EXPECTED.values())
    assert all(e["stage"] in ("parse", "load") and e["contains"] for e in EXPECTED.values())


def test_every_file_in_the_corpus_has_an_expectation() -> None:
    on_disk = {
        p.name for p in CORPUS.iterdir() if p.name not in ("make_corpus.py", "EXPECTED.json", "partners", "__pycache__")
    }
    assert on_disk == {n for n in EXPECTED if (CORPUS / n).exists()}
    assert set(KNOWN_BUGS) <= set(EXPECTED)


def test_committed_corpus_matches_its_generator() -> None:
    assert GENERATOR.main(["--check"]) == 0, "run python tests/malformed/make_corpus.py and commit the result"


def test_partner_files_are_well_formed() -> None:
    """The partners must load, or an 'ids match nothing' case would pass for the wrong reason."""
    partners = CORPUS / "partners"
    run = load_run(partners / "ok_mwzeval_pred.json", partners / "ok_multiwoz_gold.json")
    assert run.alignment.ok and len(run.turns) == 2
    for gold in ("ok_dstc9_gold.json", "ok_crosswoz_gold.json", "ok_multiwoz_gold.json"):
        assert load_run(partners / gold, partners / gold).pred is not None


# --- (d) forced formats that do not fit ------------------------------------------------------------

FORCEABLE = {
    "partners/ok_mwzeval_pred.json": "mwzeval",
    "partners/ok_dstc9_gold.json": "dstc9",
    "partners/ok_crosswoz_gold.json": "crosswoz",
}


@pytest.mark.parametrize(
    ("rel", "fmt"),
    [(rel, fmt) for rel, own in FORCEABLE.items() for fmt in format_names() if fmt != own],
)
def test_forcing_a_wrong_format_gives_the_same_kind_of_message(rel: str, fmt: str) -> None:
    path = CORPUS / rel
    with pytest.raises(InputError) as caught:
        parse_file(path, fmt=fmt)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path} [format: {fmt}]: "), message
    assert caught.value.fmt == fmt


def test_forced_mismatch_on_the_cli_matches_the_api(capsys: pytest.CaptureFixture[str]) -> None:
    path = CORPUS / "partners" / "ok_mwzeval_pred.json"
    with pytest.raises(InputError) as caught:
        load_run(path, pred_format="trade")
    code, out, err = _run_main(["metrics", "--pred", str(path), "--format", "trade"], capsys)
    assert (code, out, err) == (2, "", f"{caught.value}\n")
    assert "does not have the trade shape" in err


# --- (e) a workspace keeps its good runs and records the bad ones ----------------------------------


def test_workspace_keeps_good_runs_and_records_each_failure(tmp_path: Path) -> None:
    partners = CORPUS / "partners"
    runs = {
        "good": (partners / "ok_mwzeval_pred.json", partners / "ok_multiwoz_gold.json"),
        "bad-pred": (CORPUS / "trade_turn_belief_string.json", None),
        "bad-gold": (partners / "ok_mwzeval_pred.json", CORPUS / "multiwoz_odd_log.json"),
        "missing": (CORPUS / "does_not_exist.json", None),
        "archive": (CORPUS / "two_members.zip", None),
    }
    lines = ['[workspace]\nname = "bad input"\nallow_outside_root = true\n']
    for name, (pred, gold) in runs.items():
        lines.append(f"[[runs]]\nname = {json.dumps(name)}\npred = {json.dumps(str(pred))}\n")
        if gold is not None:
            lines.append(f"gold = {json.dumps(str(gold))}\n")
    manifest = tmp_path / "workspace.toml"
    manifest.write_text("\n".join(lines), encoding="utf-8")

    workspace = load_workspace(manifest)

    assert list(workspace.runs) == ["good"]
    assert set(workspace.failed) == {"bad-pred", "bad-gold", "missing", "archive"}
    for name, message in workspace.failed.items():
        pred, gold = runs[name]
        with pytest.raises(InputError) as caught:
            load_run(pred, gold)
        assert message == str(caught.value)
        assert "\n" not in message
    assert "field 'turn_belief'" in workspace.failed["bad-pred"]
    assert workspace.failed["bad-gold"].startswith(f"{CORPUS / 'multiwoz_odd_log.json'} [format: multiwoz]")
    assert workspace.failed["missing"].endswith("file not found")


# --- helpers are exercised on a good file too, so the checks above cannot pass vacuously -----------


def test_checks_reject_a_message_without_the_location() -> None:
    name = "trade_turn_belief_string.json"
    bare = InputError(str(CORPUS / name), "trade", "expected a list of 'domain-slot-value' strings")
    _check_line(name, str(bare))
    with pytest.raises(AssertionError):
        _check_location(name, bare)
    with pytest.raises(AssertionError):
        _check_line(name, str(bare) + "\nTraceback (most recent call last):")
    with pytest.raises(AssertionError):
        _check_line(name, str(InputError("elsewhere.json", "trade", "expected a list of 'domain-slot-value' strings")))
