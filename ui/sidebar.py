"""The shared sidebar, rendered once by app.py: workspace, upload, run picker, focus run, convention."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any

import streamlit as st

from analysis import manifest_write
from analysis.conventions import CONVENTIONS
from analysis.errors import InputError
from analysis.formats import format_names
from analysis.formats.mapping import Mapping, parse_mapping_option
from analysis.formats.sniff import brief_text, mapping_option, verdict_text
from analysis.isolated import Unrecognised
from analysis.model import HISTORY_MODES
from analysis.pace import Pace
from analysis.safety import check_upload_size, resolve_inside, workspace_root
from analysis.wording import short_names
from ui import data, disk, errors, state
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

    pace = Pace()
    scored: list[int] = []

    def scoring(done: int, total: int) -> None:
        scored.append(done)
        progress.caption(f"scoring {total:,} new runs into the store: {pace(done, total)}…")

    sources, failed = data.load_workspace(manifest, announce, scoring)
    if scored:  # new runs scored into the store: what it holds that this version never reads, said once
        disk.after_scoring()
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


def _add_upload(by_mapping: bool = False) -> None:
    """ "Add run" (detect the format, or the one chosen), or "Read with this mapping" (`by_mapping`)."""
    try:
        _try_upload(by_mapping)
    except Exception as exc:  # a callback's exception would replace the page with a traceback
        st.session_state["upload_result"] = ("error", errors.message(exc, "loading the upload"), [])
    finally:
        # While a mapping is offered the files stay in their widgets: the mapping is read from them.
        if not st.session_state.get("upload_offer"):
            st.session_state["upload_round"] = st.session_state.get("upload_round", 0) + 1


def _forget_offer() -> None:
    """Another prediction file chosen (or none): the mapping offered for the last one goes."""
    st.session_state.pop("upload_offer", None)


def _offer_mapping(file_name: str, unrecognised: Unrecognised) -> None:
    """No format recognised the prediction file: keep what `sniff` sees and put its proposed mapping in
    the form's mapping field (`_mapping_offer` draws them)."""
    found = unrecognised.sniffed
    st.session_state["upload_offer"] = {
        "file": file_name,
        "structure": brief_text(found),
        "verdict": verdict_text(found["result"]),
    }
    st.session_state["w_upload_mapping"] = mapping_option(found["proposed_mapping"])


# The upload form's metadata fields: (manifest key, label, kind); the Edit run form shows the same ones.
METADATA_FIELDS = (
    ("system", "System", "text"),
    ("dataset", "Dataset", "text"),
    ("language", "Language", "text"),
    ("history", "History", "history"),
    ("seed", "Seed", "text"),
    ("convention", "Convention", "convention"),
)
HISTORY_LABELS = {"predicted": "predicted (JGA)", "gold": "gold (GJGA)"}


def _metadata_widgets(prefix: str, values: dict[str, Any] | None = None) -> None:
    """The metadata fields, keyed `{prefix}_{key}`; `values` (Edit run): the run's current ones."""
    values = values or {}
    for key, label, kind in METADATA_FIELDS:
        current = values.get(key)
        if kind == "history":
            options: list[str] = list(HISTORY_MODES)
            st.selectbox(
                label,
                options,
                index=options.index(current) if current in options else 0,
                key=f"{prefix}_{key}",
                format_func=lambda mode: HISTORY_LABELS.get(mode, mode),
                help="predicted: the model saw its own previous state (JGA); gold: the gold one (GJGA)",
            )
        elif kind == "convention":
            options = ["", *CONVENTIONS]
            st.selectbox(
                label,
                options,
                index=options.index(current) if current in options else 0,
                key=f"{prefix}_{key}",
                format_func=lambda c: c or "(default)",
                help="default: the workspace's convention, else the file format's own",
            )
        else:
            st.text_input(
                label,
                value="" if current is None else str(current),
                key=f"{prefix}_{key}",
                placeholder="the run name" if key == "system" else "an integer" if key == "seed" else "",
            )


