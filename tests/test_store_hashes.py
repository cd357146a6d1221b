"""The stored tables stay bit-identical (issue 43): the SHA-256 of every table the store writes for
MultiWOZ-size real runs (four runs on one gold file, three conventions) and the demo's runs, computed by
today's code, against the hashes main's code gave before the gold side was shared (any later rewrite of the
summary tables must keep them) (`tests/data/store_hashes.json`, recorded by `tests/store_hashes.py` on the commit it names)."""

from __future__ import annotations

import json

import pytest

from tests import store_hashes
from tests.conftest import ROOT

RECORDED = json.loads((ROOT / "tests" / "data" / "store_hashes.json").read_text(encoding="utf-8"))


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
@pytest.mark.realdata
def test_every_stored_table_is_bit_identical_to_mains():
    if not (store_hashes.REALDATA / "multiwoz21" / "test.json.zip").exists():
        pytest.skip("the real data (../shared/realdata) is absent")
    found = store_hashes.all_hashes()
    assert set(found) == set(RECORDED["hashes"])
    differ = {
        (case, table)
        for case, tables in RECORDED["hashes"].items()
        for table, digest in tables.items()
        if found[case].get(table) != digest
    }
    assert not differ, f"tables that differ from main's ({RECORDED['recorded_on'][:8]}): {sorted(differ)}"
