"""Dialogue viewer: one dialogue turn by turn, gold vs predicted state as a diff, errors stepped through."""

import streamlit as st

import ui
from analysis import figures, views
from analysis.crosslingual import mapping_from_manifest
from analysis.review.items import Item, split_slot
from analysis.scoring import OUTCOMES
from ui import errors, review

st.title("Dialogue viewer")
runs = ui.need_runs()

# --- settings -------------------------------------------------------------------------------------
top = st.columns([2, 4, 2])
run = ui.select("Run", runs, state="run", widget="w_run_page", container=top[0])
index = ui.compute(views.dialogue_index, run)
labels = dict(zip(index["dialogue_id"], index["label"], strict=True))
with st.expander("Find a dialogue: sort, filter, search", icon=":material/search:"):
    find = st.columns([3, 2])
    search = find[0].text_input(
        "Search utterances, values and slot names",
        key="picker_search",
        help="a literal piece of text, upper or lower case alike (no patterns)",
    )
    sort = ui.select("Sort by", list(views.PICKER_SORTS), state="picker_sort", container=find[1])
    limits = st.columns([2, 1, 1])
    max_turn = int(index["n_turns"].max()) - 1 if len(index) else 0
    by_first = limits[0].toggle("Filter by first error turn", key="picker_by_first")
    first_range = limits[0].slider(
        "First error between turns",
        0,
        max(max_turn, 1),
        (0, max(max_turn, 1)),
        key="picker_first",
        disabled=not by_first,
    )
    min_errors = limits[1].number_input("At least this many error turns", min_value=0, step=1, key="picker_min_errors")
    min_run = limits[2].number_input("Compounding run at least", min_value=0, step=1, key="picker_min_run")
    st.caption(
        "compounding run: the number of consecutive wrong turns that start at the dialogue's first error, the first "
        "error included (0: never wrong; 1: right again at the next turn). Filtering by first error turn leaves out "
        "the dialogues never wrong. The Dialogue list above follows this order and these filters; in the table, click "
        "a column header to sort it and pick a row to open that dialogue at its first error."
    )
    # The filters as one DuckDB query over the stored run when the score store holds it (`ui.data.stored_view`).
    matches = ui.compute(
        views.pick_dialogues,
        run,
        search=search,
        sort=sort,
        first_error=tuple(first_range) if by_first else None,
        min_errors=int(min_errors),
        min_run=int(min_run),
    )
    counted = st.columns([2, 3])
    counted[0].text(
        f"{len(matches):,} of {len(index):,} dialogues match"
        + ("" if len(matches) else ": the Dialogue list shows them all")
    )
    as_table = ui.toggle("Show them as a table", state="picker_show_table", container=counted[1])
    picked_dialogue = None
    if as_table:
        picked_dialogue = ui.show_table(
            matches,
            key="picker_table",
            name=f"dialogues of {run}",
            select=True,
            columns=views.PICKER_COLUMNS,
            height=250,
        )
    if picked_dialogue is not None:
        first = picked_dialogue["first_error_turn"]
        ui.put(dialogue=str(picked_dialogue["dialogue_id"]), turn=0 if first != first else int(first))
        st.rerun()
matched = [str(d) for d in matches["dialogue_id"]]
options = list(matched or labels)
# A dialogue opened by a link or a chart's click stays on screen outside the filters, until the filters change:
# then the dialogue shown is one they keep (a search that excludes the open dialogue moves the viewer off it).
filters_now = (search, sort, tuple(first_range) if by_first else None, int(min_errors), int(min_run))
if ui.get("_picker_filters", filters_now) != filters_now and ui.get("dialogue") not in options:
    ui.put(dialogue=None)
ui.put(_picker_filters=filters_now)
if ui.get("dialogue") in labels and ui.get("dialogue") not in options:
    options.insert(0, ui.get("dialogue"))
dialogue = ui.select(
    "Dialogue",
    options,
    state="dialogue",
    container=top[1],
    format_func=labels.get,
    index_hint=views.first_dialogue_with_errors(index),
)
if matched and dialogue not in matched:
    top[1].caption("opened from a link or a chart, outside the search and filters")
compare = ui.select(
    "Side by side with",
    ["", *[r for r in runs if r != run]],
    state="compare",
    container=top[2],
    format_func=lambda r: r or "(no second run)",
    help="another language, or the gold-history run of the same system",
)

turns, diff = ui.compute(views.dialogue_view, run, dialogue_id=dialogue)
slot_names = ["", *sorted(set(diff["slot"]))]
filters = st.columns([1, 2, 2])
errors_only = ui.toggle("Only turns with errors", state="errors_only", container=filters[0])
slot = ui.select("Slot", slot_names, state="slot", container=filters[1], format_func=lambda s: s or "(all slots)")
outcome = ui.select(
    "Outcome",
    ["", *OUTCOMES],
    state="outcome_filter",
    container=filters[2],
    format_func=lambda o: views.OUTCOME_LABELS.get(o, "(all outcomes)"),
)
shown_turns = views.filter_turns(turns, diff, errors_only=errors_only, slot=slot or None, outcome=outcome or None)
error_turns = views.filter_turns(turns, diff, errors_only=True, slot=slot or None, outcome=outcome or None)
all_turns = views.filter_turns(turns, diff)
other_turns, other_diff, other_dialogue = None, None, None
other_slot = slot or None  # the second run's slot for the filter: through the ontology alignment
if compare:
    other_dialogue = ui.compute(views.matching_dialogue, compare, dialogue_id=dialogue)
    if other_dialogue is not None:
        other_turns, other_diff = ui.compute(views.dialogue_view, compare, dialogue_id=other_dialogue)
    if slot:
        overrides = tuple(sorted(mapping_from_manifest(ui.workspace_mappings(), run, compare).items()))
        other_slot = ui.compute(views.aligned_slot, run, compare, slot=slot, overrides=overrides)