def _form_metadata(prefix: str) -> dict[str, Any]:
    """The metadata fields' values as typed (checked by `manifest_write.check_metadata`)."""
    return {key: st.session_state.get(f"{prefix}_{key}") for key, _, _ in METADATA_FIELDS}


def _saving_workspace() -> Any:
    """The open workspace when the dashboard may write its manifest (`[dashboard] edit_manifest`), else None."""
    workspace = st.session_state.get("workspace")
    return workspace if workspace is not None and workspace.edit_manifest else None


def _try_upload(by_mapping: bool = False) -> None:
    pred = st.session_state.get(_upload_key("w_upload_pred"))
    gold = st.session_state.get(_upload_key("w_upload_gold"))
    fmt = st.session_state.get("w_upload_format")
    if not by_mapping:
        _forget_offer()
    if pred is None:
        st.session_state["upload_result"] = ("error", "choose a prediction file first", [])
        return
    workspace = _saving_workspace()
    checked = _checked_upload(pred, gold, workspace, by_mapping=by_mapping)
    if checked is None:
        return
    mapping, metadata, typed_name = checked
    name = _unique_name(typed_name)
    if fmt not in (None, "detect"):
        metadata["format"] = fmt
    info = {k: v for k, v in metadata.items() if k not in ("name", "format")}
    source = data.upload_source(
        name,
        pred.name,
        pred.getvalue(),
        gold.name if gold is not None else None,
        gold.getvalue() if gold is not None else None,
        None if fmt in (None, "detect") else fmt,
        info,
        mapping,
    )
    if isinstance(source, Unrecognised):
        _offer_mapping(pred.name, source)
        st.session_state["upload_result"] = ("error", source.error, [])
        return
    if isinstance(source, str):
        st.session_state["upload_result"] = ("error", source, [])
        return
    _forget_offer()
    result = data.load(source)
    if isinstance(result, str):
        st.session_state["upload_result"] = ("error", result, [])
        return
    formats = " + ".join(result.meta.formats)
    counts = f"format {formats}, {len(result.turns):,} turns, {result.turns['dialogue_id'].nunique():,} dialogues"
    warnings = result.alignment.warnings()
    if workspace is not None:
        not_saved = _save_upload(workspace, name, metadata, pred, gold, mapping, source, counts, warnings)
        if not_saved is None:
            return  # saved, or refused: the form says which
        # a read-only root: today's session upload, with a warning
        warnings = [f"{not_saved.problem}: run {name!r} is kept for this session only", *warnings]
    elif st.session_state.get("workspace") is not None:
        warnings = [
            f"this workspace keeps uploads in their session ([dashboard] edit_manifest = false): run {name!r} is not saved",
            *warnings,
        ]
    st.session_state["upload_result"] = ("success", f"added run {name!r}: {counts}", warnings)
    sources = dict(st.session_state.get("sources", {}))
    sources[name] = source
    st.session_state["sources"] = sources
    st.session_state["runs"] = [*state.selected_runs(), name]


def _checked_upload(
    pred: Any, gold: Any, workspace: Any, *, by_mapping: bool
) -> tuple[Mapping | None, dict[str, Any], str] | None:
    """The form's mapping (when `by_mapping`), its metadata as the manifest reader checks it and the typed
    run name; None, with the form's error set, when the mapping, a file's size or the metadata is refused."""
    mapping: Mapping | None = None
    if by_mapping:  # the form's mapping field, in the CLI's `--mapping` syntax; its errors name the file
        try:
            mapping = parse_mapping_option(st.session_state.get("w_upload_mapping") or "", pred.name)
        except InputError as exc:
            st.session_state["upload_result"] = ("error", str(exc), [])
            return None
    limit = int(data.upload_limit_mb(st.session_state.get("workspace")) * 1024 * 1024)
    for file in (pred, gold):
        if file is None:
            continue
        try:
            check_upload_size(file.name, file.size, limit)
        except InputError as exc:
            st.session_state["upload_result"] = ("error", f"{exc}; refused", [])
            return None
    typed_name = (st.session_state.get("w_upload_name") or "").strip() or Path(pred.name).name.split(".")[0]
    try:  # the manifest reader's rules, before anything is parsed or written
        metadata = manifest_write.check_metadata(
            workspace.path if workspace is not None else "upload form",
            {"name": typed_name, **_form_metadata("w_upload")},
        )
    except InputError as exc:
        st.session_state["upload_result"] = ("error", f"{exc}; refused", [])
        return None
    return mapping, metadata, typed_name


