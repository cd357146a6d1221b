"""Evaluation-core speed and memory (issue "Evaluation core", requirement 9). Run by hand:

    .venv/bin/python benchmarks/bench_core.py [--runs 100]

1. Load plus the full metric suite, MultiWOZ 2.1 test gold (7,372 turns) against one prediction file
   (target 0.5 s; metric computation alone 0.15 s), cold and with the parse cache warm.
2. 100 runs of that size made by perturbing gold (about 737k turns): score + metric suite per run
   (target 20 s, 4 GB peak memory).
3. The same metrics by a plain per-turn Python implementation: the ratio (target >= 10x).
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from naive_metrics import naive_metrics  # noqa: E402

from analysis.demo.simulate import perturb_run  # noqa: E402
from analysis.loading import load_run  # noqa: E402
from analysis.scoring import combine, score_run  # noqa: E402
from analysis.suite import HEADLINE, headline_metrics, metric_suite  # noqa: E402

REALDATA = ROOT.parent / "shared" / "realdata"
GOLD = REALDATA / "multiwoz21" / "test.json.zip"
PRED = REALDATA / "mwzeval_outputs" / "augpt.json"


def best_of(n: int, fn):
    times, result = [], None
    for _ in range(n):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100)
    args = parser.parse_args()
    if not GOLD.exists():
        print(f"skipped: {GOLD} is absent", file=sys.stderr)
        return 0

    t_load, run = best_of(3, lambda: load_run(PRED, GOLD))
    t_score, scored = best_of(5, lambda: score_run(run, "exact"))
    t_suite, _ = best_of(5, lambda: metric_suite(scored))
    print(f"1. MultiWOZ 2.1 test ({len(run.turns):,} turns), augpt predictions, convention exact")
    print(f"   load (parse + align)          {t_load:6.3f} s")
    print(f"   score (normalise + outcomes)  {t_score:6.3f} s")
    print(f"   full metric suite             {t_suite:6.3f} s")
    print(f"   metrics alone (score + suite) {t_score + t_suite:6.3f} s   target 0.15 s")
    print(f"   load + metrics                {t_load + t_score + t_suite:6.3f} s   target 0.5 s")

    gold_run = load_run(GOLD, GOLD)
    start = time.perf_counter()
    runs = perturb_run(gold_run, n_runs=args.runs, seed=7)
    t_make = time.perf_counter() - start
    start = time.perf_counter()
    scored_runs = [score_run(r, "exact") for r in runs]
    t_score_all = time.perf_counter() - start
    start = time.perf_counter()
    suites = [metric_suite(s) for s in scored_runs]
    t_suite_all = time.perf_counter() - start
    start = time.perf_counter()
    combined = combine(scored_runs)
    leaderboard = {key: fn(combined, by="run_id") for key, fn, _ in HEADLINE}
    t_board = time.perf_counter() - start
    n_turns = len(combined.turns)
    print(f"2. {args.runs} perturbed runs, {n_turns:,} turns ({t_make:.1f} s to make them, not counted)")
    print(f"   score every run               {t_score_all:6.2f} s")
    print(f"   full metric suite of each run {t_suite_all:6.2f} s   ({len(suites)} suites)")
    print(f"   total (score + suite per run) {t_score_all + t_suite_all:6.2f} s   target 20 s")
    print(f"   + one combined leaderboard    {t_board:6.2f} s   ({len(leaderboard)} metrics x {args.runs} runs, extra)")
    print(f"   peak memory (RSS)             {peak_rss_gb():6.2f} GB  target 4 GB")

    t_vec, vec = best_of(3, lambda: headline_metrics(score_run(run, "exact")))
    t_naive, naive = best_of(3, lambda: naive_metrics(run, scored))
    for key, value in naive.items():
        assert abs(value - vec[key]) < 1e-9, (key, value, vec[key])
    print("3. same metrics, plain per-turn Python vs vectorised (results equal to 1e-9)")
    print(f"   per-turn Python               {t_naive:6.3f} s")
    print(f"   vectorised (score + metrics)  {t_vec:6.3f} s")
    print(f"   ratio                         {t_naive / t_vec:6.1f}x   target >= 10x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
