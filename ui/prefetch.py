"""Compute the other pages' first views in the background once a page is drawn.

A researcher reads the first page for a few seconds; meanwhile the server computes what the Slots,
Domains, Turn depth, Cross-lingual and Dialogue viewer pages ask for first (per-domain and per-depth
JGA with their bootstrap intervals are the slow ones), so the first visit of each page finds its views
cached; then the figures those pages draw first from them (`figure_plan`; building a Plotly figure
costs 30-90 ms), and the modules the pages import (`page_modules`: SQLAlchemy for the Dialogue viewer's
tag form costs about 0.2 s on a first import). Last come the pages whose first visit is the largest
computation: the Slices search, the Review page's error items and episodes, the Reconcile page's run
under five conventions (`slices_job`, `review_job`, `reconcile_job`).

The plan is what each page declares as its first views in the page registry (`page_registry`: its
first `ui.compute` calls with its default widgets, the figures it draws from them, and what it computes
next from them): same function, same arguments, same parameters, hence the same cache key. The order is
the sidebar's. `tests/test_prefetch.py` checks every planned
call, and every planned figure, is one the pages really make, so prefetching never computes what
nobody asks for. Streamlit's cache holds one compute lock per key: a page asking while the prefetch
computes waits for that result instead of computing it twice.

`make run` (`scripts/serve.py`) runs the same jobs, the Overview's first (`first_page`), while the
server starts, before any session exists.
"""

from __future__ import annotations

import importlib
import io
import logging
import threading
import time
import tokenize
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import streamlit as st

import ui
from analysis import figures, settings, views
from analysis.crosslingual import mapping_from_manifest
from analysis.diagnostics import AGREEMENT
from page_registry import FIRST, PAGES, PREFETCHED, Call, Defaults, FigureCall, FirstViews, Job, Then
from ui import data, place, state
from ui.state import choose

LOG = logging.getLogger(__name__)


def _declared(defaults: Defaults) -> list[FirstViews]:
    """The declared first views of the pages after the first (`page_registry.PREFETCHED`), in sidebar order."""
    return [page.first(defaults) for page in PREFETCHED if page.first is not None]


def plan(
    runs: list[str],
    focus: str,
    pair: tuple[str, str] | None = None,
    overrides: tuple[tuple[str, str], ...] = (),
    cell: str = "only_a",
) -> list[Call]:
    """The first views of each page after the first, in sidebar order (the order a user tends to visit).
    `pair`, `overrides`, `cell`: the Cross-lingual page's runs A and B, their manifest slot mapping and
    drill-down cell, as that page will choose them."""
    declared = _declared(Defaults(runs, focus, pair=pair, overrides=overrides, cell=cell))
    return [call for first in declared for call in first.views]


def figure_plan(
    runs: list[str],
    focus: str,
    colours: dict[str, str],
    pair: tuple[str, str] | None = None,
    overrides: tuple[tuple[str, str], ...] = (),
) -> list[FigureCall]:
    """The figures the pages after the first draw from the planned views, with the pages' own arguments
    (titles included): `ui.figure` then finds them built. `colours`: `ui.colours()`."""
    declared = _declared(Defaults(runs, focus, colours, pair=pair, overrides=overrides))
    return [call for first in declared for call in first.figures]


def warmups(runs: list[str]) -> list[Call]:
    """Per-run interval jobs, the slow part of the Domains and Turn depth views, in small pieces: memoised
    on each scored run (`views.jga_interval`), so those views then only assemble. Short background steps
    let the prefetch yield to pages between them."""
    return [(views.jga_interval, (run,), {"by": by}) for by in ("domain", "turn_index") for run in runs]


def crosslingual_choice(runs: list[str], mappings: list[dict[str, Any]], session: Any) -> tuple[str, str] | None:
    """Runs A and B as the Cross-lingual page picks them (`ui.state.choose`): the session's choice when still
    valid, else the default pair (`views.default_pair`), else the first runs."""
    if len(runs) < 2:
        return None
    pair = views.default_pair(runs, mappings) or (None, None)
    a = choose(session.get("run_a"), runs, pair[0])
    b = choose(session.get("run_b"), [r for r in runs if r != a], pair[1])
    return a, b


