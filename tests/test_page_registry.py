"""The page registry (`page_registry`) and the `pages/` folder agree: every page script is registered and
every entry has its script, so a new page is opened by the AppTest smoke tests (tests/test_app_pages.py for
the pages that declare first views, tests/test_pages_extra.py for the others) without editing a test."""

from __future__ import annotations

from pathlib import Path

from page_registry import FIRST, PAGES, PREFETCHED

ROOT = Path(__file__).resolve().parents[1]


def test_every_page_file_is_registered_and_every_entry_has_a_file():
    files = {path.relative_to(ROOT).as_posix() for path in (ROOT / "pages").glob("*.py")}
    registered = [page.file for page in PAGES]
    assert files - set(registered) == set(), "pages/ scripts missing from page_registry.PAGES"
    missing = [page.file for page in PAGES if not page.path.is_file()]
    assert missing == [], "registry entries without a script"
    assert len(registered) == len(set(registered)) == len(files)


def test_titles_and_url_paths_are_unique():
    assert len({page.url_path for page in PAGES}) == len(PAGES)
    assert len({page.title for page in PAGES}) == len(PAGES)
    assert all(page.url_path.isidentifier() for page in PAGES)  # they travel as `?page=` in deep links


def test_the_first_page_declares_what_a_session_computes_first():
    """The server's warm-up computes the first page's declared views; the prefetch the others'."""
    assert FIRST is PAGES[0] and FIRST.first is not None
    assert FIRST not in PREFETCHED and PREFETCHED


def test_every_declared_next_step_names_a_prefetch_job():
    """A page's `then` names its job (the registry does not import `ui`, which imports it): the name must be
    one of `ui.prefetch.THEN_JOBS`, and every job there is some page's next step."""
    from page_registry import Defaults
    from ui import prefetch

    defaults = Defaults(["a", "b"], "a", pair=("a", "b"))
    named = [first.then[0] for page in PREFETCHED if page.first and (first := page.first(defaults)).then]
    assert named and set(named) == set(prefetch.THEN_JOBS)
    assert prefetch.then_job(("slot_detail_job", (1,))) == (prefetch.slot_detail_job, (1,))
