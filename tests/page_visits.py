"""AppTest helper: visit pages with every tab (a page with `ui.tabs` computes and draws only the chosen
tab, so a test that records what the pages ask for must open each tab)."""

from __future__ import annotations

from collections.abc import Iterable

from streamlit.testing.v1 import AppTest


def visit_every_tab(at: AppTest, pages: Iterable[str]) -> None:
    """Switch `at` to each of `pages` (url paths under pages/) and open each of its tabs in turn, asserting
    that no run raised; each page is left on its first tab."""
    for page in pages:
        at.switch_page(f"pages/{page}.py").run()
        assert not at.exception, (page, [e.value for e in at.exception])
        labels = [tab.label for tab in at.tabs]
        for label in [*labels[1:], *labels[:1]]:
            at.session_state[f"view_{page}"] = label
            at.run()
            assert not at.exception, (page, label, [e.value for e in at.exception])
