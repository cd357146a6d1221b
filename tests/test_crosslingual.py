"""Cross-lingual pairing: ontology alignment on real parallel gold, gaps by hand, drill-down cells."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from analysis.crosslingual import (
    align_domains,
    align_ontologies,
    crosslingual_gaps,
    drill_down,
    mapping_from_manifest,
)
from analysis.demo.testing import scored_from_states
from analysis.diagnostics import AGREEMENT, agreement_matrix
from analysis.errors import InputError
from analysis.loading import load_run
from analysis.model import RunInfo
from analysis.scoring import Scored, combine, score_run
from tests.conftest import realdata_path

# MultiWOZ 2.1 -> MultiWOZ-zh, read off the two ontology files (multiwoz21/ontology.json names
# `hotel-book people`, multiwoz_zh/ontology.json `旅馆-预订人数`; the loader drops `book`/`预订` on
# both sides, as the states themselves do, and writes `leaveAt`/`arriveBy`/`pricerange`).
MULTIWOZ_EN_ZH = {
    "attraction-area": "景点-区域",
    "attraction-name": "景点-名称",
    "attraction-type": "景点-类型",
    "hotel-area": "旅馆-区域",
    "hotel-day": "旅馆-日期",
    "hotel-internet": "旅馆-互联网",
    "hotel-name": "旅馆-名称",
    "hotel-parking": "旅馆-停车处",
    "hotel-people": "旅馆-人数",
    "hotel-pricerange": "旅馆-价格范围",
    "hotel-stars": "旅馆-星级",
    "hotel-stay": "旅馆-停留天数",
    "hotel-type": "旅馆-类型",
    "restaurant-area": "餐厅-区域",
    "restaurant-day": "餐厅-日期",
    "restaurant-food": "餐厅-食物",
    "restaurant-name": "餐厅-名称",
    "restaurant-people": "餐厅-人数",
    "restaurant-pricerange": "餐厅-价格范围",
    "restaurant-time": "餐厅-时间",
    "taxi-arriveBy": "出租车-到达时间",
    "taxi-departure": "出租车-出发地",
    "taxi-destination": "出租车-目的地",
    "taxi-leaveAt": "出租车-出发时间",
    "train-arriveBy": "列车-到达时间",
    "train-day": "列车-日期",
    "train-departure": "列车-出发地",
    "train-destination": "列车-目的地",
    "train-leaveAt": "列车-出发时间",
    "train-people": "列车-人数",
}

# CrossWOZ -> CrossWOZ-en (English names from crosswoz_en/ontology.json; its 41 hotel facilities
# are one slot `Hotel Facilities` in the states, as CrossWOZ's `酒店设施`).
CROSSWOZ_ZH_EN = {
    "出租-出发地": "Taxi-from",
    "出租-目的地": "Taxi-to",
    "地铁-出发地": "Metro-from",
    "地铁-目的地": "Metro-to",
    "景点-名称": "Attraction-name",
    "景点-门票": "Attraction-fee",
    "景点-游玩时间": "Attraction-duration",
    "景点-评分": "Attraction-rating",
    "景点-周边景点": "Attraction-nearby attract.",
    "景点-周边餐馆": "Attraction-nearby rest.",
    "景点-周边酒店": "Attraction-nearby hotels",
    "餐馆-名称": "Restaurant-name",
    "餐馆-推荐菜": "Restaurant-dishes",
    "餐馆-人均消费": "Restaurant-cost",
    "餐馆-评分": "Restaurant-rating",
    "餐馆-周边景点": "Restaurant-nearby attract.",
    "餐馆-周边餐馆": "Restaurant-nearby rest.",
    "餐馆-周边酒店": "Restaurant-nearby hotels",
    "酒店-名称": "Hotel-name",
    "酒店-酒店类型": "Hotel-type",
    "酒店-价格": "Hotel-price",
    "酒店-评分": "Hotel-rating",
    "酒店-酒店设施": "Hotel-Hotel Facilities",
    "酒店-周边景点": "Hotel-nearby attract.",
    "酒店-周边餐馆": "Hotel-nearby rest.",
    "酒店-周边酒店": "Hotel-nearby hotels",
}


def _gold_run(*parts: str, run_id: str) -> Scored:
    path = realdata_path(*parts)
    return score_run(load_run(path, path, meta=RunInfo(run_id)))


@pytest.fixture(scope="module")
def multiwoz() -> tuple[Scored, Scored]:
    return (
        _gold_run("multiwoz21", "test.json.zip", run_id="mwz-en"),
        _gold_run("multiwoz_zh", "test.json.zip", run_id="mwz-zh"),
    )


@pytest.fixture(scope="module")
def xrisawoz() -> tuple[Scored, Scored]:
    zh = realdata_path("xrisawoz_llm", "zh.jsonl")
    fr = realdata_path("xrisawoz_llm", "fr.jsonl")
    return score_run(load_run(zh, meta=RunInfo("zh"))), score_run(load_run(fr, meta=RunInfo("fr")))


def _pairs(alignment: pd.DataFrame) -> dict[str, str]:
    matched = alignment[alignment["slot_b"].notna()]
    return dict(zip(matched["slot_a"], matched["slot_b"], strict=True))


# --- alignment on real parallel gold ------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.realdata
def test_multiwoz_en_zh_alignment_is_inferred_exactly(multiwoz: tuple[Scored, Scored]) -> None:
    en, zh = multiwoz
    alignment = align_ontologies(en, zh)
    assert len(alignment) == alignment["slot_a"].nunique()
    matched = _pairs(alignment)
    assert {k: matched.get(k) for k in MULTIWOZ_EN_ZH} == MULTIWOZ_EN_ZH
    assert set(matched) == set(MULTIWOZ_EN_ZH)
    rows = alignment.set_index("slot_a")
    assert (rows.loc[list(MULTIWOZ_EN_ZH), "source"] == "inferred").all()
    assert rows.loc["restaurant-area", "support"] == 2033
    assert rows.loc["restaurant-area", "domain_b"] == "餐厅"
    # The booking slots are set together on the same turns: their values tell them apart.
    assert rows.loc["hotel-day", "jaccard"] == 1.0
    assert rows.loc["hotel-day", "alternative_score"] < 0.6
    # Slots of the ontology never filled in the test gold (bus, hospital) stay unmatched.
    for slot in ("bus-day", "hospital-department"):
        assert pd.isna(rows.loc[slot, "slot_b"]) and rows.loc[slot, "support"] == 0
    domains = align_domains(alignment).set_index("domain_a")
    assert domains["domain_b"].dropna().to_dict() == {
        "attraction": "景点",
        "hotel": "旅馆",
        "restaurant": "餐厅",
        "taxi": "出租车",
        "train": "列车",
    }
    assert domains.loc["hotel", "n_slots"] == 10


@pytest.mark.realdata
def test_multiwoz_alignment_is_symmetric(multiwoz: tuple[Scored, Scored]) -> None:
    en, zh = multiwoz
    assert _pairs(align_ontologies(zh, en)) == {v: k for k, v in MULTIWOZ_EN_ZH.items()}


@pytest.mark.slow
@pytest.mark.realdata
def test_crosswoz_zh_en_alignment() -> None:
    zh = _gold_run("crosswoz", "test.json.zip", run_id="cw-zh")
    en = _gold_run("crosswoz_en", "test.json.zip", run_id="cw-en")
    alignment = align_ontologies(zh, en)
    assert _pairs(alignment) == CROSSWOZ_ZH_EN
    rows = alignment.set_index("slot_a")
    assert rows.loc["餐馆-人均消费", "slot_b"] == "Restaurant-cost"
    # From and to are filled on the same turns: only value consistency separates them.
    assert rows.loc["出租-出发地", "alternative_b"] == "Taxi-to"
    assert rows.loc["出租-出发地", "score"] > rows.loc["出租-出发地", "alternative_score"]


@pytest.mark.realdata
def test_overrides_win_and_keep_one_to_one(multiwoz: tuple[Scored, Scored]) -> None:
    en, zh = multiwoz
    overrides = {"restaurant-area": "餐厅-食物", "hotel-stars": ""}
    rows = align_ontologies(en, zh, overrides=overrides).set_index("slot_a")
    assert rows.loc["restaurant-area", "slot_b"] == "餐厅-食物"
    assert rows.loc["restaurant-area", "source"] == "override"
    assert 0 < rows.loc["restaurant-area", "score"] < 0.6
    assert rows.loc["restaurant-food", "slot_b"] != "餐厅-食物"
    assert pd.isna(rows.loc["hotel-stars", "slot_b"]) and rows.loc["hotel-stars", "source"] == "override"
    assert rows.loc["hotel-area", "slot_b"] == "旅馆-区域"


@pytest.mark.realdata
def test_min_score_leaves_weak_pairs_unmatched(multiwoz: tuple[Scored, Scored]) -> None:
    en, zh = multiwoz
    rows = align_ontologies(en, zh, overrides={"restaurant-area": "餐厅-食物"}).set_index("slot_a")
    loose = align_ontologies(en, zh, overrides={"restaurant-area": "餐厅-食物"}, min_score=0.0).set_index("slot_a")
    # restaurant-food's own translation is taken; the best left (餐厅-区域) scores under 0.5.
    assert pd.isna(rows.loc["restaurant-food", "slot_b"])
    assert loose.loc["restaurant-food", "slot_b"] == "餐厅-区域"


@pytest.mark.slow
@pytest.mark.realdata
def test_identical_names_pair_without_inference(xrisawoz: tuple[Scored, Scored]) -> None:
    zh, fr = xrisawoz
    alignment = align_ontologies(zh, fr)
    both = alignment[alignment["slot_b"].notna()]
    assert (both["slot_a"] == both["slot_b"]).all()
    assert (both["source"] == "identical-name").all()
    assert len(both) > 100


def test_unmatched_slots_get_nan() -> None:
    en = scored_from_states(
        [{"hotel": {"area": "east"}}, {"hotel": {"area": "east", "stars": "4"}}], [{}, {}], run_id="en"
    )
    zh = scored_from_states([{"旅馆": {"区域": "东"}}, {"旅馆": {"区域": "东"}}], [{}, {}], run_id="zh")
    rows = align_ontologies(en, zh).set_index("slot_a")
    assert rows.loc["hotel-area", "slot_b"] == "旅馆-区域"
    assert pd.isna(rows.loc["hotel-stars", "slot_b"]) and pd.isna(rows.loc["hotel-stars", "domain_b"])
    assert pd.isna(rows.loc["hotel-stars", "score"])
    assert rows.loc["hotel-stars", "support"] == 1


def test_dialogue_ids_pair_case_insensitively() -> None:
    en = scored_from_states({"MUL0001.json": [{"hotel": {"area": "east"}}, {}]}, {}, run_id="en")
    zh = scored_from_states({"mul0001": [{"旅馆": {"区域": "东"}}, {}]}, {}, run_id="zh")
    rows = align_ontologies(en, zh).set_index("slot_a")
    assert rows.loc["hotel-area", "slot_b"] == "旅馆-区域"
    assert rows.loc["hotel-area", "support"] == 1


# --- gaps on a pair worked out by hand ------------------------------------------------------------

EN_GOLD = [
    {"hotel": {"area": "east"}},
    {"hotel": {"area": "east", "stars": "4"}},
    {"hotel": {"area": "east", "stars": "4"}, "taxi": {"leaveAt": "10:00"}},
]
EN_PRED = [
    {"hotel": {"area": "east"}},
    {"hotel": {"area": "east", "stars": "3"}},
    {"hotel": {"area": "east", "stars": "4"}, "taxi": {"leaveAt": "10:00"}},
]
ZH_GOLD = [
    {"旅馆": {"区域": "东"}},
    {"旅馆": {"区域": "东", "星级": "4"}},
    {"旅馆": {"区域": "东", "星级": "4"}, "出租车": {"出发时间": "10:00"}},
]
ZH_PRED = [
    {},
    {"旅馆": {"区域": "东", "星级": "4"}},
    {"旅馆": {"区域": "东", "星级": "4"}, "出租车": {"出发时间": "11:00"}},
]


@pytest.fixture
def tiny() -> tuple[Scored, Scored, pd.DataFrame]:
    en = scored_from_states(EN_GOLD, EN_PRED, run_id="en")
    zh = scored_from_states(ZH_GOLD, ZH_PRED, run_id="zh")
    return en, zh, align_ontologies(en, zh)


def test_tiny_alignment(tiny: tuple[Scored, Scored, pd.DataFrame]) -> None:
    _, _, alignment = tiny
    assert _pairs(alignment) == {
        "hotel-area": "旅馆-区域",
        "hotel-stars": "旅馆-星级",
        "taxi-leaveAt": "出租车-出发时间",
    }


def test_gap_by_slot(tiny: tuple[Scored, Scored, pd.DataFrame]) -> None:
    en, zh, alignment = tiny
    gaps = crosslingual_gaps(en, zh, alignment, by="slot").set_index("slot_a")
    expected = {
        # slot_a: (acc_a, n_turns_a, acc_b, n_turns_b)
        "hotel-area": (1.0, 3, 2 / 3, 3),
        "hotel-stars": (0.5, 2, 1.0, 2),
        "taxi-leaveAt": (1.0, 1, 0.0, 1),
    }
    assert set(gaps.index) == set(expected)
    for slot, (acc_a, n_a, acc_b, n_b) in expected.items():
        row = gaps.loc[slot]
        assert row["acc_a"] == pytest.approx(acc_a) and row["n_turns_a"] == n_a
        assert row["acc_b"] == pytest.approx(acc_b) and row["n_turns_b"] == n_b
        assert row["gap"] == pytest.approx(acc_a - acc_b)
    assert gaps.loc["hotel-stars", "slot_b"] == "旅馆-星级"


def test_gap_by_domain(tiny: tuple[Scored, Scored, pd.DataFrame]) -> None:
    en, zh, alignment = tiny
    gaps = crosslingual_gaps(en, zh, alignment, by="domain").set_index("domain_a")
    assert gaps.loc["hotel", "domain_b"] == "旅馆"
    # hotel: A wrong at turn 1 (stars), B wrong at turn 0 (area missed): 2/3 on both sides.
    assert gaps.loc["hotel", ["acc_a", "acc_b"]].tolist() == pytest.approx([2 / 3, 2 / 3])
    assert gaps.loc["hotel", "gap"] == pytest.approx(0.0)
    assert gaps.loc["taxi", ["acc_a", "n_turns_a", "acc_b", "n_turns_b", "gap"]].tolist() == [1.0, 1, 0.0, 1, 1.0]


def test_gap_by_turn_index(tiny: tuple[Scored, Scored, pd.DataFrame]) -> None:
    en, zh, alignment = tiny
    gaps = crosslingual_gaps(en, zh, alignment, by="turn_index")
    assert gaps["turn_index"].tolist() == [0, 1, 2]
    assert gaps["acc_a"].tolist() == [1.0, 0.0, 1.0]
    assert gaps["acc_b"].tolist() == [0.0, 1.0, 0.0]
    assert gaps["gap"].tolist() == [1.0, -1.0, 1.0]
    assert gaps["n_turns_a"].tolist() == [1, 1, 1] == gaps["n_turns_b"].tolist()


def test_gap_with_no_turns_is_nan() -> None:
    en = scored_from_states([{"hotel": {"area": "east"}}], [{"hotel": {"area": "east"}}], run_id="en")
    zh = scored_from_states([{"旅馆": {"区域": "东"}}], [{"旅馆": {"区域": "东"}}], run_id="zh")
    alignment = pd.DataFrame(
        {"slot_a": ["hotel-area", "hotel-stars"], "slot_b": ["旅馆-区域", "旅馆-星级"], "domain_a": ["hotel"] * 2,
         "domain_b": ["旅馆"] * 2}
    )  # fmt: skip
    gaps = crosslingual_gaps(en, zh, alignment, by="slot").set_index("slot_a")
    assert math.isnan(gaps.loc["hotel-stars", "acc_a"]) and gaps.loc["hotel-stars", "n_turns_a"] == 0
    assert math.isnan(gaps.loc["hotel-stars", "gap"])


def test_gaps_reject_unknown_by(tiny: tuple[Scored, Scored, pd.DataFrame]) -> None:
    en, zh, alignment = tiny
    with pytest.raises(ValueError, match="by has to be one of 'slot', 'domain', 'turn_index', got 'value'"):
        crosslingual_gaps(en, zh, alignment, by="value")


@pytest.mark.realdata
def test_gaps_by_turn_depth_on_real_runs_reproduce_jga(xrisawoz: tuple[Scored, Scored]) -> None:
    zh, fr = xrisawoz
    gaps = crosslingual_gaps(zh, fr, align_ontologies(zh, fr), by="turn_index")
    n = gaps["n_turns_a"].sum()
    assert n == 4058
    assert (gaps["acc_a"] * gaps["n_turns_a"]).sum() / n == pytest.approx(0.8011, abs=5e-5)
    assert (gaps["acc_b"] * gaps["n_turns_b"]).sum() / n == pytest.approx(0.6651, abs=5e-5)


# --- drill-down -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_drill_down_tiny(tiny: tuple[Scored, Scored, pd.DataFrame]) -> None:
    en, zh, alignment = tiny
    only_a = drill_down(en, zh, "only_a")
    assert only_a["turn_index"].tolist() == [0, 2]
    assert only_a["errors_a"].tolist() == ["", ""]
    assert only_a["errors_b"].tolist() == ["旅馆-区域: 东 → ∅", "出租车-出发时间: 10:00 → 11:00"]
    assert only_a["n_errors_b"].tolist() == [1, 1]
    only_b = drill_down(en, zh, "only_b", alignment=alignment, slot_a="hotel-stars")
    assert only_b["turn_index"].tolist() == [1]
    assert only_b["errors_a"].tolist() == ["hotel-stars: 4 → 3"]
    assert drill_down(en, zh, "only_a", alignment=alignment, slot_a="hotel-stars").empty
    # The aligned slot of B counts too: taxi is wrong on B only.
    assert drill_down(en, zh, "only_a", slot_a="taxi-leaveAt")["turn_index"].tolist() == [2]
    assert list(only_a.columns[:6]) == ["dialogue_id", "turn_index", "user_a", "user_b", "tid_a", "tid_b"]


def test_drill_down_rejects_unknown_cell_and_slot(tiny: tuple[Scored, Scored, pd.DataFrame]) -> None:
    en, zh, alignment = tiny
    with pytest.raises(ValueError, match="cell has to be one of 'both_correct', 'only_a', 'only_b', 'both_wrong'"):
        drill_down(en, zh, "a_only")
    with pytest.raises(ValueError, match="slot_a 'hotel-food' is not a slot of A"):
        drill_down(en, zh, "only_a", alignment=alignment, slot_a="hotel-food")


@pytest.mark.slow
@pytest.mark.realdata
def test_drill_down_cells_partition_paired_turns(xrisawoz: tuple[Scored, Scored]) -> None:
    zh, fr = xrisawoz
    cells = {cell: drill_down(zh, fr, cell) for cell in AGREEMENT}
    keys = pd.concat([c[["tid_a", "tid_b"]] for c in cells.values()], ignore_index=True)
    assert len(keys) == 4058 and not keys.duplicated().any()
    assert set(keys["tid_a"]) == set(zh.turns["tid"])
    counts = agreement_matrix(zh, fr).set_index("agreement")["n_turns"]
    assert {cell: len(frame) for cell, frame in cells.items()} == counts.to_dict()
    assert (cells["both_correct"][["n_errors_a", "n_errors_b"]] == 0).all().all()
    assert (cells["only_a"]["n_errors_a"] == 0).all() and (cells["only_a"]["n_errors_b"] > 0).all()
    assert (cells["both_wrong"][["n_errors_a", "n_errors_b"]] > 0).all().all()
    # Restricted to one slot: every row shows that slot wrong on one side or the other.
    hotel = drill_down(zh, fr, "both_wrong", alignment=align_ontologies(zh, fr), slot_a="hotel-area")
    assert 0 < len(hotel) < len(cells["both_wrong"])
    assert (hotel["errors_a"].str.contains("hotel-area: ") | hotel["errors_b"].str.contains("hotel-area: ")).all()


# --- manifest mappings ----------------------------------------------------------------------------


def test_mapping_from_manifest_reads_both_orders() -> None:
    mappings = [
        {"a": "mwz-en", "b": "mwz-zh", "slots": {"restaurant-area": "餐厅-区域"}},
        {"a": "mwz-zh", "b": "mwz-en", "slots": {"旅馆-星级": "hotel-stars", "旅馆-区域": ""}},
        {"a": "mwz-en", "b": "cw-en", "slots": {"hotel-name": "Hotel-name"}},
    ]
    assert mapping_from_manifest(mappings, "mwz-en", "mwz-zh") == {
        "restaurant-area": "餐厅-区域",
        "hotel-stars": "旅馆-星级",
    }
    assert mapping_from_manifest(mappings, "mwz-zh", "mwz-en") == {
        "餐厅-区域": "restaurant-area",
        "旅馆-星级": "hotel-stars",
        "旅馆-区域": "",
    }
    assert mapping_from_manifest(mappings, "cw-zh", "cw-en") == {}


def test_mapping_from_manifest_rejects_bad_entries() -> None:
    with pytest.raises(InputError, match=r"\[\[mappings\]\] entry 2 needs a = run id, b = run id"):
        mapping_from_manifest([{"a": "x", "b": "y", "slots": {}}, {"a": "x", "slots": {"s": 1}}], "x", "y")


def test_each_side_has_to_be_one_run(tiny: tuple[Scored, Scored, pd.DataFrame]) -> None:
    en, zh, _ = tiny
    with pytest.raises(ValueError, match=r"side A has to be one run, got runs \['en', 'zh'\]"):
        align_ontologies(combine([en, zh]), zh)
