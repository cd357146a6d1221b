"""Issue 41: comparisons on shared turns, systems over seeds (hierarchical bootstrap), and the paired tests
checked against independent computations (a deliberately naive re-implementation, scipy) on real files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from analysis import compare as C
from analysis import seed_compare as SC
from analysis import stats as S
from analysis.cli.main import main
from analysis.demo.testing import scored_from_states
from analysis.errors import InputError
from analysis.loading import load_run
from analysis.scoring import Scored, score_run
from analysis.shared_turns import group_by_gold, on_shared_turns
from tests.conftest import realdata_path

GOLD = {
    "D1": [{"hotel": {"area": "east"}}, {"hotel": {"area": "east", "stars": "4"}}],
    "D2": [{}, {"train": {"day": "monday"}}, {"train": {"day": "monday"}}],
    "D3": [{"taxi": {"leave": "9"}}],
}
PRED = {
    "D1": [{"hotel": {"area": "east"}}, {"hotel": {"area": "east", "stars": "5"}}],
    "D2": [{}, {}, {"train": {"day": "monday"}}],
    "D3": [{"taxi": {"leave": "9"}}],
}


def _without(states: dict, dialogue: str, turn: int) -> dict:
    return {d: [s for t, s in enumerate(turns) if (d, t) != (dialogue, turn)] for d, turns in states.items()}


def _jsonl(path: Path, gold: dict, pred: dict, skip: tuple[str, int] | None = None) -> Path:
    lines = [
        json.dumps({"dialogue_id": d, "turn_index": t, "gold": state, "pred": pred[d][t]})
        for d, states in gold.items()
        for t, state in enumerate(states)
        if (d, t) != skip
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# ---- shared turns ----------------------------------------------------------------------------------------


def _pair_with_a_missing_turn() -> dict[str, Scored]:
    """B is A's twin but lacks D2 turn 1 (as PPTOD lacks PMUL3688 turn 5)."""
    full = scored_from_states(GOLD, PRED, run_id="A")
    gold_b, pred_b = GOLD, {**PRED, "D3": [{"taxi": {"leave": "10"}}]}
    b = scored_from_states(gold_b, pred_b, run_id="B")
    keep = ~((b.turns["dialogue_id"] == "D2") & (b.turns["turn_index"] == 1))
    turns = b.turns[keep.to_numpy()]
    lacking = Scored(b.convention, b.metas, turns, b.slots[b.slots["tid"].isin(turns["tid"])], b.ontology)
    return {"A": full, "B": lacking}


def test_a_missing_turn_is_refused_unless_shared_turns_are_asked_for() -> None:
    runs = _pair_with_a_missing_turn()
    with pytest.raises(InputError, match="1 turns differ"):
        C.compare(runs, metrics=("jga",), n_resamples=50)
    result = C.compare(runs, metrics=("jga",), n_resamples=50, shared_turns=True, min_support=1)
    jga = result.overall("jga").iloc[0]
    # Five turns shared; A right on D1/0, D2/0, D2/2, D3/0 (4 of 5), B wrong on D3/0 too (3 of 5).
    assert (jga["estimate_a"], jga["estimate_b"], jga["n_turns"]) == pytest.approx((4 / 5, 3 / 5, 5))
    assert (jga["n_dialogues_differ"], jga["n_turns_differ"]) == (1, 1)
    assert result.left_out == {"A": "1 turn of 6 not compared (D2 turn 1): missing from B"}


def test_shared_turns_refuse_gold_that_differs_on_a_shared_turn() -> None:
    a = scored_from_states(GOLD, PRED, run_id="A")
    other_gold = {**GOLD, "D3": [{"taxi": {"leave": "10"}}]}
    b = scored_from_states(other_gold, PRED, run_id="B")
    with pytest.raises(InputError, match="gold states differ on 1 of the turns both hold") as info:
        on_shared_turns({"A": a, "B": b})
    assert info.value.dialogue_id == "D3" and info.value.turn == 0


