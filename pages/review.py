"""Review: the queue of error turns not yet reviewed, progress, tag counts, agreement between two
reviewers, and export/import of the annotations."""

import streamlit as st

import ui
from analysis.review import figures as figures_review
from analysis.review.analysis import cohens_kappa, review_progress, review_queue, tag_counts
from analysis.review.store import StoreError
from analysis.scoring import OUTCOMES
from ui import review
from ui.place import COLUMN_LABELS

QUEUE_ROWS = 500

st.title("Review")
runs = ui.need_runs()
try:  # the database down or locked: one short message in place, and the page reloads when it is back
    store = review.store()
    annotations = store.annotations() if store is not None else None
except StoreError as exc:
    review.unavailable(exc)
    st.stop()
except ValueError as exc:  # the manifest's [review] settings refused (e.g. a tag over the length limit)
    st.error(str(exc))
    st.stop()
if store is None or annotations is None:
    st.info("Open a workspace: annotations are stored beside its manifest (or in [review] database_url).")
    st.stop()

# --- settings -------------------------------------------------------------------------------------
head = st.columns([2, 3])
who = review.reviewer_box(container=head[0])
head[1].caption(f"Annotations: {ui.md(store.backend)} store · every value and comment below is shown as plain text")

errors = ui.compute(review.review_errors, runs)
choices = review.options(errors)
filters = st.columns([2, 2, 2, 2, 2, 2])
run_filter = ui.multiselect("Runs", runs, state="review_runs", container=filters[0], placeholder="(all selected)")
domain = ui.select(
    "Domain", ["", *choices["domain"]], state="review_domain", container=filters[1], format_func=lambda d: d or "(all)"
)
slot_names = review.options(errors, domain=domain or None)["slot"]
slot = ui.select(
    "Slot", ["", *slot_names], state="review_slot", container=filters[2], format_func=lambda s: s or "(all)"
)
outcome = ui.select(
    "Outcome",
    ["", *[o for o in OUTCOMES if o in choices["outcome"]]],
    state="review_outcome",
    container=filters[3],
    format_func=lambda o: COLUMN_LABELS.get(o, o.replace("_", " ")) if o else "(all errors)",
)
tag = ui.select("Tag", ["", *store.tags], state="review_tag", container=filters[4], format_func=lambda t: t or "(any)")
status = ui.select(
    "Status",
    ["unreviewed", "reviewed", "all"],
    state="review_status",
    container=filters[5],
    help="a tag filter shows reviewed items only",
)

queue = review_queue(
    errors,
    annotations,
    run_id=run_filter or None,
    domain=domain or None,
    slot=slot or None,
    outcome=outcome or None,
    tag=tag or None,
    status="reviewed" if tag else status,
)
progress = review_progress(errors, annotations)
by_run = review_progress(errors, annotations, by="run_id")

# --- show -----------------------------------------------------------------------------------------
counts = st.columns(4)
counts[0].metric("Reviewed errors", f"{int(progress['n_reviewed'].iloc[0]):,} / {int(progress['n_errors'].iloc[0]):,}")
share = float(progress["share_reviewed"].iloc[0])
counts[1].metric("Share reviewed", "n/a" if share != share else f"{share:.1%}")
counts[2].metric("Tagged gold annotation error", f"{int(progress['n_gold_errors'].iloc[0]):,}")
counts[3].metric("Annotations in the store", f"{len(annotations):,}")
st.caption(
    f"Errors are the wrong, missed and spurious slots of the {len(runs)} selected run(s), each under "
    f"{'its declared convention' if ui.get('convention', 'declared') == 'declared' else ui.md(ui.get('convention'))}. "
    "An error counts as reviewed when any reviewer tagged its slot or its whole turn."
)

st.subheader("Queue")
shown = figures_review.queue_table(queue, limit=QUEUE_ROWS)
st.caption(
    f"{len(queue):,} error item(s) match ({status if not tag else 'reviewed, tagged ' + ui.md(tag)})"
    + (f"; the first {QUEUE_ROWS} are listed" if len(queue) > QUEUE_ROWS else "")
    + " · pick a row to tag it or open it in the dialogue viewer"
)
picked = ui.show_table(
    shown,
    key="review_queue",
    name="review queue",
    select=True,
    height=320,
    columns=["run_id", "dialogue_id", "turn_index", "slot_name", "outcome", "gold", "predicted", "tags", "reviewers"],
)
if picked is not None:
    ui.put(review_item=picked)
