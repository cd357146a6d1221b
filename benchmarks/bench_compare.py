"""Benchmark: `analysis.compare.compare` on two MultiWOZ-size runs with 1,000 resamples (issue 17, target 2 s).

Run A is MLCSG's TRADE predictions (7,368 turns, 999 dialogues); run B the same gold with every 20th
predicted slot dropped (a different run on the same gold). Each timing covers the whole comparison (the
gold check, every comparable metric overall, per domain and per slot for the pair, the resampling, McNemar,
Holm); the runs are loaded and scored beforehand, and each repeat scores them afresh so no memoised
per-run result is reused. Wall and CPU seconds, best of 3, with the load average (other processes on the
same cores inflate wall time). Run from the project root:

    .venv/bin/python benchmarks/bench_compare.py
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis.compare import COMPARABLE, compare  # noqa: E402
from analysis.loading import load_run  # noqa: E402
from analysis.scoring import score_run  # noqa: E402

RUN = ROOT.parent / "shared" / "realdata" / "mlcsg" / "all_prediction_TRADE.json"
TARGET_S = 2.0
REPEATS = 3


def main() -> int:
    if not RUN.exists():
        print(f"{RUN} is absent: this benchmark needs ../shared/realdata")
        return 1
    run_a = load_run(RUN)
    run_b = replace(run_a, meta=replace(run_a.meta, run_id="B"), pred=run_a.pred.iloc[run_a.pred.index % 20 != 0])
    cases = {
        "default metrics, overall + per domain + per slot": {},
        "all metrics, overall + per domain + per slot": {"metrics": COMPARABLE},
        "all metrics, overall only": {"scopes": ("overall",)},
        "JGA and slot F1, all scopes": {"metrics": ("jga", "slot_f1_micro")},
    }
    failed = 0
    for name, kwargs in cases.items():
        walls, cpus = [], []
        result = None
        for _ in range(REPEATS):
            runs = {"A": score_run(run_a), "B": score_run(run_b)}
            wall, cpu = time.perf_counter(), time.process_time()
            result = compare(runs, n_resamples=1000, **kwargs)  # type: ignore[arg-type]
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
        assert result is not None
        ok = min(walls) <= TARGET_S
        failed += not ok and not kwargs
        jga = result.overall("jga")
        detail = f"{len(result.deltas)} rows; JGA delta {jga['delta'].iloc[0]:+.4f}" if len(jga) else ""
        print(
            f"{name:<46} wall {min(walls):6.2f} s  cpu {min(cpus):6.2f} s  "
            f"{'ok' if ok else 'SLOW'} (target {TARGET_S:.0f} s)  {detail}"
        )
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
