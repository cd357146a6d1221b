"""The report of many runs (issue 40 requirement 4): `python -m analysis report` over a workspace of 40, 80
and 500 perturbed MultiWOZ 2.1 test runs (7,372 turns each, the runs of `bench_scale.py`), every run in the
score store first (as after a dashboard session or `--store`), so the report reads the warm store and
scores nothing. Reports, per size, the report's wall time, the CPU seconds and peak RSS of its process tree
(sampled from /proc every 0.1 s, as `bench_scale.py` does), and the number of files written. Run by hand:

    .venv/bin/python benchmarks/bench_report_scale.py [--sizes 40 80 500] [--formats svg] [--code DIR] [--files N]

`--formats` (default `svg`: one render per figure) and no LaTeX compile (`--no-pdf`) keep the browser's
share small: the memory measured is the report's own. `--code DIR` runs the report of another copy of the
project (e.g. `git archive` of an older commit) over the same workspace and store, for a before/after.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_scale import GOLD, RUNS_DIR, TreeRss, entries_for, write_runs  # noqa: E402


def manifest(folder: Path, paths: list[Path], size: int | None = None) -> Path:
    """A workspace of `size` runs (default: one per path) over the files at `paths` (absolute paths, all on
    the MultiWOZ 2.1 test gold): with more runs than files, each file is listed again under other run names,
    `simulated-0100` and on (the run's name is part of its store key: each is an entry of its own)."""
    lines = ['[workspace]\nname = "Many runs"\nconvention = "exact"\nallow_outside_root = true\n']
    size = len(paths) if size is None else size
    for number in range(size):
        entry = entries_for([paths[number % len(paths)]])[0]
        name = f"simulated-{number:04d}"
        lines.append(
            f'[[runs]]\nname = "{name}"\nsystem = "simulated"\ndataset = "MultiWOZ 2.1"\nsplit = "test"\n'
            f'history = "predicted"\npred = "{entry.pred}"\ngold = "{GOLD}"\nformat = "jsonl"\n'
        )
    path = folder / "workspace.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def fill_store(workspace: Path, workers: int) -> float:
    """Every run of the workspace scored into the store of this process's `DST_CACHE_DIR`; seconds."""
    from analysis.store import runs as store_runs
    from analysis.workspace import read_manifest

    started = time.perf_counter()
    items = read_manifest(workspace).entries
    store_runs.ensure_all(items, items[0].meta.convention, workers=workers)
    return time.perf_counter() - started


def report(workspace: Path, out: Path, formats: str, code: Path) -> dict[str, float | int | str]:
    """One `report` command as a process: wall time, peak RSS of its tree, files written, exit code."""
    command = [sys.executable, "-m", "analysis", "report", str(workspace), "--out", str(out)]
    command += ["--formats", formats, "--no-pdf", "--no-progress"]
    started = time.perf_counter()
    with TreeRss() as rss:
        done = subprocess.run(command, cwd=code, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    return {
        "seconds": round(seconds, 1),
        "cpu_s": round(rss.cpu_s, 1),  # the process tree's CPU: on a loaded machine, wall time says little
        "peak_rss_gb": round(rss.peak / 1024**3, 2),
        "files": sum(1 for _ in out.iterdir()) if out.exists() else 0,
        "exit": done.returncode,
        "said": (done.stdout + done.stderr).strip().splitlines()[-1:] or "",
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[40, 80, 500])
    parser.add_argument("--formats", default="svg")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--runs-dir", type=Path, default=RUNS_DIR)
    parser.add_argument("--cache", type=Path, help="the store's folder (default: a fresh temporary one)")
    parser.add_argument("--code", type=Path, default=ROOT, help="the project copy whose report is run")
    parser.add_argument(
        "--files",
        type=int,
        help="distinct run files (default: one per run); fewer than the runs lists each file under several names",
    )
    args = parser.parse_args()
    cache = args.cache or Path(tempfile.mkdtemp(prefix="bench-report-cache-"))
    os.environ["DST_CACHE_DIR"] = str(cache)
    paths = write_runs(args.runs_dir, min(args.files or max(args.sizes), max(args.sizes)))
    print(f"load average {os.getloadavg()[0]:.1f}; store {cache}; code {args.code}", flush=True)
    for size in args.sizes:
        folder = Path(tempfile.mkdtemp(prefix=f"bench-report-{size}-"))
        try:
            workspace = manifest(folder, paths[:size], size)
            filled = fill_store(workspace, args.workers)
            result = report(workspace, folder / "out", args.formats, args.code)
            print(json.dumps({"runs": size, "store_filled_s": round(filled, 1), **result}), flush=True)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    if args.cache is None:
        shutil.rmtree(cache, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