def test_grouping_by_gold_names_the_run_left_out_and_takes_it_in_on_shared_turns() -> None:
    runs = _pair_with_a_missing_turn()
    alone = scored_from_states({"X1": [{}]}, {"X1": [{}]}, run_id="X")
    named = [("A", runs["A"]), ("B", runs["B"]), ("X", alone)]
    groups, reasons = group_by_gold(named, shared_turns=False)
    assert groups == []
    assert "B is on the gold of A but the turns differ (1 only in A, 0 only in B: D2 turn 1)" in reasons["B"]
    assert "Compare on shared turns" in reasons["B"]
    assert reasons["X"] == "X shares its gold (turns and gold states, convention) with no other selected run"
    groups, reasons = group_by_gold(named, shared_turns=True)
    assert groups == [["A", "B"]] and set(reasons) == {"X"}


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
def test_cli_shared_turns(tmp_path, capsys) -> None:
    a = _jsonl(tmp_path / "a.jsonl", GOLD, PRED)
    b = _jsonl(tmp_path / "b.jsonl", GOLD, PRED, skip=("D2", 1))
    base = ["compare", "--pred", str(a), "--pred", str(b), "--resamples", "50"]
    assert main(base) == 2
    assert "1 turns differ" in capsys.readouterr().err
    assert main([*base, "--shared-turns", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["left_out"] == {"a.jsonl": "1 turn of 6 not compared (D2 turn 1): missing from b.jsonl"}
    assert out["min_support"] == 10 and "fewer than 10" in out["support"]
    assert main([*base, "--shared-turns"]) == 0
    assert "left out of a.jsonl: 1 turn of 6 not compared (D2 turn 1)" in capsys.readouterr().out
    assert main([*base, "--min-support", "-1"]) == 2


# ---- seeds: the hierarchical bootstrap -------------------------------------------------------------------


def _seeds(n: int, strength: float, offset: int) -> list[Scored]:
    """`n` seeds of a system over 30 one-turn dialogues: seed s gets dialogue i right unless
    (i * 7 + s + offset) % 10 >= strength * 10."""
    gold = {f"D{i:02d}": [{"hotel": {"area": "east"}}] for i in range(30)}
    runs = []
    for s in range(n):
        pred = {d: [{"hotel": {"area": "east" if (i * 7 + s + offset) % 10 < strength * 10 else "west"}}]
                for i, d in enumerate(gold)}  # fmt: skip
        runs.append(scored_from_states(gold, pred, run_id=f"s{offset}-{s}"))
    return runs


def test_one_seed_each_is_exactly_the_paired_bootstrap() -> None:
    a, b = _seeds(1, 0.5, 0)[0], _seeds(1, 0.8, 3)[0]
    seeds = SC.compare_seeds({"A": [a], "B": [b]}, metrics=("jga", "slot_f1_micro"), n_resamples=300, min_support=1)
    pair = C.compare({"A": a, "B": b}, metrics=("jga", "slot_f1_micro"), n_resamples=300, min_support=1)
    columns = ["delta", "low", "high", "p_value", "p_holm", "n_dialogues_differ", "n_turns_differ"]
    np.testing.assert_allclose(
        seeds.deltas[columns].to_numpy(float), pair.overall()[columns].to_numpy(float), rtol=0, atol=1e-12
    )


def _naive_hierarchical(systems: dict[str, list[Scored]], n_resamples: int, seed: int) -> np.ndarray:
    """The hierarchical bootstrap of JGA written out loop by loop: per resample, expand the drawn seeds and
    dialogues into lists, compute each drawn seed's JGA over the drawn dialogues (with repeats) from its turns'
    joint correctness, average per system; b - a. The draws are the module's documented ones."""
    order = pd.unique(systems["A"][0].turns["dialogue_id"].str.lower())
    weights = S.resample_counts(len(order), n_resamples=n_resamples, seed=seed)
    drawn_seeds = {
        name: SC.seed_counts(len(runs), n_resamples=n_resamples, seed=seed + 1 + i)
        for i, (name, runs) in enumerate(systems.items())
    }
    per_dialogue = {
        name: [
            run.turns.assign(key=run.turns["dialogue_id"].str.lower())
            .groupby("key")["joint_correct"]
            .agg(["sum", "size"])
            .reindex(order)
            for run in runs
        ]
        for name, runs in systems.items()
    }
    deltas = []
    for r in range(n_resamples):
        dialogues = [d for d, k in zip(order, weights[r], strict=True) for _ in range(int(k))]
        means = {}
        for name in systems:
            picked = [i for i, k in enumerate(drawn_seeds[name][r]) for _ in range(int(k))]
            values = []
            for i in picked:
                table = per_dialogue[name][i]
                right = sum(table.loc[d, "sum"] for d in dialogues)
                total = sum(table.loc[d, "size"] for d in dialogues)
                values.append(right / total)
            means[name] = sum(values) / len(values)
        deltas.append(means["B"] - means["A"])
    return np.array(deltas)


def test_hierarchical_bootstrap_equals_a_naive_loop() -> None:
    systems = {"A": _seeds(3, 0.5, 0), "B": _seeds(2, 0.7, 5)}
    result = SC.compare_seeds(systems, n_resamples=60, seed=4, min_support=1)
    naive = _naive_hierarchical(systems, 60, 4)
    low, high = np.quantile(naive, [0.025, 0.975])
    row = result.deltas.iloc[0]
    assert (row["low"], row["high"]) == pytest.approx((low, high), abs=1e-12)
    p = min(1.0, 2 * min((naive <= 1e-12).mean(), (naive >= -1e-12).mean()))
    assert row["p_value"] == pytest.approx(p, abs=1e-12)
    means = [np.mean([r.turns["joint_correct"].mean() for r in systems[s]]) for s in ("A", "B")]
    assert row["delta"] == pytest.approx(means[1] - means[0])
    assert (row["n_seeds_a"], row["n_seeds_b"]) == (3, 2)


def test_cli_system_groups_the_runs_by_seed(tmp_path, capsys) -> None:
    files = []
    for name, runs in {"A": _seeds(2, 0.5, 0), "B": _seeds(3, 0.8, 3)}.items():
        for i, run in enumerate(runs):
            gold = {d: [{"hotel": {"area": "east"}}] for d in run.turns["dialogue_id"]}
            rows = run.slots.set_index("dialogue_id")["pred_value"].to_dict()
            pred = {d: [{"hotel": {"area": rows[d]}}] for d in gold}
            files.append((name, _jsonl(tmp_path / f"{name}{i}.jsonl", gold, pred)))
    argv = ["compare", "--resamples", "50", "--json", "--min-support", "1"]
    for name, path in files:
        argv += ["--pred", str(path), "--system", name]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["systems"] == {"A": ["A0.jsonl", "A1.jsonl"], "B": ["B0.jsonl", "B1.jsonl", "B2.jsonl"]}
    jga = next(r for r in out["deltas"] if r["scope"] == "overall")
    assert (jga["n_seeds_a"], jga["n_seeds_b"]) == (2, 3) and "hierarchical" in out["method"]
    assert main(argv[:-2]) == 2  # one --system short
    assert "give one system per prediction file" in capsys.readouterr().err


# ---- the paired tests against independent computations on real files ------------------------------------


@pytest.fixture(scope="module")
def ubar_pptod() -> dict[str, Scored]:
    gold = realdata_path("multiwoz21", "test.json.zip")
    return {
        name: score_run(load_run(realdata_path("mwzeval_outputs", f"{name}.json"), gold), "mwzeval-lenient")
        for name in ("ubar", "pptod")
    }


def _naive_paired_jga(a: Scored, b: Scored, n_resamples: int, seed: int) -> dict:
    """Paired bootstrap of JGA, loop by loop: the documented dialogue draws (indices with replacement from
    `numpy.random.default_rng(seed)`), each run's JGA over the drawn dialogues' turns, b - a."""
    order = pd.unique(a.turns["dialogue_id"].str.lower())
    sums = {
        name: run.turns.assign(key=run.turns["dialogue_id"].str.lower())
        .groupby("key")["joint_correct"]
        .agg(["sum", "size"])
        .reindex(order)
        for name, run in (("a", a), ("b", b))
    }
    rng = np.random.default_rng(seed)
    drawn = rng.integers(0, len(order), size=(n_resamples, len(order)))
    deltas = []
    for row in drawn:
        jga = {
            name: table["sum"].to_numpy()[row].sum() / table["size"].to_numpy()[row].sum()
            for name, table in sums.items()
        }
        deltas.append(jga["b"] - jga["a"])
    deltas_arr = np.array(deltas)
    low, high = np.quantile(deltas_arr, [0.025, 0.975])
    p = min(1.0, 2 * min((deltas_arr <= 1e-12).mean(), (deltas_arr >= -1e-12).mean()))
    return {"low": low, "high": high, "p_value": p}


@pytest.mark.realdata
def test_paired_bootstrap_and_support_against_a_naive_loop_on_ubar_and_pptod(ubar_pptod) -> None:
    a, b = ubar_pptod["ubar"], ubar_pptod["pptod"]
    result = C.compare({"ubar": a, "pptod": b}, metrics=("jga",), scopes=("overall",), n_resamples=200, seed=7)
    row = result.overall("jga").iloc[0]
    naive = _naive_paired_jga(a, b, 200, 7)
    assert (row["low"], row["high"], row["p_value"]) == pytest.approx(
        (naive["low"], naive["high"], naive["p_value"]), abs=1e-12
    )
    assert row["delta"] == pytest.approx(b.turns["joint_correct"].mean() - a.turns["joint_correct"].mean())
    # Support by hand: the turns whose joint correctness differs, and their dialogues.
    both = a.turns[["dialogue_id", "turn_index", "joint_correct"]].merge(
        b.turns[["dialogue_id", "turn_index", "joint_correct"]], on=["dialogue_id", "turn_index"]
    )
    differ = both[both["joint_correct_x"] != both["joint_correct_y"]]
    assert row["n_turns_differ"] == len(differ) == 1180
    assert row["n_dialogues_differ"] == differ["dialogue_id"].nunique() == 465
    assert (row["n_turns"], row["n_dialogues"]) == (7372, 1000)


@pytest.mark.realdata
def test_mcnemar_against_scipy_on_ubar_and_pptod(ubar_pptod) -> None:
    a, b = ubar_pptod["ubar"], ubar_pptod["pptod"]
    result = S.mcnemar(a, b)
    both = a.turns[["dialogue_id", "turn_index", "joint_correct"]].merge(
        b.turns[["dialogue_id", "turn_index", "joint_correct"]], on=["dialogue_id", "turn_index"]
    )
    b10 = int((both["joint_correct_x"] & ~both["joint_correct_y"]).sum())
    b01 = int((~both["joint_correct_x"] & both["joint_correct_y"]).sum())
    assert (result["b10"], result["b01"]) == (b10, b01) == (443, 737)
    exact = scipy_stats.binomtest(b01, b01 + b10, 0.5).pvalue
    assert result["p_value"] == pytest.approx(exact, rel=1e-9)
    chi2 = (abs(b01 - b10) - 1) ** 2 / (b01 + b10)
    assert result["p_value_chi2"] == pytest.approx(scipy_stats.chi2.sf(chi2, df=1), rel=1e-9)


@pytest.mark.realdata
def test_per_domain_support_on_ubar_and_pptod_by_hand(ubar_pptod) -> None:
    """The group's own dialogues and turns, and where the runs differ, for per-domain JGA (a turn counts for a
    domain when the domain is in its gold or predicted state; correct when every slot of it is), computed
    from the slot table by hand; and the lenient FGA attraction-people delta of the issue: 2 dialogues."""
    a, b = ubar_pptod["ubar"], ubar_pptod["pptod"]
    result = C.compare({"ubar": a, "pptod": b}, metrics=("jga", "fga_0.5"), scopes=("domain", "slot"), n_resamples=200)
    domain = result.deltas[(result.deltas["scope"] == "domain") & (result.deltas["metric"] == "jga")]
    taxi = domain.set_index("group").loc["taxi"]

    def per_turn(run: Scored) -> pd.DataFrame:
        rows = run.slots[run.slots["domain"] == "taxi"]
        return (
            rows.assign(ok=rows["outcome"] == "correct")
            .groupby(["dialogue_id", "turn_index"])["ok"]
            .all()
            .reset_index()
        )

    both = per_turn(a).merge(per_turn(b), on=["dialogue_id", "turn_index"], how="outer")
    differ = both[both["ok_x"].astype("boolean").fillna(pd.NA).ne(both["ok_y"].astype("boolean")).fillna(True)]
    assert taxi["n_turns"] == len(both) and taxi["n_dialogues"] == both["dialogue_id"].nunique()
    assert taxi["n_turns_differ"] == len(differ) and taxi["n_dialogues_differ"] == differ["dialogue_id"].nunique()
    assert taxi["tested"] and taxi["significant"]
    people = result.deltas[(result.deltas["metric"] == "fga_0.5") & (result.deltas["group"] == "attraction-people")]
    row = people.iloc[0]
    assert (row["n_dialogues"], row["n_dialogues_differ"], row["n_turns_differ"]) == (2, 2, 10)
    assert not row["tested"] and not row["significant"] and np.isnan(row["p_value"]) and np.isnan(row["low"])


def test_report_table_of_systems_over_seeds() -> None:
    from analysis.export.tables import seed_delta_table

    systems = {"A": _seeds(2, 0.5, 0), "B": _seeds(3, 0.8, 3)}
    result = SC.compare_seeds(systems, metrics=("jga", "slot_f1_micro"), n_resamples=100, min_support=1)
    table = seed_delta_table(result)
    assert table["systems (b − a)"].tolist() == ["B − A", "B − A"]
    assert table["seeds (a, b)"].tolist() == ["2, 3", "2, 3"]
    expected = result.deltas
    assert table["Δ"].tolist() == pytest.approx(expected["delta"].tolist())
    assert table["dialogues differ"].tolist() == [f"{k} of 30" for k in expected["n_dialogues_differ"]]
    assert table["sig."].tolist() == ["*" if s else "n.s." for s in expected["significant"]]
    assert "hierarchical" in table.attrs["note"]


@pytest.mark.realdata
def test_cross_lingual_gap_support_and_interval_against_a_naive_loop() -> None:
    """X-RiSAWOZ zh vs fr, the gap at turn depth 0 (one turn a dialogue): its support is the dialogues whose
    first turn is right in one language only, and its interval the naive loop over the same dialogue draws."""
    from analysis import crosslingual as X
    from analysis.diagnostics import agreement

    zh = score_run(load_run(realdata_path("xrisawoz_llm", "zh.jsonl")))
    fr = score_run(load_run(realdata_path("xrisawoz_llm", "fr.jsonl")))
    gaps = X.crosslingual_gaps(zh, fr, X.align_ontologies(zh, fr), by="turn_index", support=True)
    first = gaps[gaps["turn_index"] == 0].iloc[0]
    paired, _ = agreement(zh, fr)
    opening = paired[paired["turn_index"] == 0]
    differ = opening[opening["joint_correct_a"] != opening["joint_correct_b"]]
    assert first["n_dialogues"] == first["n_turns_a"] == 600
    assert first["n_dialogues_differ"] == first["n_turns_differ"] == len(differ) == 257
    # Naive: the dialogues in order of first appearance on either side, drawn as `stats.resample_counts` does.
    order = pd.unique(opening["dialogue_id"].str.lower())
    by_dialogue = opening.assign(key=opening["dialogue_id"].str.lower()).set_index("key").loc[order]
    right_a = by_dialogue["joint_correct_a"].to_numpy(float)
    right_b = by_dialogue["joint_correct_b"].to_numpy(float)
    drawn = np.random.default_rng(0).integers(0, len(order), size=(1000, len(order)))
    naive = np.array([right_a[row].mean() - right_b[row].mean() for row in drawn])
    assert (first["low"], first["high"]) == pytest.approx(tuple(np.quantile(naive, [0.025, 0.975])), abs=1e-12)
    assert first["tested"] and first["gap"] == pytest.approx(right_a.mean() - right_b.mean())


@pytest.mark.realdata
def test_pptod_is_named_when_left_out_and_compared_on_shared_turns() -> None:
    """Under mwzeval PPTOD lacks PMUL3688 turn 5: the Overview's grouping leaves it out and says why; with
    shared turns it joins UBAR, and the turn left out is named."""
    from analysis import views
    from analysis.model import RunInfo

    gold = realdata_path("multiwoz21", "test.json.zip")
    runs = [
        score_run(load_run(realdata_path("mwzeval_outputs", f"{n}.json"), gold, meta=RunInfo(run_id=n)), "mwzeval")
        for n in ("ubar", "pptod")
    ]
    assert views.gold_groups(runs) == []
    (reason,) = views.left_out_of_comparison(runs)
    assert reason.startswith("pptod is on the gold of ubar but the turns differ (1 only in ubar, 0 only in pptod: ")
    assert "PMUL3688 turn 5" in reason
    assert views.gold_groups(runs, shared_turns=True) == [["ubar", "pptod"]]
    assert views.left_out_of_comparison(runs, shared_turns=True) == [
        "ubar: 1 turn of 7,372 not compared (PMUL3688 turn 5): missing from pptod"
    ]
    table = views.significance_table(runs, shared_turns=True, resamples=200)
    forward = table[(table["row"] == "pptod") & (table["column"] == "ubar")].iloc[0]
    assert forward["tested"] and forward["n_dialogues_differ"] > 100
