"""The vocabulary check (`analysis.vocabulary`), the published gap (`analysis.reconcile.gap`) and what
`metrics` prints of them: on small runs, and on the mwzeval outputs against MultiWOZ 2.1 gold."""

from __future__ import annotations

import json

import pytest

from analysis.cli.main import main
from analysis.conventions import CONVENTIONS
from analysis.demo.testing import run_from_states
from analysis.loading import load_run
from analysis.model import RunInfo
from analysis.reconcile.core import reconcile
from analysis.reconcile.gap import UNEXPLAINED, as_fraction, gap_conventions, gap_turns, published_gap
from analysis.scoring import score_run
from analysis.vocabulary import MISMATCH, naming_fix, vocabulary
from tests.conftest import realdata_path

GOLD = [{"hotel": {"bookday": "monday", "area": "east"}}, {"hotel": {"bookday": "friday", "area": "west"}}] * 2
PRED = [{"hotel": {"day": "monday", "area": "east"}}, {"hotel": {"day": "friday", "area": "west"}}] * 2


def test_a_renamed_slot_is_a_naming_mismatch_and_other_names_are_listed() -> None:
    pred = [{**p, "taxi": {"stars": "4"}} for p in PRED]
    gold = [{**g, "train": {"people": "2"}} for g in GOLD]
    table = vocabulary(score_run(run_from_states(gold, pred), "exact"))
    rows = {(r.kind, r.domain, r.slot): r for r in table.itertuples()}
    mismatch = rows[(MISMATCH, "hotel", "day")]
    assert (mismatch.gold_slot, mismatch.shared_turns, mismatch.turns) == ("bookday", 4, 4)
    assert rows[("predicted only", "taxi", "stars")].entries == 4
    assert rows[("gold only", "train", "people")].examples == "2"


def test_values_that_differ_are_no_naming_mismatch() -> None:
    pred = [{"hotel": {"day": "sunday", "area": "east"}}] * 4
    table = vocabulary(score_run(run_from_states(GOLD, pred), "exact"))
    assert MISMATCH not in set(table["kind"])
    assert {"predicted only", "gold only"} <= set(table["kind"])


def test_a_run_whose_names_agree_has_an_empty_check() -> None:
    assert vocabulary(score_run(run_from_states(GOLD, GOLD), "exact")).empty


def test_the_published_number_may_be_a_percentage() -> None:
    assert as_fraction(56.2) == pytest.approx(0.562) and as_fraction(0.5) == 0.5
    with pytest.raises(ValueError):
        as_fraction(120)


def test_the_gap_adds_up_to_the_published_number() -> None:
    run = run_from_states(GOLD, PRED)
    rec = reconcile(run, ["exact", "trade"])
    target, table = published_gap(rec, "exact", 0.9)
    assert target == "trade"
    assert table["jga_change"].sum() == pytest.approx(0.9 - rec.metrics.loc["exact", "jga"])
    naming = table.set_index("cause").loc["slot_alias"]
    assert naming["turns"] == 4 and naming["turns_up"] == 4
    assert table.set_index("cause").loc[UNEXPLAINED, "jga_change"] == pytest.approx(0.9 - 1.0)
    assert len(gap_turns(rec, "exact", target, "slot_alias")) == 4


def _mwzeval_run(name: str):
    return load_run(realdata_path("mwzeval_outputs", f"{name}.json"), realdata_path("multiwoz21", "test.json.zip"))


# mwzeval's own numbers on these files (../shared/realdata/scorer_oracles/README.md): official, and with
# the booking slots named alike on both sides and every turn scored (what mwzeval-lenient computes).
MWZEVAL = {"ubar": (0.324742, 0.431633), "augpt": (0.383885, 0.562534)}


