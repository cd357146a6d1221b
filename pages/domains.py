"""Domains: per-domain JGA per run, the outcome mix per domain, JGA by any dialogue attribute.

One tab at a time (`ui.tabs`): a tab's charts are drawn when it is chosen, so the page opens fast."""

import streamlit as st

import ui
from analysis import figures, views
from ui import differences, explain
from ui.clicks import clickable_cells

st.title("Domains")
runs = ui.need_runs()
focus = ui.focus() or runs[0]
st.caption(
    ui.md(ui.scope_caption(runs)) + " · per-domain JGA counts the turns where the domain occurs "
    "in gold or prediction, judging the state restricted to that domain"
)
runs, _ = ui.drawn_runs(runs, page="domains")  # many runs: the best few by a metric, or a search
runs, focus_read = ui.scorer_read(runs, focus)  # runs whose gold their scorer never reads: n/a, said once
ui.warn_incomparable(runs)
if focus_read:
    explain.mark_slots(focus)  # slots a naming mismatch concerns, and the number under the convention mapping them
per_domain_tab, mix_tab, attribute_tab = ui.tabs(
    ["JGA per domain", "Outcomes per domain", "JGA by dialogue attribute"], page="domains"
)

if per_domain_tab.open and runs:
    with per_domain_tab:
        # From the score store when it holds every run (DuckDB, `ui.data.stored_view`: no run parsed), else computed.
        per_domain = ui.compute(views.domain_jga, runs)
        bars = clickable_cells(
            ui.figure(
                figures.grouped_jga_bar,
                per_domain,
                by="domain",
                colours=ui.colours(),
                title="JGA per domain",
                highlight=focus,  # the focus run stands out among many
            )
        )
        clicked = ui.show_figure(bars, key="domains_jga", name="per-domain JGA", select=True)
        if clicked and len(runs) > 1:  # the focus run against the run clicked (or the next one, its own bar)
            run, domain = views.chart_pick(clicked[0], figures.trace_runs(bars))
            other = run if run in runs and run != focus else next(r for r in runs if r != focus)
            differences.pick("domains", focus, other, str(domain))
        if len(runs) > 1:
            st.caption(
                "Click a bar (or cell) to list, in its domain, the turns only the focus run or only that run gets right."
            )
        differences.turn_lists("domains", runs, what="JGA per domain")
        ui.show_table(per_domain, key="domains_table", name="per-domain JGA")

if mix_tab.open and focus_read:
    with mix_tab:
        mix = ui.compute(views.outcome_mix, focus, by="domain")
        ui.show_figure(
            ui.figure(figures.outcome_mix_bar, mix, title=f"Error outcomes per domain — {focus} (focus run)"),
            key="domains_mix",
            name=f"outcome mix per domain {focus}",
        )

if attribute_tab.open and runs:
    with attribute_tab:
        attributes = ui.compute(views.attribute_columns, runs)
        if not attributes:
            st.info("The selected runs carry no dialogue attributes (such as CrossWOZ's dialogue type).")
        else:
            attribute = ui.select("Attribute", attributes, state="attribute")
            by_attribute = ui.compute(views.jga_by_attribute, runs, attribute=attribute)
            st.caption(ui.md(f"runs with a {attribute} attribute: {', '.join(dict.fromkeys(by_attribute['run_id']))}"))
            ui.show_figure(
                ui.figure(
                    figures.grouped_jga_bar,
                    by_attribute,
                    by=attribute,
                    colours=ui.colours(),
                    title=f"JGA by {attribute}",
                ),
                key="domains_attribute",
                name=f"JGA by {attribute}",
            )
            ui.show_table(by_attribute, key="domains_attribute_table", name=f"JGA by {attribute}")
