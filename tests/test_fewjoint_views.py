"""analysis.fewjoint.views: the FewJoint page's frames equal what score_fewjoint computes, filters keep
exactly the matching queries, verdicts and tag diffs describe the query they name."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from analysis.fewjoint import count_ill_formed, load_fewjoint_system, score_fewjoint
from analysis.fewjoint import views as V
from analysis.workspace import read_manifest

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo" / "workspace.toml"

GOLD = {
    "weather": [
        {
            "support": {
                "seq_ins": [["rain", "in", "rome"]],
                "seq_outs": [["O", "O", "B-city"]],
                "labels": [["ask_rain"]],
            },
            "query": {
                "seq_ins": [["rain", "in", "paris"], ["wind", "today"]],
                "seq_outs": [["O", "O", "B-city"], ["O", "B-date"]],
                "labels": [["ask_rain"], ["ask_wind"]],
            },
        }
    ]
}
# seed 1: query 0 right, query 1 intent wrong and its date missed; seed 2: an ill-formed I-city on query 0.
PREDS = {
    "1": [("ask_rain", ["O", "O", "B-city"]), ("ask_rain", ["O", "O"])],
    "2": [("ask_rain", ["O", "O", "I-city"]), ("ask_wind", ["O", "B-date"])],
}


@pytest.fixture
def tiny(tmp_path: Path):
    gold = tmp_path / "1shot" / "test.json"
    gold.parent.mkdir()
    gold.write_text(json.dumps(GOLD), encoding="utf-8")
    paths = []
    for seed, rows in PREDS.items():
        path = tmp_path / f"tiny_seed{seed}.jsonl"
        lines = [
            json.dumps({"domain": "weather", "episode": 0, "query_index": i, "pred_intent": intent, "pred_tags": tags})
            for i, (intent, tags) in enumerate(rows)
        ]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return score_fewjoint(load_fewjoint_system(gold, paths, name="tiny"))


@pytest.fixture(scope="module")
def demo():
    if not DEMO.exists():
        pytest.skip(f"the demo workspace {DEMO} is absent (make demo)")
    entry = read_manifest(DEMO).fewjoint_entries[0]
    system = load_fewjoint_system(entry.gold, entry.pred, name=entry.name, shots=entry.shots)
    return {averaging: score_fewjoint(system, averaging=averaging) for averaging in ("episode", "micro")}


def test_leaderboard_table_equals_the_summary(demo):
    board = V.leaderboard_table(list(demo.values()))
    assert len(board) == 2
    for row in board.itertuples(index=False):
        summary = demo[row.averaging].summary.set_index("metric")
        for metric in ("intent_accuracy", "slot_f1", "sentence_accuracy"):
            mean, std = summary.loc[metric, "mean"], summary.loc[metric, "std"]
            assert getattr(row, metric) == pytest.approx(mean)
            assert getattr(row, f"{metric}_std") == pytest.approx(std)
        text = row._asdict()
    assert board.loc[0, "slot F1 (mean ± std)"] == V.mean_std(board.loc[0, "slot_f1"], board.loc[0, "slot_f1_std"])
    assert set(text) >= {"system", "shots", "n_seeds", "averaging"}
    assert board["n_seeds"].tolist() == [5, 5]


def test_leaderboard_orders_by_shots(tiny, demo):
    board = V.leaderboard_table([demo["episode"], tiny])
    assert board["shots"].tolist() == sorted(board["shots"].tolist())
    assert V.leaderboard_table([]).empty


def test_mean_std_text():
    assert V.mean_std(0.5, 0.25) == "0.5000 ± 0.2500"
    assert "n/a" in V.mean_std(0.5, math.nan)
    assert V.mean_std(math.nan, math.nan) == "n/a"


def test_seed_table_counts_ill_formed_bio(tiny):
    seeds = V.seed_table(tiny).set_index("seed")
    assert seeds.loc["2", "ill_formed_bio_tags"] == count_ill_formed(["O", "O", "I-city"]) == 1
    assert seeds.loc["1", "ill_formed_bio_tags"] == 0
    assert seeds.loc["2", "queries_with_ill_formed_bio"] == 1
    assert seeds.loc["1", "intent_accuracy"] == pytest.approx(0.5)
    assert seeds.loc["2", "sentence_accuracy"] == pytest.approx(0.5)  # I-city differs from B-city as a tag


def test_seed_warning_below_five_seeds(tiny, demo):
    assert "only 2 seed" in V.seed_warning(tiny)
    assert V.seed_warning(demo["episode"]) is None


def test_averaging_caption_states_the_averaging():
    assert "per episode" in V.averaging_caption("episode")
    assert "pooled over all queries" in V.averaging_caption("micro", n_seeds=5)
    with pytest.raises(ValueError, match="episode, micro"):
        V.averaging_caption("macro")


def test_query_table_filters(demo):
    result = demo["episode"]
    queries = result.queries
    seed = str(result.seeds[1])
    everything = V.query_table(result, seed=seed)
    assert len(everything) == (queries["seed"].astype(str) == seed).sum() == result.n_queries
    domain = V.browser_options(result)["domain"][0]
    only = V.query_table(result, seed=seed, domain=domain)
    assert set(only["domain"]) == {domain}
    assert len(only) == ((queries["seed"].astype(str) == seed) & (queries["domain"] == domain)).sum()
    errors = V.query_table(result, seed=seed, errors_only=True)
    expected = ((queries["seed"].astype(str) == seed) & (queries["error_kind"] != "correct")).sum()
    assert len(errors) == expected and not (errors["error_kind"] == "correct").any()
    intent_errors = V.query_table(result, seed=seed, error_kind="intent")
    assert set(intent_errors["error_kind"]) <= {"intent"}
    assert (intent_errors["gold_intent"] != intent_errors["pred_intent"]).all()
    with pytest.raises(ValueError, match="error_kind must be one of"):
        V.query_table(result, error_kind="typo")
    with pytest.raises(ValueError, match="seed must be one of"):
        V.query_table(result, seed="99")


def test_browser_options(demo):
    result = demo["episode"]
    options = V.browser_options(result)
    assert options["seed"] == [str(s) for s in result.seeds]
    assert options["domain"] == sorted(set(result.queries["domain"]))
    domain = options["domain"][0]
    inside = V.browser_options(result, domain=domain)["intent"]
    assert set(inside) == set(result.queries.loc[result.queries["domain"] == domain, "gold_intent"])
    assert set(options["error_kind"]) == set(result.queries["error_kind"].astype(str))


def test_query_ids_round_trip(demo):
    table = V.query_table(demo["episode"])
    for query_id, domain, episode, index in (
        table[["query_id", "domain", "episode", "query_index"]].head(5).itertuples(index=False)
    ):
        assert V.query_location(query_id) == (domain, episode, index)
    assert V.query_location("a/b/3/4") == ("a/b", 3, 4)


def test_verdict_and_tag_diff_of_a_wrong_query(tiny):
    verdict = V.query_verdict(tiny, domain="weather", episode=0, query_index=1, seed="1")
    assert not verdict["sentence_correct"] and not verdict["intent_correct"]
    assert verdict["error_kind"] == "intent+slots"
    assert "ask_wind predicted as ask_rain" in verdict["verdict"]
    assert "0 of 1 gold slot chunks" in verdict["verdict"]
    assert verdict["gold_bracketed"] == "wind [date: today]"
    assert verdict["pred_bracketed"] == "wind today"
    diff = V.tag_diff(tiny, domain="weather", episode=0, query_index=1, seed="1")
    assert diff["token"].tolist() == ["wind", "today"]
    assert diff["mark"].tolist() == ["✓", "−"]
    assert diff["outcome"].tolist() == ["correct", "missed"]
    assert diff["gold_chunk"].tolist() == ["", "[date]"]
    right = V.query_verdict(tiny, domain="weather", episode=0, query_index=1, seed="2")
    assert right["sentence_correct"] and right["verdict"].startswith("✓")


def test_verdict_counts_ill_formed_tags(tiny):
    verdict = V.query_verdict(tiny, domain="weather", episode=0, query_index=0, seed="2")
    assert verdict["n_ill_formed"] == 1 and "ill-formed" in verdict["verdict"]
    assert verdict["pred_bracketed"] == "rain in [city: paris]"  # lenient chunking, as conlleval
    with pytest.raises(KeyError):
        V.query_verdict(tiny, domain="weather", episode=3, query_index=0, seed="1")


def test_slot_type_table_equals_the_chart_numbers(demo):
    result = demo["episode"]
    table = V.slot_type_table(result).set_index("slot_type")
    per_type = result.per_slot_type
    for slot_type, part in per_type.groupby("slot_type"):
        assert table.loc[slot_type, "f1"] == pytest.approx(part["f1"].mean())
        assert table.loc[slot_type, "support"] == part["n_gold"].iloc[0]
    assert table["support"].is_monotonic_decreasing


def test_bracketed_ignores_mismatched_lengths():
    assert V.bracketed(["a", "b"], ["O"]) == "a b"
    assert V.bracketed(["x"], ["B-t"]) == "[t: x]"
