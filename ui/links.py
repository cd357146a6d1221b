"""Deep links: the URL's query parameters <-> the shared session state.

`?page=dialogue&runs=a,b&run=a&dialogue=MUL0001&turn=3&slot=hotel-area&convention=exact` opens the
same view in another browser; `view` names the chosen tab of a page with tabs (`ui.tabs`). Parameters
are applied when they differ from what this session last wrote (a pasted link, a reload), and rewritten
after every run of a page.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from ui import state

PARAMS = ("page", "runs", "run", "dialogue", "turn", "slot", "convention", "compare", "view")


def _current() -> dict[str, str]:
    return {k: st.query_params.get(k, "") for k in st.query_params.keys()}  # noqa: SIM118


def apply(page_paths: dict[str, str], current_page: str) -> None:
    """Apply the URL's parameters to the shared state; switch page when `page` names another one."""
    params = _current()
    if not params or params == st.session_state.get("_links_written"):
        return
    if params == st.session_state.get("_links_applied"):
        return
    st.session_state["_links_applied"] = params
    known = state.sources()
    notes: list[str] = []
    values: dict[str, Any] = {}
    if params.get("runs"):
        wanted = [r for r in params["runs"].split(",") if r]
        missing = [r for r in wanted if r not in known]
        if missing:
            notes.append(f"runs in the link that this session does not have: {', '.join(missing)}")
        values["runs"] = [r for r in wanted if r in known] or state.selected_runs()
    for name in ("run", "dialogue", "slot", "convention", "compare"):
        if params.get(name):
            values[name] = params[name]
    page = params.get("page")
    if params.get("view"):
        values[state.view_state(page or current_page)] = params["view"]
    if params.get("turn"):
        try:
            values["turn"] = int(params["turn"])
        except ValueError:
            notes.append(f"turn must be a number, got {params['turn']!r}")
    if values.get("run") and values["run"] in known and values["run"] not in values.get("runs", state.selected_runs()):
        values["runs"] = [*values.get("runs", state.selected_runs()), values["run"]]
    state.put(**values)
    st.session_state["link_notes"] = notes
    if page and page != current_page and page in page_paths:
        st.switch_page(page_paths[page], query_params=params)


def write(page: str) -> None:
    """Rewrite the query parameters from the shared state (only when they changed)."""
    params: dict[str, str] = {"page": page}
    runs = state.selected_runs()
    if runs:
        params["runs"] = ",".join(runs)
    focus = state.focus_run()
    if focus:
        params["run"] = focus
    for name in ("dialogue", "slot", "compare"):
        value = state.get(name)
        if value:
            params[name] = str(value)
    view = state.get(state.view_state(page))
    if view:
        params["view"] = str(view)
    if state.get("turn") is not None and state.get("dialogue"):
        params["turn"] = str(state.get("turn"))
    choice = state.convention_choice()
    if choice != "declared":
        params["convention"] = choice
    if _current() != params:
        st.query_params.from_dict(params)
    st.session_state["_links_written"] = params