_running = 0  # page scripts being computed now, in any session
_running_lock = threading.Lock()
MAX_WAIT = 10.0  # seconds a prefetch job yields to running pages before it goes ahead anyway
# After a session's first page, the browser is still fetching and compiling Streamlit's and Plotly's
# JavaScript (about 2 s on a two-core machine), served by this same Python process: prefetching meanwhile
# slows that down, so the first prefetch of a session waits this long.
FIRST_DELAY = 2.0


@contextmanager
def page_running() -> Iterator[None]:
    """Mark a page script as running: the prefetch starts no new job meanwhile, so a page the user
    opened does not share the interpreter with work nobody asked for yet."""
    global _running
    with _running_lock:
        _running += 1
    try:
        yield
    finally:
        with _running_lock:
            _running -= 1


def _wait_for_pages() -> None:
    deadline = time.monotonic() + MAX_WAIT
    while _running > 0 and time.monotonic() < deadline:
        time.sleep(0.02)


def view_job(fn: Callable[..., Any], args: list[Any], params: dict[str, Any], choice: str) -> Any:
    """A planned view, computed into the cache the page reads (`args` resolved by `ui.resolve`)."""
    return data.compute(fn, args, params, choice)


def figure_job(
    builder: Callable[..., go.Figure],
    call: tuple[Callable[..., Any], list[Any], dict[str, Any]],
    path: tuple[str, ...],
    params: dict[str, Any],
    choice: str,
) -> go.Figure:
    """A planned figure, built into the cache `ui.figure` reads (`call`'s args resolved by `ui.resolve`)."""
    fn, args, view_params = call
    result = data.compute(fn, args, view_params, choice)
    for step in path:
        result = result[step]
    return place.figure(builder, result, **params)


def slot_detail_job(focus: str, sources: dict[str, data.RunSource], slot: Any, choice: str) -> None:
    """The Slots page's lower half for its default slot (`slot`, the session's, when still a slot of the
    table, else the worst-F1 one: `ui.state.choose`): value confusions, their heatmap, example turns."""
    args = ui.resolve([focus], sources, choice)[0]
    table = data.compute(views.slot_table, args, {}, choice)
    slot = choose(slot, list(table["slot_name"]))
    if slot is None:
        return
    domain, name = views.split_slot(table, slot)
    confusions = data.compute(views.value_confusions, args, {"domain": domain, "slot": name}, choice)
    place.figure(figures.confusion_heatmap, confusions, title=f"{slot}: gold → predicted (top confusions)")
    data.compute(views.slot_error_turns, args, {"domain": domain, "slot": name}, choice)  # every error turn


def compounding_job(
    runs: list[str], sources: dict[str, data.RunSource], colours: dict[str, str], pair: Any, choice: str
) -> None:
    """The Turn depth page's compounding chart for its default pair (`pair`, the session's label, when
    still offered, else the first: `ui.state.choose`)."""
    pairs = data.compute(views.history_pairs_of, ui.resolve([runs], sources, choice)[0], {}, choice)
    if not pairs:
        return
    labels = {f"{p} vs {g}": (p, g) for p, g in pairs}
    predicted, gold = labels[choose(pair, list(labels))]
    curve = data.compute(views.compounding_curve, ui.resolve([predicted, gold], sources, choice)[0], {}, choice)
    place.figure(figures.compounding_figure, curve, predicted_run=predicted, gold_run=gold, colours=colours)


def attribute_job(
    runs: list[str], sources: dict[str, data.RunSource], colours: dict[str, str], attribute: Any, choice: str
) -> None:
    """The Domains page's lower half for its default attribute (`attribute`, the session's, when the runs
    still carry it, else the first: `ui.state.choose`): JGA by that attribute and its chart."""
    args = ui.resolve([runs], sources, choice)[0]
    attribute = choose(attribute, data.compute(views.attribute_columns, args, {}, choice))
    if attribute is None:
        return
    table = data.compute(views.jga_by_attribute, args, {"attribute": attribute}, choice)
    place.figure(figures.grouped_jga_bar, table, by=attribute, colours=colours, title=f"JGA by {attribute}")


# Imported on first use by what pages call, not by the pages themselves: pandas' Styler (the outcome tint of
# `ui.place.show_table`) brings in jinja2.
LAZY_MODULES = ("pandas.io.formats.style",)


