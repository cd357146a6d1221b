"""A thousand runs (issue 21, requirements 3 and 4). Run by hand:

    .venv/bin/python benchmarks/bench_scale.py [--sizes 100 300 1000] [--workers 2] [--runs-dir DIR]

1. Writes perturbed MultiWOZ 2.1 test runs (7,372 turns each, perturbed as `bench_core.py` does:
   `analysis.demo.simulate`, seeds [7, i]) to disk as JSONL, once, in `--runs-dir` (default
   benchmarks/results/scale_runs, git-ignored), and reuses them.
2. For each size: scores that many runs into an EMPTY store (a fresh `DST_CACHE_DIR`; the parse cache
   too, so every prediction file is parsed), `--workers` processes each scoring one run at a time.
   Reports the time and the peak memory of the whole process tree: the largest sum of the RSS of this
   process and its children, sampled from /proc every 0.1 s, and `getrusage` (self + largest child).
   Targets at 1,000 runs (7.4M turns): <= 60 s on 2 cores, peak RSS <= 1.5 GB (issue 43; issue 21's were
   3 min and 3 GB).
3. With the store warm: the leaderboard of all runs (every headline metric, the JGA interval; and every
   metric's interval), from the store keys to the sorted table. Target at 1,000 runs: <= 3 s.
4. Before each size and after the last, the machine's speed: the CPU of scoring one run in process
   (`--reference`), printed beside each size's figures with the load average, since the same code on this
   shared machine has taken from 0.32 to 0.42 CPU-s per run within one hour.

`--restart 100` instead: fills the store (`DST_CACHE_DIR`, as the dashboard finds it) for a workspace of
100 of these runs, then starts the server (`scripts/serve.py`, as `make run`) twice and reports when it
answers and its RSS. Targets: <= 5 s, <= 1 GB.

`--cold-open 1000` instead: the dashboard opening a workspace of that many of these runs with an EMPTY store
and parse cache (`ui.data.load_workspace`, as the sidebar calls it: the runs scored into the store by worker
children within the server's limits, `ui.data._score_new`), in a fresh process. Reports the wall time, the
CPU of the process tree and of the server process alone, and the peak RSS of the tree, beside the machine's
speed; compare with the 1,000-run row of the default mode (`ensure_all`, the same work without the limits).

`--switch 1000` instead: the sidebar's convention switched (to TRADE's) on a workspace of that many runs the
store holds under their declared convention only: the time from the click to the leaderboard, the CPU and the
peak RSS; `--switch-one-by-one N` the same as before `ui.data.store_many` (each run scored by a child of its
own when the view needs it), for comparison.

`--stages` instead: where one run's CPU goes when it is scored into the store (parse, pairing and
scoring, each summary table, each table's Parquet bytes), step by step in one process: what bounds the
cost per run.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RUNS_DIR = ROOT / "benchmarks" / "results" / "scale_runs"  # the written runs, reused (git-ignored)
sys.path.insert(0, str(ROOT))

from analysis import registry as R  # noqa: E402
from analysis.model import RunInfo  # noqa: E402
from analysis.workspace import RunEntry  # noqa: E402

REALDATA = ROOT.parent / "shared" / "realdata"
GOLD = REALDATA / "multiwoz21" / "test.json.zip"


def write_runs(folder: Path, n: int) -> list[Path]:
    """`n` perturbed runs as JSONL files (made once; existing files are reused)."""
    import gzip

    from analysis.demo.build import _jsonl
    from analysis.demo.simulate import ErrorProfile, draw_predictions, prepare_gold
    from analysis.loading import load_run

    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"simulated-{i:04d}.jsonl.gz" for i in range(n)]
    missing = [i for i, p in enumerate(paths) if not p.exists()]
    if missing:
        start = time.perf_counter()
        gold = load_run(GOLD, GOLD)
        prepared = prepare_gold(gold.gold, gold.turns)
        for i in missing:
            pred = draw_predictions(prepared, profile=ErrorProfile(), history="predicted", seed=[7, i])
            tmp = paths[i].with_suffix(".tmp")
            with gzip.open(tmp, "wt", encoding="utf-8", compresslevel=1) as handle:
                handle.write(_jsonl(gold.turns, pred))
            os.replace(tmp, paths[i])
        print(f"   wrote {len(missing)} run files in {time.perf_counter() - start:.0f} s (not counted)")
    return paths


def entries_for(paths: list[Path], gold: Path | None = None) -> list[RunEntry]:
    return [
        RunEntry(
            RunInfo(run_id=p.name.split(".")[0], system="simulated", dataset="MultiWOZ 2.1"), p, gold or GOLD, "jsonl"
        )
        for p in paths
    ]


def manifest_text(paths: list[Path]) -> str:
    """A workspace manifest listing `paths` (run files of `write_runs`) on the MultiWOZ 2.1 gold file, each run
    named after its file: the same store keys wherever it is written (`--restart`, `--cold-open`, the browser
    benchmark)."""
    lines = [f'[workspace]\nname = "{len(paths)} MultiWOZ-size runs"\nallow_outside_root = true\n']
    for p in paths:
        lines.append(
            f'[[runs]]\nname = "{p.name.split(".")[0]}"\nsystem = "simulated"\ndataset = "MultiWOZ 2.1"\n'
            f'format = "jsonl"\npred = "{p}"\ngold = "{GOLD}"\n'
        )
    return "\n".join(lines)


class TreeRss:
    """Peak of the summed RSS of this process and all its descendants, sampled from /proc; and the CPU
    time (user + system) of the descendants, each process's last sampled value (a worker's last 0.1 s
    before it exits may be missed), plus this process's own during the block."""

    def __init__(self, interval: float = 0.1) -> None:
        self.interval, self.peak, self._stop = interval, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._cpu: dict[int, float] = {}
        self._own = 0.0
        self.cpu_s = 0.0

    def __enter__(self) -> TreeRss:
        self._own = time.process_time()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.cpu_s = time.process_time() - self._own + sum(self._cpu.values())

    def _run(self) -> None:
        while not self._stop.is_set():
            pids = _tree(os.getpid())
            self.peak = max(self.peak, sum(_rss(p) for p in pids))
            for pid in pids:
                if pid != os.getpid():
                    self._cpu[pid] = max(self._cpu.get(pid, 0.0), _cpu_s(pid))
            self._stop.wait(self.interval)


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as handle:
                ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of one process so far (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def _tree(pid: int) -> list[int]:
    """`pid` and all its descendants."""
    tree, todo, seen = _children(), [pid], []
    while todo:
        p = todo.pop()
        seen.append(p)
        todo.extend(tree.get(p, []))
    return seen


def _tree_rss(pid: int) -> int:
    return sum(_rss(p) for p in _tree(pid))


def rusage_gb() -> float:
    self_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    child_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return (self_kb + child_kb) / 1024**2


def one_size(size: int, workers: int, runs_dir: Path) -> int:
    """Score `size` runs into the empty store of this process's `DST_CACHE_DIR`, then the warm
    leaderboard; prints one JSON line."""
    from analysis.store import entries as E
    from analysis.store import queries
    from analysis.store import runs as S

    items = entries_for(sorted(runs_dir.glob("simulated-*.jsonl.gz"))[:size])
    start = time.perf_counter()
    with TreeRss() as tree:
        stored = S.ensure_all(items, None, workers=workers)
    t_score = time.perf_counter() - start
    assert all(e is not None for e in stored), "a run could not be stored"
    n_turns = sum(int(e.header["tables"]["turns"]["rows"]) for e in stored if e is not None)

    def warm(intervals: tuple[str, ...] = ()) -> tuple[float, float, object]:
        begin = time.perf_counter()
        found = [S.stored(item, None, tables=("runs", "dialogues")) for item in items]
        t_keys = time.perf_counter() - begin
        assert all(f is not None for f in found)
        board = queries.leaderboard([f for f in found if f is not None], sort="jga", intervals=intervals)
        assert len(board) == size and board["jga_low"].notna().all()
        return time.perf_counter() - begin, t_keys, board

    with TreeRss() as warm_tree:
        t_board, t_keys, _ = warm()
        t_all, _, _ = warm(R.NAMES)
    root = E.store_root()
    assert root is not None
    size_mb = sum(f.stat().st_size for f in root.rglob("*.parquet")) / 1024**2
    result = {
        "runs": size,
        "turns": n_turns,
        "score_s": t_score,
        "score_cpu_s": tree.cpu_s,
        "peak_gb": tree.peak / 1024**3,
        "rusage_gb": rusage_gb(),
        "store_mb": size_mb,
        "board_s": t_board,
        "keys_s": t_keys,
        "all_s": t_all,
        "warm_peak_gb": warm_tree.peak / 1024**3,
    }
    print(json.dumps(result))
    return 0


def restart(size: int, workers: int, runs_dir: Path) -> int:
    """The dashboard server on a workspace of `size` runs (these files, the same keys as above) whose
    store is warm: seconds until it answers (`scripts/serve.py`: manifest read, first page computed,
    then the other pages' first views for its warm-up budget) and the server's RSS then."""
    sys.path.insert(0, str(ROOT / "tests" / "browser"))
    from conftest import start_server, stop_server  # the browser tests' launcher: `make run`'s command

    from analysis.store import runs as S

    files = sorted(runs_dir.glob("simulated-*.jsonl.gz"))[:size]
    folder = Path(tempfile.mkdtemp(prefix="dst-restart-"))
    manifest = folder / "workspace.toml"
    manifest.write_text(manifest_text(files), encoding="utf-8")
    from analysis.workspace import read_manifest

    items = read_manifest(manifest).entries
    start = time.perf_counter()
    S.ensure_all(items, None, workers=workers)
    t_fill = time.perf_counter() - start
    results: dict[str, object] = {"runs": size, "fill_s": t_fill}
    for attempt in ("warm restart 1", "warm restart 2"):
        begin = time.perf_counter()
        process, _ = start_server(manifest, timeout=900)
        answered = time.perf_counter() - begin
        rss = _rss(process.pid)
        tree = _tree_rss(process.pid)
        stop_server(process)
        results[attempt] = {"answers_s": answered, "server_rss_gb": rss / 1024**3, "tree_rss_gb": tree / 1024**3}
        print(
            f"   {attempt}: answers after {answered:.1f} s; server RSS {rss / 1024**3:.2f} GB (tree {tree / 1024**3:.2f})"
        )
    print(json.dumps(results))
    shutil.rmtree(folder, ignore_errors=True)
    return 0


def reference(runs_dir: Path) -> int:
    """The machine's speed at the time of a measurement (this machine is shared, and the same code has taken
    0.32 to 0.42 CPU-s per run within the hour): the CPU of scoring one run into a store in this process,
    the median of 5 runs after one warm-up (the gold file's first parse). Prints one JSON line."""
    from analysis.store import entries as E
    from analysis.store import runs as S

    S._one_blas_thread()
    items = entries_for(sorted(runs_dir.glob("simulated-*.jsonl.gz"))[-6:])
    root = E.store_root()
    assert root is not None
    cpu = []
    for item in items:
        begin = time.process_time()
        S._ensure(item, None, str(root))
        cpu.append(time.process_time() - begin)
    print(json.dumps({"reference_cpu_s": sorted(cpu[1:])[len(cpu[1:]) // 2]}))
    return 0


STAGES_CUT = 10  # `--stages` also scores runs cut to the first tenth of the gold file's dialogues


def stages(runs_dir: Path, repeat: int = 7) -> int:
    """Where one run's CPU goes when it is scored into the store (`store.runs._ensure`, step by step, in
    this process, one BLAS thread as a worker has): the parse, the pairing and scoring, each summary table
    and each table's Parquet bytes (as `entries.save` writes them), medians over `repeat` runs after one
    warm-up. The 60 s target at 1,000 runs on 2 cores leaves 0.12 CPU-s a run; the Parquet rows cannot
    shrink while the stored tables stay bit-identical (the same bytes, so the same encoding and compression
    work), nor the parse while the file is read.

    Then the same on the same runs cut to the first tenth of the gold file's dialogues (a gold file of those
    dialogues, each run's predictions of them), and each step split in two by the two sizes (a straight line
    through them): a part every run pays whatever its size (pandas' and Arrow's cost per call, the Parquet
    writer's per file) and a part growing with the turns. Only the first could be shared by scoring many
    runs per call; the second is what a run costs however the pipeline is arranged."""
    from analysis.store import runs as S

    S._one_blas_thread()
    # An empty cache folder of its own: a prediction file whose parse an earlier command cached (the dashboard,
    # `metrics`) would be read back from that cache, not parsed (13-25 ms instead of about 50 ms a run).
    cache = os.environ["DST_CACHE_DIR"] = tempfile.mkdtemp(prefix="dst-bench-stages-cache-")
    paths = sorted(runs_dir.glob("simulated-*.jsonl.gz"))[: repeat + 1]
    whole = _stage_times(entries_for(paths))
    _print_stages(f"one run scored into the store, step by step (median of {repeat} runs, CPU-s)", whole)
    cut = Path(tempfile.mkdtemp(prefix="dst-bench-stages-"))
    try:
        gold, small, share = _cut_runs(paths, cut, STAGES_CUT)
        part = _stage_times(entries_for(small, gold))
    finally:
        shutil.rmtree(cut, ignore_errors=True)
    _print_stages(f"the same runs cut to the first 1/{STAGES_CUT} of the dialogues ({share:.1%} of the turns)", part)
    print("split by the two sizes: the part every run pays whatever its size, the part growing with its turns")
    for name, value in whole.items():
        fixed = (part[name] - share * value) / (1 - share)
        print(f"   {fixed * 1000:7.1f} + {(value - fixed) * 1000:7.1f} ms  {name}")
    total = sum(whole.values())
    fixed_sum = (sum(part.values()) - share * total) / (1 - share)
    print(
        f"   {fixed_sum * 1000:7.1f} + {(total - fixed_sum) * 1000:7.1f} ms  in all: scoring many runs per call could "
        f"at best remove the first part; the second alone, {(total - fixed_sum) * 1000:.0f} ms a run, is "
        f"{(total - fixed_sum) * 1000 / 2:.0f} s for 1,000 runs on 2 cores (target 60 s)"
    )
    shutil.rmtree(cache, ignore_errors=True)
    return 0


def _stage_times(items: list[RunEntry]) -> dict[str, float]:
    """`stages`' medians (CPU-s) per step over `items` after the first (a warm-up: the gold file's parse)."""
    import statistics

    from analysis.scoring import score_run
    from analysis.store import entries as E
    from analysis.store import parts as P
    from analysis.workspace import load_entry

    spent: dict[str, list[float]] = {}

    def timed(name: str, function: Any, *args: Any, **kwargs: Any) -> Any:
        begin = time.process_time()
        value = function(*args, **kwargs)
        spent.setdefault(name, []).append(time.process_time() - begin)
        return value

    for item in items:
        run = timed("parse (read, decode, lay out)", load_entry, item, cache_pred=False)
        scored = timed("pair and score", score_run, run, None)
        domains = timed("table: domains, domain_parts", P.domain_tables, scored)
        depth = timed("table: depth, depth_metrics, depth_parts", P.depth_tables, scored)
        dialogues = timed("table: dialogues (every metric's per-dialogue parts)", P.dialogue_parts, scored)
        row = timed("table: runs (headline row, every interval)", P.runs_row, scored, "0" * 64, "v", dialogues)
        slots = timed("table: slot_table", P.slot_table, scored)
        picker = timed("table: picker", P.picker, scored)
        tables = {
            "turns": scored.turns,
            "slots": scored.slots,
            "runs": row,
            "dialogues": dialogues,
            "domains": domains[0],
            "domain_parts": domains[1],
            "depth": depth[0],
            "depth_metrics": depth[1],
            "depth_parts": depth[2],
            "slot_table": slots,
            "picker": picker,
        }
        for name, frame in tables.items():
            group = name if name in ("turns", "slots") else "the 9 summary tables"
            timed(f"Parquet bytes: {group}", E._parquet_bytes, frame, bare=name in E.BARE_TABLES)
    # One value per run for each name (the 9 summary tables' Parquet bytes summed within a run).
    totals = {}
    for name, values in spent.items():
        per = len(values) // len(items)
        runs = [sum(values[i * per : (i + 1) * per]) for i in range(len(items))]
        totals[name] = statistics.median(runs[1:])
    return totals


def _print_stages(title: str, totals: dict[str, float]) -> None:
    print(f"{title}; load {os.getloadavg()[0]:.1f}")
    for name, value in totals.items():
        print(f"   {value * 1000:7.1f} ms  {name}")
    print(f"   {sum(totals.values()) * 1000:7.1f} ms  in all (the 60 s target at 1,000 runs on 2 cores: 120 ms)")


def _cut_runs(paths: list[Path], folder: Path, cut: int) -> tuple[Path, list[Path], float]:
    """The gold file (MultiWOZ 2.1's test archive) with its first 1/`cut` of the dialogues, and each run of
    `paths` with its predictions of those dialogues only, written in `folder`: (gold, runs, the share of the
    turns kept)."""
    import gzip
    import zipfile

    with zipfile.ZipFile(GOLD) as archive:
        member = archive.namelist()[0]
        dialogues = json.loads(archive.read(member))
    kept = dict(list(dialogues.items())[: len(dialogues) // cut])
    gold = folder / GOLD.name
    with zipfile.ZipFile(gold, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(member, json.dumps(kept))
    ids = {name.removesuffix(".json") for name in kept} | set(kept)
    small, share = [], 0.0
    for path in paths:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            lines = handle.read().splitlines()
        chosen = [line for line in lines if json.loads(line)["dialogue_id"] in ids]
        share = len(chosen) / len(lines)
        target = folder / path.name
        with gzip.open(target, "wt", encoding="utf-8", compresslevel=1) as handle:
            handle.write("\n".join(chosen) + "\n")
        small.append(target)
    return gold, small, share


def _in_fresh_store(arguments: list[str]) -> dict[str, Any] | None:
    """This script run with `arguments` in a fresh process on an empty store and parse cache: the JSON of its
    last line (None, its output printed, when it failed)."""
    cache = Path(tempfile.mkdtemp(prefix="dst-bench-store-"))
    try:
        env = {**os.environ, "DST_CACHE_DIR": str(cache)}
        done = subprocess.run([sys.executable, __file__, *arguments], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            print(done.stdout, done.stderr, file=sys.stderr)
            return None
        return dict(json.loads(done.stdout.strip().splitlines()[-1]))
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def _manifest_of(n: int, runs_dir: Path) -> tuple[Path, Path]:
    """A temporary folder holding the manifest of the first `n` runs of `runs_dir` (`manifest_text`)."""
    folder = Path(tempfile.mkdtemp(prefix="dst-bench-manifest-"))
    manifest = folder / "workspace.toml"
    manifest.write_text(manifest_text(sorted(runs_dir.glob("simulated-*.jsonl.gz"))[:n]), encoding="utf-8")
    return folder, manifest


SWITCHED_TO = "trade"  # `--switch`: the convention chosen in the sidebar (the runs are declared under their own)


def switch(n: int, runs_dir: Path, batches: bool = True) -> int:
    """`--switch`: the sidebar's convention switched to TRADE's on a workspace of `n` runs the store holds
    under their declared convention only (scored first, not timed): the leaderboard under TRADE's, from the
    click to the board (`ui.data.stored_leaderboard`, then `compute` when the store cannot answer), in a
    fresh process. `batches=False` (`--switch-one-by-one`): as before `ui.data.store_many`, each run scored by
    a child of its own when the view needs it."""
    found = _prepared_and_run(n, runs_dir, ["--switch-one", str(n), *([] if batches else ["--one-by-one"])])
    if isinstance(found, int):
        return found
    before, load = found["reference_cpu_s"], found["load_before"]
    how = "in batches (store_many)" if batches else "one child per run (as before store_many)"
    print(
        f"the sidebar's convention switched to {SWITCHED_TO} on {n:,} stored runs, {how}: the leaderboard after "
        f"{found['wall_s']:.1f} s, CPU of the process tree {found['cpu_s']:.0f} s, of the server process "
        f"{found['server_cpu_s']:.1f} s; peak RSS of the tree {found['peak_gb']:.2f} GB, of the server "
        f"{found['server_peak_gb']:.2f} GB; {found['rows']} rows; machine speed: one run in process {before:.3f} "
        f"CPU-s; load average {load:.1f} before, {os.getloadavg()[0]:.1f} after"
    )
    return 0


def _switch_one(n: int, runs_dir: Path, batches: bool) -> int:
    import logging

    from analysis import views
    from analysis.workspace import read_manifest
    from ui import data

    logging.getLogger("streamlit").setLevel(logging.ERROR)  # "no script run context": no Streamlit server here
    folder, manifest = _manifest_of(n, runs_dir)
    sources, failed = data.load_workspace(read_manifest(manifest))  # scored under the declared one: not timed
    assert not failed
    if not batches:
        data.store_many = lambda *a, **k: None  # type: ignore[assignment]
    pairs = [(source, SWITCHED_TO) for source in sources.values()]
    start, own = time.perf_counter(), time.process_time()
    with TreeRss() as tree:
        stored = data.stored_leaderboard(pairs, "jga")
        board = (
            stored[0] if stored is not None else data.compute(views.leaderboard, [pairs], {"sort": "jga"}, SWITCHED_TO)
        )
    found = _figures(tree, start, own)
    shutil.rmtree(folder, ignore_errors=True)
    found.update(server_peak_gb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2, rows=len(board))
    print(json.dumps(found))
    return 0


def cold_open(n: int, runs_dir: Path) -> int:
    """`--cold-open`: the dashboard's first read of a workspace of `n` new runs, in a fresh process with an
    empty store and parse cache."""
    found = _prepared_and_run(n, runs_dir, ["--cold-one", str(n)])
    if isinstance(found, int):
        return found
    before, load = found["reference_cpu_s"], found["load_before"]
    print(
        f"the dashboard opening a workspace of {n:,} new runs (empty store and parse cache): "
        f"{found['wall_s']:.1f} s ({n / found['wall_s']:.1f} runs/s), CPU of the process tree "
        f"{found['cpu_s']:.0f} s ({found['cpu_s'] / n:.2f} s per run), of the server process "
        f"{found['server_cpu_s']:.1f} s; peak RSS of the tree {found['peak_gb']:.2f} GB; failed {found['failed']}; "
        f"machine speed: one run in process {before:.3f} CPU-s; load average {load:.1f} before, "
        f"{os.getloadavg()[0]:.1f} after"
    )
    return 0


def _cold_one(n: int, runs_dir: Path) -> int:
    import logging

    from analysis.workspace import read_manifest
    from ui import data

    logging.getLogger("streamlit").setLevel(logging.ERROR)  # "no script run context": no Streamlit server here
    folder, manifest = _manifest_of(n, runs_dir)
    workspace = read_manifest(manifest)
    start, own = time.perf_counter(), time.process_time()
    with TreeRss() as tree:
        sources, failed = data.load_workspace(workspace)
    found = _figures(tree, start, own)
    assert len(sources) + len(failed) == n
    shutil.rmtree(folder, ignore_errors=True)
    found["failed"] = len(failed)
    print(json.dumps(found))
    return 0


def _prepared_and_run(n: int, runs_dir: Path, args: list[str]) -> dict[str, Any] | int:
    """`--switch` and `--cold-open`: `n` runs written, the machine's speed and the load average taken, then
    this script with `args` in a fresh process and store (`_in_fresh_store`): its figures with
    `reference_cpu_s` and `load_before`, or the exit code when there are none (0: no gold file, skipped)."""
    if not GOLD.exists():
        print(f"skipped: {GOLD} is absent", file=sys.stderr)
        return 0
    write_runs(runs_dir, n)
    before = _reference(runs_dir)
    load = os.getloadavg()[0]
    found = _in_fresh_store([*args, "--runs-dir", str(runs_dir)])
    if found is None:
        return 1
    return {**found, "reference_cpu_s": before, "load_before": load}


def _figures(tree: TreeRss, start: float, own: float) -> dict[str, Any]:
    """What `--switch-one` and `--cold-one` measure from `start` (`perf_counter`) and `own` (`process_time`):
    wall seconds, CPU of the process tree and of this process, the tree's peak RSS."""
    return {
        "wall_s": time.perf_counter() - start,
        "cpu_s": tree.cpu_s,
        "server_cpu_s": time.process_time() - own,
        "peak_gb": tree.peak / 1024**3,
    }


def _reference(runs_dir: Path) -> float:
    cache = Path(tempfile.mkdtemp(prefix="dst-scale-reference-"))
    try:
        command = [sys.executable, __file__, "--reference", "--runs-dir", str(runs_dir)]
        done = subprocess.run(command, env={**os.environ, "DST_CACHE_DIR": str(cache)}, capture_output=True, text=True)
        if done.returncode != 0:
            print(done.stdout, done.stderr, file=sys.stderr)
            return float("nan")
        return float(json.loads(done.stdout.strip().splitlines()[-1])["reference_cpu_s"])
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 300, 1000])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--runs-dir", type=Path, default=RUNS_DIR)
    parser.add_argument("--keep", action="store_true", help="keep the last store (printed) for a later warm run")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # one size, in this process (internal)
    parser.add_argument("--reference", action="store_true", help=argparse.SUPPRESS)  # the machine's speed (internal)
    parser.add_argument(
        "--restart", type=int, help="instead: the server's warm restart on a workspace of this many runs"
    )
    parser.add_argument("--stages", action="store_true", help="instead: where one run's CPU goes, step by step")
    parser.add_argument(
        "--cold-open", type=int, help="instead: the dashboard opening a workspace of this many new runs"
    )
    parser.add_argument("--cold-one", type=int, help=argparse.SUPPRESS)  # the same, in this process (internal)
    parser.add_argument(
        "--switch", type=int, help="instead: the sidebar's convention switched on a workspace of this many stored runs"
    )
    parser.add_argument("--switch-one-by-one", type=int, help="instead: the same as before the batches (comparison)")
    parser.add_argument("--switch-one", type=int, help=argparse.SUPPRESS)  # the same, in this process (internal)
    parser.add_argument("--one-by-one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.switch:
        return switch(args.switch, args.runs_dir)
    if args.switch_one_by_one:
        return switch(args.switch_one_by_one, args.runs_dir, batches=False)
    if args.switch_one:
        return _switch_one(args.switch_one, args.runs_dir, not args.one_by_one)
    if args.cold_open:
        return cold_open(args.cold_open, args.runs_dir)
    if args.cold_one:
        return _cold_one(args.cold_one, args.runs_dir)
    if args.stages:
        return stages(args.runs_dir)
    if args.one:
        return one_size(args.one, args.workers, args.runs_dir)
    if args.reference:
        return reference(args.runs_dir)
    if args.restart:
        return restart(args.restart, args.workers, args.runs_dir)
    if not GOLD.exists():
        print(f"skipped: {GOLD} is absent", file=sys.stderr)
        return 0
    print(f"1. perturbed MultiWOZ 2.1 test runs in {args.runs_dir}")
    write_runs(args.runs_dir, max(args.sizes))
    gc.collect()

    rows = []
    before = _reference(args.runs_dir)
    print(f"   machine speed now: one run scored in process in {before:.3f} CPU-s (median of 5)")
    base = getattr(sys, "_base_executable", sys.executable)
    print(f"   interpreter: {base}, Python {sys.version.split()[0]} (builds of one version differ in speed)")
    for size in args.sizes:  # each size in a fresh process: an empty store and parse cache, its own memory
        reference_now = before if size == args.sizes[0] else _reference(args.runs_dir)
        load_before = os.getloadavg()[0]
        cache = Path(tempfile.mkdtemp(prefix=f"dst-scale-{size}-"))
        env = {**os.environ, "DST_CACHE_DIR": str(cache)}
        command = [sys.executable, __file__, "--one", str(size), "--workers", str(args.workers)]
        done = subprocess.run([*command, "--runs-dir", str(args.runs_dir)], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            print(done.stdout, done.stderr, file=sys.stderr)
            return 1
        result = json.loads(done.stdout.strip().splitlines()[-1])
        result["reference_cpu_s"] = reference_now
        result["load"] = (load_before, os.getloadavg()[0])
        rows.append(result)
        print(
            f"2. {size} runs, {result['turns']:,} turns: scored into an empty store in {result['score_s']:6.1f} s "
            f"({size / result['score_s']:.1f} runs/s, {args.workers} workers; CPU {result['score_cpu_s']:.0f} s, "
            f"{result['score_cpu_s'] / size:.2f} s per run), peak RSS of the process tree "
            f"{result['peak_gb']:.2f} GB (getrusage self + largest child {result['rusage_gb']:.2f} GB); "
            f"store {result['store_mb']:,.0f} MB; machine speed just before: {reference_now:.3f} CPU-s per run "
            f"in process; load average {result['load'][0]:.1f} before, {result['load'][1]:.1f} after"
        )
        print(
            f"3. warm leaderboard of {size} runs: {result['board_s']:5.2f} s with the JGA interval "
            f"(of which {result['keys_s']:.2f} s keys and checks), {result['all_s']:5.2f} s with all "
            f"{len(R.NAMES)} intervals; peak RSS {result['warm_peak_gb']:.2f} GB"
        )
        if args.keep and size == args.sizes[-1]:
            print(f"   store kept in {cache}")
        else:
            shutil.rmtree(cache, ignore_errors=True)

    after = _reference(args.runs_dir)
    print(f"   machine speed after: one run scored in process in {after:.3f} CPU-s (before: {before:.3f})")
    print()
    print(
        "| runs | turns | score from empty (s) | CPU, process tree (s) | CPU per run (s) | peak RSS tree (GB) "
        "| warm leaderboard, JGA CI (s) | all CIs (s) | machine speed: one run in process (CPU-s) | load average |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['runs']:,} | {r['turns']:,} | {r['score_s']:.1f} | {r['score_cpu_s']:.0f} "
            f"| {r['score_cpu_s'] / r['runs']:.2f} | {r['peak_gb']:.2f} | {r['board_s']:.2f} | {r['all_s']:.2f} "
            f"| {r['reference_cpu_s']:.3f} | {r['load'][0]:.1f}-{r['load'][1]:.1f} |"
        )
    print(
        "targets at 1,000 runs (issue 43): score <= 60 s on 2 cores, peak RSS <= 1.5 GB; warm leaderboard <= 3 s "
        "(issue 21)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
