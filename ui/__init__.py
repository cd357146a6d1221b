"""Streamlit-side helpers of the dashboard: cached computing, shared state, deep links, placement.

Pages use only this surface: `runs`, `focus`, `compute`, `colours`, `select`/`toggle`/`tabs`, `figure`,
`show_figure`, `show_table`, `warn_incomparable`, `loaded`, `open_dialogue`, `need_runs`, `drawn_runs`,
`scope_caption` (and `board_rows`, which `drawn_runs` and the prefetch share).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import streamlit as st

import page_registry
from analysis import views
from analysis.figures import run_colours
from analysis.model import RunInfo
from ui import data, navigate, notice, state
from ui.navigate import open_dialogue
from ui.place import figure, show_figure, show_table
from ui.state import multiselect, resolve, select, tabs, toggle
from ui.text import md

DIALOGUE_PAGE = navigate.DIALOGUE_PAGE

__all__ = [
    "ORIGIN_PANELS",
    "board_rows",
    "colours",
    "compute",
    "drawn_runs",
    "ensure_frame",
    "figure",
    "focus",
    "get",
    "loaded",
    "md",
    "meta",
    "multiselect",
    "need_runs",
    "open_dialogue",
    "put",
    "resolve",
    "runs",
    "scope_caption",
    "scorer_read",
    "select",
    "show_figure",
    "show_table",
    "switch_tab",
    "tabs",
    "toggle",
    "update_link",
    "warn_incomparable",
    "workspace_mappings",
]


def runs() -> list[str]:
    """The runs picked in the sidebar, in workspace order."""
    return state.selected_runs()


def focus() -> str | None:
    """The sidebar's focus run (for single-run views)."""
    return state.focus_run()


def meta(run_id: str) -> RunInfo:
    """What the run is (its manifest entry's metadata, or an upload's)."""
    return state.sources()[run_id].meta


def colours(sources: Mapping[str, data.RunSource] | None = None) -> dict[str, str]:
    """One fixed colour per run of the session (workspace order), shared by every figure; `sources`:
    those runs when there is no session (the server's warm-up)."""
    return run_colours(list(state.sources() if sources is None else sources))


def workspace_mappings() -> list[dict[str, Any]]:
    workspace = st.session_state.get("workspace")
    return list(workspace.mappings) if workspace is not None else []


# Inherited vs new errors: one panel per run, beyond four the panels get too small to read.
ORIGIN_PANELS = page_registry.ORIGIN_PANELS  # declared there, for the Turn depth page's first views


def compute(fn: Callable[..., Any], *args: Any, **params: Any) -> Any:
    """Call an `analysis` function with run ids replaced by scored runs (a list of ids: a list of
    scored runs), under the sidebar's convention; cached on file stamps, convention and arguments."""
    resolved, choice = resolve(args)
    return data.compute(fn, resolved, params, choice)


def loaded(run_id: str) -> data.Loaded:
    """The run as loaded from its files (not scored), as an argument of `compute`: the analysis function
    gets the `Run` (or its one-line error), cached on the run's files."""
    return data.Loaded(state.sources()[run_id])


def ensure_frame(page: str) -> None:
    """Run the frame (app.py) first when a page was started without it.

    On a fresh server, Streamlit serves the first request from the `pages/` folder (its older
    multipage mode) until app.py has called `st.navigation` once; a deep link opened first would then
    run the page alone, without the sidebar or the runs. Hand over to app.py with the link intact.
    """
    if "workspace_path" in st.session_state:
        return
    params = {k: st.query_params.get(k, "") for k in st.query_params.keys()}  # noqa: SIM118
    st.switch_page("app.py", query_params={**params, "page": params.get("page") or page})


def warn_incomparable(run_ids: Sequence[str], *, about: Sequence[str] = ("convention",)) -> None:
    """One compact notice (`ui.notice`) naming each way the runs a chart or table sets side by side cannot be
    compared, which expands into the sentences; by default only mixed conventions, the difference nobody typed: under the sidebar's "as declared per run" each
    run is scored under its own (manifest key, else the workspace's, else its format's). The Overview
    checks every difference (`views.comparability_warnings` on its leaderboard)."""
    notice.comparability_notice(compute(views.comparability_warnings, list(run_ids), about=tuple(about)))


def scorer_read(run_ids: Sequence[str], focus: str | None = None) -> tuple[list[str], str | None]:
    """The runs (and the focus run, None when left out) whose gold their convention's scorer reads. The
    others, every number under the scorer's name n/a (`views.unread_gold`), are named once in the page's
    notice with the reason and drawn nowhere on it; the page stops there when nothing is left to draw."""
    asked = list(dict.fromkeys([*run_ids, *([focus] if focus is not None else [])]))
    reasons = compute(views.unread_gold, asked) if asked else {}
    if not reasons:
        return list(run_ids), focus
    st.warning(md(views.unread_notice(reasons)), icon=notice.ICON)
    kept = [r for r in run_ids if r not in reasons]
    kept_focus = focus if focus is not None and focus not in reasons else None
    if not kept and kept_focus is None:
        st.stop()
    return kept, kept_focus


