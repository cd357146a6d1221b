"""Benchmark: 1,000 cluster-bootstrap resamples of one MultiWOZ-size run (MLCSG TRADE, 7,368 turns,
999 dialogues) for JGA and micro slot F1, plus the per-domain, per-turn-depth and paired variants.

Each timing covers the whole call (per-turn statistics from the metric functions, the resample matrix,
the interval); the run is loaded and scored once beforehand. Target: within 1 s each. Run from the
project root:

    .venv/bin/python benchmarks/bench_stats.py
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis.loading import load_run  # noqa: E402
from analysis.scoring import score_run  # noqa: E402
from analysis.stats import bootstrap_ci, mcnemar, paired_bootstrap  # noqa: E402

RUN = ROOT.parent / "shared" / "realdata" / "mlcsg" / "all_prediction_TRADE.json"
TARGET_S = 1.0
REPEATS = 3


def best_of(fn: Callable[[], Any]) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(REPEATS):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def main() -> int:
    if not RUN.exists():
        print(f"{RUN} is absent: this benchmark needs ../shared/realdata")
        return 1
    scored = score_run(load_run(RUN))
    print(f"MLCSG TRADE: {len(scored.turns):,} turns, {scored.turns['dialogue_id'].nunique():,} dialogues")
    cases: list[tuple[str, Callable[[], Any]]] = [
        ("JGA", lambda: bootstrap_ci(scored, "jga", n_resamples=1000)),
        ("slot F1 (micro)", lambda: bootstrap_ci(scored, "slot_f1_micro", n_resamples=1000)),
        ("slot F1 (seed recipe)", lambda: bootstrap_ci(scored, "slot_f1_seed", n_resamples=1000)),
        ("slot accuracy", lambda: bootstrap_ci(scored, "slot_accuracy", n_resamples=1000)),
        ("AGA", lambda: bootstrap_ci(scored, "aga", n_resamples=1000)),
        ("JGA per domain", lambda: bootstrap_ci(scored, "jga", by="domain", n_resamples=1000)),
        ("JGA per turn depth", lambda: bootstrap_ci(scored, "jga", by="turn_index", n_resamples=1000)),
        ("paired JGA (run vs itself)", lambda: paired_bootstrap(scored, scored, "jga", n_resamples=1000)),
        ("McNemar", lambda: mcnemar(scored, scored)),
    ]
    failed = 0
    for name, fn in cases:
        seconds, result = best_of(fn)
        ok = seconds <= TARGET_S
        failed += not ok
        detail = ""
        if isinstance(result, dict) and "low" in result:
            detail = f"  [{result['low']:.4f}, {result['high']:.4f}]"
        print(f"{name:<28} {seconds * 1000:8.1f} ms  {'ok' if ok else 'SLOW'} (target {TARGET_S:.0f} s){detail}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
