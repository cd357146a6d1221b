"""Cluster bootstrap intervals, paired tests and seed summaries (`analysis.stats`)."""

from __future__ import annotations

import math
import warnings
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from analysis import metrics as M
from analysis import stats as S
from analysis.conventions import get_convention
from analysis.demo.testing import run_from_states, scored_from_states
from analysis.loading import load_run
from analysis.model import Run, RunMeta, dialogue_key
from analysis.scoring import Scored, combine, score_run
from tests.conftest import realdata_path

# A small run: 4 dialogues, two domains, every outcome kind.
GOLD = {
    "D1": [{"hotel": {"area": "east"}}, {"hotel": {"area": "east", "stars": "4"}}],
    "D2": [{}, {"train": {"day": "monday"}}, {"train": {"day": "monday", "dest": "ely"}}],
    "D3": [{"hotel": {"area": "west"}, "train": {"day": "sunday"}}],
    "D4": [{"train": {"dest": "ely"}}, {"train": {"dest": "ely"}, "hotel": {"stars": "3"}}],
}
PRED = {
    "D1": [{"hotel": {"area": "east"}}, {"hotel": {"area": "east", "stars": "5"}}],
    "D2": [{}, {"train": {"day": "monday"}}, {"train": {"day": "monday"}}],
    "D3": [{"hotel": {"area": "west"}, "train": {"day": "sunday"}, "taxi": {"leave": "9"}}],
    "D4": [{"train": {"dest": "ely"}}, {"train": {"dest": "ely"}, "hotel": {"stars": "3"}}],
}


@pytest.fixture(scope="module")
def small() -> Scored:
    return scored_from_states(GOLD, PRED)


@pytest.fixture(scope="module")
def mlcsg() -> Scored:
    return score_run(load_run(realdata_path("mlcsg", "all_prediction_TRADE.json")))


def _jga_only(dialogue_ids: np.ndarray, correct: np.ndarray, run_id: str = "sim") -> Scored:
    """A minimal scored run carrying only what JGA reads (turns with `joint_correct`)."""
    turn_index = pd.Series(dialogue_ids).groupby(dialogue_ids).cumcount().to_numpy()
    turns = pd.DataFrame(
        {
            "run_id": run_id,
            "tid": np.arange(len(correct)),
            "dialogue_id": pd.array(dialogue_ids, dtype="str"),
            "turn_index": turn_index,
            "joint_correct": correct,
        }
    )
    empty = pd.DataFrame({"run_id": [], "domain": [], "slot": []}, dtype="str")
    return Scored(get_convention("exact"), [RunMeta(run_id)], turns, empty, empty)


def _simulate(rng: np.random.Generator, n_dialogues: int) -> tuple[np.ndarray, np.ndarray]:
    """Dialogues with 1 + Poisson(6) turns and a per-dialogue success rate p ~ Beta(2, 2): turns of a
    dialogue are correlated (intra-class correlation 0.2), the true JGA is E[p] = 0.5."""
    lengths = 1 + rng.poisson(6, n_dialogues)
    rates = rng.beta(2, 2, n_dialogues)
    dialogue = np.repeat(np.arange(n_dialogues), lengths)
    correct = rng.random(len(dialogue)) < rates[dialogue]
    return np.char.add("d", dialogue.astype(str)), correct


@pytest.mark.slow
def test_interval_covers_the_true_jga_at_about_the_nominal_rate() -> None:
    rng = np.random.default_rng(2024)
    covered, covered_naive, reps = 0, 0, 200
    for rep in range(reps):
        dialogue_ids, correct = _simulate(rng, 120)
        ci = S.bootstrap_ci(_jga_only(dialogue_ids, correct), n_resamples=400, seed=rep)
        covered += ci["low"] <= 0.5 <= ci["high"]
        # Treating every turn as its own dialogue ignores the correlation: too narrow.
        turn_ids = np.char.add("t", np.arange(len(correct)).astype(str))
        naive = S.bootstrap_ci(_jga_only(turn_ids, correct), n_resamples=400, seed=rep)
        covered_naive += naive["low"] <= 0.5 <= naive["high"]
    assert 0.88 <= covered / reps <= 0.98
    assert covered_naive / reps < 0.88


