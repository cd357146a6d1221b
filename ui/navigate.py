"""Going to the Dialogue viewer from any page (a table row, a chart's click): `ui.open_dialogue`."""

from __future__ import annotations

from typing import Any

import streamlit as st

import page_registry
from ui import state

DIALOGUE_PAGE = page_registry.by_url("dialogue").file


def open_dialogue(run: str, dialogue: str, turn: int | None = None, slot: str | None = None) -> None:
    """Jump to the dialogue viewer at a run, dialogue, turn (and slot filter)."""
    values: dict[str, Any] = {"run": run, "dialogue": dialogue, "turn": int(turn) if turn is not None else 0}
    if slot is not None:
        values["slot"] = slot
    if run not in state.selected_runs():
        values["runs"] = [*state.selected_runs(), run]
    state.put(**values)
    st.switch_page(DIALOGUE_PAGE)
