"""Paired comparison of runs (`analysis.compare`, `python -m analysis compare`): numbers by hand, against
`analysis.stats` on the demo workspace's runs, Holm by hand, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import compare as C
from analysis import stats as S
from analysis.cli.main import main
from analysis.demo.testing import scored_from_states
from analysis.errors import InputError
from analysis.scoring import Scored, score_run
from analysis.workspace import load_entry, read_manifest
from tests.conftest import ROOT

# Five turns in three dialogues. A: D1 turn 1 (stars) and D2 turn 1 (missed day) wrong -> JGA 3/5.
# B: only D3 turn 0 wrong (leave 10) -> JGA 4/5. McNemar: a-only correct 1 (D3/0), b-only correct 2
# (D1/1, D2/1), both correct 2 (D1/0, D2/0), both wrong 0. Micro slot F1: A tp 3 fp 1 fn 2 -> 6/9;
# B tp 4 fp 1 fn 1 -> 8/10.
GOLD = {
    "D1": [{"hotel": {"area": "east"}}, {"hotel": {"area": "east", "stars": "4"}}],
    "D2": [{}, {"train": {"day": "monday"}}],
    "D3": [{"taxi": {"leave": "9"}}],
}
PRED_A = {
    "D1": [{"hotel": {"area": "east"}}, {"hotel": {"area": "east", "stars": "5"}}],
    "D2": [{}, {}],
    "D3": [{"taxi": {"leave": "9"}}],
}
PRED_B = {
    "D1": [{"hotel": {"area": "east"}}, {"hotel": {"area": "east", "stars": "4"}}],
    "D2": [{}, {"train": {"day": "monday"}}],
    "D3": [{"taxi": {"leave": "10"}}],
}
DEMO = ROOT / "data" / "demo" / "workspace.toml"
DEMO_RUNS = ("simulated-A-mwz-en-predicted", "simulated-B-mwz-en-predicted-s1", "simulated-C-mwz-en-predicted")


@pytest.fixture(scope="module")
def hand() -> dict[str, Scored]:
    return {"A": scored_from_states(GOLD, PRED_A, run_id="A"), "B": scored_from_states(GOLD, PRED_B, run_id="B")}


@pytest.fixture(scope="module")
def demo() -> dict[str, Scored]:
    entries = {e.name: e for e in read_manifest(DEMO).entries}
    return {name: score_run(load_entry(entries[name])) for name in DEMO_RUNS}


@pytest.fixture(scope="module")
def demo_result(demo: dict[str, Scored]) -> C.Comparison:
    return C.compare(demo, metrics=C.COMPARABLE, n_resamples=1000)


def test_the_default_metrics_are_jga_slot_f1_and_the_new_metrics(demo) -> None:
    """Issue 17: "JGA, slot F1 and the new metrics"; every other comparable metric on request."""
    names = dict(list(demo.items())[:2])
    compared = set(C.compare(names, n_resamples=50, scopes=("overall",)).overall()["metric"])
    assert compared == set(C.DEFAULT_METRICS)
    assert {"jga", "slot_f1_micro", "iaga", "rsa", "fga_0.5", "turn_accuracy", "gca"} <= compared
    assert "slot_accuracy" not in compared


@pytest.mark.slow
def test_the_cli_takes_a_metric_list_or_all_and_refuses_an_unknown_one(tmp_path) -> None:
    import subprocess
    import sys

    from tests.conftest import ROOT

    files = sorted((ROOT / "data" / "demo" / "simulated").glob("simulated-B-mwz-en-predicted-s*.jsonl.gz"))[:2]
    gold = ROOT / "data" / "demo" / "multiwoz21" / "test_subset.json.gz"
    base = [sys.executable, "-m", "analysis", "compare", *(f"--pred={f}" for f in files), f"--gold={gold}"]
    base += ["--resamples", "20", "--json"]

    def metrics(option: str) -> set[str]:
        done = subprocess.run([*base, option], cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return {row["metric"] for row in json.loads(done.stdout)["deltas"] if row["scope"] == "overall"}

    assert metrics("--metrics=jga,gca") == {"jga", "gca"}
    assert metrics("--metrics=all") == set(C.COMPARABLE)
    done = subprocess.run([*base, "--metrics=jga,nope"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and "nope" in done.stderr


def _row(result: C.Comparison, metric: str, scope: str = "overall", a: str = "A", b: str = "B") -> pd.Series:
    d = result.deltas
    hit = d[(d["metric"] == metric) & (d["scope"] == scope) & (d["a"] == a) & (d["b"] == b)]
    assert len(hit) == 1 if scope == "overall" else len(hit) >= 1
    return hit.iloc[0]


def test_hand_made_pair_gives_the_deltas_and_mcnemar_counts_known_by_hand(hand) -> None:
    result = C.compare(hand, n_resamples=500, min_support=1)  # three dialogues: test them all
    jga = _row(result, "jga")
    assert (jga["estimate_a"], jga["estimate_b"]) == pytest.approx((0.6, 0.8))
    assert jga["delta"] == pytest.approx(0.2)
    assert jga["low"] <= jga["delta"] <= jga["high"]
    f1 = _row(result, "slot_f1_micro")
    assert f1["delta"] == pytest.approx(8 / 10 - 6 / 9)
    mc = result.mcnemar.iloc[0]
    assert (mc["b10"], mc["b01"], mc["both_correct"], mc["both_wrong"]) == (1, 2, 2, 0)
    assert mc["p_value"] == pytest.approx(1.0)  # 2 P(X <= 1), X ~ Bin(3, 1/2) = 2 x 4/8, capped at 1
    assert not mc["significant"]
    # One pair: the overall family of a metric is one test, so Holm leaves p as it is (floored at 1/B).
    assert jga["family_size"] == 1
    assert jga["p_holm"] == pytest.approx(max(jga["p_value"], 1 / 500))


def test_direction_is_b_minus_a(hand) -> None:
    forward = _row(C.compare(hand, n_resamples=200), "jga")
    backward = _row(C.compare({"B": hand["B"], "A": hand["A"]}, n_resamples=200), "jga", a="B", b="A")
    assert forward["delta"] == pytest.approx(-backward["delta"])


def test_identical_runs_differ_by_nothing(hand) -> None:
    twin = scored_from_states(GOLD, PRED_A, run_id="A2")
    result = C.compare({"A": hand["A"], "A2": twin}, n_resamples=200, min_support=1)
    overall = result.overall()
    assert (overall["delta"].abs() < 1e-12).all()
    # Nothing differs: nothing to test (no interval, no p), and the support says so.
    assert (overall["n_dialogues_differ"] == 0).all() and (overall["n_turns_differ"] == 0).all()
    assert overall["p_value"].isna().all() and not overall["tested"].any() and not overall["significant"].any()
    assert result.mcnemar.iloc[0]["b01"] == result.mcnemar.iloc[0]["b10"] == 0


@pytest.mark.slow
def test_every_number_equals_analysis_stats_on_the_demo_runs(demo, demo_result) -> None:
    """Each metric, scope and group of one pair: exactly `stats.paired_bootstrap`'s numbers; McNemar:
    `stats.mcnemar`'s."""
    a, b = DEMO_RUNS[0], DEMO_RUNS[2]
    checked = 0
    for metric in C.COMPARABLE:
        for scope, keys in C.SCOPES.items():
            got = demo_result.deltas
            got = got[(got["a"] == a) & (got["b"] == b) & (got["metric"] == metric) & (got["scope"] == scope)]
            if f"{metric} per {scope}" in demo_result.skipped:
                assert not len(got)
                continue
            ref = S.paired_bootstrap(demo[a], demo[b], metric, by=keys or None, n_resamples=1000)
            ref_frame = pd.DataFrame([ref]) if isinstance(ref, dict) else ref
            assert len(got) == len(ref_frame), (metric, scope)
            if keys:
                assert got[keys].astype(str).to_numpy().tolist() == ref_frame[keys].astype(str).to_numpy().tolist()
            tested = got["tested"].to_numpy(bool)  # the others keep their delta and counts only
            for column in ("estimate_a", "estimate_b", "delta", "low", "high", "p_value"):
                where = tested if column in ("low", "high", "p_value") else np.ones(len(got), bool)
                np.testing.assert_allclose(
                    got[column].to_numpy(float)[where], ref_frame[column].to_numpy(float)[where], rtol=0, atol=1e-12,
                    err_msg=f"{metric} {scope} {column}",
                )  # fmt: skip
            for column in ("n_turns", "n_dialogues_differ", "n_turns_differ"):
                assert got[column].tolist() == ref_frame[column].tolist(), (metric, scope, column)
            checked += 1
    assert checked >= 3 * len(C.COMPARABLE) - 2  # TRADE slot accuracy has no per-domain / per-slot breakdown
    mc = demo_result.mcnemar
    for row in mc.itertuples():
        ref = S.mcnemar(demo[row.a], demo[row.b])
        assert (row.b01, row.b10, row.p_value) == (ref["b01"], ref["b10"], ref["p_value"])


