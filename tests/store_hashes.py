"""The SHA-256 of every table the store writes for a few runs, as `entries.save` writes them (issue 43:
the stored tables stay bit-identical when the gold side is shared, or the summary tables rewritten).

`tests/data/store_hashes.json` was recorded by this module on main's code before that change (the
commit is in the file), in a copy of the tree (`git archive`), and `tests/test_store_hashes.py` computes
the same hashes with the code of today and compares. To record again (only when a table is meant to
change): `.venv/bin/python -m tests.store_hashes > tests/data/store_hashes.json`.

The store key and the scorer version are part of the `runs` table; both change with any edit to a
scoring module, so they are fixed here (`KEY`, `VERSION`): every other byte is the code's.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REALDATA = ROOT.parent / "shared" / "realdata"
KEY = "0" * 64
VERSION = "fixed-for-the-hash-test"

# (case name, prediction file, gold file or None, convention or None): several runs of one gold file
# (the shared gold side), several conventions, the demo's small runs.
DEMO = ROOT / "data" / "demo"


def cases() -> list[tuple[str, Path, Path | None, str | None]]:
    gold = REALDATA / "multiwoz21" / "test.json.zip"
    out: list[tuple[str, Path, Path | None, str | None]] = []
    for name, convention in (("augpt", None), ("pptod", None), ("augpt", "trade"), ("soloist", "exact")):
        out.append((f"{name}-{convention or 'own'}", REALDATA / "mwzeval_outputs" / f"{name}.json", gold, convention))
    return out


def demo_cases() -> list[tuple[str, str | None]]:
    return [
        (name, convention)
        for name in ("crosswoz-rule-dst", "simulated-A-mwz-en-predicted", "simulated-B-mwz-en-predicted-s1")
        for convention in (None, "trade", "mwzeval")
    ]


def table_hashes(scored) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Each stored table's SHA-256 (the bytes `entries.save` writes) and the header's scored parts."""
    from analysis.store import entries

    original = entries.scorer_version
    entries.scorer_version = lambda: VERSION  # type: ignore[assignment]
    try:
        tables = entries._tables(scored, KEY)
    finally:
        entries.scorer_version = original  # type: ignore[assignment]
    out = {}
    for name, frame in tables.items():
        data, _ = entries._parquet_bytes(frame, bare=name in entries.BARE_TABLES)
        out[name] = hashlib.sha256(data).hexdigest()
    header = {
        "alignment": scored.alignment,
        "ontology": scored.ontology[["domain", "slot"]].astype(str).values.tolist(),
        "attributes": entries._attribute_counts(scored.turns),
    }
    text = json.dumps(header, ensure_ascii=False, default=entries._json_default, sort_keys=True)
    out["header"] = hashlib.sha256(text.encode()).hexdigest()
    return out


def all_hashes() -> dict[str, dict[str, str]]:
    """Every case's hashes, scored the way the store scores a manifest run (`store.runs._ensure`'s path)."""
    from analysis.loading import load_run
    from analysis.scoring import score_run
    from analysis.workspace import load_entry, read_manifest

    found: dict[str, dict[str, str]] = {}
    for name, pred, gold, convention in cases():
        if not pred.exists():
            continue
        run = load_run(pred, gold)
        found[name] = table_hashes(score_run(run, convention))
    entries = {e.name: e for e in read_manifest(DEMO / "workspace.toml").entries}
    for name, convention in demo_cases():
        run = load_entry(entries[name])
        found[f"demo-{name}-{convention or 'own'}"] = table_hashes(score_run(run, convention))
    return found


if __name__ == "__main__":
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    record = {"recorded_on": commit or "unknown", "hashes": all_hashes()}
    json.dump(record, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
