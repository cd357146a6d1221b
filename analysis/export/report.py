"""The paper report of a workspace: every dashboard figure and the tables, as files, plus an index.

`plan_report(workspace)` computes what to write (figures as Plotly figures built by the dashboard's
own builders in `analysis.figures` / `analysis.fewjoint.figures`, with interval variants added here;
tables as frames) without touching the disk; `write_report(plan, out_dir)` writes them through
`analysis.export.figures` with one browser for the batch, a LaTeX snippet per figure (`fig-<name>.tex`:
`\\includegraphics` of its PDF with its escaped caption and `\\label{fig:<name>}`), `main.tex` (`main_tex`: the
title, the comparability notes and an `\\input` of every figure and table snippet), `main.pdf` when asked
(`compile_main`: XeLaTeX, else pdflatex) and `index.md` / `index.html` listing every file with a one-line
caption and the comparability notes (`comparability_notes`). `build_report(path, out_dir)` does both (the
`report` sub-command).

What a report holds:
* leaderboard: table (JGA, final-turn JGA, slot F1, slot accuracy with 95% cluster-bootstrap
  intervals, `stats.bootstrap_ci(..., by="run_id")` over the runs combined per convention) and the
  leaderboard bar with those intervals as error bars;
* per-slot F1 of each run; per-domain JGA with intervals and JGA by turn depth with interval bands,
  one figure per dataset (numbers are comparable only within one dataset) and one table;
* JGA vs GJGA for each (predicted history, gold history) pair of one system;
* cross-lingual gaps by slot and by domain for each cross-lingual pair: a manifest `[[mappings]]`
  entry, or two runs of one system and history mode whose language or dataset differ while most
  dialogues are shared;
* per `[[fewjoint]]` system: the seeds figure and table (mean, sample std and every seed) and the
  per-domain breakdown.

The index and main.tex open with the comparability notes: the Overview page's warnings
(`views.comparability_warnings`), runs of one dataset not on the same gold, metrics that do not apply, and
alignment warnings. Tables bold the best value among comparable runs only, and a metric whose definition
does not apply to a run (slot accuracy over an ontology its slots lie outside) is "n/a" with the reason in
the caption.

Every run keeps one colour in every file: `figures.run_colours` over the workspace's run order.
"""

from __future__ import annotations

import contextlib
import functools
import html
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis import export as E
from analysis import figures as F
from analysis import stats, views
from analysis.errors import InputError
from analysis.escaping import markdown_text, plotly_text
from analysis.export.browser import ready_or_fresh
from analysis.export.browser import session as browser_session
from analysis.export.latex import CHAR_PREAMBLE, CJK_NEEDS, CJK_PREAMBLE, beyond_pdflatex, has_cjk, is_cjk
from analysis.export.latex import CJK_RANGES as _CJK_RANGES
from analysis.model import dialogue_key
from analysis.palette import grayscale_safe
from analysis.registry import LABELS, REPORT_METRICS
from analysis.scoring import Scored
from analysis.store import runs as store_runs
from analysis.workspace import Workspace, load_workspace, read_manifest

CI_METRICS = REPORT_METRICS  # the leaderboard table's metrics, with intervals
LEVEL = 0.95
FEWJOINT_LABELS = {"intent_accuracy": "intent accuracy", "slot_f1": "slot F1", "sentence_accuracy": "sentence accuracy"}
PAIRWISE_METRICS = ("jga", "slot_f1_micro")  # the report's pairwise table (overall, every pair on one gold)
MIN_SHARED = 0.5  # share of the smaller run's dialogues two runs must share to count as parallel
# Scored runs the report holds in memory at once when the score store keeps them: the others are read back
# from it when a part of the report needs them (a report of 500 MultiWOZ-size runs held every one: 5.9 GB).
RUNS_AT_ONCE = 4
# Runs of one gold in the pairwise table: beyond it, the best by JGA (every pair of 500 runs is 124,750
# rows, and `compare` holds every run it compares: the report holds at most this many, or RUNS_AT_ONCE,
# runs at once); the caption says so.
PAIRWISE_RUNS = 10
SEED_RUNS = 20  # runs of one gold the seeds comparison holds at once (it reads every seed of every system)
# Per-slot and per-value figures show this many bars: a single ACL column (3.3 in wide, about 3.3 in tall)
# at 8 pt type; the caption counts the rest.
TOP_N = 15


def _top_note(n: int, what: str, order: str) -> str:
    """The caption's words for a figure cut to `TOP_N` bars of `n`.

    >>> _top_note(40, "slot", "the lowest F1"), _top_note(3, "slot", "the lowest F1")
    (': the 15 slots with the lowest F1, of 40 (25 more not shown)', '')
    """
    if n <= TOP_N:
        return ""
    return f": the {TOP_N} {what}s with {order}, of {n} ({n - TOP_N} more not shown)"


@dataclass
class FigureItem:
    name: str
    caption: str
    figure: go.Figure


@dataclass
class TableItem:
    name: str
    caption: str
    frame: pd.DataFrame
    options: dict[str, Any] = field(default_factory=dict)  # keyword options of export.table_bytes


@dataclass
class ReportPlan:
    """What a report writes: figures, tables and notes (failed runs, skipped parts) for the index."""

    title: str
    figures: list[FigureItem] = field(default_factory=list)
    tables: list[TableItem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # What makes the runs' numbers incomparable: the Overview page's warnings, at the top of the index.
    warnings: list[str] = field(default_factory=list)


@dataclass
class Written:
    name: str
    kind: str
    caption: str
    files: list[Path]


# --- figures with intervals (wrapping the dashboard builders) ------------------------------------


def _slug(text: str) -> str:
    """File-name piece of a run or dataset name.

    >>> _slug("MultiWOZ 2.1"), _slug("simulated-A/zh")
    ('multiwoz-2.1', 'simulated-a-zh')
    """
    return re.sub(r"[^\w.]+", "-", text.lower(), flags=re.UNICODE).strip("-.") or "x"


def _add_error_bars(fig: go.Figure, cis: pd.DataFrame, *, key: str, runs_on_x: bool = False) -> go.Figure:
    """Error bars on each bar trace (named by run) from `cis` rows (run_id, key, estimate, low, high); with
    `runs_on_x`, on each bar of a trace whose categories are the runs (the leaderboard: `key` is the run)."""
    for trace in fig.data:
        if getattr(trace, "type", "") != "bar" or trace.x is None:
            continue
        # the figure's names and categories are escaped text (escaping.plain_figure_text): match them so
        ours = cis if runs_on_x else cis[cis["run_id"].astype(str).map(plotly_text) == trace.name]
        part = ours.set_index(ours[key].astype(str).map(plotly_text))
        if not len(part):
            continue
        x = [str(v) for v in trace.x]
        low = part["low"].reindex(x).to_numpy(float)
        high = part["high"].reindex(x).to_numpy(float)
        y = np.asarray(trace.y, dtype=float)
        trace.error_y = {
            "type": "data",
            "symmetric": False,
            "array": np.nan_to_num(high - y),
            "arrayminus": np.nan_to_num(y - low),
            "visible": True,
            "color": "#333333",
        }
    return fig


def leaderboard_figure(board: pd.DataFrame, cis: pd.DataFrame, *, colours: dict[str, str]) -> go.Figure:
    """The dashboard's leaderboard bar (JGA per run) with 95% bootstrap intervals as error bars."""
    fig = F.leaderboard_bar(board, metric="jga", colours=colours, style="paper")
    jga = cis[cis["metric"] == "jga"].assign(run=lambda f: f["run_id"])
    fig = _add_error_bars(fig, jga, key="run", runs_on_x=True)
    fig.update_layout(title=f"JGA per run ({LEVEL:.0%} cluster-bootstrap intervals)")
    return fig


def domain_figure(cis: pd.DataFrame, *, colours: dict[str, str]) -> go.Figure:
    """The dashboard's per-domain JGA bars with 95% bootstrap intervals as error bars."""
    frame = cis.rename(columns={"estimate": "jga"})
    fig = F.grouped_jga_bar(frame, by="domain", colours=colours, title="JGA per domain", style="paper")
    return _add_error_bars(fig, cis, key="domain")


def _rgba(colour: str, alpha: float) -> str:
    """
    >>> _rgba("#0072B2", 0.2)
    'rgba(0,114,178,0.2)'
    """
    red, green, blue = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red},{green},{blue},{alpha})"


def depth_figure(cis: pd.DataFrame, *, colours: dict[str, str]) -> go.Figure:
    """The dashboard's JGA-by-turn-depth lines with a 95% bootstrap band per run."""
    frame = cis.rename(columns={"estimate": "jga"})
    fig = F.depth_lines(frame, colours=colours, style="paper")
    bands = []
    for run in dict.fromkeys(cis["run_id"]):
        part = cis[cis["run_id"] == run].sort_values("turn_index")
        x = part["turn_index"].to_numpy(float)
        band = go.Scatter(
            x=np.concatenate([x, x[::-1]]),
            y=np.concatenate([part["high"].to_numpy(float), part["low"].to_numpy(float)[::-1]]),
            fill="toself",
            fillcolor=_rgba(colours.get(str(run), "#000000"), 0.12),
            line={"width": 0},
            hoverinfo="skip",
            showlegend=False,
            name=f"{plotly_text(run)} {LEVEL:.0%} interval",
        )
        bands.append(band)
    fig = go.Figure(data=[*bands, *fig.data], layout=fig.layout)
    fig.update_layout(title=f"JGA by turn depth ({LEVEL:.0%} cluster-bootstrap bands)")
    return fig