def top_level_imports(source: str) -> Iterator[tuple[str, list[str]]]:
    """The top-level import statements of Python `source`, read from its tokens: `(module, [])` for each
    module of `import a.b, c`, `(module, [names])` for `from module import names` (relative imports are
    skipped). Tokens, not `ast.parse`: this runs in the prefetch thread, and CPython 3.11 keeps the AST
    constructor's recursion count in one interpreter-wide place, so two threads parsing at once (this one
    and Streamlit reading a page script) can fail the page with "SystemError: AST constructor recursion
    depth mismatch" (seen in CI; python/cpython#106905)."""
    depth = 0
    statement: list[str] = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.INDENT:
            depth += 1
        elif token.type == tokenize.DEDENT:
            depth -= 1
        elif token.type in (tokenize.NEWLINE, tokenize.ENDMARKER) or token.string == ";":
            if depth == 0 and statement:
                yield from _import_of(statement)
            statement = []
        elif token.type not in (tokenize.NL, tokenize.COMMENT, tokenize.ENCODING):
            statement.append(token.string)


def _import_of(words: list[str]) -> Iterator[tuple[str, list[str]]]:
    """`top_level_imports` of one logical statement's tokens (nothing when it is not an import)."""

    def parts(rest: list[str]) -> list[str]:
        # "a . b as c , d" -> ["a.b", "d"]: each comma-separated part's dotted name, before any "as"
        out: list[str] = []
        part: list[str] = []
        for word in [*rest, ","]:
            if word == ",":
                if part:
                    out.append("".join(part[: part.index("as")] if "as" in part else part))
                part = []
            elif word not in "()":
                part.append(word)
        return out

    if words[0] == "import":
        for module in parts(words[1:]):
            yield module, []
    elif words[0] == "from" and "import" in words and words[1] not in (".", "..."):
        at = words.index("import")
        yield "".join(words[1:at]), parts(words[at + 1 :])


def page_modules(folder: Path | None = None) -> list[str]:
    """The modules the page scripts import at their top level (read, not run: `top_level_imports`), then
    `LAZY_MODULES`; `from X import Y` gives X, and X.Y when Y is a submodule. The pages: those of
    `page_registry`, or the scripts in `folder`."""
    names: dict[str, None] = {}
    for page in sorted(folder.glob("*.py")) if folder is not None else sorted(page.path for page in PAGES):
        for module, imported in top_level_imports(page.read_text(encoding="utf-8")):
            names[module] = None
            names.update(dict.fromkeys(f"{module}.{name}" for name in imported))
    names.update(dict.fromkeys(LAZY_MODULES))
    return list(names)


def import_pages_job(folder: Path | None = None) -> int:
    """Import what the pages import (`page_modules`), so a page's first visit does not wait for it (the
    Dialogue viewer's annotation store brings in SQLAlchemy: about 0.2 s). Names that are not modules
    (`from X import function`) are skipped, and so is a module that fails to import (the page shows that
    error when it runs); the others are still imported. Returns how many modules were imported."""
    imported = 0
    for name in page_modules(folder):
        try:
            importlib.import_module(name)
        except Exception as exc:
            if not (isinstance(exc, ModuleNotFoundError) and exc.name == name):
                LOG.debug("prefetch could not import %s", name, exc_info=True)
            continue
        imported += 1
    return imported


def dialogue_job(focus: str, sources: dict[str, data.RunSource], dialogue: Any, choice: str) -> None:
    """The Dialogue viewer's default dialogue (`dialogue`, the session's, when the focus run has it, else
    the first with errors: `ui.state.choose`): its turn-level view and turn strip."""
    args = ui.resolve([focus], sources, choice)[0]
    index = data.compute(views.dialogue_index, args, {}, choice)
    dialogue = choose(dialogue, list(index["dialogue_id"]), views.first_dialogue_with_errors(index))
    if dialogue is None:
        return
    turns, _ = data.compute(views.dialogue_view, args, {"dialogue_id": dialogue}, choice)
    place.figure(figures.turn_strip, turns)


