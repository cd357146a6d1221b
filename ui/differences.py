"""The turns behind a difference, on any page: a click on a delta bar, a significance-matrix cell or a heatmap
cell picks (run A, run B, domain, slot); `turn_lists` then lists the paired turns only A gets right and those
only B gets right (`views.differing_turns`), and a row opens the Dialogue viewer side by side at that turn.

The pick lives in the shared state `diff` (page, run A, run B, domain, slot, and B's own name of the group when
its ontology names it otherwise), which a deep link carries (`ui.links`: `?diff=page|A|B|domain|slot|own`), so
a link to a page reopens the lists it showed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from analysis import views
from ui import clicks, data, state
from ui.navigate import open_dialogue
from ui.place import show_table
from ui.text import md

STATE = "diff"
SEPARATOR = "|"
SIDE_TITLES = {"only_a": "Only A right", "only_b": "Only B right"}


def pick(
    page: str, run_a: str, run_b: str, domain: str | None = None, slot: str | None = None, own_b: str | None = None
) -> None:
    """Remember the difference clicked on `page`: its two runs and its group (none: the whole state), and B's
    own name of the group (`own_b`, another language's)."""
    state.put(**{STATE: (page, run_a, run_b, domain or "", slot or "", own_b or "")})


def picked(page: str, runs: Sequence[str]) -> tuple[str, str, str | None, str | None, str | None] | None:
    """The difference picked on `page`, when both its runs are still among `runs`."""
    value = state.get(STATE)
    if not value or len(value) not in (5, 6) or value[0] != page:
        return None
    _, run_a, run_b, domain, slot, own_b = (*value, "")[:6]
    if run_a not in runs or run_b not in runs or run_a == run_b:
        return None
    return run_a, run_b, domain or None, slot or None, own_b or None


def to_link(value: Any) -> str:
    return SEPARATOR.join(str(v) for v in value) if value else ""


def from_link(text: str) -> tuple[str, ...] | None:
    parts = tuple(text.split(SEPARATOR))
    return parts if len(parts) in (5, 6) else None


def clickable_pairs(fig: go.Figure, *, filled: bool = False) -> go.Figure:
    """Over a runs x runs heatmap (the significance matrix), one transparent marker per off-diagonal cell,
    significant or not (a blank cell's turns are as worth reading), carrying the cell's hover text (strings,
    which `ui.clicks.clickable_cells` does not take): a click selects a point whose `y` is the row and `x` the
    column. `filled`: only the cells with a value (a language matrix: a group with a counterpart)."""
    for trace in list(fig.data):
        if trace.type != "heatmap" or trace.x is None or trace.y is None:
            continue
        xs, ys = list(trace.x), list(trace.y)
        hover = trace.customdata
        values = clicks.numbers(trace.z) if filled and trace.z is not None else None
        cells = [
            (r, c)
            for r in range(len(ys))
            for c in range(len(xs))
            if ys[r] != xs[c] and (values is None or values[r][c] == values[r][c])
        ]
        if not cells:
            continue
        fig.add_scatter(
            x=[xs[c] for _, c in cells],
            y=[ys[r] for r, _ in cells],
            customdata=[hover[r][c] if hover is not None else "" for r, c in cells],
            hovertemplate="%{customdata}<br>click: the turns behind it<extra></extra>",
            mode="markers",
            marker={"size": 28, "opacity": 0, "color": "#000000"},
            showlegend=False,
            name="",
        )
    return fig


def turn_lists(page: str, runs: Sequence[str], *, what: str = "", key: str | None = None) -> None:
    """The two lists of the difference picked on `page` (nothing when none is); a row opens the viewer at that
    turn, run A beside run B. `what`: how the page names the difference (e.g. "JGA per domain")."""
    chosen = picked(page, runs)
    if chosen is None:
        return
    run_a, run_b, domain, slot, own_b = chosen
    resolved, choice = state.resolve([run_a, run_b])
    params = {"domain": domain, "slot": slot, **({"own_b": own_b} if own_b else {})}
    found = data.compute(views.differing_turns, resolved, params, choice)
    group = f"{domain}-{slot}" if slot else (domain or "the whole state")
    if own_b:
        group += f" (in B: {own_b})"
    paired = f"{found['counts']['paired_turns']:,} paired turns{' where ' + group + ' occurs' if domain else ''}"
    show_lists(
        found,
        run_a,
        run_b,
        group=group,
        where=(
            f"{paired}; a run is right on a turn when "
            f"{'its whole state is right' if domain is None else 'its ' + group + ' is right there'}"
            + (f" (the difference in {what} moves with these turns)" if what else "")
        ),
        key=key or f"diff_{page}",
    )


def show_lists(found: dict[str, Any], run_a: str, run_b: str, *, group: str, where: str, key: str) -> None:
    """Lists of `views.differing_turns` (or of a function returning its shape) side by side under a heading
    naming the group and the runs; `where` says which turns they are drawn from and what right means. A row
    opens the viewer at that turn, run A beside run B."""
    counts = found["counts"]
    st.markdown("**" + md(f"Turns behind the difference, {group}: A = {run_a}, B = {run_b}") + "**")
    st.caption(md(f"{where}. Pick a row to open the Dialogue viewer there, side by side."))
    columns = st.columns(2)
    for column, side in zip(columns, views.SIDES, strict=True):
        with column:
            n = counts[side]
            title = SIDE_TITLES[side].format(a=run_a, b=run_b)
            st.text(f"{title}: {n['turns']:,} turns in {n['dialogues']:,} dialogues")
            row = show_table(
                found[side],
                key=f"{key}_{side}",
                name=f"{title} {group}",
                select=True,
                height=280,
            )
            if row is not None:
                state.put(compare=run_b)
                open_dialogue(run_a, str(row["dialogue_id"]), int(row["turn_index"]))
