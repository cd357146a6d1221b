"""FewJoint core: formats, alignment, guardrails and metrics on a hand-checked 5-query episode set."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from analysis.errors import InputError
from analysis.fewjoint import (
    ERROR_KINDS,
    conlleval_chunks,
    count_ill_formed,
    detect_prediction_format,
    fewjoint_leaderboard,
    load_fewjoint_gold,
    load_fewjoint_system,
    score_fewjoint,
    shots_from_path,
    slot_f1,
)

# weather/0: 2 queries, weather/1: 1 query, music/0: 2 queries (5 in all); one support utterance each.
TINY: dict[str, Any] = {
    "weather": [
        {
            "support": {
                "seq_ins": [["rain", "in", "paris"]],
                "seq_outs": [["O", "O", "B-city"]],
                "labels": [["ask_rain"]],
            },
            "query": {
                "seq_ins": [["sun", "in", "new", "york"], ["rain", "today"]],
                "seq_outs": [["O", "O", "B-city", "I-city"], ["O", "B-date"]],
                "labels": [["ask_sun"], ["ask_rain"]],
            },
        },
        {
            "support": {
                "seq_ins": [["windy", "today"]],
                "seq_outs": [["O", "B-date"]],
                "labels": [["ask_wind"]],
            },
            "query": {
                "seq_ins": [["wind", "in", "rome"]],
                "seq_outs": [["O", "O", "B-city"]],
                "labels": [["ask_wind"]],
            },
        },
    ],
    "music": [
        {
            "support": {"seq_ins": [["play", "rock"]], "seq_outs": [["O", "B-genre"]], "labels": [["play"]]},
            "query": {
                "seq_ins": [["play", "jazz"], ["stop"]],
                "seq_outs": [["O", "B-genre"], ["O"]],
                "labels": [["play"], ["stop"]],
            },
        }
    ],
}

# Hand-checked predictions: see test_hand_computed_metrics for the arithmetic.
PREDS: list[dict[str, Any]] = [
    {
        "domain": "weather",
        "episode": 0,
        "query_index": 0,
        "pred_intent": "ask_sun",
        "pred_tags": ["O", "O", "B-city", "O"],
    },
    {
        "domain": "weather",
        "episode": 0,
        "query_index": 1,
        "pred_intent": "ask_sun",
        "pred_tags": ["O", "B-date"],
    },
    {
        "domain": "weather",
        "episode": 1,
        "query_index": 0,
        "pred_intent": "ask_wind",
        "pred_tags": ["O", "O", "B-city"],
    },
    {"domain": "music", "episode": 0, "query_index": 0, "pred_intent": "play", "pred_tags": ["O", "B-genre"]},
    {"domain": "music", "episode": 0, "query_index": 1, "pred_intent": "play", "pred_tags": ["O"]},
]


def write_gold(tmp: Path, episodes: dict[str, Any] = TINY, name: str = "test.json") -> Path:
    path = tmp / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(episodes), encoding="utf-8")
    return path


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def gold_tokens(domain: str, episode: int, index: int) -> list[str]:
    return TINY[domain][episode]["query"]["seq_ins"][index]


def write_conll(path: Path, rows: list[dict[str, Any]]) -> Path:
    blocks = []
    for r in rows:
        part = TINY[r["domain"]][r["episode"]]["query"]
        gold_intent = part["labels"][r["query_index"]][0]
        lines = [
            f"# query: {r['domain']} {r['episode']} {r['query_index']}",
            f"# intent: {gold_intent} {r['pred_intent']}",
        ]
        for tok, g, p in zip(
            part["seq_ins"][r["query_index"]], part["seq_outs"][r["query_index"]], r["pred_tags"], strict=True
        ):
            lines.append(f"{tok} {g} {p}")
        blocks.append("\n".join(lines))
    path.write_text("-DOCSTART- -X- O\n\n" + "\n\n".join(blocks) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def tiny_gold(tmp_path: Path) -> Path:
    return write_gold(tmp_path / "3shot")


# ---------------------------------------------------------------- chunking and counters


@pytest.mark.parametrize(
    ("tags", "chunks"),
    [
        (["O", "I-city", "I-city"], [("city", 1, 2)]),  # I- after O starts a chunk (lenient)
        (["B-city", "I-date", "I-date"], [("city", 0, 0), ("date", 1, 2)]),  # type change inside a chunk
        (["O", "B-city", "I-city"], [("city", 1, 2)]),  # chunk at sentence end
        (["B-city", "B-city"], [("city", 0, 0), ("city", 1, 1)]),
        (["I-city"], [("city", 0, 0)]),
        ([], []),
        (["O", "O"], []),
    ],
)
def test_conlleval_chunks_edge_cases(tags: list[str], chunks: list[tuple[str, int, int]]) -> None:
    assert conlleval_chunks(tags) == chunks


def test_count_ill_formed() -> None:
    assert count_ill_formed(["O", "I-a", "I-a", "B-b", "I-a", "I-b"]) == 3
    assert count_ill_formed(["B-a", "I-a", "O", "B-b", "I-b"]) == 0
    assert count_ill_formed(["I-a"]) == 1


def test_slot_f1_zero_division_policy() -> None:
    assert math.isnan(float(slot_f1(0, 0, 0)))
    assert float(slot_f1(0, 0, 3)) == 0.0
    assert float(slot_f1(2, 2, 2)) == 1.0


def test_shots_from_path() -> None:
    assert shots_from_path("x/FewJoint1.1/5shot/test.json") == 5
    assert shots_from_path("x/10-shot/dev.json") == 10
    assert shots_from_path("x/episodes.json") is None


# ---------------------------------------------------------------- gold and prediction formats


def test_gold_loads_queries_and_support(tiny_gold: Path) -> None:
    gold = load_fewjoint_gold(tiny_gold)
    assert gold.shots == 3
    assert len(gold.queries) == 5 and len(gold.support) == 3
    assert list(gold.queries[["domain", "episode", "query_index"]].itertuples(index=False, name=None))[:3] == [
        ("weather", 0, 0),
        ("weather", 0, 1),
        ("weather", 1, 0),
    ]
    assert load_fewjoint_gold(tiny_gold, shots=10).shots == 10


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda e: e["weather"][0]["query"]["seq_outs"][0].pop(), "4 tokens but 3 tags"),
        (lambda e: e["weather"][0]["query"]["labels"].pop(), "they must be equal"),
        (
            lambda e: e["weather"][0]["query"]["seq_outs"][1].__setitem__(1, "X-date"),
            "tag 'X-date' is not BIO",
        ),
        (lambda e: e["music"][0].pop("support"), "'support' and 'query'"),
        (lambda e: e["music"][0]["query"]["labels"].__setitem__(0, ["a", "b"]), "one-element list"),
    ],
)
def test_gold_validation_names_the_record(tmp_path: Path, mutate: Any, message: str) -> None:
    episodes = json.loads(json.dumps(TINY))
    mutate(episodes)
    path = write_gold(tmp_path, episodes)
    with pytest.raises(InputError, match=message) as info:
        load_fewjoint_gold(path)
    assert str(info.value).startswith(f"{path} [format: fewjoint-episodes]: ")
    assert "first offending record: dialogue '" in str(info.value)


def test_gold_not_json(tmp_path: Path) -> None:
    path = tmp_path / "test.json"
    path.write_text("{nope", encoding="utf-8")
    with pytest.raises(InputError, match="not valid JSON"):
        load_fewjoint_gold(path)


def test_format_detection(tmp_path: Path) -> None:
    assert detect_prediction_format(write_jsonl(tmp_path / "a.txt", PREDS)) == "jsonl"
    assert detect_prediction_format(write_conll(tmp_path / "b.jsonl", PREDS)) == "conlleval"
    (tmp_path / "empty").write_text("\n\n", encoding="utf-8")
    with pytest.raises(InputError, match="empty prediction file"):
        detect_prediction_format(tmp_path / "empty")


def test_jsonl_and_conlleval_give_identical_results(tiny_gold: Path, tmp_path: Path) -> None:
    a = score_fewjoint(load_fewjoint_system(tiny_gold, [write_jsonl(tmp_path / "s1.jsonl", PREDS)]))
    b = score_fewjoint(load_fewjoint_system(tiny_gold, [write_conll(tmp_path / "s1.txt", PREDS)]))
    pd.testing.assert_frame_equal(a.per_seed, b.per_seed)
    pd.testing.assert_frame_equal(a.per_intent, b.per_intent)
    assert b.alignment.empty


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"domain": "weather", "episode": 0, "pred_intent": "x", "pred_tags": ["O"]}', "lacks query_index"),
        (
            '{"domain": "weather", "episode": -1, "query_index": 0, "pred_intent": "x", "pred_tags": []}',
            "non-negative",
        ),
        (
            '{"domain": "weather", "episode": 0, "query_index": 0, "pred_intent": "x", "pred_tags": ["B_x"]}',
            "not BIO",
        ),
        (
            '{"domain": "weather", "episode": 0, "query_index": 0, "pred_intent": 3, "pred_tags": []}',
            "pred_intent",
        ),
        ("[1, 2]", "must be a JSON object"),
        (
            '{"domain": "weather", "episode": 0, "query_index": 0, "pred_intent": "x", "pred_tags": ["O"],'
            ' "tokens": ["a", "b"]}',
            "2 tokens but 1 pred_tags",
        ),
    ],
)
def test_jsonl_validation(tiny_gold: Path, tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "seed1.jsonl"
    path.write_text(
        '{"domain": "music", "episode": 0, "query_index": 1, "pred_intent": "stop", "pred_tags": ["O"]}\n'
        + line
        + "\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError, match=message) as info:
        load_fewjoint_system(tiny_gold, [path])
    assert f"{path} [format: jsonl]" in str(info.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("# intent: a b\nx O O\n", "no '# query:"),
        ("# query: music 0 1\nstop O O\n", "no '# intent:"),
        ("# query: music 0 1\n# intent: stop stop\nstop O\n", "got 2 fields"),
        ("# query: music zero 1\n", "must be non-negative integers"),
        ("# query: music 0 1\n# intent: stop stop\nstop O Z\n", "not BIO"),
    ],
)
def test_conlleval_validation(tiny_gold: Path, tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "seed1.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=message) as info:
        load_fewjoint_system(tiny_gold, [path])
    assert "[format: conlleval]" in str(info.value)


def test_conlleval_hash_token_is_a_token(tiny_gold: Path, tmp_path: Path) -> None:
    episodes = json.loads(json.dumps(TINY))
    episodes["music"][0]["query"]["seq_ins"][1] = ["#"]
    gold = write_gold(tmp_path / "g", episodes)
    path = tmp_path / "seed1.txt"
    path.write_text("# query: music 0 1\n# intent: stop stop\n# O O\n", encoding="utf-8")
    result = score_fewjoint(load_fewjoint_system(gold, [path]))
    row = result.queries.loc[(result.queries["domain"] == "music") & (result.queries["query_index"] == 1)]
    assert bool(row["sentence_correct"].item())
    assert row["tokens"].item() == ["#"]
    # Only the four other queries are flagged (missing): the "#" line was read as a token, not a marker.
    assert set(load_fewjoint_system(gold, [path]).alignment["kind"]) == {"missing"}


def test_duplicate_prediction_and_duplicate_seed(tiny_gold: Path, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "seed1.jsonl", [*PREDS, PREDS[2]])
    with pytest.raises(InputError, match="more than one prediction") as info:
        load_fewjoint_system(tiny_gold, [path])
    assert "dialogue 'weather/1', turn 0" in str(info.value)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    p1 = write_jsonl(tmp_path / "a" / "run_seed1.jsonl", PREDS)
    p2 = write_jsonl(tmp_path / "b" / "run_seed1.jsonl", PREDS)
    with pytest.raises(InputError, match="seed label '1' is used by more than one"):
        load_fewjoint_system(tiny_gold, [p1, p2])


# ---------------------------------------------------------------- alignment


def test_alignment_reports_and_scores_every_mismatch(tiny_gold: Path, tmp_path: Path) -> None:
    rows = [dict(r) for r in PREDS]
    del rows[3]  # music/0/0 missing
    rows[2] = {**rows[2], "pred_tags": ["O", "O", "B-city", "O"]}  # weather/1/0: 4 tags for 3 tokens
    rows[1] = {**rows[1], "tokens": ["rain", "tomorrow"]}  # weather/0/1: same count, other text
    rows.append({"domain": "music", "episode": 0, "query_index": 9, "pred_intent": "play", "pred_tags": ["O"]})
    rows.append({"domain": "jazz", "episode": 0, "query_index": 0, "pred_intent": "play", "pred_tags": ["O"]})
    system = load_fewjoint_system(tiny_gold, [write_jsonl(tmp_path / "seed7.jsonl", rows)])
    found = {(r.kind, r.domain, r.episode, r.query_index) for r in system.alignment.itertuples()}
    assert found == {
        ("missing", "music", 0, 0),
        ("token_count", "weather", 1, 0),
        ("token_text", "weather", 0, 1),
        ("extra", "music", 0, 9),
        ("extra", "jazz", 0, 0),
    }
    assert set(system.alignment["seed"]) == {"7"}
    assert system.alignment["consequence"].notna().all()

    result = score_fewjoint(system, averaging="micro")
    assert result.n_queries == 5 and len(result.queries) == 5  # extras not scored, missing not dropped
    kinds = result.queries.set_index(["domain", "episode", "query_index"])["error_kind"]
    assert kinds[("music", 0, 0)] == "missing"
    assert kinds[("weather", 1, 0)] == "token_count"
    row = result.per_seed.iloc[0]
    assert row["n_missing"] == 1 and row["n_token_count"] == 1
    # Intent: sun ok, rain wrong, wind ok (count mismatch keeps the intent), play missing, stop wrong -> 2/5.
    assert row["intent_accuracy"] == pytest.approx(2 / 5)
    # Chunks: gold 4; predicted only in weather/0/0 (wrong) and weather/0/1 (right) -> tp 1, pred 2.
    assert row["slot_f1"] == pytest.approx(2 * 1 / (4 + 2))
    assert any("1 missing prediction(s) scored as wrong" in w for w in result.warnings)
    assert any("2 prediction(s) point at no gold query" in w for w in result.warnings)
    as_dict = result.to_dict()
    assert as_dict["alignment"]["counts"]["7"]["missing"] == 1
    assert len(as_dict["alignment"]["records"]) == 5


def test_conlleval_gold_column_disagreement_is_reported(tiny_gold: Path, tmp_path: Path) -> None:
    path = write_conll(tmp_path / "seed1.txt", PREDS)
    text = (
        path.read_text(encoding="utf-8").replace("jazz B-genre", "jazz O").replace("# intent: stop", "# intent: halt")
    )
    path.write_text(text, encoding="utf-8")
    system = load_fewjoint_system(tiny_gold, [path])
    assert set(system.alignment["kind"]) == {"gold_tag", "gold_intent"}
    # Scoring uses the episode gold, so the numbers equal the clean run.
    clean = load_fewjoint_system(tiny_gold, [write_jsonl(tmp_path / "seed1.jsonl", PREDS)])
    pd.testing.assert_frame_equal(score_fewjoint(system).per_seed, score_fewjoint(clean).per_seed)


# ---------------------------------------------------------------- guardrails


def test_support_split_is_refused(tiny_gold: Path, tmp_path: Path) -> None:
    rows = [
        *PREDS,
        {
            "domain": "music",
            "episode": 0,
            "query_index": 0,
            "split": "support",
            "pred_intent": "play",
            "pred_tags": ["O", "B-genre"],
        },
    ]
    with pytest.raises(InputError, match="scores a support utterance") as info:
        load_fewjoint_system(tiny_gold, [write_jsonl(tmp_path / "seed1.jsonl", rows)])
    assert "dialogue 'music/0'" in str(info.value)


def test_support_tokens_are_refused(tiny_gold: Path, tmp_path: Path) -> None:
    rows = [
        *PREDS,
        {
            "domain": "weather",
            "episode": 0,
            "query_index": 2,
            "pred_intent": "ask_rain",
            "pred_tags": ["O", "O", "B-city"],
            "tokens": ["rain", "in", "paris"],
        },
    ]
    with pytest.raises(InputError, match="support utterance 0 of this episode") as info:
        load_fewjoint_system(tiny_gold, [write_jsonl(tmp_path / "seed1.jsonl", rows)])
    assert "dialogue 'weather/0', turn 2" in str(info.value)
    # Also when the support utterance sits at a real query index.
    rows = [dict(r) for r in PREDS]
    rows[0] = {**rows[0], "pred_tags": ["O", "O", "B-city"], "tokens": ["rain", "in", "paris"]}
    with pytest.raises(InputError, match="support utterances must not be scored"):
        load_fewjoint_system(tiny_gold, [write_jsonl(tmp_path / "seed1.jsonl", rows)])


def test_support_plus_query_count_is_refused(tiny_gold: Path, tmp_path: Path) -> None:
    # weather/1 has 1 support and 1 query: 2 predictions there means support was scored too.
    rows = [
        *PREDS,
        {
            "domain": "weather",
            "episode": 1,
            "query_index": 1,
            "pred_intent": "ask_wind",
            "pred_tags": ["O", "B-date"],
        },
    ]
    with pytest.raises(InputError, match="support utterances appear to have been scored"):
        load_fewjoint_system(tiny_gold, [write_jsonl(tmp_path / "seed1.jsonl", rows)])


def test_conlleval_support_marker_is_refused(tiny_gold: Path, tmp_path: Path) -> None:
    path = write_conll(tmp_path / "seed1.txt", PREDS)
    path.write_text(path.read_text() + "\n# support: weather 0 0\n# intent: ask_rain ask_rain\nrain O O\n")
    with pytest.raises(InputError, match="marks a support utterance"):
        load_fewjoint_system(tiny_gold, [path])


def test_fewer_than_five_seeds_warns(tiny_gold: Path, tmp_path: Path) -> None:
    paths = [write_jsonl(tmp_path / f"seed{i}.jsonl", PREDS) for i in range(1, 6)]
    few = score_fewjoint(load_fewjoint_system(tiny_gold, paths[:4]))
    assert any("only 4 seed(s)" in w for w in few.warnings)
    full = score_fewjoint(load_fewjoint_system(tiny_gold, paths))
    assert not any("seed(s):" in w and "only" in w for w in full.warnings)
    assert full.to_dict()["warnings"] == full.warnings


def test_ill_formed_bio_counted_per_seed(tiny_gold: Path, tmp_path: Path) -> None:
    bad = [dict(r) for r in PREDS]
    bad[0] = {**bad[0], "pred_tags": ["O", "O", "I-city", "I-city"]}  # 1 ill-formed, still the right chunk
    bad[3] = {**bad[3], "pred_tags": ["O", "I-genre"]}
    paths = [write_jsonl(tmp_path / "seed1.jsonl", PREDS), write_jsonl(tmp_path / "seed2.jsonl", bad)]
    result = score_fewjoint(load_fewjoint_system(tiny_gold, paths))
    counts = result.ill_formed_bio.set_index("seed")
    assert counts.loc["1", "n_ill_formed"] == 0
    assert counts.loc["2", "n_ill_formed"] == 2 and counts.loc["2", "n_ill_formed_queries"] == 2
    assert result.to_dict()["ill_formed_bio"] == {
        "1": {"tags": 0, "queries": 0},
        "2": {"tags": 2, "queries": 2},
    }
    assert any(w.startswith("seed 2: 2 ill-formed BIO") for w in result.warnings)
    # Lenient chunking: the I-city I-city prediction is the correct chunk, but the tags are not equal.
    per_seed = result.per_seed.set_index("seed")
    assert per_seed.loc["2", "n_correct_chunks"] == per_seed.loc["1", "n_correct_chunks"] + 1
    assert per_seed.loc["2", "sentence_accuracy"] == per_seed.loc["1", "sentence_accuracy"] - 1 / 5


# ---------------------------------------------------------------- metrics


def test_hand_computed_metrics(tiny_gold: Path, tmp_path: Path) -> None:
    system = load_fewjoint_system(tiny_gold, [write_jsonl(tmp_path / "seed1.jsonl", PREDS)], name="tiny")
    episode = score_fewjoint(system, averaging="episode").per_seed.iloc[0]
    # Episodes: weather/0 intent 1/2, F1 2*1/(2+2)=0.5; weather/1 intent 1, F1 1; music/0 intent 1/2, F1 1.
    assert episode["intent_accuracy"] == pytest.approx((0.5 + 1 + 0.5) / 3)
    assert episode["slot_f1"] == pytest.approx((0.5 + 1 + 1) / 3)
    assert episode["sentence_accuracy"] == pytest.approx(2 / 5)  # pooled: weather/1/0 and music/0/0
    micro = score_fewjoint(system, averaging="micro").per_seed.iloc[0]
    assert micro["intent_accuracy"] == pytest.approx(3 / 5)
    assert micro["slot_f1"] == pytest.approx(2 * 3 / (4 + 4))
    assert micro["sentence_accuracy"] == pytest.approx(2 / 5)
    assert micro["averaging"] == "micro" and episode["averaging"] == "episode"


def test_per_domain_per_intent_and_nan_for_empty_slices(tiny_gold: Path, tmp_path: Path) -> None:
    result = score_fewjoint(load_fewjoint_system(tiny_gold, [write_jsonl(tmp_path / "seed1.jsonl", PREDS)]))
    per_domain = result.per_domain.set_index("domain")
    assert per_domain.loc["weather", "intent_accuracy"] == pytest.approx(0.75)
    assert per_domain.loc["weather", "slot_f1"] == pytest.approx(0.75)
    assert per_domain.loc["weather", "sentence_accuracy"] == pytest.approx(1 / 3)
    assert per_domain.loc["music", "intent_accuracy"] == pytest.approx(0.5)
    per_intent = result.per_intent.set_index("gold_intent")
    # "stop" has no gold and no predicted chunks: slot F1 is NaN, not 0.
    assert math.isnan(per_intent.loc["stop", "slot_f1"])
    assert per_intent.loc["stop", "intent_accuracy"] == 0.0
    assert per_intent.loc["ask_rain", "n_queries"] == 1
    as_json = json.dumps(result.to_dict(), allow_nan=False)  # NaN must not leak into JSON
    assert '"per_domain"' in as_json


def test_queries_table(tiny_gold: Path, tmp_path: Path) -> None:
    result = score_fewjoint(load_fewjoint_system(tiny_gold, [write_jsonl(tmp_path / "seed1.jsonl", PREDS)]))
    q = result.queries
    assert len(q) == 5
    for column in (
        "seed",
        "domain",
        "episode",
        "query_index",
        "gold_intent",
        "pred_intent",
        "tokens",
        "gold_tags",
        "pred_tags",
        "intent_correct",
        "tags_correct",
        "sentence_correct",
        "n_ill_formed",
        "error_kind",
    ):
        assert column in q.columns
    assert list(q["error_kind"].cat.categories) == list(ERROR_KINDS)
    kinds = q.set_index(["domain", "episode", "query_index"])["error_kind"].astype(str).to_dict()
    assert kinds == {
        ("weather", 0, 0): "slots",
        ("weather", 0, 1): "intent",
        ("weather", 1, 0): "correct",
        ("music", 0, 0): "correct",
        ("music", 0, 1): "intent",
    }
    assert (q["sentence_correct"] == (q["intent_correct"] & q["tags_correct"])).all()


def test_per_slot_type_sums_to_micro_totals(tiny_gold: Path, tmp_path: Path) -> None:
    result = score_fewjoint(
        load_fewjoint_system(tiny_gold, [write_jsonl(tmp_path / "seed1.jsonl", PREDS)]), averaging="micro"
    )
    per_type = result.per_slot_type.set_index("slot_type")
    row = result.per_seed.iloc[0]
    assert per_type["n_gold"].sum() == row["n_gold_chunks"] == 4
    assert per_type["n_pred"].sum() == row["n_pred_chunks"] == 4
    assert per_type["n_correct"].sum() == row["n_correct_chunks"] == 3
    assert per_type.loc["city", "precision"] == pytest.approx(1 / 2)
    assert per_type.loc["genre", "f1"] == 1.0


def test_seed_statistics_use_sample_std(tiny_gold: Path, tmp_path: Path) -> None:
    perfect = [
        {
            **r,
            "pred_intent": TINY[r["domain"]][r["episode"]]["query"]["labels"][r["query_index"]][0],
            "pred_tags": TINY[r["domain"]][r["episode"]]["query"]["seq_outs"][r["query_index"]],
        }
        for r in PREDS
    ]
    paths = [write_jsonl(tmp_path / "seed1.jsonl", PREDS), write_jsonl(tmp_path / "seed2.jsonl", perfect)]
    result = score_fewjoint(load_fewjoint_system(tiny_gold, paths), averaging="micro")
    summary = result.summary.set_index("metric")
    values = np.array([3 / 5, 1.0])
    assert summary.loc["intent_accuracy", "mean"] == pytest.approx(values.mean())
    assert summary.loc["intent_accuracy", "std"] == pytest.approx(values.std(ddof=1))
    per_seed = result.to_dict()["intent_accuracy"]["per_seed"]
    assert per_seed == {"1": pytest.approx(0.6), "2": 1.0}
    single = score_fewjoint(load_fewjoint_system(tiny_gold, paths[1:]))
    assert math.isnan(single.summary["std"].iloc[0])
    assert single.summary["mean"].tolist() == [1.0, 1.0, 1.0]


def test_seed_scored_inside_a_system_equals_seed_alone(tiny_gold: Path, tmp_path: Path) -> None:
    other = [{**r, "pred_intent": "play"} for r in PREDS]
    p1 = write_jsonl(tmp_path / "seed1.jsonl", PREDS)
    p2 = write_jsonl(tmp_path / "seed2.jsonl", other)
    together = score_fewjoint(load_fewjoint_system(tiny_gold, [p1, p2]))
    alone = score_fewjoint(load_fewjoint_system(tiny_gold, [p2]))
    pd.testing.assert_frame_equal(
        together.per_seed.iloc[[1]].reset_index(drop=True).astype({"seed": str}),
        alone.per_seed.reset_index(drop=True).astype({"seed": str}),
    )


def test_row_order_invariance(tiny_gold: Path, tmp_path: Path) -> None:
    (tmp_path / "shuffled").mkdir()
    a = score_fewjoint(load_fewjoint_system(tiny_gold, [write_jsonl(tmp_path / "seed1.jsonl", PREDS)]))
    shuffled = write_jsonl(tmp_path / "shuffled" / "seed1.jsonl", PREDS[::-1])
    b = score_fewjoint(load_fewjoint_system(tiny_gold, [shuffled]))
    pd.testing.assert_frame_equal(a.per_seed, b.per_seed)
    pd.testing.assert_frame_equal(a.per_domain, b.per_domain)
    pd.testing.assert_frame_equal(a.per_slot_type, b.per_slot_type)


def test_bad_averaging_is_rejected(tiny_gold: Path, tmp_path: Path) -> None:
    system = load_fewjoint_system(tiny_gold, [write_jsonl(tmp_path / "seed1.jsonl", PREDS)])
    with pytest.raises(ValueError, match="averaging must be one of episode, micro, got 'macro'"):
        score_fewjoint(system, averaging="macro")


def test_leaderboard_records_system_shots_and_averaging(tmp_path: Path) -> None:
    results = []
    for k in (1, 5):
        gold = write_gold(tmp_path / f"{k}shot")
        pred = write_jsonl(tmp_path / f"{k}shot" / "seed1.jsonl", PREDS)
        results.append(score_fewjoint(load_fewjoint_system(gold, [pred], name="tiny")))
    board = fewjoint_leaderboard(results)
    assert len(board) == 6
    assert board["shots"].tolist() == [1, 1, 1, 5, 5, 5]
    assert set(board["system"]) == {"tiny"} and set(board["averaging"]) == {"episode"}
    assert fewjoint_leaderboard([]).empty
