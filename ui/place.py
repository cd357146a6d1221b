"""The two placement helpers every page uses for charts and tables, each with its export buttons.

Figures download as PDF, SVG and PNG and tables as LaTeX, Markdown and CSV, through the very functions
the report CLI uses (`analysis.export`), so a button gives the same file as `python -m analysis report`.
Files are made only when a button is clicked (a callable `data`), never on every rerun.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from analysis import export
from analysis.escaping import literal_point
from analysis.figures import OUTCOME_COLOURS
from analysis.suite import LABELS
from analysis.wording import COLUMN_LABELS as COLUMN_LABELS  # the Review page names outcomes with it
from analysis.wording import label
from ui import data

# Pale backgrounds behind the text marker, so the marker (not the colour) carries the meaning.
_TINTS = {k: v + "33" for k, v in OUTCOME_COLOURS.items()}


def _fresh(key: str, value: Any) -> bool:
    """True the first time a selection shows up, so an old selection does not fire again."""
    seen = st.session_state.setdefault("_selections_seen", {})
    if value is None or seen.get(key) == value:
        seen[key] = value
        return False
    seen[key] = value
    return True


def _figure_file(fig: go.Figure, fmt: str, style_key: str, width_key: str) -> bytes:
    from analysis.palette import grayscale_safe

    style = st.session_state.get(style_key, "paper")
    width = st.session_state.get(width_key, "single")
    if st.session_state.get(f"{style_key[: -len('__style')]}__grey", False):
        fig = grayscale_safe(go.Figure(fig))  # a copy: the page's figure keeps its look
    try:
        return export.figure_bytes(fig, fmt, style=style, width=width)
    except export.ExportUnavailableError as exc:  # the button still downloads something that says why
        return str(exc).encode("utf-8")


def _figure_exports(fig: go.Figure, *, key: str, name: str) -> None:
    with st.popover("Export", icon=":material/download:", key=f"{key}__export"):
        if export.browser_path() is None:
            st.caption(
                "Figure export needs Chromium: `apt-get install chromium fonts-liberation` (make run installs it)."
            )
            return
        left, right = st.columns(2)
        style_key, width_key = f"{key}__style", f"{key}__width"
        left.selectbox("Style", export.STYLES, key=style_key)
        right.selectbox("Width", export.WIDTHS, key=width_key, format_func=lambda w: f"{w} column")
        st.checkbox("Grayscale-safe: markers and patterns", key=f"{key}__grey")
        for column, fmt in zip(st.columns(len(export.FIGURE_FORMATS)), export.FIGURE_FORMATS, strict=True):
            column.download_button(
                fmt.upper(),
                data=functools.partial(_figure_file, fig, fmt, style_key, width_key),
                file_name=export.file_name(name, fmt),
                mime=export.MIME_TYPES[fmt],
                key=f"{key}__{fmt}",
                on_click="ignore",
            )


# The table export's interval forms, as the popover's radio names them.
_INTERVAL_FORMS = {"brackets": "[low, high]", "pm": "± half-width"}
# A table export given as a callable: it returns the table the report writes (frame, caption, options).
TableExport = Callable[[], Any]


def run_groups(frame: pd.DataFrame, metas: Mapping[str, Any], choice: str = data.DECLARED) -> list[str] | None:
    """Each row's group of comparable runs (`views.comparable_groups`) for a table of runs that lacks the
    columns saying it (a per-domain table has `run_id` but no dataset or history): read from the runs'
    metadata (`metas`: run id -> `RunInfo`) and the sidebar's convention. None when the table says it
    itself or has no `run_id`."""
    from analysis.views import COMPARABLE_BY, comparable_groups

    if "run_id" not in frame.columns or any(c in frame.columns for c in COMPARABLE_BY) or frame.empty:
        return None  # an empty table (e.g. an empty review queue): no rows to group
    runs = frame["run_id"].astype(str)
    unique = list(dict.fromkeys(runs))
    described = pd.DataFrame(
        {
            **{c: [str(getattr(metas.get(r), c, "") or "") for r in unique] for c in ("dataset", "split", "history")},
            "convention": [
                str(getattr(metas.get(r), "convention", "") or "") if choice == data.DECLARED else choice
                for r in unique
            ],
        },
        index=unique,
    )
    return runs.map(comparable_groups(described)).tolist()


def _table_file(
    frame: pd.DataFrame,
    fmt: str,
    *,
    name: str,
    na_rep: str = "–",
    interval_form: str = "brackets",
    export_as: TableExport | None = None,
    groups: Sequence[str] | None = None,
    columns: Sequence[str] | None = None,
) -> bytes:
    """A table's file as its export button downloads it: LaTeX with the caption derived from the table's
    name and a label from the caption, or, for a table the report writes too (`export_as`, e.g. the
    leaderboard), exactly the report's table (same frame, caption, label and options). `columns`: the
    columns the export's picker kept (None: all)."""
    if export_as is not None:
        item = export_as()
        options = {**item.options, "columns": columns} if columns is not None else item.options
        return export.table_bytes(item.frame, fmt, caption=item.caption, interval_form=interval_form, **options)
    caption = export.tables.caption_from_name(name)
    return export.table_bytes(
        frame, fmt, caption=caption, na_rep=na_rep, interval_form=interval_form, groups=groups, columns=columns
    )


