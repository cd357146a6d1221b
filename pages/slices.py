"""Slices: the worst slices of turns of the focus run (or of the selected runs together), found by sliceline over
turn features (`analysis.slices`), ranked by JGA gap with support and a dialogue-bootstrap interval; a bar or row
opens the slice's turns, a turn the Dialogue viewer."""

from typing import Any

import streamlit as st

import ui
from analysis import slices, views
from analysis.errors import InputError

NO_TRAINING = "(none)"
COLUMNS = ["rank", "slice", "jga", "jga_low", "jga_high", "gap", "turns", "dialogues", "wrong_turns", "same_turns"]

st.title("Slices")
runs = ui.need_runs()
runs, read = ui.scorer_read(runs, ui.focus() or runs[0])  # gold its scorer never reads: n/a, said once
if read is None:  # the focus run's numbers are n/a (the notice says why): no slice to search
    st.stop()
run = read
together = len(runs) > 1 and ui.toggle(
    "Search the selected runs together (the run and its manifest attributes become features)", state="slices_pooled"
)
searched: Any = list(runs) if together else run  # what `ui.compute` gets: run ids
name = f"{len(runs)} runs" if together else run
training = ui.select(
    "Training run (adds the feature 'unseen value': a gold value no gold state of that run holds)",
    [NO_TRAINING, *[r for r in runs if together or r != run]],
    state="slices_train",
)
train = None if training == NO_TRAINING else training
try:
    excluded = ui.multiselect(
        "Leave out features (e.g. 'previous turn', whose compounding errors lead most runs' worst slices)",
        ui.compute(slices.searchable, searched, train),
        state="slices_exclude",
    )
    report = ui.compute(slices.find_slices, searched, train, exclude=tuple(excluded))
except InputError as exc:
    st.error(ui.md(str(exc)))
    st.stop()

settings = report.settings
which = (
    f"the {len(runs)} selected runs together (a dialogue of several runs is one dialogue: counted and resampled once)"
    if together
    else f"run {run} (focus run, set in the sidebar)"
)
st.caption(
    ui.md(
        f"{ui.compute(views.scope_caption, searched)} · {which} · JGA {report.jga:.4f} over {report.n_turns:,} turns, "
        f"{report.n_dialogues:,} dialogues · {settings['method']}: top {settings['top']}, at most "
        f"{settings['max_predicates']} feature levels, at least {settings['min_support_turns']} turns · "
        f"interval: {settings['interval']}"
    )
)
st.caption(ui.md(f"Features searched: {', '.join(report.features) or 'none'}."))
if report.constant:
    st.caption(ui.md(f"Left out, one level here: {', '.join(report.constant)}."))
if report.same:
    st.caption(ui.md(f"Left out, the same split of the turns as another feature: {', '.join(report.same)}."))
if excluded:
    st.caption(ui.md(f"Left out as chosen: {', '.join(excluded)}."))
if report.grouped:
    st.caption(ui.md(f"Rare levels grouped as '{slices.OTHER}': {', '.join(report.grouped)}."))

if report.note:
    st.info(ui.md(report.note))
    st.stop()

rows = report.slices.to_dict("records")
key = tuple(runs) if together else run  # the searched runs, as the picked slice remembers them


def pick(row: dict) -> None:
    ui.put(slice_pick=(key, train, tuple(tuple(p) for p in row["predicates"]), str(row["slice"])))


colour = None if together else ui.colours().get(run)
bars = ui.figure(slices.slices_bar, report.slices[COLUMNS], jga=report.jga, run_id=name, colour=colour)
clicked = ui.show_figure(bars, key="slices_bar", name=f"worst slices {name}", select=True)
if clicked:
    index = clicked[0].get("point_index", clicked[0].get("point_number"))
    if isinstance(index, int) and 0 <= index < len(rows):
        pick(rows[index])
st.caption("Worst gap first (the JGA minus the slice's). Click a bar or pick a row to list the slice's turns.")
picked = ui.show_table(report.slices, key="slices_table", name=f"slices {name}", select=True, columns=COLUMNS)
if picked is not None:
    pick(picked)

pick_key, pick_train, predicates, described = ui.get("slice_pick") or (None, None, None, None)
if pick_key == key and pick_train == train and predicates is not None:
    turns = ui.compute(slices.slice_turns, searched, train, predicates=predicates)
    st.text(f"Turns of {name} where {described}: {len(turns):,}")
    turn = ui.show_table(turns, key="slice_turns", name=f"slice turns {name}", select=True, height=300)
    if turn is not None:
        ui.open_dialogue(str(turn.get("run_id", run)), str(turn["dialogue_id"]), int(turn["turn_index"]))
else:
    st.caption("Pick a slice in the chart or the table to list its turns; a turn opens the dialogue viewer there.")