@pytest.mark.slow
@pytest.mark.realdata
@pytest.mark.parametrize("name", sorted(MWZEVAL))
def test_the_booking_slots_of_mwzeval_outputs_are_naming_mismatches(name: str) -> None:
    run = _mwzeval_run(name)
    scored = score_run(run, "mwzeval")
    table = vocabulary(scored, run)
    found = table[table["kind"] == MISMATCH]
    pairs = set(zip(found["domain"] + "-" + found["slot"], found["gold_slot"], strict=True))
    assert pairs == {
        ("restaurant-people", "bookpeople"),
        ("restaurant-day", "bookday"),
        ("restaurant-time", "booktime"),
        ("hotel-people", "bookpeople"),
        ("hotel-day", "bookday"),
        ("hotel-stay", "bookstay"),
        ("train-people", "bookpeople"),
    }
    assert (found["agreement"] > 0.85).all()
    fix = naming_fix(run, "mwzeval", table)
    assert (fix.convention, fix.mapped) == ("mwzeval-lenient", 7)
    assert fix.before["jga"] == pytest.approx(MWZEVAL[name][0], abs=5e-5)
    assert fix.metrics["jga"] == pytest.approx(MWZEVAL[name][1], abs=5e-5)


@pytest.mark.realdata
@pytest.mark.parametrize("convention", sorted(CONVENTIONS))
def test_every_convention_gets_a_vocabulary_check_on_ubar(convention: str) -> None:
    """Under every convention: the check runs, and mwzeval's 2.2 booking names are a mismatch only where the
    convention renames the gold (mwzeval) while the lenient variant and TRADE's aliases see one name."""
    run = _mwzeval_run("ubar")
    try:
        scored = score_run(run, convention)
    except ValueError as exc:  # a convention for another dataset says so (the SGD evaluator needs a schema)
        pytest.skip(f"{convention} does not score this run: {exc}")
    table = vocabulary(scored, run)
    names = set(table.loc[table["kind"] == MISMATCH, "gold_slot"])
    if convention == "mwzeval":
        assert names == {"bookpeople", "bookday", "booktime", "bookstay"}
    if convention in ("mwzeval-lenient", "trade"):
        assert not names


@pytest.mark.realdata
def test_trade_named_predictions_against_raw_gold_are_naming_mismatches() -> None:
    """TRADE's file (`book day`, `arriveby`) against raw MultiWOZ 2.1 names (`day`, `arriveBy`): under DSTC9,
    whose slot scope ignores a predicted name the gold turn does not list, every such name is still seen."""
    run = load_run(realdata_path("mlcsg", "all_prediction_TRADE.json"), realdata_path("multiwoz21", "test.json.zip"))
    table = vocabulary(score_run(run, "dstc9"), run)
    found = table[table["kind"] == MISMATCH]
    assert ("restaurant", "book people", "people") in set(
        zip(found["domain"], found["slot"], found["gold_slot"], strict=True)
    )
    assert len(found) == 11


@pytest.mark.realdata
@pytest.mark.parametrize(
    ("pred", "gold"),
    [
        (("wild", "dstc10_task1_teamA01_entry0.json.gz"), ("wild", "dstc10_task1_test_labels.json.gz")),
        (("wild", "checkdst_PI_example.checkdst_prediction.jsonl"), None),
        (("wild", "gptdst_gpt35_ours_running_log.json"), None),
    ],
)
def test_the_wild_files_get_a_vocabulary_check(pred, gold) -> None:
    run = load_run(realdata_path(*pred), realdata_path(*gold) if gold else None)
    table = vocabulary(score_run(run), run)
    assert set(table["kind"]) <= {MISMATCH, "predicted only", "gold only"}
    assert (table["entries"] > 0).all()


