"""The start order of test files (tests/conftest.py): the costliest file first, each file whole and in its own
order, so that `make test`'s workers (`--dist loadfile --no-loadscope-reorder`) do not end on one long file."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from tests.conftest import COSTS, order_by_cost

ROOT = Path(__file__).resolve().parents[1]


def item(nodeid: str, *marks: str) -> SimpleNamespace:
    return SimpleNamespace(nodeid=nodeid, get_closest_marker=lambda name: name if name in marks else None)


def names(items: list[SimpleNamespace]) -> list[str]:
    return [i.nodeid for i in items]


def test_costliest_file_first_and_each_file_whole_in_its_order() -> None:
    items = [item("a.py::1"), item("a.py::2"), item("b.py::1"), item("c.py::1"), item("c.py::2"), item("c.py::3")]
    ordered = order_by_cost(items, {"a.py": 5.0, "b.py": 90.0, "c.py": 20.0})
    assert names(ordered) == ["b.py::1", "c.py::1", "c.py::2", "c.py::3", "a.py::1", "a.py::2"]


def test_an_unmeasured_file_is_placed_by_its_markers_and_ties_keep_the_collection_order() -> None:
    items = [item("quick.py::1"), item("new_browser.py::1", "browser"), item("other.py::1"), item("new.py::1")]
    ordered = order_by_cost(items, {"quick.py": 0.5, "other.py": 1.0})
    assert names(ordered) == ["new_browser.py::1", "other.py::1", "new.py::1", "quick.py::1"]


def test_a_file_cut_by_a_marker_expression_counts_the_share_it_kept() -> None:
    kept = [item("big.py::fast"), item("mid.py::1"), item("mid.py::2")]
    # big.py: 100 s over 20 tests, one kept (5 s); mid.py: 8 s, all kept
    ordered = order_by_cost(kept, {"big.py": 100.0, "mid.py": 8.0}, {"big.py": 20, "mid.py": 2})
    assert names(ordered) == ["mid.py::1", "mid.py::2", "big.py::fast"]


def test_the_costs_name_only_test_files_that_exist() -> None:
    costs = json.loads(COSTS.read_text(encoding="utf-8"))
    assert costs and all(isinstance(v, (int, float)) and v >= 0 for v in costs.values())
    missing = [name for name in costs if not (ROOT / name).is_file()]
    assert not missing, f"tests/costs.json names files that are gone: {missing}; rewrite it with --write-costs"
