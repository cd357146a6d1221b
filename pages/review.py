"""Review: the queue of error episodes (an error carried over consecutive turns is one item, tagged as a
whole: `analysis.review.analysis.error_episodes`) not yet reviewed (or reviewed by others, not by me), the
gold -> predicted heatmap of the queue counted in episodes or turns (a cell lists its items), progress,
tag counts, agreement per tag between reviewers (Cohen's kappa for two, Krippendorff's alpha for more),
and export/import of the annotations (each exported row with its span, gold, predicted value and outcome).

Live and fast: the queue (filters, heatmap, list, tag form) and the summaries below it are two fragments;
a click in the queue (pick, tag, save, filter, cell) reruns only the queue's, and what they compute from
the annotations is reused while the marker and the filters stay the same (`review.memo`). A third, empty
fragment reads the store's change marker every `review.LIVE_S` seconds and, at the reviewer's first pause,
reruns the page when a panel is behind it: a colleague's tags appear without a click, and the summaries
catch up with one's own saves (`review.live_check`)."""

# Krippendorff's alpha's package, imported here only so that `ui.prefetch` (which imports what the pages
# import) warms it in the background at server start. scikit-learn (Cohen's kappa) is not: with SciPy it
# costs 1.7 s of CPU, which held the GIL while every server's first page was drawn; it is imported at the
# first agreement of two reviewers instead.
from typing import Any

import krippendorff  # noqa: F401
import streamlit as st

import ui
from analysis.review import figures as figures_review
from analysis.review.analysis import (
    RATING_DEFINITION,
    UNITS,
    confusion_counts,
    review_progress,
    review_progress_per_run,
    review_queue,
    tag_agreement,
    tag_counts,
)
from analysis.review.store import AnnotationStore, StoreError
from analysis.scoring import OUTCOMES
from ui import errors as ui_errors
from ui import review, review_causes
from ui.clicks import clickable_cells
from ui.place import COLUMN_LABELS

QUEUE_ROWS = 500
STATUS_LABELS = {
    "unreviewed": "unreviewed",
    "by-others": "reviewed by others, not by me",
    "reviewed": "reviewed",
    "all": "all",
}

st.title("Review")
runs = ui.need_runs()
try:  # the database down or locked: one short message in place, and the page reloads when it is back
    store = review.store()
    annotations = review.current_annotations(store)[0] if store is not None else None
except StoreError as exc:
    review.unavailable(exc)
    st.stop()
except ValueError as exc:  # the manifest's [review] settings refused (e.g. a tag over the length limit)
    st.error(str(exc), icon=":material/error:")
    st.stop()
if store is None or annotations is None:
    st.info("Open a workspace: annotations are stored beside its manifest (or in [review] database_url).")
    st.stop()
opened: AnnotationStore = store  # not None from here on (for the functions below, which mypy checks apart)

# --- settings -------------------------------------------------------------------------------------
head = st.columns([2, 3])
who = review.reviewer_box(container=head[0])
head[1].caption(f"Annotations: {ui.md(store.backend)} store · every value and comment below is shown as plain text")

# A sweep's worth of runs (500: 78 s of error items) is reviewed 20 at a time: the best by a metric, or a search.
runs, _ = ui.drawn_runs(runs, page="review", verb="Reviewed here")
error_turns = ui.compute(review.review_errors, runs)  # one row per error turn (slot row)
episodes = ui.compute(review.review_episodes, runs)  # one row per error episode: the review items
choices = review.options(error_turns)
convention = ui.get("convention", "declared")


def _unavailable(exc: StoreError) -> None:
    st.warning(
        f"{exc}; showing nothing until it answers (checked every {review.LIVE_S} s).", icon=":material/cloud_off:"
    )


def slots_of(domain: str) -> list[str]:
    """The Slot filter's choices: the slots of the domain's errors (all: ''), once per domain."""
    return review.memo(
        "slots", (tuple(runs), convention, domain), lambda: review.options(error_turns, domain=domain or None)["slot"]
    )


FILTERS, QUEUE = "review_filters", "review_queue_panel"  # the two fragments' keys
BOTH = (FILTERS, QUEUE)  # a filter's change reruns its row (the slots of a domain), then the queue


