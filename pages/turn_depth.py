"""Turn depth and compounding: JGA by depth beside the metrics robust to compounding, JGA vs GJGA,
inherited vs new errors, first errors.

One tab at a time (`ui.tabs`): a tab's charts are drawn when it is chosen, so the page opens fast."""

import streamlit as st

import ui
from analysis import figures, views

st.title("Turn depth and compounding")
runs = ui.need_runs()
st.caption(ui.md(ui.compute(views.scope_caption, runs)) + " · turn 0 is the first user turn")
ui.warn_incomparable(runs)
by_depth, compounding, origins_tab = ui.tabs(
    ["JGA by turn depth", "Error compounding: JGA against GJGA", "Where errors come from"], page="turn_depth"
)

if by_depth.open:
    with by_depth:
        depth = ui.compute(views.depth_jga, runs)
        ui.show_figure(
            ui.figure(figures.depth_lines, depth, colours=ui.colours()), key="depth_lines", name="JGA by turn depth"
        )
        st.caption(
            "JGA beside the metrics robust to compounding (README, Metrics): a turn's own changes judged "
            "(turn-level accuracy, FGA at λ 0.5, GCA of the changes at that depth) or partial credit for the "
            "state (IAGA, RSA). Where JGA falls with depth and these hold, the errors are inherited."
        )
        ui.show_table(ui.compute(views.depth_metrics, runs), key="depth_metrics", name="metrics by turn depth")

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
        ui.show_figure(
            ui.figure(figures.first_error_bar, first_errors, colours=ui.colours()),
            key="depth_first",
            name="first error turn",
        )
        if len(runs) > len(origin_runs):
            st.caption(f"Inherited vs new errors: the first {len(origin_runs)} of the {len(runs)} selected runs.")
        ui.show_figure(ui.figure(figures.origins_bar, origins), key="depth_origins", name="inherited vs new errors")
        ui.show_table(first_errors, key="depth_first_table", name="first error turn")