def test_holm_against_a_hand_computation() -> None:
    # Sorted: 0.005 x 4 = 0.02; 0.01 x 3 = 0.03; 0.03 x 2 = 0.06; 0.04 x 1 = 0.04 -> max so far 0.06.
    assert C.holm([0.01, 0.04, 0.03, 0.005]).tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert C.holm([0.5, 0.6]).tolist() == pytest.approx([1.0, 1.0])  # capped at 1
    out = C.holm([0.02, np.nan, 0.01])
    assert np.isnan(out[1]) and out[[0, 2]].tolist() == pytest.approx([0.02, 0.02])  # NaN is not in the family


def test_holm_in_the_result_corrects_each_family_by_hand(demo_result) -> None:
    """Overall: one metric over the three pairs; per slot: one pair and one metric over its slots."""
    floor = 1 / demo_result.n_resamples
    overall = demo_result.overall("jga")
    assert len(overall) == 3 and (overall["family_size"] == 3).all()
    p = np.maximum(overall["p_value"].to_numpy(), floor)
    order = np.argsort(p)
    by_hand = np.empty(3)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (3 - rank) * p[i]))
        by_hand[i] = running
    np.testing.assert_allclose(overall["p_holm"].to_numpy(), by_hand)
    d = demo_result.deltas
    slots = d[(d["scope"] == "slot") & (d["metric"] == "jga") & (d["a"] == DEMO_RUNS[0]) & (d["b"] == DEMO_RUNS[1])]
    m = int(slots["p_value"].notna().sum())
    assert (slots["family_size"] == m).all() and m > 10
    smallest = slots["p_value"].fillna(1).clip(lower=floor).idxmin()
    assert slots.loc[smallest, "p_holm"] == pytest.approx(min(1.0, m * max(slots.loc[smallest, "p_value"], floor)))
    assert (slots["significant"] == (slots["p_holm"] <= 0.05)).all()
    assert "Holm" in demo_result.holm_note and "3 pair(s)" in demo_result.holm_note