@st.fragment(key=FILTERS)
@ui_errors.in_place("the review filters")
def filters_panel() -> None:
    """The queue's filters, a fragment of their own: a save, which reruns the queue, leaves them as they
    are (their six select boxes were a quarter of the browser's work of a save); a change reruns both."""
    filters = st.columns([2, 2, 2, 2, 2, 2])
    ui.multiselect("Runs", runs, state="review_runs", container=filters[0], placeholder="(all selected)", rerun=BOTH)
    domain = ui.select(
        "Domain",
        ["", *choices["domain"]],
        state="review_domain",
        rerun=BOTH,
        container=filters[1],
        format_func=lambda d: d or "(all)",
    )
    slot_names = slots_of(domain)
    ui.select(
        "Slot",
        ["", *slot_names],
        state="review_slot",
        rerun=BOTH,
        container=filters[2],
        format_func=lambda s: s or "(all)",
    )
    ui.select(
        "Outcome",
        ["", *[o for o in OUTCOMES if o in choices["outcome"]]],
        state="review_outcome",
        rerun=BOTH,
        container=filters[3],
        format_func=lambda o: COLUMN_LABELS.get(o, o.replace("_", " ")) if o else "(all errors)",
    )
    ui.select(
        "Tag",
        ["", *opened.tags],
        state="review_tag",
        rerun=BOTH,
        container=filters[4],
        format_func=lambda t: t or "(any)",
    )
    ui.select(
        "Status",
        list(STATUS_LABELS),
        state="review_status",
        rerun=BOTH,
        container=filters[5],
        format_func=lambda s: STATUS_LABELS.get(s, s),
        help="'reviewed by others, not by me' is the queue of a second opinion (your name above is 'me'); "
        "a tag filter shows reviewed items only",
    )


filters_panel()


@st.fragment(key=QUEUE)
@ui_errors.in_place("the review queue")
def queue_panel() -> None:
    """Progress, the heatmap, the queue and the tag form: reruns alone on a click here (and after the
    filters on a change of theirs), with the page when `live_check` sees a write this panel does not show.
    The reviewer's pause, which `live_check` waits for, counts from the end of this run (the click's
    answer)."""
    review.clicked()
    try:
        queue_contents()
    finally:
        review.clicked()


def queue_filters() -> dict[str, Any]:
    """The filters' values as `review_queue` takes them, as their fragment left them (a stale one, which it
    would reset, counts as none)."""
    run_filter = [r for r in ui.get("review_runs") or [] if r in runs]
    domain = ui.get("review_domain") if ui.get("review_domain") in choices["domain"] else ""
    slot = ui.get("review_slot") if ui.get("review_slot") in slots_of(domain) else ""
    outcome = ui.get("review_outcome") if ui.get("review_outcome") in choices["outcome"] else ""
    tag = ui.get("review_tag") if ui.get("review_tag") in opened.tags else ""
    status = ui.get("review_status") if ui.get("review_status") in STATUS_LABELS else "unreviewed"
    if tag and status not in ("reviewed", "by-others"):
        status = "reviewed"
    me = review.reviewer()
    return {
        "run_id": run_filter or None,
        "domain": domain or None,
        "slot": slot or None,
        "outcome": outcome or None,
        "tag": tag or None,
        "status": status,
        "me": me,
    }


def progress_counts(annotations: Any, marker: tuple[int, int]) -> None:
    """How much of the selected runs' errors is reviewed, in episodes and in turns, and what counts as what."""
    progress = review.memo(
        "progress",
        (tuple(runs), convention, marker),
        lambda: (review_progress(error_turns, annotations), review_progress(episodes, annotations)),
    )
    turns_done, episodes_done = progress
    counts = st.columns(5)
    counts[0].metric(
        "Reviewed episodes",
        f"{int(episodes_done['n_reviewed'].iloc[0]):,} / {int(episodes_done['n_errors'].iloc[0]):,}",
        help="an error carried over consecutive turns (same slot, gold and predicted value) is one episode",
    )
    counts[1].metric(
        "Reviewed errors",
        f"{int(turns_done['n_reviewed'].iloc[0]):,} / {int(turns_done['n_errors'].iloc[0]):,}",
        help="error turns (slot rows); tagging an episode reviews all of its turns",
    )
    share = float(turns_done["share_reviewed"].iloc[0])
    counts[2].metric("Share reviewed", "n/a" if share != share else f"{share:.1%}")
    counts[3].metric("Tagged gold annotation error", f"{int(episodes_done['n_gold_errors'].iloc[0]):,}")
    counts[4].metric("Annotations in the store", f"{len(annotations):,}")
    st.caption(
        f"Errors are the wrong, missed and spurious slots of the {len(runs)} selected run(s), each under "
        f"{'its declared convention' if convention == 'declared' else ui.md(convention)}. "
        "An episode is one error carried over consecutive turns of a dialogue (same run and slot, same gold "
        "value, predicted value and outcome); a correct turn or a change of either value ends it. An error "
        "counts as reviewed when a reviewer tagged a turn of it: its slot or its whole turn."
    )


