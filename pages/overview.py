"""Overview: the leaderboard of the selected runs, what makes them incomparable, one chart."""

import streamlit as st

import ui
from analysis import figures, views
from analysis.suite import LABELS

st.title("Overview")
runs = ui.need_runs()

metric_keys = list(views.LEADERBOARD_METRICS)
sort_by = ui.select("Sort by", metric_keys, state="sort_metric", format_func=lambda k: LABELS.get(k, k))

board = ui.compute(views.leaderboard, runs, sort=sort_by)
warnings = views.comparability_warnings(board)

st.caption(ui.md(ui.compute(views.scope_caption, runs)))
for line in warnings:
    st.warning(ui.md(line), icon=":material/warning:")
ui.show_figure(
    ui.figure(figures.leaderboard_bar, board, metric=sort_by, colours=ui.colours()),
    key="overview_bar",
    name="leaderboard",
)
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
    *[k for k in metric_keys if k in views.LEADERBOARD_SHOWN or k == sort_by],
    *[c for c in (f"{sort_by}_low", f"{sort_by}_high") if c in board.columns],
    "not_applicable",
    "n_warnings",
    "warnings",
]
ui.show_table(board, key="overview_table", name="leaderboard", columns=columns, na_rep="n/a")
st.caption(
    "Click a column header to sort. Low/high: 95% interval of the sorted metric from 1,000 bootstrap "
    "resamples of dialogues (turns of one dialogue are correlated, so dialogues are resampled). "
    "Alignment warnings say how predictions paired with gold."
)
for note in views.not_applicable_notes(board):
    st.caption(ui.md(note))
failed = st.session_state.get("failed", {})
for name, error in failed.items():
    st.error(ui.md(f"run {name} failed to load: {error}"))
