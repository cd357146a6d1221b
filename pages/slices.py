"""Slices: the worst slices of turns of the focus run (or of the selected runs together), found by sliceline over
turn features (`analysis.slices`), ranked by JGA gap with support and a dialogue-bootstrap interval; a bar or row
opens the slice's turns, a turn the Dialogue viewer. With a comparison run on the same gold (the best other run
by default), the slice also lists its turns only the focus run / only that run gets right, a row opening the
viewer side by side (`ui.differences`; the `diff` deep link carries the slice and the comparison run)."""

from typing import Any

import streamlit as st

import ui
from analysis import slices
from analysis.errors import InputError
from analysis.views.shown import CHART_RUNS
from ui import differences

NO_TRAINING = "(none)"
NO_COMPARISON = "(no comparison)"
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
pooled = list(runs)
if together and len(runs) > CHART_RUNS:
    # Searching 1,000 runs together reads every run's turns (7 million turns of MultiWOZ-size runs): beyond a
    # chart's worth, the best by a metric or those a search finds, and a caption says so (the prefetch alike).
    drawn = set(ui.drawn_runs(runs, page="slices_pooled", verb="Searched together")[0])
    pooled = [r for r in runs if r in drawn]
searched: Any = pooled if together else run  # what `ui.compute` gets: run ids
name = f"{len(pooled)} runs" if together else run
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
    f"{'the' if len(pooled) == len(runs) else 'these'} {len(pooled)} selected runs together (a dialogue of several runs "
    "is one dialogue: counted and resampled once)"
    if together
    else f"run {run} (focus run, set in the sidebar)"
)
st.caption(
    ui.md(
        f"{ui.scope_caption(searched)} · {which} · JGA {report.jga:.4f} over {report.n_turns:,} turns, "
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
key = tuple(pooled) if together else run  # the searched runs, as the picked slice remembers them

# A slice of one run compared with another run on its gold: the slice's turns only one of the two gets right.
others = [r for r in runs if r != run] if not together else []
if len(others) > CHART_RUNS:
    # Finding the runs on this run's gold reads each run's turns: 999 others took 75 s and GBs (issue 43's
    # 1,000-run benchmark). Beyond a chart's worth, the best by JGA (the stored leaderboard) or a search; the
    # prefetch finds the default ones (`ui.prefetch.slices_job`).
    others, _ = ui.drawn_runs(others, page="slices", metric=slices.COMPARE_BY, verb="Offered to compare with")
candidates = ui.compute(slices.comparison_runs, run, others) if others else []
if others and not candidates:
    st.caption(ui.md(f"No other selected run is on the gold of {run}: a slice lists its turns for {run} alone."))


def pick(row: dict) -> None:
    ui.put(slice_pick=(key, train, tuple(tuple(p) for p in row["predicates"]), str(row["slice"])))


# A difference this page did not write itself (a deep link's `diff`): its comparison run and slice, once.
linked = differences.picked("slices", runs)
if linked is not None and ui.get(differences.STATE) != ui.get("slices_linked"):
    ui.put(slices_linked=ui.get(differences.STATE))
    by_label = {str(r["slice"]): r for r in rows}
    if linked[0] == run and linked[1] in candidates and linked[2] in by_label:
        ui.put(slices_compare=linked[1])
        pick(by_label[linked[2]])
compare_to = (
    ui.select(
        "Compare the slice with (the runs on this run's gold, best JGA first)",
        [NO_COMPARISON, *candidates],
        state="slices_compare",
        index_hint=candidates[0],
    )
    if candidates
    else NO_COMPARISON
)


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
    if compare_to != NO_COMPARISON:
        differences.pick("slices", run, compare_to, described)  # what a deep link carries (`diff`)
        ui.put(slices_linked=ui.get(differences.STATE))
        found = ui.compute(slices.slice_differences, run, compare_to, train, predicates=predicates)
        differences.show_lists(
            found,
            run,
            compare_to,
            group=f"slice {described}",
            where=(
                f"{found['counts']['paired_turns']:,} turns of the slice (of {run}) that {compare_to} holds too; a run "
                "is right on a turn when its whole state is right"
            ),
            key="slices_diff",
        )
    turns = ui.compute(slices.slice_turns, searched, train, predicates=predicates)
    st.text(f"Turns of {name} where {described}: {len(turns):,}")
    turn = ui.show_table(turns, key="slice_turns", name=f"slice turns {name}", select=True, height=300)
    if turn is not None:
        ui.open_dialogue(str(turn.get("run_id", run)), str(turn["dialogue_id"]), int(turn["turn_index"]))
else:
    st.caption("Pick a slice in the chart or the table to list its turns; a turn opens the dialogue viewer there.")
