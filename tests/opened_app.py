"""AppTest helper shared by the page tests that open the dashboard on a workspace of their own."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # streamlit is imported when a page is opened, not when a test file is collected
    from streamlit.testing.v1 import AppTest

APP = Path(__file__).resolve().parents[1] / "app.py"


def opened_page(manifest: Path, page: str, *, timeout: float = 180, **state: object) -> AppTest:
    """The app on `manifest`'s workspace with `state` set in its session, switched to `pages/<page>.py`
    (the Overview is the app's first page), asserting that no run raised."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(APP), default_timeout=timeout)
    at.session_state["workspace_path"] = str(manifest)
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    if page != "overview":
        at.switch_page(f"pages/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at