def fewjoint_seeds_figure(result: Any, *, colour: str) -> go.Figure:
    """One FewJoint system: mean ± sample std over seeds per metric (bars) and every seed (dots)."""
    from analysis.fewjoint.scoring import METRICS

    summary = result.summary.set_index("metric")
    labels = [FEWJOINT_LABELS.get(m, m) for m in METRICS]
    fig = go.Figure()
    fig.add_bar(
        name=f"{result.system}: mean ± std",
        x=labels,
        y=[float(summary.loc[m, "mean"]) for m in METRICS],
        error_y={
            "type": "data",
            "array": [float(summary.loc[m, "std"]) for m in METRICS],
            "visible": True,
            "color": "#333333",
        },
        marker={"color": colour, "opacity": 0.6},
        hovertemplate="%{x}: %{y:.4f}<extra>mean over seeds</extra>",
    )
    for metric, label in zip(METRICS, labels, strict=True):
        values = result.per_seed[metric].to_numpy(float)
        fig.add_scatter(
            name="seeds",
            legendgroup="seeds",
            showlegend=metric == METRICS[0],
            x=[label] * len(values),
            y=values,
            mode="markers",
            marker={"color": "#000000", "size": 5, "symbol": "circle-open"},
            customdata=result.per_seed["seed"].astype(str).to_numpy(),
            hovertemplate="seed %{customdata}: %{y:.4f}<extra></extra>",
        )
    shots = f", {result.shots}-shot" if result.shots is not None else ""
    fig.update_layout(
        title=f"FewJoint {result.system}{shots}: {len(result.seeds)} seeds (mean ± sample std, dots: seeds)",
        yaxis={"title": "score", "range": [0, 1.05]},
    )
    return F.apply_style(fig, "paper")


def fewjoint_seeds_table(result: Any) -> pd.DataFrame:
    """Per metric: mean, sample std and the value of every seed."""
    from analysis.fewjoint.scoring import METRICS

    summary = result.summary.set_index("metric")
    rows = []
    for metric in METRICS:
        row: dict[str, Any] = {
            "metric": FEWJOINT_LABELS.get(metric, metric),
            "mean": float(summary.loc[metric, "mean"]),
            "std": float(summary.loc[metric, "std"]),
        }
        for seed, value in zip(result.per_seed["seed"], result.per_seed[metric], strict=True):
            row[f"seed {seed}"] = float(value)
        rows.append(row)
    return pd.DataFrame(rows)


# --- planning ------------------------------------------------------------------------------------


def _score_all(workspace: Workspace, convention: str | None) -> Mapping[str, Scored]:
    """Every run scored, through the score store: a warm store is read back, no run parsed or scored.
    With a store, a `StoredRuns` (at most `RUNS_AT_ONCE` runs in memory, the others read back when asked);
    without one (`DST_CACHE_DIR=""`), every scored run in a dict."""
    from analysis.store import entries as store_entries

    if store_entries.store_root() is None:
        return store_runs.score_workspace(workspace, convention)
    return StoredRuns(workspace, convention)


class StoredRuns(Mapping[str, Scored]):
    """A workspace's scored runs by name, each scored into the score store once (or found there) and read
    back from it when asked; at most `keep` of them held at once (the most recently asked). A run that
    does not load goes to `workspace.failed` with its one-line error, as `store_runs.score_workspace` does."""

    def __init__(self, workspace: Workspace, convention: str | None, *, keep: int = RUNS_AT_ONCE) -> None:
        from analysis.errors import InputError

        self._keep = max(1, keep)
        self._held: OrderedDict[str, Scored] = OrderedDict()
        self._read: dict[str, Callable[[], Scored]] = {}
        self.most_held = 0  # the largest number of runs held at once (tests)
        failed: dict[str, str] = {}
        for entry in workspace.entries:
            if entry.name in workspace.failed:
                continue
            loaded = workspace.runs.get(entry.name)
            given = None if loaded is None else functools.partial(_given, loaded)
            chosen = convention or entry.meta.convention
            read = functools.partial(store_runs.scored, entry, chosen, given)
            try:
                if store_runs.stored(entry, chosen, tables=("turns", "slots")) is None:
                    self._hold(entry.name, read())  # scored and stored now; a stored run is read when asked
            except InputError as exc:
                failed[entry.name] = str(exc)
                continue
            except ValueError as exc:
                raise InputError(str(workspace.path), "workspace", f"run {entry.name}: {exc}") from None
            except OSError as exc:  # a file that cannot be read to key it (a FIFO is not read): its one line
                failed[entry.name] = f"{exc.filename or entry.pred}: {exc.strerror or exc}"
                continue
            self._read[entry.name] = read
        if failed:
            workspace.failed = {**failed, **workspace.failed}

    def _hold(self, name: str, scored: Scored) -> Scored:
        self._held[name] = scored
        self._held.move_to_end(name)
        while len(self._held) > self._keep:
            self._held.popitem(last=False)
        self.most_held = max(self.most_held, len(self._held))
        return scored

    def __getitem__(self, name: str) -> Scored:
        if name in self._held:
            self._held.move_to_end(name)
            return self._held[name]
        if name not in self._read:
            raise KeyError(name)
        return self._hold(name, self._read[name]())

    def __iter__(self) -> Iterator[str]:
        return iter(self._read)

    def __len__(self) -> int:
        return len(self._read)


def _given(run: Any) -> Any:
    return run


def _cis_by_run(scoreds: Mapping[str, Scored], *, n_resamples: int) -> pd.DataFrame:
    """Intervals of the leaderboard metrics, the runs of each convention combined (shared resamples)."""
    return _cis_of([_ci_parts(s, n_resamples) for s in scoreds.values()], n_resamples=n_resamples)


@dataclass
class _CiParts:
    """What the leaderboard's intervals need of one run (`_ci_parts`): its convention, its per-dialogue
    sums (`stats.RunParts`) and, under the sgd convention, the SGD evaluator's interval rows."""

    convention: str
    parts: stats.RunParts
    evaluator: dict[str, dict[str, Any]]


def _ci_parts(scored: Scored, n_resamples: int) -> _CiParts:
    evaluator: dict[str, dict[str, Any]] = {}
    if scored.convention.name == "sgd":
        from analysis.sgd.views import interval_row

        for metric in CI_METRICS:
            row = interval_row(scored, metric, n_resamples, LEVEL)
            if row is not None:
                evaluator[metric] = row
    return _CiParts(scored.convention.name, stats.run_parts(scored, CI_METRICS), evaluator)


def _cis_of(runs: Sequence[_CiParts], *, n_resamples: int) -> pd.DataFrame:
    """`stats.bootstrap_ci(combine(runs of a convention), metric, by="run_id")` per convention and metric,
    from each run's parts (`stats.runs_bootstrap_ci`: the same numbers, no run's tables held)."""
    groups: dict[str, list[_CiParts]] = {}
    for run in runs:
        groups.setdefault(run.convention, []).append(run)
    frames = []
    for members in groups.values():
        for metric in CI_METRICS:
            frame = stats.runs_bootstrap_ci([m.parts for m in members], metric, n_resamples=n_resamples, level=LEVEL)
            frames.append(_evaluators(frame, [m.evaluator.get(metric) for m in members]))
    return pd.concat(frames, ignore_index=True)


def _evaluators(frame: pd.DataFrame, rows: list[dict[str, Any] | None]) -> pd.DataFrame:
    """Under the sgd convention, JGA (and AGA) are the SGD evaluator's, as on the dashboard's leaderboard."""
    for row in rows:
        if row is not None:
            at = frame.index[frame["run_id"] == row["run_id"]]
            frame.loc[at, list(row)] = pd.DataFrame([row], index=at)
    return frame


LEADERBOARD_META = ("run", "system", "dataset", "language", "history", "convention", "turns")


def leaderboard_columns() -> list[str]:
    """The leaderboard table's columns, as `--columns` names them (a header each).

    >>> leaderboard_columns()[:3], "JGA" in leaderboard_columns()
    (['run', 'system', 'dataset'], True)
    """
    return [*LEADERBOARD_META, *(LABELS.get(m, m) for m in CI_METRICS)]


def check_columns(columns: Sequence[str] | None) -> list[str] | None:
    """`--columns` checked against the leaderboard's (`leaderboard_columns`): the chosen headers, or a
    ValueError naming the columns there are."""
    if columns is None:
        return None
    return [str(c) for c in E.tables.choose_columns(leaderboard_columns(), list(columns))]


def leaderboard_table(board: pd.DataFrame, cis: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, tuple[str, str]]]:
    """The leaderboard as a table frame: run metadata, turns and the CI metrics with their intervals."""
    table = board[["run_id", "system", "dataset", "language", "history", "convention", "n_turns"]].rename(
        columns={"run_id": "run", "n_turns": "turns"}
    )  # the columns of LEADERBOARD_META
    intervals = {}
    for metric in CI_METRICS:
        part = cis[cis["metric"] == metric].set_index("run_id")
        label = LABELS.get(metric, metric)
        table[label] = table["run"].map(part["estimate"]).astype(float)
        table[f"{label} low"] = table["run"].map(part["low"]).astype(float)
        table[f"{label} high"] = table["run"].map(part["high"]).astype(float)
        intervals[label] = (f"{label} low", f"{label} high")
    return table, intervals