def _save_upload(
    workspace: Any,
    name: str,
    metadata: dict[str, Any],
    pred: Any,
    gold: Any,
    mapping: Mapping | None,
    source: Any,
    counts: str,
    warnings: list[str],
) -> manifest_write.NotSavedError | None:
    """Save a loaded upload into the workspace's manifest and set the form's result (saved, or the error
    refusing it); the `NotSavedError` of a read-only root instead, the upload then kept for the session."""
    try:
        saved = manifest_write.save_upload(
            workspace.path,
            {**metadata, "name": name},
            pred.name,
            pred.getvalue(),
            gold.name if gold is not None else None,
            gold.getvalue() if gold is not None else None,
            expected_digest=workspace.digest,
            mapping=mapping,
        )
    except manifest_write.NotSavedError as exc:
        return exc
    except InputError as exc:
        if source.upload is not None:
            source.upload.release()
        st.session_state["upload_result"] = ("error", str(exc), [])
        return None
    if source.upload is not None:  # the workspace loads it from its saved file from now on
        source.upload.release()
    data.forget_manifest()
    listed = f"{workspace.path.name}{', with its mapping' if mapping is not None else ''}"
    message = f"saved run {name!r} into the workspace ({', '.join(saved.files)}; {listed}): {counts}"
    notes = [saved.merged] if saved.merged else []
    st.session_state["upload_result"] = ("success", message, [*notes, *warnings])
    st.session_state["runs"] = [*state.selected_runs(), name]
    return None


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
        # The browser refuses a larger file before sending any of it (the server's own cap, counted while
        # the body streams in, is `server.maxUploadSize`: scripts/serve.py sets it to this limit).
        most = max(math.ceil(limit), 1)
        st.file_uploader(
            "Prediction file",
            key=_upload_key("w_upload_pred"),
            help=f"up to {limit:g} MB",
            on_change=_forget_offer,
            max_upload_size=most,
        )
        st.file_uploader("Gold file (optional)", key=_upload_key("w_upload_gold"), max_upload_size=most)
        st.selectbox("Format", ["detect", *format_names()], key="w_upload_format")
        st.text_input("Run name", key="w_upload_name", placeholder="from the file name")
        _metadata_widgets("w_upload")
        if _saving_workspace() is not None:
            st.caption(
                f"Saved into the workspace: the files under `{manifest_write.UPLOADS}/`, the run in its manifest"
            )
        elif st.session_state.get("workspace") is not None:
            st.caption("This workspace keeps uploads in their session (`[dashboard] edit_manifest = false`)")
        st.button("Add run", key="w_upload_add", on_click=_add_upload)
        result: Any = st.session_state.get("upload_result")
        if result:
            kind, message, warnings = result
            (st.error if kind == "error" else st.success)(md(message))
            for line in warnings:
                st.warning(md(line))
        _mapping_offer()


