"""The views the score store answers: a registry from each view function to its stored answer, DuckDB over
the few columns it needs of the stored runs' Parquet files (`analysis.store.queries`), so whoever shows it
(a dashboard page, the prefetch, the report) parses and scores no run.

`query(view, args, params)` is the view's call with its runs found in the store: a `Query` when the store
answers it (every run stored with the tables it reads; and, for the views whose numbers are the SGD
evaluator's under the SGD convention, no such run), else None, and the caller computes the view from the
scored runs; `Query.answer()` runs it. `answer(...)` does both. A run argument is the caller's: a
(`RunEntry`, convention) pair by default, or anything `find` looks up (the dashboard's run sources). Each
stored answer equals the in-memory view: same columns, order and values (`tests/test_store_pages.py`
iterates `REGISTRY`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from analysis import views
from analysis.errors import InputError
from analysis.metrics import SLOT_LEVEL, VALUELESS_FORMATS
from analysis.review import analysis as review
from analysis.store import entries as store_entries
from analysis.store import queries
from analysis.store import runs as store_runs
from analysis.store.entries import Entry, log
from analysis.workspace import RunEntry

# A run argument with the tables a view reads -> its stored entry (those tables whole), or None.
Find = Callable[[Any, tuple[str, ...]], Entry | None]
Tables = tuple[str, ...] | Callable[[dict[str, Any]], tuple[str, ...]]


@dataclass(frozen=True)
class Stored:
    """How the store answers a view: `answer(entries, **params)` (a view of one run: `answer(entry,
    **params)`), when every run has `tables` stored whole.

    `runs`: the view's one argument is one run (`one`), a list of runs (`many`) or either (`any`).
    `params`: the parameters the stored answer takes (a call with any other is computed in memory);
    `accepts`, when given, says which values it takes. `sgd=False`: the view's numbers under the SGD
    convention are the SGD evaluator's, which the stored tables do not hold. With `base`, `answer` takes
    the base's answer for the same runs instead of the entries (several views from one query: the
    caller's cache then runs it once)."""

    answer: Callable[..., Any]
    tables: Tables = ("runs",)
    runs: Literal["one", "many", "any"] = "many"
    params: frozenset[str] = frozenset()
    accepts: Callable[[dict[str, Any]], bool] | None = None
    sgd: bool = True
    base: Stored | None = None

    @property
    def name(self) -> str:
        return f"{self.answer.__module__}.{self.answer.__qualname__}"

    def tables_for(self, params: dict[str, Any]) -> tuple[str, ...]:
        return self.tables(params) if callable(self.tables) else self.tables


@dataclass(frozen=True)
class Query:
    """A view's call answered by the store: what it runs on (`entries`, in the call's order) and with which
    parameters. `name` (the stored answer's function), `keys` and `params` identify the answer (a cache's
    key: the entries' store keys hold the files' digests, the convention and the scorer's version)."""

    stored: Stored
    name: str
    entries: tuple[Entry, ...]
    params: tuple[tuple[str, Any], ...]
    base: Query | None = field(default=None)

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(e.key for e in self.entries)

    def answer(self, base: Callable[[Query], Any] | None = None) -> Any:
        """Run the query; `base(query)` answers the base query (default: run it), e.g. from a cache."""
        kwargs = dict(self.params)
        if self.base is not None:
            return self.stored.answer((base or Query.answer)(self.base), **kwargs)
        if self.stored.runs == "one":
            return self.stored.answer(self.entries[0], **kwargs)
        return self.stored.answer(list(self.entries), **kwargs)


def manifest_run(arg: Any) -> bool:
    """Whether a call's argument is a run as `find_manifest_run` takes it: a (`RunEntry`, convention) pair."""
    return isinstance(arg, tuple) and len(arg) == 2 and isinstance(arg[0], RunEntry)


def find_manifest_run(arg: tuple[RunEntry, str | None], tables: tuple[str, ...]) -> Entry | None:
    """The stored entry of a manifest run under a convention (None: its files' own), or None."""
    try:
        return store_runs.stored(arg[0], arg[1], tables=tables)
    except OSError:  # an unreadable file or store: computed the usual way, which says what is wrong
        return None


