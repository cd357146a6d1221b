"""A slice of the focus run compared with another run on its gold (issue 41 requirement 3, Slices): the slice's
turns only A or only B gets right (`slices.slice_differences`) checked against a plain loop over the demo
runs, the comparison run picker's default (the best other run on the gold) and its order, and the Slices page
listing both sides from a picked slice and from a deep link (AppTest);
tests/browser/test_browser_slices_compare.py clicks a slice in a browser."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from analysis import slices as S
from analysis.scoring import score_run
from analysis.workspace import load_entry, read_manifest

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"
DEMO = ROOT / "data" / "demo" / "workspace.toml"
TIMEOUT = 300
A = "simulated-B-mwz-en-predicted-s1"
OTHERS = ("simulated-C-mwz-en-predicted", "simulated-A-mwz-en-predicted", "simulated-A-mwz-zh-predicted")

pytestmark = pytest.mark.skipif(not DEMO.exists(), reason=f"the demo workspace {DEMO} is absent (make demo)")


@pytest.fixture(scope="module")
def scored():
    entries = {e.name: e for e in read_manifest(DEMO).entries}
    return {name: score_run(load_entry(entries[name])) for name in (A, *OTHERS)}


@pytest.fixture(scope="module")
def report(scored):
    return S.find_slices(scored[A])


def reference(a, b, predicates) -> dict[str, list[tuple[str, int]]]:
    """(dialogue, turn) of each side by a plain loop: the slice's turns of A (its listed turns), each compared
    with B's turn of the same dialogue and index when B holds it."""
    right_b = {(str(r.dialogue_id), int(r.turn_index)): bool(r.joint_correct) for r in b.turns.itertuples()}
    out: dict[str, list[tuple[str, int]]] = {"only_a": [], "only_b": []}
    for row in S.slice_turns(a, predicates=predicates).itertuples():
        key = (str(row.dialogue_id), int(row.turn_index))
        if key not in right_b:
            continue
        right_a = row.status == "correct"
        if right_a and not right_b[key]:
            out["only_a"].append(key)
        elif right_b[key] and not right_a:
            out["only_b"].append(key)
    return {side: sorted(keys) for side, keys in out.items()}


def test_comparison_runs_are_the_runs_on_the_gold_best_first(scored) -> None:
    found = S.comparison_runs(scored[A], [scored[n] for n in OTHERS])
    jga = {n: scored[n].turns["joint_correct"].mean() for n in found}
    assert OTHERS[2] not in found  # the Chinese run: another gold
    assert set(found) == set(OTHERS[:2])
    assert [jga[n] for n in found] == sorted(jga.values(), reverse=True)


@pytest.mark.parametrize("rank", [0, 1, 4])
def test_slice_differences_equal_a_plain_loop(scored, report, rank) -> None:
    predicates = report.slices.iloc[rank]["predicates"]
    for other in OTHERS[:2]:
        found = S.slice_differences(scored[A], scored[other], predicates=predicates, limit=100_000)
        expected = reference(scored[A], scored[other], predicates)
        for side in ("only_a", "only_b"):
            listed = list(zip(found[side]["dialogue_id"], found[side]["turn_index"], strict=True))
            assert listed == expected[side]
            assert found["counts"][side]["turns"] == len(expected[side])
        assert found["counts"]["paired_turns"] == report.slices.iloc[rank]["turns"]  # same gold: every turn pairs
    assert expected["only_a"] or expected["only_b"]


def opened(**state) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.session_state["workspace_path"] = str(DEMO)
    for key, value in {"runs": [A, *OTHERS], "run": A, **state}.items():
        at.session_state[key] = value
    at.run()
    at.switch_page("pages/slices.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def shown_lists(at: AppTest) -> list:
    return [d.value for d in at.dataframe if "wrong slots of A" in d.value.columns]


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
def test_a_picked_slice_lists_the_turns_only_one_run_gets_right(scored, report) -> None:
    at = opened()
    picker = next(s for s in at.selectbox if s.label.startswith("Compare the slice with"))
    best = S.comparison_runs(scored[A], [scored[n] for n in OTHERS])
    assert picker.value == best[0] and picker.options == ["(no comparison)", *best]
    assert not shown_lists(at)  # no slice picked yet

    top = report.slices.iloc[0]
    at.session_state["slice_pick"] = (A, None, top["predicates"], top["slice"])
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    only_a, only_b = shown_lists(at)
    expected = reference(scored[A], scored[best[0]], top["predicates"])
    assert list(zip(only_a["dialogue"], only_a["turn"], strict=True)) == expected["only_a"]
    assert list(zip(only_b["dialogue"], only_b["turn"], strict=True)) == expected["only_b"]
    assert at.session_state["diff"] == ("slices", A, best[0], top["slice"], "", "")  # what the link carries
    assert any(f"where {top['slice']}: {top['turns']:,}" in t.value for t in at.text)  # the run's own list stays

    picker.set_value("(no comparison)").run()
    assert not at.exception and not shown_lists(at)
    assert any(f"where {top['slice']}" in t.value for t in at.text)


def test_a_deep_link_opens_the_slice_against_its_run(scored, report) -> None:
    other = S.comparison_runs(scored[A], [scored[n] for n in OTHERS])[1]  # not the default
    row = report.slices.iloc[1]
    link = f"slices|{A}|{other}|{row['slice']}||"
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.session_state["workspace_path"] = str(DEMO)
    at.query_params["page"] = "slices"
    at.query_params["runs"] = ",".join([A, *OTHERS])
    at.query_params["run"] = A
    at.query_params["diff"] = link
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert [t.value for t in at.title] == ["Slices"]
    assert next(s for s in at.selectbox if s.label.startswith("Compare the slice with")).value == other
    only_a, only_b = shown_lists(at)
    expected = reference(scored[A], scored[other], row["predicates"])
    assert list(zip(only_a["dialogue"], only_a["turn"], strict=True)) == expected["only_a"]
    assert list(zip(only_b["dialogue"], only_b["turn"], strict=True)) == expected["only_b"]
    assert at.query_params["diff"] in (link, [link])  # written back