def item_form(current: dict[str, Any], annotations: Any) -> None:
    """The tag form of the queue's picked item, what it is, and a way to open it in the dialogue viewer."""
    item = review.item_of(current)
    left, right = st.columns([3, 1])
    with left:
        review.tag_form(item, key="review_tag_form", ask_reviewer=False, frame=annotations)
    with right:
        span = item.span()
        turns = (
            f"turn {item.turn_index}"
            if span["n_turns"] == 1
            else f"turns {item.turn_index}–{span['last_turn']} ({span['n_turns']} turns)"
        )
        st.text(f"{turns}\ngold: {current['gold']}\npredicted: {current['predicted']}\noutcome: {current['outcome']}")
        if st.button("Open in dialogue viewer", key="review_open", icon=":material/forum:"):
            ui.open_dialogue(
                str(current["run_id"]),
                str(current["dialogue_id"]),
                int(current["turn_index"]),
                current["slot_name"],
            )


def second_opinion(wanted: dict[str, Any], annotations: Any, marker: tuple[int, int]) -> None:
    """One click to the items others reviewed and I did not (a second opinion), counted under the other
    filters; and back to the unreviewed ones."""
    me, status = wanted["me"], wanted["status"]
    others = {**wanted, "status": "by-others", "tag": None}
    key = (tuple(runs), convention, marker, tuple(others.items()))
    n = review.memo("by_others", key, lambda: len(review_queue(episodes, annotations, **others)) if me else 0)
    target = "unreviewed" if status == "by-others" else "by-others"
    label = (
        "Back to the items nobody reviewed"
        if target == "unreviewed"
        else f"Second opinion: {n:,} item(s) others reviewed, not you"
    )
    if st.button(
        label,
        key="review_second_opinion",
        icon=":material/rate_review:",
        disabled=not me and target == "by-others",
        help="enter your reviewer name above first" if not me else None,
    ):
        ui.put(review_status=target, review_tag="", review_item=None)
        st.rerun()  # the whole page: the Status filter above shows the change


def heatmap_of_queue(base: tuple[Any, ...], queue: Any) -> None:
    """The gold -> predicted heatmap of the queue, in episodes or turns; a click on a cell picks it."""
    unit = ui.select(
        "Count the heatmap in",
        list(UNITS),
        state="review_unit",
        format_func=lambda u: "episodes" if u == "episodes" else "turns (every turn of an episode)",
        help="a cell lists the same items either way: its episodes, whose turn counts add up to the cell in turns",
    )
    cells = review.memo("cells", (base, unit), lambda: confusion_counts(queue, unit=unit))
    heatmap = review.memo(
        "heatmap", (base, unit), lambda: clickable_cells(ui.figure(figures_review.confusion_heatmap, cells, unit=unit))
    )
    clicked = ui.show_figure(
        heatmap,  # show_figure sets its meta name: the same on every run
        key="review_confusion",
        name="review confusions",
        select=True,
    )
    if clicked and "x" in clicked[0] and "y" in clicked[0]:
        cell = cells[(cells["row"] == str(clicked[0]["y"])) & (cells["predicted"] == str(clicked[0]["x"]))]
        if len(cell):
            ui.put(review_cell=tuple(str(cell.iloc[0][c]) for c in ("domain", "slot", "gold", "predicted")))


