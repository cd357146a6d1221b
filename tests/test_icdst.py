"""IC-DST-style running logs scored as `evaluate/evaluate_metrics.py::evaluate` scores them (`icdst` convention).

The running log (cwyoon-99/gpt-DST, GPT-3.5, 50 turns) is turned into our JSONL here, so the convention is
tested apart from the running-log reader; its `score.txt` gives JGA 28/50, slot accuracy and joint F1.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.loading import load_run
from analysis.scoring import score_run
from analysis.suite import metric_suite
from tests.conftest import realdata_path


def _triples(state: dict[str, str]) -> list[list[str]]:
    """IC-DST's `{domain-slot: value}` as [domain, slot, value] (the slot after the first hyphen)."""
    return [[*key.split("-", 1), value] for key, value in state.items()]


def running_log_as_jsonl(records: list[dict], path: Path) -> Path:
    """One line a turn: `ID` and `turn_id` as dialogue and turn, `slot_values` as gold, `pred` as prediction."""
    lines = [
        {
            "dialogue_id": r["ID"],
            "turn_index": r["turn_id"],
            "gold": _triples(r["slot_values"]),
            "pred": _triples(r["pred"]),
        }
        for r in records
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


def _score_txt(path: Path) -> tuple[float, float, float, dict[int, float]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    jga = float(lines[0].split("=")[-1])
    slot_acc = float(lines[1].split()[-1])
    joint_f1 = float(lines[2].split()[-1])
    by_turn = {int(line.split()[3]): float(line.split()[-1]) for line in lines[3:] if line.startswith("accuracy")}
    return jga, slot_acc, joint_f1, by_turn


@pytest.mark.realdata
def test_gpt_dst_running_log_gives_its_score_txt(tmp_path: Path) -> None:
    log = json.loads(realdata_path("wild", "gptdst_gpt35_ours_running_log.json").read_text(encoding="utf-8"))
    jga, slot_acc, joint_f1, by_turn = _score_txt(realdata_path("wild", "gptdst_gpt35_ours_score.txt"))
    result = metric_suite(score_run(load_run(running_log_as_jsonl(log, tmp_path / "log.jsonl")), "icdst"))
    assert result["n_turns"] == 50 and jga == 0.56
    assert result["jga"] == pytest.approx(jga, abs=1e-12)
    assert result["slot_accuracy_trade"] == pytest.approx(slot_acc, abs=1e-12)
    assert result["joint_f1_trade"] == pytest.approx(joint_f1, abs=1e-12)
    assert {int(t): v for t, v in result["jga_by_turn"].items()} == pytest.approx(by_turn, abs=1e-12)


def _suite(tmp_path: Path, gold: dict[str, str], pred: dict[str, str], convention: str) -> dict:
    log = [{"ID": "MUL0001.json", "turn_id": 0, "slot_values": gold, "pred": pred}]
    return metric_suite(score_run(load_run(running_log_as_jsonl(log, tmp_path / "one.jsonl")), convention))


def test_a_gold_alternative_accepts_either_value(tmp_path: Path) -> None:
    gold = {"hotel-type": "hotel|guest house"}
    assert _suite(tmp_path, gold, {"hotel-type": "guest house"}, "icdst")["jga"] == 1.0
    assert _suite(tmp_path, gold, {"hotel-type": "hotel|guest house"}, "icdst")["jga"] == 1.0
    assert _suite(tmp_path, gold, {"hotel-type": "guest house"}, "trade")["jga"] == 0.0  # TRADE: one literal string


def test_values_are_compared_as_written(tmp_path: Path) -> None:
    """No case folding, and `not mentioned` / `none` are values: a slot more than gold is an error."""
    result = _suite(tmp_path, {"hotel-area": "east"}, {"hotel-area": "East", "hotel-name": "not mentioned"}, "icdst")
    assert result["jga"] == 0.0
    assert result["slot_accuracy_trade"] == pytest.approx(28 / 30)  # compute_acc: one miss, one extra slot
    assert result["joint_f1_trade"] == 0.0
