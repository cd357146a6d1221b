"""The Overview's figures: the leaderboard's bars and the paired comparison (significance matrix, delta bars)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis.escaping import plotly_text
from analysis.figures.style import _colours, apply_style, empty_figure, metric_label
from analysis.palette import (
    DIVERGING_SCALE,
    OKABE_ITO,
)


def leaderboard_bar(
    board: pd.DataFrame,
    *,
    metric: str = "jga",
    colours: Mapping[str, str] | None = None,
    style: str = "screen",
) -> go.Figure:
    """One bar per run for `metric`; hover lists convention, turns and the other headline numbers. The bars
    are one trace (each bar its run's colour): a browser draws one trace of 100 bars in a quarter of the time
    of 100 one-bar traces (benchmarks/README.md). Runs named twice get a trace each, side by side."""
    if not len(board):
        return empty_figure("no runs", style)
    if metric not in board.columns:
        raise ValueError(f"metric has to be a leaderboard column, got {metric!r}")
    runs = list(board["run_id"])
    palette = _colours(runs, colours)
    fig = go.Figure()
    has_ci = f"{metric}_low" in board.columns and f"{metric}_high" in board.columns
    values = board[metric].to_numpy(float)
    hover = (
        f"<b>%{{x}}</b><br>{metric_label(metric)}: %{{y:.4f}}<br>system: %{{customdata[0]}}"
        "<br>dataset: %{customdata[1]}<br>convention: %{customdata[2]}<br>history: %{customdata[5]}"
        "<br>%{customdata[3]:,} turns, %{customdata[4]:,} dialogues<extra></extra>"
    )
    columns = ["system", "dataset", "convention", "n_turns", "n_dialogues", "history"]
    custom = [list(row) for row in board[columns].itertuples(index=False)]
    groups = [list(range(len(runs)))] if len(set(runs)) == len(runs) else [[i] for i in range(len(runs))]
    for rows in groups:
        error = (
            {
                "type": "data",
                "symmetric": False,
                "array": board[f"{metric}_high"].to_numpy(float)[rows] - values[rows],
                "arrayminus": values[rows] - board[f"{metric}_low"].to_numpy(float)[rows],
                "color": "#444444",
                "thickness": 1.2,
                "width": 4,
            }
            if has_ci
            else None
        )
        fig.add_bar(
            name=runs[rows[0]] if len(rows) == 1 else metric_label(metric),
            x=[runs[i] for i in rows],
            y=values[rows],
            error_y=error,
            marker_color=[palette[runs[i]] for i in rows] if len(rows) > 1 else palette[runs[rows[0]]],
            customdata=[custom[i] for i in rows],
            hovertemplate=hover,
        )
    for run, value in zip(runs, values, strict=True):
        if pd.isna(value):  # a metric that does not apply to this run: say so where its bar would be
            fig.add_annotation(x=run, y=0, text="n/a", showarrow=False, yanchor="bottom")
    title = f"{metric_label(metric)} per run" + (" (95% dialogue bootstrap interval)" if has_ci else "")
    fig.update_layout(title=title, showlegend=False, yaxis_title=metric_label(metric))
    fig.update_yaxes(rangemode="tozero")
    return apply_style(fig, style)


def significance_heatmap(table: pd.DataFrame, *, style: str = "screen") -> go.Figure:
    """Runs x runs: the overall delta row run − column run where it is significant after Holm's
    correction (blank otherwise), its interval and p on hover; a caption line says how p was corrected."""
    if not len(table):
        return empty_figure("fewer than two runs on the same gold", style)
    runs = list(table.attrs.get("runs") or dict.fromkeys([*table["row"], *table["column"]]))
    cell = table.set_index(["row", "column"])
    z: list[list[float | None]] = []
    text: list[list[str]] = []
    hover: list[list[str]] = []
    for row in runs:
        z_row: list[float | None] = []
        text_row: list[str] = []
        hover_row: list[str] = []
        for column in runs:
            if row == column or (row, column) not in cell.index:
                z_row.append(None)
                text_row.append("")
                hover_row.append("")
                continue
            r = cell.loc[(row, column)]
            significant = bool(r["significant"])
            z_row.append(float(r["delta"]) if significant else None)
            text_row.append(f"{r['delta']:+.3f}" if significant else "n.s.")
            tested = bool(r.get("tested", True))
            interval = f" [{r['low']:+.4f}, {r['high']:+.4f}]" if tested else ""
            tests = f"{r['p_text']}; {r['p_holm_text']}" if tested else str(r["p_text"])
            hover_row.append(
                f"{plotly_text(row)} − {plotly_text(column)}: {r['delta']:+.4f}{interval}<br>{tests}"
                + ("" if significant or not tested else "<br>not significant after Holm")
                + (f"<br>runs {r['support_text']}" if "support_text" in r else "")
            )
        z.append(z_row)
        text.append(text_row)
        hover.append(hover_row)
    limit = float(np.nanmax(np.abs(table["delta"].to_numpy(float)))) if len(table) else 1.0
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=runs,
            y=runs,
            text=text,
            texttemplate="%{text}",
            customdata=hover,
            hovertemplate="%{customdata}<extra></extra>",
            colorscale=DIVERGING_SCALE,
            zmid=0,
            zmin=-limit,
            zmax=limit,
            colorbar={"title": "Δ"},
        )
    )
    metric = str(table["metric"].iloc[0])
    pairs = int(table["family_size"].iloc[0])
    fig.update_layout(
        title={
            "text": f"Significant differences in {metric_label(metric)} (row − column)",
            "subtitle": {"text": f"paired bootstrap over dialogues, Holm over {pairs} pairs"},
        }
    )
    fig.update_yaxes(autorange="reversed")
    apply_style(fig, style, height=max(360, 60 * len(runs) + 160))
    fig.update_layout(margin={"t": 90})
    return fig


def delta_bar(deltas: pd.DataFrame, *, top: int = 40, style: str = "screen") -> go.Figure:
    """Per domain or slot: the delta b − a with its paired 95% interval as error bars; significant
    deltas (Holm over the groups) solid, the others pale. Each name carries its support (the dialogues
    where the runs differ); the deltas tested come first, largest |delta| first (up to `top`), and those
    too thin to test (`analysis.compare.MIN_SUPPORT`) after them, with no interval."""
    frame = deltas.dropna(subset=["delta"]) if len(deltas) else deltas
    if not len(frame):
        return empty_figure("no delta to show", style)
    tested = frame["tested"].astype(bool) if "tested" in frame else pd.Series(True, index=frame.index)
    order = pd.DataFrame({"tested": tested, "size": frame["delta"].abs()}).sort_values(
        ["tested", "size"], ascending=False, kind="stable"
    )
    frame = frame.reindex(order.index).head(top)
    frame = frame.iloc[::-1]  # largest at the top of a horizontal bar chart
    significant = frame["significant"].to_numpy(dtype=bool)
    names = frame["group"].astype(str)
    support = ""
    if "n_dialogues_differ" in frame:
        names = names + " · " + frame["n_dialogues_differ"].map("{:,}".format) + " dlg"
        support = "<br>%{customdata[4]}"
    colours = np.where(frame["delta"].to_numpy(float) >= 0, OKABE_ITO[0], OKABE_ITO[5])
    fig = go.Figure(
        go.Bar(
            y=names,
            x=frame["delta"],
            orientation="h",
            marker={"color": colours, "opacity": np.where(significant, 1.0, 0.35)},
            error_x={
                "type": "data",
                "symmetric": False,
                "array": (frame["high"] - frame["delta"]).to_numpy(float),
                "arrayminus": (frame["delta"] - frame["low"]).to_numpy(float),
            },
            customdata=np.stack(
                [
                    frame["low"].to_numpy(float),
                    frame["high"].to_numpy(float),
                    frame["p_holm_text"].astype(str).to_numpy(),
                    np.where(significant, "significant", "not significant").astype(object),
                    (frame["support_text"] if "support_text" in frame else frame["group"]).astype(str).to_numpy(),
                ],
                axis=-1,
            ),
            hovertemplate=(
                "<b>%{y}</b><br>Δ %{x:+.4f} [%{customdata[0]:+.4f}, %{customdata[1]:+.4f}]"
                "<br>%{customdata[2]} (%{customdata[3]})" + support + "<extra></extra>"
            ),
        )
    )
    first = frame.iloc[0]
    scope = str(first["scope"])
    fig.update_layout(
        title={
            "text": f"{metric_label(str(first['metric']))} per {scope}: {first['b']} − {first['a']}",
            "subtitle": {
                "text": "95% paired interval; pale: not significant after Holm over the groups; "
                "dlg: dialogues where the runs differ"
            },
        },
        xaxis_title="delta (b − a)",
    )
    fig.add_vline(x=0, line_width=1, line_color="#666")
    apply_style(fig, style, height=max(320, 22 * len(frame) + 160))
    fig.update_layout(margin={"t": 90})
    return fig
