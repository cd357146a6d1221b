"""Compute the other pages' first views in the background once a page is drawn.

A researcher reads the first page for a few seconds; meanwhile the server computes what the Slots,
Domains, Turn depth, Cross-lingual and Dialogue viewer pages ask for first (per-domain and per-depth JGA with their
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
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import streamlit as st

import ui
from analysis import views
from analysis.crosslingual import mapping_from_manifest
from analysis.diagnostics import AGREEMENT
from ui import data, state

LOG = logging.getLogger(__name__)

Call = tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]


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


def _work(jobs: list[tuple[Callable[..., Any], list[Any], dict[str, Any], str]]) -> None:
    for fn, args, params, choice in jobs:
        _wait_for_pages()
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
    jobs = []
    for fn, args, params in [*views_first[:2], *warmups(runs), *views_first[2:]]:
        resolved, choice = ui.resolve(args)
        jobs.append((fn, resolved, params, choice))
    threading.Thread(target=_work, args=(jobs,), name="dst-prefetch", daemon=True).start()
    return True
