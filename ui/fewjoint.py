"""Streamlit side of the workspace's FewJoint systems: each system's files as an argument of `ui.compute`
(`Files`), its scored result cached on the files' paths + modification times and the averaging; a system
that fails to load keeps its one-line error."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import streamlit as st

from analysis.errors import InputError
from analysis.fewjoint.align import FewJointSystem, load_fewjoint_system
from analysis.fewjoint.compare import FewJointComparison, compare_fewjoint
from analysis.fewjoint.scoring import FewJointResult, score_fewjoint
from analysis.workspace import FewJointEntry
from ui.data import Marker, file_stamp


def entries() -> dict[str, FewJointEntry]:
    """The `[[fewjoint]]` entries of the open workspace, by name, in manifest order."""
    workspace = st.session_state.get("workspace")
    if workspace is None:
        return {}
    return {entry.name: entry for entry in workspace.fewjoint_entries}


@dataclass(frozen=True, eq=False)
class Files(Marker):
    """A FewJoint system's files as an argument of `ui.compute`: the loaded system (or its files' one-line
    error), keyed by the paths and their stamps (mtime + size), never by their content."""

    entry: FewJointEntry

    @property
    def key(self) -> Hashable:
        paths = (str(self.entry.gold), *(str(p) for p in self.entry.pred))
        return ("fewjoint", self.entry.name, paths, self.entry.shots, tuple(file_stamp(p) for p in paths))

    def value(self) -> FewJointSystem | str:
        try:
            return load_fewjoint_system(
                str(self.entry.gold), [str(p) for p in self.entry.pred], name=self.entry.name, shots=self.entry.shots
            )
        except InputError as exc:
            return str(exc)


def systems() -> dict[str, Files]:
    """The workspace's FewJoint systems, by name, as arguments of `ui.compute`."""
    return {name: Files(entry) for name, entry in entries().items()}


def scored(system: FewJointSystem | str, *, averaging: str) -> FewJointResult | str:
    """The system scored with `averaging`, or the one-line error of its files (`ui.compute(scored,
    Files(entry), averaging=...)`: cached on the files' stamps and the averaging)."""
    if isinstance(system, str):
        return system
    return score_fewjoint(system, averaging=averaging)


def split(outcomes: dict[str, FewJointResult | str]) -> tuple[dict[str, FewJointResult], dict[str, str]]:
    """The systems that scored, and the one-line error of each that failed to load."""
    scored = {name: outcome for name, outcome in outcomes.items() if not isinstance(outcome, str)}
    failed = {name: outcome for name, outcome in outcomes.items() if isinstance(outcome, str)}
    return scored, failed


def compared(systems: list[FewJointSystem | str], *, names: tuple[str, ...]) -> FewJointComparison | str:
    """The systems (loaded, in the order of `names`) compared over seeds and sentences (`compare_fewjoint`),
    or the one-line error of the first that failed to load (`ui.compute(compared, [Files(...), ...],
    names=...)`: cached on the files' stamps)."""
    failed = next((s for s in systems if isinstance(s, str)), None)
    if failed is not None:
        return failed
    loaded = [s for s in systems if not isinstance(s, str)]
    results = {name: score_fewjoint(s, averaging="micro") for name, s in zip(names, loaded, strict=True)}
    return compare_fewjoint(results)
