"""Runs that differ only in their seed, read together: mean ± sample std over seeds, with every seed's value.

Two leaderboard rows are seeds of one system when they agree on every column of `SEED_KEYS` (system,
dataset, language, split, history mode and convention) and both declare a `seed`; a group needs two
seeds or more. Every other run stands alone (one seed: its value, no std). The group's label names
the system and what sets it apart, the seeds are listed, and `per_seed` keeps each seed's value so a chart
can show the points, not only the mean.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis import figures as F

SEED_KEYS = ("system", "dataset", "language", "split", "history", "convention")


def seed_groups(board: pd.DataFrame) -> pd.Series:
    """Per leaderboard row, the label of its seed group ("" for a run that has no other seed)."""
    keys = [k for k in SEED_KEYS if k in board.columns]
    labels = pd.Series([""] * len(board), index=board.index, dtype="str")
    if "seed" not in board.columns or not len(board):
        return labels
    seeded = board[board["seed"].notna()]
    for key, group in seeded.groupby(keys, sort=False, dropna=False):
        if group["seed"].nunique() < 2:
            continue
        values = dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True))
        labels[group.index] = f"{values['system']} · {values.get('dataset', '')} · {values.get('history', '')}"
    return labels


def seed_table(board: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """One row per seed group (and per run without other seeds): `label`, the `SEED_KEYS`, `n_seeds`,
    `seeds` and `runs` (as text), and for each metric its mean (`<metric>`), sample std (`<metric>_std`,
    NaN for one seed) and `<metric>_per_seed` (the values, in seed order)."""
    groups = seed_groups(board)
    keys = [k for k in SEED_KEYS if k in board.columns]
    rows = []
    done: set[str] = set()
    for index, run in board.iterrows():
        label = groups[index]
        if label and label in done:
            continue
        members = board[groups == label] if label else board.loc[[index]]
        if label:
            done.add(label)
            members = members.sort_values("seed", kind="stable")
        row: dict[str, object] = {
            "label": label or str(run["run_id"]),
            **{k: run[k] for k in keys},
            "n_seeds": len(members),
            "seeds": ", ".join(str(int(s)) for s in members["seed"] if pd.notna(s)) if "seed" in members else "",
            "runs": ", ".join(map(str, members["run_id"])),
        }
        for metric in metrics:
            if metric not in members.columns:
                continue
            values = members[metric].to_numpy(dtype=float)
            row[metric] = float(np.nanmean(values)) if np.isfinite(values).any() else float("nan")
            row[f"{metric}_std"] = float(np.nanstd(values, ddof=1)) if np.isfinite(values).sum() > 1 else float("nan")
            row[f"{metric}_per_seed"] = tuple(float(v) for v in values)  # a tuple: the frame stays hashable
        rows.append(row)
    return pd.DataFrame(rows)


def seed_bar(
    table: pd.DataFrame, *, metric: str = "jga", colours: Mapping[str, str] | None = None, style: str = "screen"
) -> go.Figure:
    """One bar per system (mean over its seeds) with ± one sample std as error bars, and each seed's
    value as a point on the bar; a run without other seeds is a plain bar."""
    fig = go.Figure()
    if not len(table) or metric not in table.columns:
        return F.apply_style(fig, style)
    labels = list(table["label"])
    palette = F.run_colours(labels) | dict(colours or {})  # a run alone keeps its colour of the other charts
    for row in table.itertuples(index=False):
        label = str(row.label)
        mean = getattr(row, metric)
        std = getattr(row, f"{metric}_std")
        colour = palette.get(label, "#4477AA")
        fig.add_bar(
            name=label,
            x=[label],
            y=[mean],
            marker_color=colour,
            error_y=None
            if not np.isfinite(std)
            else {"type": "data", "array": [std], "color": "#444444", "thickness": 1.2, "width": 4},
            customdata=[[row.n_seeds, row.seeds, std]],
            hovertemplate=f"{F.metric_label(metric)}: %{{y:.4f}} ± %{{customdata[2]:.4f}} (sample std)<br>"
            "%{customdata[0]} seed(s): %{customdata[1]}<extra></extra>",
        )
        per_seed = getattr(row, f"{metric}_per_seed")
        if row.n_seeds > 1:
            fig.add_scatter(
                x=[label] * len(per_seed),
                y=per_seed,
                mode="markers",
                marker={"color": "#222222", "size": 6, "symbol": "circle-open"},
                name=f"{label}: seeds",
                showlegend=False,
                hovertemplate="seed value %{y:.4f}<extra></extra>",
            )
    fig.update_layout(
        yaxis_title=f"{F.metric_label(metric)} (mean ± std over seeds)", xaxis_title="system", showlegend=False
    )
    return F.apply_style(fig, style)


def mean_std_text(mean: float, std: float, digits: int = 4) -> str:
    """`0.4730 ± 0.0377`; the mean alone for one seed (no std), `n/a` when undefined.

    >>> mean_std_text(0.47298, 0.03775), mean_std_text(0.5, float("nan")), mean_std_text(float("nan"), 0.1)
    ('0.4730 ± 0.0377', '0.5000', 'n/a')
    """
    if not np.isfinite(mean):
        return "n/a"
    return f"{mean:.{digits}f}" if not np.isfinite(std) else f"{mean:.{digits}f} ± {std:.{digits}f}"


def overview_bar(
    board: pd.DataFrame, *, metric: str = "jga", colours: Mapping[str, str] | None = None, style: str = "screen"
) -> go.Figure:
    """The Overview's leaderboard chart: `seed_bar` over the seed groups when the leaderboard `board` has
    runs that differ only in their seed, else the per-run `figures.leaderboard_bar`."""
    if (seed_groups(board) != "").any():
        return seed_bar(seed_table(board, [metric]), metric=metric, colours=colours, style=style)
    return F.leaderboard_bar(board, metric=metric, colours=colours, style=style)
