"""Slots: per-slot precision/recall/F1 with support, the outcome mix per slot, value confusions.

One tab at a time (`ui.tabs`): a tab's charts are drawn when it is chosen, so the page opens fast."""

import streamlit as st

import ui
from analysis import figures, views
from analysis.outcomes import OUTCOMES
from ui import explain
from ui.clicks import clickable_cells

CONFUSIONS = "Value confusions"

st.title("Slots")
runs = ui.need_runs()
run = ui.focus() or runs[0]
ui.scorer_read([], run)  # gold its scorer never reads: every per-slot number n/a, said once, and the page stops

# From the score store when it holds the run (DuckDB over its Parquet, `ui.data.stored_view`), else computed.
table = ui.compute(views.slot_table, run)
st.caption(
    ui.md(f"{ui.compute(views.scope_caption, run)} · {len(table)} slots · run {run} (focus run, set in the sidebar)")
)
explain.mark_slots(run)  # slots a naming mismatch concerns, and the number under the convention mapping them
values_note = ui.compute(views.values_note, run)
if values_note:  # a per-slot correctness file: no values, so no P/R/F1 and no value confusions
    st.info(ui.md(values_note), icon=":material/info:")
scores_tab, mix_tab, confusions_tab = ui.tabs(["Per-slot scores", "Outcomes per slot", CONFUSIONS], page="slots")

if scores_tab.open:
    with scores_tab:
        clicked_bar = ui.show_figure(
            ui.figure(figures.slot_f1_bar, table, run_id=run, colour=ui.colours()[run]),
            key="slots_f1",
            name=f"per-slot F1 {run}",
            select=True,
        )
        if clicked_bar and clicked_bar[0].get("y") in set(table["slot_name"]):
            # a slot's bar: its value confusions and every turn with an error on it (all confusions)
            ui.put(slot=clicked_bar[0]["y"], confusion=None)
            ui.switch_tab("slots", CONFUSIONS)
        st.caption(
            "Worst F1 first. Click a bar or pick a row to see that slot's value confusions and the turns with its "
            "errors."
        )
        picked_slot = ui.show_table(
            table,
            key="slots_table",
            name=f"per-slot scores {run}",
            select=True,
            columns=[
                "slot_name",
                "precision",
                "recall",
                "f1",
                "support",
                *OUTCOMES,
            ],
        )
        if picked_slot is not None:
            ui.put(slot=picked_slot["slot_name"])
            ui.switch_tab("slots", CONFUSIONS)

if mix_tab.open:
    with mix_tab:
        mix = ui.compute(views.outcome_mix, run, by="slot")
        ui.show_figure(
            ui.figure(figures.outcome_mix_bar, mix, title=f"Error outcomes per slot — {run}"),
            key="slots_mix",
            name=f"outcome mix {run}",
        )

if confusions_tab.open:
    with confusions_tab:
        slot_names = list(table["slot_name"])
        slot = ui.select("Slot", slot_names, state="slot")
        domain, name = views.split_slot(table, slot)
        confusions = ui.compute(views.value_confusions, run, domain=domain, slot=name)
        clicked_cell = ui.show_figure(
            clickable_cells(
                ui.figure(figures.confusion_heatmap, confusions, title=f"{slot}: gold → predicted (top confusions)")
            ),
            key="slots_confusion",
            name=f"confusions {run} {slot}",
            select=True,
        )
        if clicked_cell and "x" in clicked_cell[0] and "y" in clicked_cell[0]:  # a cell: gold (row) → predicted
            ui.put(confusion=(slot, str(clicked_cell[0]["y"]), str(clicked_cell[0]["x"])))
        st.caption(
            "Click a cell or pick a row to list its turns (the whole slot's error turns until then); pick a turn to "
            "open it in the dialogue viewer."
        )
        picked = ui.show_table(
            confusions,
            key="slots_confusion_table",
            name=f"confusions {run} {slot}",
            select=True,
            columns=["gold", "predicted", "outcome", "n", "share", "dialogue_id", "turn_index"],
        )
        if picked is not None:
            ui.put(confusion=(slot, picked["gold"], picked["predicted"]))
        chosen = ui.get("confusion")
        gold, predicted = (chosen[1], chosen[2]) if chosen and chosen[0] == slot else (None, None)
        if gold is None:
            examples = ui.compute(views.slot_error_turns, run, domain=domain, slot=name)
        else:
            examples = ui.compute(views.slot_examples, run, domain=domain, slot=name, gold=gold, predicted=predicted)
        st.text(
            f"Turns with an error on {slot}"
            + (f": gold {gold!r} → predicted {predicted!r}" if gold is not None else " (all confusions)")
            + f" — {len(examples)} shown"
        )
        if gold is not None:
            st.button(
                "Show all of the slot's error turns",
                key="slots_all_confusions",
                on_click=ui.put,
                kwargs={"confusion": None},
            )
        turn_pick = ui.show_table(examples, key="slots_examples", name=f"turns {run} {slot}", select=True, height=300)
        if turn_pick is not None:
            ui.open_dialogue(run, turn_pick["dialogue_id"], turn_pick["turn_index"], slot=slot)