def export_columns(frame: pd.DataFrame, export_as: TableExport | None = None) -> list[str]:
    """The columns the export's picker offers, as headers: the report table's (`export_as.columns`) or
    the frame's shown columns (no internal column, no interval bound)."""
    declared = getattr(export_as, "columns", None)
    if declared is not None:
        return list(declared)
    bounds = {c for pair in export.tables.found_intervals(list(frame.columns)).values() for c in pair}
    shown = [c for c in frame.columns if c not in bounds and c not in export.tables.INTERNAL_COLUMNS]
    return list(dict.fromkeys(export.tables.header(c) for c in shown))


def _table_exports(
    frame: pd.DataFrame, *, key: str, name: str, na_rep: str = "–", export_as: TableExport | None = None
) -> None:
    from ui import state

    groups = run_groups(frame, {r: s.meta for r, s in state.sources().items()}, state.convention_choice())
    with st.popover("Export", icon=":material/download:", key=f"{key}__export"):
        form_key = f"{key}__intervals"
        form = st.radio(  # a widget: changing it reruns the page, so the buttons below get the new form
            "Intervals", list(_INTERVAL_FORMS), format_func=_INTERVAL_FORMS.get, key=form_key, horizontal=True
        )
        offered = export_columns(frame, export_as)
        picked = st.multiselect(  # a LaTeX table wider than a column spans both, or prints in parts
            "Columns", offered, default=offered, key=f"{key}__columns", help="the columns the files hold"
        )
        columns = None if not picked or list(picked) == offered else list(picked)
        for column, fmt in zip(st.columns(len(export.TABLE_FORMATS)), export.TABLE_FORMATS, strict=True):
            column.download_button(
                {"latex": "LaTeX", "markdown": "Markdown", "csv": "CSV"}[fmt],
                data=functools.partial(
                    _table_file,
                    frame,
                    fmt,
                    name=name,
                    na_rep=na_rep,
                    interval_form=str(form or "brackets"),
                    export_as=export_as,
                    groups=groups,
                    columns=columns,
                ),
                file_name=export.file_name(name, fmt),
                mime=export.MIME_TYPES[fmt],
                key=f"{key}__{fmt}",
                on_click="ignore",
            )


def leaderboard_export(
    run_ids: Sequence[str], *, sources: Mapping[str, Any] | None = None, choice: str | None = None
) -> TableExport:
    """The report's leaderboard table of these runs (`analysis.export.report.leaderboard_item`), made
    when an export button is clicked: the Overview's LaTeX/Markdown/CSV leaderboard is the report's."""
    from ui.state import resolve

    resolved, _ = resolve([list(run_ids)], sources, choice)

    def make() -> Any:
        from analysis.export.report import leaderboard_item

        scoreds = [data.scored(source, pick) for source, pick in resolved[0]]
        return leaderboard_item({s.metas[0].run_id: s for s in scoreds})

    from analysis.export.report import leaderboard_columns

    make.columns = leaderboard_columns()  # type: ignore[attr-defined]  # the export's column picker offers these
    return make


@st.cache_data(show_spinner=False, max_entries=512)
def _figure_spec(name: str, args: tuple, params: tuple, attrs: tuple, owner: str = "") -> dict[str, Any]:
    del attrs, owner  # part of the cache key only: hashing a frame ignores its attrs
    return dict(data.function_named(name)(*args, **dict(params)).to_dict())


# A session holding an upload keys its figures with its id (`data.private_owner`): no other session is
# served them, and they go when it ends (the whole cache then: st.cache_data drops no single entry, and
# a workspace figure is rebuilt in 30-90 ms).
data.on_release(_figure_spec.clear)


def figure(builder: Callable[..., go.Figure], *args: Any, **params: Any) -> go.Figure:
    """`builder(*args, **params)`, built once per distinct input.

    Building a Plotly figure validates every property against Plotly's schema and copies its template:
    30-90 ms a figure, most of a cached page's script time. The built figure's JSON is cached on the
    builder's name and its arguments (frames hashed by content, their `attrs` included), and a revisit
    wraps it in a figure without validating it again (it was validated when built), about 3 ms.
    `tests/test_figure_cache.py` checks the cached figure equals the freshly built one."""
    attrs = tuple(repr(a.attrs) for a in (*args, *params.values()) if isinstance(a, pd.DataFrame))
    name = f"{builder.__module__}.{builder.__qualname__}"
    spec = _figure_spec(name, args, tuple(sorted(params.items())), attrs, data.private_owner())
    return go.Figure(spec, _validate=False)