def test_matrix_holds_significant_overall_deltas_both_ways(demo_result) -> None:
    table = demo_result.matrix("jga")
    for row in demo_result.overall("jga").itertuples():
        if row.significant:
            assert table.loc[row.b, row.a] == pytest.approx(row.delta)
            assert table.loc[row.a, row.b] == pytest.approx(-row.delta)
        else:
            assert np.isnan(table.loc[row.b, row.a])
    assert table.notna().to_numpy().sum() >= 2  # A vs B differ by 0.11 JGA: significant


def test_runs_on_different_gold_are_bad_input(hand) -> None:
    other_gold = {**GOLD, "D3": [{"taxi": {"leave": "11"}}]}
    other = scored_from_states(other_gold, PRED_B, run_id="B")
    with pytest.raises(InputError, match="same gold") as err:
        C.compare({"A": hand["A"], "B": other}, n_resamples=100)
    assert err.value.dialogue_id == "D3" and err.value.turn == 0
    fewer = scored_from_states({k: GOLD[k] for k in ("D1", "D2")}, {k: PRED_B[k] for k in ("D1", "D2")}, run_id="B")
    with pytest.raises(InputError, match="same gold"):
        C.compare({"A": hand["A"], "B": fewer}, n_resamples=100)


def test_runs_under_different_conventions_are_bad_input(hand) -> None:
    trade = scored_from_states(GOLD, PRED_B, run_id="B", convention="trade")
    with pytest.raises(InputError, match="convention"):
        C.compare({"A": hand["A"], "B": trade}, n_resamples=100)


