"""Reconcile: one run under several scoring conventions side by side, the turns that flip between two
of them, and the slots responsible, grouped by the convention switch that causes the flip."""

import streamlit as st

import ui
from analysis.conventions import CONVENTIONS
from analysis.reconcile import figures as figures_reconcile
from analysis.reconcile.core import CAUSE_LABELS, CAUSES
from analysis.suite import gold_inputs, not_applicable, not_applicable_text
from ui import reconcile as data

st.title("Reconcile conventions")
runs = ui.need_runs()

# --- settings -------------------------------------------------------------------------------------
top = st.columns([2, 5])
run = ui.select("Run", runs, state="run", widget="w_run_reconcile", container=top[0])
if ui.get("reconcile_conventions") is None:  # the run's own convention, its lenient variant, the default ones
    ui.put(reconcile_conventions=list(ui.compute(data.default_conventions, ui.loaded(run))))
conventions = ui.multiselect("Conventions", list(CONVENTIONS), state="reconcile_conventions", container=top[1])
if not conventions:
    st.info("Pick at least one convention.")
    st.stop()
with st.spinner("Scoring the run under each convention…"):  # shown only when it takes longer than 0.5 s
    rec = ui.compute(data.reconciled, ui.loaded(run), conventions=tuple(conventions))
if isinstance(rec, str):
    st.error(ui.md(f"{run} cannot be reconciled: {rec}"))
    st.stop()

# --- show: metrics per convention ----------------------------------------------------------------
st.caption(
    f"Run {ui.md(run)} ({len(rec.run.turns):,} turns) scored from its files under each chosen convention; the sidebar's "
    "convention does not apply here."
)
table = rec.table()
left, right = st.columns(2)
with left:
    ui.show_figure(figures_reconcile.convention_bar(table), key="reconcile_bar", name=f"conventions {run}")
with right:
    ui.show_table(
        table,
        key="reconcile_table",
        name=f"metrics per convention {run}",
        columns=["convention", "jga", "slot_f1_micro", "slot_accuracy", "slot_f1_seed"],
        na_rep="n/a",
    )
    for convention, scored in rec.scored.items():
        reasons = {metric: why for metric, why in not_applicable(scored).items() if metric in table.columns}
        if reasons:
            st.caption(ui.md(f"{convention}: {not_applicable_text(reasons)}"))
        for found in gold_inputs(scored).values():  # gold prepared as that scorer's own pipeline prepares it
            if found["status"] == "prepared":
                st.caption(ui.md(f"{convention}: gold prepared: {found['note']}"))
    st.caption("Turns whose joint correctness differs, per pair (only a: correct under a only).")
    ui.show_table(rec.flip_counts(), key="reconcile_flip_counts", name=f"flips per pair {run}", height=250)

if len(conventions) < 2:
    st.info("Pick two or more conventions to see which turns flip and why.")
    st.stop()

# --- one pair -------------------------------------------------------------------------------------
st.subheader("Why turns flip between two conventions")
best = data.default_pair(rec) or (conventions[0], conventions[1])
pick = st.columns([2, 2, 3])
a = ui.select("Convention a", list(conventions), state="reconcile_a", container=pick[0], index_hint=best[0])
b = ui.select(
    "Convention b",
    [c for c in conventions if c != a],
    state="reconcile_b",
    container=pick[1],
    index_hint=best[1] if best[1] != a else None,
)
causes = rec.causes(a, b)
lenient = data.lenient_offer(rec, a, b)
if lenient:  # slot naming is a cause: the convention that maps the names is one click away
    st.button(
        f"Add {lenient} (slot naming causes flips here: it maps the names)",
        key="reconcile_add_lenient",
        on_click=ui.put,
        kwargs={"reconcile_conventions": [*conventions, lenient]},
    )
cause = ui.select(
    "Cause",
    ["", *[c for c in CAUSES if causes.get(c)]],
    state="reconcile_cause",
    container=pick[2],
    format_func=lambda c: CAUSE_LABELS[c] if c else "(all causes)",
)
flips = rec.flips(a, b)
st.caption(
    f"{len(flips):,} turn(s) flip between {ui.md(a)} and {ui.md(b)}; {sum(causes.values()):,} responsible slot(s). A slot is "
    "responsible when its error status differs between a and b; its cause is the first switch group that, "
    "toggled alone from a to b, gives b's result (combined: no single switch does)."
)
ui.show_figure(figures_reconcile.cause_bar(causes, a=a, b=b), key="reconcile_causes", name=f"causes {a} {b}")

st.subheader("Responsible slots, by cause")
responsible = figures_reconcile.responsible_table(rec.responsible(a, b), cause=cause or None)
picked_slot = ui.show_table(
    responsible,
    key="reconcile_responsible",
    name=f"responsible slots {a} {b}",
    select=True,
    height=320,
    columns=["cause", "dialogue_id", "turn_index", "slot_name", "gold", "pred", "outcome_a", "outcome_b"],
)
st.caption(
    f"outcome under a / b: the slot's outcome under {ui.md(a)} / {ui.md(b)} (ignored: it does not count there). "
    "Pick a row to open the turn in the dialogue viewer (scored under the sidebar's convention)."
)
if picked_slot is not None:
    ui.open_dialogue(run, str(picked_slot["dialogue_id"]), int(picked_slot["turn_index"]), picked_slot["slot_name"])

st.subheader("Flipped turns")
picked_turn = ui.show_table(
    figures_reconcile.flips_table(flips),
    key="reconcile_flips",
    name=f"flipped turns {a} {b}",
    select=True,
    height=320,
    columns=["dialogue_id", "turn_index", "user", "correct_a", "correct_b", "causes"],
)
if picked_turn is not None:
    ui.open_dialogue(run, str(picked_turn["dialogue_id"]), int(picked_turn["turn_index"]))
