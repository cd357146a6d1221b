"""Streamlit side of convention reconciliation: one `Reconciliation` per run file and convention list,
kept as a cached resource (its per-pair attributions are computed lazily and kept with it)."""

from __future__ import annotations

import streamlit as st

from analysis.errors import InputError
from analysis.reconcile.core import Reconciliation, reconcile
from ui import data, state


@st.cache_resource(show_spinner="Scoring the run under each convention…", max_entries=16)
def _reconciliation(key: str, conventions: tuple[str, ...], _source: data.RunSource) -> Reconciliation | str:
    """`key` (the run source: paths and file stamps) and `conventions` key the cache."""
    return _reconcile_now(_source, conventions)


def _reconcile_now(source: data.RunSource, conventions: tuple[str, ...]) -> Reconciliation | str:
    run = data.load(source)
    if isinstance(run, str):
        return run
    try:
        return reconcile(run, conventions)
    except (InputError, ValueError) as exc:
        return str(exc)


def reconciliation(run_id: str, conventions: list[str]) -> Reconciliation | str:
    """The run (as loaded from its files, not a scored table) reconciled across `conventions`, or the
    one-line error; cached on the run's files and the convention list."""
    source = state.sources()[run_id]
    if source.upload is not None:  # an upload's is kept by its session (`data.Upload`), not process-wide
        return source.upload.memo(("reconcile", tuple(conventions)), lambda: _reconcile_now(source, tuple(conventions)))
    return _reconciliation(source.key, tuple(conventions), source)


def default_pair(rec: Reconciliation) -> tuple[str, str] | None:
    """The pair of conventions with the most flipped turns (the first pair when none flips)."""
    counts = rec.flip_counts()
    if counts.empty:
        return None
    best = counts.sort_values("count", ascending=False, kind="stable").iloc[0]
    return str(best["a"]), str(best["b"])
