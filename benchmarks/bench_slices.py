"""Benchmark: slice discovery on 20 MultiWOZ-size runs (issue 17 requirements 5 and 8: at most 5 s per run).

20 runs perturbed from MultiWOZ 2.1 test gold (7,372 turns each, `analysis.demo.simulate.perturb_run`), each
scored under `exact`, plus the real DOTS predictions (`mwzeval_outputs/dots.json`) under their own convention,
with and without MultiWOZ 2.1 validation gold standing in for a training file (the `unseen value` feature), and
as many perturbed runs searched together as `slices.POOLED_MAX_TURNS` allows (two).
Timed per run: `slices.find_slices` with the defaults (features, sliceline's search, the 1,000-resample
dialogue bootstrap of every slice), each run's memoised results cleared first, so every figure is a first
computation; the scoring itself is excluded. The one-off import of sliceline and scikit-learn is timed apart.

Target: each run within 5 s. Run from the project root: `.venv/bin/python benchmarks/bench_slices.py [--runs 20]`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis import slices  # noqa: E402
from analysis.demo.simulate import perturb_run  # noqa: E402
from analysis.loading import load_run  # noqa: E402
from analysis.scoring import Scored, score_run  # noqa: E402

REALDATA = ROOT.parent / "shared" / "realdata"
GOLD = REALDATA / "multiwoz21" / "test.json.zip"
VAL = REALDATA / "multiwoz21" / "val.json.zip"
DOTS = REALDATA / "mwzeval_outputs" / "dots.json"
TARGET = 5.0


def timed(scored: Scored, train: Scored | None = None) -> tuple[float, slices.SliceReport]:
    scored._memo.clear()
    start = time.perf_counter()
    report = slices.find_slices(scored, train)
    return time.perf_counter() - start, report


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    if not GOLD.exists():
        print(f"skipped: {GOLD} is absent (this benchmark needs ../shared/realdata)", file=sys.stderr)
        return 0
    start = time.perf_counter()
    import sklearn.preprocessing  # noqa: F401
    import sliceline  # noqa: F401

    print(f"import sliceline + scikit-learn (once per process): {time.perf_counter() - start:.2f} s")
    gold = load_run(GOLD, GOLD)
    runs = [
        score_run(replace(run, meta=replace(run.meta, run_id=f"run{i:02d}")), "exact")
        for i, run in enumerate(perturb_run(gold, n_runs=args.runs, seed=7))
    ]
    seconds = []
    for scored in runs:
        elapsed, report = timed(scored)
        seconds.append(elapsed)
        top = report.slices.iloc[0] if len(report.slices) else None
        worst = (
            f"top: {top['slice']} (JGA {top['jga']:.3f}, {top['turns']:,} turns)" if top is not None else report.note
        )
        print(f"{scored.run_ids[0]}  {len(scored.turns):,} turns  {elapsed:5.2f} s  {worst}")
    print(
        f"{len(runs)} perturbed runs: median {statistics.median(seconds):.2f} s, max {max(seconds):.2f} s per run "
        f"(target {TARGET:.0f} s): {'ok' if max(seconds) <= TARGET else 'SLOW'}"
    )
    together = runs[: max(1, slices.POOLED_MAX_TURNS // len(runs[0].turns))]
    start = time.perf_counter()
    report = slices.find_slices(together)
    print(
        f"{len(together)} runs searched together ({report.n_turns:,} turns, the most under "
        f"{slices.POOLED_MAX_TURNS:,}): {time.perf_counter() - start:.2f} s"
    )
    if DOTS.exists():
        dots = score_run(load_run(DOTS, GOLD))
        elapsed, report = timed(dots)
        print(f"DOTS (real, {dots.convention.name}): {elapsed:.2f} s, {len(report.slices)} slices")
        if VAL.exists():
            train = score_run(load_run(VAL, VAL), dots.convention.name)
            elapsed, report = timed(dots, train)
            print(
                f"DOTS with validation gold as training values: {elapsed:.2f} s, features {', '.join(report.features)}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