def scorer_items(board: pd.DataFrame) -> list[TableItem]:
    """Per convention named after a scorer (with its lines declared, `registry.SCORER_METRICS`): the runs
    under it with what that scorer prints, in its order and under its own names, as the report's first
    tables; the leaderboard after them holds the rest."""
    items = []
    names = board["convention"].astype("str").str.split(" (", n=1, regex=False).str[0]
    for name in dict.fromkeys(names):
        runs = board[names == name]
        heading, lead = views.scorer_lead(runs)
        if not lead:
            continue
        table = runs[["run_id", "convention", "n_turns"]].rename(columns={"run_id": "run", "n_turns": "turns"})
        for metric, label in lead:
            table[label] = runs[metric].astype(float).to_numpy()
        mapping = ", ".join(f"{label} is {LABELS[metric]}" for metric, label in lead)
        items.append(
            TableItem(
                f"scorer_{name}",
                f"{heading[0].upper()}{heading[1:]}: its own metrics, in its order and under its names ({mapping}). "
                "The leaderboard that follows holds the rest, this tool's metrics.",
                table.reset_index(drop=True),
                {"label": f"tab:scorer-{name}", "na_rep": "n/a"},
            )
        )
    return items


def _leaderboard_item(board: pd.DataFrame, cis: pd.DataFrame, *, n_resamples: int) -> TableItem:
    table, intervals = leaderboard_table(board, cis)
    method = f"{LEVEL:.0%} cluster-bootstrap intervals over dialogues ({n_resamples} resamples)"
    not_applicable = "".join(f" {note}." for note in views.not_applicable_notes(board))
    return TableItem(
        "leaderboard",
        f"Leaderboard: every run under its convention, best in bold among comparable runs (same dataset, "
        f"history mode and convention), {method}.{not_applicable}",
        table,
        {"intervals": intervals, "best": list(intervals), "label": "tab:leaderboard", "na_rep": "n/a"},
    )


def _add_seeds(plan: ReportPlan, board: pd.DataFrame) -> None:
    """Runs that differ only in their seed (`analysis.seeds`), as the Overview combines them: a table of
    mean ± sample std over the seeds and a chart with each seed's point; nothing when no run has another seed."""
    from analysis import seeds

    groups = seeds.seed_groups(board)
    if not (groups != "").any():
        return
    metrics = [m for m in CI_METRICS if m in board.columns]
    by_seed = seeds.seed_table(board[groups != ""], metrics)
    table = by_seed[["system", "dataset", "language", "history", "convention", "seeds"]].copy()
    for metric in metrics:
        table[LABELS.get(metric, metric)] = [
            seeds.mean_std_text(m, s) for m, s in zip(by_seed[metric], by_seed[f"{metric}_std"], strict=True)
        ]
    caption = (
        "Runs that differ only in their seed (same system, dataset, language, split, history mode and convention): "
        "mean ± sample standard deviation over the seeds."
    )
    plan.tables.append(TableItem("seeds", caption, table, {"label": "tab:seeds", "na_rep": "n/a"}))
    figure = seeds.seed_bar(by_seed, metric="jga", style="paper")
    plan.figures.append(FigureItem("seeds", "JGA over seeds: mean ± sample std, each seed a point.", figure))


def leaderboard_item(scoreds: dict[str, Scored], *, n_resamples: int = 1000) -> TableItem:
    """The leaderboard table of these scored runs (keyed by run id, in leaderboard order) with its
    caption and options, as the report writes it; the dashboard's Overview exports this very table
    (`ui.place.leaderboard_export`), so both give the same LaTeX for the same runs."""
    board = views.leaderboard(list(scoreds.values()))
    return _leaderboard_item(board, _cis_by_run(scoreds, n_resamples=n_resamples), n_resamples=n_resamples)


def drawn_intervals(figure: go.Figure) -> bool:
    """True when the figure draws intervals: visible error bars or a filled band."""
    for trace in figure.data:
        error = getattr(trace, "error_y", None)
        if error is not None and error.visible and (error.array is not None or error.value):
            return True
        if getattr(trace, "fill", None) in ("toself", "tonexty", "tozeroy"):
            return True
    return False


def pair_kind(a: Scored, b: Scored) -> str:
    """What a pair of parallel runs compares, for a caption: "Cross-lingual" only when their languages
    differ; else what does differ (dataset, convention, ...), in the same language.

    >>> from types import SimpleNamespace as S
    >>> run = lambda **k: S(metas=[S(**{"language": "en", "dataset": "MultiWOZ", "convention": "exact", **k})])
    >>> pair_kind(run(), run(language="zh")), pair_kind(run(), run(convention="mwzeval"))
    ('Cross-lingual', 'Same-language (en; convention differs)')
    """
    ma, mb = a.metas[0], b.metas[0]
    if (ma.language or "") != (mb.language or ""):
        return "Cross-lingual"
    conventions = [getattr(getattr(s, "convention", None), "name", None) or s.metas[0].convention for s in (a, b)]
    differ = ["dataset"] if ma.dataset != mb.dataset else []
    differ += ["convention"] if conventions[0] != conventions[1] else []
    what = f"; {' and '.join(differ)} differ{'s' if len(differ) == 1 else ''}" if differ else ""
    return f"Same-language ({ma.language or 'language not given'}{what})"


def crosslingual_pairs(
    workspace: Workspace,
    scoreds: Mapping[str, Scored],
    *,
    metas: Mapping[str, Any] | None = None,
    keys: Mapping[str, set[str]] | None = None,
) -> list[tuple[str, str]]:
    """Pairs of runs over the same dialogues in two languages or datasets: the manifest's `[[mappings]]`
    first, then runs of one system and history mode that differ in language or dataset and share at
    least half of the smaller run's dialogues. `metas`, `keys`: each run's metadata and dialogue pairing
    keys when the caller has them already (else read from the runs)."""
    pairs: list[tuple[str, str]] = []
    seen: set[frozenset[str]] = set()

    def add(a: str, b: str) -> None:
        if a in scoreds and b in scoreds and a != b and frozenset((a, b)) not in seen:
            seen.add(frozenset((a, b)))
            pairs.append((a, b))

    for entry in workspace.mappings:
        if isinstance(entry.get("a"), str) and isinstance(entry.get("b"), str):
            add(entry["a"], entry["b"])
    if metas is None or keys is None:
        metas, keys = {}, {}
        for r, s in scoreds.items():
            metas[r] = s.metas[0]
            keys[r] = set(dialogue_key(s.turns["dialogue_id"]).unique())
    runs = list(scoreds)
    for i, a in enumerate(runs):
        for b in runs[i + 1 :]:
            ma, mb = metas[a], metas[b]
            if ma.system != mb.system or ma.history != mb.history:
                continue
            if ma.language == mb.language and ma.dataset == mb.dataset:
                continue
            smaller = min(len(keys[a]), len(keys[b])) or 1
            if len(keys[a] & keys[b]) / smaller >= MIN_SHARED:
                add(a, b)
    return pairs


def comparability_notes(
    board: pd.DataFrame, scoreds: Sequence[Scored], *, groups: list[list[str]] | None = None
) -> list[str]:
    """Every note on what keeps the runs' numbers from being compared, for the index and main.tex: the
    Overview's warnings (dataset or version, split, convention, history mode: `views.comparability_warnings`),
    runs comparable by those but not on the same gold (`views.gold_groups`: other dialogues, turns or gold
    states), metrics that do not apply to a run (`views.not_applicable_notes`), and how a run's predictions
    paired with its gold (alignment warnings, which the tables leave out). `groups`: the runs' gold groups
    (`views.gold_groups`) when the caller has them, instead of `scoreds`."""
    notes = list(views.comparability_warnings(board))
    gold = views.gold_groups(scoreds) if groups is None else groups
    on_gold = {run: i for i, group in enumerate(gold) for run in group}
    comparable = views.comparable_groups(board)
    for label, runs in board.groupby(comparable.to_numpy(), sort=False)["run_id"]:
        runs = [str(r) for r in runs]
        golds: dict[object, list[str]] = {}
        for run in runs:
            golds.setdefault(on_gold.get(run, run), []).append(run)
        if len(runs) > 1 and len(golds) > 1:
            parts = " vs ".join(", ".join(members) for members in golds.values())
            notes.append(
                f"Not on the same gold although of one dataset, split, convention and history mode ({label}): "
                f"{parts}. Other dialogues, turns or gold states: their differences are not the systems' alone, "
                "and the pairwise tables compare only runs on the same gold."
            )
    notes += [f"Not applicable: {note}." for note in views.not_applicable_notes(board)]
    if "warnings" in board.columns:
        for run, text in zip(board["run_id"], board["warnings"], strict=True):
            if isinstance(text, str) and text:
                notes.append(f"Alignment of {run}: {text.replace(' | ', '; ')}.")
    return notes


