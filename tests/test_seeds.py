"""Seeds read together (issue 17 req 2): which runs are seeds of one system, and their mean ± std."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from analysis import seeds


def board(rows: list[dict]) -> pd.DataFrame:
    base = {"system": "S", "dataset": "MultiWOZ 2.1", "language": "en", "split": "test", "history": "predicted"}
    return pd.DataFrame([{"convention": "exact", **base, **row} for row in rows])


def test_runs_differing_only_in_their_seed_form_one_group() -> None:
    frame = board(
        [
            {"run_id": "s1", "seed": 1, "jga": 0.5},
            {"run_id": "s2", "seed": 2, "jga": 0.6},
            {"run_id": "s3", "seed": 3, "jga": 0.7},
            {"run_id": "other-convention", "seed": 4, "jga": 0.9, "convention": "trade"},
            {"run_id": "gold-history", "seed": 5, "jga": 0.8, "history": "gold"},
            {"run_id": "no-seed", "seed": None, "jga": 0.1},
        ]
    )
    groups = seeds.seed_groups(frame)
    assert (groups[:3] != "").all() and groups[:3].nunique() == 1 and (groups[3:] == "").all()
    table = seeds.seed_table(frame, ["jga"]).set_index("runs")
    row = table.loc["s1, s2, s3"]
    assert row["n_seeds"] == 3 and row["seeds"] == "1, 2, 3"
    assert row["jga"] == pytest.approx(0.6) and row["jga_std"] == pytest.approx(0.1)  # sample std, ddof=1
    assert row["jga_per_seed"] == pytest.approx([0.5, 0.6, 0.7])
    alone = table.loc["other-convention"]
    assert alone["n_seeds"] == 1 and alone["jga"] == 0.9 and math.isnan(alone["jga_std"])
    assert len(table) == 4


def test_one_seed_given_twice_is_not_a_group_of_seeds() -> None:
    frame = board([{"run_id": "a", "seed": 1, "jga": 0.5}, {"run_id": "b", "seed": 1, "jga": 0.6}])
    assert (seeds.seed_groups(frame) == "").all()
    assert len(seeds.seed_table(frame, ["jga"])) == 2


def test_the_bar_shows_the_mean_the_std_and_every_seed() -> None:
    frame = board([{"run_id": f"s{i}", "seed": i, "jga": v} for i, v in enumerate([0.5, 0.6, 0.7], start=1)])
    fig = seeds.seed_bar(seeds.seed_table(frame, ["jga"]), metric="jga")
    bar, points = fig.data
    assert list(bar.y) == pytest.approx([0.6]) and list(bar.error_y.array) == pytest.approx([0.1])
    assert list(points.y) == pytest.approx([0.5, 0.6, 0.7])


@pytest.mark.slow
def test_the_report_has_a_table_and_a_chart_of_the_demos_seeds(demo_plan) -> None:
    from analysis.metrics import joint_goal_accuracy
    from analysis.scoring import score_run
    from analysis.workspace import load_entry, read_manifest
    from tests.conftest import ROOT

    plan = demo_plan  # the demo's report plan, planned once per test session
    table = next(t for t in plan.tables if t.name == "seeds")
    assert list(table.frame["seeds"]) == ["21, 22, 23"] and "mean ± sample standard deviation" in table.caption
    jgas = [  # the seeds' JGAs from their files, scored here
        joint_goal_accuracy(score_run(load_entry(e), e.meta.convention))
        for e in read_manifest(ROOT / "data" / "demo" / "workspace.toml").entries
        if e.meta.system == "simulated-B"
    ]
    mean, std = sum(jgas) / 3, float(pd.Series(jgas).std(ddof=1))
    assert table.frame["JGA"].iloc[0] == f"{mean:.4f} ± {std:.4f}"
    assert any(f.name == "seeds" for f in plan.figures)
