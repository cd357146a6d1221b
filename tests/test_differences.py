"""Every difference opens its turns (issue 41 requirement 3): the paired turns only run A or only run B gets
right, overall, per domain and per slot (`views.differing_turns`), checked against a plain loop over the demo
runs; the Overview's matrix cells and delta bars and the Domains chart open them (AppTest, from the state a
click writes); tests/browser/test_browser_differences.py clicks a matrix cell in a browser."""

from __future__ import annotations

import json
from pathlib import Path

import plotly.graph_objects as go
import pytest
from streamlit.testing.v1 import AppTest

from analysis import figures, views
from analysis.scoring import score_run
from analysis.workspace import load_entry, read_manifest
from ui.differences import clickable_pairs

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"
DEMO = ROOT / "data" / "demo" / "workspace.toml"
TIMEOUT = 180
A, B = "simulated-B-mwz-en-predicted-s1", "simulated-C-mwz-en-predicted"
EN, ZH = "simulated-A-mwz-en-predicted", "simulated-A-mwz-zh-predicted"

pytestmark = pytest.mark.skipif(not DEMO.exists(), reason=f"the demo workspace {DEMO} is absent (make demo)")


@pytest.fixture(scope="module")
def pair():
    entries = {e.name: e for e in read_manifest(DEMO).entries}
    return score_run(load_entry(entries[A])), score_run(load_entry(entries[B]))


def reference(a, b, domain=None, slot=None, own_b=None) -> dict[str, list[tuple[str, int]]]:
    """(dialogue, turn) of each side by a plain loop over the turns and slot rows (`own_b`: B's name of the
    group, a domain or a domain-slot label)."""

    def facts(scored, own=None):
        right, occurs = {}, set()
        for row in scored.turns.itertuples():
            right[(str(row.dialogue_id), int(row.turn_index))] = bool(row.joint_correct) if domain is None else True
        for row in scored.slots.itertuples():
            if domain is None:
                continue
            name = str(row.domain) if slot is None else f"{row.domain}-{row.slot}"
            if name != (own or (domain if slot is None else f"{domain}-{slot}")):
                continue
            key = (str(row.dialogue_id), int(row.turn_index))
            occurs.add(key)
            if row.outcome != "correct":
                right[key] = False
        return right, occurs

    right_a, occurs_a = facts(a)
    right_b, occurs_b = facts(b, own_b)
    out: dict[str, list[tuple[str, int]]] = {"only_a": [], "only_b": []}
    for key in sorted(set(right_a) & set(right_b)):
        if domain is not None and key not in occurs_a | occurs_b:
            continue
        if right_a[key] and not right_b[key]:
            out["only_a"].append(key)
        elif right_b[key] and not right_a[key]:
            out["only_b"].append(key)
    return out


@pytest.mark.parametrize("group", [(None, None), ("hotel", None), ("hotel", "area"), ("restaurant", "food")])
def test_differing_turns_equal_a_plain_loop(pair, group) -> None:
    a, b = pair
    found = views.differing_turns(a, b, domain=group[0], slot=group[1], limit=100_000)
    expected = reference(a, b, *group)
    for side in views.SIDES:
        listed = list(zip(found[side]["dialogue_id"], found[side]["turn_index"], strict=True))
        assert sorted(listed) == expected[side]
        assert found["counts"][side]["turns"] == len(expected[side])
        assert found["counts"][side]["dialogues"] == len({d for d, _ in expected[side]})
    assert expected["only_a"] and expected["only_b"]
    # the sides are a pair's: swapping the runs swaps the lists
    swapped = views.differing_turns(b, a, domain=group[0], slot=group[1], limit=100_000)
    assert swapped["counts"]["only_a"] == found["counts"]["only_b"]


def test_the_lists_say_what_each_side_got_wrong(pair) -> None:
    a, b = pair
    found = views.differing_turns(a, b, domain="hotel")
    assert (found["only_a"]["errors_a"] == "").all() and (found["only_a"]["errors_b"] != "").all()
    assert (found["only_b"]["errors_b"] == "").all() and (found["only_b"]["errors_a"] != "").all()
    assert found["only_b"]["errors_a"].str.startswith("hotel-").all()  # the group's errors only
    with pytest.raises(ValueError, match="needs its domain"):
        views.differing_turns(a, b, slot="area")


def test_every_off_diagonal_matrix_cell_is_clickable(pair) -> None:
    table = views.significance_table(list(pair), resamples=200)
    fig = clickable_pairs(go.Figure(figures.significance_heatmap(table).to_dict(), _validate=False))
    overlay = fig.data[-1]
    assert overlay.type == "scatter" and overlay.marker.opacity == 0
    assert sorted(zip(overlay.x, overlay.y, strict=True)) == sorted([(A, B), (B, A)])  # significant or not
    assert all("−" in text for text in overlay.customdata)  # the cell's own hover text