def slice_tables(scoreds: dict[str, Scored], *, n_resamples: int = 1000) -> list[TableItem]:
    """The report's slice tables (`analysis.slices`): one per run with slices (a run without any, e.g. never
    wrong, gets none); called by `plan_report`. Built here, so the slices stage knows nothing of reports."""
    from analysis.slices import find_slices, table_frame  # each run's worst slices (issue 17 req 5)

    items: list[TableItem] = []
    for run_id, scored in scoreds.items():
        if not len(scored.turns):
            continue
        report = find_slices(scored, resamples=n_resamples)
        slug = "".join(ch if ch.isalnum() else "-" for ch in run_id.lower()).strip("-") or "run"
        if not len(report.slices):
            continue
        caption = (
            f"Worst slices of run {run_id} (sliceline over turn features, at most {report.settings['max_predicates']} "
            f"feature levels, at least {report.settings['min_support_turns']} turns), ranked by JGA gap to the run's "
            f"JGA {report.jga:.4f}; {report.settings['interval']}."
        )
        items.append(
            TableItem(
                f"slices-{slug}",
                caption,
                table_frame(report),
                {"intervals": {"JGA": ("JGA low", "JGA high")}, "best": (), "label": f"tab:slices-{slug}"},
            )
        )
    return items


@dataclass
class _RunFacts:
    """What the report keeps of one run after its single pass (`_run_facts`), instead of its tables."""

    meta: Any
    row: dict[str, Any]  # its leaderboard row (`views.leaderboard`)
    fingerprint: tuple[str, int, int]  # its gold (`views.gold_fingerprint`)
    keys: set[str]  # its dialogues' pairing keys (cross-lingual pairs)
    ci: _CiParts
    slot_figure: go.Figure  # the `TOP_N` worst slots
    n_slots: int
    domain_ci: pd.DataFrame
    depth_ci: pd.DataFrame
    slices: list[TableItem]
    unread: str = ""  # why every number under the convention's name is n/a (`views.unread_gold`), or ""


def _run_facts(run_id: str, scored: Scored, colour: str, n_resamples: int) -> _RunFacts:
    row = views.leaderboard([scored]).to_dict("records")[0]
    slots = views.slot_table(scored)
    facts = _RunFacts(
        meta=scored.metas[0],
        row=row,
        fingerprint=views.gold_fingerprint(scored),
        keys=set(dialogue_key(scored.turns["dialogue_id"]).unique()),
        ci=_ci_parts(scored, n_resamples),
        slot_figure=F.slot_f1_bar(slots, run_id=run_id, colour=colour, top=TOP_N, style="paper"),
        n_slots=len(slots),
        domain_ci=_concat_ci([scored], by="domain", n_resamples=n_resamples),
        depth_ci=_concat_ci([scored], by="turn_index", n_resamples=n_resamples),
        slices=slice_tables({run_id: scored}, n_resamples=n_resamples),
        unread="; ".join(views.unread_gold(scored).values()),
    )
    if facts.unread:  # its convention's scorer never reads its gold: per-domain and per-depth rows n/a
        for frame in (facts.domain_ci, facts.depth_ci):
            frame.loc[:, ["estimate", "low", "high"]] = np.nan
    return facts


def _pairwise_runs(group: list[str], board: pd.DataFrame) -> list[str]:
    """The runs of a gold group the pairwise table compares: all of them up to `PAIRWISE_RUNS`, else the
    best `PAIRWISE_RUNS` by JGA (ties in the group's order), in the group's order."""
    if len(group) <= PAIRWISE_RUNS:
        return group
    jga = board.set_index("run_id")["jga"].astype("float64").fillna(-np.inf)
    ranked = sorted(group, key=lambda run: -float(jga[run]))  # stable: ties keep the group's order
    chosen = set(ranked[:PAIRWISE_RUNS])
    return [run for run in group if run in chosen]


def plan_report(workspace: Workspace, *, convention: str | None = None, n_resamples: int = 1000) -> ReportPlan:
    """Everything the report writes for a loaded workspace (no file is written). Each run is read (from
    the score store when it holds it) for one pass that keeps only what the report shows of it (`_RunFacts`);
    the parts that pair runs read them back a few at a time (`StoredRuns`: at most `RUNS_AT_ONCE` held)."""
    scoreds = _score_all(workspace, convention)
    if not scoreds:
        raise InputError(str(workspace.path), "workspace", "no run loaded: " + "; ".join(workspace.failed.values()))
    plan = ReportPlan(title=workspace.name)
    plan.notes += [f"run {name} not loaded: {error}" for name, error in workspace.failed.items()]
    runs = list(scoreds)
    colours = F.run_colours([*runs, *workspace.fewjoint])
    facts = {run_id: _run_facts(run_id, scoreds[run_id], colours[run_id], n_resamples) for run_id in runs}

    board = pd.DataFrame([f.row for f in facts.values()])
    gold_groups = views.gold_groups_of({r: f.fingerprint for r, f in facts.items()})
    plan.warnings = comparability_notes(board, [], groups=gold_groups)
    cis = _cis_of([f.ci for f in facts.values()], n_resamples=n_resamples)
    method = f"{LEVEL:.0%} cluster-bootstrap intervals over dialogues ({n_resamples} resamples)"
    plan.tables += scorer_items(board)  # what each scorer prints, before the rest (issue 39)
    plan.tables.append(_leaderboard_item(board, cis, n_resamples=n_resamples))
    plan.figures.append(
        FigureItem("leaderboard", f"JGA per run with {method}.", leaderboard_figure(board, cis, colours=colours))
    )
    _add_seeds(plan, board)
    for run_id, fact in facts.items():
        if fact.unread:  # no number under the scorer's name: the run is left out of the per-slot figures, said
            plan.notes.append(
                f"per-slot F1 of run {run_id}: n/a ({fact.unread}); its per-domain and per-depth rows too"
            )
            continue
        caption = f"Per-slot F1 of run {run_id}{_top_note(fact.n_slots, 'slot', 'the lowest F1')}."
        plan.figures.append(FigureItem(f"slot-f1-{_slug(run_id)}", caption, fact.slot_figure))
    _add_dataset_parts(plan, facts, board, colours, method=method)
    for group in gold_groups:  # paired comparison of the runs on the same gold (analysis.compare)
        group = [r for r in group if not facts[r].unread]  # n/a under the scorer's name: nothing to compare
        if len(group) >= 2:
            _add_gold_group(plan, group, board, scoreds, n_resamples=n_resamples)
    _add_compounding(plan, facts, scoreds, colours)
    _add_crosslingual(plan, workspace, scoreds, facts)
    plan.tables += [item for fact in facts.values() for item in fact.slices]
    from analysis.export.explain import explain_tables  # vocabulary checks and published gaps

    explained, naming = explain_tables(workspace, scoreds)
    plan.tables += [TableItem(name, caption, frame, {"best": ()}) for name, caption, frame in explained]
    plan.warnings += naming
    _add_fewjoint(plan, workspace, colours, n_resamples=n_resamples)
    return plan


def _add_dataset_parts(
    plan: ReportPlan, facts: dict[str, _RunFacts], board: pd.DataFrame, colours: dict[str, str], *, method: str
) -> None:
    """Per dataset: the JGA per domain and by turn depth of its runs (two figures), then one per-domain
    JGA table over every dataset."""
    by_dataset: dict[str, list[str]] = {}
    for run_id, fact in facts.items():
        by_dataset.setdefault(fact.meta.dataset or "(no dataset)", []).append(run_id)
    domain_frames = []
    for dataset, members in by_dataset.items():
        domain_ci = pd.concat([facts[r].domain_ci for r in members], ignore_index=True)
        depth_ci = pd.concat([facts[r].depth_ci for r in members], ignore_index=True)
        domain_frames.append(domain_ci.assign(dataset=dataset))
        which = f"{dataset} ({len(members)} run{'s' if len(members) > 1 else ''})"
        figure = domain_figure(domain_ci, colours=colours)
        # Beyond four runs the bars become a heatmap (`figures.grouped_jga_bar`): no interval is drawn there.
        drawn = (
            f"error bars: {method}"
            if drawn_intervals(figure)
            else "each cell's JGA printed; intervals in the per-domain JGA table"
        )
        plan.figures.append(
            FigureItem(
                f"domain-jga-{_slug(dataset)}",
                f"JGA per domain, {which}: turns where the domain occurs; {drawn}.",
                figure,
            )
        )
        plan.figures.append(
            FigureItem(
                f"depth-jga-{_slug(dataset)}",
                f"JGA by turn depth, {which}: turn 0 is the first user turn; bands: {method}.",
                depth_figure(depth_ci, colours=colours),
            )
        )
    domains = pd.concat(domain_frames, ignore_index=True)
    plan.tables.append(
        TableItem(
            "domain-jga",
            f"JGA per domain and run ({method}); best in bold per domain among comparable runs.",
            # history and convention: runs are compared (bold) only with comparable ones
            domains.assign(
                history=domains["run_id"].map(board.set_index("run_id")["history"]),
                convention=domains["run_id"].map(board.set_index("run_id")["convention"]),
            )[["dataset", "run_id", "history", "convention", "domain", "estimate", "low", "high", "n_turns"]].rename(
                columns={"run_id": "run", "estimate": "JGA", "n_turns": "turns"}
            ),
            {"intervals": {"JGA": ("low", "high")}, "best": ["JGA"], "label": "tab:domain-jga"},
        )
    )


