"""No scorer's name on a number that scorer would not print (issue 39, requirement 1): a convention named after
a scorer reads a gold file as given (the scorer's own form, or a file carrying its own gold), prepares it as
that scorer's own pipeline does and says so, or is n/a with the reason (`analysis.scorer_inputs`)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from analysis import registry as R
from analysis import scorer_inputs as SI
from analysis import stats, views
from analysis.conventions import CONVENTIONS
from analysis.demo.testing import run_from_states
from analysis.formats import FORMATS
from analysis.loading import load_run
from analysis.scoring import score_run
from analysis.store import parts
from analysis.suite import metric_suite
from tests.conftest import realdata_path

GOLD_FORMATS = [spec.name for spec in FORMATS if spec.sides in ("both", "gold")]
SCORER_NAMED = list(SI.SCORERS)
EN = [{"hotel": {"area": "east", "name": "not mentioned"}}, {"hotel": {"area": "east", "stars": "4"}}]
ZH = [{"旅馆": {"区域": "东", "名称": "未提及"}}, {"旅馆": {"区域": "东", "星级": "4"}}]


def _run(fmt: str, gold: list[dict]):
    run = run_from_states({"d1": gold}, {"d1": gold})
    return replace(run, meta=replace(run.meta, formats=(fmt,) if fmt == "multiwoz" else ("jsonl", fmt)))


def test_every_convention_named_after_a_scorer_is_declared() -> None:
    # The project's own rules (exact, mwzeval-lenient) name no scorer; every other convention does.
    assert set(CONVENTIONS) - set(SI.SCORERS) == {"exact", "mwzeval-lenient"}
    for name in SI.SCORERS:
        assert set(SI.SCORERS[name].own_formats) <= {spec.name for spec in FORMATS}, name


@pytest.mark.parametrize("fmt", GOLD_FORMATS)
@pytest.mark.parametrize("convention", SCORER_NAMED)
@pytest.mark.parametrize("gold", [EN, ZH], ids=["en", "zh"])
def test_every_pair_of_scorer_and_gold_format_is_read_prepared_and_said_or_n_a_with_the_reason(
    convention: str, fmt: str, gold: list[dict]
) -> None:
    run = _run(fmt, gold)
    conv = CONVENTIONS[convention]
    found = SI.gold_input(conv, run)
    assert found is not None and found.status in ("as given", "prepared", "n/a") and found.note
    scored = score_run(run, convention)
    alignment = scored.alignment[run.meta.run_id]
    assert alignment["notes"][SI.NOTE] == {"status": found.status, "note": found.note}
    warnings = alignment.get("warnings", [])
    if found.status == "n/a":  # no number under the scorer's name, and the reason everywhere a number would be
        assert all(math.isnan(v) for v in R.values(scored).values())
        assert set(R.not_applicable(scored).values()) == {found.note}
        assert any(found.note in w for w in warnings)
        suite = metric_suite(scored)
        assert suite["unread_gold"] == found.note and suite["jga"] is None
        assert all(v is None for v in suite["jga_by_turn"].values())
        ci = stats.bootstrap_ci(scored, "jga", n_resamples=20)
        assert math.isnan(ci["estimate"]) and math.isnan(ci["low"]) and math.isnan(ci["high"])
        board = views.leaderboard([scored], sort="jga", resamples=20)
        assert board[["jga", "jga_low", "jga_high"]].isna().all(axis=None)
        assert all(math.isnan(x) for x in parts.dialogue_parts(scored)["jga__num"])
    elif found.status == "prepared":  # said with the result
        assert any(w.startswith(SI.WARNING_PREFIX) and found.note in w for w in warnings)
        assert not math.isnan(R.values(scored, ("jga",))["jga"])
    else:
        native = fmt in SI.SCORERS[convention].own_formats
        # A dataset file in another scorer's form is never read as given; a file carrying its own gold is.
        assert native or fmt not in SI.DATASET_FORMATS
        if native:
            assert found.note == f"{fmt} is {SI.SCORERS[convention].name}'s own gold format"
        if not native and convention != "risawoz":
            # the placeholder this scorer scores as a value is said with the result
            placeholder = ("not mentioned" if gold is EN else "未提及") not in conv.empty_values
            assert placeholder == ("values to predict" in found.note)
            assert placeholder == any(w.startswith(SI.WARNING_PREFIX) for w in warnings)


def test_a_convention_named_after_no_scorer_says_nothing() -> None:
    for name in ("exact", "mwzeval-lenient"):
        scored = score_run(_run("multiwoz", EN), name)
        assert SI.NOTE not in scored.alignment[scored.metas[0].run_id].get("notes", {})


def test_convlab3_prepares_raw_multiwoz_as_its_preprocessing_does() -> None:
    gold = [
        {
            "hotel": {"pricerange": " cheap ", "day": "not mentioned", "people": "do n't care", "stay": "?"},
            "police": {"name": "x"},
            "train": {"day": "none", "ticket": "10 gbp", "arriveBy": "10:00"},
        }
    ]
    pred = [{"hotel": {"price range": "cheap", "people": "dontcare"}, "train": {"arrive by": "10:00"}}]
    run = run_from_states({"d1": gold}, {"d1": pred})
    run = replace(run, meta=replace(run.meta, formats=("mwzeval", "multiwoz")))
    prepared, found = SI.prepare(run, CONVENTIONS["convlab3"])
    assert found is not None and found.status == "prepared"
    rows = {
        (d, s): v
        for d, s, v in zip(prepared.gold["domain"], prepared.gold["slot"], prepared.gold["value"], strict=True)
    }
    assert rows == {
        ("hotel", "price range"): "cheap",
        ("hotel", "book people"): "dontcare",
        ("train", "arrive by"): "10:00",
    }
    assert len(prepared.listings[0]) == 31 and prepared.turns["n_listed"].tolist() == [31]
    assert R.values(score_run(run, "convlab3"), ("jga",)) == {"jga": 1.0}


# --- the real files: mwzeval's AuGPT and UBAR outputs against raw MultiWOZ 2.1 gold --------------------------
# What ConvLab-3's own code prints (convlab/dst/evaluate_unified_datasets.py::evaluate on samples built by its
# data/unified_datasets/multiwoz21/preprocess.py from the same raw gold, predictions' slot names mapped by its
# slot_name_map; run unchanged for this test's numbers; AuGPT also in scorer_oracles/README.md).
CONVLAB3_PRINTS = {
    "augpt": {"jga": 0.492675, "slot_f1_micro": 0.886202, "slot_precision": 0.909029, "slot_recall": 0.864493},
    "ubar": {"jga": 0.379816, "slot_f1_micro": 0.840317, "slot_precision": 0.872488, "slot_recall": 0.810434},
}


def _mwzeval_run(system: str):
    return load_run(realdata_path("mwzeval_outputs", f"{system}.json"), realdata_path("multiwoz21", "test.json.zip"))


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
@pytest.mark.realdata
@pytest.mark.parametrize("system", ["augpt", "ubar"])
def test_mwzeval_outputs_under_every_convention_print_no_silent_scorer_number(system: str) -> None:
    run = _mwzeval_run(system)
    for name, conv in CONVENTIONS.items():
        scored = score_run(run, name)
        jga = R.values(scored, ("jga",))["jga"]
        found = SI.gold_input(conv, run)
        if found is None:  # this tool's own rules
            assert jga > 0.15, name
        elif found.status == "n/a":
            assert math.isnan(jga) and R.not_applicable(scored)["jga"] == found.note, name
        else:  # prepared, and said: never the 0.005 of placeholders scored as values
            assert found.status == "prepared" and jga > 0.3, (name, jga)
    for name in ("dstc9", "dstc9-multiwoz", "sgd", "dstc10", "icdst", "checkdst", "risawoz", "fga-trippy"):
        assert SI.gold_input(CONVENTIONS[name], run).status == "n/a", name
    prints = R.values(score_run(run, "convlab3"), tuple(CONVLAB3_PRINTS[system]))
    assert prints == pytest.approx(CONVLAB3_PRINTS[system], abs=5e-7)


@pytest.mark.realdata
def test_convlab3_on_raw_gold_equals_its_own_prediction_file() -> None:
    oracle = score_run(load_run(realdata_path("scorer_oracles", "convlab3_augpt_predictions.json.gz")), "convlab3")
    prepared = score_run(_mwzeval_run("augpt"), "convlab3")
    names = ("jga", "slot_f1_micro", "slot_precision", "slot_recall", "slot_accuracy")
    assert R.values(prepared, names) == pytest.approx(R.values(oracle, names), abs=1e-12)


@pytest.mark.realdata
def test_dstc9_prepares_raw_multiwoz_zh_as_its_gold_conversion_does() -> None:
    submission = realdata_path("scorer_oracles", "dstc9_sub_multiwoz_zh_test_perturbed.json.gz")
    raw = score_run(load_run(submission, realdata_path("multiwoz_zh", "test.json.zip")), "dstc9")
    shaped = score_run(load_run(submission, realdata_path("dstc9_shaped_gold", "multiwoz_zh_test.json")), "dstc9")
    assert SI.gold_input(CONVENTIONS["dstc9"], load_run(submission, realdata_path("multiwoz_zh", "test.json.zip")))
    names = ("jga", "slot_accuracy", "slot_precision", "slot_recall", "slot_f1_micro")
    official = {"jga": 0.482908, "slot_accuracy": 0.975572, "slot_precision": 0.920867, "slot_recall": 0.919987}
    assert R.values(raw, names) == pytest.approx(R.values(shaped, names), abs=1e-12)
    assert R.values(raw, tuple(official)) == pytest.approx(official, abs=5e-7)
    assert raw.alignment[raw.metas[0].run_id]["notes"][SI.NOTE]["status"] == "prepared"


WILD = {
    "icdst": ("gptdst_gpt35_ours_running_log.json",),
    "checkdst": ("checkdst_PI_example.checkdst_prediction.jsonl",),
    "dstc10": ("dstc10_task1_teamA01_entry0.json.gz", "dstc10_task1_test_labels.json.gz"),
}


@pytest.mark.realdata
@pytest.mark.parametrize("convention", list(WILD))
def test_the_wild_files_are_their_scorers_own_input(convention: str) -> None:
    run = load_run(*(realdata_path("wild", name) for name in WILD[convention]))
    assert run.meta.convention == convention
    found = SI.gold_input(CONVENTIONS[convention], run)
    assert found is not None and found.status == "as given" and "own gold format" in found.note
    scored = score_run(run)
    assert not any(w.startswith(SI.WARNING_PREFIX) for w in scored.alignment[run.meta.run_id].get("warnings", []))
    assert not math.isnan(R.values(scored, ("jga",))["jga"])
    for other in SI.SCORERS:  # under every other scorer's name: read as written and said, or n/a with the reason
        found = SI.gold_input(CONVENTIONS[other], run)
        assert found is not None and found.note
        assert found.status in ("as given", "n/a") if other != convention else found.status == "as given"
