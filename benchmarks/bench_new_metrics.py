"""What the metrics robust to compounding (issue 16: IAGA, RSA, FGA x 4, turn-level accuracy, GCA) add to
the full metric suite on a MultiWOZ-size run (target: at most 50%). Run by hand:

    .venv/bin/python benchmarks/bench_new_metrics.py

MultiWOZ 2.1 test gold (7,372 turns) against the AuGPT predictions, convention exact. Every timing scores
the run afresh first (untimed), so no memoised table of an earlier repetition is reused; best of 7
(the suite with and without them interleaved).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis import registry as R  # noqa: E402
from analysis import stats  # noqa: E402
from analysis.loading import load_run  # noqa: E402
from analysis.scoring import score_run  # noqa: E402
from analysis.suite import metric_suite  # noqa: E402

REALDATA = ROOT.parent / "shared" / "realdata"
GOLD = REALDATA / "multiwoz21" / "test.json.zip"
PRED = REALDATA / "mwzeval_outputs" / "augpt.json"
NEW = ("iaga", "rsa", *R.GROUPED["fga"], "turn_accuracy", "gca")


def fresh_best_of(n: int, run, fn) -> float:
    times = []
    for _ in range(n):
        scored = score_run(run, "exact")
        start = time.perf_counter()
        fn(scored)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    if not GOLD.exists():
        print(f"skipped: {GOLD} is absent", file=sys.stderr)
        return 0
    run = load_run(PRED, GOLD)
    full_names, grouped = R.NAMES, R.GROUPED
    old_names = tuple(n for n in full_names if n not in NEW)

    def old_suite(scored) -> None:
        R.NAMES, R.GROUPED = old_names, {}  # the suite as it was before these metrics (it reads the registry)
        try:
            metric_suite(scored)
        finally:
            R.NAMES, R.GROUPED = full_names, grouped

    # Interleaved, so that load from other processes falls on both alike; the best of each.
    t_full, t_old = float("inf"), float("inf")
    for _ in range(7):
        t_full = min(t_full, fresh_best_of(1, run, metric_suite))
        t_old = min(t_old, fresh_best_of(1, run, old_suite))
    t_new = fresh_best_of(7, run, lambda s: R.values(s, NEW))
    t_ci = fresh_best_of(3, run, lambda s: stats.bootstrap_ci(s, "gca", n_resamples=1000))
    t_ci_jga = fresh_best_of(3, run, lambda s: stats.bootstrap_ci(s, "jga", n_resamples=1000))
    print(f"MultiWOZ 2.1 test ({len(run.turns):,} turns), augpt predictions, convention exact")
    print(f"   full metric suite, before (without the {len(NEW)} new) {t_old:6.3f} s")
    print(f"   full metric suite, now                      {t_full:6.3f} s")
    print(f"   added                                       {(t_full - t_old) / t_old:6.1%}   target <= 50%")
    print(f"   the new metrics alone                       {t_new:6.3f} s")
    print(f"   GCA 95% interval (1,000 resamples)          {t_ci:6.3f} s   (JGA's: {t_ci_jga:.3f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
