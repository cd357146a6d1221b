"""Overview: the leaderboard of the selected runs, what makes them incomparable, one chart."""

import streamlit as st

import ui
from analysis import figures, seeds, stats, views
from analysis.sgd import views as sgd_views
from analysis.suite import LABELS
from ui import differences, explain
from ui.notice import comparability_notice

PAIRED_MAX = 20  # runs the paired comparison takes at once (190 pairs)

st.title("Overview")
runs = ui.need_runs()

metric_keys = list(views.LEADERBOARD_METRICS)
sort_by = ui.select("Sort by", metric_keys, state="sort_metric", format_func=lambda k: LABELS.get(k, k))

# From the score store when it holds every run (DuckDB over its Parquet: no run's turns read), else computed.
stored = ui.data.stored_leaderboard(ui.resolve([runs])[0][0], sort_by)
board, caption = stored if stored is not None else (None, None)
if board is None:
    board = ui.compute(views.leaderboard, runs, sort=sort_by)
    caption = ui.compute(views.scope_caption, runs)
warnings = views.comparability_warnings(board)

st.caption(ui.md(caption))
comparability_notice(warnings)  # one compact line that expands into the reasons
# Runs that differ only in their seed: mean ± sample std with each seed's point, or the seeds separately.
seed_groups = seeds.seed_groups(board)
combine_seeds = bool((seed_groups != "").any()) and ui.toggle(
    "Combine seeds (mean ± std over runs that differ only in their seed)", state="combine_seeds", default=True
)
# A sweep's worth of runs is not drawn as a thousand bars: the best by the sorted metric, or those a search finds.
_, drawn_board = ui.drawn_runs(runs, page="overview", board=board, metric=sort_by)
if combine_seeds or not (seed_groups != "").any():  # the same chart as `leaderboard_bar` without seeds
    ui.show_figure(
        ui.figure(seeds.overview_bar, drawn_board, metric=sort_by, colours=ui.colours()),
        key="overview_bar",
        name="leaderboard over seeds" if combine_seeds else "leaderboard",
    )
if combine_seeds:
    by_seed = seeds.seed_table(board, [sort_by, *views.LEADERBOARD_SHOWN])
    st.caption(
        "Runs of one system, dataset, language, split, history mode and convention that differ only in their "
        "seed, as mean ± sample standard deviation over the seeds (each seed a point on its bar; their table "
        "follows the leaderboard's). Turn the toggle off to see the seeds separately."
    )
elif (seed_groups != "").any():
    ui.show_figure(
        ui.figure(figures.leaderboard_bar, drawn_board, metric=sort_by, colours=ui.colours()),
        key="overview_bar_runs",
        name="leaderboard",
    )
# Under a convention named after a scorer, its own metrics lead, in its order (`views.scorer_lead`).
heading, lead = views.scorer_lead(board)
lead_keys = [metric for metric, _ in lead]
columns = [
    "run_id",
    "system",
    "dataset",
    "language",
    "split",
    "history",
    "convention",
    "n_dialogues",
    "n_turns",
    *lead_keys,
    *[k for k in metric_keys if (k in views.LEADERBOARD_SHOWN or k == sort_by) and k not in lead_keys],
    *[c for c in (f"{sort_by}_low", f"{sort_by}_high") if c in board.columns],
    "not_applicable",
    "n_warnings",
    "warnings",
]
ui.show_table(
    board,
    key="overview_table",
    name="leaderboard",
    columns=columns,
    na_rep="n/a",
    export_as=ui.place.leaderboard_export(runs),  # the export is the report's leaderboard table
)
st.caption(
    "Click a column header to sort. Low/high: 95% interval of the sorted metric from 1,000 bootstrap "
    "resamples of dialogues (turns of one dialogue are correlated, so dialogues are resampled). "
    "Alignment warnings say how predictions paired with gold."
)
if lead:
    st.caption(
        ui.md(
            f"The first metric columns are {heading}, in its order: "
            + ", ".join(f"{name} ({LABELS[metric]})" for metric, name in lead)
            + ". The columns after them are this tool's metrics, not printed by that scorer."
        )
    )
for note in views.not_applicable_notes(board):
    st.caption(ui.md(note))
for note in views.gold_input_notes(board):  # gold prepared as the convention's scorer prepares it, or never read
    st.caption(ui.md(note))
if combine_seeds:
    shown = by_seed[["label", "n_seeds", "seeds", "runs"]].copy()
    for metric in dict.fromkeys([sort_by, *views.LEADERBOARD_SHOWN]):
        if metric in by_seed.columns:
            shown[LABELS.get(metric, metric)] = [
                seeds.mean_std_text(m, s) for m, s in zip(by_seed[metric], by_seed[f"{metric}_std"], strict=True)
            ]
    ui.show_table(shown, key="overview_seeds_table", name="leaderboard over seeds")
failed = st.session_state.get("failed", {})
for name, error in failed.items():
    st.error(ui.md(f"run {name} failed to load: {error}"))

# --- the focus run's vocabulary check and the gap to its paper's number (ui.explain) --------------------
explain.overview_section(ui.focus() or runs[0])

