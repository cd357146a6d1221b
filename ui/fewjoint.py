"""Streamlit side of the workspace's FewJoint systems: each system's files as an argument of `ui.compute`
(`Files`), its scored result cached on the files' paths + modification times and the averaging; a system
that fails to load keeps its one-line error. The files are read and scored in a worker process within its
CPU-time and memory limits (`analysis.isolated_jobs`), never in the server's request threads."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import streamlit as st

from analysis.fewjoint.compare import FewJointComparison
from analysis.fewjoint.scoring import FewJointResult
from analysis.isolated_jobs import fewjoint_compared_isolated, fewjoint_isolated
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
    """A FewJoint system's files as an argument of `ui.compute`: its manifest entry (the files are read
    where it is scored, `scored`), keyed by the paths and their stamps (mtime + size), never by their
    content."""

    entry: FewJointEntry

    @property
    def key(self) -> Hashable:
        paths = (str(self.entry.gold), *(str(p) for p in self.entry.pred))
        return ("fewjoint", self.entry.name, paths, self.entry.shots, tuple(file_stamp(p) for p in paths))

    def value(self) -> FewJointEntry:
        return self.entry


def systems() -> dict[str, Files]:
    """The workspace's FewJoint systems, by name, as arguments of `ui.compute`."""
    return {name: Files(entry) for name, entry in entries().items()}


def scored(system: FewJointEntry, *, averaging: str) -> FewJointResult | str:
    """The system's files read and scored with `averaging` in a worker process, or the one-line error of
    its files or of a worker past its limits (`ui.compute(scored, Files(entry), averaging=...)`: cached on
    the files' stamps and the averaging)."""
    found = fewjoint_isolated(str(system.gold), [str(p) for p in system.pred], system.name, system.shots, averaging)
    return found if isinstance(found, FewJointResult | str) else f"{system.name}: cannot score"


def split(outcomes: dict[str, FewJointResult | str]) -> tuple[dict[str, FewJointResult], dict[str, str]]:
    """The systems that scored, and the one-line error of each that failed to load."""
    scored = {name: outcome for name, outcome in outcomes.items() if not isinstance(outcome, str)}
    failed = {name: outcome for name, outcome in outcomes.items() if isinstance(outcome, str)}
    return scored, failed


def compared(systems: list[FewJointEntry], *, names: tuple[str, ...]) -> FewJointComparison | str:
    """The systems (in the order of `names`) read, scored and compared over seeds and sentences
    (`compare_fewjoint`) in a worker process, or the one-line error of the first that failed to load or of a
    worker past its limits (`ui.compute(compared, [Files(...), ...], names=...)`: cached on the files'
    stamps)."""
    found = fewjoint_compared_isolated(systems, names)
    return found if isinstance(found, FewJointComparison | str) else f"{', '.join(names)}: cannot compare"
