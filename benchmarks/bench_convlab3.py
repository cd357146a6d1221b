"""Benchmark: a MultiWOZ-size ConvLab-3 prediction file (7,372 samples, 8.6 MB), as issue 20 asks.

1. In process: `load_run` (parse, no disk cache, a fresh in-memory cache each time) plus `score_run`
   under `convlab3` plus the headline metrics. Target: at most 0.3 s (median of 5). Printed as wall
   time and as this process's CPU time (steadier when other processes share the cores), then by stage:
   reading the JSON (`parse_records`: checks and decode), the sample walk into the Collector, building
   the tables (`Collector.finish`), each with garbage collection off as `parse_file` runs them; then the
   whole of `load_run` (those three, pairing and the run's checks) and `score_run`, and the CPU time
   garbage collection took inside `load_run` (`gc.callbacks`).
2. As whole processes, 5 runs each timed with `/usr/bin/time`, medians compared:
   `python -m analysis metrics --pred FILE --json` (disk cache off) against ConvLab-3's own
   `python evaluate_unified_datasets.py -p FILE`. Target: ours at most twice theirs.

ConvLab-3's script is not part of this project: point `CONVLAB3_EVALUATE` at a copy of
`convlab/dst/evaluate_unified_datasets.py` (e.g. from a checkout of ConvLab/ConvLab-3); without it,
part 2 times ours only. The file is ../shared/realdata/scorer_oracles/convlab3_augpt_predictions.json.gz,
decompressed to a temporary file first (ConvLab-3's script reads plain JSON). Run from the project root:

    CONVLAB3_EVALUATE=/path/to/evaluate_unified_datasets.py .venv/bin/python benchmarks/bench_convlab3.py
"""

from __future__ import annotations

import gc
import gzip
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["DST_CACHE_DIR"] = ""  # every parse is a real parse

from analysis import formats  # noqa: E402
from analysis import metrics as M  # noqa: E402
from analysis.formats.engine import Collector  # noqa: E402
from analysis.formats.reading import parse_records  # noqa: E402
from analysis.formats.specs import FORMATS_BY_NAME  # noqa: E402
from analysis.loading import load_run  # noqa: E402
from analysis.scoring import score_run  # noqa: E402

SOURCE = ROOT.parent / "shared" / "realdata" / "scorer_oracles" / "convlab3_augpt_predictions.json.gz"
IN_PROCESS_TARGET_S = 0.3
RUNS = 5


def in_process(path: Path, clock: Callable[[], float] = time.perf_counter) -> list[float]:
    times = []
    for _ in range(RUNS):
        formats._MEMORY.clear()  # a fresh process's in-memory cache
        start = clock()
        scored = score_run(load_run(path))
        M.joint_goal_accuracy(scored)
        M.slot_prf_micro(scored)
        times.append(clock() - start)
    return times


