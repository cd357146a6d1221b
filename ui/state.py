"""Session state for the dashboard: the runs of this session, the shared selections, and widgets whose
value lives in a plain state key (so it survives page switches and can be set by deep links)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import streamlit as st

from ui.data import DECLARED, RunSource
from ui.text import md

# Shared selections: a deep link may set any of them; pages read them through `get`.
SHARED = ("runs", "run", "dialogue", "turn", "slot", "convention", "compare")
# Values a deep link set that only the page can check (a dialogue of the run, a slot, a tab): state key ->
# the linked value, checked and removed by the first widget that shows that state.
PENDING = "_link_pending"


def get(name: str, default: Any = None) -> Any:
    return st.session_state.get(name, default)


def put(**values: Any) -> None:
    """Set shared state (and the mirrored widget value) from a callback or before widgets render."""
    for name, value in values.items():
        st.session_state[name] = value


def sources() -> dict[str, RunSource]:
    """Every run of this session that loaded: the workspace's, then uploads, in that order."""
    return dict(st.session_state.get("sources", {}))


_session_sources = sources  # `resolve` takes a `sources` argument of its own


def selected_runs() -> list[str]:
    known = sources()
    return [r for r in st.session_state.get("runs", []) if r in known]


def focus_run() -> str | None:
    runs = selected_runs()
    run = st.session_state.get("run")
    return run if run in runs else (runs[0] if runs else None)


def convention_choice() -> str:
    return str(st.session_state.get("convention") or DECLARED)


def resolve(
    args: Sequence[Any], sources: Mapping[str, RunSource] | None = None, choice: str | None = None
) -> tuple[list[Any], str]:
    """`args` with run ids replaced by (run source, convention choice) pairs, and the choice itself:
    what `data.compute` takes (and keys its cache on). The session's runs and convention, unless
    `sources` and `choice` are given (the server's warm-up has no session)."""
    known = _session_sources() if sources is None else sources
    choice = convention_choice() if choice is None else choice

    def one(arg: Any) -> Any:
        if isinstance(arg, str) and arg in known:
            return (known[arg], choice)
        if isinstance(arg, list | tuple):
            return [one(a) for a in arg]
        return arg

    return [one(a) for a in args], choice


def _check_link(name: str, label: str, options: Sequence[Any], host: Any) -> None:
    """A notice when the value a deep link gave state `name` is not among the widget's options (it is
    then replaced by the default, as any unknown value is)."""
    pending = st.session_state.get(PENDING) or {}
    if name not in pending:
        return
    linked = pending.pop(name)
    if linked not in options:
        shown = linked if len(linked) <= 60 else linked[:60] + "…"
        host.warning(md(f"{label} in the link is not one of this page's choices, ignored: {shown!r}"))


def _sync(name: str, widget: str | None = None) -> None:
    st.session_state[name] = st.session_state[widget or f"w_{name}"]


def _sync_and_rerun(name: str, widget: str, fragments: tuple[str, ...]) -> None:
    """`_sync`, then rerun the fragments keyed `fragments` (in that order) instead of the widget's own."""
    _sync(name, widget)
    st.rerun(list(fragments))


def _on_change(state: str, widget: str, rerun: Sequence[str] | None) -> dict[str, Any]:
    if rerun:
        return {"on_change": _sync_and_rerun, "args": (state, widget, tuple(rerun))}
    return {"on_change": _sync, "args": (state, widget)}


def choose(current: Any, options: Sequence[Any], hint: Any = None) -> Any:
    """What a `select` shows: `current` when still an option, else `hint` when one, else the first
    option (None without options). The prefetch picks the pages' defaults with it too."""
    if current in options:
        return current
    return hint if hint in options else (options[0] if options else None)


def select(
    label: str,
    options: Sequence[Any],
    *,
    state: str,
    container: Any = None,
    format_func: Callable[[Any], Any] = str,
    widget: str | None = None,
    index_hint: Any = None,
    rerun: Sequence[str] | None = None,
    **kwargs: Any,
) -> Any:
    """A selectbox whose value is `st.session_state[state]` (kept when the widget is not on screen);
    `widget` names the widget key when two widgets show one state (sidebar and page); `index_hint` is
    the value to start from when the state holds none of the options; `rerun`: the keys of the fragments
    a change reruns (`st.fragment(key=...)`), instead of the fragment (or page) holding the widget."""
    widget = widget or f"w_{state}"
    options = list(options)
    host = container or st
    _check_link(state, label, options, host)
    current = st.session_state.get(state)
    if current not in options:
        current = choose(current, options, index_hint)
        st.session_state[state] = current
    st.session_state[widget] = current
    return host.selectbox(
        label, options, key=widget, format_func=format_func, **_on_change(state, widget, rerun), **kwargs
    )


def multiselect(
    label: str,
    options: Sequence[Any],
    *,
    state: str,
    container: Any = None,
    rerun: Sequence[str] | None = None,
    **kwargs: Any,
) -> list[Any]:
    """A multiselect whose values are `st.session_state[state]`; `rerun` as for `select`."""
    widget = f"w_{state}"
    options = list(options)
    current = [v for v in st.session_state.get(state, []) if v in options]
    st.session_state[state] = current
    st.session_state[widget] = current
    host = container or st
    return list(host.multiselect(label, options, key=widget, **_on_change(state, widget, rerun), **kwargs))


def view_state(page: str) -> str:
    """The state key of the chosen tab of `page` (its url path), also the deep link's `view`."""
    return f"view_{page}"


def tabs(labels: Sequence[str], *, page: str) -> list[Any]:
    """Tabs of which only the chosen one is drawn: choosing another reruns the page, and each tab's
    `.open` says whether it is the chosen one, so a page puts only that tab's charts and tables on screen
    (Streamlit's plain tabs send and draw every tab's content, hidden or not). The choice is kept in
    `st.session_state[view_state(page)]` across page switches and set by a deep link's `view`; an
    unknown value falls back to the first tab."""
    name = view_state(page)
    widget = f"w_{name}"
    labels = list(labels)
    _check_link(name, "view", labels, st)
    current = choose(st.session_state.get(name), labels)
    st.session_state[name] = current
    st.session_state[widget] = current
    return list(st.tabs(labels, key=widget, on_change=_sync, args=(name,)))


def toggle(label: str, *, state: str, default: bool = False, container: Any = None, **kwargs: Any) -> bool:
    widget = f"w_{state}"
    st.session_state[widget] = bool(st.session_state.get(state, default))
    st.session_state[state] = st.session_state[widget]
    host = container or st
    return bool(host.toggle(label, key=widget, on_change=_sync, args=(state,), **kwargs))
