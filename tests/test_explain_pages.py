"""The Overview, Slots and Domains pages on UBAR's mwzeval output against MultiWOZ 2.1 gold: the naming
mismatch is said and its slots marked, and the gap to the paper's number (the manifest's `published_jga`)
is decomposed into causes, each cause's turns listed for the Dialogue viewer."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from analysis.loading import load_run
from analysis.model import RunInfo
from analysis.reconcile.core import reconcile
from analysis.reconcile.gap import gap_conventions, published_gap
from tests.conftest import realdata_path
from tests.opened_app import opened_page

UBAR_PAPER = 0.562  # UBAR's paper, MultiWOZ 2.1 DST joint goal accuracy (56.20)


def _ubar_workspace(folder: Path, convention: str) -> Path:
    """A workspace of UBAR's mwzeval output against MultiWOZ 2.1 gold under `convention`, with its paper's JGA."""
    pred, gold = realdata_path("mwzeval_outputs", "ubar.json"), realdata_path("multiwoz21", "test.json.zip")
    (folder / "workspace.toml").write_text(
        '[workspace]\nname = "ubar"\nallow_outside_root = true\n\n[[runs]]\nname = "ubar"\n'
        f'pred = "{pred}"\ngold = "{gold}"\nconvention = "{convention}"\npublished_jga = 56.2\n',
        encoding="utf-8",
    )
    return folder / "workspace.toml"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    return _ubar_workspace(tmp_path_factory.mktemp("ubar"), "mwzeval")


def _mismatch_warning(at: AppTest) -> str:
    return next(w.body for w in at.warning if "Naming mismatch" in w.body)


@pytest.mark.slow
@pytest.mark.realdata
def test_overview_says_the_naming_mismatch_and_decomposes_the_gap(workspace) -> None:
    at = opened_page(workspace, "overview", overview_gap_cause="slot_alias")
    warning = _mismatch_warning(at)
    assert "restaurant-people ↔ restaurant-bookpeople" in warning
    assert "Under mwzeval-lenient, which maps the names, JGA is 0.4316 (here 0.3247)" in warning
    assert at.number_input(key="published_jga_ubar").value == pytest.approx(56.2)
    run = load_run(
        realdata_path("mwzeval_outputs", "ubar.json"),
        realdata_path("multiwoz21", "test.json.zip"),
        meta=RunInfo(convention="mwzeval"),
    )
    _, expected = published_gap(reconcile(run, gap_conventions("mwzeval")), "mwzeval", UBAR_PAPER)
    gap = next(d.value for d in at.dataframe if "share" in d.value.columns)
    assert gap["share"].tolist() == pytest.approx(expected["share"].tolist())
    assert gap["turns"].tolist() == expected["turns"].tolist()
    turns = next(d.value for d in at.dataframe if "correct target" in d.value.columns)
    assert len(turns) == 788 and not turns["correct base"].any()


@pytest.mark.slow
@pytest.mark.realdata
@pytest.mark.parametrize("page", ["slots", "domains"])
def test_slots_and_domains_mark_the_mismatched_slots(workspace, page: str) -> None:
    warning = _mismatch_warning(opened_page(workspace, page))
    for pair in (
        "hotel-day ↔ hotel-bookday",
        "train-people ↔ train-bookpeople",
        "restaurant-time ↔ restaurant-booktime",
    ):
        assert pair in warning


@pytest.mark.slow
@pytest.mark.realdata
def test_the_report_carries_the_vocabulary_and_the_published_gap(workspace) -> None:
    from analysis.export import report as R
    from analysis.workspace import load_workspace

    plan = R.plan_report(load_workspace(workspace), n_resamples=20)
    tables = {t.name: t for t in plan.tables}
    vocabulary = tables["vocabulary-ubar"].frame
    assert (vocabulary["kind"] == "naming mismatch").sum() == 7
    gap = tables["published-gap-ubar"].frame.set_index("cause")
    assert gap.loc["slot naming", "turns"] == 788
    assert gap["JGA change"].sum() == pytest.approx(UBAR_PAPER - 0.324742, abs=5e-5)
    assert any("7 naming mismatch(es) under mwzeval" in w and "mwzeval-lenient" in w for w in plan.warnings)


@pytest.mark.slow
@pytest.mark.realdata
def test_reconcile_opens_on_the_informative_pair_and_offers_the_lenient_variant(workspace) -> None:
    at = opened_page(workspace, "reconcile")
    table = next(d.value for d in at.dataframe if "convention" in d.value.columns)
    assert table["convention"].tolist()[:2] == ["mwzeval", "mwzeval-lenient"]
    assert at.selectbox(key="w_reconcile_a").value == "mwzeval"
    counts = next(d.value for d in at.dataframe if "only a right" in d.value.columns)
    # A convention whose scorer never reads this gold (DSTC9 on English MultiWOZ) is n/a, never the pair.
    unread = set(table.loc[table.drop(columns="convention").isna().all(axis=1), "convention"])
    assert "dstc9" in unread
    counts = counts[~counts["a"].isin(unread) & ~counts["b"].isin(unread)]
    mine = counts[(counts["a"] == "mwzeval") | (counts["b"] == "mwzeval")]
    best = mine.sort_values("count", ascending=False, kind="stable").iloc[0]
    assert at.selectbox(key="w_reconcile_b").value == (best["b"] if best["a"] == "mwzeval" else best["a"])
    at = opened_page(workspace, "reconcile", reconcile_conventions=["mwzeval", "exact"])
    at.button(key="reconcile_add_lenient").click().run()
    assert not at.exception, [e.value for e in at.exception]
    table = next(d.value for d in at.dataframe if "convention" in d.value.columns)
    assert table["convention"].tolist() == ["mwzeval", "exact", "mwzeval-lenient"]


@pytest.fixture(scope="module")
def unread_workspace(tmp_path_factory) -> Path:
    """UBAR's output declared under dstc9, whose scorer never reads raw English MultiWOZ: every number n/a."""
    return _ubar_workspace(tmp_path_factory.mktemp("ubar_dstc9"), "dstc9")


@pytest.mark.slow
@pytest.mark.realdata
def test_a_run_with_no_number_under_its_convention_has_no_gap_to_decompose(unread_workspace) -> None:
    """No JGA under dstc9 here: the Overview says why there is no gap (never `gap +nan` with causes), the
    naming fix offered has a number (`n/a` here, never `nan`), and the report says the same in a warning."""
    from analysis.export import report as R
    from analysis.workspace import load_workspace

    at = opened_page(unread_workspace, "overview")
    # The leaderboard's missing numbers read n/a on screen (Streamlit's own default is the word "None").
    board = next(d for d in at.dataframe if "JGA" in d.value.columns)
    assert board.value["JGA"].isna().all() and board.proto.placeholder == "n/a"
    said = " ".join(i.body for i in at.info)
    assert "this run has no JGA under dstc9" in said and "no gap to decompose" in said
    assert not any("share" in d.value.columns for d in at.dataframe)
    warning = _mismatch_warning(at)
    assert "(here n/a)" in warning and "nan" not in warning
    plan = R.plan_report(load_workspace(unread_workspace), n_resamples=20)
    assert not any(t.name.startswith("published-gap") for t in plan.tables)
    assert any("no gap to decompose" in w for w in plan.warnings)
