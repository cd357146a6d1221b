"""Cross-lingual and cross-ontology: two runs over the same dialogues, aligned ontologies, agreement, gaps;
and every language of those dialogues (one run each) as language x domain and language x slot matrices of
JGA and slot F1 with gaps to a pivot language.

The gaps, the alignment and the languages are tabs (`ui.tabs`): only the chosen one is drawn, so the page opens
fast."""

import streamlit as st

import ui
from analysis import crosslingual as X
from analysis import figures, views
from analysis.crosslingual import GAP_COLUMN, LANGUAGE_BY, mapping_from_manifest
from analysis.diagnostics import AGREEMENT
from analysis.views.shown import CHART_RUNS
from ui import differences

st.title("Cross-lingual and cross-ontology")
runs = ui.need_runs(2)

pair = views.default_pair(runs, ui.workspace_mappings())
columns = st.columns(2)
run_a = ui.select("Run A", runs, state="run_a", container=columns[0], index_hint=pair[0] if pair else None)
run_b = ui.select(
    "Run B", [r for r in runs if r != run_a], state="run_b", container=columns[1], index_hint=pair[1] if pair else None
)
overrides = mapping_from_manifest(ui.workspace_mappings(), run_a, run_b)
summary = ui.compute(views.crosslingual_summary, run_a, run_b, overrides=tuple(sorted(overrides.items())))
pairing = summary["pairing"]
st.caption(
    ui.md(
        f"{ui.compute(views.scope_caption, [run_a, run_b])} · {pairing['paired_turns']:,} paired turns "
        f"(only in A: {pairing['only_in_a']:,}, only in B: {pairing['only_in_b']:,}); correctness is judged "
        "within each run, then compared"
    )
)
ui.warn_incomparable([run_a, run_b])

left, right = st.columns([2, 3])
with left:
    ui.show_figure(
        ui.figure(figures.agreement_heatmap, summary["cells"], run_a=run_a, run_b=run_b),
        key="xl_matrix",
        name="agreement",
    )
with right:
    cell = ui.select(
        "Drill down to",
        list(AGREEMENT),
        state="cell",
        format_func=figures.AGREEMENT_NAMES.get,
        index_hint="only_a",
    )
    slot_filter = ui.select(
        "…where this slot of A (or its aligned slot of B) is wrong",
        ["", *summary["alignment"]["slot_a"]],
        state="xl_slot",
        format_func=lambda s: s or "(any slot)",
    )
    turns = ui.compute(
        views.crosslingual_turns,
        run_a,
        run_b,
        cell=cell,
        overrides=tuple(sorted(overrides.items())),
        slot_a=slot_filter or None,
    )
    st.caption(f"{len(turns):,} turns shown; pick one to open it side by side in the dialogue viewer")
    picked = ui.show_table(
        turns,
        key="xl_turns",
        name=f"{cell} turns",
        select=True,
        columns=["dialogue_id", "turn_index", "user_a", "user_b", "errors_a", "errors_b"],
        height=300,
    )
    if picked is not None:
        ui.put(compare=run_b)
        ui.open_dialogue(run_a, picked["dialogue_id"], picked["turn_index"])

GAPS = {"Gap by slot": "slot", "Gap by domain": "domain", "Gap by turn depth": "turn_index"}
*gap_tabs, alignment_tab, languages_tab = ui.tabs([*GAPS, "Ontology alignment", "All languages"], page="crosslingual")
for tab, by in zip(gap_tabs, GAPS.values(), strict=True):
    if tab.open:
        with tab:
            gaps = summary["gaps"][by]
            ui.show_figure(
                ui.figure(figures.gap_bar, gaps, by=GAP_COLUMN[by], value="gap"),
                key=f"xl_gap_{by}",
                name=f"gap by {by} {run_a} vs {run_b}",
            )
            ui.show_table(gaps, key=f"xl_gap_table_{by}", name=f"gap by {by}")

if alignment_tab.open:
    with alignment_tab:
        st.caption(
            f"{len(overrides)} pairs come from the manifest's [[mappings]]; the rest are inferred from the "
            "parallel gold states (score = Jaccard of the turns each slot is filled × value consistency). "
            "Check it here."
        )
        ui.show_table(
            summary["alignment"],
            key="xl_alignment",
            name="slot alignment",
            columns=[
                "slot_a",
                "slot_b",
                "score",
                "support",
                "source",
                "jaccard",
                "consistency",
                "alternative_b",
                "alternative_score",
            ],
        )
        ui.show_table(summary["domains"], key="xl_domains", name="domain alignment")

