"""The dashboard's pages, in sidebar order: one entry per page, read by `app.py` (the navigation and the
deep links), by the background prefetch (`ui.prefetch`: each page's declared first views) and by the tests
(every page is opened with AppTest, in a browser too). Adding a page is one entry here and its file in
`pages/`; a test checks that the two agree.

A page's `first` declaration says what it computes and draws first with its default widgets: the `analysis`
calls it makes through `ui.compute` (same function, arguments and parameters, hence the same cache key), the
figures it builds from them through `ui.figure` (same builder and parameters, titles included), and `then`,
the prefetch job (named: a job of `ui.prefetch`) for what it computes next from a first view's result (a
default slot, attribute, pair or dialogue). The prefetch computes the declarations of the pages after the
first one; `tests/test_prefetch.py` checks that every declared call and figure is one the page really makes.
A page without a declaration is not prefetched.

This module sits outside `ui/` on purpose: `app.py` needs the page list before it sends the loading
placeholder, and importing the `ui` package (pandas, `analysis`) takes about 0.8 s. The declarations import
what they name only when called, and never `ui`, which imports this module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent

# An `analysis` call as `ui.compute` makes it: (function, run ids and other arguments, parameters).
Call = tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]
# A figure a page draws from a view: (builder, the view's call, path into the view's result, builder parameters).
FigureCall = tuple[Callable[..., Any], Call, tuple[str, ...], dict[str, Any]]
# A prefetch job: (job function, its arguments, the convention choice last for the jobs that depend on one).
Job = tuple[Callable[..., Any], tuple[Any, ...]]
# A page's next step as it declares it: (the name of a job of `ui.prefetch`, e.g. "slot_detail_job", its
# arguments); `ui.prefetch.then_job` makes it a `Job`.
Then = tuple[str, tuple[Any, ...]]
# Inherited vs new errors: one panel per run, beyond four the panels get too small to read (`ui.ORIGIN_PANELS`).
ORIGIN_PANELS = 4


@dataclass(frozen=True)
class Defaults:
    """What the pages' first views depend on, as the pages will choose it: the selected runs, the focus run,
    `ui.colours()`, the Cross-lingual page's runs A and B (`pair`), their manifest slot mapping (`overrides`)
    and drill-down cell; for the `then` jobs also the runs' sources, the convention choice and the session's
    remembered selections."""

    runs: list[str]
    focus: str
    colours: dict[str, str] = field(default_factory=dict)
    pair: tuple[str, str] | None = None
    overrides: tuple[tuple[str, str], ...] = ()
    cell: str = "only_a"
    sources: Mapping[str, Any] = field(default_factory=dict)
    choice: str = ""
    session: Mapping[str, Any] = field(default_factory=dict)


class FirstViews(NamedTuple):
    """A page's declared first views (see the module's docstring)."""

    views: list[Call]
    figures: list[FigureCall]
    then: Then | None = None


@dataclass(frozen=True)
class Page:
    file: str  # relative to the repository root
    title: str  # in the sidebar
    url_path: str  # also the `page=` of a deep link
    icon: str
    first: Callable[[Defaults], FirstViews] | None = None  # its first views; None: not prefetched

    @property
    def path(self) -> Path:
        return ROOT / self.file


def overview(d: Defaults) -> FirstViews:
    """The leaderboard sorted by the first headline metric (the default sort), its caption and its chart."""
    from analysis import seeds, views
    from analysis.suite import HEADLINE

    sort = HEADLINE[0][0]
    board: Call = (views.leaderboard, (d.runs,), {"sort": sort})
    if _many(d):  # the chart draws the best few of the board (`ui.drawn_runs`): drawn on the visit
        return FirstViews([board, (views.scope_caption, (d.runs,), {})], [])
    return FirstViews(
        [board, (views.scope_caption, (d.runs,), {})],
        [(seeds.overview_bar, board, (), {"metric": sort, "colours": d.colours})],  # seeds combined, if any
    )


def _many(d: Defaults) -> bool:
    """More runs selected than a chart draws (`analysis.views.shown.CHART_RUNS`): the pages draw the best few
    by a metric the page chooses (`ui.drawn_runs`), which the prefetch does not know; their views are left
    to the visit."""
    from analysis.views.shown import CHART_RUNS

    return len(d.runs) > CHART_RUNS


def slots(d: Defaults) -> FirstViews:
    """The focus run's per-slot table and outcome mix; then its default slot's confusions and examples."""
    from analysis import figures, views

    table: Call = (views.slot_table, (d.focus,), {})
    mix: Call = (views.outcome_mix, (d.focus,), {"by": "slot"})
    return FirstViews(
        [table, mix],
        [
            (figures.slot_f1_bar, table, (), {"run_id": d.focus, "colour": d.colours.get(d.focus)}),
            (figures.outcome_mix_bar, mix, (), {"title": f"Error outcomes per slot — {d.focus}"}),
        ],
        ("slot_detail_job", (d.focus, d.sources, d.session.get("slot"), d.choice)),
    )


def domains(d: Defaults) -> FirstViews:
    """Per-domain JGA, the focus run's outcome mix per domain, the attributes; then JGA by the default one."""
    from analysis import figures, views

    per_domain: Call = (views.domain_jga, (d.runs,), {})
    mix: Call = (views.outcome_mix, (d.focus,), {"by": "domain"})
    if _many(d):
        return FirstViews(
            [mix],
            [(figures.outcome_mix_bar, mix, (), {"title": f"Error outcomes per domain — {d.focus} (focus run)"})],
        )
    return FirstViews(
        [per_domain, mix, (views.attribute_columns, (d.runs,), {})],
        [
            (
                figures.grouped_jga_bar,
                per_domain,
                (),
                {"by": "domain", "colours": d.colours, "title": "JGA per domain", "highlight": d.focus},
            ),
            (figures.outcome_mix_bar, mix, (), {"title": f"Error outcomes per domain — {d.focus} (focus run)"}),
        ],
        ("attribute_job", (d.runs, d.sources, d.colours, d.session.get("attribute"), d.choice)),
    )


