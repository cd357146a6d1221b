"""Streamlit-side loading of the workspace's FewJoint systems: each scored result cached on its files'
paths + modification times and the averaging; a system that fails to load keeps its one-line error."""

from __future__ import annotations

import streamlit as st

from analysis.errors import InputError
from analysis.fewjoint.align import load_fewjoint_system
from analysis.fewjoint.scoring import FewJointResult, score_fewjoint
from analysis.workspace import FewJointEntry
from ui.data import file_stamp


def entries() -> dict[str, FewJointEntry]:
    """The `[[fewjoint]]` entries of the open workspace, by name, in manifest order."""
    workspace = st.session_state.get("workspace")
    if workspace is None:
        return {}
    return {entry.name: entry for entry in workspace.fewjoint_entries}


@st.cache_data(show_spinner="Scoring FewJoint predictions…", max_entries=64)
def _scored(
    name: str,
    gold: str,
    preds: tuple[str, ...],
    shots: int | None,
    stamps: tuple[str | None, ...],
    averaging: str,
) -> FewJointResult | str:
    """`stamps` (mtime + size of gold and every prediction file) is only part of the cache key."""
    try:
        system = load_fewjoint_system(gold, list(preds), name=name, shots=shots)
    except InputError as exc:
        return str(exc)
    return score_fewjoint(system, averaging=averaging)


def result(entry: FewJointEntry, averaging: str) -> FewJointResult | str:
    """The scored system, or the one-line error of its files (both cached)."""
    paths = (str(entry.gold), *(str(p) for p in entry.pred))
    stamps = tuple(file_stamp(p) for p in paths)
    return _scored(entry.name, paths[0], paths[1:], entry.shots, stamps, averaging)


def results(averaging: str) -> tuple[dict[str, FewJointResult], dict[str, str]]:
    """Every FewJoint system of the workspace scored with `averaging`, and those that failed."""
    scored: dict[str, FewJointResult] = {}
    failed: dict[str, str] = {}
    for name, entry in entries().items():
        outcome = result(entry, averaging)
        if isinstance(outcome, str):
            failed[name] = outcome
        else:
            scored[name] = outcome
    return scored, failed