# --- show -----------------------------------------------------------------------------------------
st.caption(
    ui.md(ui.compute(views.scope_caption, run)) + f" · this dialogue: {len(all_turns)} turns, "
    f"{len(views.filter_turns(turns, diff, errors_only=True))} with errors · markers: ✓ correct, "
    "≠ wrong value, − missed, + spurious; origin: new error, or inherited from the previous turn"
)
values_note = ui.compute(views.values_note, run)
if values_note:  # a per-slot correctness file: the values shown are placeholders
    st.info(ui.md(values_note), icon=":material/info:")
clicked = ui.show_figure(ui.figure(figures.turn_strip, turns), key="turn_strip", name="turn strip", select=True)
if clicked and "x" in clicked[0]:
    ui.put(turn=int(clicked[0]["x"]))  # a click on a turn's bar or marker opens that turn


def show_turn(
    run_id: str,
    dialogue_id: str,
    turns_table: object,
    diff_table: object,
    turn: int,
    *,
    key: str,
    slot_here: str | None = None,
) -> None:
    """One run's view of the current turn: utterances, status, changes, state diff (`slot_here`: the
    slot filter in this run's ontology)."""
    here = views.turn_row(turns_table, turn)
    if here is None:
        st.info(ui.md(f"{run_id} has no turn {turn} in this dialogue."))
        return
    st.subheader(f"Turn {turn}")
    if slot and slot_here != slot:
        st.caption(ui.md(f"Slot filter {slot} is {slot_here} in {run_id} (ontology alignment)"))
    st.text(f"{run_id} · {here['status']} · {here['n_new']} new, {here['n_inherited']} inherited")
    with st.chat_message("user"):
        st.text(here["user"] or "(no user utterance)")
    with st.chat_message("assistant"):
        st.text(here["system"] or "(no system reply)")
    if here["pred_unparseable_reason"]:  # the model's own words, literal (st.code renders no Markdown)
        st.text(f"The predicted text could not be read ({here['pred_unparseable_reason']}); the model wrote:")
        st.code(here["pred_unparseable_text"], language=None, wrap_lines=True)
    st.text(f"Gold changed this turn: {here['gold_changes'] or 'nothing'}")
    st.text(f"Prediction changed this turn: {here['pred_changes'] or 'nothing'}")
    rows = views.diff_at(diff_table, turn, errors_only=errors_only, slot=slot_here, outcome=outcome or None)
    ui.show_table(
        rows,
        key=f"diff_{key}",
        name=f"state diff {run_id} {dialogue_id} turn {turn}",
        columns=["status", "slot", "gold", "predicted", "origin", "gold_change", "pred_change", "outcome"],
    )
    # Tag this turn (or the slot the filter picked) for team review, without leaving the viewer.
    pair = split_slot(slot_here) or (None, None)
    item = Item(ui.meta(run_id).dataset, dialogue_id, turn, domain=pair[0], slot=pair[1], run_id=run_id)
    with st.expander("Tag for review", icon=":material/label:"):
        review.tag_form(item, key=f"tag_{key}")


@st.fragment
@errors.in_place("showing this turn")  # in place of Streamlit's own exception box for a fragment
def stepper() -> None:
    """The turn in focus and the step buttons: a step reruns only this part of the page."""
    turn = ui.get("turn")
    if turn not in all_turns:
        turn = shown_turns[0] if shown_turns else 0
    ui.put(turn=turn)
    previous_error = views.step_turn(error_turns, turn, direction=-1)
    next_error = views.step_turn(error_turns, turn, direction=1)
    previous_turn = views.step_turn(shown_turns, turn, direction=-1)
    next_turn = views.step_turn(shown_turns, turn, direction=1)
    steps = st.columns([1.3, 1, 2, 1, 1.3])
    for column, label, key, target in (
        (steps[0], "◀◀ Previous error", "prev_error", previous_error),
        (steps[1], "◀ Previous", "prev_turn", previous_turn),
        (steps[3], "Next ▶", "next_turn", next_turn),
        (steps[4], "Next error ▶▶", "next_error", next_error),
    ):
        column.button(
            label, key=key, on_click=ui.put, kwargs={"turn": target}, disabled=target is None, width="stretch"
        )
    ui.select(
        "Turn",
        all_turns,
        state="turn",
        container=steps[2],
        label_visibility="collapsed",
        format_func=lambda t: views.turn_position_label(all_turns, t),
    )
    if compare:
        ui.warn_incomparable([run, compare])
        left, right = st.columns(2)
        with left:
            show_turn(run, dialogue, turns, diff, turn, key="a", slot_here=slot or None)
        with right:
            if other_turns is None:
                st.info(ui.md(f"{compare} does not hold dialogue {dialogue}."))
            elif slot and other_slot is None:
                st.info(ui.md(f"No slot of {compare} is aligned with {slot}: nothing to filter on."))
            else:
                show_turn(compare, str(other_dialogue), other_turns, other_diff, turn, key="b", slot_here=other_slot)
    else:
        show_turn(run, dialogue, turns, diff, turn, key="a", slot_here=slot or None)
    ui.update_link("dialogue")


stepper()

st.subheader("Turns")
picked = ui.show_table(
    views.turns_listing(turns, shown_turns),
    key="turn_list",
    name=f"turns of {dialogue}",
    select=True,
    columns=["turn_index", "status", "user", "n_new", "n_inherited", "gold_changes", "pred_changes"],
)
if picked is not None and int(picked["turn_index"]) != ui.get("turn"):
    ui.put(turn=int(picked["turn_index"]))
    st.rerun()