def show_figure(fig: go.Figure, *, key: str, name: str, select: bool = False) -> list[dict[str, Any]]:
    """Place a Plotly figure with its export buttons. With `select`, clicking a point reruns and the
    selected points are returned, their text as the data has it (`escaping.literal_point`: the figure's
    own is escaped)."""
    fig.update_layout(meta={"name": name})
    _figure_exports(fig, key=key, name=name)
    if select:
        event = st.plotly_chart(fig, key=key, on_select="rerun", selection_mode="points", width="stretch")
        try:
            points = [literal_point(p) for p in event.selection.points]
        except AttributeError:
            points = []
        return points if _fresh(key, repr(points) if points else None) else []
    st.plotly_chart(fig, key=key, width="stretch")
    return []


def _frame(frame_or_rows: pd.DataFrame | Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    return frame_or_rows if isinstance(frame_or_rows, pd.DataFrame) else pd.DataFrame(list(frame_or_rows))


_SHARES = {"share", "acc_a", "acc_b", "gap", "score", "jaccard", "consistency", "alternative_score"}


def _formats(columns: Sequence[str]) -> dict[str, Any]:
    """Four decimals for metrics, percentages for shares (display only; values stay exact)."""
    config: dict[str, Any] = {}
    headers = _headers(columns)
    for column in columns:
        header = headers[column]
        if column == "share":
            config[header] = st.column_config.NumberColumn(header, format="percent")
        elif column in _SHARES or column in LABELS or column in {"jga", "precision", "recall", "f1"}:
            config[header] = st.column_config.NumberColumn(header, format="%.4f")
    return config


def _headers(columns: Sequence[str]) -> dict[str, str]:
    """Each column's header (`analysis.wording.label`); a header another column of the table already
    shows (a frame with both `seeds` and `n_seeds`, say) keeps its machine name: two equal headers are one
    table Arrow refuses."""
    headers: dict[str, str] = {}
    for column in columns:
        header = label(column)
        headers[column] = column if header in headers.values() or (header != column and header in columns) else header
    return headers


def show_table(
    frame_or_rows: pd.DataFrame | Sequence[Mapping[str, Any]],
    *,
    key: str,
    name: str,
    select: bool = False,
    columns: Sequence[str] | None = None,
    height: int | None = None,
    na_rep: str | None = None,
    export_as: TableExport | None = None,
) -> dict[str, Any] | None:
    """Place a table (values rendered as text, never HTML). With `select`, a click on a row reruns and
    that row (all columns, machine names) is returned. `na_rep`: what a missing number shows (e.g.
    "n/a" where a metric's definition does not apply), on screen and in the exported files. `export_as`:
    the table the export buttons write instead of the one shown (the report's, e.g. `leaderboard_export`).
    """
    frame = _frame(frame_or_rows).reset_index(drop=True)
    shown = frame[list(columns)] if columns is not None else frame
    display = shown.rename(columns=_headers(shown.columns))
    styled: Any = display
    if "outcome" in shown.columns and len(shown) and len(shown) <= 2000:
        outcome_values = shown["outcome"].astype(str).to_numpy()

        def tint(column: pd.Series) -> list[str]:
            return [f"background-color: {_TINTS.get(o, '')}" if o in _TINTS else "" for o in outcome_values]

        styled = display.style.apply(tint, axis=0)
    config = _formats(shown.columns)
    if na_rep is not None:
        missing = [
            header
            for column, header in zip(shown.columns, display.columns, strict=True)
            if pd.api.types.is_float_dtype(shown[column]) and shown[column].isna().any()
        ]
        if missing:
            styler = display.style if isinstance(styled, pd.DataFrame) else styled  # Styler loads jinja2: not before
            styled = styler.format("{:.4f}", na_rep=na_rep, subset=missing)
            # The browser shows a number cell's styled text only when its column sets no format of its own.
            config.update({header: st.column_config.NumberColumn(header) for header in missing})
    # What a missing cell shows, on screen as in the exported files (Streamlit's own default is the word "None").
    missing_text = "–" if na_rep is None else na_rep
    _table_exports(shown, key=key, name=name, na_rep=missing_text, export_as=export_as)
    kwargs: dict[str, Any] = {
        "hide_index": True,
        "width": "stretch",
        "column_config": config,
        "placeholder": missing_text,
    }
    if height is not None:
        kwargs["height"] = height
    if select:
        event = st.dataframe(styled, key=key, on_select="rerun", selection_mode="single-row", **kwargs)
        rows = list(event.selection.rows) if hasattr(event, "selection") else []
        row = {str(k): v for k, v in frame.iloc[rows[0]].to_dict().items()} if rows and rows[0] < len(frame) else None
        return row if _fresh(key, repr(row) if row else None) else None
    st.dataframe(styled, key=key, **kwargs)
    return None