# --- N languages: the same dialogues in every language of the group, against a pivot (issue 17 req 3) --------


def show_languages(choice: dict, columns: list) -> None:
    """Runs over Run A's dialogues, one per language: language x domain and language x slot matrices."""

    def run_label(run: str) -> str:
        return f"{choice['languages'].get(run, run)} · {run}"

    picked_runs = ui.multiselect(
        "Runs over the same dialogues as Run A (one per language)",
        choice["group"],
        state="xl_languages",
        container=columns[0],
        format_func=run_label,
    )
    if len(picked_runs) < 2:
        st.info("Pick at least two runs over the same dialogues to compare languages.")
        return
    pivot = ui.select(
        "Pivot language",
        picked_runs,
        state="xl_pivot",
        container=columns[1],
        format_func=run_label,
        index_hint=choice["pivot"],
    )
    metric = ui.select(
        "Metric",
        list(figures.LANGUAGE_METRIC_NAMES),
        state="xl_metric",
        container=columns[2],
        format_func=figures.LANGUAGE_METRIC_NAMES.get,
    )
    pivot_overrides = tuple(
        (run, tuple(sorted(mapping_from_manifest(ui.workspace_mappings(), pivot, run).items()))) for run in picked_runs
    )
    summary = ui.compute(X.language_summary, picked_runs, pivot=pivot, overrides=pivot_overrides)
    counted = summary["turns"]
    st.caption(
        ui.md(
            f"{counted['common']:,} turns that all {len(picked_runs)} runs have count "
            f"(of {', '.join(f'{n:,}' for n in counted['per_run'].values())}); each metric is judged within its "
            "run. Rows are the pivot's domains and slots; another language's slots map onto them through the "
            "ontology alignment (manifest [[mappings]] first, identical names, then inferred). Per slot, JGA "
            "counts the turns where the slot occurs in gold or prediction. Colour: value − pivot."
        )
    )
    ui.warn_incomparable(picked_runs)
    for by in LANGUAGE_BY:
        matrix = summary["matrix"][by]
        heat = differences.clickable_pairs(
            ui.figure(figures.language_heatmap, matrix, by=by, pivot=pivot, metric=metric), filled=True
        )
        clicked = ui.show_figure(heat, key=f"xl_languages_{by}", name=f"{metric} by {by} and language", select=True)
        if clicked and "x" in clicked[0] and "y" in clicked[0]:  # a language's cell: its turns against the pivot's
            cell = views.language_cell(matrix, by=by, column=str(clicked[0]["x"]), key=str(clicked[0]["y"]))
            if cell is not None and cell[0] != pivot:
                differences.pick("crosslingual", pivot, cell[0], cell[1], cell[2], own_b=cell[3])
        with st.expander(f"Language × {by} table (JGA and slot F1, gaps to the pivot)"):
            ui.show_table(matrix, key=f"xl_languages_table_{by}", name=f"language x {by}")
        unaligned = summary["unaligned"][by]
        if len(unaligned):
            st.caption(
                f"{len(unaligned)} {by}{'s' if len(unaligned) != 1 else ''} of other languages have no counterpart "
                "in the pivot and are not in the matrix: "
                + ", ".join(f"{row.own} ({row.run_id}, {row.n_turns} turns)" for row in unaligned.head(12).itertuples())
                + (" …" if len(unaligned) > 12 else "")
            )
    st.caption("Click a language's cell to list the turns only the pivot (A) or only that language (B) gets right.")
    differences.turn_lists("crosslingual", picked_runs, what=figures.LANGUAGE_METRIC_NAMES.get(metric, metric))


if languages_tab.open:
    with languages_tab:
        among = runs
        if len(runs) > CHART_RUNS + 1:
            # Finding the runs over Run A's dialogues reads every run's turns (1,000 runs: minutes and GBs): beyond
            # a chart's worth of other runs, the best by a metric or those a search finds, and a caption says so.
            others, _ = ui.drawn_runs(
                [r for r in runs if r != run_a],
                page="xl_languages",
                verb="Runs over Run A's dialogues looked for among",
            )
            offered = set(others)
            among = [r for r in runs if r == run_a or r in offered]
        choice = ui.compute(X.language_runs, among, anchor=run_a)
        if len([r for r in ui.get("xl_languages", []) if r in choice["group"]]) < 2:
            ui.put(xl_languages=choice["chosen"])  # first visit, or Run A moved to other dialogues
        show_languages(choice, st.columns([3, 1, 1]))