@pytest.mark.parametrize("metric", S.METRICS)
def test_point_estimate_is_the_metric_functions_value(small: Scored, metric: str) -> None:
    expected = {
        "slot_f1_micro": lambda s: M.slot_prf_micro(s)["f1"],
        "slot_precision": lambda s: M.slot_prf_micro(s)["precision"],
        "slot_recall": lambda s: M.slot_prf_micro(s)["recall"],
    }.get(metric, lambda s: dict(S._MEAN_OVER_TURNS).get(metric, (M.slot_accuracy,))[0](s))
    ci = S.bootstrap_ci(small, metric, n_resamples=200)
    assert ci["estimate"] == expected(small)
    assert ci["low"] <= ci["estimate"] <= ci["high"]
    assert ci["n_dialogues"] == 4


@pytest.mark.parametrize("metric", S.METRICS)
@pytest.mark.parametrize("by", [[], ["domain"], ["turn_index"]])
def test_sufficient_statistics_reproduce_the_metric(small: Scored, metric: str, by: list[str]) -> None:
    """Unit weights (the original sample) turn the per-dialogue sums back into the metric."""
    if metric == "slot_accuracy_trade" and by == ["domain"]:
        pytest.skip("TRADE slot accuracy is defined over the whole ontology only")
    stats = S._stats(small, metric, by, S._dialogues(small))
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = stats.num.sum(axis=1) / stats.den.sum(axis=1)
    point = S._with_points(stats.labels, S._point(small, metric, by), by)
    np.testing.assert_allclose(ratio, point, rtol=1e-12, atol=1e-12)


def test_grouped_intervals_contain_their_estimates(small: Scored) -> None:
    per_domain = S.bootstrap_ci(small, "jga", by="domain", n_resamples=300)
    assert isinstance(per_domain, pd.DataFrame)
    expected = M.joint_goal_accuracy(small, by="domain")
    assert isinstance(expected, pd.DataFrame)
    assert per_domain["domain"].tolist() == expected["domain"].tolist()
    assert per_domain["estimate"].tolist() == expected["jga"].tolist()
    assert per_domain["n_turns"].tolist() == expected["n_turns"].tolist()
    assert ((per_domain["low"] <= per_domain["estimate"]) & (per_domain["estimate"] <= per_domain["high"])).all()
    by_turn = S.bootstrap_ci(small, "jga", by="turn_index", n_resamples=300)
    assert isinstance(by_turn, pd.DataFrame)
    assert by_turn["turn_index"].tolist() == [0, 1, 2]
    assert by_turn["n_dialogues"].tolist() == [4, 3, 1]
    assert ((by_turn["low"] <= by_turn["estimate"]) & (by_turn["estimate"] <= by_turn["high"])).all()


def test_same_seed_same_interval_other_seed_other_resamples(small: Scored) -> None:
    first = S.bootstrap_ci(small, "slot_f1_micro", n_resamples=300, seed=7)
    assert S.bootstrap_ci(small, "slot_f1_micro", n_resamples=300, seed=7) == first
    counts = S.resample_counts(50, n_resamples=20, seed=1)
    assert counts.shape == (20, 50) and (counts.sum(axis=1) == 50).all()
    assert not np.array_equal(counts, S.resample_counts(50, n_resamples=20, seed=2))


def test_empty_slices_are_nan() -> None:
    no_gold = scored_from_states({"a": [{}, {}], "b": [{}]}, {"a": [{}, {}], "b": [{}]})
    aga = S.bootstrap_ci(no_gold, "aga", n_resamples=100)
    assert math.isnan(aga["estimate"]) and math.isnan(aga["low"]) and math.isnan(aga["high"])
    assert aga["n_turns"] == 0
    nothing = _jga_only(np.array([], dtype=str), np.array([], dtype=bool))
    jga = S.bootstrap_ci(nothing, n_resamples=100)
    assert math.isnan(jga["estimate"]) and math.isnan(jga["low"]) and jga["n_dialogues"] == 0


def test_bad_arguments_are_named(small: Scored) -> None:
    with pytest.raises(ValueError, match="metric has to be one of jga"):
        S.bootstrap_ci(small, "accuracy")
    with pytest.raises(ValueError, match="level has to be strictly between 0 and 1"):
        S.bootstrap_ci(small, level=95)
    with pytest.raises(ValueError, match="run_id"):
        S.paired_bootstrap(small, small, by="run_id")