def _mapping_offer() -> None:
    """When no format recognised the prediction file: what `sniff` sees in it (literal text), and the
    mapping it proposes in an editable field, read by "Read with this mapping"."""
    offer: Any = st.session_state.get("upload_offer")
    if not offer:
        return
    st.caption(md(f"No format recognises {offer['file']}. What it holds:"))
    st.code(offer["structure"], language=None, wrap_lines=True)
    st.text_area(  # an area: the whole mapping in sight in the narrow sidebar
        "Mapping",
        key="w_upload_mapping",
        height=110,
        help="where the file keeps turns, ids and states: `key=value,...` as `--mapping` takes it "
        "(keys: records, turns, dialogue, turn, id, id_pattern, gold, pred, encoding, turn_base, ...; "
        "`python -m analysis sniff FILE` proposes the same)",
    )
    st.caption(md(f"The proposed mapping {offer['verdict']}"))
    st.button("Read with this mapping", key="w_upload_map", on_click=_add_upload, args=(True,))


def _save_edit(name: str, seen: dict[str, Any], digest: str, prefix: str) -> None:
    """The Edit run form's Save: the changed fields written into the manifest (`manifest_write.edit_run`)."""
    workspace = _saving_workspace()
    try:
        if workspace is None:
            raise InputError("workspace", "workspace", "no workspace open that the dashboard may edit")
        typed = _form_metadata(prefix)
        typed["description"] = st.session_state.get(f"{prefix}_description")
        fmt = st.session_state.get(f"{prefix}_format")
        typed["format"] = None if fmt in (None, "detect") else fmt
        shown = {k: "" if seen.get(k) is None else seen.get(k) for k in typed}
        changed = {k: v for k, v in typed.items() if ("" if v is None else v) != shown[k] and str(v) != str(shown[k])}
        if not changed:
            st.session_state["edit_result"] = ("success", f"run {name!r}: nothing changed", [])
            return
        saved = manifest_write.edit_run(workspace.path, name, changed, seen=seen, expected_digest=digest)
    except Exception as exc:  # a callback's exception would replace the page with a traceback
        st.session_state["edit_result"] = ("error", errors.message(exc, "saving the run's metadata"), [])
        return
    data.forget_manifest()
    keys = ", ".join(sorted(changed))
    message = f"saved run {name!r}'s {keys} into {workspace.path.name}"
    st.session_state["edit_result"] = ("success", message, [saved.merged] if saved.merged else [])


def _edit_box() -> None:
    """The Edit run form: any run of the manifest, its metadata shown and saved in place; shown only while
    the dashboard may write the manifest, and put on the page only while its expander is open."""
    workspace = _saving_workspace()
    if workspace is None or not workspace.entries:
        return
    box = st.sidebar.expander(
        "Edit run", expanded=bool(st.session_state.get("edit_result")), key="w_edit_box", on_change="rerun"
    )
    if not box.open:
        return
    with box:
        names = [entry.name for entry in workspace.entries]
        focus = state.focus_run()
        chosen = st.selectbox("Run to edit", names, index=names.index(focus) if focus in names else 0, key="w_edit_run")
        entry = next(e for e in workspace.entries if e.name == chosen)
        seen = manifest_write.editable_values(entry)
        # Keys renewed with the run and the manifest's digest: after a save the fields show the file's values.
        prefix = "w_edit_" + hashlib.sha256(f"{chosen}\0{workspace.digest}".encode()).hexdigest()[:10]
        with st.form(key=f"{prefix}_form", border=False):
            _metadata_widgets(prefix, seen)
            formats = ["detect", *format_names()]
            st.selectbox(
                "Format",
                formats,
                index=formats.index(seen["format"]) if seen["format"] in formats else 0,
                key=f"{prefix}_format",
            )
            st.text_area("Description", value=seen["description"], key=f"{prefix}_description")
            st.form_submit_button(
                "Save", on_click=_save_edit, args=(chosen, seen, workspace.digest, prefix), key="w_edit_save"
            )
        result: Any = st.session_state.get("edit_result")
        if result:
            kind, message, notes = result
            (st.error if kind == "error" else st.success)(md(message))
            for line in notes:
                st.warning(md(line))


