"""The Review page's live check (`ui.review.live_check`) and the queue grid's selection (`keep_selection`).

The panels rerun on their own clicks only and say which change marker they show; one small timed fragment
reads the marker and reruns the page when a panel is behind, once the reviewer paused. These tests drive
the two functions with a plain dict as session state (no Streamlit session needed); the browser test
`tests/browser/test_browser_review_live.py` checks the same thing end to end (a colleague's tag, and one's
own save reaching the summaries, without a click)."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest

from analysis.review.store import StoreUnavailableError
from ui import review


class Rerun(Exception):
    pass


class FakeStore:
    def __init__(self, marker: tuple[int, int] | None) -> None:
        self.marker = marker

    def change_marker(self) -> tuple[int, int]:
        if self.marker is None:
            raise StoreUnavailableError("the annotation database (sqlite x) cannot be reached: connection refused")
        return self.marker


@pytest.fixture
def session(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    state: dict[str, Any] = {}
    reruns: list[str] = []

    def rerun(scope: str = "app") -> None:
        reruns.append(scope)
        raise Rerun(scope)

    monkeypatch.setattr(review, "st", SimpleNamespace(session_state=state, rerun=rerun))
    state["__reruns"] = reruns
    return state


def check(session: dict[str, Any], store: FakeStore) -> bool:
    """Whether live_check asked for a rerun of the page."""
    try:
        review.live_check(store)  # type: ignore[arg-type]
    except Rerun as asked:
        assert str(asked) == "app"
        return True
    return False


def paused(session: dict[str, Any]) -> None:
    session["_review_clicked_at"] = time.monotonic() - review.LIVE_S - 0.1


def test_nothing_new_reruns_nothing(session: dict[str, Any]) -> None:
    review.shown("queue", (3, 7))
    review.shown("summary", (3, 7))
    paused(session)
    assert not check(session, FakeStore((3, 7)))


def test_a_colleagues_write_reruns_the_page_once(session: dict[str, Any]) -> None:
    review.shown("queue", (3, 7))
    review.shown("summary", (3, 7))
    paused(session)
    assert check(session, FakeStore((4, 8)))
    assert not check(session, FakeStore((4, 8)))  # a panel that could not catch up: not every LIVE_S s
    assert check(session, FakeStore((5, 9)))  # the next write: once more
    review.shown("queue", (5, 9))
    review.shown("summary", (5, 9))
    assert not check(session, FakeStore((5, 9)))
    assert "_review_rerun_asked" not in session  # caught up: the next change reruns again


def paused_for(session: dict[str, Any], seconds: float) -> None:
    session["_review_clicked_at"] = time.monotonic() - seconds


def test_the_summaries_behind_ones_own_save_wait_for_a_longer_pause(session: dict[str, Any]) -> None:
    review.shown("queue", (4, 8))  # the save reran the queue ...
    review.shown("summary", (3, 7))  # ... not the summaries
    review.clicked()
    assert not check(session, FakeStore((4, 8)))  # clicking: a page rerun now would delay the next click
    assert review.CATCH_UP_S > review.LIVE_S
    paused_for(session, review.LIVE_S + 0.1)  # the pause between two clicks: the summaries can wait
    assert not check(session, FakeStore((4, 8)))
    paused_for(session, review.CATCH_UP_S + 0.1)
    assert check(session, FakeStore((4, 8)))


def test_news_the_queue_lacks_waits_for_the_short_pause_only(session: dict[str, Any]) -> None:
    review.shown("queue", (4, 8))
    review.shown("summary", (3, 7))
    paused_for(session, review.LIVE_S + 0.1)
    assert check(session, FakeStore((5, 9)))  # a colleague wrote: the queue is behind as well


def test_a_failing_or_returning_store_reruns_the_page(session: dict[str, Any]) -> None:
    review.shown("queue", (3, 7))
    review.shown("summary", (3, 7))
    paused(session)
    assert check(session, FakeStore(None))  # the panels show its failure
    review.shown("queue", None)
    review.shown("summary", None)
    assert not check(session, FakeStore(None))  # showing the failure already
    assert check(session, FakeStore((3, 7)))  # back


QUEUE = pd.DataFrame({"item_key": ["a", "b", "c"], "slot_name": ["hotel-area", "hotel-name", "taxi-leave"]})


def test_the_grid_follows_the_forms_item_when_its_rows_change(session: dict[str, Any]) -> None:
    session["review_queue"] = {"selection": {"rows": [1], "columns": [], "cells": []}}
    session["_review_queue_rows"] = [1]  # the user picked row 1 before: "b"
    moved = QUEUE.iloc[[0, 2, 1]].reset_index(drop=True)  # "b" is now the third row
    review.keep_selection("review_queue", moved, {"item_key": "b"})
    assert session["review_queue"]["selection"]["rows"] == [2]
    assert session["_review_queue_rows"] == [2]
    gone = QUEUE.iloc[[0, 2]].reset_index(drop=True)  # saved under "unreviewed": off the list
    review.keep_selection("review_queue", gone, {"item_key": "b"})
    assert session["review_queue"]["selection"]["rows"] == []  # no other item highlighted in its place


def test_a_users_pick_is_left_alone(session: dict[str, Any]) -> None:
    session["_review_queue_rows"] = [0]
    session["review_queue"] = {"selection": {"rows": [2], "columns": [], "cells": []}}  # just clicked "c"
    review.keep_selection("review_queue", QUEUE, {"item_key": "a"})  # the form still shows "a"
    assert session["review_queue"]["selection"]["rows"] == [2]
    assert session["_review_queue_rows"] == [2]


def test_unchanged_rows_are_not_set_again(session: dict[str, Any]) -> None:
    selection = {"selection": {"rows": [0], "columns": [], "cells": []}}
    session["review_queue"] = selection
    session["_review_queue_rows"] = [0]
    review.keep_selection("review_queue", QUEUE, {"item_key": "a"})
    assert session["review_queue"] is selection  # no programmatic set: the grid is not sent again