def turn_depth(d: Defaults) -> FirstViews:
    """JGA by depth, inherited vs new errors, first errors, the paired runs; then the default pair's curve."""
    from analysis import figures, views

    depth: Call = (views.depth_jga, (d.runs,), {})
    origins: Call = (views.origins_by_depth, (d.runs[:ORIGIN_PANELS],), {})
    first_errors: Call = (views.first_error_distribution, (d.runs,), {})
    if _many(d):
        return FirstViews([], [])
    return FirstViews(
        [depth, origins, first_errors, (views.history_pairs_of, (d.runs,), {})],
        [
            (figures.depth_lines, depth, (), {"colours": d.colours, "highlight": d.focus}),
            (figures.first_error_bar, first_errors, (), {"colours": d.colours}),
            (figures.origins_bar, origins, (), {}),
        ],
        ("compounding_job", (d.runs, d.sources, d.colours, d.session.get("pair"), d.choice)),
    )


def crosslingual(d: Defaults) -> FirstViews:
    """Runs A and B's summary (agreement cells, gaps) and drill-down turns; nothing with fewer than two runs."""
    if d.pair is None:
        return FirstViews([], [])
    from analysis import figures, views
    from analysis.crosslingual import GAP_COLUMN

    a, b = d.pair
    summary: Call = (views.crosslingual_summary, (a, b), {"overrides": d.overrides})
    turns: Call = (views.crosslingual_turns, (a, b), {"cell": d.cell, "overrides": d.overrides, "slot_a": None})
    return FirstViews(
        [summary, turns],
        [
            (figures.agreement_heatmap, summary, ("cells",), {"run_a": a, "run_b": b}),
            *[
                (figures.gap_bar, summary, ("gaps", by), {"by": column, "value": "gap"})
                for by, column in GAP_COLUMN.items()
            ],
        ],
    )


def dialogue(d: Defaults) -> FirstViews:
    """The focus run's dialogue index; then its default dialogue's turns and turn strip."""
    from analysis import views

    return FirstViews(
        [(views.dialogue_index, (d.focus,), {})],
        [],
        ("dialogue_job", (d.focus, d.sources, d.session.get("dialogue"), d.choice)),
    )


def slices(d: Defaults) -> FirstViews:
    """The search as the page's widgets stand: the features it offers, then the worst slices (a job: which
    features it leaves out depends on what the first call offers)."""
    return FirstViews([], [], ("slices_job", (d.runs, d.focus, d.sources, d.session, d.choice)))


def review(d: Defaults) -> FirstViews:
    """The selected runs' error items and episodes (a job, after every earlier page's views and figures:
    it is the largest); of more runs than a chart draws, those the page reviews (`ui.drawn_runs`)."""
    return FirstViews([], [], ("review_job", (d.runs, d.sources, d.session, d.choice)))


def reconcile(d: Defaults) -> FirstViews:
    """The focus run reconciled across the page's conventions, and its default pair's flips explained."""
    return FirstViews([], [], ("reconcile_job", (d.focus, d.sources, d.session)))


PAGES: list[Page] = [
    Page("pages/overview.py", "Overview", "overview", ":material/leaderboard:", overview),
    Page("pages/slots.py", "Slots", "slots", ":material/view_list:", slots),
    Page("pages/domains.py", "Domains", "domains", ":material/category:", domains),
    Page("pages/turn_depth.py", "Turn depth", "turn_depth", ":material/stacked_line_chart:", turn_depth),
    Page("pages/crosslingual.py", "Cross-lingual", "crosslingual", ":material/translate:", crosslingual),
    Page("pages/dialogue.py", "Dialogue viewer", "dialogue", ":material/forum:", dialogue),
    Page("pages/slices.py", "Slices", "slices", ":material/filter_alt:", slices),
    Page("pages/fewjoint.py", "FewJoint", "fewjoint", ":material/join_inner:"),
    Page("pages/review.py", "Review", "review", ":material/rate_review:", review),
    Page("pages/reconcile.py", "Reconcile", "reconcile", ":material/compare_arrows:", reconcile),
]
FIRST = PAGES[0]  # the default page: what a session computes first
PREFETCHED = [page for page in PAGES[1:] if page.first is not None]  # in sidebar order, the order users visit


def by_url(url_path: str) -> Page:
    return next(page for page in PAGES if page.url_path == url_path)