def items_of_cell(base: tuple[Any, ...], queue: Any, annotations: Any) -> tuple[Any, Any]:
    """The queue's items listed below (those of the picked cell, said above them, or the whole queue) and
    the picked cell (None: no cell)."""
    confusion = ui.get("review_cell")
    listed = queue
    cell_note = st.container()  # always there, so the queue and the form below keep their places
    if confusion is not None:
        listed = review.memo(
            "cell", (base, confusion), lambda: review_queue(queue, annotations, status="all", confusion=confusion)
        )
        domain_, slot_, gold_, predicted_ = confusion
        cell_note.text(
            f"The cell {domain_}-{slot_}: gold {gold_} → predicted {predicted_}: {len(listed):,} episode(s), "
            f"{int(listed['n_turns'].sum()) if len(listed) else 0:,} turn(s)"
        )
        cell_note.button("Show the whole queue", key="review_all_cells", on_click=ui.put, kwargs={"review_cell": None})
    return listed, confusion


def queue_grid(shown: Any) -> Any:
    """The listed items as one grid whose picked row is returned (None: no pick)."""
    return ui.show_table(
        shown,
        key="review_queue",  # one grid, its rows updated in place: its highlight follows the form's item
        name="review queue",
        select=True,
        height=320,
        columns=[
            "run_id",
            "dialogue_id",
            "turn_index",
            "n_turns",
            "last_turn",
            "slot_name",
            "error",  # not "outcome": a table with that column is tinted per cell, 0.3 s a redraw
            "gold",
            "predicted",
            "tags",
            "reviewers",
        ],
    )


def queue_contents() -> None:
    review.shown("queue", None)  # until the annotations are read: a failure below is caught up later
    try:
        annotations, marker = review.current_annotations(opened)
    except StoreError as exc:
        _unavailable(exc)
        return
    review.shown("queue", marker)
    wanted = queue_filters()
    status, tag, me = wanted["status"], wanted["tag"] or "", wanted["me"]
    # Computed once per (runs, convention, annotations, filters): a click that changes none of them (a pick)
    # only redraws.
    base = (tuple(runs), convention, marker, tuple(wanted.items()))
    queue = review.memo("queue", base, lambda: review_queue(episodes, annotations, **wanted))
    progress_counts(annotations, marker)

    st.subheader("Queue")
    heatmap_of_queue(base, queue)
    listed, confusion = items_of_cell(base, queue, annotations)
    shown = review.memo("shown", (base, confusion), lambda: figures_review.queue_table(listed, limit=QUEUE_ROWS))
    n_turns = int(listed["n_turns"].sum()) if len(listed) else 0
    st.caption(
        f"{len(listed):,} error episode(s) match, {n_turns:,} turn(s) "
        f"({STATUS_LABELS[status]}{', tagged ' + ui.md(tag) if tag else ''})"
        + (f"; the first {QUEUE_ROWS} are listed" if len(listed) > QUEUE_ROWS else "")
        + " · pick a row to tag the episode (all of its turns) or open its first turn in the dialogue viewer"
    )
    second_opinion(wanted, annotations, marker)
    by_others_note = st.container()
    if status == "by-others" and not me:
        by_others_note.info(
            "Enter your reviewer name above: until then this lists the items anyone reviewed.", icon=":material/badge:"
        )
    review.keep_selection("review_queue", shown, ui.get("review_item"))
    picked = queue_grid(shown)
    if picked is not None:
        ui.put(review_item=picked)
    current = ui.get("review_item")
    if current is None and len(shown):  # the first row, kept: a save that takes it off the queue stays shown
        current = {str(k): v for k, v in shown.iloc[0].to_dict().items()}
        ui.put(review_item=current)
    if current is not None:
        item_form(current, annotations)
    st.caption(
        f"Live: checks the annotation store every {review.LIVE_S} s; a colleague's tags appear by themselves "
        "(the summaries below catch up with your saves when you pause)."
    )
    ui.update_link("review")


queue_panel()


