"""Compute the other pages' first views in the background once a page is drawn.

A researcher reads the first page for a few seconds; meanwhile the server computes what the Slots,
Domains, Turn depth, Cross-lingual and Dialogue viewer pages ask for first (per-domain and per-depth JGA with their
bootstrap intervals are the slow ones), so the first visit of each page finds its views cached. Then
the figures those pages draw first from them (`figure_plan`; building a Plotly figure costs 30-90 ms).

The plan lists each page's first `ui.compute` calls with its default widgets: same function, same
arguments, same parameters, hence the same cache key. `tests/test_prefetch.py` checks every planned
call, and every planned figure, is one the pages really make, so prefetching never computes what nobody asks for. Streamlit's
cache holds one compute lock per key: a page asking while the prefetch computes waits for that
result instead of computing it twice.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import plotly.graph_objects as go
import streamlit as st

import ui
from analysis import figures, views
from analysis.crosslingual import mapping_from_manifest
from analysis.diagnostics import AGREEMENT
from ui import data, place, state

LOG = logging.getLogger(__name__)

Call = tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]
# A figure a page draws from a view: (builder, the view's call, path into the view's result, builder parameters).
FigureCall = tuple[Callable[..., go.Figure], Call, tuple[str, ...], dict[str, Any]]


def plan(
    runs: list[str],
    focus: str,
    pair: tuple[str, str] | None = None,
    overrides: tuple[tuple[str, str], ...] = (),
    cell: str = "only_a",
) -> list[Call]:
    """The first views of each page after the first, in sidebar order (the order a user tends to visit).
    `pair`, `overrides`, `cell`: the Cross-lingual page's runs A and B, their manifest slot mapping and
    drill-down cell, as that page will choose them."""
    crosslingual: list[Call] = []
    if pair is not None:
        a, b = pair
        crosslingual = [
            (views.crosslingual_summary, (a, b), {"overrides": overrides}),
            (views.crosslingual_turns, (a, b), {"cell": cell, "overrides": overrides, "slot_a": None}),
        ]
    return [
        (views.slot_table, (focus,), {}),  # Slots
        (views.outcome_mix, (focus,), {"by": "slot"}),
        (views.domain_jga, (runs,), {}),  # Domains
        (views.outcome_mix, (focus,), {"by": "domain"}),
        (views.attribute_columns, (runs,), {}),
        (views.depth_jga, (runs,), {}),  # Turn depth
        (views.origins_by_depth, (runs[: ui.ORIGIN_PANELS],), {}),
        (views.first_error_distribution, (runs,), {}),
        (views.history_pairs_of, (runs,), {}),
        *crosslingual,  # Cross-lingual
        (views.dialogue_index, (focus,), {}),  # Dialogue viewer
    ]


def figure_plan(
    runs: list[str],
    focus: str,
    colours: dict[str, str],
    pair: tuple[str, str] | None = None,
    overrides: tuple[tuple[str, str], ...] = (),
) -> list[FigureCall]:
    """The figures the Slots, Domains, Turn depth and Cross-lingual pages draw from the planned views, with
    the pages' own arguments (titles included): `ui.figure` then finds them built. `colours`: `ui.colours()`."""
    crosslingual: list[FigureCall] = []
    if pair is not None:
        a, b = pair
        summary: Call = (views.crosslingual_summary, (a, b), {"overrides": overrides})
        crosslingual = [
            (figures.agreement_heatmap, summary, ("cells",), {"run_a": a, "run_b": b}),
            *[
                (figures.gap_bar, summary, ("gaps", by), {"by": label, "value": "gap"})
                for by, label in (("slot", "slot_a"), ("domain", "domain_a"), ("turn_index", "turn_index"))
            ],
        ]
    return [
        (figures.slot_f1_bar, (views.slot_table, (focus,), {}), (), {"run_id": focus, "colour": colours[focus]}),
        (
            figures.outcome_mix_bar,
            (views.outcome_mix, (focus,), {"by": "slot"}),
            (),
            {"title": f"Error outcomes per slot — {focus}"},
        ),
        (
            figures.grouped_jga_bar,
            (views.domain_jga, (runs,), {}),
            (),
            {"by": "domain", "colours": colours, "title": "JGA per domain"},
        ),
        (
            figures.outcome_mix_bar,
            (views.outcome_mix, (focus,), {"by": "domain"}),
            (),
            {"title": f"Error outcomes per domain — {focus} (focus run)"},
        ),
        (figures.depth_lines, (views.depth_jga, (runs,), {}), (), {"colours": colours}),
        (figures.first_error_bar, (views.first_error_distribution, (runs,), {}), (), {"colours": colours}),
        (figures.origins_bar, (views.origins_by_depth, (runs[: ui.ORIGIN_PANELS],), {}), (), {}),
        *crosslingual,
    ]


