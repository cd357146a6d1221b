"""Review that remembers (issue 41 requirement 6): the reviewer name and the queue's filters are in the URL, so
a reload (a new session on the same URL) keeps them; the tag box offers no "Select all"; the items others
reviewed and I did not are one click away. tests/browser/test_browser_review_memory.py reloads a real browser."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from analysis.review import AnnotationStore

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"
DEMO = ROOT / "data" / "demo" / "workspace.toml"
TIMEOUT = 300

pytestmark = pytest.mark.skipif(not DEMO.exists(), reason=f"the demo workspace {DEMO} is absent (make demo)")


@pytest.fixture
def annotations_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite:///{tmp_path / 'annotations.sqlite'}"
    monkeypatch.setenv("DST_ANNOTATIONS_URL", url)
    return url


def review_page(query: dict[str, str] | None = None, **state) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.session_state["workspace_path"] = str(DEMO)
    for key, value in state.items():
        at.session_state[key] = value
    for key, value in (query or {}).items():
        at.query_params[key] = value
    if query is None:
        at.run()
        at.switch_page("pages/review.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert [t.value for t in at.title] == ["Review"]
    return at


def param(at: AppTest, name: str) -> str | None:
    value = at.query_params.get(name)
    return value[0] if isinstance(value, list) else value


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
def test_the_reviewer_and_the_filters_survive_a_reload(annotations_url: str) -> None:
    at = review_page()
    at.text_input(key="w_reviewer").input("ana").run()
    at.selectbox(key="w_review_status").set_value("by-others").run()
    domain = at.selectbox(key="w_review_domain").options[1]  # the first domain with errors
    at.selectbox(key="w_review_domain").set_value(domain).run()
    assert not at.exception, [e.value for e in at.exception]
    written = {k: param(at, k) for k in ("page", "reviewer", "review_status", "review_domain")}
    assert written == {"page": "review", "reviewer": "ana", "review_status": "by-others", "review_domain": domain}
    # a reload: a new session opened on that URL
    again = review_page({k: v for k, v in written.items() if v})
    assert again.session_state["reviewer"] == "ana"
    assert again.text_input(key="w_reviewer").value == "ana"
    assert again.selectbox(key="w_review_status").value == "by-others"
    assert again.selectbox(key="w_review_domain").value == domain
    # a filter value the page does not offer is dropped with a notice, never used
    odd = review_page({"page": "review", "review_domain": "no such domain"})
    assert odd.selectbox(key="w_review_domain").value == ""
    assert any("no such domain" in w.value for w in odd.warning)


def test_the_tag_box_offers_no_select_all(annotations_url: str) -> None:
    at = review_page(reviewer="ana")
    tags = next(m for m in at.multiselect if m.label == "Tags")
    assert tags.proto.select_all == 0  # Streamlit's default (1000) shows "Select all" in the dropdown


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
def test_items_others_reviewed_but_not_me_are_one_click_away(annotations_url: str) -> None:
    from ui import review

    at = review_page(reviewer="ana")
    button = next(b for b in at.button if b.key == "review_second_opinion")
    assert button.label == "Second opinion: 0 item(s) others reviewed, not you"
    first = review.item_of(at.session_state["review_item"])  # the queue's first episode
    store = AnnotationStore(annotations_url)
    store.annotate(first, ["wrong value"], reviewer="bob")
    at.run()
    button = next(b for b in at.button if b.key == "review_second_opinion")
    assert button.label == "Second opinion: 1 item(s) others reviewed, not you"
    button.click().run()  # one click
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["review_status"] == "by-others"
    assert at.selectbox(key="w_review_status").value == "by-others"
    assert any(c.value.startswith("1 error episode(s) match") for c in at.caption)
    back = next(b for b in at.button if b.key == "review_second_opinion")
    assert back.label == "Back to the items nobody reviewed"
    # once I have tagged it too, it is no second opinion to give
    store.annotate(first, ["wrong value"], reviewer="ana")
    back.click().run()
    assert next(b for b in at.button if b.key == "review_second_opinion").label.startswith("Second opinion: 0 ")
    # without a name, "me" is nobody: the button waits for one
    assert next(b for b in review_page().button if b.key == "review_second_opinion").disabled
