"""Benchmark: click-through lists and compare views on 20 MultiWOZ-size runs (issue 17 requirement 8).

20 runs perturbed from MultiWOZ 2.1 test gold (7,372 turns each, `analysis.demo.simulate.perturb_run`), each
scored under `exact`. Timed, each the best of 3 with the runs' memoised results cleared in between (what a
first click costs, the scoring itself excluded):

- what a click opens: the dialogues of a first-error bin, the turns at a depth, a slot's error turns;
- the dialogue picker: sorted by the compounding run, filtered, and a text search;
- the Overview's compare views: the significance matrix of all 20 runs (190 pairs) on JGA, and one pair's
  per-slot deltas (1,000 resamples each);
- `compare` of two runs with 1,000 resamples, default metrics, every scope (`bench_compare.py` has more).

Targets: a page or tab switch within 1 s (a click's list is one view of it); `compare` of two runs within 2 s.
Run from the project root: `.venv/bin/python benchmarks/bench_click_through.py [--runs 20]`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis import views  # noqa: E402
from analysis.compare import compare  # noqa: E402
from analysis.demo.simulate import perturb_run  # noqa: E402
from analysis.loading import load_run  # noqa: E402
from analysis.scoring import Scored, score_run  # noqa: E402

GOLD = ROOT.parent / "shared" / "realdata" / "multiwoz21" / "test.json.zip"


def first_click(fn: Callable[[], Any], runs: list[Scored], repeats: int = 3) -> float:
    """Best of `repeats` wall seconds of `fn()`, each after clearing what the runs memoised (a first click)."""
    best = float("inf")
    for _ in range(repeats):
        for scored in runs:
            scored._memo.clear()
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    if not GOLD.exists():
        print(f"skipped: {GOLD} is absent (this benchmark needs ../shared/realdata)", file=sys.stderr)
        return 0
    gold = load_run(GOLD, GOLD)
    runs = [
        score_run(replace(run, meta=replace(run.meta, run_id=f"run{i:02d}")), "exact")
        for i, run in enumerate(perturb_run(gold, n_runs=args.runs, seed=7))
    ]
    one = runs[0]
    depths = views.first_error_dialogues(one, label="1")
    slot = one.slots.loc[one.slots["outcome"].astype(str) != "correct", ["domain", "slot"]].iloc[0]
    print(f"{len(runs)} runs of {len(one.turns):,} turns; first-error bin 1 holds {len(depths)} dialogues")
    cases: dict[str, tuple[Callable[[], Any], list[Scored], float]] = {
        "a first-error bin's dialogues": (lambda: views.first_error_dialogues(one, label="1"), [one], 1.0),
        "the turns at depth 3": (lambda: views.turns_at_depth(one, turn_index=3), [one], 1.0),
        "a slot's error turns": (
            lambda: views.slot_error_turns(one, domain=str(slot["domain"]), slot=str(slot["slot"])),
            [one],
            1.0,
        ),
        "picker: longest compounding run first, >= 2 errors": (
            lambda: views.pick_dialogues(one, sort=list(views.PICKER_SORTS)[-1], min_errors=2),
            [one],
            1.0,
        ),
        "picker: search 'cambridge'": (lambda: views.pick_dialogues(one, search="cambridge"), [one], 1.0),
        f"gold groups + significance matrix, {len(runs)} runs, JGA": (
            lambda: (views.gold_groups(runs), views.significance_table(runs)),
            runs,
            1.0,
        ),
        "one pair's per-slot JGA deltas": (lambda: views.pair_deltas(runs[0], runs[1]), runs[:2], 1.0),
        "compare, 2 runs, default metrics, all scopes": (
            lambda: compare({"a": runs[0], "b": runs[1]}, n_resamples=1000),
            runs[:2],
            2.0,
        ),
    }
    missed = 0
    for name, (fn, touched, target) in cases.items():
        seconds = first_click(fn, touched)
        ok = seconds <= target
        missed += not ok
        print(f"  {name:<52} {seconds:7.3f} s  {'ok' if ok else 'MISSED'} (target {target:g} s)")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