def test_runs_of_a_combination_share_the_resampled_dialogues(small: Scored) -> None:
    other = scored_from_states(GOLD, GOLD, run_id="perfect")
    both = combine([small, other])
    per_run = S.bootstrap_ci(both, "jga", by="run_id", n_resamples=200)
    assert isinstance(per_run, pd.DataFrame)
    assert per_run["run_id"].tolist() == ["perfect", "run"]
    assert per_run["n_dialogues"].tolist() == [4, 4]
    alone = S.bootstrap_ci(small, "jga", n_resamples=200)
    row = per_run.set_index("run_id").loc["run"]
    assert (row["estimate"], row["low"], row["high"]) == (alone["estimate"], alone["low"], alone["high"])


def test_identical_runs_give_p_one(small: Scored) -> None:
    renamed = scored_from_states({k.lower(): v for k, v in GOLD.items()}, {k.lower(): v for k, v in PRED.items()})
    for metric in ("jga", "slot_f1_micro", "slot_f1_seed", "slot_accuracy", "aga"):
        paired = S.paired_bootstrap(small, renamed, metric, n_resamples=300)
        assert isinstance(paired, dict)
        assert paired["p_value"] == 1.0
        assert paired["win_ratio"] == 0.5
        assert paired["delta"] == 0.0 and paired["low"] == 0.0 and paired["high"] == 0.0
        assert paired["n_dialogues"] == 4 and paired["only_in_a"] == 0
    test = S.mcnemar(small, renamed)
    assert test["p_value"] == 1.0 and test["p_value_chi2"] == 1.0
    assert test["b01"] == test["b10"] == 0 and test["n_paired_turns"] == 8


def _pair(n_dialogues: int = 80) -> tuple[Scored, Scored]:
    rng = np.random.default_rng(5)
    dialogue_ids, correct = _simulate(rng, n_dialogues)
    fixed = correct | (rng.random(len(correct)) < 0.4)  # b repairs 40% of a's wrong turns, breaks none
    return _jga_only(dialogue_ids, correct, "a"), _jga_only(dialogue_ids, fixed, "b")


def test_a_clearly_better_run_is_significant() -> None:
    a, b = _pair()
    paired = S.paired_bootstrap(a, b, n_resamples=1000)
    assert isinstance(paired, dict)
    assert paired["delta"] == M.joint_goal_accuracy(b) - M.joint_goal_accuracy(a)
    assert paired["delta"] > 0.1 and paired["low"] > 0
    assert paired["p_value"] < 0.01 and paired["win_ratio"] > 0.99
    reverse = S.paired_bootstrap(b, a, n_resamples=1000)
    assert isinstance(reverse, dict)
    assert reverse["p_value"] == paired["p_value"] and reverse["win_ratio"] == 1 - paired["win_ratio"]
    test = S.mcnemar(a, b)
    assert test["b10"] == 0 and test["b01"] > 50
    assert test["p_value"] < 0.01 and test["p_value_chi2"] < 0.01


def test_pairing_keeps_the_shared_dialogues(small: Scored) -> None:
    fewer = {k: v for k, v in GOLD.items() if k != "D2"}
    b = scored_from_states(fewer, fewer, run_id="b")
    paired = S.paired_bootstrap(small, b, n_resamples=200)
    assert isinstance(paired, dict)
    assert (paired["n_dialogues"], paired["only_in_a"], paired["only_in_b"]) == (3, 1, 0)
    shared_a = scored_from_states(fewer, {k: v for k, v in PRED.items() if k != "D2"})
    assert paired["estimate_a"] == M.joint_goal_accuracy(shared_a)
    assert paired["estimate_b"] == 1.0
    per_domain = S.paired_bootstrap(small, b, by="domain", n_resamples=200)
    assert isinstance(per_domain, pd.DataFrame)
    assert per_domain["domain"].tolist() == ["hotel", "taxi", "train"]
    taxi = per_domain.set_index("domain").loc["taxi"]
    assert taxi["estimate_a"] == 0.0 and math.isnan(taxi["estimate_b"]) and math.isnan(taxi["p_value"])


@pytest.mark.parametrize(("k", "n"), [(0, 1), (0, 10), (3, 10), (7, 10), (12, 40), (20, 41), (100, 250)])
def test_exact_binomial_p_matches_integer_arithmetic(k: int, n: int) -> None:
    low = min(k, n - k)
    exact = min(1.0, 2 * sum(math.comb(n, i) for i in range(low + 1)) / 2**n)
    assert S.binomial_two_sided_p(k, n) == pytest.approx(exact, rel=1e-10)


def test_seed_summary() -> None:
    summary = S.seed_summary([0.50, 0.52, 0.54])
    assert summary["mean"] == pytest.approx(0.52) and summary["std"] == pytest.approx(0.02)
    assert summary["n"] == 3 and summary["per_seed"] == [0.50, 0.52, 0.54]
    assert math.isnan(S.seed_summary([0.5])["std"])
    assert math.isnan(S.seed_summary([])["mean"])