def slices_job(runs: list[str], focus: str, sources: dict[str, data.RunSource], session: Any, choice: str) -> None:
    """The Slices page's search as its widgets stand (`session`: the remembered toggle, training run and
    left-out features; by default the focus run alone, no training run, nothing left out): the features
    it offers, then the worst slices."""
    from analysis import slices

    together = len(runs) > 1 and bool(session.get("slices_pooled", False))
    searched: Any = focus
    if together:  # beyond a chart's worth of runs, those the page searches together (`drawn`), in their order
        pooled = set(drawn(runs, runs, "slices_pooled", sources, choice, session))
        searched = [r for r in runs if r in pooled]
    options = [None, *[r for r in runs if together or r != focus]]
    train = choose(session.get("slices_train"), options)  # a selected run, or None
    args = ui.resolve([searched, train], sources, choice)[0]
    offered = data.compute(slices.searchable, args, {}, choice)
    excluded = tuple(v for v in session.get("slices_exclude", []) if v in offered)
    data.compute(slices.find_slices, args, {"exclude": excluded}, choice)


def comparison_job(runs: list[str], focus: str, sources: dict[str, data.RunSource], session: Any, choice: str) -> None:
    """The Slices page's runs to compare a slice with: the other runs on the focus run's gold, found among the
    runs it offers (beyond `CHART_RUNS` others, the best by `slices.COMPARE_BY` or those its search finds, out
    of the stored leaderboard of the selected runs). Finding them loads each offered run's tables: about 1.3 s
    for 20 MultiWOZ-size runs, the largest part of the page's first visit at 1,000 runs. A job of its own after
    `slices_job` (same arguments), so that a deadline (the launcher's warm-up) can stop before it. Nothing
    when the page searches the selected runs together: it then compares with no other run."""
    from analysis import slices

    if len(runs) > 1 and bool(session.get("slices_pooled", False)):
        return
    asked = list(dict.fromkeys([*runs, focus]))  # as `ui.scorer_read` asks
    unread = data.compute(views.unread_gold, ui.resolve([asked], sources, choice)[0], {}, choice) if asked else {}
    if focus in unread:
        return
    offered = drawn(
        [r for r in runs if r not in unread and r != focus],
        runs,
        "slices",
        sources,
        choice,
        session,
        metric=slices.COMPARE_BY,
    )
    if not offered:
        return
    # Each run's gold fingerprint first, one run at a time, each after any running page (as `run_jobs` waits
    # between jobs): memoised on the scored run `comparison_runs` then reads, so a page clicked meanwhile
    # waits for one run's fingerprint (about 35 ms at MultiWOZ size), not for all of them (20 runs: 0.7 s
    # alone, 2.4-3.4 s measured beside a page script at 1,000 runs).
    for run in [focus, *offered]:
        _wait_for_pages()
        views.gold_fingerprint(data.scored(sources[run], choice))
    data.compute(slices.comparison_runs, ui.resolve([focus, offered], sources, choice)[0], {}, choice)


def review_job(runs: list[str], sources: dict[str, data.RunSource], session: Any, choice: str) -> None:
    """The Review page's error items and episodes of the selected runs (the slow part of its first visit:
    about 2 s for 100 MultiWOZ-size runs); of more than `CHART_RUNS`, of those the page reviews: the best by
    its chosen metric, or those its search finds (`drawn`)."""
    from ui import review

    reviewed = drawn(runs, runs, "review", sources, choice, session)
    args = ui.resolve([reviewed], sources, choice)[0]
    data.compute(review.review_errors, args, {}, choice)
    data.compute(review.review_episodes, args, {}, choice)


def drawn(
    run_ids: list[str],
    selected: list[str],
    page: str,
    sources: dict[str, data.RunSource],
    choice: str,
    session: Any,
    metric: str | None = None,
) -> list[str]:
    """The runs `ui.drawn_runs(run_ids, page=page, metric=metric)` draws, as the session's widgets stand (its
    metric, else the page's select box's, and its search), out of the same board (`ui.board_rows`)."""
    from analysis.views.shown import CHART_RUNS, chart_runs

    if len(run_ids) <= CHART_RUNS:
        return list(run_ids)
    metric = metric or choose(session.get(f"{page}_drawn_metric"), list(views.LEADERBOARD_METRICS))
    board = ui.board_rows(run_ids, metric, selected=selected, sources=sources, choice=choice)
    return chart_runs(board, metric=metric, search=str(session.get(f"{page}_drawn_search") or ""))[0]


