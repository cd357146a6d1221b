"""Streamlit side of team review: the workspace's annotation store (opened once, a cached resource), the
reviewer name kept in session state, a compact tag form usable from any page, export and import.

A page tags an item with three lines::

    from analysis.review.items import Item
    from ui import review
    review.tag_form(Item(dataset, dialogue_id, turn, domain=d, slot=s, run_id=run), key="dialogue_tag")

Live review: `current_annotations` reads the store's change marker (`AnnotationStore.change_marker`, one
aggregate query) and reads the annotations again only when it moved, keeping the frame per session, and
everything computed from the annotations is reused (keyed by the marker) while nothing changed. The Review
page's panels are fragments that rerun on their own clicks only (a save reruns the queue's) and say which
marker they show (`shown`). One small fragment, `live_check`, rerun every `LIVE_S` seconds, reads the
marker alone and, once the reviewer has paused, reruns the page when a panel is behind it: a colleague's
tags show within about twice `LIVE_S` without a click (and at once on a click in the queue, which reads the
store itself), the summaries catch up with one's own saves after a pause of `CATCH_UP_S`, and a page
nobody writes to redraws nothing. (Panels that redrew themselves every `LIVE_S` seconds, queue
grid and heatmap included, kept chromium about 0.4 CPU-s/s busy and slowed the clicks that met a redraw;
a save that also redrew the summaries took 0.3 s more.)
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from analysis.errors import InputError
from analysis.outcomes import ERROR_OUTCOMES
from analysis.review.analysis import annotation_context
from analysis.review.analysis import error_items_empty as error_items_empty
from analysis.review.analysis import review_episodes as review_episodes  # the Review page's views, in `analysis`
from analysis.review.analysis import review_errors as review_errors
from analysis.review.items import MAX_COMMENT, MAX_REVIEWER, Item, _check_reviewer, taxonomy
from analysis.review.store import AnnotationStore, StoreError, annotations_csv, annotations_json, default_url
from analysis.scoring import Scored
from ui import errors
from ui.text import md

REVIEWER = "reviewer"
POLL_S = 5  # while the database is unreachable, the Review page checks it this often and reloads when back
LIVE_S = 2  # the Review page's queue and summaries check the store's change marker this often
# The summaries catch up with one's own saves (the queue shows them already) only after a pause this long:
# a page rerun takes 0.3-0.7 s, and a click that meets one waits for it (Streamlit does not let a
# fragment's rerun interrupt a whole page's), so it waits for a pause longer than a reviewer's usual
# one between two clicks. A colleague's write, which the queue does not show yet, waits for LIVE_S only.
CATCH_UP_S = 3 * LIVE_S
_SEEN = "_review_annotations"  # session state: {store url: (marker, annotations frame)}


# --- the store ------------------------------------------------------------------------------------


@st.cache_resource(show_spinner=False, max_entries=8)
def _open(url: str, tags: tuple[str, ...], manifest: str, _settings: dict[str, Any] | None) -> AnnotationStore:
    """One store per database URL and taxonomy for the whole server (the engine pools connections)."""
    return AnnotationStore.for_workspace(manifest, _settings)


def store() -> AnnotationStore | None:
    """The open workspace's annotation store (`default_url`: DST_ANNOTATIONS_URL, the manifest's
    `[review] database_url`, else a SQLite file beside the manifest), or None without a workspace."""
    workspace = st.session_state.get("workspace")
    if workspace is None:
        return None
    settings = dict(workspace.settings)
    url = default_url(workspace.path, settings)
    return _open(url, tuple(taxonomy(settings)), str(workspace.path), settings)


def unavailable(exc: StoreError) -> None:
    """The store's short message in place of the page, a button to try again, and a check every
    `POLL_S` seconds that reloads the page as soon as the database answers again. (A failed open is
    not cached: `st.cache_resource` keeps only stores that opened.)"""
    st.error(f"{exc}.", icon=":material/cloud_off:")
    st.button("Try again", key="review_store_retry", icon=":material/refresh:")
    st.session_state["review_store_failed_at"] = time.monotonic()
    _wait_for_store()


@st.fragment(run_every=POLL_S)
def _wait_for_store() -> None:
    note = f"Checking again every {POLL_S} s; the page reloads by itself when the database is back."
    # Not in the run that just failed: at most one check (and reload) per POLL_S, never a reload loop.
    if time.monotonic() - st.session_state.get("review_store_failed_at", 0.0) < POLL_S - 0.5:
        st.caption(note)
        return
    try:
        annotations = store()
        if annotations is not None:
            annotations.ping()
    except StoreError:
        st.caption(note)
        return
    st.rerun(scope="app")


def current_annotations(annotations: AnnotationStore) -> tuple[pd.DataFrame, tuple[int, int]]:
    """The store's annotations and its change marker: the frame this session read last while the marker
    has not moved (one aggregate query), else read again. Raises `StoreError` when the database fails."""
    marker = annotations.change_marker()
    seen = st.session_state.setdefault(_SEEN, {})
    known = seen.get(annotations.url)
    if known is not None and known[0] == marker:
        return known[1], marker
    frame = annotations.annotations()
    seen[annotations.url] = (marker, frame)
    return frame, marker


_SHOWN = "_review_shown"  # session state: {panel: the change marker it shows (None: the store failed)}
_ASKED = "_review_rerun_asked"  # session state: the marker `live_check` last reran the page for
_CLICKED = "_review_clicked_at"  # session state: time.monotonic() of the queue's last run (a click)


def shown(panel: str, marker: tuple[int, int] | None) -> None:
    """Say that a Review panel now shows the annotations of `marker` (None: it shows the store's failure)."""
    st.session_state.setdefault(_SHOWN, {})[panel] = marker


def clicked() -> None:
    """Say that the reviewer just clicked (the queue panel reran): `live_check` waits for a pause. Call it
    when the queue's run starts and when it ends: the pause counts from the answer, not from the click."""
    st.session_state[_CLICKED] = time.monotonic()


def live_check(annotations: AnnotationStore) -> None:
    """The Review page's timed check (call it from a fragment that reruns every `LIVE_S` s): one aggregate
    query; the whole page reruns when a panel shows another marker than the store's (a colleague wrote,
    one's own save is not in the summaries yet, the database failed or came back), once the reviewer has
    not clicked for `LIVE_S` s, or for `CATCH_UP_S` s when only the summaries are behind (a rerun of the
    page would delay a click that met it). At most one rerun per marker: a panel that cannot catch up (an
    error in its place) does not rerun the page again."""
    try:
        now: tuple[int, int] | None = annotations.change_marker()
    except StoreError:
        now = None
    panels = st.session_state.get(_SHOWN, {})
    if all(marker == now for marker in panels.values()):
        st.session_state.pop(_ASKED, None)
        return
    if _ASKED in st.session_state and st.session_state[_ASKED] == now:
        return
    # The queue already shows the store (one's own save, or a click after a colleague's write): only the
    # summaries are behind, and they wait for a longer pause (CATCH_UP_S) than news the queue lacks (LIVE_S).
    pause = CATCH_UP_S if panels.get("queue", now) == now else LIVE_S
    if time.monotonic() - st.session_state.get(_CLICKED, 0.0) < pause:
        return
    st.session_state[_ASKED] = now
    st.rerun(scope="app")


def keep_selection(key: str, shown: pd.DataFrame, current: dict[str, Any] | None) -> None:
    """Before the queue's grid `key` is drawn: when its rows changed under a selection the user did not
    change (a save, a colleague's write), select the row of the item in the form, or none when it left
    the list, so that the grid keeps one identity (not drawn anew on every change of the store) and its
    highlighted row is always the form's item. A selection the user just changed is left as it is."""
    drawn = f"_{key}_rows"
    state = st.session_state.get(key)
    selection = state.get("selection", {}) if isinstance(state, dict) else {}
    rows = [int(r) for r in selection.get("rows", [])]
    if rows == st.session_state.get(drawn, []):
        wanted: list[int] = []
        if current is not None and "item_key" in shown.columns:
            at = np.flatnonzero(shown["item_key"].to_numpy(dtype=object) == current.get("item_key"))
            wanted = [int(at[0])] if len(at) else []
        if wanted != rows:
            st.session_state[key] = {"selection": {"rows": wanted, "columns": [], "cells": []}}
            rows = wanted
    st.session_state[drawn] = rows


def memo(name: str, key: Any, make: Any) -> Any:
    """`make()` once per `key` in this session (the last key per `name` only): what the Review page
    computes from the annotations, reused while the change marker and the filters stay the same."""
    slot = st.session_state.setdefault("_review_memo", {})
    if name in slot and slot[name][0] == key:
        return slot[name][1]
    value = make()
    slot[name] = (key, value)
    return value


# --- the reviewer ---------------------------------------------------------------------------------


def reviewer() -> str:
    """The reviewer name of this session ('' until one is entered)."""
    return str(st.session_state.get(REVIEWER) or "").strip()


def _sync_reviewer(widget: str) -> None:
    st.session_state[REVIEWER] = str(st.session_state.get(widget) or "").strip()


def reviewer_box(*, key: str = "w_reviewer", container: Any = None) -> str:
    """A text box for the reviewer name, kept in session state across pages; returns the name."""
    st.session_state[key] = reviewer()
    host = container or st
    host.text_input(
        "Reviewer name",
        key=key,
        on_change=_sync_reviewer,
        args=(key,),
        placeholder="required before tagging",
        help="stored with every tag you give; two reviewers' tags are kept apart",
        max_chars=MAX_REVIEWER,
    )
    return reviewer()


# --- tagging --------------------------------------------------------------------------------------


def _current(annotations: AnnotationStore, item: Item, who: str, frame: pd.DataFrame | None) -> tuple[list[str], str]:
    """This reviewer's tags and comment on the item, if any (from `frame`, the store's annotations as the
    page read them, else from the store)."""
    # From the frame, the name is checked as the store checks it (a refused name: the form says so).
    mine = annotations.annotations(reviewer=who) if frame is None else frame[frame["reviewer"] == _check_reviewer(who)]
    row = mine[mine["item_key"] == item.key]
    if row.empty:
        return [], ""
    return list(row["tags"].iloc[0]), str(row["comment"].iloc[0])


def _describe(item: Item) -> str:
    slot = f" · slot {item.domain}-{item.slot}" if item.slot else " · whole turn"
    run = f" · run {item.run_id}" if item.run_id else ""
    span = item.span()
    turns = (
        f"turn {item.turn_index}"
        if span["n_turns"] == 1
        else f"turns {item.turn_index}–{span['last_turn']} ({span['n_turns']} turns)"
    )
    return f"{item.dataset or 'dataset ?'} · dialogue {item.dialogue_id} · {turns}{slot}{run}"


def tag_form(item: Item, *, key: str, ask_reviewer: bool = True, frame: pd.DataFrame | None = None) -> None:
    """A compact form to tag one item (an episode's tags go to its whole span): taxonomy tags, a comment,
    save. Disabled (with a message) until a reviewer name is set; `ask_reviewer` shows the name box here
    when none is set yet. Saving no tags removes this reviewer's annotation of the item. Text is shown as
    text, never as HTML. `frame`: the annotations the page read already (no second query).

    The save is the submit button's callback: it writes before the page (or the fragment holding the
    form) reruns, so that one rerun already shows the new tags; no second rerun."""
    try:
        annotations = store()
        if annotations is None:
            st.info("Open a workspace to tag items.")
            return
        who = reviewer()
        tags, comment = _current(annotations, item, who, frame) if who else ([], "")
    except (StoreError, ValueError) as exc:  # the database down, or a reviewer name it refuses
        st.warning(f"Tagging is unavailable: {exc}.", icon=":material/cloud_off:")
        return
    # One container whether or not it holds the note: the form keeps its place in the page (an element
    # that moves leaves its stale copy on screen until the rerun ends, two forms for a moment).
    note = st.container()
    if not who:
        note.info("Enter a reviewer name to tag items: tagging is disabled until then.", icon=":material/badge:")
        if ask_reviewer:
            reviewer_box(key=f"{key}_reviewer", container=note)
    digest = hashlib.sha1(item.key.encode("utf-8")).hexdigest()[:10]
    # The last save's message, shown while its item is (a fragment's timed rerun must not wipe it).
    said = st.session_state.get(f"{key}_message")
    message = said[1:] if said is not None and said[0] == item.key else None
    if said is not None and message is None:
        del st.session_state[f"{key}_message"]
    widgets = (f"{key}_tags_{digest}", f"{key}_comment_{digest}")
    with st.form(key=f"{key}_form_{digest}", border=True):
        st.text(f"Tag: {_describe(item)}" + (f" · as {who}" if who else ""))
        # No "Select all" (Streamlit offers one by default): one click put every tag of the taxonomy on an item.
        st.multiselect(
            "Tags",
            annotations.tags,
            default=tags,
            key=widgets[0],
            disabled=not who,
            placeholder="tags",
            select_all=False,
        )
        st.text_input("Comment", value=comment, key=widgets[1], disabled=not who, max_chars=MAX_COMMENT)
        st.form_submit_button(
            "Save tags",
            disabled=not who,
            type="primary",
            on_click=_on_save,
            args=(annotations, item, widgets, f"{key}_message"),
        )
    if message is not None:
        kind, text = message
        # An explicit icon: without one Streamlit looks for a leading emoji in any non-ASCII message (this
        # one's '·' and '–'), and the first such look-up in the server compiles its emoji catalogue into a
        # regular expression, 0.3-0.6 s CPU inside the session's first save. (It also keeps a value from
        # the data at the start of a message from ever turning into the message's icon.)
        if kind == "ok":
            st.success(md(text), icon=":material/check_circle:")
        else:
            st.error(md(text), icon=":material/error:")


def _on_save(annotations: AnnotationStore, item: Item, widgets: tuple[str, str], message: str) -> None:
    """The form's submit: write the reviewer's tags and comment (`save`), keep the message for the item."""
    who = reviewer()
    if not who:
        return
    chosen = list(st.session_state.get(widgets[0]) or [])
    note = str(st.session_state.get(widgets[1]) or "")
    st.session_state[message] = (item.key, *save(annotations, item, chosen, note, who))


def save(annotations: AnnotationStore, item: Item, tags: list[str], comment: str, who: str) -> tuple[str, str]:
    """Write (or, with no tags, remove) the reviewer's annotation; ("ok" | "error", message): a value
    the store refuses (`InvalidAnnotationError`) or a database failure (`StoreError`) is one short message."""
    try:
        if not tags:
            removed = annotations.remove(item, reviewer=who)
            if removed:
                return ("ok", f"removed your tags from {_describe(item)}")
            return ("error", "pick at least one tag")
        version = annotations.annotate(item, tags, comment, reviewer=who)
    except (ValueError, StoreError) as exc:
        return ("error", str(exc))
    plural = "s" if len(tags) != 1 else ""
    return ("ok", f"saved ({len(tags)} tag{plural}, version {version}): {_describe(item)}")


def item_of(row: dict[str, Any]) -> Item:
    """The `Item` of a queue row (`analysis.review.figures.queue_table`): an episode with its span."""
    span = {c: int(row[c]) for c in ("last_turn", "n_turns") if row.get(c) is not None}
    return Item(
        str(row["dataset"]),
        str(row["dialogue_id"]),
        int(row["turn_index"]),
        domain=str(row["domain"]),
        slot=str(row["slot"]),
        run_id=str(row["run_id"]),
        **span,
    )


# --- data of the review page ----------------------------------------------------------------------


def options(errors: pd.DataFrame, *, domain: str | None = None) -> dict[str, list[str]]:
    """Filter values of the queue: `domain`, `slot` (of `domain` when given), `outcome`."""
    slots = errors if domain is None else errors[errors["domain"] == domain]
    return {
        "domain": sorted(errors["domain"].astype("str").unique()),
        "slot": sorted(slots["slot"].astype("str").unique()),
        "outcome": [o for o in ERROR_OUTCOMES if (errors["outcome"] == o).any()],
    }


# --- export / import ------------------------------------------------------------------------------


def scored_runs(run_ids: list[str]) -> list[Scored]:
    """The session's runs scored under the convention in force (the sidebar's), from the server's cache."""
    return scored_runs_later(run_ids)()


def scored_runs_later(run_ids: list[str]) -> Callable[[], list[Scored]]:
    """`scored_runs`, read when called: the session's run sources and convention are taken now, the runs
    scored (or read back from the score store) only when an export asks for them, not on every run of the
    page (at 100 runs that read is most of a minute)."""
    from ui import data, state

    sources, choice = state.sources(), state.convention_choice()
    return lambda: [data.scored(sources[r], choice) for r in run_ids if r in sources]


def export_bytes(
    annotations: AnnotationStore | pd.DataFrame,
    fmt: str,
    scoreds: list[Scored] | Callable[[], list[Scored]] | None = None,
) -> bytes:
    """Every annotation as CSV or JSON bytes, as the store's own export writes them, each row with the
    run context of its item (convention, outcome, gold, predicted) from `scoreds`, the runs under the
    convention in force (`analysis.review.analysis.annotation_context`; empty without them). Given the
    frame the page already read (`store.annotations()`), no second trip to the database. `scoreds` may be
    a function giving them, called here."""
    if fmt not in ("csv", "json"):
        raise ValueError(f"fmt has to be csv or json, got {fmt!r}")
    frame = annotations.annotations() if isinstance(annotations, AnnotationStore) else annotations
    if callable(scoreds):  # read now, at the export's click (`scored_runs_later`)
        scoreds = scoreds()
    context = annotation_context(frame, scoreds) if scoreds else None
    return (annotations_csv(frame, context) if fmt == "csv" else annotations_json(frame, context)).encode("utf-8")


def import_upload(annotations: AnnotationStore, name: str, data: bytes) -> tuple[str, str]:
    """Merge an uploaded CSV or JSON export (newer `updated_at` wins; importing twice changes nothing)."""
    suffix = Path(name).suffix.lower()
    if suffix not in (".csv", ".json"):
        return ("error", f"{name}: expected a .csv or .json annotations export")
    try:
        changed = (annotations.import_csv if suffix == ".csv" else annotations.import_json)(name, data=data)
    except (InputError, StoreError) as exc:
        return ("error", str(exc))
    except Exception as exc:  # anything a hostile file still finds: one line, never an error box
        return ("error", errors.message(exc, f"importing {name}"))
    if changed == 0:
        return ("ok", f"imported {name}: no row changed (nothing in it is newer than what is stored)")
    return ("ok", f"imported {name}: {changed} row{'s' if changed != 1 else ''} changed")