def _add_gold_group(
    plan: ReportPlan, group: list[str], board: pd.DataFrame, scoreds: Mapping[str, Scored], *, n_resamples: int
) -> None:
    """The runs on one gold: their pairwise deltas (`analysis.compare`), then, when a system has two seeds
    or more among them, the systems compared over their seeds (`analysis.seed_compare`)."""
    from analysis.compare import compare
    from analysis.export.tables import pairwise_delta_table

    compared = _pairwise_runs(group, board)
    comparison = compare({r: scoreds[r] for r in compared}, metrics=PAIRWISE_METRICS, n_resamples=n_resamples)
    pairwise = pairwise_delta_table(comparison)
    first = _slug(group[0])
    chosen = (
        f" Of the {len(group)} runs on this gold, the {len(compared)} best by JGA "
        f"(the table holds at most {PAIRWISE_RUNS} runs' pairs)."
        if len(compared) < len(group)
        else ""
    )
    plan.tables.append(
        TableItem(
            f"pairwise-{first}",
            f"Pairwise deltas b − a of the {len(compared)} runs on the same gold as {group[0]}: "
            f"{LEVEL:.0%} paired cluster-bootstrap intervals over dialogues ({n_resamples} resamples), "
            f"two-sided p, Holm-corrected p and * where significant. {pairwise.attrs['note']}{chosen}",
            pairwise,
            {"intervals": {"Δ": ("Δ low", "Δ high")}, "best": (), "label": f"tab:pairwise-{first}"},
        )
    )
    from analysis.seeds import seed_groups

    if not (seed_groups(board[board["run_id"].isin(group)]) != "").any():
        return  # no system with two seeds or more on this gold (read off the board, no run read back)
    if len(group) > SEED_RUNS:  # every run of the group held at once: bounded, and said
        plan.notes.append(
            f"systems over their seeds on the gold of {group[0]}: not compared in the report ({len(group)} "
            f"runs; it compares at most {SEED_RUNS} at once); `compare --system` compares chosen systems"
        )
        return
    systems = views.seed_systems([scoreds[r] for r in group])
    if len(systems) >= 2 and any(len(runs) >= 2 for runs in systems.values()):
        from analysis.export.tables import seed_delta_table
        from analysis.seed_compare import compare_seeds

        over_seeds = seed_delta_table(compare_seeds(systems, metrics=PAIRWISE_METRICS, n_resamples=n_resamples))
        plan.tables.append(
            TableItem(
                f"seeds-{first}",
                f"Systems over their seeds, on the same gold as {group[0]}: b − a of the means over seeds, "
                f"{LEVEL:.0%} intervals ({n_resamples} resamples), two-sided p, Holm-corrected p and * where "
                f"significant. {over_seeds.attrs['note']}",
                over_seeds,
                {"intervals": {"Δ": ("Δ low", "Δ high")}, "best": (), "label": f"tab:seeds-{first}"},
            )
        )


def _add_compounding(
    plan: ReportPlan, facts: dict[str, _RunFacts], scoreds: Mapping[str, Scored], colours: dict[str, str]
) -> None:
    """A figure per run with predicted history whose gold-history twin is loaded: JGA vs GJGA by turn."""
    for predicted, gold in views.history_pairs([f.meta for f in facts.values()]):
        curve = views.compounding_curve(scoreds[predicted], scoreds[gold])
        attrs = curve.attrs
        fig = F.compounding_figure(curve, predicted_run=predicted, gold_run=gold, colours=colours, style="paper")
        plan.figures.append(
            FigureItem(
                f"compounding-{_slug(predicted)}",
                f"JGA ({predicted}, predicted history) vs GJGA ({gold}, gold history) by turn; overall "
                f"JGA {attrs.get('jga', float('nan')):.3f}, GJGA {attrs.get('gjga', float('nan')):.3f}.",
                fig,
            )
        )


def _add_crosslingual(
    plan: ReportPlan, workspace: Workspace, scoreds: Mapping[str, Scored], facts: dict[str, _RunFacts]
) -> None:
    """Two figures per cross-lingual pair of runs: the accuracy gap by slot and by domain."""
    metas = {r: f.meta for r, f in facts.items()}
    for a, b in crosslingual_pairs(workspace, scoreds, metas=metas, keys={r: f.keys for r, f in facts.items()}):
        from analysis.crosslingual import mapping_from_manifest

        overrides = mapping_from_manifest(workspace.mappings, a, b)
        summary = views.crosslingual_summary(scoreds[a], scoreds[b], overrides=tuple(sorted(overrides.items())))
        pairing = summary["pairing"]
        for by, label in (("slot", "slot_a"), ("domain", "domain_a")):
            gaps = summary["gaps"][by]
            fig = F.gap_bar(gaps, by=label, value="gap", top=TOP_N, style="paper")
            shown = len(gaps["gap"].dropna()) if "gap" in gaps.columns else 0
            fig.update_layout(title=f"Gap by {by}: {plotly_text(a)} − {plotly_text(b)}")  # styled already: escape here
            plan.figures.append(
                FigureItem(
                    f"crosslingual-{by}-{_slug(a)}-vs-{_slug(b)}",
                    f"{pair_kind(scoreds[a], scoreds[b])} gap by {by} (accuracy of {a} minus {b}, positive: A better) over "
                    f"{pairing.get('paired_turns', 0):,} paired turns; slots aligned from the parallel gold "
                    f"({len(overrides)} from the manifest){_top_note(shown, by, 'the largest absolute gap')}.",
                    fig,
                )
            )


def _add_fewjoint(plan: ReportPlan, workspace: Workspace, colours: dict[str, str], *, n_resamples: int) -> None:
    """Per FewJoint system of the workspace: its seeds figure, its per-domain figure and its seeds table; then
    the systems that share a gold compared over seeds and sentences (`fewjoint_comparisons`)."""
    if not workspace.fewjoint:
        return
    from analysis.fewjoint import figures as FF
    from analysis.fewjoint.scoring import score_fewjoint

    fewjoint_results = {}
    for name, system in workspace.fewjoint.items():
        result = fewjoint_results[name] = score_fewjoint(system)
        slug = _slug(name)
        plan.figures.append(
            FigureItem(
                f"fewjoint-seeds-{slug}",
                f"FewJoint {name}: intent accuracy, slot F1 and sentence accuracy, mean ± sample std over "
                f"{len(result.seeds)} seeds (averaging: {result.averaging}); dots: single seeds.",
                fewjoint_seeds_figure(result, colour=colours[name]),
            )
        )
        breakdown = FF.breakdown_bar(result, by="domain")
        breakdown.update_traces(marker_color=colours[name])
        plan.figures.append(
            FigureItem(
                f"fewjoint-domains-{slug}",
                f"FewJoint {name}: sentence accuracy per domain, mean ± std over seeds.",
                F.apply_style(breakdown, "paper"),
            )
        )
        plan.tables.append(
            TableItem(
                f"fewjoint-seeds-{slug}",
                f"FewJoint {name}: mean, sample std (ddof=1) and every seed ({result.averaging} averaging).",
                fewjoint_seeds_table(result),
                {"best": (), "label": f"tab:fewjoint-{slug}"},
            )
        )
    plan.tables += fewjoint_comparisons(fewjoint_results, n_resamples=n_resamples)


def fewjoint_comparisons(results: Mapping[str, Any], *, n_resamples: int) -> list[TableItem]:
    """Per gold that two scored FewJoint systems or more share: every pair compared over seeds and sentences
    (`analysis.fewjoint.compare`, pooled over sentences whatever the results' averaging), one table."""
    from analysis.fewjoint.compare import compare_fewjoint, comparison_table, same_gold

    items = []
    for names in same_gold(results):
        if len(names) < 2:
            continue
        table = comparison_table(compare_fewjoint({n: results[n] for n in names}, n_resamples=n_resamples))
        items.append(
            TableItem(
                f"fewjoint-compare-{_slug(names[0])}",
                f"FewJoint systems on the gold of {names[0]}, over their seeds and query sentences: b − a of the "
                f"means over seeds, {LEVEL:.0%} intervals ({n_resamples} resamples), two-sided p, Holm-corrected "
                f"p and * where significant. {table.attrs['note']}",
                table,
                {
                    "intervals": {"Δ": ("Δ low", "Δ high")},
                    "best": (),
                    "label": f"tab:fewjoint-compare-{_slug(names[0])}",
                },
            )
        )
    return items


def _concat_ci(members: Sequence[Scored], *, by: str, n_resamples: int) -> pd.DataFrame:
    frames = []
    for scored in members:
        frame = stats.bootstrap_ci(scored, "jga", by=by, n_resamples=n_resamples, level=LEVEL)
        assert isinstance(frame, pd.DataFrame)
        frames.append(frame.assign(run_id=scored.metas[0].run_id))
    return pd.concat(frames, ignore_index=True)


# --- LaTeX: one snippet per figure, main.tex, the compiled PDF -------------------------------------

