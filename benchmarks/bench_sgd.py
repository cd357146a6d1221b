"""Benchmark: the SGD evaluator (`analysis.sgd`) on the real test excerpt and on a full-size test set.

Issue 16, requirement 5: an SGD test set of 4,201 dialogues loads and scores within 3 s.

1. Real: the 8 gold test files (1,024 dialogues, 6,623 frames) and the `pred_light` copies read from
   disk (gold and predictions) and scored with the test and train schemas. Target: well under 3 s.
2. Simulated full test set: the 1,024 gold dialogues repeated with renamed ids up to 4,201 dialogues
   (the SGD test set's size), written as 34 gzipped `dialogues_NNN.json.gz` files like the dataset, and
   the `pred_light` copies renamed the same way; read + scored. Target: 3 s.
3. The generic pipeline on the real excerpt: `load_run(pred_dir, gold_dir)` + `score_run(..., "sgd")`.

Each is the median of 5 runs, printed as wall time and this process's CPU time (steadier when other
processes share the cores). Run from the project root: `.venv/bin/python benchmarks/bench_sgd.py`.
"""

from __future__ import annotations

import gzip
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["DST_CACHE_DIR"] = ""  # every parse is a real parse

from analysis.loading import load_run  # noqa: E402
from analysis.scoring import score_run  # noqa: E402
from analysis.sgd import ALL_SERVICES, evaluate, read_dialogues, read_schema  # noqa: E402

REAL = ROOT.parent / "shared" / "realdata"
GOLD = REAL / "sgd"
PRED = REAL / "scorer_oracles" / "sgd" / "pred_light"
TARGET = 4201
FILES = 34
RUNS = 5


def timed(work: Callable[[], object]) -> tuple[float, float, object]:
    walls, cpus, out = [], [], None
    for _ in range(RUNS):
        wall, cpu = time.perf_counter(), time.process_time()
        out = work()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus), out


def dialogues_of(folder: Path) -> list[dict]:
    out: list[dict] = []
    for file in sorted(folder.glob("*dialogues_*.json.gz")):
        out.extend(json.loads(gzip.decompress(file.read_bytes())))
    return out


def simulate(source: list[dict], folder: Path) -> None:
    """`source` repeated with ids `<id>` (first copy), `<id>_r1`, ... up to TARGET, in FILES files."""
    dialogues = []
    for i in range(TARGET):
        d = dict(source[i % len(source)])
        copy = i // len(source)
        if copy:
            d["dialogue_id"] = f"{d['dialogue_id']}_r{copy}"
        dialogues.append(d)
    folder.mkdir(parents=True)
    size = -(-TARGET // FILES)
    for k in range(FILES):
        part = dialogues[k * size : (k + 1) * size]
        (folder / f"dialogues_{k + 1:03d}.json.gz").write_bytes(gzip.compress(json.dumps(part).encode(), 6))


def main() -> int:
    if not GOLD.is_dir() or not PRED.is_dir():
        print(f"skipped: {GOLD} or {PRED} is absent (needs ../shared/realdata)")
        return 0
    schema, train = GOLD / "test_schema.json.gz", GOLD / "train_schema.json.gz"

    def real() -> object:
        return evaluate(read_dialogues(GOLD), read_dialogues(PRED), read_schema(schema), read_schema(train))

    wall, cpu, result = timed(real)
    jga = result.table[ALL_SERVICES]["joint_goal_accuracy"]  # type: ignore[attr-defined]
    print(f"real excerpt (1,024 dialogues, 6,623 frames): read + score {wall:.3f} s (CPU {cpu:.3f} s), JGA {jga:.6f}")

    with tempfile.TemporaryDirectory(prefix="bench-sgd-") as tmp:
        simulate(dialogues_of(GOLD), Path(tmp) / "gold")
        simulate(dialogues_of(PRED), Path(tmp) / "pred")

        def full() -> object:
            return evaluate(Path(tmp) / "gold", Path(tmp) / "pred", schema, train)

        wall, cpu, result = timed(full)
        frames = len(result.frames)  # type: ignore[attr-defined]
        print(
            f"simulated test set ({TARGET:,} dialogues, {frames:,} frames, {FILES} files): read + score "
            f"{wall:.3f} s (CPU {cpu:.3f} s); target 3 s"
        )

    def generic() -> object:
        return score_run(load_run(PRED, GOLD), "sgd")

    wall, cpu, _ = timed(generic)
    print(f"generic pipeline on the excerpt (load_run + score_run under sgd): {wall:.3f} s (CPU {cpu:.3f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
