"""The shared sidebar, rendered once by app.py: workspace, upload, run picker, focus run, convention."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import streamlit as st

from analysis.conventions import CONVENTIONS
from analysis.errors import InputError
from analysis.formats import format_names
from analysis.safety import check_upload_size, resolve_inside, workspace_root
from ui import data, errors, state
from ui.data import DECLARED
from ui.text import md


def _open_workspace(path: str) -> None:
    """(Re)read the manifest and every run, cached on mtimes; failed runs keep their one-line error."""
    manifest = data.open_manifest(path)
    uploads = {k: v for k, v in st.session_state.get("sources", {}).items() if v.uploaded}
    if isinstance(manifest, str):
        st.session_state["workspace_error"] = manifest
        st.session_state["workspace"] = None
        st.session_state["sources"] = uploads
        st.session_state["failed"] = {}
        return
    st.session_state["workspace_error"] = None
    st.session_state["workspace"] = manifest
    progress = st.sidebar.empty()
    loaded = st.session_state.get("_loaded_keys", set())

    def announce(i: int, source: data.RunSource) -> None:
        if source.key not in loaded:
            progress.caption(md(f"loading {source.run_id} ({i + 1}/{len(manifest.entries)})…"))

    sources, failed = data.load_workspace(manifest, announce)
    progress.empty()
    st.session_state["_loaded_keys"] = {s.key for s in sources.values()}
    for name, source in uploads.items():
        sources.setdefault(name, source)
    st.session_state["sources"] = sources
    st.session_state["failed"] = failed


def _on_open() -> None:
    typed = st.session_state.get("w_workspace_path", "").strip()
    if typed == st.session_state.get("workspace_path"):
        return
    try:
        # A shared server reads only below its root: no `..`, no absolute paths elsewhere, no symlinks out.
        path = str(resolve_inside(workspace_root(), typed))
    except Exception as exc:  # a callback's exception would replace the page with a traceback
        st.session_state["path_error"] = errors.message(exc, "opening the manifest path")
        return
    st.session_state["path_error"] = None
    st.session_state["workspace_path"] = path
    st.session_state["runs"] = None  # select every run of the newly opened workspace


def _unique_name(name: str) -> str:
    known = state.sources()
    candidate, i = name, 2
    while candidate in known:
        candidate = f"{name}-{i}"
        i += 1
    return candidate


def _upload_key(name: str) -> str:
    """The file uploaders' keys, renewed after every "Add run" (`upload_round`): the old widgets and the
    bytes Streamlit holds for them go, whether the run was added (it is parsed: the bytes are not needed)
    or refused (nothing of it is kept)."""
    return f"{name}_{st.session_state.get('upload_round', 0)}"


def _add_upload() -> None:
    try:
        _try_upload()
    except Exception as exc:  # a callback's exception would replace the page with a traceback
        st.session_state["upload_result"] = ("error", errors.message(exc, "loading the upload"), [])
    finally:
        st.session_state["upload_round"] = st.session_state.get("upload_round", 0) + 1


def _try_upload() -> None:
    pred = st.session_state.get(_upload_key("w_upload_pred"))
    gold = st.session_state.get(_upload_key("w_upload_gold"))
    fmt = st.session_state.get("w_upload_format")
    if pred is None:
        st.session_state["upload_result"] = ("error", "choose a prediction file first", [])
        return
    limit = int(data.upload_limit_mb(st.session_state.get("workspace")) * 1024 * 1024)
    for file in (pred, gold):
        if file is None:
            continue
        try:
            check_upload_size(file.name, file.size, limit)
        except InputError as exc:
            st.session_state["upload_result"] = ("error", f"{exc}; refused", [])
            return
    name = _unique_name((st.session_state.get("w_upload_name") or "").strip() or Path(pred.name).name.split(".")[0])
    source = data.upload_source(
        name,
        pred.name,
        pred.getvalue(),
        gold.name if gold is not None else None,
        gold.getvalue() if gold is not None else None,
        None if fmt in (None, "detect") else fmt,
    )
    if isinstance(source, str):
        st.session_state["upload_result"] = ("error", source, [])
        return
    result = data.load(source)
    if isinstance(result, str):
        st.session_state["upload_result"] = ("error", result, [])
        return
    formats = " + ".join(result.meta.formats)
    message = (
        f"added run {name!r}: format {formats}, {len(result.turns):,} turns, "
        f"{result.turns['dialogue_id'].nunique():,} dialogues"
    )
    st.session_state["upload_result"] = ("success", message, result.alignment.warnings())
    sources = dict(st.session_state.get("sources", {}))
    sources[name] = source
    st.session_state["sources"] = sources
    st.session_state["runs"] = [*state.selected_runs(), name]


def _upload_box() -> None:
    """The upload form, put on the page only while its expander is open (a rerun on opening): closed, its
    widgets and the browser code of the file uploaders are not loaded with the first page (measured: the
    first chart 0.13-0.27 s sooner with an empty browser cache)."""
    box = st.sidebar.expander(
        "Upload a run", expanded=bool(st.session_state.get("upload_result")), key="w_upload_box", on_change="rerun"
    )
    if not box.open:
        return
    with box:
        limit = data.upload_limit_mb(st.session_state.get("workspace"))
        st.file_uploader("Prediction file", key=_upload_key("w_upload_pred"), help=f"up to {limit:g} MB")
        st.file_uploader("Gold file (optional)", key=_upload_key("w_upload_gold"))
        st.selectbox("Format", ["detect", *format_names()], key="w_upload_format")
        st.text_input("Run name", key="w_upload_name", placeholder="from the file name")
        st.button("Add run", key="w_upload_add", on_click=_add_upload)
        result: Any = st.session_state.get("upload_result")
        if result:
            kind, message, warnings = result
            (st.error if kind == "error" else st.success)(md(message))
            for line in warnings:
                st.warning(md(line))


def load(default_workspace: str) -> None:
    """Bring the session's runs up to date with the workspace files (cheap when cached)."""
    if "workspace_path" not in st.session_state:
        st.session_state["workspace_path"] = default_workspace
        st.session_state["runs"] = None
    _open_workspace(st.session_state["workspace_path"])
    if st.session_state.get("runs") is None:
        st.session_state["runs"] = list(state.sources())


