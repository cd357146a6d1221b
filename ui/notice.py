"""Notices that say less: the reasons runs side by side are not comparable as one compact line that expands
into the sentences (`views.comparability_warnings`), instead of a yellow box per reason."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from ui.text import md

ICON = ":material/warning:"


def heads(lines: Sequence[str]) -> list[str]:
    """Each sentence's lead, up to its first colon: "Splits differ", "Scored under different conventions".

    >>> heads(["Splits differ: a (test), b (dev). Their numbers are not comparable."])
    ['splits differ']
    """
    out = []
    for line in lines:
        lead = line.split(":", 1)[0].strip().rstrip(".") or line
        out.append(lead[:1].lower() + lead[1:])
    return out


def comparability_notice(lines: Sequence[str]) -> None:
    """One collapsed notice naming every reason in a few words; opened, the full sentences."""
    if not lines:
        return
    with st.expander(md("Not comparable as they stand: " + "; ".join(heads(lines))), icon=ICON):
        for line in lines:
            st.warning(md(line), icon=ICON)
