"""The sidebar's Disk box: how much the score store and the parse cache hold, how much of it this version of
the tool never reads (older versions' entries, damaged ones, writes cut short, parsed copies of files edited
or gone), and a button that removes that, as `python -m analysis prune` does (`analysis.store.disk`).

Looked at when the box is opened, not before: reading every entry's header takes about 0.6 s for 1,000 runs,
which no page should wait for. Also once a workspace's new runs were scored into the store (minutes, after an
upgrade of the tool: every entry of the version before is then unread), and then said above the box. Removing
asks for a tick first: a store shared with machines running another version of the tool loses their entries
too (they score them again).
"""

from __future__ import annotations

import streamlit as st

from analysis.store.disk import Disk, look, size_text
from ui.text import md

__all__ = ["after_scoring", "disk_box"]

_REPORT = "disk_report"  # session key: the last `Disk` looked at (or pruned)
_SURE = "w_disk_sure"
_HINT = "disk_unread"  # session key: bytes this version never reads, found after new runs were scored


def after_scoring() -> None:
    """Once new runs of a workspace were scored into the store (seconds to minutes of work, to which the look
    adds about 0.6 s per 1,000 entries): looked at, so that the sidebar says, above the box, how much the store
    and the parse cache hold that this version never reads (after an upgrade: every entry of the version
    before, about 1 GB per 1,000 runs)."""
    found = look(dry_run=True)
    st.session_state[_REPORT] = found
    st.session_state[_HINT] = found.freed_bytes


def disk_box() -> None:
    """The box, put on the page only while it is open (a rerun on opening), looked at on its first opening;
    above it, after new runs were scored, how much of the disk this version never reads (`after_scoring`)."""
    unread = st.session_state.get(_HINT, 0)
    if unread:
        st.sidebar.info(
            f"The score store and the parse cache hold {size_text(unread)} this version never reads again: "
            "the Disk box below shows what, and removes it."
        )
    box = st.sidebar.expander("Disk: score store and parse cache", key="w_disk_box", on_change="rerun")
    if not box.open:
        return
    with box:
        if _REPORT not in st.session_state:
            with st.spinner("Reading the store's entries…"):
                _look()
        found: Disk = st.session_state[_REPORT]
        if found.root is None:
            st.caption("Nothing is kept on disk: `DST_CACHE_DIR` is set to an empty string.")
            return
        st.caption(_summary(found) + " From a shell: `python -m analysis prune`.")
        st.code("\n".join(found.lines()), language=None, wrap_lines=True)
        for line in found.failed[:3]:
            st.error(md(f"could not be removed: {line}"))
        if found.dry_run and found.freed_bytes:
            st.checkbox(
                "Remove them; other versions of the tool sharing this store lose their entries",
                key=_SURE,
            )
            st.button(
                f"Remove {size_text(found.freed_bytes)}",
                key="w_disk_prune",
                on_click=_prune,
                disabled=not st.session_state.get(_SURE),
            )
        st.button("Look again", key="w_disk_look", on_click=_look)


def _summary(found: Disk) -> str:
    kept, freed = size_text(found.kept_bytes), size_text(found.freed_bytes)
    if not found.dry_run:
        return f"Removed {freed}; kept {kept}, which this version reads."
    if not found.freed_bytes:
        return f"The store and the parse cache hold {kept}, all of it read by this version: nothing to remove."
    return (
        f"The store and the parse cache hold {kept} this version reads and {freed} it never reads again "
        "(older versions' entries, damaged ones, writes cut short, parses of files edited or gone)."
    )


def _look() -> None:
    found = look(dry_run=True)
    st.session_state[_REPORT] = found
    st.session_state[_HINT] = min(st.session_state.get(_HINT, 0), found.freed_bytes)  # said again only if still so


def _prune() -> None:
    st.session_state[_SURE] = False
    st.session_state[_REPORT] = look(dry_run=False)
    st.session_state[_HINT] = 0
