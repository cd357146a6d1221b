"""N languages over the same dialogues (issue 17 req 3): grouping, the language x domain and language x slot
matrices of JGA and slot F1 against `analysis.metrics` computed per run, gaps to a chosen pivot, the figure,
and the Cross-lingual page on a workspace of X-RiSAWOZ's four languages."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from analysis import figures
from analysis import metrics as M
from analysis.crosslingual import (
    LANGUAGE_COLUMNS,
    align_to_pivot,
    language_matrix,
    language_runs,
    language_summary,
    same_dialogues,
)
from analysis.demo.testing import scored_from_states
from analysis.loading import load_run
from analysis.model import RunInfo
from analysis.scoring import Scored, score_run
from tests.conftest import REALDATA, realdata_path

ROOT = Path(__file__).resolve().parents[1]
LANGUAGES = ("zh", "fr", "ko", "enhi")
TIMEOUT = 300


@pytest.fixture(scope="module")
def xrisawoz() -> list[Scored]:
    """The four X-RiSAWOZ runs (LLM predictions, gold history), declared with their language."""
    return [
        score_run(
            load_run(realdata_path("xrisawoz_llm", f"{lang}.jsonl"), meta=RunInfo(f"xrisawoz-{lang}", language=lang))
        )
        for lang in LANGUAGES
    ]


def _direct(scored: Scored, by: str) -> pd.DataFrame:
    """Per domain or domain-slot label: JGA and micro slot F1 straight from `analysis.metrics`."""
    keys = ["domain"] if by == "domain" else ["domain", "slot"]
    jga = M.joint_goal_accuracy(scored, by=keys)
    prf = M.slot_prf_micro(scored, by=keys)
    assert isinstance(jga, pd.DataFrame) and isinstance(prf, pd.DataFrame)
    out = jga.merge(prf, on=keys, how="outer")
    label = out["domain"].astype(str) if by == "domain" else out["domain"].astype(str) + "-" + out["slot"].astype(str)
    return out.assign(label=label).set_index("label")


# --- the four X-RiSAWOZ languages -------------------------------------------------------------------------


@pytest.mark.realdata
def test_the_four_languages_are_one_group_with_one_run_each(xrisawoz: list[Scored]) -> None:
    assert same_dialogues(xrisawoz) == [[f"xrisawoz-{lang}" for lang in LANGUAGES]]
    choice = language_runs(xrisawoz, anchor="xrisawoz-fr")
    assert choice["chosen"] == [f"xrisawoz-{lang}" for lang in LANGUAGES]
    assert choice["pivot"] == "xrisawoz-zh"  # no English run: the first
    assert choice["languages"]["xrisawoz-enhi"] == "enhi"


@pytest.mark.realdata
@pytest.mark.parametrize("pivot", ["xrisawoz-zh", "xrisawoz-ko"])
@pytest.mark.parametrize("by", ["domain", "slot"])
def test_matrix_equals_metrics_per_run_and_group(xrisawoz: list[Scored], by: str, pivot: str) -> None:
    matrix = language_matrix(xrisawoz, pivot=pivot, by=by)
    assert list(matrix.columns) == LANGUAGE_COLUMNS
    assert list(dict.fromkeys(matrix["run_id"])) == [s.run_ids[0] for s in xrisawoz]
    pivot_run = next(s for s in xrisawoz if s.run_ids[0] == pivot)
    pivot_direct = _direct(pivot_run, by)
    # Rows are the pivot's names: every key is a domain / domain-slot of the pivot's scored run or ontology.
    pivot_names = set(pivot_direct.index) | (
        set(pivot_run.ontology["domain"].astype(str))
        if by == "domain"
        else set(pivot_run.ontology["domain"].astype(str) + "-" + pivot_run.ontology["slot"].astype(str))
    )
    assert set(matrix["key"]) <= pivot_names
    assert set(matrix.loc[matrix["run_id"] == pivot, "key"]) == set(matrix["key"])
    checked = 0
    for scored in xrisawoz:
        run = scored.run_ids[0]
        rows = matrix[(matrix["run_id"] == run) & matrix["own"].notna()]
        direct = _direct(scored, by)
        present = rows[rows["own"].isin(direct.index)]
        # A counterpart the run never fills nor predicts has no number; everything else is `analysis.metrics`'.
        assert rows.loc[~rows["own"].isin(direct.index), "n_turns"].eq(0).all()
        expected = direct.loc[present["own"]]
        np.testing.assert_allclose(present["jga"].to_numpy(float), expected["jga"].to_numpy(float), equal_nan=True)
        np.testing.assert_array_equal(present["n_turns"].to_numpy(), expected["n_turns"].to_numpy())
        np.testing.assert_allclose(present["slot_f1"].to_numpy(float), expected["f1"].to_numpy(float), equal_nan=True)
        np.testing.assert_array_equal(present["support"].to_numpy(), expected["support"].to_numpy())
        # Gaps: the run's value minus the pivot's on the same pivot group.
        base = pivot_direct.reindex(present["key"])
        np.testing.assert_allclose(
            present["jga_gap"].to_numpy(float),
            present["jga"].to_numpy(float) - base["jga"].to_numpy(float),
            equal_nan=True,
        )
        np.testing.assert_allclose(
            present["slot_f1_gap"].to_numpy(float),
            present["slot_f1"].to_numpy(float) - base["f1"].to_numpy(float),
            equal_nan=True,
        )
        checked += len(present)
    assert checked >= 4 * (12 if by == "domain" else 80)
    assert (matrix.loc[matrix["run_id"] == pivot, ["jga_gap", "slot_f1_gap"]].fillna(0) == 0).all().all()


@pytest.mark.realdata
def test_other_languages_map_onto_the_pivots_slot_names(xrisawoz: list[Scored]) -> None:
    """X-RiSAWOZ keeps one (English) schema in every language: each slot of another language that the
    matrix shows sits on the pivot's slot of the same name, found by name, not inferred."""
    alignments = align_to_pivot(xrisawoz, pivot="xrisawoz-zh")
    matrix = language_matrix(xrisawoz, pivot="xrisawoz-zh", by="slot", alignments=alignments)
    mapped = matrix[matrix["own"].notna()]
    assert (mapped["own"] == mapped["key"]).all()
    assert set(mapped.loc[mapped["run_id"] != "xrisawoz-zh", "source"]) <= {"identical-name", "inferred"}
    assert (mapped["source"] == "identical-name").mean() > 0.9
    # The domain matrix's JGA of the whole attraction domain, by hand from the turns where it occurs.
    fr = xrisawoz[1]
    facts = M.turn_facts(fr, by="domain")
    attraction = facts[facts["domain"] == "attraction"]
    domains = language_matrix(xrisawoz, pivot="xrisawoz-zh", by="domain", alignments=alignments)
    row = domains[(domains["run_id"] == "xrisawoz-fr") & (domains["key"] == "attraction")].iloc[0]
    assert row["n_turns"] == len(attraction)
    assert row["jga"] == pytest.approx(attraction["joint_correct"].mean())