def reconcile_job(focus: str, sources: dict[str, data.RunSource], session: Any) -> None:
    """The Reconcile page's run (the focus run) scored under its conventions (the session's, else the
    run's own, its lenient variant and the default five), and the flips of its default pair attributed to their causes (kept in the cached
    reconciliation). An uploaded run's reconciliation is its session's: not computed here."""
    from ui import reconcile

    source = sources.get(focus)
    if source is None or source.upload is not None:
        return
    conventions = tuple(
        session.get("reconcile_conventions")
        or data.compute(reconcile.default_conventions, [data.Loaded(source)], {}, data.DECLARED)
    )
    rec = data.compute(reconcile.reconciled, [data.Loaded(source)], {"conventions": conventions}, data.DECLARED)
    if isinstance(rec, str) or len(conventions) < 2:
        return
    best = reconcile.default_pair(rec) or (conventions[0], conventions[1])
    a = choose(session.get("reconcile_a"), list(conventions), best[0])
    b = choose(session.get("reconcile_b"), [c for c in conventions if c != a], best[1] if best[1] != a else None)
    rec.causes(a, b)
    rec.flips(a, b)


# The jobs a page's declaration names as its next step (`FirstViews.then`), by name.
THEN_JOBS: dict[str, Callable[..., None]] = {
    job.__name__: job
    for job in (slot_detail_job, attribute_job, compounding_job, dialogue_job, slices_job, review_job, reconcile_job)
}


def then_job(then: Then) -> Job:
    """A page's declared next step as a job: its named job of this module, with its arguments."""
    name, args = then
    return THEN_JOBS[name], args


def run_jobs(jobs: list[Job], deadline: float | None = None) -> int:
    """Run `jobs` one by one, each after any running page finishes (at most MAX_WAIT s); failures are
    logged at debug level and skipped. `deadline` (`time.monotonic()`): start no job after it. Returns
    how many jobs ran."""
    for done, (run, args) in enumerate(jobs):
        _wait_for_pages()
        if deadline is not None and time.monotonic() >= deadline:
            return done
        try:
            run(*args)
        except Exception:  # the page that asks for this view shows the error itself
            LOG.debug("prefetch job %s%r failed", run.__qualname__, args[:1], exc_info=True)
    return len(jobs)


def _after(delay: float, planned: list[Job]) -> None:
    time.sleep(delay)
    run_jobs(planned)


def first_page(runs: list[str], colours: dict[str, str]) -> tuple[list[Call], list[FigureCall]]:
    """The first page's declared views and figures (the Overview's, with its default sort): what the first
    page of a session computes."""
    assert FIRST.first is not None
    first = FIRST.first(Defaults(runs, runs[0] if runs else "", colours))
    return first.views, first.figures


def _to_jobs(
    sources: dict[str, data.RunSource], choice: str, calls: list[Call], figure_calls: list[FigureCall]
) -> tuple[list[Job], list[Job]]:
    """Planned views and figures as jobs, run ids resolved to `sources` under `choice` (as `ui.resolve`)."""
    view_jobs: list[Job] = [
        (view_job, (fn, ui.resolve(args, sources, choice)[0], params, choice)) for fn, args, params in calls
    ]
    figure_jobs: list[Job] = [
        (figure_job, (builder, (fn, ui.resolve(args, sources, choice)[0], params), path, figure_params, choice))
        for builder, (fn, args, params), path, figure_params in figure_calls
    ]
    return view_jobs, figure_jobs


def first_page_jobs(runs: list[str], sources: dict[str, data.RunSource], choice: str) -> list[Job]:
    """`first_page` as jobs: what the server warms before any session (`scripts/serve.py`). When the score
    store holds every run, the Overview reads its leaderboard from there (`data.stored_leaderboard`): the
    jobs are that query and the chart built from its board, and no run is loaded."""
    calls, figure_calls = first_page(runs, ui.colours(sources))
    board_call = next((c for c in calls if c[0] is views.leaderboard), None)
    if board_call is not None:
        sort = board_call[2].get("sort")
        stored = data.stored_leaderboard(ui.resolve([runs], sources, choice)[0][0], sort)
        if stored is not None:
            board = stored[0]
            return [
                (_figure_of_board, (builder, board, figure_params))
                for builder, (fn, _, _), _, figure_params in figure_calls
                if fn is views.leaderboard
            ]
    view_jobs, figure_jobs = _to_jobs(sources, choice, calls, figure_calls)
    return [*view_jobs, *figure_jobs]


