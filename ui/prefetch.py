"""Compute the other pages' first views in the background once a page is drawn.

A researcher reads the first page for a few seconds; meanwhile the server computes what the Slots,
Domains, Turn depth and Dialogue viewer pages ask for first (per-domain and per-depth JGA with their
bootstrap intervals are the slow ones), so the first visit of each page finds its views cached.

The plan lists each page's first `ui.compute` calls with its default widgets: same function, same
arguments, same parameters, hence the same cache key. `tests/test_prefetch.py` checks every planned
call is one the pages really make, so prefetching never computes what nobody asks for. Streamlit's
cache holds one compute lock per key: a page asking while the prefetch computes waits for that
result instead of computing it twice.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import streamlit as st

import ui
from analysis import views
from ui import data, state

LOG = logging.getLogger(__name__)

Call = tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]


def plan(runs: list[str], focus: str) -> list[Call]:
    """The first views of each page after the first, in sidebar order (the order a user tends to visit)."""
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
        (views.dialogue_index, (focus,), {}),  # Dialogue viewer
    ]


def _work(jobs: list[tuple[Callable[..., Any], list[Any], dict[str, Any], str]]) -> None:
    for fn, args, params, choice in jobs:
        try:
            data.compute(fn, args, params, choice)
        except Exception:  # the page that asks for this view shows the error itself
            LOG.debug("prefetch of %s failed", fn.__qualname__, exc_info=True)


def start() -> bool:
    """Start computing the plan for the session's current runs, focus and convention, once per
    combination. Returns whether a prefetch was started."""
    runs = state.selected_runs()
    if not runs:
        return False
    focus = state.focus_run() or runs[0]
    sources = state.sources()
    signature = (tuple(sources[r].key for r in runs if r in sources), focus, state.convention_choice())
    if st.session_state.get("_prefetched") == signature:
        return False
    st.session_state["_prefetched"] = signature
    jobs = []
    for fn, args, params in plan(runs, focus):
        resolved, choice = ui.resolve(args)
        jobs.append((fn, resolved, params, choice))
    threading.Thread(target=_work, args=(jobs,), name="dst-prefetch", daemon=True).start()
    return True
