"""Oracle tests: slot F1 and chunking against seqeval's default mode (== conlleval), on the real FewJoint
gold with 60 seeded perturbations, and on random tag sequences (hypothesis)."""

from __future__ import annotations

import json
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from seqeval.metrics import f1_score
from seqeval.metrics.sequence_labeling import get_entities

from analysis.demo.fewjoint import ErrorModel, simulate_prediction
from analysis.fewjoint import (
    conlleval_chunks,
    count_ill_formed,
    load_fewjoint_gold,
    load_fewjoint_system,
    score_fewjoint,
)
from tests.conftest import realdata_path

# Perturbed systems of the real 1-shot gold (1,065 queries each), strengths spread from 0.05 to 1: 20 cover
# the range (21,300 predictions against seqeval); 60 took three times as long and met nothing new.
N_PERTURBATIONS = 20
TAGS = ["O", "B-a", "I-a", "B-b", "I-b", "E-a", "S-b", "B-long-type", "I-long-type"]


def seqeval_f1(gold: list[list[str]], pred: list[list[str]]) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seqeval warns on zero division; our slices always have chunks
        return float(f1_score(gold, pred))


def perturb(
    row: Any, rng: np.random.Generator, intents: list[str], slot_types: list[str], strength: float
) -> tuple[str, list[str]]:
    """Simulated errors plus token-level noise that makes ill-formed BIO, type changes and stray I- tags."""
    model = ErrorModel(
        intent_confusion=0.3 * strength,
        missed_chunk=0.2 * strength,
        type_error=0.2 * strength,
        boundary_error=0.3 * strength,
        ill_formed=0.3 * strength,
        spurious_chunk=0.3 * strength,
    )
    intent, tags = simulate_prediction(
        row.tags, row.intent, intents=intents, slot_types=slot_types, rng=rng, model=model
    )
    for i in range(len(tags)):
        if rng.random() < 0.08 * strength:
            kind = slot_types[int(rng.integers(len(slot_types)))] if slot_types else "x"
            tags[i] = str(rng.choice(["O", f"B-{kind}", f"I-{kind}"]))
    return intent, tags


@pytest.fixture(scope="module")
def perturbed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    gold_path = realdata_path("fewjoint", "FewJoint1.1", "1shot", "test.json")
    gold = load_fewjoint_gold(gold_path)
    queries = gold.queries
    intents = {d: sorted(p["intent"].unique()) for d, p in queries.groupby("domain")}
    slot_types = {
        d: sorted({t[2:] for tags in p["tags"] for t in tags if t != "O"}) for d, p in queries.groupby("domain")
    }
    out = tmp_path_factory.mktemp("fewjoint_perturbed")
    paths, preds = [], {}
    for seed in range(N_PERTURBATIONS):
        strength = 0.05 + 0.95 * seed / N_PERTURBATIONS
        lines, pred_tags = [], []
        for number, row in enumerate(queries.itertuples()):
            rng = np.random.default_rng([seed, number])
            intent, tags = perturb(row, rng, intents[row.domain], slot_types[row.domain], strength)
            pred_tags.append(tags)
            lines.append(
                json.dumps(
                    {
                        "domain": row.domain,
                        "episode": row.episode,
                        "query_index": row.query_index,
                        "pred_intent": intent,
                        "pred_tags": tags,
                    },
                    ensure_ascii=False,
                )
            )
        path = out / f"perturbed_seed{seed}.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
        preds[str(seed)] = pred_tags
    system = load_fewjoint_system(gold_path, paths, name="perturbed")
    return {"gold": gold, "system": system, "preds": preds}


@pytest.mark.realdata
def test_real_gold_shape() -> None:
    gold = load_fewjoint_gold(realdata_path("fewjoint", "FewJoint1.1", "1shot", "test.json"))
    assert gold.shots == 1
    assert len(gold.queries) == 1065 and len(gold.support) == 58
    assert gold.queries["domain"].nunique() == 9
    assert gold.queries["intent"].nunique() == 36


@pytest.mark.realdata
@pytest.mark.parametrize("k", [1, 3, 5, 10])
def test_real_gold_scored_against_itself(k: int, tmp_path: Path) -> None:
    gold_path = realdata_path("fewjoint", "FewJoint1.1", f"{k}shot", "test.json")
    gold = load_fewjoint_gold(gold_path)
    lines = [
        json.dumps(
            {
                "domain": r.domain,
                "episode": r.episode,
                "query_index": r.query_index,
                "pred_intent": r.intent,
                "pred_tags": r.tags,
                "tokens": r.tokens,
            },
            ensure_ascii=False,
        )
        for r in gold.queries.itertuples()
    ]
    path = tmp_path / "gold_seed1.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for averaging in ("episode", "micro"):
        result = score_fewjoint(load_fewjoint_system(gold_path, [path]), averaging=averaging)
        assert result.shots == k
        assert result.summary["mean"].tolist() == [1.0, 1.0, 1.0]
        assert result.alignment.empty
        assert (result.queries["error_kind"] == "correct").all()


@pytest.mark.slow
@pytest.mark.realdata
def test_micro_slot_f1_matches_seqeval_on_real_gold(perturbed: dict[str, Any]) -> None:
    result = score_fewjoint(perturbed["system"], averaging="micro")
    gold_tags = perturbed["gold"].queries["tags"].tolist()
    per_seed = result.per_seed.set_index(result.per_seed["seed"].astype(str))
    assert len(per_seed) == N_PERTURBATIONS
    ours = per_seed["slot_f1"].to_numpy()
    theirs = np.array([seqeval_f1(gold_tags, perturbed["preds"][str(s)]) for s in range(N_PERTURBATIONS)])
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12)
    # The perturbations are not vacuous: a wide range of scores, and ill-formed BIO in every seed.
    assert theirs.min() < 0.6 and 0.9 < theirs.max() < 1.0
    assert (per_seed["n_ill_formed"] > 0).all()