def _figure_of_board(builder: Callable[..., go.Figure], board: Any, params: dict[str, Any]) -> go.Figure:
    """A first-page chart built from the stored leaderboard, into the cache `ui.figure` reads."""
    return place.figure(builder, board, **params)


def jobs(
    runs: list[str],
    focus: str,
    sources: dict[str, data.RunSource],
    choice: str,
    mappings: list[dict[str, Any]],
    session: Any,
) -> list[Job]:
    """The prefetch's jobs for these runs and focus under convention `choice`; `session`: the selections
    the Cross-lingual page remembers (`run_a`, `run_b`, `cell`), any mapping. Views the score store answers
    (`analysis.store.views`) come from it; the per-run domain intervals are not warmed when it holds per-domain JGA."""
    pair = crosslingual_choice(runs, mappings, session)
    overrides: tuple[tuple[str, str], ...] = ()
    if pair is not None:
        overrides = tuple(sorted(mapping_from_manifest(mappings, *pair).items()))
    cell = session.get("cell")
    defaults = Defaults(
        runs,
        focus,
        ui.colours(sources),
        pair,
        overrides,
        cell if cell in AGREEMENT else "only_a",
        sources,
        choice,
        session,
    )
    head, *rest = _declared(defaults)

    def as_jobs(declared: list[FirstViews]) -> tuple[list[Job], list[Job]]:
        calls = [call for first in declared for call in first.views]
        return _to_jobs(sources, choice, calls, [call for first in declared for call in first.figures])

    head_views, head_figures = as_jobs([head])
    rest_views, rest_figures = as_jobs(rest)
    warm = warmups(runs)
    pairs = ui.resolve([runs], sources, choice)[0][0]
    stored = {"domain": data.stores(views.domain_jga, [pairs]), "turn_index": data.stores(views.depth_jga, [pairs])}
    warm = [call for call in warm if not stored[call[2]["by"]]]  # the store answers these intervals
    interval_jobs, _ = _to_jobs(sources, choice, warm, [])
    # The next page in the sidebar (Slots) first, then the slow intervals, then the rest.
    return [
        *head_views,
        *head_figures,
        *([then_job(head.then)] if head.then is not None else []),
        (import_pages_job, ()),
        *interval_jobs,
        *rest_views,
        *rest_figures,
        *[job for first in rest if first.then is not None for job in _then_jobs(first.then)],
    ]


def _then_jobs(then: Then) -> list[Job]:
    """A page's declared next step as jobs: the Slices page's search, then its runs to compare with."""
    job = then_job(then)
    return [job, (comparison_job, job[1])] if job[0] is slices_job else [job]


def start(delay: float = 0.0) -> bool:
    """Start computing the plan for the session's current runs, focus and convention, once per
    combination, after `delay` seconds. Returns whether a prefetch was started."""
    runs = state.selected_runs()
    if not runs or settings.flag("DST_NO_PREFETCH"):
        return False
    focus = state.focus_run() or runs[0]
    sources = state.sources()
    signature = (
        tuple(sources[r].key for r in runs if r in sources),
        focus,
        state.convention_choice(),
        st.session_state.get("run_a"),
        st.session_state.get("run_b"),
    )
    if st.session_state.get("_prefetched") == signature:
        return False
    st.session_state["_prefetched"] = signature
    workspace = st.session_state.get("workspace")
    mappings = list(workspace.mappings) if workspace is not None else []
    planned = jobs(runs, focus, sources, state.convention_choice(), mappings, st.session_state)
    thread = threading.Thread(target=_after, args=(delay, planned), name="dst-prefetch", daemon=True)
    _STARTED.add(thread)
    thread.start()
    return True


_STARTED: weakref.WeakSet[threading.Thread] = weakref.WeakSet()  # prefetch threads not yet collected


def wait(timeout: float | None = None) -> bool:
    """Wait for every prefetch started so far to finish (at most `timeout` s in all); whether they did. For
    tests and tools that read what a prefetch computes or loads: a restart must not meet the previous
    session's prefetch still at work."""
    deadline = None if timeout is None else time.monotonic() + timeout
    for thread in list(_STARTED):
        thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
    return not any(thread.is_alive() for thread in list(_STARTED))