@pytest.mark.realdata
def test_summary_counts_turns_and_lists_unaligned_groups(xrisawoz: list[Scored]) -> None:
    summary = language_summary(xrisawoz, pivot="xrisawoz-zh")
    assert summary["turns"] == {"common": 4058, "per_run": {s.run_ids[0]: 4058 for s in xrisawoz}}
    unaligned = summary["unaligned"]["slot"]
    assert "xrisawoz-zh" not in set(unaligned["run_id"])
    for scored in xrisawoz[1:]:
        run = scored.run_ids[0]
        shown = set(summary["matrix"]["slot"].query("run_id == @run")["own"].dropna())
        occurring = set(_direct(scored, "slot").index)
        # Nothing silently dropped: every slot the run fills or predicts is in the matrix or listed as unaligned.
        assert occurring <= shown | set(unaligned.loc[unaligned["run_id"] == run, "own"])


@pytest.mark.realdata
def test_figure_shows_values_and_gaps_to_the_pivot(xrisawoz: list[Scored]) -> None:
    matrix = language_matrix(xrisawoz, pivot="xrisawoz-ko", by="domain")
    fig = figures.language_heatmap(matrix, by="domain", pivot="xrisawoz-ko", metric="slot_f1")
    trace = fig.data[0]
    assert list(trace.x) == ["zh", "fr", "ko (pivot)", "enhi"]
    assert list(trace.y) == sorted(set(matrix["key"]))
    z = np.asarray(trace.z, dtype=float)
    wide = matrix.pivot(index="key", columns="run_id", values="slot_f1_gap").reindex(
        index=list(trace.y), columns=[s.run_ids[0] for s in xrisawoz]
    )
    np.testing.assert_allclose(z, wide.to_numpy(float), equal_nan=True)
    assert np.nanmax(np.abs(z[:, 2])) == 0.0
    assert "slot F1 by domain and language" in fig.layout.title.text


