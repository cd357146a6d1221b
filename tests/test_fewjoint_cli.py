"""FewJoint command line, demo data, figure builders and the benchmark script."""

from __future__ import annotations

import argparse
import ast
import json
import math
import subprocess
import sys
from pathlib import Path

import plotly.graph_objects as go
import pytest

from analysis.cli import fewjoint as fewjoint_cli
from analysis.demo.fewjoint import DEMO_SEEDS, build_fewjoint_demo, demo_episodes
from analysis.errors import InputError
from analysis.fewjoint import FewJointResult, fewjoint_leaderboard, load_fewjoint_system, score_fewjoint
from analysis.fewjoint.figures import (
    breakdown_bar,
    intent_confusion_heatmap,
    leaderboard_bar,
    slot_type_prf_bar,
    tag_diff_table,
)

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo" / "fewjoint"
DEMO_PREDS = [DEMO / f"simulated_seed{s}.jsonl" for s in DEMO_SEEDS]
MODULES = [
    *(f"fewjoint/{p.name}" for p in sorted((ROOT / "analysis" / "fewjoint").glob("*.py"))),
    "cli/fewjoint.py",
    "demo/fewjoint.py",
]


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="test")
    fewjoint_cli.register(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(argv)


@pytest.fixture(scope="module")
def demo_result() -> FewJointResult:
    return score_fewjoint(load_fewjoint_system(DEMO / "episodes.json", DEMO_PREDS, name="simulated", shots=1))


# ---------------------------------------------------------------- CLI


def test_run_json(capsys: pytest.CaptureFixture[str]) -> None:
    args = parse(["fewjoint", "--gold", str(DEMO / "episodes.json"), "--pred", *map(str, DEMO_PREDS), "--json"])
    assert args.func is fewjoint_cli.run
    assert fewjoint_cli.run(args) == 0
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert data["n_queries"] == 48 and data["averaging"] == "episode"
    for metric in ("intent_accuracy", "slot_f1", "sentence_accuracy"):
        assert set(data[metric]) == {"mean", "std", "per_seed"}
        assert list(data[metric]["per_seed"]) == ["1", "2", "3", "4", "5"]
        assert 0.5 < data[metric]["mean"] < 1.0 and data[metric]["std"] > 0
    assert set(data["per_domain"]) == {"weather", "music", "flights"}
    assert set(data["ill_formed_bio"]) == {"1", "2", "3", "4", "5"}
    assert "counts" in data["alignment"] and "records" in data["alignment"]
    assert isinstance(data["warnings"], list)
    assert not any("only" in w for w in data["warnings"])
    assert all(line.startswith("warning: ") for line in err.splitlines())


def test_run_table_micro_and_few_seeds_warning(capsys: pytest.CaptureFixture[str]) -> None:
    args = parse(
        ["fewjoint", "--gold", str(DEMO / "episodes.json"), "--pred", str(DEMO_PREDS[0]), "--averaging", "micro"]
    )
    assert fewjoint_cli.run(args) == 0
    out, err = capsys.readouterr()
    assert "averaging=micro" in out and "intent_accuracy" in out and "weather" in out
    assert "warning: only 1 seed(s)" in err


def test_run_lets_input_error_propagate(tmp_path: Path) -> None:
    bad = tmp_path / "seed1.jsonl"
    bad.write_text('{"domain": "weather"}\n', encoding="utf-8")
    with pytest.raises(InputError, match="lacks episode"):
        fewjoint_cli.run(parse(["fewjoint", "--gold", str(DEMO / "episodes.json"), "--pred", str(bad)]))


def test_python_m_analysis_fewjoint(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "analysis", "fewjoint", "--gold", str(DEMO / "episodes.json"), "--pred"]
    done = subprocess.run(
        [*cmd, *map(str, DEMO_PREDS), "--json"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if done.returncode != 0 and "invalid choice: 'fewjoint'" in done.stderr:
        pytest.skip("the fewjoint sub-command is not registered in analysis.cli.main yet")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["n_queries"] == 48
    bad = tmp_path / "seed1.jsonl"
    bad.write_text(
        '{"domain": "weather", "episode": 0, "query_index": 0, "split": "support", "pred_intent": "x", '
        '"pred_tags": []}\n',
        encoding="utf-8",
    )
    done = subprocess.run([*cmd, str(bad)], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]  # one line
    assert "scores a support utterance" in done.stderr and str(bad) in done.stderr


# ---------------------------------------------------------------- demo


def test_demo_is_deterministic_and_matches_the_shipped_files(tmp_path: Path) -> None:
    written = build_fewjoint_demo(tmp_path)
    assert [p.name for p in written] == ["episodes.json"] + [f"simulated_seed{s}.jsonl" for s in DEMO_SEEDS]
    for path in written:
        assert path.read_bytes() == (DEMO / path.name).read_bytes(), path.name


def test_demo_episode_set_shape() -> None:
    episodes = demo_episodes()
    assert set(episodes) == {"weather", "music", "flights"}
    for domain_episodes in episodes.values():
        intents = {label[0] for ep in domain_episodes for label in ep["query"]["labels"]}
        n_queries = sum(len(ep["query"]["labels"]) for ep in domain_episodes)
        assert 3 <= len(intents) <= 4 and 10 <= n_queries <= 20
        for ep in domain_episodes:  # 1-shot support: one utterance per intent of the domain
            assert sorted(label[0] for label in ep["support"]["labels"]) == sorted(intents)


def test_demo_system_has_every_error_kind_of_the_model(demo_result: FewJointResult) -> None:
    kinds = set(demo_result.queries["error_kind"].astype(str))
    assert {"correct", "intent", "slots"} <= kinds
    assert demo_result.ill_formed_bio["n_ill_formed"].sum() > 0
    assert demo_result.alignment.empty
    assert demo_result.shots == 1 and len(demo_result.seeds) == 5


def test_queries_table_in_gold_order(demo_result: FewJointResult) -> None:
    first_seed = demo_result.queries.loc[demo_result.queries["seed"] == "1"]
    gold = load_fewjoint_system(DEMO / "episodes.json", DEMO_PREDS[:1]).gold.queries
    assert (
        first_seed[["domain", "episode", "query_index"]].to_numpy().tolist()
        == gold[["domain", "episode", "query_index"]].to_numpy().tolist()
    )


# ---------------------------------------------------------------- figures


def test_leaderboard_bar_error_bars_are_std(demo_result: FewJointResult) -> None:
    micro = score_fewjoint(load_fewjoint_system(DEMO / "episodes.json", DEMO_PREDS[:2], name="two seeds"))
    board = fewjoint_leaderboard([demo_result, micro])
    fig = leaderboard_bar(board, metric="slot_f1")
    assert isinstance(fig, go.Figure) and len(fig.data) == 2
    trace = next(t for t in fig.data if t.name == "simulated")
    assert list(trace.x) == ["1-shot"]
    expected = demo_result.summary.set_index("metric").loc["slot_f1"]
    assert trace.y[0] == pytest.approx(expected["mean"])
    assert trace.error_y.array[0] == pytest.approx(expected["std"])
    other = next(t for t in fig.data if t.name == "two seeds")
    assert list(other.x) == ["K unknown"]
    with pytest.raises(ValueError, match="metric must be one of"):
        leaderboard_bar(board, metric="f2")


def test_breakdowns_heatmap_and_slot_bars(demo_result: FewJointResult) -> None:
    by_domain = breakdown_bar(demo_result, by="domain", metric="intent_accuracy")
    assert sorted(by_domain.data[0].x) == ["flights", "music", "weather"]
    by_intent = breakdown_bar(demo_result, by="intent", domain="music")
    assert len(by_intent.data[0].x) == 3 and all(x.startswith("music / ") for x in by_intent.data[0].x)
    heat = intent_confusion_heatmap(demo_result, domain="weather")
    rows = heat.data[0].z
    # row-normalised; a pair never seen is a blank cell (None, issue 18 req 8)
    assert len(rows) == 4 and all(math.isclose(sum(v or 0 for v in r), 1.0) for r in rows)
    counts = intent_confusion_heatmap(demo_result, normalize=False, seed="1")
    assert sum(v or 0 for r in counts.data[0].z for v in r) == 48
    bars = slot_type_prf_bar(demo_result)
    assert [t.name for t in bars.data] == ["precision", "recall", "F1"]
    assert set(bars.data[0].x) == set(demo_result.per_slot_type["slot_type"])


def test_tag_diff_table(demo_result: FewJointResult) -> None:
    q = demo_result.queries
    row = q.loc[q["error_kind"] == "slots"].iloc[0]
    table = tag_diff_table(
        demo_result,
        domain=row["domain"],
        episode=int(row["episode"]),
        query_index=int(row["query_index"]),
        seed=str(row["seed"]),
    )
    assert list(table.columns) == ["token", "gold_tag", "pred_tag", "status", "gold_chunk", "pred_chunk"]
    assert table["token"].tolist() == list(row["tokens"])
    assert (table["status"] != "correct").any()
    assert set(table["status"]) <= {"correct", "missed", "spurious", "wrong_tag"}
    assert any(m.startswith("[") for m in table["gold_chunk"])
    with pytest.raises(KeyError):
        tag_diff_table(demo_result, domain="nowhere", episode=0, query_index=0)


def test_analysis_modules_never_import_streamlit() -> None:
    for name in MODULES:
        tree = ast.parse((ROOT / "analysis" / name).read_text(encoding="utf-8"))
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not any(m.split(".")[0] in ("streamlit", "pages") for m in imported), name


# ---------------------------------------------------------------- benchmark


@pytest.mark.slow
def test_benchmark_runs() -> None:
    gold = ROOT.parent / "shared" / "realdata" / "fewjoint" / "FewJoint1.1" / "1shot" / "test.json"
    if not gold.exists():
        pytest.skip(f"real data file {gold} is absent (the benchmark needs ../shared/realdata)")
    done = subprocess.run(
        [sys.executable, "benchmarks/bench_fewjoint.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "5 seeds x 1065 queries = 5325 query scorings" in done.stdout


def test_nothing_aligned_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Predictions of another domain than the gold's: no query aligns, so every one would be scored wrong;
    the command says so (naming the file and its first prediction) and exits 2 instead of printing zeros."""
    from analysis.cli.main import main

    stray = tmp_path / "seed1.jsonl"
    rows = [json.loads(line) for line in DEMO_PREDS[0].read_text(encoding="utf-8").splitlines()]
    stray.write_text(
        "".join(json.dumps({**r, "domain": "cooking-" + r["domain"]}) + "\n" for r in rows), encoding="utf-8"
    )
    assert main(["fewjoint", "--gold", str(DEMO / "episodes.json"), "--pred", str(stray)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(stray) in err[0]
    assert "no prediction aligns with a query of the gold" in err[0]
    assert "(domain 'cooking-weather', episode 0, query 0) has no gold query" in err[0]
    # One seed that aligns and one that does not: still refused, naming the one that does not.
    assert main(["fewjoint", "--gold", str(DEMO / "episodes.json"), "--pred", str(DEMO_PREDS[1]), str(stray)]) == 2
    assert str(stray) in capsys.readouterr().err