# --- paired comparison of the runs on the same gold (analysis.compare) ------------------------------
st.subheader("Paired comparison")
# Every pair is a paired bootstrap, and finding the runs on the same gold reads every run's turns: with a
# sweep's worth of runs selected (100: 4,950 pairs, minutes), the runs compared are picked, none at first.
compared = runs
if len(runs) > PAIRED_MAX:
    compared = ui.state.multiselect(
        f"Runs to compare (at most {PAIRED_MAX} of the {len(runs)} selected)",
        runs,
        state="compare_runs",
        max_selections=PAIRED_MAX,
    )
# Runs on one gold with turns missing (PPTOD lacks a turn) are compared on the turns all of them hold when
# asked; whatever the comparison leaves out is named, with why.
shared_turns = len(compared) >= 2 and ui.toggle(
    "Compare on shared turns (runs on one gold with turns missing)", state="compare_shared_turns"
)
groups = ui.compute(views.gold_groups, compared, shared_turns=shared_turns) if len(compared) >= 2 else []
left_out = ui.compute(views.left_out_of_comparison, compared, shared_turns=shared_turns) if len(compared) >= 2 else []
if left_out:
    st.caption(ui.md("Left out of the paired comparison: " + "; ".join(left_out) + "."))
if not groups:
    st.caption(
        f"Pick two to {PAIRED_MAX} runs above to compare them pair by pair."
        if len(runs) > PAIRED_MAX and len(compared) < 2
        else "Paired comparison needs two or more selected runs on the same gold (same turns and gold states)."
    )
else:
    group_labels = {" · ".join(g): g for g in groups}
    choices = st.columns([3, 1])
    picked = ui.select("Runs on the same gold", list(group_labels), state="compare_group", container=choices[0])
    group = group_labels[picked]
    compare_metrics = [m for m in views.LEADERBOARD_METRICS if m in stats.METRICS]
    compare_metric = ui.select(
        "Metric compared",
        compare_metrics,
        state="compare_metric",
        container=choices[1],
        index_hint=compare_metrics[0],  # the registry's first headline metric (JGA)
        format_func=lambda k: LABELS.get(k, k),
    )
    matrix_tab, pair_tab = ui.tabs(["Significance matrix", "Deltas of a pair"], page="overview")
    if matrix_tab.open:
        with matrix_tab:
            table = ui.compute(views.significance_table, group, metric=compare_metric, shared_turns=shared_turns)
            matrix = differences.clickable_pairs(ui.figure(figures.significance_heatmap, table))
            clicked = ui.show_figure(matrix, key="compare_matrix", name="significance", select=True)
            if clicked and "x" in clicked[0] and "y" in clicked[0]:  # a cell is row − column: B is the row
                differences.pick("overview", str(clicked[0]["x"]), str(clicked[0]["y"]))
            st.caption(ui.md(table.attrs.get("holm_note", "")) + " Click a cell to list the turns behind it.")
            ui.show_table(table, key="compare_table", name="pairwise deltas", na_rep="n/a")
            over_seeds = ui.compute(views.seed_comparison, group, metric=compare_metric, shared_turns=shared_turns)
            if len(over_seeds):
                st.caption(ui.md(over_seeds.attrs.get("note", "")))
                ui.show_table(over_seeds, key="compare_seeds_table", name="systems over seeds", na_rep="n/a")
    if pair_tab.open:
        with pair_tab:
            sides = st.columns(2)
            run_a = ui.select("Run a", group, state="compare_a", container=sides[0])
            run_b = ui.select(
                "Run b (delta = b − a)", [r for r in group if r != run_a], state="compare_b", container=sides[1]
            )
            for scope in ("domain", "slot"):
                deltas = ui.compute(
                    views.pair_deltas, run_a, run_b, metric=compare_metric, scope=scope, shared_turns=shared_turns
                )
                st.caption(ui.md(deltas.attrs.get("holm_note", "")) + " Click a bar to list the turns behind it.")
                bars = ui.figure(figures.delta_bar, deltas)
                clicked = ui.show_figure(bars, key=f"compare_{scope}", name=f"delta per {scope}", select=True)
                if clicked and "y" in clicked[0]:
                    differences.pick("overview", run_a, run_b, *views.delta_group(deltas, str(clicked[0]["y"])))
    differences.turn_lists("overview", group, what=LABELS.get(compare_metric, compare_metric))

# --- the SGD evaluator's own numbers, for runs scored under the sgd convention (analysis.sgd) -------------
# A leaderboard from the score store means no run is scored under the sgd convention (`stored_leaderboard`):
# nothing to show, and no run's tables to read to find that out.
sgd_summary = ui.compute(sgd_views.summary, runs) if stored is None else None
if sgd_summary is not None and len(sgd_summary):
    st.subheader("SGD evaluator: all, seen and unseen services")
    st.caption(
        "The numbers google-research's schema_guided_dst evaluator prints (analysis.sgd): means over frames "
        "(one service in one user turn), fuzzy partial credit on non-categorical values. A service absent from "
        "the run's train_schema is unseen. The leaderboard's JGA and AGA of these runs are the all-services row."
    )
    for note in sorted({n for n in sgd_summary["note"] if n}):
        st.caption(ui.md(note))
    shown = sgd_summary.rename(columns=sgd_views.LABELS)
    ui.show_table(shown.drop(columns="note"), key="sgd_summary", name="sgd evaluator", na_rep="n/a")
    per_service = ui.compute(sgd_views.services, runs)
    if len(per_service):
        ui.show_table(
            per_service.rename(columns=sgd_views.LABELS), key="sgd_services", name="sgd services", na_rep="n/a"
        )