def render() -> None:
    """Draw the sidebar: workspace, upload, run picker, focus run, convention."""
    path = st.session_state["workspace_path"]
    sidebar = st.sidebar
    sidebar.header("Workspace")
    st.session_state["w_workspace_path"] = path
    sidebar.text_input("Manifest path", key="w_workspace_path", on_change=_on_open)
    sidebar.button("Open", key="w_workspace_open", on_click=_on_open)
    workspace = st.session_state.get("workspace")
    if st.session_state.get("path_error"):
        sidebar.error(md(st.session_state["path_error"]))
    if st.session_state.get("workspace_error"):
        sidebar.error(md(st.session_state["workspace_error"]))
    elif workspace is not None:
        sidebar.caption(md(f"{workspace.name}: {len(workspace.entries)} runs listed"))
        if workspace.allow_outside_root:
            sidebar.caption(
                ":material/warning: `allow_outside_root = true`: this manifest's runs may read files outside its folder"
            )
    for name, error in st.session_state.get("failed", {}).items():
        sidebar.error(md(f"run {name} failed: {error}"))
    _upload_box()

    known = list(state.sources())
    if st.session_state.get("runs") is None:
        st.session_state["runs"] = known
    sidebar.header("Runs")
    state.multiselect("Runs shown", known, state="runs", container=sidebar)
    runs = state.selected_runs()
    if runs:
        state.select("Focus run", runs, state="run", container=sidebar, help="the run of single-run views")
    conventions = [DECLARED, *CONVENTIONS]
    state.select(
        "Convention",
        conventions,
        state="convention",
        container=sidebar,
        format_func=lambda c: "as declared per run" if c == DECLARED else c,
        help=(
            "score every run under one convention, or each under its own: its manifest entry's `convention`, "
            "else the workspace's, else its file format's (as the command line does); a view that sets runs "
            "of different conventions side by side says so"
        ),
    )
    for note in st.session_state.get("link_notes", []):
        sidebar.warning(md(note))
