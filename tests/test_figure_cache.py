"""`ui.figure`: a page's figure is built once per distinct input and then served from its cached JSON.

What a page draws from the cache has to be exactly what the builder draws: checked for every figure the
demo pages make, on the inputs the pages really pass, both the first time and from the cache.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
import pytest
from page_visits import visit_every_tab
from streamlit.testing.v1 import AppTest

import page_registry
import ui
from ui import place

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"
DEMO = ROOT / "data" / "demo" / "workspace.toml"
PAGES = [page.url_path for page in page_registry.PREFETCHED]  # the pages whose figures a session prefetches
TIMEOUT = 180

BUILT: list[tuple[Any, ...]] = []


def counted_bar(frame: pd.DataFrame, *, title: str = "") -> go.Figure:
    """A builder that records each time it really builds."""
    BUILT.append((len(frame), title, frame.attrs.get("tag")))
    return go.Figure(go.Bar(x=list(frame["x"]), y=list(frame["y"])), layout={"title": {"text": title}})


def as_json(fig: go.Figure) -> Any:
    return json.loads(pio.to_json(fig, validate=False))


def test_a_figure_is_built_once_per_distinct_input() -> None:
    BUILT.clear()
    frame = pd.DataFrame({"x": ["a", "b"], "y": [1, 2]})
    first = place.figure(counted_bar, frame, title="one")
    again = place.figure(counted_bar, frame.copy(), title="one")  # equal content: a cache hit
    assert len(BUILT) == 1
    assert as_json(first) == as_json(again) == as_json(counted_bar(frame, title="one"))
    BUILT.clear()
    place.figure(counted_bar, frame, title="two")  # other parameters
    place.figure(counted_bar, frame.assign(y=[1, 3]), title="one")  # other data
    tagged = frame.copy()
    tagged.attrs["tag"] = "t"
    place.figure(counted_bar, tagged, title="one")  # same data, other attrs (hashing a frame ignores attrs)
    assert len(BUILT) == 3


def test_a_cached_figure_can_still_be_changed_without_touching_the_cache() -> None:
    frame = pd.DataFrame({"x": ["a"], "y": [5]})
    fig = place.figure(counted_bar, frame, title="mutable")
    fig.update_layout(meta={"name": "changed"})
    assert "meta" not in as_json(place.figure(counted_bar, frame, title="mutable"))["layout"]


@pytest.mark.slow
@pytest.mark.skipif(not DEMO.exists(), reason=f"the demo workspace {DEMO} is absent (make demo)")
def test_every_page_figure_from_the_cache_equals_a_fresh_build(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Any, tuple[Any, ...], dict[str, Any]]] = []
    real = ui.figure

    def recording(builder: Any, *args: Any, **params: Any) -> go.Figure:
        calls.append((builder, args, params))
        return real(builder, *args, **params)

    monkeypatch.setattr(ui, "figure", recording)
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.session_state["workspace_path"] = str(DEMO)
    at.run()
    visit_every_tab(at, PAGES)
    at.session_state["combine_seeds"] = False  # the demo's seeds separately: the per-run leaderboard bar too
    at.switch_page("pages/overview.py").run()
    names = {builder.__name__ for builder, _, _ in calls}
    assert names >= {
        "leaderboard_bar",
        "overview_bar",
        "slot_f1_bar",
        "outcome_mix_bar",
        "confusion_heatmap",
        "grouped_jga_bar",
        "depth_lines",
        "compounding_figure",
        "first_error_bar",
        "origins_bar",
        "agreement_heatmap",
        "gap_bar",
        "turn_strip",
    }, names
    for builder, args, params in calls:
        fresh = as_json(builder(*args, **params))
        assert as_json(real(builder, *args, **params)) == fresh, builder.__name__
        assert as_json(real(builder, *args, **params)) == fresh, builder.__name__  # certainly a cache hit