@st.fragment
@ui_errors.in_place("the review summaries")
def summary_panel() -> None:
    """Tag counts, progress per run and agreement: live like the queue, recomputed only on a change."""
    review.shown("summary", None)
    try:
        annotations, marker = review.current_annotations(opened)
    except StoreError as exc:
        _unavailable(exc)
        return
    review.shown("summary", marker)
    st.subheader("Tags by domain and slot")
    group_by = ui.select("Count per", ["domain", "slot"], state="review_group_by", format_func=str)
    counted = review.memo("tag_counts", marker, lambda: tag_counts(annotations, by=("domain", "slot")))
    ui.show_figure(
        ui.figure(figures_review.tag_counts_bar, counted, by=group_by),
        key="review_tag_counts",
        name="tag counts",
    )
    st.caption("Progress per run (errors: error turns; episodes: review items)")

    by_run = review.memo(
        "by_run",
        (tuple(runs), convention, marker),
        lambda: review_progress_per_run(error_turns, episodes, annotations),
    )
    ui.show_table(by_run, key="review_progress", name="review progress per run")

    st.subheader("Agreement per tag")
    reviewers = sorted(set(annotations["reviewer"]))
    if len(reviewers) < 2:
        st.info("Agreement needs annotations from two reviewers on the same items.")
        return
    chosen = ui.multiselect("Reviewers", reviewers, state="review_reviewers", placeholder="(all reviewers)")
    if len(chosen) == 1:
        st.info("Agreement needs two reviewers or more: all reviewers are compared.")
    names = chosen if len(chosen) >= 2 else reviewers
    agreement = review.memo("agreement", (marker, tuple(names)), lambda: tag_agreement(annotations, names))
    overall = agreement.per_tag.iloc[-1]
    stats = st.columns(4)
    stats[0].metric(agreement.statistic, "n/a" if overall["value"] != overall["value"] else f"{overall['value']:.3f}")
    stats[1].metric(
        "Observed agreement", "n/a" if overall["observed"] != overall["observed"] else f"{overall['observed']:.3f}"
    )
    stats[2].metric("Items two or more annotated", f"{agreement.n_items:,}")
    stats[3].metric("Items tagged differently", f"{len(agreement.disagreements):,}")
    st.caption(
        f"{ui.md(agreement.statistic)} between {ui.md(', '.join(names))} (all tags: the first line above; "
        f"per tag: the table). {ui.md(RATING_DEFINITION)}"
    )
    ui.show_table(figures_review.tag_agreement_table(agreement), key="review_agreement", name="agreement per tag")
    disagreements = figures_review.reviewer_disagreement_table(agreement)
    st.caption(f"{len(disagreements):,} item(s) tagged differently: who annotated each and the tags each gave")
    ui.show_table(disagreements, key="review_disagreements", name="disagreements between reviewers")


summary_panel()


@st.fragment(run_every=review.LIVE_S)
@ui_errors.in_place("the live check")  # a failure in one line, never a traceback (a rerun passes through)
def live_check() -> None:
    """Every LIVE_S s: one query for the store's change marker; the page reruns when a panel is behind."""
    review.live_check(opened)


live_check()

review_causes.causes_panel(runs, opened)  # a naming mismatch or a value rule: one item, tagged once

st.subheader("Export and import")
scoreds = review.scored_runs_later(runs)  # the runs are read at an export's click, not on every run
ports = st.columns(3)
ports[0].download_button(  # the file is written when the button is clicked, not on every rerun
    "Download CSV",
    lambda: review.export_bytes(opened, "csv", scoreds),  # read at the click: saves since the page ran included
    file_name="annotations.csv",
    mime="text/csv",
    key="review_csv",
)
ports[1].download_button(
    "Download JSON",
    lambda: review.export_bytes(opened, "json", scoreds),
    file_name="annotations.json",
    mime="application/json",
    key="review_json",
)


def import_file() -> None:
    upload = st.session_state.get("w_review_import")
    if upload is None:
        st.session_state["review_import_result"] = ("error", "choose a CSV or JSON export first")
        return
    st.session_state["review_import_result"] = review.import_upload(opened, upload.name, upload.getvalue())


with ports[2]:
    st.file_uploader("Annotations export (CSV or JSON)", type=["csv", "json"], key="w_review_import")
    st.button("Import", key="review_import", on_click=import_file)
result = st.session_state.pop("review_import_result", None)
if result:
    if result[0] == "ok":  # explicit icons: no emoji look-up in the message (see ui.review.tag_form)
        st.success(result[1], icon=":material/check_circle:")
    else:
        st.error(result[1], icon=":material/error:")
st.caption(
    "Each exported row carries the item (run, dialogue, turn, domain, slot), its span (an episode's last turn "
    "and number of turns; a turn item: its own turn, 1), its convention, outcome, gold "
    "and predicted value from the selected runs under the convention in force (empty for an item of no run "
    "or of a run not selected; a whole-turn item: the turn's joint outcome and states), and the reviewer, "
    "tags, comment, times and version. Import reads the stored columns back (the context is recomputed, not "
    "stored) and merges by time: a row replaces the stored one only when it is newer, so importing twice is "
    "a no-op."
)