def query(
    view: Callable[..., Any],
    args: Sequence[Any],
    params: dict[str, Any],
    *,
    find: Find = find_manifest_run,
    is_run: Callable[[Any], bool] = manifest_run,
) -> Query | None:
    """`view(*args, **params)` as a store query (only headers read, nothing queried yet), or None when the
    store does not answer it: the view is not registered, a parameter is not one its stored answer
    takes, a run is not stored (or, for a view with `sgd=False`, is scored under the SGD convention)."""
    stored = REGISTRY.get(view)
    if stored is None or len(args) != 1:
        return None
    return _query(stored, args[0], params, find, is_run)


def _query(stored: Stored, arg: Any, params: dict[str, Any], find: Find, is_run: Callable[[Any], bool]) -> Query | None:
    if not set(params) <= stored.params or (stored.accepts is not None and not stored.accepts(params)):
        return None
    if stored.runs in ("one", "any") and is_run(arg):
        runs = [arg]
    elif stored.runs in ("many", "any") and isinstance(arg, list) and arg and all(is_run(a) for a in arg):
        runs = list(arg)
    else:
        return None
    base = None
    if stored.base is not None:
        base = _query(stored.base, arg, {}, find, is_run)
        if base is None:
            return None
        found = list(base.entries)
    else:
        found = []
        tables = stored.tables_for(params)
        for run in runs:
            entry = find(run, tables)
            if entry is None or (not stored.sgd and entry.convention == "sgd"):
                return None
            found.append(entry)
    frozen = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in params.items()))
    return Query(stored, stored.name, tuple(found), frozen, base)


def answer(
    view: Callable[..., Any],
    args: Sequence[Any],
    params: dict[str, Any],
    *,
    find: Find = find_manifest_run,
    is_run: Callable[[Any], bool] = manifest_run,
) -> Any | None:
    """`view(*args, **params)` from the store when it answers it (see `query`), else None."""
    found = query(view, args, params, find=find, is_run=is_run)
    if found is None:
        return None
    try:
        return found.answer()
    except InputError as exc:  # a store file damaged after its check: removed, and the caller computes the view
        heal(found, exc)
        return None


def heal(found: Query, failure: Exception) -> set[str]:
    """After `found.answer()` failed (a store file damaged past the size check that chose it, e.g. bytes
    overwritten in place): every entry it read checked whole (`entries.lookup`: each table it read has
    its header's size, rows, SHA-256 and columns), and each damaged one removed with one warning line, so
    that the caller's in-memory path scores and stores it again; the store keys removed. When none is found
    damaged, the failure itself is the one warning line."""
    removed: set[str] = set()
    query: Query | None = found
    while query is not None:
        tables = query.stored.tables_for(dict(query.params))
        for entry in query.entries:
            if store_entries.lookup(entry.root, entry.key, tables=tables, deep=True) is None:
                removed.add(entry.key)
        query = query.base
    if not removed:
        log.warning("%s", failure)
    return removed


# --- the stored answers ---------------------------------------------------------------------------------


def _slot_table(entry: Entry) -> Any:
    return queries.slot_tables([entry]).drop(columns=["run_id"])


def _resamples(resamples: int | None) -> int:
    return views.INTERVAL_RESAMPLES if resamples is None else int(resamples)


def _domain_jga(entries: list[Entry], *, resamples: int | None = None) -> Any:
    return queries.domain_jga(entries, resamples=_resamples(resamples))


def _depth_jga(entries: list[Entry], *, resamples: int | None = None) -> Any:
    return queries.depth_jga(entries, resamples=_resamples(resamples))


def _leaderboard(entries: list[Entry], *, sort: str | None = None, resamples: int | None = None) -> Any:
    return queries.leaderboard(entries, sort=sort, resamples=_resamples(resamples))


# Each stored answer calls its query by name, so a test that replaces a query (`queries.pick_dialogues`) sees it.
def _depth_metrics(entries: list[Entry]) -> Any:
    return queries.depth_metrics(entries)


