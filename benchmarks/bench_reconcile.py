"""Benchmark: one MultiWOZ-size run (AuGPT, 7,372 turns, multiwoz21 gold) reconciled under five conventions.

Times (best of 3): loading the files; `reconcile` (five scorings, the metric table, flipped turns of all
ten pairs); causes for one pair (lazy, as a page asks for them); causes for all ten pairs (what
`reconcile --json` prints). Target: reconciliation within 3 s. The machine's load average is printed,
since the two shared cores make timings noisy. Run from the project root:

    .venv/bin/python benchmarks/bench_reconcile.py
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis.loading import load_run  # noqa: E402
from analysis.reconcile.core import DEFAULT_CONVENTIONS, reconcile  # noqa: E402

REALDATA = ROOT.parent / "shared" / "realdata"
PRED = REALDATA / "mwzeval_outputs" / "augpt.json"
GOLD = REALDATA / "multiwoz21" / "test.json.zip"
TARGET_S = 3.0


def best_of(fn: Callable[[], Any], repeat: int = 3) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> int:
    if not PRED.exists() or not GOLD.exists():
        print(f"real data absent ({PRED}, {GOLD}): nothing to time")
        return 1
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    t_load, run = best_of(lambda: load_run(PRED, GOLD), repeat=1)
    t_base, rec = best_of(lambda: reconcile(run, DEFAULT_CONVENTIONS))
    t_pair, _ = best_of(lambda: reconcile(run, DEFAULT_CONVENTIONS).to_dict(causes=False) and None, repeat=1)

    def one_pair() -> None:
        fresh = reconcile(run, DEFAULT_CONVENTIONS)
        start = time.perf_counter()
        fresh.responsible("exact", "mwzeval")
        one_pair.elapsed = time.perf_counter() - start  # type: ignore[attr-defined]

    best_of(one_pair, repeat=1)
    t_one = one_pair.elapsed  # type: ignore[attr-defined]

    def all_pairs() -> dict[str, Any]:
        return reconcile(run, DEFAULT_CONVENTIONS).to_dict()

    t_all, out = best_of(all_pairs)
    print(
        f"{len(run.turns)} turns, {len(run.gold) + len(run.pred)} raw triples, conventions {', '.join(rec.conventions)}"
    )
    print(f"  load files                                {t_load:6.2f} s  (not part of the target)")
    print(f"  reconcile: 5 scorings + table + flips      {t_base:6.2f} s")
    print(f"  ... + JSON without causes                  {t_pair:6.2f} s")
    print(f"  causes of one pair (exact|mwzeval), lazy   {t_one:6.2f} s")
    print(
        f"  reconcile + causes of all 10 pairs         {t_all:6.2f} s  target {TARGET_S:.1f} s: "
        f"{'OK' if t_all <= TARGET_S else 'OVER'}"
    )
    for key, entry in out["flips"].items():
        print(f"    {key:<18} {entry['count']:>5} turns  {entry['causes']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