MAIN_TEX = "main.tex"
MAIN_PDF = "main.pdf"
MAIN_LOG = "main.log"  # kept beside main.tex only when the compile fails
NO_ERROR_LINE = "no error line in the log"
COMPILE_SECONDS = 300.0  # a compile that takes longer is stopped and reported
# Characters pdflatex (T1 fonts) cannot print as they are: typed as commands in main.tex. Any other
# character beyond Latin Extended-A (Chinese, for one) prints as [U+XXXX]: never silently dropped. XeLaTeX
# (texlive-xetex, preferred when installed) prints them all: Liberation Serif, Chinese in Noto Serif CJK SC.
_PDFLATEX_CHARS = {
    "\u2212": r"\ensuremath{-}",
    "\u00b1": r"\ensuremath{\pm}",
    "\u0394": r"\ensuremath{\Delta}",
    "\u03b1": r"\ensuremath{\alpha}",
    "\u03ba": r"\ensuremath{\kappa}",
    "\u00d7": r"\ensuremath{\times}",
    "\u2264": r"\ensuremath{\leq}",
    "\u2265": r"\ensuremath{\geq}",
    "\u2192": r"\ensuremath{\rightarrow}",
    "\u2248": r"\ensuremath{\approx}",
    "\u00b7": r"\ensuremath{\cdot}",
    "\u2026": r"\ldots{}",
    "\u2022": r"\textbullet{}",
}


class CompileError(Exception):
    """main.tex did not compile (or no LaTeX is installed where a PDF was asked for): every other file
    of the report is written; the message names the engine and the log's first error line."""


def figure_snippet(name: str, caption: str, graphic: str, *, wide: bool = False) -> str:
    r"""A figure's LaTeX: `\includegraphics` of its PDF at the column (`wide`: text) width, its caption
    (LaTeX-escaped: run names may hold `_ & % # $ { } ~ ^ \`) and the label `fig:<name>`.

    >>> print(figure_snippet("slot-f1-a_b", "Per-slot F1 of run a_b & 100%.", "slot-f1-a_b.pdf"))
    % Figure of `python -m analysis report`: \input{fig-slot-f1-a_b.tex}; needs \usepackage{graphicx}.
    \begin{figure}[t]
    \centering
    \includegraphics[width=\columnwidth]{{slot-f1-a_b}.pdf}
    \caption{Per-slot F1 of run a\_b \& 100\%.}
    \label{fig:slot-f1-a_b}
    \end{figure}
    <BLANKLINE>
    """
    env, size = ("figure*", r"\textwidth") if wide else ("figure", r"\columnwidth")
    stem, dot, extension = graphic.rpartition(".")
    cjk = ["% " + CJK_NEEDS, CJK_PREAMBLE] if has_cjk(caption) else []
    if beyond_pdflatex(caption):
        cjk += ["% Characters pdflatex cannot print: compile with XeLaTeX (pdflatex prints [U+XXXX]).", CHAR_PREAMBLE]
    return "\n".join(
        [
            f"% Figure of `python -m analysis report`: \\input{{fig-{name}.tex}}; needs \\usepackage{{graphicx}}.",
            *cjk,
            f"\\begin{{{env}}}[t]",
            "\\centering",
            # braces around the stem: a name with dots (multiwoz-2.1) is not read as an extension
            f"\\includegraphics[width={size}]{{{{{stem}}}{dot}{extension}}}",
            f"\\caption{{{E.tables.latex_escape(caption)}}}",
            f"\\label{{{E.tables.latex_label('fig:' + name)}}}",
            f"\\end{{{env}}}",
            "",
        ]
    )


def _pdflatex_chars(text: str) -> str:
    r"""`\DeclareUnicodeCharacter` lines for pdflatex: the characters of `text` its fonts lack.

    >>> print(_pdflatex_chars("b − a, 餐厅, é"))
    \DeclareUnicodeCharacter{2212}{\ensuremath{-}}
    \DeclareUnicodeCharacter{5385}{\missingchar{5385}}
    \DeclareUnicodeCharacter{9910}{\missingchar{9910}}
    """
    lines = []
    for char in sorted({c for c in text if ord(c) > 0x17F}):
        code = f"{ord(char):04X}"
        shown = _PDFLATEX_CHARS.get(char, "\\missingchar{" + code + "}")
        lines.append(f"\\DeclareUnicodeCharacter{{{code}}}{{{shown}}}")
    return "\n".join(lines)


def _font_lines(cjk_text: str, other_text: str) -> list[str]:
    r"""main.tex's font setup: Liberation and Noto CJK under XeLaTeX; Latin Modern, CJKutf8 when installed
    and `\DeclareUnicodeCharacter` for the rest (`_pdflatex_chars`) under pdflatex."""
    return [
        "\\usepackage{iftex}",
        "\\ifXeTeX",
        "  \\usepackage{fontspec}",
        "  \\IfFontExistsTF{Liberation Serif}{\\setmainfont{Liberation Serif}}{}",
        "  \\IfFontExistsTF{Liberation Sans}{\\setsansfont{Liberation Sans}}{}",
        "  \\IfFontExistsTF{Liberation Mono}{\\setmonofont{Liberation Mono}}{}",
        "  % Chinese, Japanese, Korean in Noto CJK: a font switch around every run of such characters",
        "  % (XeTeX's inter-character tokens, so no package beyond fontspec is needed).",
        "  \\newXeTeXintercharclass\\ReportCJKClass",
        "  \\newcount\\ReportChar",
        "  \\def\\ReportCJKRange#1#2{\\ReportChar=#1\\relax\\loop\\XeTeXcharclass\\ReportChar=\\ReportCJKClass"
        "\\ifnum\\ReportChar<#2\\advance\\ReportChar by 1\\repeat}",
        *[f'  \\ReportCJKRange{{"{low:04X}}}{{"{high:04X}}}' for low, high in _CJK_RANGES],
        "  \\IfFontExistsTF{Noto Serif CJK SC}{\\newfontfamily\\ReportCJKFont{Noto Serif CJK SC}}"
        "{\\IfFontExistsTF{Noto Sans CJK SC}{\\newfontfamily\\ReportCJKFont{Noto Sans CJK SC}}{\\let\\ReportCJKFont\\relax}}",
        "  \\XeTeXinterchartoks 0 \\ReportCJKClass = {\\begingroup\\ReportCJKFont}",
        "  \\XeTeXinterchartoks 4095 \\ReportCJKClass = {\\begingroup\\ReportCJKFont}",
        "  \\XeTeXinterchartoks \\ReportCJKClass 0 = {\\endgroup}",
        "  \\XeTeXinterchartoks \\ReportCJKClass 4095 = {\\endgroup}",
        "  \\XeTeXinterchartokenstate=1",
        '  \\XeTeXlinebreaklocale "zh" % a line may break between two CJK characters, as xeCJK allows',
        "  \\XeTeXlinebreakskip=0pt plus 1pt",
        "  \\tracinglostchars=3 % a character without a glyph is an error, not a gap",
        "  \\newcommand{\\dstcjk}[1]{#1}",
        "\\else",
        "  \\usepackage[T1]{fontenc}",
        "  \\usepackage[utf8]{inputenc}",
        "  \\usepackage{lmodern}",
        "  \\newcommand{\\missingchar}[1]{\\texttt{[U+#1]}}",
        "  % Chinese in CJKutf8's CJK environment (Arphic gbsn, Type 1) when installed, else as [U+XXXX].",
        "  \\IfFileExists{CJKutf8.sty}{\\usepackage{CJKutf8}\\def\\ReportHaveCJK{}}{}",
        "  \\ifdefined\\ReportHaveCJK",
        "    \\newcommand{\\dstcjk}[1]{\\begin{CJK}{UTF8}{gbsn}#1\\end{CJK}}",
        "  \\else",
        "    \\newcommand{\\dstcjk}[1]{#1}",
        _pdflatex_chars(cjk_text),
        "  \\fi",
        _pdflatex_chars(other_text),
        "\\fi",
    ]