# --- small cases: names that differ, turns that differ ------------------------------------------------


def _three() -> list[Scored]:
    """The same two dialogues in en, zh and de (slot names differ), zh with one more dialogue."""
    en_gold = {
        "d1": [{"hotel": {"area": "east"}}, {"hotel": {"area": "east", "stars": "4"}}],
        "d2": [{"taxi": {"dest": "museum"}}, {"taxi": {"dest": "museum"}, "hotel": {"area": "west"}}],
    }
    en_pred = {
        "d1": [{"hotel": {"area": "east"}}, {"hotel": {"area": "east", "stars": "3"}}],
        "d2": [{"taxi": {"dest": "museum"}}, {"taxi": {"dest": "museum"}, "hotel": {"area": "west"}}],
    }
    zh_gold = {
        "d1": [{"旅馆": {"区域": "东"}}, {"旅馆": {"区域": "东", "星级": "4"}}],
        "d2": [{"出租车": {"目的地": "博物馆"}}, {"出租车": {"目的地": "博物馆"}, "旅馆": {"区域": "西"}}],
        "d9": [{"旅馆": {"区域": "北"}}],
    }
    zh_pred = {
        "d1": [{"旅馆": {"区域": "西"}}, {"旅馆": {"区域": "东", "星级": "4"}}],
        "d2": [{"出租车": {"目的地": "博物馆"}}, {"出租车": {"目的地": "公园"}, "旅馆": {"区域": "西"}}],
        "d9": [{"旅馆": {"区域": "南"}}],
    }
    de_gold = {
        "d1": [{"Hotel": {"Gegend": "Ost"}}, {"Hotel": {"Gegend": "Ost", "Sterne": "4"}}],
        "d2": [{"Taxi": {"Ziel": "Museum"}}, {"Taxi": {"Ziel": "Museum"}, "Hotel": {"Gegend": "West"}}],
    }
    de_pred = {
        "d1": [{"Hotel": {"Gegend": "Ost"}}, {"Hotel": {"Gegend": "Ost", "Sterne": "4"}}],
        "d2": [{"Taxi": {"Ziel": "Museum"}}, {"Taxi": {"Ziel": "Museum"}, "Hotel": {"Gegend": "West"}}],
    }
    return [
        scored_from_states(en_gold, en_pred, run_id="en"),
        scored_from_states(zh_gold, zh_pred, run_id="zh"),
        scored_from_states(de_gold, de_pred, run_id="de"),
    ]


def test_inferred_alignment_and_common_turns_by_hand() -> None:
    runs = _three()
    slots = language_matrix(runs, pivot="en", by="slot")
    table = slots.set_index(["run_id", "key"])
    assert table.loc[("zh", "hotel-stars"), "own"] == "旅馆-星级"
    assert table.loc[("de", "taxi-dest"), "own"] == "Taxi-Ziel"
    # zh's d9 is not in the other runs: its wrong 旅馆-区域 does not count. On the 4 common turns, 旅馆-区域
    # occurs on 3 and is wrong on 1 (d1 turn 0): 2/3; en's hotel-area is right on all 3.
    assert table.loc[("zh", "hotel-area"), "jga"] == pytest.approx(2 / 3)
    assert table.loc[("zh", "hotel-area"), "n_turns"] == 3
    assert table.loc[("zh", "hotel-area"), "jga_gap"] == pytest.approx(2 / 3 - 1.0)
    # en's hotel-stars is wrong on its one turn, zh's and de's right: gap +1.
    assert table.loc[("de", "hotel-stars"), "jga_gap"] == pytest.approx(1.0)
    # Slot F1 of zh's 出租车-目的地 on the common turns: 1 right, 1 wrong -> tp 1, fp 1, fn 1 -> 0.5.
    assert table.loc[("zh", "taxi-dest"), "slot_f1"] == pytest.approx(0.5)
    domains = language_matrix(runs, pivot="en", by="domain").set_index(["run_id", "key"])
    # The hotel domain occurs on 3 common turns; en is wrong on d1 turn 1, zh on d1 turn 0.
    assert domains.loc[("en", "hotel"), "jga"] == pytest.approx(2 / 3)
    assert domains.loc[("zh", "hotel"), "own"] == "旅馆"
    assert domains.loc[("zh", "hotel"), "jga"] == pytest.approx(2 / 3)
    assert domains.loc[("de", "hotel"), "jga_gap"] == pytest.approx(1 / 3)
    assert domains.loc[("zh", "taxi"), "jga"] == pytest.approx(0.5)
    summary = language_summary(runs, pivot="zh")
    assert summary["turns"] == {"common": 4, "per_run": {"en": 4, "zh": 5, "de": 4}}
    assert set(summary["matrix"]["slot"]["key"]) == {"旅馆-区域", "旅馆-星级", "出租车-目的地"}


