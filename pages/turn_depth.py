"""Turn depth and compounding: JGA by depth beside the metrics robust to compounding, JGA vs GJGA,
inherited vs new errors, first errors.

One tab at a time (`ui.tabs`): a tab's charts are drawn when it is chosen, so the page opens fast."""

from typing import Any

import streamlit as st

import ui
from analysis import figures, views
from ui.clicks import clickable_cells

COMPOUNDING_RUN = (
    "compounding run: the number of consecutive wrong turns that start at the dialogue's first error, the first "
    "error included (0: never wrong; 1: right again at the next turn). A row opens the dialogue at its first error."
)


def open_turn(run: str, turns: Any, *, key: str) -> None:
    """A sortable list of turns; a row opens the dialogue viewer at that turn."""
    picked = ui.show_table(turns, key=key, name=f"{key} {run}", select=True, height=300)
    if picked is not None:
        ui.open_dialogue(run, str(picked["dialogue_id"]), int(picked["turn_index"]))


st.title("Turn depth and compounding")
runs = ui.need_runs()
st.caption(ui.md(ui.scope_caption(runs)) + " · turn 0 is the first user turn")
# With a sweep's worth of runs selected, the charts and tables draw the best few (or those a search finds).
runs, _ = ui.drawn_runs(runs, page="turn_depth")
runs, _ = ui.scorer_read(runs)  # runs whose gold their scorer never reads: n/a, said once (stops when none is left)
ui.warn_incomparable(runs)
by_depth, compounding, origins_tab = ui.tabs(
    ["JGA by turn depth", "Error compounding: JGA against GJGA", "Where errors come from"], page="turn_depth"
)

if by_depth.open:
    with by_depth:
        depth = ui.compute(views.depth_jga, runs)
        depth_figure = ui.figure(figures.depth_lines, depth, colours=ui.colours(), highlight=ui.focus())
        clicked = ui.show_figure(depth_figure, key="depth_lines", name="JGA by turn depth", select=True)
        if clicked:
            ui.put(depth_pick=views.chart_pick(clicked[0], figures.trace_runs(depth_figure)))
        st.caption(
            "JGA beside the metrics robust to compounding (docs/metrics.md): a turn's own changes judged "
            "(turn-level accuracy, FGA at λ 0.5, GCA of the changes at that depth) or partial credit for the "
            "state (IAGA, RSA). Where JGA falls with depth and these hold, the errors are inherited."
        )
        ui.show_table(ui.compute(views.depth_metrics, runs), key="depth_metrics", name="metrics by turn depth")
        depth_run, depth_turn = ui.get("depth_pick") or (None, None)
        if depth_run in runs and depth_turn is not None:
            at_depth = ui.compute(views.turns_at_depth, depth_run, turn_index=int(depth_turn))
            st.text(f"Turns at depth {int(depth_turn)} of {depth_run}: {len(at_depth):,}")
            open_turn(depth_run, at_depth, key="depth_turns")
        else:
            st.caption("Click a point of the chart to list the turns at that depth.")

if compounding.open:
    with compounding:
        pairs = ui.compute(views.history_pairs_of, runs)
        if not pairs:
            st.info(
                "No paired runs selected: compounding needs a predicted-history run and a gold-history run of "
                "the same system, dataset, language, split and seed (set `history` in the manifest)."
            )
        else:
            labels = {f"{p} vs {g}": (p, g) for p, g in pairs}
            chosen = ui.select("Pair", list(labels), state="pair")
            predicted_run, gold_run = labels[chosen]
            curve = ui.compute(views.compounding_curve, predicted_run, gold_run)
            summary = curve.attrs
            st.text(
                f"JGA {summary['jga']:.4f} · GJGA {summary['gjga']:.4f} · gap {summary['gap']:.4f} over "
                f"{summary['paired_turns']:,} paired turns "
                f"(unpaired: {summary['only_in_a']} / {summary['only_in_b']})"
            )
            ui.show_figure(
                ui.figure(
                    figures.compounding_figure,
                    curve,
                    predicted_run=predicted_run,
                    gold_run=gold_run,
                    colours=ui.colours(),
                ),
                key="depth_compounding",
                name=f"compounding {chosen}",
            )

if origins_tab.open:
    with origins_tab:
        origin_runs = runs[: ui.ORIGIN_PANELS]
        first_errors = ui.compute(views.first_error_distribution, runs)
        origins = ui.compute(views.origins_by_depth, origin_runs)
        first_figure = clickable_cells(ui.figure(figures.first_error_bar, first_errors, colours=ui.colours()))
        clicked = ui.show_figure(first_figure, key="depth_first", name="first error turn", select=True)
        if clicked:
            ui.put(first_error_pick=views.chart_pick(clicked[0], figures.trace_runs(first_figure)))
        if len(runs) > len(origin_runs):
            st.caption(f"Inherited vs new errors: the first {len(origin_runs)} of the {len(runs)} selected runs.")
        ui.show_figure(ui.figure(figures.origins_bar, origins), key="depth_origins", name="inherited vs new errors")
        ui.show_table(first_errors, key="depth_first_table", name="first error turn")
        first_run, first_label = ui.get("first_error_pick") or (None, None)
        if first_run in runs and first_label is not None:
            dialogues = ui.compute(views.first_error_dialogues, first_run, label=str(first_label))
            where = "never wrong" if str(first_label) == "none" else f"first wrong at turn {first_label}"
            st.text(f"Dialogues of {first_run} {where}: {len(dialogues):,}")
            st.caption(COMPOUNDING_RUN)
            picked = ui.show_table(
                dialogues,
                key="depth_first_dialogues",
                name=f"dialogues {first_run} first error {first_label}",
                select=True,
                columns=views.PICKER_COLUMNS,
            )
            if picked is not None:
                first = picked["first_error_turn"]
                ui.open_dialogue(first_run, str(picked["dialogue_id"]), None if first != first else int(first))
        else:
            st.caption("Click a bar of the first-error chart to list the dialogues whose first error is at that turn.")
