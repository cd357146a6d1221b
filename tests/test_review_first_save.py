"""The tag form's save does no first-time work in the server (issue 18 requirement 6: every review click,
the session's first save included, answers within 1 s).

The saved message holds non-ASCII text ('·', '–'). Streamlit looks for a leading emoji in such an alert
unless it is given an icon, and its first look-up in a process compiles the whole emoji catalogue into
one regular expression (0.3-0.6 s of CPU, measured inside the first save of a server). The form names its
messages' icons, so no look-up happens, on the first save or any other.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

TIMEOUT = 60


def form_script() -> None:
    """The tag form of one episode, on the store the test put in the session (`review.store` stands for
    it during this run only)."""
    import streamlit as st

    from analysis.review.items import Item
    from ui import review

    item = Item("MultiWOZ 2.1", "MUL0001.json", 2, domain="hotel", slot="area", run_id="trade", last_turn=4, n_turns=3)
    st.session_state[review.REVIEWER] = "ana"
    original = review.store
    review.store = lambda: st.session_state["test_store"]
    try:
        review.tag_form(item, key="first_save")
    finally:
        review.store = original


@pytest.fixture()
def looked_up(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The alert bodies Streamlit searched for a leading emoji or icon."""
    import streamlit.elements.alert as alert

    calls: list[str] = []
    real = alert.extract_leading_icon

    def spy(text: str) -> tuple[str, str]:
        calls.append(text)
        return real(text)

    monkeypatch.setattr(alert, "extract_leading_icon", spy)
    return calls


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
def test_the_save_message_names_its_icon_so_no_emoji_look_up_happens(tmp_path: Path, looked_up: list[str]) -> None:
    from analysis.review.store import AnnotationStore

    store = AnnotationStore(f"sqlite:///{tmp_path / 'annotations.sqlite'}")
    at = AppTest.from_function(form_script, default_timeout=TIMEOUT)
    at.session_state["test_store"] = store
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    next(m for m in at.multiselect if m.label == "Tags").set_value(["missed update"])
    next(b for b in at.button if b.label == "Save tags").click().run()
    assert not at.exception, [e.value for e in at.exception]

    assert store.annotations()["tags"].tolist() == [("missed update",)]
    assert len(at.success) == 1 and at.success[0].body.startswith("saved (1 tag, version 1)")
    assert "·" in at.success[0].body and "–" in at.success[0].body  # the non-ASCII text that would be searched
    assert at.success[0].icon == ":material/check_circle:"
    assert looked_up == []

    # No tags: the annotation removed (success), then nothing left to remove (an error); icons named.
    for said in ("removed your tags", "pick at least one tag"):
        next(m for m in at.multiselect if m.label == "Tags").set_value([])
        next(b for b in at.button if b.label == "Save tags").click().run()
        assert not at.exception, [e.value for e in at.exception]
        shown = [*at.success, *at.error]
        assert len(shown) == 1 and shown[0].body.startswith(said), [m.body for m in shown]
        assert shown[0].icon == (":material/check_circle:" if at.success else ":material/error:")
    assert store.annotations().empty
    assert looked_up == []
    store.close()
