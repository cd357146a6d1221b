"""The paired comparison on the Overview (issue 17 requirement 1): the significance matrix and the per-domain
and per-slot delta charts show `analysis.compare`'s numbers; runs group by gold."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from analysis import figures, views
from analysis.scoring import score_run
from analysis.workspace import load_entry, read_manifest

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"
DEMO = ROOT / "data" / "demo" / "workspace.toml"
TIMEOUT = 180

pytestmark = pytest.mark.skipif(not DEMO.exists(), reason=f"the demo workspace {DEMO} is absent (make demo)")


@pytest.fixture(scope="module")
def scored_runs():
    return {e.name: score_run(load_entry(e)) for e in read_manifest(DEMO).entries}


def _values(encoded) -> list:
    if isinstance(encoded, dict) and "bdata" in encoded:
        return np.frombuffer(base64.b64decode(encoded["bdata"]), dtype=np.dtype(encoded["dtype"])).tolist()
    return list(encoded)


def _charts(at: AppTest) -> dict[str, dict]:
    out = {}
    for element in at.get("plotly_chart"):
        spec = json.loads(element.proto.spec)
        out[str(spec["layout"].get("title", {}).get("text", ""))] = spec
    return out


def _overview(**state) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.session_state["workspace_path"] = str(DEMO)
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_gold_groups_pair_runs_on_the_same_gold(scored_runs) -> None:
    groups = views.gold_groups(list(scored_runs.values()))
    english = [n for n in scored_runs if "mwz-en" in n]
    assert groups[0] == english  # every simulated MultiWOZ English run shares multiwoz21's gold
    assert ["simulated-A-mwz-zh-predicted", "simulated-A-mwz-zh-gold"] in groups
    assert all("crosswoz-en" not in n for g in groups for n in g)  # alone on its gold
    flat = [n for g in groups for n in g]
    assert len(flat) == len(set(flat))


def test_overview_matrix_shows_the_holm_significant_deltas(scored_runs) -> None:
    at = _overview()
    charts = _charts(at)
    spec = next(s for t, s in charts.items() if t.startswith("Significant differences in JGA"))
    group = views.gold_groups(list(scored_runs.values()))[0]
    table = views.significance_table([scored_runs[n] for n in group], metric="jga")
    heat = spec["data"][0]
    assert list(heat["x"]) == group and list(heat["y"]) == group
    z = [_values(row) for row in heat["z"]]
    cells = table.set_index(["row", "column"])
    n_significant = 0
    for i, row in enumerate(group):
        for j, column in enumerate(group):
            if i == j:
                continue
            expected = cells.loc[(row, column)]
            shown = z[i][j]
            if expected["significant"]:
                n_significant += 1
                assert shown == pytest.approx(expected["delta"])
            else:
                assert shown is None or np.isnan(shown)
    assert n_significant >= 2
    assert any("Holm" in c.value for c in at.caption)


def test_overview_pair_tab_charts_per_domain_and_slot_deltas(scored_runs) -> None:
    a, b = "simulated-A-mwz-en-predicted", "simulated-C-mwz-en-predicted"
    at = _overview(view_overview="Deltas of a pair", compare_a=a, compare_b=b)
    charts = _charts(at)
    for scope in ("domain", "slot"):
        spec = next(s for t, s in charts.items() if t.startswith(f"JGA per {scope}: {b} − {a}"))
        expected = views.pair_deltas(scored_runs[a], scored_runs[b], metric="jga", scope=scope).dropna(subset=["delta"])
        bar = spec["data"][0]
        # Each name carries its support: "hotel · 57 dlg" (the dialogues where the runs differ).
        support = {f"{r.group} · {r.n_dialogues_differ:,} dlg": r.group for r in expected.itertuples()}
        groups = [support[label] for label in bar["y"]]
        shown = dict(zip(groups, _values(bar["x"]), strict=True))
        assert len(shown) == min(len(expected), 40)
        for row in expected.itertuples():
            if row.group in shown:
                assert shown[row.group] == pytest.approx(row.delta)
        upper = dict(zip(groups, _values(bar["error_x"]["array"]), strict=True))
        tested = expected[expected["tested"]]
        top = tested.loc[tested["delta"].abs().idxmax()]  # the largest tested delta, drawn first with its interval
        assert upper[top["group"]] == pytest.approx(top["high"] - top["delta"])
        assert groups[-1] == top["group"]  # a horizontal chart lists from the bottom: the top bar is the last


def test_delta_bar_and_heatmap_handle_empty_input() -> None:
    import pandas as pd

    empty = pd.DataFrame(columns=["delta"])
    assert figures.delta_bar(empty).layout.annotations[0].text == "no delta to show"
    assert "two runs" in figures.significance_heatmap(pd.DataFrame()).layout.annotations[0].text


def test_overview_names_the_runs_the_comparison_leaves_out_and_compares_seeds(scored_runs) -> None:
    """Issue 41: a run alone on its gold is named with the reason, not dropped in silence; the option to
    compare on shared turns is on the page; the systems with several seeds are compared over seeds."""
    at = _overview(view_overview="Significance matrix")
    notice = next(c.value for c in at.caption if c.value.startswith("Left out of the paired comparison"))
    left_out = views.left_out_of_comparison(list(scored_runs.values()))
    assert left_out and all(line in notice for line in left_out)
    assert any("crosswoz-en" in line and "with no other selected run" in line for line in left_out)
    assert any(t.label.startswith("Compare on shared turns") for t in at.toggle)
    english = views.gold_groups(list(scored_runs.values()))[0]
    seeds = views.seed_comparison([scored_runs[r] for r in english])
    assert len(seeds) and (seeds["n_seeds_b"].max() == 3 or seeds["n_seeds_a"].max() == 3)
    assert any(c.value.startswith("Systems over their seeds") for c in at.caption)