def _jsonl(path: Path, gold: dict, pred: dict) -> Path:
    lines = []
    for dialogue, states in gold.items():
        for t, state in enumerate(states):
            lines.append(
                json.dumps({"dialogue_id": dialogue, "turn_index": t, "gold": state, "pred": pred[dialogue][t]})
            )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.slow
def test_cli_json_and_table(tmp_path, capsys) -> None:
    a = _jsonl(tmp_path / "a.jsonl", GOLD, PRED_A)
    b = _jsonl(tmp_path / "b.jsonl", GOLD, PRED_B)
    assert main(["compare", "--pred", str(a), "--pred", str(b), "--resamples", "200", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["runs"] == ["a.jsonl", "b.jsonl"] and out["direction"] == "delta = b - a"
    jga = next(r for r in out["deltas"] if r["metric"] == "jga" and r["scope"] == "overall")
    assert jga["delta"] == pytest.approx(0.2) and "Holm" in out["multiple_testing"]
    assert (out["mcnemar"][0]["b01"], out["mcnemar"][0]["b10"]) == (2, 1)
    assert main(["compare", "--pred", str(a), "--pred", str(b), "--resamples", "200"]) == 0
    text = capsys.readouterr().out
    assert "== b.jsonl - a.jsonl" in text and "McNemar" in text and "Holm" in text


def test_cli_bad_input_is_one_line_exit_2(tmp_path, capsys) -> None:
    a = _jsonl(tmp_path / "a.jsonl", GOLD, PRED_A)
    other = _jsonl(tmp_path / "other.jsonl", {**GOLD, "D3": [{"taxi": {"leave": "11"}}]}, PRED_B)
    assert main(["compare", "--pred", str(a), "--pred", str(other)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "other.jsonl" in err and "same gold" in err and "D3" in err
    assert main(["compare", "--pred", str(a)]) == 2
    assert "two or more" in capsys.readouterr().err
    assert main(["compare", "--pred", str(a), "--pred", str(a)]) == 2
    assert "twice" in capsys.readouterr().err


def test_mcnemar_is_holm_corrected_over_the_pairs(demo_result) -> None:
    mc = demo_result.mcnemar
    assert len(mc) == 3 and (mc["family_size"] == 3).all()
    p = mc["p_value"].to_numpy()
    order = np.argsort(p)
    by_hand = np.empty(3)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (3 - rank) * p[i]))
        by_hand[i] = running
    np.testing.assert_allclose(mc["p_holm"].to_numpy(), by_hand)


def test_cli_convention_applies_to_every_run(tmp_path, capsys) -> None:
    a = _jsonl(tmp_path / "a.jsonl", GOLD, PRED_A)
    b = _jsonl(tmp_path / "b.jsonl", GOLD, PRED_B)
    argv = ["compare", "--pred", str(a), "--pred", str(b), "--resamples", "100", "--json", "--convention", "trade"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["convention"] == "trade"
    assert main(["compare", "--pred", str(a), "--pred", str(b), "--resamples", "0"]) == 2
    assert "--resamples" in capsys.readouterr().err


def test_the_pages_comparison_skips_mcnemar_and_refuses_runs_on_different_gold(demo, hand) -> None:
    """The Overview's matrix and delta charts (`views.pairwise_comparison`) show no McNemar, so they skip it
    (~35 ms a pair), and trust `views.gold_groups` for the gold check, refusing runs it would not group."""
    from analysis import views

    runs = list(demo.values())[:2]
    full = C.compare({s.metas[0].run_id: s for s in runs}, metrics=("jga",), scopes=("overall",), n_resamples=200)
    page = views.pairwise_comparison(runs, resamples=200)
    assert page.mcnemar.empty and list(page.mcnemar.columns) == C.MCNEMAR_COLUMNS
    assert page.overall("jga")["delta"].tolist() == pytest.approx(full.overall("jga")["delta"].tolist())
    assert page.overall("jga")["p_value"].tolist() == pytest.approx(full.overall("jga")["p_value"].tolist())
    with pytest.raises(ValueError, match="same gold"):
        views.pairwise_comparison([runs[0], hand["A"]], resamples=20)


def test_support_counts_by_hand_and_thin_groups_get_no_test(hand) -> None:
    """JGA: A and B differ on D1 turn 1, D2 turn 1 and D3 turn 0 (three turns in three dialogues). Per
    domain, hotel is D1's two turns (they differ on one), taxi D3's one. Under the default minimum support
    (10 differing dialogues) none of these is tested: the delta and counts stay, interval and p go."""
    result = C.compare(hand, metrics=("jga",), n_resamples=200)
    jga = _row(result, "jga")
    assert (jga["n_dialogues"], jga["n_turns"], jga["n_dialogues_differ"], jga["n_turns_differ"]) == (3, 5, 3, 3)
    assert jga["delta"] == pytest.approx(0.2) and not jga["tested"] and not jga["significant"]
    assert np.isnan(jga["low"]) and np.isnan(jga["high"]) and np.isnan(jga["p_value"]) and np.isnan(jga["p_holm"])
    assert jga["p_text"] == "not tested: fewer than 10 dialogues differ"
    domains = result.deltas[result.deltas["scope"] == "domain"].set_index("group")
    assert domains.loc["hotel", ["n_dialogues", "n_turns", "n_dialogues_differ", "n_turns_differ"]].tolist() == [
        1,
        2,
        1,
        1,
    ]
    assert domains.loc["taxi", ["n_dialogues", "n_turns", "n_dialogues_differ", "n_turns_differ"]].tolist() == [
        1,
        1,
        1,
        1,
    ]
    assert not domains["tested"].any() and domains["family_size"].eq(0).all()
    assert jga["support_text"] == "differ in 3 of 3 dialogues (3 turns)"
    # The rows left untested do not count in Holm's family; lowering the bar tests the overall JGA.
    assert _row(C.compare(hand, metrics=("jga",), n_resamples=200, min_support=3), "jga")["tested"]


def test_a_zero_width_interval_is_never_evidence() -> None:
    """One dialogue (of twelve) differs, with the group living only there: every resample that draws it gives
    the same delta, a zero-width interval and a bootstrap p of 0. It is not tested, whatever the minimum."""
    gold = {f"D{i}": [{"hotel": {"area": "east"}}] for i in range(12)}
    gold["D0"] = [{"hotel": {"area": "east"}, "taxi": {"leave": "9"}}]
    pred_a = dict(gold)
    pred_b = {**gold, "D0": [{"hotel": {"area": "east"}, "taxi": {"leave": "10"}}]}
    runs = {"A": scored_from_states(gold, pred_a, run_id="A"), "B": scored_from_states(gold, pred_b, run_id="B")}
    result = C.compare(runs, metrics=("jga",), scopes=("slot",), n_resamples=200, min_support=1)
    taxi = result.deltas.set_index("group").loc["taxi-leave"]
    assert taxi["delta"] == pytest.approx(-1.0)
    assert not taxi["tested"] and np.isnan(taxi["p_value"]) and not taxi["significant"]
    assert (taxi["n_dialogues"], taxi["n_dialogues_differ"], taxi["n_turns_differ"]) == (1, 1, 1)


def test_top_groups_rank_by_evidence_one_line_per_group(demo_result) -> None:
    """The CLI's lists of per-domain and per-slot deltas name each group once, under its strongest metric."""
    text = C.text_report(demo_result)
    block = text.split("per domain:")[1].split("per slot:")[0]
    groups = [line.split()[0] for line in block.splitlines()[1:] if line.startswith("    ")]
    assert groups and len(groups) == len(set(groups))
    ranked = C.by_evidence(demo_result.deltas[demo_result.deltas["scope"] == "domain"])
    assert ranked["evidence"].is_monotonic_decreasing and ranked["group"].is_unique