@pytest.mark.slow
@pytest.mark.realdata
def test_metrics_prints_the_vocabulary_and_the_published_gap(capsys) -> None:
    pred, gold = realdata_path("mwzeval_outputs", "ubar.json"), realdata_path("multiwoz21", "test.json.zip")
    argv = ["metrics", "--pred", str(pred), "--gold", str(gold), "--convention", "mwzeval", "--published", "56.2"]
    assert main([*argv, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["vocabulary"]["counts"][MISMATCH] == 7
    assert result["vocabulary"]["naming_fix"]["convention"] == "mwzeval-lenient"
    gap = result["published_gap"]
    assert gap["published"] == pytest.approx(0.562) and gap["reference"] == "mwzeval-lenient"
    causes = {c["cause"]: c for c in gap["causes"]}
    assert causes["slot_alias"]["turns"] == 788 and causes["slot_alias"]["turns_down"] == 0
    assert sum(c["jga_change"] for c in gap["causes"]) == pytest.approx(gap["gap"])
    assert causes[UNEXPLAINED]["jga_change"] == pytest.approx(0.562 - 0.431633, abs=5e-5)
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "naming mismatch: predicted restaurant-people = gold restaurant-bookpeople" in out
    assert "under mwzeval-lenient, which maps 7 of these names: JGA 0.4316" in out
    assert "slot naming" in out and "of the gap" in out


@pytest.mark.slow
@pytest.mark.realdata
def test_reconcile_opens_on_the_runs_convention_and_the_one_flipping_most() -> None:
    """UBAR's mwzeval output: the default list starts with mwzeval and its lenient variant, the default pair
    is mwzeval against the convention flipping the most turns, and slot naming there offers the lenient one."""
    from ui import reconcile as ui_reconcile

    run = load_run(
        realdata_path("mwzeval_outputs", "ubar.json"),
        realdata_path("multiwoz21", "test.json.zip"),
        meta=RunInfo(convention="mwzeval"),
    )
    names = ui_reconcile.default_conventions(run)
    assert names[:2] == ("mwzeval", "mwzeval-lenient")
    rec = reconcile(run, names)
    a, b = ui_reconcile.default_pair(rec)
    counts = rec.flip_counts()
    mine = counts[(counts["a"] == "mwzeval") | (counts["b"] == "mwzeval")]
    assert a == "mwzeval" and b in set(mine["a"]) | set(mine["b"])
    # A convention whose scorer never reads this gold (DSTC9 on English MultiWOZ: JGA n/a) is never the pair.
    unread = set(rec.table().set_index("convention")["jga"].loc[lambda s: s.isna()].index)
    assert unread and b not in unread
    scored = mine[~mine["a"].isin(unread) & ~mine["b"].isin(unread)]
    assert rec.flips(a, b).shape[0] == scored["count"].max()
    without = reconcile(run, ["mwzeval", "exact"])
    assert ui_reconcile.lenient_offer(without, "mwzeval", "exact") == "mwzeval-lenient"


def _manifest(tmp_path, value: str):
    from analysis.workspace import read_manifest

    (tmp_path / "run.jsonl").write_text("", encoding="utf-8")
    (tmp_path / "workspace.toml").write_text(
        f'[workspace]\nname = "w"\n\n[[runs]]\nname = "r"\npred = "run.jsonl"\npublished_jga = {value}\n',
        encoding="utf-8",
    )
    return read_manifest(tmp_path / "workspace.toml")


def test_a_manifest_gives_the_published_number_as_a_fraction_or_a_percentage(tmp_path) -> None:
    assert _manifest(tmp_path, "56").entries[0].meta.published_jga == 56.0
    assert _manifest(tmp_path, "0.562").entries[0].meta.published_jga == 0.562
    from analysis.errors import InputError

    for bad in ("560", '"high"'):
        with pytest.raises(InputError, match="published_jga"):
            _manifest(tmp_path, bad)


def test_a_published_number_out_of_range_is_bad_input(tmp_path, capsys) -> None:
    pred = tmp_path / "run.jsonl"
    pred.write_text(json.dumps({"dialogue_id": "d", "turn_index": 0, "gold": {}, "pred": {}}) + "\n", encoding="utf-8")
    assert main(["metrics", "--pred", str(pred), "--published", "120"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "a published JGA is a fraction or a percentage, got 120.0" in err[0]


@pytest.mark.slow
@pytest.mark.realdata
def test_a_turn_the_prediction_file_lacks_is_the_gaps_turns_cause() -> None:
    """PPTOD's file lacks the last turn of PMUL3688: mwzeval does not score it, mwzeval-lenient scores it as an
    empty prediction. That turn, and the changed weight of every turn right under both, are the `turns` row."""
    run = load_run(
        realdata_path("mwzeval_outputs", "pptod.json"),
        realdata_path("multiwoz21", "test.json.zip"),
        meta=RunInfo(convention="mwzeval"),
    )
    rec = reconcile(run, ["mwzeval", "mwzeval-lenient"])
    target, table = published_gap(rec, "mwzeval", 0.5)
    rows = table.set_index("cause")
    assert target == "mwzeval-lenient" and rows.loc["turns", "turns"] == 1
    assert rows.loc["turns", "jga_change"] < 0  # one more turn in the denominator, wrong
    assert table["jga_change"].sum() == pytest.approx(0.5 - rec.metrics.loc["mwzeval", "jga"])
    lacking = gap_turns(rec, "mwzeval", target, "turns")
    assert lacking[["dialogue_id", "turn_index"]].values.tolist() == [["PMUL3688", 5]]


def test_the_text_lists_the_first_names_and_counts_the_rest() -> None:
    from analysis.vocabulary import vocabulary_lines

    pred = [{"hotel": {"area": "east", **{f"extra{n:02d}": "x" for n in range(15)}}}]
    table = vocabulary(score_run(run_from_states([{"hotel": {"area": "east"}}], pred), "exact"))
    lines = vocabulary_lines(table)
    assert lines[0].startswith("Vocabulary: 0 naming mismatch(es), 15 predicted name(s)")
    assert sum(line.startswith("  predicted only") for line in lines) == 12
    assert lines[-1] == "  ... and 3 more name(s) one side only uses (the JSON output lists every one)"
    assert len(vocabulary_lines(table, shown_others=None)) == 16


@pytest.mark.realdata
@pytest.mark.parametrize("convention", ["mwzeval", "trade", "exact"])
def test_names_counted_on_codes_are_the_group_by_on_names(convention: str) -> None:
    """The check counts each side's names on the scored slots' integer `pair_code` and picks their rows by
    it: the same tables, rows and name positions as the group-by and the look-up on the (domain, slot)
    columns, on a real run."""
    import numpy as np
    import pandas as pd

    from analysis.vocabulary import _names, _select, _side

    scored = score_run(_mwzeval_run("augpt"), convention)
    for side in ("gold", "pred"):
        rows = _side(scored, None, side)
        by_code, by_name = _names(rows), _names(rows.drop(columns="pair_code"))
        pd.testing.assert_frame_equal(by_code.drop(columns="pair_code"), by_name)
        some = by_code.iloc[::3].reset_index(drop=True)
        picked, code = _select(rows, some)
        assert len(picked) == int(some["entries"].sum()) > 0
        # each row's position names its own (domain, slot)
        assert (some["domain"].to_numpy()[code] == picked["domain"].to_numpy()).all()
        assert (some["slot"].to_numpy()[code] == picked["slot"].to_numpy()).all()
        by_name_rows, by_name_code = _select(rows.drop(columns="pair_code"), some.drop(columns="pair_code"))
        pd.testing.assert_frame_equal(picked.drop(columns="pair_code"), by_name_rows)
        np.testing.assert_array_equal(code, by_name_code)


# --- the check's join and counts on integer codes, against the merge and group-by they replaced -------------


def _vocabulary_by_merge(scored, run=None, examples: int = 3):
    """The vocabulary check as pandas joins and group-bys on the name and value columns (the code before the
    integer-key join): the reference the faster path must equal, row for row and dtype for dtype."""
    import numpy as np
    import pandas as pd

    from analysis import scorer_inputs
    from analysis import vocabulary as V

    if run is not None:
        run = scorer_inputs.prepare(run, scored.convention)[0]
    gold, pred = V._side(scored, run, "gold"), V._side(scored, run, "pred")
    gold, pred = (side.drop(columns="pair_code", errors="ignore") for side in (gold, pred))
    gold_names, pred_names = V._names(gold), V._names(pred)
    g_key, p_key = (n["domain"] + "\x1f" + n["slot"] for n in (gold_names, pred_names))
    pred_only = pred_names[~p_key.isin(set(g_key))].reset_index(drop=True)
    gold_only = gold_names[~g_key.isin(set(p_key))].reset_index(drop=True)
    p_rows = pred.merge(pred_only[["domain", "slot"]], on=["domain", "slot"])
    g_rows = gold.merge(gold_only[["domain", "slot"]], on=["domain", "slot"])
    pairs = p_rows[["tid", "domain", "slot", "value"]].merge(
        g_rows[["tid", "domain", "slot", "value"]].rename(columns={"domain": "gold_domain", "slot": "gold_slot"}),
        on=["tid", "value"],
    )
    names = ["domain", "slot", "gold_domain", "gold_slot"]
    shared = pairs.drop_duplicates(["tid", *names]).groupby(names, sort=True).size().rename("shared_turns")
    shared = shared.reset_index().merge(pred_only, on=["domain", "slot"])
    shared["agreement"] = shared["shared_turns"] / shared["turns"]
    shared = shared.sort_values(["domain", "slot", "shared_turns"], ascending=[True, True, False], kind="stable")
    best = shared.drop_duplicates(["domain", "slot"])
    found = best[(best["shared_turns"] >= V.MIN_SHARED) & (best["agreement"] >= V.MIN_AGREEMENT)]
    found = found.sort_values("shared_turns", ascending=False, kind="stable").drop_duplicates(names[2:])

    def top(rows):
        if rows.empty:
            return {}
        counts = rows.groupby(["domain", "slot", "display"], sort=False).size().rename("n").reset_index()
        counts = counts.sort_values(["domain", "slot", "n", "display"], ascending=[True, True, False, True])
        joined = counts.groupby(["domain", "slot"], sort=False).head(examples)
        return joined.groupby(["domain", "slot"], sort=False)["display"].agg("; ".join).to_dict()

    p_ex, g_ex = top(p_rows), top(g_rows)
    found_p = set(zip(found["domain"], found["slot"], strict=True))
    found_g = set(zip(found["gold_domain"], found["gold_slot"], strict=True))
    parts = [
        found.assign(
            kind=V.MISMATCH, examples=[p_ex.get(k, "") for k in zip(found["domain"], found["slot"], strict=True)]
        ),
    ]
    for frame, seen, ex, kind in ((pred_only, found_p, p_ex, V.PRED_ONLY), (gold_only, found_g, g_ex, V.GOLD_ONLY)):
        keys = list(zip(frame["domain"], frame["slot"], strict=True))
        rest = frame[np.array([k not in seen for k in keys], dtype=bool)]
        parts.append(
            rest.assign(kind=kind, examples=[ex.get(k, "") for k in zip(rest["domain"], rest["slot"], strict=True)])
        )
    parts = [p for p in parts if len(p)]
    if not parts:
        return V._empty()
    out = pd.concat(parts, ignore_index=True).reindex(columns=V.VOCABULARY_COLUMNS)
    for column in ("gold_domain", "gold_slot"):
        out[column] = out[column].astype(object).fillna("")
    out["shared_turns"] = out["shared_turns"].fillna(0)
    out["order"] = out["kind"].map({k: i for i, k in enumerate(V.KINDS)})
    out = out.sort_values(["order", "entries", "domain", "slot"], ascending=[True, False, True, True], kind="stable")
    return out.drop(columns="order").reset_index(drop=True).astype(V.DTYPES)


def _same_table(a, b) -> None:
    import pandas as pd

    pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert list(a.dtypes) == list(b.dtypes)


@pytest.mark.realdata
@pytest.mark.parametrize("name", ["augpt", "ubar"])
@pytest.mark.parametrize("convention", ["mwzeval", "trade", "convlab3", "dstc9"])
def test_vocabulary_equals_the_merge_and_group_by_on_real_runs(name: str, convention: str) -> None:
    """On real predictions against MultiWOZ 2.1 gold, from the scored slots and from the loaded files: the
    integer-key join finds the same names, mismatches, counts and examples as the joins on columns."""
    run = _mwzeval_run(name)
    scored = score_run(run, convention)
    for loaded in (None, run):
        table = vocabulary(scored, loaded)
        _same_table(table, _vocabulary_by_merge(scored, loaded))
    # Booking names: the join has mismatches to find under mwzeval and DSTC9 (TRADE's convention and
    # ConvLab-3's preparation of the gold name both sides alike).
    assert (table["kind"] == MISMATCH).sum() >= (4 if convention in ("mwzeval", "dstc9") else 0)


def test_vocabulary_equals_the_merge_and_group_by_where_it_must_choose() -> None:
    """Hand-made names that make the check choose: a predicted name sharing turns with two gold names (the
    one with more wins, the first name on a tie), two predicted names carrying one gold name's values (the
    one with more turns keeps it), a name below the thresholds, several values on one turn (a many-to-many
    join), examples tied on counts (string order), and a run with no name one side only uses."""
    gold = [
        {"hotel": {"bookday": "monday", "bookstay": "2", "area": "east"}, "taxi": {"leave": "1", "arrive": "1"}},
        {"hotel": {"bookday": "friday", "bookstay": "2", "area": "west"}, "taxi": {"leave": "2", "arrive": "2"}},
        {"hotel": {"bookday": "friday", "bookstay": "3", "area": "west"}, "taxi": {"leave": "3", "arrive": "3"}},
        {"hotel": {"bookday": "sunday", "bookstay": "2", "area": "east"}, "taxi": {"leave": "1", "arrive": "4"}},
        {"hotel": {"bookday": "monday", "bookstay": "5"}, "train": {"day": "monday", "people": "5"}},
    ] * 2
    pred = [
        {"hotel": {"day": g["hotel"]["bookday"], "stay": g["hotel"]["bookstay"], "nights": "2"}, "taxi": {"when": "1"}}
        for g in gold
    ]
    pred[0]["train"] = {"dayz": "monday", "peeple": "5"}
    for i, (g, p) in enumerate(zip(gold, pred, strict=True)):  # `via` ties between `from` and `to`
        g["bus"] = {"from": f"stop {i % 3}", "to": f"stop {i % 3}"}
        p["bus"] = {"via": f"stop {i % 3}"}
    for convention in ("exact", "trade", "mwzeval"):
        scored = score_run(run_from_states(gold, pred), convention)
        run = run_from_states(gold, pred)
        for loaded in (None, run):
            table = vocabulary(scored, loaded)
            _same_table(table, _vocabulary_by_merge(scored, loaded))
    assert {"naming mismatch", "predicted only", "gold only"} <= set(table["kind"])
    mismatched = dict(zip(table["slot"], table["gold_slot"], strict=True))
    assert (mismatched["via"], mismatched["stay"], mismatched["nights"]) == ("from", "bookstay", "")
    same = run_from_states(gold, gold)
    _same_table(vocabulary(score_run(same, "exact")), _vocabulary_by_merge(score_run(same, "exact")))
    assert vocabulary(score_run(same, "exact")).empty


# --- the check reads the states its scorer is handed (`scorer_inputs`), and offers no fix that reads nothing --


def _raw_multiwoz_run():
    """Raw MultiWOZ gold names (`pricerange`, `arriveBy`) against predictions in ConvLab-3's unified names
    (`price range`, `arrive by`), the gold read as a raw MultiWOZ file."""
    from dataclasses import replace

    gold = [{"hotel": {"pricerange": p, "area": "east"}, "train": {"arriveBy": t}} for p, t in
            [("cheap", "10:00"), ("moderate", "11:00"), ("cheap", "12:00"), ("expensive", "13:00")]]  # fmt: skip
    pred = [
        {
            "hotel": {"price range": g["hotel"]["pricerange"], "area": "east"},
            "train": {"arrive by": g["train"]["arriveBy"]},
        }
        for g in gold
    ]
    run = run_from_states({"d1": gold}, {"d1": pred})
    return replace(run, meta=replace(run.meta, formats=("mwzeval", "multiwoz")))


def test_the_check_reads_the_names_convlab3_compares_on_raw_multiwoz() -> None:
    """ConvLab-3's preprocessing gives raw MultiWOZ gold its unified names (`scorer_inputs`), so its scorer
    compares `price range` with `price range`: no naming mismatch, read from the files or from the scored
    slots (before, the files' gold names were read unprepared: six false mismatches on AuGPT's output)."""
    run = _raw_multiwoz_run()
    scored = score_run(run, "convlab3")
    for loaded in (None, run):
        table = vocabulary(scored, loaded)
        assert MISMATCH not in set(table["kind"]), table
    assert vocabulary(scored, run).empty


def test_the_naming_fix_skips_a_convention_whose_scorer_reads_no_gold() -> None:
    """DSTC9's scorer never reads raw English MultiWOZ (every number n/a): its mismatches are real there, and
    the fix offered is a convention with a number, here ConvLab-3's, whose preparation unifies the names."""
    from analysis import scorer_inputs as SI
    from analysis.registry import values

    run = _raw_multiwoz_run()
    scored = score_run(run, "dstc9")
    table = vocabulary(scored, run)
    assert {("price range", "pricerange"), ("arrive by", "arriveBy")} <= set(
        zip(
            table.loc[table["kind"] == MISMATCH, "slot"], table.loc[table["kind"] == MISMATCH, "gold_slot"], strict=True
        )
    )
    fix = naming_fix(run, "dstc9", table, scored)
    assert fix.convention and SI.gold_input(CONVENTIONS[fix.convention], run).status != "n/a"
    assert fix.convention == "convlab3" and fix.mapped == 2
    assert fix.metrics == values(score_run(run, "convlab3"), ("jga", "slot_f1_micro"))


@pytest.mark.realdata
def test_augpt_under_convlab3_has_no_naming_mismatch() -> None:
    """AuGPT's output against raw MultiWOZ 2.1 under ConvLab-3: the scorer's prepared gold and the predictions
    share every name (`metrics` printed six mismatches and a fix under icdst, JGA n/a, before)."""
    run = _mwzeval_run("augpt")
    assert vocabulary(score_run(run, "convlab3"), run).empty
    fix = naming_fix(run, "dstc9", vocabulary(score_run(run, "dstc9"), run))
    assert fix.convention == "convlab3" and fix.metrics["jga"] == pytest.approx(0.4927, abs=5e-5)


def test_the_pages_warning_says_n_a_where_the_run_has_no_number() -> None:
    """The Slots, Domains and Overview warning under a convention whose scorer reads no such gold: `n/a`, as
    the command line says it, never `nan`."""
    from analysis.vocabulary import mismatch_warning, vocabulary_report

    run = _raw_multiwoz_run()
    text = mismatch_warning(vocabulary_report(score_run(run, "dstc9"), run))
    assert text is not None and "Under convlab3, which maps the names, JGA is 1.0000 (here n/a)." in text
    assert "nan" not in text


def test_no_gap_is_decomposed_from_a_convention_that_reads_no_gold() -> None:
    """DSTC9's scorer never reads raw English MultiWOZ: the run has no JGA under it, so a published number
    has no gap to decompose from it (before: `gap +nan` over causes computed on gold that scorer never
    reads); the line says why, and how far the nearest convention with a number is."""
    from analysis.reconcile.gap import gap_lines, gap_summary, undecomposed

    run = _raw_multiwoz_run()
    rec = reconcile(run, gap_conventions("dstc9"))
    assert undecomposed(rec, "dstc9") and undecomposed(rec, "trade") is None
    target, table = published_gap(rec, "dstc9", 0.9)
    assert table.empty and target != "dstc9"
    summary = gap_summary(rec, "dstc9", 0.9, target, table)
    assert summary["jga"] is None and summary["gap"] is None and summary["causes"] == []
    (line,) = gap_lines(summary)
    assert "this run has no JGA under dstc9" in line and "no gap to decompose" in line and "nan" not in line