current = ui.get("review_item")
if current is None and len(shown):
    current = {str(k): v for k, v in shown.iloc[0].to_dict().items()}
if current is not None:
    item = review.item_of(current)
    left, right = st.columns([3, 1])
    with left:
        review.tag_form(item, key="review_tag_form", ask_reviewer=False)
    with right:
        st.text(f"gold: {current['gold']}\npredicted: {current['predicted']}\noutcome: {current['outcome']}")
        if st.button("Open in dialogue viewer", key="review_open", icon=":material/forum:"):
            ui.open_dialogue(
                str(current["run_id"]), str(current["dialogue_id"]), int(current["turn_index"]), current["slot_name"]
            )

st.subheader("Tags by domain and slot")
group_by = ui.select("Count per", ["domain", "slot"], state="review_group_by", format_func=str)
ui.show_figure(
    figures_review.tag_counts_bar(tag_counts(annotations, by=("domain", "slot")), by=group_by),
    key="review_tag_counts",
    name="tag counts",
)
st.caption("Progress per run")
ui.show_table(by_run, key="review_progress", name="review progress per run")

st.subheader("Agreement between two reviewers")
reviewers = sorted(set(annotations["reviewer"]))
if len(reviewers) < 2:
    st.info("Agreement needs annotations from two reviewers on the same items.")
else:
    pick = st.columns([2, 2, 2])
    reviewer_a = ui.select("Reviewer A", reviewers, state="review_a", container=pick[0])
    reviewer_b = ui.select("Reviewer B", [r for r in reviewers if r != reviewer_a], state="review_b", container=pick[1])
    unit = ui.select(
        "Unit",
        ["item-tag", "primary"],
        state="review_unit",
        container=pick[2],
        format_func=lambda u: {"item-tag": "each (item, tag) yes/no", "primary": "first tag per item"}[u],
    )
    agreement = cohens_kappa(annotations, reviewer_a, reviewer_b, unit=unit)
    stats = st.columns(4)
    stats[0].metric("Cohen's kappa", "n/a" if agreement.kappa != agreement.kappa else f"{agreement.kappa:.3f}")
    stats[1].metric("Observed agreement", "n/a" if agreement.n_items == 0 else f"{agreement.observed:.3f}")
    stats[2].metric("Expected by chance", "n/a" if agreement.n_items == 0 else f"{agreement.expected:.3f}")
    stats[3].metric("Shared items", f"{agreement.n_items:,}")
    st.caption(
        f"{agreement.n_decisions:,} decisions over {len(agreement.tags)} tag(s); kappa = (p_o − p_e) / (1 − p_e), "
        "n/a when the reviewers share no item or chance agreement is 1."
    )
    disagreements = figures_review.disagreement_table(agreement)
    st.caption(f"{len(disagreements)} shared item(s) tagged differently")
    ui.show_table(disagreements, key="review_disagreements", name=f"disagreements {reviewer_a} {reviewer_b}")

st.subheader("Export and import")
ports = st.columns(3)
ports[0].download_button(
    "Download CSV",
    review.export_bytes(annotations, "csv"),
    file_name="annotations.csv",
    mime="text/csv",
    key="review_csv",
)
ports[1].download_button(
    "Download JSON",
    review.export_bytes(annotations, "json"),
    file_name="annotations.json",
    mime="application/json",
    key="review_json",
)


def import_file() -> None:
    upload = st.session_state.get("w_review_import")
    if upload is None:
        st.session_state["review_import_result"] = ("error", "choose a CSV or JSON export first")
        return
    st.session_state["review_import_result"] = review.import_upload(store, upload.name, upload.getvalue())


with ports[2]:
    st.file_uploader("Annotations export (CSV or JSON)", type=["csv", "json"], key="w_review_import")
    st.button("Import", key="review_import", on_click=import_file)
result = st.session_state.pop("review_import_result", None)
if result:
    (st.success if result[0] == "ok" else st.error)(result[1])
st.caption("Import merges by time: a row replaces the stored one only when it is newer, so importing twice is a no-op.")