def test_manifest_overrides_win_over_the_inferred_alignment() -> None:
    runs = _three()
    summary = language_summary(runs, pivot="en", overrides=(("de", (("hotel-area", "Hotel-Sterne"),)),))
    table = summary["matrix"]["slot"].set_index(["run_id", "key"])
    assert table.loc[("de", "hotel-area"), "own"] == "Hotel-Sterne"
    assert table.loc[("de", "hotel-area"), "source"] == "override"


def test_runs_over_other_dialogues_form_their_own_group_and_english_is_the_default_pivot() -> None:
    runs = _three()
    other = scored_from_states({"x1": [{"hotel": {"area": "east"}}]}, {"x1": [{}]}, run_id="other")
    assert same_dialogues([*runs, other]) == [["en", "zh", "de"], ["other"]]
    # No declared language: each run is its own; none is `en` by declaration, so the first run is the pivot.
    assert language_runs([*runs, other], anchor="zh")["pivot"] == "en"
    with pytest.raises(ValueError, match="pivot"):
        language_matrix(runs, pivot="fr", by="slot")
    with pytest.raises(ValueError, match="by has to be one of"):
        language_matrix(runs, pivot="en", by="turn_index")


# --- the Cross-lingual page on the four X-RiSAWOZ runs ----------------------------------------------------


def _grid(encoded) -> np.ndarray:
    """A heatmap's z as floats: Plotly JSON sends it as nested lists or as typed binary (`bdata`, `shape`)."""
    if isinstance(encoded, dict) and "bdata" in encoded:
        flat = np.frombuffer(base64.b64decode(encoded["bdata"]), dtype=np.dtype(encoded["dtype"])).astype(float)
        shape = [int(n) for n in str(encoded.get("shape", len(flat))).split(",")]
        return flat.reshape(shape)
    return np.array([[np.nan if v is None else v for v in _grid_row(row)] for row in encoded], dtype=float)


def _grid_row(row) -> list:
    if isinstance(row, dict) and "bdata" in row:
        return np.frombuffer(base64.b64decode(row["bdata"]), dtype=np.dtype(row["dtype"])).tolist()
    return list(row)


def _language_charts(at: AppTest) -> dict[str, dict]:
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    return {c["layout"]["meta"]["name"]: c for c in charts if c["layout"]["meta"]["name"].endswith("and language")}