def drawn_runs(
    runs: list[str], *, page: str, board: Any = None, metric: str | None = None, verb: str = "Drawn"
) -> tuple[list[str], Any]:
    """The runs a page's charts draw, and their leaderboard rows: every run up to `CHART_RUNS`; beyond, the
    best by a metric (the page's own `metric` and `board`, else a select box of the leaderboard's metrics) or
    those a search finds, with a caption saying which (`analysis.views.shown.chart_runs`). The leaderboard
    comes from the score store when it holds every run (one small file per run)."""
    from analysis.suite import LABELS
    from analysis.views.shown import CHART_RUNS, chart_runs

    if len(runs) <= CHART_RUNS:
        return runs, board
    columns = st.columns([1, 2])
    asked = metric is None
    if metric is None:
        metric = select(
            f"{verb}: the best {CHART_RUNS} runs by",
            list(views.LEADERBOARD_METRICS),
            state=f"{page}_drawn_metric",
            container=columns[0],
            format_func=lambda k: LABELS.get(k, k),
        )
    search = columns[1 if asked else 0].text_input(
        "Search the runs by name", key=f"{page}_drawn_search", placeholder="part of a run's name"
    )
    if board is None:
        board = board_rows(runs, metric)
    drawn, caption = chart_runs(board, metric=metric, search=search, verb=verb)
    st.caption(md(caption))
    return drawn, board[board["run_id"].isin(drawn)]


def board_rows(
    run_ids: list[str],
    sort: str,
    *,
    selected: list[str] | None = None,
    sources: Mapping[str, data.RunSource] | None = None,
    choice: str | None = None,
) -> Any:
    """The leaderboard rows of `run_ids` sorted by `sort`: out of the board of every selected run when they are
    among them (the board the Overview and every page's `drawn_runs` read: one cached query, where a board of
    999 of 1,000 runs would be another second's read of every run's file), else of those runs alone.
    `selected`, `sources`, `choice`: the session's (the prefetch passes them; it has no session)."""
    selected = state.selected_runs() if selected is None else selected
    pool = selected if set(run_ids) <= set(selected) else list(run_ids)
    pairs, choice = resolve([pool], sources, choice)
    stored = data.stored_leaderboard(pairs[0], sort)
    board = stored[0] if stored is not None else data.compute(views.leaderboard, pairs, {"sort": sort}, choice)
    return board if pool == list(run_ids) else board[board["run_id"].isin(run_ids)].reset_index(drop=True)


def scope_caption(run_ids: str | list[str]) -> str:
    """`views.scope_caption` of the runs (conventions, runs, turns, dialogues). Of more runs than a chart draws,
    the caption of their stored leaderboard when the store holds every run: the board the Overview and
    `drawn_runs` read (cached), not a second query over every run's file (0.9 s at 1,000 runs) for one line."""
    from analysis.views.shown import CHART_RUNS

    if isinstance(run_ids, list) and len(run_ids) > CHART_RUNS:
        stored = data.stored_leaderboard(resolve([run_ids])[0][0], _board_sort())
        if stored is not None:
            return str(stored[1])
    return str(compute(views.scope_caption, run_ids))


def _board_sort() -> str:
    """The metric the Overview's leaderboard is sorted by (its "Sort by", else the first headline metric):
    the board that is read, and cached, first."""
    from analysis.suite import HEADLINE

    chosen = state.get("sort_metric")
    return str(chosen) if chosen in views.LEADERBOARD_METRICS else HEADLINE[0][0]


def need_runs(n: int = 1) -> list[str]:
    """The selected runs, or stop the page with a hint when fewer than `n` are selected."""
    ensure_frame(Path(sys._getframe(1).f_globals.get("__file__", "overview")).stem)
    selected = runs()
    if len(selected) < n:
        st.info(f"Select at least {n} run{'s' if n > 1 else ''} in the sidebar (or open a workspace / upload a run).")
        st.stop()
    return selected


def switch_tab(page: str, label: str) -> None:
    """Choose tab `label` of `page`'s `tabs` and rerun, e.g. after a table row asked for another tab."""
    state.put(**{state.view_state(page): label})
    st.rerun()


def put(**values: Any) -> None:
    """Set shared state, e.g. from a button's `on_click` (`kwargs={"turn": 4}`)."""
    state.put(**values)


def get(name: str, default: Any = None) -> Any:
    return state.get(name, default)


def update_link(page: str) -> None:
    """Rewrite the URL from the shared state (for fragments, which rerun without the frame)."""
    from ui import links

    links.write(page)