def _error_items(entries: list[Entry]) -> Any:
    return queries.error_items(entries)


def _first_errors(entries: list[Entry]) -> Any:
    return queries.first_error_distribution(entries)


def _attribute_columns(entries: list[Entry]) -> Any:
    return queries.attribute_columns(entries)


def _jga_by_attribute(entries: list[Entry], *, attribute: str) -> Any:
    return queries.jga_by_attribute(entries, attribute=attribute)


def _pick_dialogues(entry: Entry, **filters: Any) -> Any:
    return queries.pick_dialogues(entry, **filters)


def _run_table(entries: list[Entry]) -> Any:
    return queries.run_table(entries)


def _values_note(entry: Entry) -> str:
    """From the run's header: whether its file holds values (its formats), no table read."""
    formats = set(entry.header["meta"].get("formats") or ())
    return views.values_note_for(bool(VALUELESS_FORMATS & formats))


def _unread_gold(entries: list[Entry]) -> dict[str, str]:
    """From the runs' headers (their alignment notes), no table read."""
    return views.unread_of([e.header["alignment"] for e in entries])


def _history_pairs(entries: list[Entry]) -> Any:
    return views.history_pairs([e.header["meta"] for e in entries])


def _scope_caption(table: Any) -> str:
    return views.board_caption(table, list(table["convention"]))


def _comparability(table: Any, **params: Any) -> list[str]:
    return views.comparability_warnings(table[list(views.run_table([]).columns)], **params)


def _episodes(items: Any) -> Any:
    return review.error_episodes(items)


def _picker_tables(params: dict[str, Any]) -> tuple[str, ...]:
    """The search reads the run's utterances and values too; the other filters only its picker table."""
    return ("picker", "turns", "slots") if str(params.get("search", "")).strip() else ("picker",)


def _an_attribute(params: dict[str, Any]) -> bool:
    return "attribute" in params and isinstance(params["attribute"], str) and params["attribute"] not in SLOT_LEVEL


_RUN_TABLE = Stored(_run_table, ("runs",), runs="any")
_ERROR_ITEMS = Stored(_error_items, ("slots",))

# View function -> its stored answer. A view not listed here is computed from the scored runs.
REGISTRY: dict[Callable[..., Any], Stored] = {
    views.leaderboard: Stored(_leaderboard, ("runs", "dialogues"), params=frozenset({"sort", "resamples"}), sgd=False),
    views.slot_table: Stored(_slot_table, ("slot_table",), runs="one"),
    views.domain_jga: Stored(
        _domain_jga, ("runs", "domains", "domain_parts"), params=frozenset({"resamples"}), sgd=False
    ),
    views.depth_jga: Stored(_depth_jga, ("runs", "depth", "depth_parts"), params=frozenset({"resamples"}), sgd=False),
    views.depth_metrics: Stored(_depth_metrics, ("depth_metrics",), sgd=False),
    review.review_errors: _ERROR_ITEMS,
    review.review_episodes: Stored(_episodes, base=_ERROR_ITEMS),
    views.first_error_distribution: Stored(_first_errors, ("picker",)),
    views.attribute_columns: Stored(_attribute_columns, ("turns",)),
    views.jga_by_attribute: Stored(
        _jga_by_attribute, ("turns",), params=frozenset({"attribute"}), accepts=_an_attribute
    ),
    views.history_pairs_of: Stored(_history_pairs, ("runs",)),
    views.values_note: Stored(_values_note, ("runs",), runs="one"),
    views.unread_gold: Stored(_unread_gold, ("runs",), runs="any"),
    views.pick_dialogues: Stored(
        _pick_dialogues,
        _picker_tables,
        runs="one",
        params=frozenset({"search", "sort", "first_error", "min_errors", "min_run"}),
    ),
    views.scope_caption: Stored(_scope_caption, runs="any", base=_RUN_TABLE),
    views.comparability_warnings: Stored(_comparability, params=frozenset({"about"}), base=_RUN_TABLE),
}