@pytest.mark.slow
@pytest.mark.realdata
@pytest.mark.skipif(
    not (REALDATA / "xrisawoz_llm").is_dir(), reason=f"{REALDATA / 'xrisawoz_llm'} is absent (needs ../shared/realdata)"
)
def test_crosslingual_page_shows_both_matrices_and_follows_the_pivot(tmp_path: Path, xrisawoz: list[Scored]) -> None:
    runs = "".join(
        f'[[runs]]\nname = "xrisawoz-{lang}"\nsystem = "llm"\ndataset = "X-RiSAWOZ"\nlanguage = "{lang}"\n'
        f'history = "gold"\npred = "{REALDATA / "xrisawoz_llm" / f"{lang}.jsonl"}"\n\n'
        for lang in LANGUAGES
    )
    manifest = tmp_path / "workspace.toml"
    manifest.write_text(f'[workspace]\nname = "X-RiSAWOZ"\nallow_outside_root = true\n\n{runs}', encoding="utf-8")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.session_state["workspace_path"] = str(manifest)
    at.session_state["view_crosslingual"] = "All languages"
    at.run()
    at.switch_page("pages/crosslingual.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.multiselect(key="w_xl_languages").value == [f"xrisawoz-{lang}" for lang in LANGUAGES]
    assert at.selectbox(key="w_xl_pivot").value == "xrisawoz-zh"
    charts = _language_charts(at)
    assert set(charts) == {"jga by domain and language", "jga by slot and language"}
    expected = language_summary(xrisawoz, pivot="xrisawoz-zh")["matrix"]
    for by in ("domain", "slot"):
        heat = charts[f"jga by {by} and language"]["data"][0]
        assert heat["x"] == ["zh (pivot)", "fr", "ko", "enhi"]
        wide = expected[by].pivot(index="key", columns="run_id", values="jga_gap")
        wide = wide.reindex(index=heat["y"], columns=[f"xrisawoz-{lang}" for lang in LANGUAGES])
        z = _grid(heat["z"])
        np.testing.assert_allclose(z, wide.to_numpy(float), equal_nan=True)
        assert set(heat["y"]) == set(expected[by]["key"])
    at.selectbox(key="w_xl_pivot").set_value("xrisawoz-fr").run()
    assert not at.exception, [e.value for e in at.exception]
    heat = _language_charts(at)["jga by domain and language"]["data"][0]
    assert heat["x"] == ["zh", "fr (pivot)", "ko", "enhi"]
    moved = language_summary(xrisawoz, pivot="xrisawoz-fr")["matrix"]["domain"]
    wide = moved.pivot(index="key", columns="run_id", values="jga_gap").reindex(
        index=heat["y"], columns=[f"xrisawoz-{lang}" for lang in LANGUAGES]
    )
    z = _grid(heat["z"])
    np.testing.assert_allclose(z, wide.to_numpy(float), equal_nan=True)
    assert np.nanmax(np.abs(z[:, 1])) == 0.0 and np.nanmax(np.abs(z[:, 0])) > 0.05  # zh is now above the pivot
    at.selectbox(key="w_xl_metric").set_value("slot_f1").run()
    assert not at.exception, [e.value for e in at.exception]
    assert set(_language_charts(at)) == {"slot_f1 by domain and language", "slot_f1 by slot and language"}


@pytest.mark.realdata
def test_the_pivots_own_alignment_is_what_aligning_it_with_itself_gives(xrisawoz: list[Scored]) -> None:
    from analysis.crosslingual import align_ontologies

    quick = align_to_pivot(xrisawoz, pivot="xrisawoz-ko")["xrisawoz-ko"]
    full = align_ontologies(xrisawoz[2], xrisawoz[2])
    columns = ["slot_a", "slot_b", "domain_a", "domain_b", "source", "support"]
    pd.testing.assert_frame_equal(quick[columns], full[columns])


DEMO = ROOT / "data" / "demo" / "workspace.toml"


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
@pytest.mark.skipif(not DEMO.exists(), reason=f"the demo workspace {DEMO} is absent (make demo)")
def test_demo_page_maps_chinese_slots_onto_the_english_pivot() -> None:
    """On the demo, MultiWOZ en and zh runs of one system: the slot rows are the English pivot's names and the
    zh column holds the zh run's own slots, mapped through the manifest's [[mappings]]."""
    from analysis.crosslingual import mapping_from_manifest
    from analysis.workspace import load_entry, read_manifest

    manifest = read_manifest(DEMO)
    en, zh = "simulated-A-mwz-en-predicted", "simulated-A-mwz-zh-predicted"
    scored = {e.name: score_run(load_entry(e)) for e in manifest.entries if e.name in (en, zh)}
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.session_state["workspace_path"] = str(DEMO)
    at.session_state["view_crosslingual"] = "All languages"
    at.run()
    at.switch_page("pages/crosslingual.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.multiselect(key="w_xl_languages").value == [en, zh]
    heat = _language_charts(at)["jga by slot and language"]["data"][0]
    assert heat["x"] == ["en (pivot)", "zh"]
    overrides = tuple(
        (run, tuple(sorted(mapping_from_manifest(manifest.mappings, en, run).items()))) for run in (en, zh)
    )
    matrix = language_summary([scored[en], scored[zh]], pivot=en, overrides=overrides)["matrix"]["slot"]
    assert set(heat["y"]) == set(matrix["key"]) and all(key.isascii() for key in heat["y"])
    zh_rows = matrix[matrix["run_id"] == zh].set_index("key")
    assert zh_rows.loc["hotel-stars", "own"] == "旅馆-星级" and zh_rows.loc["hotel-stars", "source"] == "override"
    wide = matrix.pivot(index="key", columns="run_id", values="jga_gap").reindex(index=heat["y"], columns=[en, zh])
    np.testing.assert_allclose(_grid(heat["z"]), wide.to_numpy(float), equal_nan=True)