def main_tex(plan: ReportPlan, settings: str, figures: Sequence[str], tables: Sequence[str], *, body: str) -> str:
    r"""The whole report as one LaTeX document: the title, the comparability notes and every figure and
    table snippet (`\input`), in ACL's two-column geometry and 11 pt type (7.7 cm columns: a single-column
    figure prints at its own size). XeLaTeX sets it in Liberation Serif with Noto Serif CJK SC for Chinese,
    Japanese and Korean (a font switch by XeTeX's inter-character tokens); pdflatex in Latin Modern, CJK text
    (`\dstcjk`) in CJKutf8's Arphic gbsn when installed, and characters its fonts lack as [U+XXXX] (`body`:
    every snippet's text, for the characters to declare). A character no font has stops XeLaTeX with an error
    (\tracinglostchars=3) rather than vanish. Each table snippet chose its own float (`table` or `table*`)
    and type size to fit its column (`analysis.export.tables.fit_layout`): nothing is shrunk here."""
    esc = E.tables.latex_escape
    items = "".join(f"\\item {esc(w)}\n" for w in plan.warnings)
    notes = "".join(f"\\item {esc(n)}\n" for n in plan.notes)
    text = body + items + notes + plan.title
    cjk_text = "".join(ch for ch in text if is_cjk(ch))
    other_text = "".join(ch for ch in text if not is_cjk(ch))
    lines = [
        "% The report as one document, written by `python -m analysis report`.",
        "% Compile: latexmk -xelatex main.tex (Chinese in Noto CJK), or latexmk -pdf main.tex (Chinese with CJKutf8).",
        "\\documentclass[11pt,twocolumn]{article}",
        "% ACL's geometry (acl.sty): A4, 2.5 cm margins, 0.6 cm between the columns.",
        "\\usepackage[a4paper,margin=2.5cm,columnsep=0.6cm]{geometry}",
        *_font_lines(cjk_text, other_text),
        CHAR_PREAMBLE,
        "\\usepackage{graphicx}",
        "\\usepackage{booktabs}",
        "\\setcounter{topnumber}{4}\\setcounter{dbltopnumber}{4}\\setcounter{totalnumber}{6}",
        "\\renewcommand{\\topfraction}{0.95}\\renewcommand{\\dbltopfraction}{0.95}",
        "\\renewcommand{\\textfraction}{0.05}\\renewcommand{\\floatpagefraction}{0.7}",
        "\\renewcommand{\\dblfloatpagefraction}{0.7}",
        "\\ifdefined\\extrafloats\\extrafloats{500}\\fi",
        f"\\title{{Report: {esc(plan.title)}}}",
        "\\author{}",
        "\\date{}",
        "\\begin{document}",
        "\\maketitle",
        f"\\noindent {esc(settings)}",
    ]
    lines.append("\\raggedright")  # long run names: ragged lines rather than stretched spaces
    if plan.warnings:
        lines += ["\\section*{Comparability}", "\\begin{itemize}", items.rstrip("\n"), "\\end{itemize}"]
    if plan.notes:
        lines += ["\\section*{Notes}", "\\begin{itemize}", notes.rstrip("\n"), "\\end{itemize}"]
    lines.append("\\clearpage")
    # A table of the same name as a figure (the leaderboard) follows it, on its page when both fit.
    paired = {name.removeprefix("fig-"): name for name in figures}
    beside = {paired[t]: t for t in tables if t in paired}
    for name in figures:
        lines.append(f"\\input{{{name}}}")
        if name in beside:
            lines.append(f"\\input{{{beside[name]}}}")
    lines.append("\\clearpage")
    lines += [f"\\input{{{name}}}" for name in tables if name not in beside.values()]
    lines += ["\\end{document}", ""]
    return "\n".join(lines)


def latex_engine(engine: str | None = None) -> tuple[str, list[str]] | None:
    """The engine and command that compile main.tex here: XeLaTeX when installed (every character in
    Liberation or Noto CJK), else pdflatex (or the `engine` named, when installed); None without LaTeX.
    One run is enough (main.tex refers to no label), half of what latexmk's two runs take."""
    import shutil

    choices = [engine] if engine else ["xelatex", "pdflatex"]
    found = next((e for e in choices if shutil.which(e)), None)
    if found is None:
        return None
    return found, [found, "-interaction=nonstopmode", "-halt-on-error", "-file-line-error", "-no-shell-escape"]


def first_error(log: str) -> str:
    """The first error of a LaTeX log (`file:line: message` or `! message`), with its `l.N` context.

    >>> first_error("x\\n./fig-a.tex:4: Undefined control sequence.\\nl.4 \\\\oops\\n! Later.")
    './fig-a.tex:4: Undefined control sequence. (l.4 \\\\oops)'
    >>> first_error("nothing")
    'no error line in the log'
    """
    lines = log.splitlines()
    for at, line in enumerate(lines):
        if re.match(r"^(\S+:\d+: |! )", line):
            context = next((c.strip() for c in lines[at + 1 : at + 12] if re.match(r"^l\.\d+ ", c)), "")
            return f"{line.strip()} ({context})" if context else line.strip()
    return NO_ERROR_LINE


@dataclass
class Compiled:
    engine: str
    pdf: Path
    seconds: float


def compile_main(out: Path, *, timeout: float = COMPILE_SECONDS) -> Compiled:
    """Compile `out/main.tex` into `out/main.pdf` (auxiliary files in a temporary folder); a failure is a
    `CompileError` with the engine and the log's first error line (the log is kept as `out/main.log`)."""
    import subprocess
    import tempfile

    found = latex_engine()
    if found is None:
        raise CompileError(
            "no LaTeX to compile main.tex: install xelatex or pdflatex (texlive-xetex, texlive-latex-base; "
            "scripts/system-deps.sh)"
        )
    engine, command = found
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="report-latex-") as build:
        try:
            done = subprocess.run(
                [*command, f"-output-directory={build}", MAIN_TEX],
                cwd=out,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout,
                check=False,
            )
            failed = done.returncode != 0
            output = (done.stdout + done.stderr).decode("utf-8", errors="replace")
            why = ""
        except subprocess.TimeoutExpired:
            failed, why, output = True, f"stopped after {timeout:g} s", ""
        log_path = Path(build) / MAIN_LOG
        log = log_path.read_text(encoding="utf-8", errors="replace") if log_path.exists() else ""
        built = Path(build) / MAIN_PDF
        if failed or not built.exists():
            _write(out / MAIN_LOG, log.encode("utf-8"))
            (out / MAIN_PDF).unlink(missing_ok=True)  # never an earlier report's PDF beside this one
            reason = why or first_error(log)
            if reason == NO_ERROR_LINE:  # TeX went through; its PDF driver (xdvipdfmx) failed
                lines = [line.strip() for line in output.splitlines()]
                said = [line for line in lines if "fatal" in line.lower()] or [
                    line for line in lines if "error" in line.lower() and "error summary" not in line.lower()
                ]
                reason = said[0] if said else f"{NO_ERROR_LINE} or the output ({command[0]} failed)"
            raise CompileError(f"{out / MAIN_TEX} did not compile with {engine}: {reason} (log: {out / MAIN_LOG})")
        (out / MAIN_LOG).unlink(missing_ok=True)  # a failed earlier compile's log
        _write(out / MAIN_PDF, built.read_bytes())
    return Compiled(engine, out / MAIN_PDF, time.perf_counter() - started)


# --- writing -------------------------------------------------------------------------------------


def _index_md(plan: ReportPlan, written: Sequence[Written], settings: str) -> str:
    esc = markdown_text  # names, captions and warnings carry run, system and workspace names: literal text
    lines = [f"# Report: {esc(plan.title)}", "", esc(settings), ""]
    if plan.warnings:
        lines += ["## Comparability", "", *[f"- {esc(w)}" for w in plan.warnings], ""]
    for kind, heading in (("document", "Whole report"), ("figure", "Figures"), ("table", "Tables")):
        lines += [f"## {heading}", ""]
        for item in (w for w in written if w.kind == kind):
            links = ", ".join(f"[{p.suffix[1:]}]({p.name})" for p in item.files)
            lines.append(f"- **{esc(item.name)}** ({links}): {esc(item.caption)}")
        lines.append("")
    if plan.notes:
        lines += ["## Notes", "", *[f"- {esc(n)}" for n in plan.notes], ""]
    return "\n".join(lines)


def _index_html(plan: ReportPlan, written: Sequence[Written], settings: str) -> str:
    esc = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>Report: {esc(plan.title)}</title>",
        "<style>body{font-family:'Liberation Sans',sans-serif;max-width:60em;margin:2em auto}"
        "img{max-width:100%;border:1px solid #ddd}figure{margin:1.5em 0}</style></head><body>",
        f"<h1>Report: {esc(plan.title)}</h1><p>{esc(settings)}</p>",
    ]
    if plan.warnings:
        parts.append("<h2>Comparability</h2><ul class='warnings'>")
        parts += [f"<li>{esc(w)}</li>" for w in plan.warnings]
        parts.append("</ul>")
    for item in written:
        links = " · ".join(f"<a href='{esc(p.name)}'>{esc(p.suffix[1:])}</a>" for p in item.files)
        preview = next((p for p in item.files if p.suffix in (".svg", ".png")), None)
        image = f"<img src='{esc(preview.name)}' alt='{esc(item.name)}'>" if preview else ""
        parts.append(f"<figure>{image}<figcaption><b>{esc(item.name)}</b> ({links}): {esc(item.caption)}")
        parts.append("</figcaption></figure>")
    parts += [f"<p>{esc(n)}</p>" for n in plan.notes]
    parts.append("</body></html>")
    return "\n".join(parts)


def _unique(names: Sequence[str]) -> list[str]:
    """Names made unique by `-2`, `-3`, ...: two runs whose names slug alike must not overwrite each other's files.

    >>> _unique(["a", "b", "a", "a-2"])
    ['a', 'b', 'a-2', 'a-2-2']
    """
    seen: set[str] = set()
    unique = []
    for name in names:
        candidate, n = name, 1
        while candidate in seen:
            n += 1
            candidate = f"{name}-{n}"
        seen.add(candidate)
        unique.append(candidate)
    return unique