@pytest.mark.slow  # the 60 perturbed systems take seconds to build
@pytest.mark.realdata
def test_episode_slot_f1_matches_seqeval_per_episode(perturbed: dict[str, Any]) -> None:
    result = score_fewjoint(perturbed["system"], averaging="episode")
    queries = perturbed["gold"].queries
    groups = list(queries.groupby(["domain", "episode"]).indices.values())
    for seed in map(str, range(0, N_PERTURBATIONS, 2)):
        pred = perturbed["preds"][seed]
        expected = np.mean(
            [seqeval_f1([queries["tags"].iloc[i] for i in idx], [pred[i] for i in idx]) for idx in groups]
        )
        got = result.per_seed.loc[result.per_seed["seed"].astype(str) == seed, "slot_f1"].item()
        assert got == pytest.approx(expected, abs=1e-12)


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
@pytest.mark.realdata
def test_intent_and_sentence_accuracy_on_real_gold(perturbed: dict[str, Any]) -> None:
    micro = score_fewjoint(perturbed["system"], averaging="micro")
    episode = score_fewjoint(perturbed["system"], averaging="episode")
    queries = perturbed["gold"].queries
    for seed in map(str, (0, N_PERTURBATIONS // 2, N_PERTURBATIONS - 1)):
        rows = micro.queries.loc[micro.queries["seed"].astype(str) == seed]
        pred = perturbed["preds"][seed]
        sentence = np.mean(
            [g == p for g, p in zip(queries["tags"], pred, strict=True)] & rows["intent_correct"].to_numpy()
        )
        intent = rows["intent_correct"].mean()
        m = micro.per_seed.loc[micro.per_seed["seed"].astype(str) == seed].iloc[0]
        e = episode.per_seed.loc[episode.per_seed["seed"].astype(str) == seed].iloc[0]
        assert m["intent_accuracy"] == pytest.approx(intent)
        assert m["sentence_accuracy"] == pytest.approx(sentence) == e["sentence_accuracy"]  # pooled in both
        per_episode = rows.groupby(["domain", "episode"])["intent_correct"].mean()
        assert e["intent_accuracy"] == pytest.approx(per_episode.mean())
    # Per-type counts add up to the micro totals for every seed.
    totals = micro.per_slot_type.groupby("seed", observed=True)[["n_gold", "n_pred", "n_correct"]].sum()
    per_seed = micro.per_seed.set_index("seed")
    assert (totals["n_gold"] == per_seed["n_gold_chunks"]).all()
    assert (totals["n_pred"] == per_seed["n_pred_chunks"]).all()
    assert (totals["n_correct"] == per_seed["n_correct_chunks"]).all()


# ---------------------------------------------------------------- random tag sequences (no real data needed)

sentences = st.lists(st.sampled_from(TAGS), min_size=0, max_size=8)


@settings(max_examples=300, deadline=None)
@given(st.lists(sentences, min_size=1, max_size=5))
def test_chunks_match_seqeval_entities(seqs: list[list[str]]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for tags in seqs:
            assert conlleval_chunks(tags) == sorted(get_entities(tags), key=lambda c: c[1])


@settings(max_examples=300, deadline=None)
@given(sentences)
def test_ill_formed_count_matches_definition(tags: list[str]) -> None:
    expected = 0
    prev = "O"
    for tag in tags:
        if tag.startswith("I-") and not (prev[:2] in ("B-", "I-") and prev[2:] == tag[2:]):
            expected += 1
        prev = tag
    assert count_ill_formed(tags) == expected


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(st.data())
def test_micro_slot_f1_matches_seqeval_on_random_tags(data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 6))
    gold = [
        data.draw(st.lists(st.sampled_from(["O", "B-a", "I-a", "B-b", "I-b"]), min_size=1, max_size=7))
        for _ in range(n)
    ]
    pred = [data.draw(st.lists(st.sampled_from(TAGS), min_size=len(g), max_size=len(g))) for g in gold]
    episodes = {
        "d": [
            {
                "support": {"seq_ins": [["s"]], "seq_outs": [["O"]], "labels": [["i"]]},
                "query": {
                    "seq_ins": [[f"t{i}" for i in range(len(g))] for g in gold],
                    "seq_outs": gold,
                    "labels": [["i"]] * n,
                },
            }
        ]
    }
    with tempfile.TemporaryDirectory() as tmp:
        gold_path = Path(tmp) / "test.json"
        gold_path.write_text(json.dumps(episodes), encoding="utf-8")
        pred_path = Path(tmp) / "seed1.jsonl"
        pred_path.write_text(
            "".join(
                json.dumps({"domain": "d", "episode": 0, "query_index": i, "pred_intent": "i", "pred_tags": p}) + "\n"
                for i, p in enumerate(pred)
            ),
            encoding="utf-8",
        )
        result = score_fewjoint(load_fewjoint_system(gold_path, [pred_path]), averaging="micro")
    row = result.per_seed.iloc[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        n_gold = len(get_entities(gold))
        n_pred = len(get_entities(pred))
    assert row["n_gold_chunks"] == n_gold and row["n_pred_chunks"] == n_pred
    if n_gold + n_pred == 0:
        assert np.isnan(row["slot_f1"])  # seqeval says 0 here; we say "no data"
    else:
        assert row["slot_f1"] == pytest.approx(seqeval_f1(gold, pred), abs=1e-12)
    assert row["sentence_accuracy"] == pytest.approx(np.mean([g == p for g, p in zip(gold, pred, strict=True)]))
