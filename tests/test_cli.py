"""`python -m analysis metrics|formats|conventions`: the JSON contract, the table, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from analysis import metrics as M
from analysis.cli.main import main
from analysis.loading import load_run
from analysis.scoring import score_run
from tests.conftest import ROOT, realdata_path

JSON_KEYS = {
    "n_dialogues", "n_turns", "convention", "jga", "slot_f1_seed", "slot_f1_domain_slot", "slot_precision",
    "slot_recall", "slot_f1_micro", "joint_f1_trade", "slot_accuracy", "slot_accuracy_trade", "aga",
    "final_turn_jga", "jga_by_turn", "per_domain_jga", "per_slot", "alignment",
}  # fmt: skip


def _json(capsys, *argv: str) -> dict:
    assert main(["metrics", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.realdata
def test_metrics_json_has_every_key_and_the_published_values(capsys) -> None:
    result = _json(capsys, "--pred", str(realdata_path("mlcsg", "all_prediction_TRADE.json")))
    assert result.keys() >= JSON_KEYS
    assert result["convention"] == "trade" and result["n_turns"] == 7368 and result["n_dialogues"] == 999
    assert result["jga"] == pytest.approx(0.5194, abs=5e-5)
    assert result["slot_accuracy_trade"] == pytest.approx(0.9725, abs=5e-5)
    assert result["joint_f1_trade"] == pytest.approx(0.9050, abs=5e-5)
    for key in JSON_KEYS - {
        "n_dialogues",
        "n_turns",
        "convention",
        "jga_by_turn",
        "per_domain_jga",
        "per_slot",
        "alignment",
    }:
        assert 0.0 <= result[key] <= 1.0, key
    assert list(result["jga_by_turn"])[:3] == ["0", "1", "2"]
    assert set(result["per_domain_jga"]) == {"attraction", "hotel", "restaurant", "taxi", "train"}
    assert set(result["per_slot"]["hotel-area"]) == {"precision", "recall", "f1", "support"}
    assert result["alignment"]["ok"] is True


@pytest.mark.slow
@pytest.mark.realdata
def test_metrics_group_by_dialogue_type_matches_the_library(capsys) -> None:
    pred = realdata_path("crosswoz_ruledst", "test_preds.json")
    gold = realdata_path("crosswoz", "test.json.zip")
    result = _json(capsys, "--pred", str(pred), "--gold", str(gold), "--group-by", "type", "--convention", "exact")
    assert result["groups"]["CM"]["jga"] == pytest.approx(0.6338, abs=5e-5)
    assert result["groups"]["S"]["n_turns"] == 120
    expected = M.joint_goal_accuracy(score_run(load_run(pred, gold), "exact"), by="type")
    assert {g: v["jga"] for g, v in result["groups"].items()} == dict(
        zip(expected["type"], expected["jga"], strict=True)
    )


@pytest.mark.realdata
def test_metrics_group_by_an_unknown_column_is_bad_input(capsys) -> None:
    pred = realdata_path("crosswoz_ruledst", "test_preds.json")
    assert main(["metrics", "--pred", str(pred), "--group-by", "colour"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot group by ['colour']" in err[0] and "[format: nested]" in err[0]


@pytest.mark.realdata
def test_metrics_table_is_readable(capsys) -> None:
    pred = realdata_path("crosswoz_ruledst", "test_preds.json")
    assert main(["metrics", "--pred", str(pred)]) == 0
    out = capsys.readouterr().out
    assert "convention: exact" in out and "JGA  " in out and "0.7133" in out and "Per-domain JGA:" in out


@pytest.mark.realdata
def test_alignment_warnings_reach_the_json(capsys) -> None:
    result = _json(
        capsys,
        "--pred", str(realdata_path("mwzeval_outputs", "pptod.json")),
        "--gold", str(realdata_path("multiwoz21", "test.json.zip")),
    )  # fmt: skip
    assert result["alignment"]["missing_turns"] == 1
    assert any("PMUL3688" in w for w in result["alignment"]["warnings"])


def test_formats_and_conventions_listings(capsys) -> None:
    assert main(["formats"]) == 0
    out = capsys.readouterr().out
    for name in ("jsonl", "trade", "mwzeval", "multiwoz", "crosswoz", "dstc9", "nested", "risawoz", "dialogues"):
        assert f"\n{name} " in "\n" + out
    assert main(["conventions", "--json"]) == 0
    conventions = json.loads(capsys.readouterr().out)
    assert {"exact", "trade", "dstc9", "mwzeval", "convlab3"} <= set(conventions)
    assert conventions["mwzeval"]["matching"] == "fuzzy_int"


def test_module_entry_point_exits_2_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"MUL0001.json": {"0": {"turn_belief": ["hotel-area-east"], "pred_bs_ptr": 7}}}')
    done = subprocess.run(
        [sys.executable, "-m", "analysis", "metrics", "--pred", str(bad)],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert lines[0].startswith(f"{bad} [format: trade]:") and "dialogue 'MUL0001.json', turn 0" in lines[0]


def test_usage_errors_are_one_line_too(capsys) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["metrics"])
    assert caught.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


_POOL = "import pyarrow as pa; print(pa.default_memory_pool().backend_name)"


@pytest.mark.parametrize(
    ("arguments", "given", "pool"),
    [
        (["metrics", "--pred", "x.json"], None, "system"),  # a one-shot command: the C library's allocator
        (["formats"], None, "system"),
        (["metrics"], "mimalloc", "mimalloc"),  # the user's choice wins
        (["report", "m.toml"], None, "mimalloc"),  # not one-shot: Arrow's default
        ([], None, "mimalloc"),
    ],
)
def test_a_one_shot_command_puts_arrows_buffers_on_the_c_library(
    arguments: list[str], given: str | None, pool: str
) -> None:
    """`analysis.cli.entry.prepare`, which `python -m analysis` and `dst-analysis` run before pandas is imported:
    Arrow's pool as each command's process then has it."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if given is not None:
        env["ARROW_DEFAULT_MEMORY_POOL"] = given
    code = f"from analysis.cli.entry import prepare; prepare({arguments!r}); {_POOL}"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == pool


def test_python_m_analysis_runs_through_prepare() -> None:
    """`python -m analysis formats`, run as the program (`runpy`, as `-m` does), ends with Arrow's buffers on the
    C library's allocator: read just before the process ends (`os._exit`, the one-shot commands' end)."""
    import os

    code = (
        "import os, runpy, sys\n"
        "sys.argv = ['analysis', 'formats']\n"
        "end = os._exit\n"
        "def report(status):\n"
        f"    {_POOL.replace('; ', chr(10) + '    ')}\n"
        "    sys.stdout.flush()\n"
        "    end(status)\n"
        "os._exit = report\n"
        "runpy.run_module('analysis', run_name='__main__')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "system"