# Runs the sidebar lists one by one (a chip each): beyond, it says how many are shown and lists them on demand,
# since a thousand chips take the browser about 0.3 s to draw on every page, and nobody reads them.
LISTED_RUNS = 30


def _matching(known: list[str], typed: str) -> list[str]:
    return [r for r in known if typed.lower() in r.lower()]


def _on_run_search() -> None:
    """ "Show the runs whose name contains": the runs shown become those that match (every run when the text is
    empty); none matching leaves them as they were, with a notice."""
    typed = str(st.session_state.get("w_runs_search") or "").strip()
    known = list(state.sources())
    found = _matching(known, typed) if typed else known
    st.session_state["runs_search_note"] = "" if found else f"No run's name contains {typed!r}: the runs shown stay."
    if found:
        st.session_state["runs"] = found


def runs_shown_caption(shown: list[str], known: list[str], typed: str | None) -> str:
    """What the sidebar says instead of listing more than `LISTED_RUNS` runs: how many of the session's runs
    are shown, and which when the name search chose them.

    >>> runs_shown_caption(["a1", "a2"], ["a1", "a2", "b"], "A")
    "Runs shown: 2 of 3, those whose name contains 'A' (not listed one by one beyond 30)."
    >>> runs_shown_caption(["a1", "b"], ["a1", "b"], None)
    'Runs shown: all 2 (not listed one by one beyond 30).'
    """
    typed = (typed or "").strip()
    count = f"all {len(shown):,}" if len(shown) == len(known) else f"{len(shown):,} of {len(known):,}"
    which = f", those whose name contains {typed!r}" if typed and shown == _matching(known, typed) else ""
    return f"Runs shown: {count}{which} (not listed one by one beyond {LISTED_RUNS})."


def load(default_workspace: str) -> None:
    """Bring the session's runs up to date with the workspace files (cheap when cached)."""
    if "workspace_path" not in st.session_state:
        st.session_state["workspace_path"] = default_workspace
        st.session_state["runs"] = None
    _open_workspace(st.session_state["workspace_path"])
    if st.session_state.get("runs") is None:
        st.session_state["runs"] = list(state.sources())


def render() -> None:
    """Draw the sidebar: workspace, upload, run picker, focus run, convention, disk."""
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
    _edit_box()

    known = list(state.sources())
    if st.session_state.get("runs") is None:
        st.session_state["runs"] = known
    sidebar.header("Runs")
    # Long names shortened where it stays unambiguous: a chip cut at its width made siblings look alike.
    short = short_names(known)
    shortened = "; long names are shortened where no other run could match (… stands for the parts left out)"
    if len(known) > LISTED_RUNS:
        sidebar.text_input(
            "Show the runs whose name contains",
            key="w_runs_search",
            on_change=_on_run_search,
            placeholder="part of a run's name; empty: every run",
            help="replaces the runs shown by those whose name contains this text (upper or lower case alike)",
        )
    if len(state.selected_runs()) <= LISTED_RUNS or state.toggle(
        "List the runs shown, to add or remove one", state="runs_listed", container=sidebar
    ):
        state.multiselect(
            "Runs shown",
            known,
            state="runs",
            container=sidebar,
            format_func=lambda r: short.get(r, r),
            help="the runs every page shows" + (shortened if any(short[r] != r for r in known) else ""),
        )
    else:
        sidebar.caption(md(runs_shown_caption(state.selected_runs(), known, st.session_state.get("w_runs_search"))))
    if st.session_state.get("runs_search_note"):
        sidebar.warning(md(st.session_state["runs_search_note"]))
    runs = state.selected_runs()
    if runs:
        state.select(
            "Focus run",
            runs,
            state="run",
            container=sidebar,
            format_func=lambda r: short.get(r, r),
            help="the run of single-run views" + (shortened if any(short[r] != r for r in runs) else ""),
        )
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
    disk.disk_box()