def test_over_seeds_groups_runs_of_one_system() -> None:
    runs = []
    for seed, extra_wrong in ((1, 0), (2, 1), (3, 2)):
        pred = {k: list(v) for k, v in GOLD.items()}
        for dialogue in list(pred)[:extra_wrong]:
            pred[dialogue] = [{}] * len(pred[dialogue])
        runs.append(score_run(_with_meta(pred, f"sys-s{seed}", "sys", seed)))
    runs.append(score_run(_with_meta(GOLD, "oracle", "oracle", None)))
    per_run = S.headline_by_run(combine(runs))
    assert per_run["run_id"].tolist() == ["sys-s1", "sys-s2", "sys-s3", "oracle"]
    table = S.over_seeds(per_run).set_index(["system", "metric"])
    jga = per_run.loc[per_run["system"] == "sys", "jga"]
    row = table.loc[("sys", "jga")]
    assert row["mean"] == pytest.approx(jga.mean()) and row["std"] == pytest.approx(jga.std(ddof=1))
    assert row["n_seeds"] == 3
    assert table.loc[("oracle", "jga"), "mean"] == 1.0 and math.isnan(table.loc[("oracle", "jga"), "std"])


def _with_meta(pred: dict, run_id: str, system: str, seed: int | None) -> Run:
    run = run_from_states(GOLD, pred, run_id=run_id)
    return replace(run, meta=replace(run.meta, system=system, seed=seed))


@pytest.mark.realdata
def test_mlcsg_jga_interval(mlcsg: Scored) -> None:
    ci = S.bootstrap_ci(mlcsg, "jga")
    assert isinstance(ci, dict)
    assert round(ci["estimate"], 4) == 0.5194
    assert ci["n_dialogues"] == 999 and ci["n_turns"] == 7368
    assert ci["low"] < 0.5194 < ci["high"]
    assert 0.02 < ci["high"] - ci["low"] < 0.05
    micro = S.bootstrap_ci(mlcsg, "slot_f1_micro")
    assert isinstance(micro, dict)
    assert micro["low"] < micro["estimate"] < micro["high"] and micro["high"] - micro["low"] < 0.03
    per_domain = S.bootstrap_ci(mlcsg, "jga", by="domain")
    assert isinstance(per_domain, pd.DataFrame)
    assert per_domain["domain"].tolist() == ["attraction", "hotel", "restaurant", "taxi", "train"]
    assert ((per_domain["low"] < per_domain["estimate"]) & (per_domain["estimate"] < per_domain["high"])).all()


@pytest.mark.realdata
def test_mlcsg_against_itself(mlcsg: Scored) -> None:
    paired = S.paired_bootstrap(mlcsg, mlcsg)
    assert isinstance(paired, dict)
    assert paired["p_value"] == 1.0 and paired["n_dialogues"] == 999
    assert S.mcnemar(mlcsg, mlcsg)["p_value"] == 1.0


@pytest.mark.realdata
@pytest.mark.parametrize("by", [None, "domain", "turn_index", ["domain", "slot"]])
def test_jga_fast_parts_equal_the_generic_path(mlcsg: Scored, by) -> None:
    """`_jga_parts` skips the per-turn group-by; it must give the same (group, dialogue) sums as the
    generic path through `joint_goal_accuracy(by=turn key + by)`, hence the same intervals."""
    keys = M._by_list(by)
    dialogues = S._dialogues(mlcsg)
    fast = S._stats(mlcsg, "jga", keys, dialogues)
    full = list(dict.fromkeys([*S.TURN_KEY, *keys]))
    per = M.joint_goal_accuracy(mlcsg, by=full)
    per = per[per["n_turns"] > 0].reset_index(drop=True)
    d = dialogues.get_indexer(dialogue_key(per["dialogue_id"]))
    if keys:
        grouped = per.groupby(keys, sort=True, observed=True, dropna=False)
        g, labels = grouped.ngroup().to_numpy(), grouped.size().reset_index()[keys]
    else:
        g, labels = np.zeros(len(per), dtype="int64"), pd.DataFrame(index=range(1))
    flat = g * len(dialogues) + d
    size = len(labels) * len(dialogues)
    num = np.bincount(flat, weights=per["jga"].to_numpy(float) * per["n_turns"].to_numpy(float), minlength=size)
    den = np.bincount(flat, weights=per["n_turns"].to_numpy(float), minlength=size)
    pd.testing.assert_frame_equal(fast.labels, labels.reset_index(drop=True))
    np.testing.assert_array_equal(fast.num.ravel(), num)
    np.testing.assert_array_equal(fast.den.ravel(), den)
    assert fast.num.sum() > 0 and fast.den.sum() > fast.num.sum()  # not a vacuous comparison


