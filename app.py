"""The dashboard's frame: `st.navigation` over the pages of `page_registry`, the shared sidebar, deep links.

Run with `make run WORKSPACE=path` or `streamlit run app.py -- --workspace path`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import streamlit as st

from page_registry import PAGES  # light: the page list, not the pages' declared views

ROOT = Path(__file__).resolve().parent
DEFAULT_WORKSPACE = ROOT / "data" / "demo" / "workspace.toml"


def workspace_argument(argv: list[str]) -> str:
    """`--workspace PATH` from the arguments after `--` (default: the demo workspace), made absolute."""
    from ui.data import manifest_path  # not at the top: imported after the loading placeholder is sent

    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--workspace", default=str(DEFAULT_WORKSPACE))
    known, _ = parser.parse_known_args(argv)
    return manifest_path(known.workspace)


def loading_placeholder() -> Any:
    """On a session's first run only: a Plotly panel saying the workspace is loading, removed once the
    page is drawn. It is a Plotly chart on purpose: the browser starts fetching and compiling the 4.7 MB
    Plotly bundle while the server is still importing and loading runs, instead of after; on a fresh
    server that brings the first real chart about a second sooner."""
    if "workspace_path" in st.session_state:
        return None
    import plotly.graph_objects as go

    figure = go.Figure(layout={"height": 90, "margin": {"l": 0, "r": 0, "t": 0, "b": 0}})
    figure.add_annotation(text="Loading the workspace…", showarrow=False, xref="paper", yref="paper", x=0, y=0.5)
    figure.update_xaxes(visible=False)
    figure.update_yaxes(visible=False)
    placeholder = st.empty()
    placeholder.plotly_chart(figure, config={"staticPlot": True}, key="loading_placeholder")
    return placeholder


st.set_page_config(page_title="DST error analysis", page_icon=":material/troubleshoot:", layout="wide")
current = st.navigation([st.Page(p.path, title=p.title, url_path=p.url_path, icon=p.icon) for p in PAGES])
page_name = current.url_path or PAGES[0].url_path
loading = loading_placeholder()
from ui import links, prefetch, sidebar  # noqa: E402  (imported after the placeholder is sent: pandas and analysis take ~0.5 s)
from ui.errors import guarded  # noqa: E402

# Every step in `guarded`: an error shows one short line in place (logged on the server), never a traceback,
# and the sidebar and the other pages stay usable.
with prefetch.page_running():  # the background prefetch waits while any page is being computed
    loaded = guarded("opening the workspace", sidebar.load, workspace_argument(sys.argv[1:])) and guarded(
        "reading the link", links.apply, {p.url_path: p.file for p in PAGES}, page_name
    )
    with st.sidebar:  # drawn even when the workspace failed: another one can be opened there
        guarded("drawing the sidebar", sidebar.render)
    if loaded:
        guarded("this page", current.run)
        links.write(page_name)
    if loading is not None:
        loading.empty()
prefetch.start(delay=prefetch.FIRST_DELAY if loading is not None else 0.0)  # the other pages' first views
