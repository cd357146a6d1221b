"""Deep links: the URL's query parameters <-> the shared session state.

`?page=dialogue&runs=a,b&run=a&dialogue=MUL0001&turn=3&slot=hotel-area&convention=exact` opens the
same view in another browser; `view` names the chosen tab of a page with tabs (`ui.tabs`); `diff` the difference whose turns a page lists
(`ui.differences`); `reviewer` and `review_*` the Review page's reviewer name and queue filters. Parameters
are applied when they differ from what this session last wrote (a pasted link, a reload), and rewritten
after every run of a page.

A link is text anyone can write, so its values are checked against the workspace before they are used:
unknown runs, conventions and pages are dropped here with a notice in the sidebar; a dialogue, slot or
view is checked by the widget that shows it (`state.select`, `state.tabs`: `PENDING`), against the
options the page offers, and an unknown one is replaced by the page's default with a notice; until then
it is not written back to the URL. Notices quote the value as plain text, shortened.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from analysis.conventions import CONVENTIONS
from analysis.review.items import MAX_REVIEWER
from ui import differences, state
from ui.data import DECLARED

PARAMS = ("page", "runs", "run", "dialogue", "turn", "slot", "convention", "compare", "view", "diff")
# The Review page's reviewer name and queue filters (URL parameter = state key), so a reload keeps them; the
# name is written on every page (the viewer's tag form uses it too), the filters on the Review page.
REVIEWER = "reviewer"
REVIEW_FILTERS = ("review_runs", "review_domain", "review_slot", "review_outcome", "review_tag", "review_status")
REVIEW_CHECKED = ("review_domain", "review_slot", "review_outcome", "review_tag", "review_status")


def quoted(value: str, limit: int = 60) -> str:
    """A value from the URL as a notice quotes it: repr'd, and cut at `limit` characters."""
    return repr(value if len(value) <= limit else value[:limit] + "…")


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
            notes.append(f"runs in the link that this session does not have: {', '.join(map(quoted, missing))}")
        values["runs"] = [r for r in wanted if r in known] or state.selected_runs()
    for name in ("run", "compare"):
        if params.get(name) and params[name] in known:
            values[name] = params[name]
        elif params.get(name):
            notes.append(f"{name} in the link is not a run of this session, ignored: {quoted(params[name])}")
    if params.get("convention") in (DECLARED, *CONVENTIONS):
        values["convention"] = params["convention"]
    elif params.get("convention"):
        notes.append(
            f"convention in the link is not one of {', '.join(CONVENTIONS)}, ignored: {quoted(params['convention'])}"
        )
    page = params.get("page")
    if page and page not in page_paths:
        notes.append(f"page in the link is not a page of this dashboard, ignored: {quoted(page)}")
    pending: dict[str, str] = {}
    for name in ("dialogue", "slot"):
        if params.get(name):
            values[name] = pending[name] = params[name]
    if params.get("view"):
        view = state.view_state(page if page in page_paths else current_page)
        values[view] = pending[view] = params["view"]
    if params.get(REVIEWER):
        values[REVIEWER] = params[REVIEWER].strip()[:MAX_REVIEWER]
    if params.get("review_runs"):
        values["review_runs"] = [r for r in params["review_runs"].split(",") if r in known]
    for name in REVIEW_CHECKED:  # checked by the filter's select box against its choices (`state.select`)
        if params.get(name):
            values[name] = pending[name] = params[name]
    st.session_state[state.PENDING] = pending
    if params.get("diff"):  # the difference whose turns a page lists (ui.differences): page|A|B|domain|slot
        picked = differences.from_link(params["diff"])
        if picked is None:
            notes.append(
                f"diff in the link is not page|run A|run B|domain|slot[|B's name], ignored: {quoted(params['diff'])}"
            )
        else:
            values[differences.STATE] = picked
    if params.get("turn"):
        try:
            values["turn"] = int(params["turn"])
        except ValueError:
            notes.append(f"turn must be a number, got {quoted(params['turn'])}")
    if values.get("run") and values["run"] in known and values["run"] not in values.get("runs", state.selected_runs()):
        values["runs"] = [*values.get("runs", state.selected_runs()), values["run"]]
    state.put(**values)
    st.session_state["link_notes"] = notes
    if page and page != current_page and page in page_paths:
        st.switch_page(page_paths[page], query_params=params)


def write(page: str) -> None:
    """Rewrite the query parameters from the shared state (only when they changed)."""
    params: dict[str, str] = {"page": page}
    unchecked = st.session_state.get(state.PENDING) or {}  # from a link, not yet checked by its page
    runs = state.selected_runs()
    if runs:
        params["runs"] = ",".join(runs)
    focus = state.focus_run()
    if focus:
        params["run"] = focus
    for name in ("dialogue", "slot", "compare"):
        value = state.get(name)
        if value and name not in unchecked:
            params[name] = str(value)
    view = state.get(state.view_state(page))
    if view and state.view_state(page) not in unchecked:
        params["view"] = str(view)
    if state.get(REVIEWER):
        params[REVIEWER] = str(state.get(REVIEWER))
    if page == "review":
        for name in REVIEW_FILTERS:
            value = state.get(name)
            if value and name not in unchecked:
                params[name] = ",".join(value) if isinstance(value, list) else str(value)
    picked = state.get(differences.STATE)
    if picked and picked[0] == page:
        params["diff"] = differences.to_link(picked)
    if state.get("turn") is not None and state.get("dialogue"):
        params["turn"] = str(state.get("turn"))
    choice = state.convention_choice()
    if choice != "declared":
        params["convention"] = choice
    if _current() != params:
        st.query_params.from_dict(params)
    st.session_state["_links_written"] = params