def test_memoised_slot_counts_follow_new_tables(small: Scored) -> None:
    """Per-domain JGA memoises its slot counts on the Scored; a Scored given other slots recomputes."""
    before = M.joint_goal_accuracy(small, by="domain")
    assert M.joint_goal_accuracy(small, by="domain").equals(before)  # served from the memo, same value
    slots = small.slots.copy()
    wrong = slots["domain"] == "hotel"
    slots.loc[wrong, "outcome"] = "wrong_value"
    changed = replace(small, slots=slots)
    after = M.joint_goal_accuracy(changed, by="domain")
    hotel = after.loc[after["domain"] == "hotel", "jga"].iloc[0]
    assert hotel == 0.0 and before.loc[before["domain"] == "hotel", "jga"].iloc[0] > 0
    assert M.joint_goal_accuracy(small, by="domain").equals(before)  # the original is untouched


def test_resample_counts_are_memoised_read_only_and_equal_to_a_fresh_draw() -> None:
    first = S.resample_counts(50, n_resamples=200, seed=3)
    assert S.resample_counts(50, n_resamples=200, seed=3) is first  # shared by the runs of one test set
    np.testing.assert_array_equal(first, S._draw_counts(50, 200, 3))
    assert not first.flags.writeable
    with pytest.raises(ValueError):
        first[0, 0] = 7.0
    assert not np.array_equal(S.resample_counts(50, n_resamples=200, seed=4), first)


def test_bootstrap_intervals_are_memoised_per_scored_and_handed_out_as_copies(small: Scored) -> None:
    first = S.bootstrap_ci(small, "jga", by="domain", n_resamples=300)
    first.loc[:, "low"] = -1.0  # a caller scribbling on its copy
    again = S.bootstrap_ci(small, "jga", by="domain", n_resamples=300)
    assert (again["low"] >= 0).all()
    fresh = S._bootstrap_ci(small, "jga", ["domain"], 300, 0.95, 0)
    pd.testing.assert_frame_equal(again, fresh)
    overall = S.bootstrap_ci(small, "jga", n_resamples=300)
    overall["low"] = -1.0
    assert S.bootstrap_ci(small, "jga", n_resamples=300)["low"] >= 0
    # Another seed is another interval, never the memoised one.
    other_seed = S.bootstrap_ci(small, "jga", by="domain", n_resamples=300, seed=1)
    pd.testing.assert_frame_equal(other_seed, S._bootstrap_ci(small, "jga", ["domain"], 300, 0.95, 1))
    assert (other_seed["seed"] == 1).all()
    changed = replace(small, turns=small.turns.copy(), slots=small.slots.assign(outcome="correct"))
    ones = S.bootstrap_ci(changed, "jga", by="domain", n_resamples=300)
    assert (ones["estimate"] == 1.0).all() and not (again["estimate"] == 1.0).all()


def test_percentiles_equal_nanquantile_column_by_column() -> None:
    """`_percentiles` takes `np.quantile` for the columns without NaN (one vectorised call) and
    `np.nanquantile` for the others: the same numbers, bit for bit, as `np.nanquantile` on the whole
    matrix, with NaN resamples, all-NaN groups, ties and one resample."""
    rng = np.random.default_rng(5)
    for trial in range(120):
        samples = np.round(rng.random((int(rng.integers(1, 1100)), int(rng.integers(1, 40)))), int(trial % 5))
        if trial % 3 == 1:  # NaN in one group only: the others take the vectorised path
            samples[rng.random(len(samples)) < 0.1, 0] = np.nan
        elif trial % 3 == 2:
            samples[rng.random(samples.shape) < 0.03] = np.nan
        if trial % 4 == 0:
            samples[:, -1] = np.nan
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want = np.nanquantile(samples, [(1 - 0.95) / 2, 1 - (1 - 0.95) / 2], axis=0)
        low, high = S._percentiles(samples, 0.95)
        assert np.array_equal(low, want[0], equal_nan=True) and np.array_equal(high, want[1], equal_nan=True), trial