def stages(path: Path, clock: Callable[[], float]) -> dict[str, float]:
    """Median of RUNS of each stage of the in-process run (see the module docstring)."""
    spec = FORMATS_BY_NAME["convlab3"]
    times: dict[str, list[float]] = {
        "read JSON": [],
        "walk": [],
        "tables": [],
        "load_run": [],
        "score": [],
        "GC in load_run": [],
    }
    collecting = [0.0, 0.0]  # CPU seconds of the collections so far, start of the current one

    def watch(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collecting[1] = time.process_time()
        else:
            collecting[0] += time.process_time() - collecting[1]

    gc.callbacks.append(watch)
    for _ in range(RUNS):
        gc.disable()  # as parse_file reads, walks and builds: collection off, the records freed before it resumes
        start = clock()
        _, records = parse_records(path)
        read = clock()
        collector = Collector(str(path), spec.name, sides=("gold", "pred"))
        spec.parse(records, collector)
        walked = clock()
        del records
        collector.finish()
        built = clock()
        gc.enable()
        del collector
        formats._MEMORY.clear()
        collecting[0] = 0.0
        loading = clock()
        run = load_run(path)
        loaded = clock()
        times["GC in load_run"].append(collecting[0])
        score_run(run)
        scored = clock()
        times["read JSON"].append(read - start)
        times["walk"].append(walked - read)
        times["tables"].append(built - walked)
        times["load_run"].append(loaded - loading)
        times["score"].append(scored - loaded)
    gc.callbacks.remove(watch)
    return {name: statistics.median(values) for name, values in times.items()}


CPU_SECONDS: dict[int, list[float]] = {}  # id of a whole_process result -> the CPU seconds of its runs


def whole_process(command: list[str], cache: str = "") -> list[float]:
    """Wall seconds of RUNS runs of `command` (`/usr/bin/time`); their CPU seconds (user + system), steadier
    on a shared machine, are kept in CPU_SECONDS for `cpu_note`."""
    times, cpu = [], []
    for _ in range(RUNS):
        with tempfile.NamedTemporaryFile(suffix=".time") as out:
            subprocess.run(
                ["/usr/bin/time", "-f", "%e %U %S", "-o", out.name, *command],
                check=True,
                stdout=subprocess.DEVNULL,
                env={**os.environ, "DST_CACHE_DIR": cache},
                cwd=ROOT,
            )
            wall, user, system = map(float, Path(out.name).read_text().split()[-3:])
            times.append(wall)
            cpu.append(user + system)
    CPU_SECONDS[id(times)] = cpu
    return times


def cpu_note(times: list[float]) -> str:
    cpu = CPU_SECONDS.get(id(times), [])
    return f"; CPU median {statistics.median(cpu):.2f} s" if cpu else ""


def main() -> int:
    if not SOURCE.exists():
        print(f"{SOURCE} is absent: this benchmark needs ../shared/realdata")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "convlab3_augpt_predictions.json"
        with gzip.open(SOURCE) as src, path.open("wb") as dst:
            shutil.copyfileobj(src, dst)
        print(f"file: {path.stat().st_size / 1e6:.1f} MB; load average {os.getloadavg()[0]:.2f}")
        times = in_process(path)
        median = statistics.median(times)
        verdict = "met" if median <= IN_PROCESS_TARGET_S else "MISSED"
        print(
            f"in process, load + score + metrics: median {median:.3f} s of {[round(t, 3) for t in times]} "
            f"(target {IN_PROCESS_TARGET_S} s: {verdict})"
        )
        cpu = in_process(path, time.process_time)
        print(
            f"  the same, CPU time of this process: median {statistics.median(cpu):.3f} s of {[round(t, 3) for t in cpu]}"
        )
        for name, clock in (("wall", time.perf_counter), ("CPU", time.process_time)):
            parts = stages(path, clock)
            print(f"  by stage ({name}, medians): " + ", ".join(f"{k} {v:.3f} s" for k, v in parts.items()))
        command = [sys.executable, "-m", "analysis", "metrics", "--pred", str(path), "--json"]
        ours = whole_process(command)
        print(f"python -m analysis metrics --json: median {statistics.median(ours):.2f} s of {ours}{cpu_note(ours)}")
        # A file opened before: the parse cache (Parquet tables) skips the JSON walk.
        cache = Path(tmp) / "cache"
        os.environ["DST_CACHE_DIR"] = str(cache)
        formats._MEMORY.clear()
        load_run(path)  # parses once and stores the tables
        warm = in_process(path)
        print(f"in process, parse cache warm: median {statistics.median(warm):.3f} s of {[round(t, 3) for t in warm]}")
        cached = whole_process(command, str(cache))
        print(
            f"python -m analysis metrics --json, parse cache warm: median {statistics.median(cached):.2f} s of {cached}"
            f"{cpu_note(cached)}"
        )
        os.environ["DST_CACHE_DIR"] = ""
        bare = whole_process([sys.executable, "-c", "import pandas"])
        print(f"python -c 'import pandas' alone: median {statistics.median(bare):.2f} s of {bare}{cpu_note(bare)}")
        official = os.environ.get("CONVLAB3_EVALUATE")
        if official and Path(official).exists():
            theirs = whole_process([sys.executable, official, "-p", str(path)])
            ratio = statistics.median(ours) / statistics.median(theirs)
            print(
                f"ConvLab-3 evaluate_unified_datasets.py: median {statistics.median(theirs):.2f} s of {theirs}"
                f"{cpu_note(theirs)}"
            )
            print(f"ratio {ratio:.2f} (target at most 2: {'met' if ratio <= 2 else 'MISSED'})")
        else:
            print("CONVLAB3_EVALUATE not set: ConvLab-3's own script not timed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