def opened(page: str, runs: tuple[str, str] = (A, B), **state) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.session_state["workspace_path"] = str(DEMO)
    for key, value in {"runs": list(runs), "run": runs[0], **state}.items():
        at.session_state[key] = value
    at.run()
    at.switch_page(f"pages/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def shown_lists(at: AppTest) -> list:
    return [d.value for d in at.dataframe if "wrong slots of A" in d.value.columns]


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
def test_a_matrix_cell_opens_both_lists_on_the_overview(pair) -> None:
    at = opened("overview", diff=("overview", A, B, "", ""))
    only_a, only_b = shown_lists(at)
    expected = reference(*pair)
    assert list(zip(only_a["dialogue"], only_a["turn"], strict=True)) == expected["only_a"]
    assert list(zip(only_b["dialogue"], only_b["turn"], strict=True)) == expected["only_b"]
    texts = [t.value for t in at.text]
    assert f"Only A right: {len(expected['only_a']):,} turns" in " ".join(texts)
    spec = json.loads(at.get("plotly_chart")[-1].proto.spec)  # the matrix carries its click overlay
    assert spec["data"][-1]["type"] == "scatter"


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
def test_a_delta_bar_and_a_domain_bar_open_their_group(pair) -> None:
    deltas = views.pair_deltas(*pair, scope="slot", resamples=200)
    group = str(deltas.dropna(subset=["delta"])["group"].iloc[0])
    domain, slot = views.delta_group(deltas, group)
    assert f"{domain}-{slot}" == group
    at = opened("overview", diff=("overview", A, B, domain, slot), view_overview="Deltas of a pair")
    only_a, only_b = shown_lists(at)
    expected = reference(*pair, domain, slot)
    assert list(zip(only_b["dialogue"], only_b["turn"], strict=True)) == expected["only_b"]
    at = opened("domains", diff=("domains", A, B, "hotel", ""))
    only_a, _ = shown_lists(at)
    assert list(zip(only_a["dialogue"], only_a["turn"], strict=True)) == reference(*pair, "hotel")["only_a"]
    # a pick of another page, or of runs no longer selected, opens nothing here
    assert not shown_lists(opened("domains", diff=("overview", A, B, "hotel", "")))


def test_a_deep_link_carries_the_difference(pair) -> None:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.session_state["workspace_path"] = str(DEMO)
    at.query_params["page"] = "domains"
    at.query_params["runs"] = f"{A},{B}"
    at.query_params["diff"] = f"domains|{A}|{B}|hotel|"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert [t.value for t in at.title] == ["Domains"]
    only_a, _ = shown_lists(at)
    assert list(zip(only_a["dialogue"], only_a["turn"], strict=True)) == reference(*pair, "hotel")["only_a"]
    assert at.query_params["diff"] in (f"domains|{A}|{B}|hotel|", [f"domains|{A}|{B}|hotel|"])  # written back


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
def test_a_language_cell_lists_the_turns_against_the_pivot_in_its_own_names() -> None:
    from analysis import crosslingual as X

    entries = {e.name: e for e in read_manifest(DEMO).entries}
    en, zh = (score_run(load_entry(entries[n])) for n in (EN, ZH))
    matrix = X.language_summary([en, zh], pivot=EN)["matrix"]["slot"]
    rows = matrix[(matrix["run_id"] == ZH) & matrix["own"].notna() & (matrix["own"] != matrix["key"])]
    assert len(rows), "the demo's zh run names its slots otherwise"
    row = rows.iloc[0]
    column = figures.language_labels(matrix)[ZH]
    run, domain, slot, own = views.language_cell(matrix, by="slot", column=column, key=row["key"])
    assert (run, f"{domain}-{slot}", own) == (ZH, row["key"], row["own"])
    assert views.language_cell(matrix, by="slot", column="no such language", key=row["key"]) is None
    found = views.differing_turns(en, zh, domain=domain, slot=slot, own_b=own, limit=100_000)
    expected = reference(en, zh, domain, slot, own)
    assert expected["only_a"] or expected["only_b"]
    for side in views.SIDES:
        assert list(zip(found[side]["dialogue_id"], found[side]["turn_index"], strict=True)) == expected[side]
    at = opened(
        "crosslingual",
        runs=[EN, ZH],
        view_crosslingual="All languages",
        diff=("crosslingual", EN, ZH, domain, slot, own),
    )
    lists = shown_lists(at)[-2:]  # after the page's own drill-down of A and B
    assert [len(t) for t in lists] == [len(expected["only_a"]), len(expected["only_b"])]
    assert any(f"(in B: {own})" in m.value for m in at.markdown)