def write_report(
    plan: ReportPlan,
    out_dir: str | Path,
    *,
    formats: Sequence[str] = E.FIGURE_FORMATS,
    style: str = "paper",
    width: str = "single",
    progress: bool = True,
    on_file: Callable[[Path], None] | None = None,
    intervals: str = "brackets",
    pdf: bool = False,
    columns: Sequence[str] | None = None,
    grayscale: bool = False,
) -> list[Written]:
    """Write the plan's figures (one browser for the batch), tables, a LaTeX snippet per figure
    (`fig-<name>.tex`), `main.tex` and the index; returns what was written (`main.tex`, and `main.pdf` when
    compiled, as the item of kind "document"). `pdf`: compile main.tex (`compile_main`; a failure is a
    `CompileError` raised once every other file is written). `intervals`: how tables show an interval,
    `brackets` (`0.519 [0.507, 0.531]`) or `pm` (`0.519 ±0.012`). `columns`: the leaderboard table's columns
    (`leaderboard_columns` names them; default all, in as many parts as the page needs). `grayscale`: every
    trace also gets the marker or bar pattern of its colour (`palette.grayscale_safe`), for print in grey."""
    columns = check_columns(columns)
    _check_write_options(formats, intervals)
    E.preset(style, width)
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(str(out), "report", f"cannot create the output folder: {exc}") from None
    figures, tables = _uniquely_named(plan)
    # main.tex includes each figure's PDF (PNG when no PDF is written; none with SVG alone)
    graphic = next((fmt for fmt in ("pdf", "png") if fmt in formats), None)
    n_snippets = len(figures) if graphic else 0
    total = len(figures) * len(formats) + len(tables) * len(E.TABLE_FORMATS) + n_snippets + 3 + int(pdf)
    bar = _progress(total, enabled=progress)
    written: list[Written] = []
    notes = list(plan.notes)

    def done(path: Path) -> None:
        bar.update(1)
        if on_file is not None:
            on_file(path)

    failure: CompileError | None = None
    try:
        paint = grayscale_safe if grayscale else None  # on a copy: the plan keeps its figures
        stems = [(paint(go.Figure(i.figure)) if paint else i.figure, out / i.name) for i in figures]
        E.write_figures(stems, formats=formats, style=style, width=width, progress=done)
        snippets = _write_figure_snippets(out, figures, formats, graphic, width=width, written=written, done=done)
        if not graphic and figures:
            notes.append("main.tex holds no figure: it includes PDF or PNG files and only SVG was written.")
        table_text = _write_tables(out, tables, intervals=intervals, columns=columns, written=written, done=done)
        settings = f"Style {style}, {width}-column width ({E.preset(style, width).width_in} in), PNG at {E.DPI} dpi."
        shown = ReportPlan(plan.title, notes=notes, warnings=plan.warnings)
        main = main_tex(
            shown,
            settings,
            [f"fig-{item.name}.tex" for item in figures] if graphic else [],
            [f"{table.name}.tex" for table in tables],
            body="".join(snippets + table_text),
        )
        _write(out / MAIN_TEX, main.encode("utf-8"))
        done(out / MAIN_TEX)
        document, failure = _main_document(out, pdf=pdf, notes=notes, done=done)
        written.append(document)
        shown.notes = notes
        for name, text in (("index.md", _index_md(shown, written, settings)), ("index.html", None)):
            body = text if text is not None else _index_html(shown, written, settings)
            _write(out / name, body.encode("utf-8"))
            done(out / name)
    finally:
        bar.close()
    if failure is not None:
        raise failure
    return written


def _check_write_options(formats: Sequence[str], intervals: str) -> None:
    if intervals not in E.tables.INTERVAL_FORMS:
        raise ValueError(f"intervals has to be one of {', '.join(E.tables.INTERVAL_FORMS)}, got {intervals!r}")
    for fmt in formats:
        if fmt not in E.FIGURE_FORMATS:
            raise ValueError(f"formats have to be among {', '.join(E.FIGURE_FORMATS)}, got {fmt!r}")


def _uniquely_named(plan: ReportPlan) -> tuple[list[FigureItem], list[TableItem]]:
    """The plan's figures and tables, their names made unique (`_unique`) so that no file overwrites another."""
    figures = [
        FigureItem(n, f.caption, f.figure)
        for n, f in zip(_unique([f.name for f in plan.figures]), plan.figures, strict=True)
    ]
    tables = [
        TableItem(n, t.caption, t.frame, t.options)
        for n, t in zip(_unique([t.name for t in plan.tables]), plan.tables, strict=True)
    ]
    return figures, tables


def _write_figure_snippets(
    out: Path,
    figures: Sequence[FigureItem],
    formats: Sequence[str],
    graphic: str | None,
    *,
    width: str,
    written: list[Written],
    done: Callable[[Path], None],
) -> list[str]:
    """Each figure's LaTeX snippet (`fig-<name>.tex`, when a PDF or PNG is written for it to include) and its
    entry in `written`; returns the snippets' text."""
    snippets = []
    for item in figures:
        files = [out / f"{item.name}.{E.EXTENSIONS[fmt]}" for fmt in formats]
        if graphic:
            snippet = figure_snippet(item.name, item.caption, f"{item.name}.{graphic}", wide=width == "double")
            _write(out / f"fig-{item.name}.tex", snippet.encode("utf-8"))
            files.append(out / f"fig-{item.name}.tex")
            snippets.append(snippet)
            done(files[-1])
        written.append(Written(item.name, "figure", item.caption, files))
    return snippets


def _write_tables(
    out: Path,
    tables: Sequence[TableItem],
    *,
    intervals: str,
    columns: Sequence[str] | None,
    written: list[Written],
    done: Callable[[Path], None],
) -> list[str]:
    """Each table in every `E.TABLE_FORMATS` and its entry in `written`; returns the LaTeX tables' text."""
    table_text = []
    for table in tables:
        files = []
        for fmt in E.TABLE_FORMATS:
            path = out / f"{table.name}.{E.EXTENSIONS[fmt]}"
            options = {"interval_form": intervals, **table.options}
            if columns is not None and table.name == "leaderboard":
                options["columns"] = columns
            data = E.table_bytes(table.frame, fmt, caption=table.caption, **options)
            _write(path, data)
            if fmt == "latex":
                table_text.append(data.decode("utf-8"))
            files.append(path)
            done(path)
        written.append(Written(table.name, "table", table.caption, files))
    return table_text


def _main_document(
    out: Path, *, pdf: bool, notes: list[str], done: Callable[[Path], None]
) -> tuple[Written, CompileError | None]:
    """The written main.tex as the "document" item, with its PDF when `pdf` asks and it compiles; a failed
    compile is noted in `notes` and returned, to be raised once every other file is written."""
    failure: CompileError | None = None
    document = Written("main", "document", "The whole report as one LaTeX document.", [out / MAIN_TEX])
    if pdf:
        try:
            compiled = compile_main(out)
            document.files.append(compiled.pdf)
            document.caption = f"The whole report as one LaTeX document and its PDF ({compiled.engine})."
        except CompileError as exc:
            failure = exc
            notes.append(f"main.pdf not written: {exc}")
            if (out / MAIN_LOG).exists():
                document.files.append(out / MAIN_LOG)
        done(out / MAIN_PDF)
    return document, failure


def _write(path: Path, data: bytes) -> None:
    try:
        path.write_bytes(data)
    except OSError as exc:
        raise InputError(str(path), "report", f"cannot write: {exc}") from None


def _progress(total: int, *, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc="report", unit="file", disable=not enabled, leave=False, dynamic_ncols=True)


def build_report(
    workspace: str | Path,
    out_dir: str | Path,
    *,
    formats: Sequence[str] = E.FIGURE_FORMATS,
    style: str = "paper",
    width: str = "single",
    convention: str | None = None,
    n_resamples: int = 1000,
    progress: bool = True,
    intervals: str = "brackets",
    pdf: bool | None = None,
    columns: Sequence[str] | None = None,
    grayscale: bool = False,
) -> list[Written]:
    """Load a workspace manifest and write its full report into `out_dir` (see the module docstring).

    `pdf`: compile main.tex into main.pdf (None: when LaTeX is installed, `latex_engine`); a failed
    compile is a `CompileError` once every other file is written. The browser for the figures starts first
    and comes up while the runs load and are planned: without Chromium the report stops at once, and a
    browser that fails, or does not start within `DST_BROWSER_START_SECONDS` twice (a hung start gets one fresh
    browser), is an `ExportUnavailableError` (the CLI's exit 3) before any figure is written, not a hang."""
    read_manifest(workspace)  # a bad manifest is exit 2 before any browser starts
    columns = check_columns(columns)  # and so are unknown columns
    if pdf is None:
        pdf = latex_engine() is not None
    with browser_starting() as browser_ready:  # the browser starts while the runs load and are planned
        loaded = load_workspace(workspace, runs=False)  # the runs: from the score store when it holds them
        plan = plan_report(loaded, convention=convention, n_resamples=n_resamples)
        browser_ready()
        return write_report(
            plan,
            out_dir,
            formats=formats,
            style=style,
            width=width,
            progress=progress,
            intervals=intervals,
            pdf=pdf,
            columns=columns,
            grayscale=grayscale,
        )


@contextlib.contextmanager
def browser_starting(timeout: float | None = None) -> Iterator[Callable[[], None]]:
    """Start the figures' browser for the block and yield `ready` at once: `ready()` returns when the browser
    has opened. A start that has not opened within `timeout` s (default `DST_BROWSER_START_SECONDS`, 14;
    `analysis.export.browser`) is killed and one fresh browser given as long, as figure requests do (a whole-
    suite run on a loaded machine: one report's first chromium never opened, 120 s); a start that fails, or
    a second that hangs, raises `ExportUnavailableError`. What the block does before calling it (loading,
    planning) overlaps the browser's start (1-3 s; 6-11 s on a busy machine). A machine without Chromium is
    refused at once."""
    with browser_session() as browser:

        def ready() -> None:
            ready_or_fresh(browser, timeout)

        yield ready
