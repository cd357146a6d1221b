"""Slices: the focus run's worst slices of turns, found by sliceline over turn features (`analysis.slices`),
ranked by JGA gap with support and a dialogue-bootstrap interval; a slice opens its turns, a turn the viewer."""

import streamlit as st

import ui
from analysis import slices, views
from analysis.errors import InputError

NO_TRAINING = "(none)"
COLUMNS = ["rank", "slice", "jga", "jga_low", "jga_high", "gap", "turns", "dialogues", "wrong_turns"]

st.title("Slices")
runs = ui.need_runs()
run = ui.focus() or runs[0]
training = ui.select(
    "Training run (adds the feature 'unseen value': a gold value no gold state of that run holds)",
    [NO_TRAINING, *[r for r in runs if r != run]],
    state="slices_train",
)
train = None if training == NO_TRAINING else training
excluded = ui.multiselect(
    "Leave out features (e.g. 'previous turn', whose compounding errors lead most runs' worst slices)",
    ui.compute(slices.searchable, run, train),
    state="slices_exclude",
)
try:
    report = ui.compute(slices.find_slices, run, train, exclude=tuple(excluded))
except InputError as exc:
    st.error(ui.md(str(exc)))
    st.stop()

settings = report.settings
st.caption(
    ui.md(
        f"{ui.compute(views.scope_caption, run)} · run {run} (focus run, set in the sidebar) · JGA {report.jga:.4f} over {report.n_turns:,} turns, "
        f"{report.n_dialogues:,} dialogues · {settings['method']}: top {settings['top']}, at most "
        f"{settings['max_predicates']} feature levels, at least {settings['min_support_turns']} turns · "
        f"interval: {settings['interval']}"
    )
)
st.caption(ui.md(f"Features searched: {', '.join(report.features) or 'none'}."))
if report.constant:
    st.caption(ui.md(f"Left out, one level in this run: {', '.join(report.constant)}."))
if excluded:
    st.caption(ui.md(f"Left out as chosen: {', '.join(excluded)}."))
if report.grouped:
    st.caption(ui.md(f"Rare levels grouped as '{slices.OTHER}': {', '.join(report.grouped)}."))

if report.note:
    st.info(ui.md(report.note))
    st.stop()

rows = report.slices.to_dict("records")


def pick(row: dict) -> None:
    ui.put(slice_pick=(run, train, tuple(tuple(p) for p in row["predicates"]), str(row["slice"])))


bars = ui.figure(slices.slices_bar, report.slices[COLUMNS], jga=report.jga, run_id=run, colour=ui.colours().get(run))
clicked = ui.show_figure(bars, key="slices_bar", name=f"worst slices {run}", select=True)
if clicked:
    index = clicked[0].get("point_index", clicked[0].get("point_number"))
    if isinstance(index, int) and 0 <= index < len(rows):
        pick(rows[index])
st.caption("Worst gap first (the run's JGA minus the slice's). Click a bar or pick a row to list the slice's turns.")
picked = ui.show_table(report.slices, key="slices_table", name=f"slices {run}", select=True, columns=COLUMNS)
if picked is not None:
    pick(picked)

pick_run, pick_train, predicates, described = ui.get("slice_pick") or (None, None, None, None)
if pick_run == run and pick_train == train and predicates is not None:
    turns = ui.compute(slices.slice_turns, run, train, predicates=predicates)
    st.text(f"Turns of {run} where {described}: {len(turns):,}")
    turn = ui.show_table(turns, key="slice_turns", name=f"slice turns {run}", select=True, height=300)
    if turn is not None:
        ui.open_dialogue(run, str(turn["dialogue_id"]), int(turn["turn_index"]))
else:
    st.caption("Pick a slice in the table to list its turns; a turn opens the dialogue viewer there.")