def warmups(runs: list[str]) -> list[Call]:
    """Per-run interval jobs, the slow part of the Domains and Turn depth views, in small pieces: memoised
    on each scored run (`views.jga_interval`), so those views then only assemble. Short background steps
    let the prefetch yield to pages between them."""
    return [(views.jga_interval, (run,), {"by": by}) for by in ("domain", "turn_index") for run in runs]


def crosslingual_choice(runs: list[str], mappings: list[dict[str, Any]], session: Any) -> tuple[str, str] | None:
    """Runs A and B as the Cross-lingual page picks them: the session's choice when still valid, else the
    default pair (`views.default_pair`), else the first runs; the same rule as `ui.select`."""
    if len(runs) < 2:
        return None
    pair = views.default_pair(runs, mappings)
    chosen_a, chosen_b = session.get("run_a"), session.get("run_b")
    a = chosen_a if chosen_a in runs else (pair[0] if pair and pair[0] in runs else runs[0])
    others = [r for r in runs if r != a]
    b = chosen_b if chosen_b in others else (pair[1] if pair and pair[1] in others else others[0])
    return a, b


_running = 0  # page scripts being computed now, in any session
_running_lock = threading.Lock()
MAX_WAIT = 10.0  # seconds a prefetch job yields to running pages before it goes ahead anyway


@contextmanager
def page_running() -> Iterator[None]:
    """Mark a page script as running: the prefetch starts no new job meanwhile, so a page the user
    opened does not share the interpreter with work nobody asked for yet."""
    global _running
    with _running_lock:
        _running += 1
    try:
        yield
    finally:
        with _running_lock:
            _running -= 1


def _wait_for_pages() -> None:
    deadline = time.monotonic() + MAX_WAIT
    while _running > 0 and time.monotonic() < deadline:
        time.sleep(0.02)


Job = tuple[Callable[..., Any], tuple[Any, ...]]


def view_job(fn: Callable[..., Any], args: list[Any], params: dict[str, Any], choice: str) -> Any:
    """A planned view, computed into the cache the page reads (`args` resolved by `ui.resolve`)."""
    return data.compute(fn, args, params, choice)


def figure_job(
    builder: Callable[..., go.Figure],
    call: tuple[Callable[..., Any], list[Any], dict[str, Any]],
    path: tuple[str, ...],
    params: dict[str, Any],
    choice: str,
) -> go.Figure:
    """A planned figure, built into the cache `ui.figure` reads (`call`'s args resolved by `ui.resolve`)."""
    fn, args, view_params = call
    result = data.compute(fn, args, view_params, choice)
    for step in path:
        result = result[step]
    return place.figure(builder, result, **params)


def _work(jobs: list[Job]) -> None:
    for run, args in jobs:
        _wait_for_pages()
        try:
            run(*args)
        except Exception:  # the page that asks for this view shows the error itself
            LOG.debug("prefetch job %s%r failed", run.__qualname__, args[:1], exc_info=True)


def start() -> bool:
    """Start computing the plan for the session's current runs, focus and convention, once per
    combination. Returns whether a prefetch was started."""
    runs = state.selected_runs()
    if not runs:
        return False
    focus = state.focus_run() or runs[0]
    sources = state.sources()
    signature = (
        tuple(sources[r].key for r in runs if r in sources),
        focus,
        state.convention_choice(),
        st.session_state.get("run_a"),
        st.session_state.get("run_b"),
    )
    if st.session_state.get("_prefetched") == signature:
        return False
    st.session_state["_prefetched"] = signature
    workspace = st.session_state.get("workspace")
    mappings = list(workspace.mappings) if workspace is not None else []
    pair = crosslingual_choice(runs, mappings, st.session_state)
    overrides: tuple[tuple[str, str], ...] = ()
    if pair is not None:
        overrides = tuple(sorted(mapping_from_manifest(mappings, *pair).items()))
    cell = st.session_state.get("cell")
    views_first = plan(runs, focus, pair, overrides, cell if cell in AGREEMENT else "only_a")
    figures_first = figure_plan(runs, focus, ui.colours(), pair, overrides)

    def view(call: Call) -> Job:
        fn, args, params = call
        resolved, choice = ui.resolve(args)
        return (view_job, (fn, resolved, params, choice))

    def figure(planned: FigureCall) -> Job:
        builder, (fn, args, params), path, figure_params = planned
        resolved, choice = ui.resolve(args)
        return (figure_job, (builder, (fn, resolved, params), path, figure_params, choice))

    # Slots first (next in the sidebar), then the slow intervals, then the rest.
    jobs: list[Job] = [
        *map(view, views_first[:2]),
        *map(figure, figures_first[:2]),
        *map(view, warmups(runs)),
        *map(view, views_first[2:]),
        *map(figure, figures_first[2:]),
    ]
    threading.Thread(target=_work, args=(jobs,), name="dst-prefetch", daemon=True).start()
    return True
