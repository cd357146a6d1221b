"""Benchmark: a quick command line (issue 15, requirement 7).

1. Whole process, 5 runs each timed with `/usr/bin/time`, median reported:
   `python -m analysis metrics --pred MLCSG` (TRADE's MLCSG predictions, 4.1 MB), with the disk parse
   cache off (every run parses the file) and warm; target: at most 0.8 s. Beside it, measured the same
   way, `python -c "import pandas"` (the floor: every command reads its tables with pandas),
   `python -c "import analysis"` and `python -m analysis formats`.
2. What each command imports, from `python -X importtime`: the import time of the whole process and the
   number of modules, for `metrics`, `formats`, and `--help` of `fewjoint`, `reconcile` and `report`.

The machine is shared and noisy: the load average is printed with the figures. Run from the project root:

    .venv/bin/python benchmarks/bench_cli.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MLCSG = ROOT.parent / "shared" / "realdata" / "mlcsg" / "all_prediction_TRADE.json"
TARGET_S = 0.8
PY = sys.executable
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_cli_vs_scorers import timed as one_run  # noqa: E402


def timed(command: list[str], runs: int, env: dict[str, str]) -> tuple[list[float], list[float]]:
    """Wall seconds and CPU seconds (user + system) of each of `runs` runs of `command`, as /usr/bin/time
    reports them (`bench_cli_vs_scorers.timed`). On a busy machine the CPU seconds stay closer to what a quiet
    one would show."""
    times, cpu = [], []
    for _ in range(runs):
        wall, used = one_run(command, env, ROOT)
        times.append(wall)
        cpu.append(used)
    return times, cpu


def import_profile(argv: list[str], env: dict[str, str]) -> tuple[float, int, float]:
    """(seconds of all imports, modules imported, seconds of importing pandas) of one run of `python ARGV`."""
    done = subprocess.run(
        [PY, "-X", "importtime", *argv], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    rows = [re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", ln) for ln in done.stderr.splitlines()]
    rows = [r for r in rows if r]
    total = sum(int(r.group(2)) for r in rows if r.group(3) == " ")  # top-level imports: one space of indent
    pandas = sum(int(r.group(2)) for r in rows if r.group(4) == "pandas")
    return total / 1e6, len(rows), pandas / 1e6


def line(label: str, measured: tuple[list[float], list[float]], target: float | None = None) -> str:
    times, cpu = measured
    median = statistics.median(times)
    verdict = "" if target is None else ("  ok" if median <= target else f"  MISSED (target {target} s)")
    runs = ", ".join(f"{t:.2f}" for t in times)
    return f"{label:<58} median {median:.2f} s, CPU {statistics.median(cpu):.2f} s  (runs {runs}){verdict}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if not MLCSG.exists():
        raise SystemExit(f"needs {MLCSG} (../shared/realdata)")
    with tempfile.TemporaryDirectory(prefix="dst-bench-cli-") as cache:
        measure(args.runs, cache)


def measure(runs: int, cache: str) -> None:
    cold = os.environ | {"DST_CACHE_DIR": ""}
    warm = os.environ | {"DST_CACHE_DIR": cache}
    metrics = [PY, "-m", "analysis", "metrics", "--pred", str(MLCSG)]
    subprocess.run(metrics, cwd=ROOT, env=warm, stdout=subprocess.DEVNULL, check=True)  # fills the cache

    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(line('python -c "import pandas" (the floor)', timed([PY, "-c", "import pandas"], runs, cold)))
    print(line('python -c "import analysis"', timed([PY, "-c", "import analysis"], runs, cold)))
    print(line("python -m analysis formats", timed([PY, "-m", "analysis", "formats"], runs, cold)))
    print(line("python -m analysis metrics --pred MLCSG (parse cache off)", timed(metrics, runs, cold), TARGET_S))
    print(line("python -m analysis metrics --pred MLCSG (parse cache warm)", timed(metrics, runs, warm), TARGET_S))
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    print("\nimports (python -X importtime, one run each): seconds, modules, of which pandas")
    commands = {
        "import analysis": ["-c", "import analysis"],
        "metrics --pred MLCSG": metrics[1:],
        "formats": ["-m", "analysis", "formats"],
        "fewjoint --help": ["-m", "analysis", "fewjoint", "--help"],
        "reconcile --help": ["-m", "analysis", "reconcile", "--help"],
        "report --help": ["-m", "analysis", "report", "--help"],
    }
    for label, argv in commands.items():
        seconds, modules, pandas = import_profile(argv, cold)
        print(f"  {label:<22} {seconds:.2f} s  {modules:>5} modules  (pandas {pandas:.2f} s)")


if __name__ == "__main__":
    main()
