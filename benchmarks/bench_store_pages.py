"""Slots, Domains and the dialogue picker: first view from the score store (DuckDB) vs from the scored runs.

    .venv/bin/python benchmarks/bench_store_pages.py [--repeats 3]

Stores the demo workspace's runs that are not under the SGD convention (data/demo/workspace.toml) in a
fresh score store in a temporary folder ($TMPDIR), then, in a fresh process per measurement (empty process
caches, as after a restart with the store warm), computes what each page shows first, as `data.compute`
does for the pages: Slots (caption and per-slot table of the first run), Domains (caption, convention
warning and per-domain JGA with intervals of every run), Dialogue picker (a search of the first run).
`memory`: the in-memory views over the scored runs (read back from the store: no parsing, no scoring);
`store`: the same calls answered by DuckDB over the stored Parquet files (`ui.data.stored_view`). The
two modes alternate (memory, store, memory, ...) so machine noise hits both alike. DuckDB and the store's
queries are imported before timing in both modes (a running server has them). Prints wall and CPU seconds
per page (median over repeats) and the child's peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo" / "workspace.toml"
sys.path.insert(0, str(ROOT))


def _pairs() -> list[Any]:
    from analysis.workspace import read_manifest
    from ui import data

    entries = [e for e in read_manifest(DEMO).entries if e.meta.convention != "sgd"]
    return [(data.source_from_entry(e), data.DECLARED) for e in entries]


def warm() -> int:
    from analysis.store import entries
    from ui import data

    pairs = _pairs()
    for source, choice in pairs:
        data.scored(source, choice)
    entries.flush()
    return len(pairs)


def child(mode: str) -> dict[str, float]:
    import analysis.store.queries  # noqa: F401  (a running server has imported DuckDB: not timed in either mode)
    from analysis import views
    from ui import data

    if mode == "memory":
        data.stored_view = lambda *_: None
    pairs = _pairs()
    pages: dict[str, list[tuple[Any, list[Any], dict[str, Any]]]] = {
        "slots": [(views.slot_table, [pairs[0]], {}), (views.scope_caption, [pairs[0]], {})],
        "domains": [
            (views.scope_caption, [pairs], {}),
            (views.comparability_warnings, [pairs], {"about": ("convention",)}),
            (views.domain_jga, [pairs], {}),
        ],
        "picker": [(views.pick_dialogues, [pairs[0]], {"search": "hotel", "sort": "number of errors (most first)"})],
    }
    out: dict[str, float] = {}
    for page, calls in pages.items():
        wall, cpu = time.perf_counter(), time.process_time()
        for fn, args, params in calls:
            data.compute(fn, args, params, data.DECLARED)
        out[f"{page}_wall"] = time.perf_counter() - wall
        out[f"{page}_cpu"] = time.process_time() - cpu
    out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", choices=["memory", "store"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child)))
        return
    with tempfile.TemporaryDirectory(prefix="bench-store-pages-") as cache:
        env = {**os.environ, "DST_CACHE_DIR": cache, "PYTHONPATH": str(ROOT)}
        os.environ.update(env)
        n = warm()
        results: dict[str, list[dict[str, float]]] = {"memory": [], "store": []}
        for _ in range(args.repeats):
            for mode in ("memory", "store"):
                done = subprocess.run(
                    [sys.executable, __file__, "--child", mode], env=env, capture_output=True, text=True, check=True
                )
                results[mode].append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"{n} stored runs (demo, not SGD); median of {args.repeats} fresh processes per mode")
    print(f"{'page':<10}{'mode':<8}{'wall s':>9}{'cpu s':>9}")
    for page in ("slots", "domains", "picker"):
        for mode, rows in results.items():
            wall = statistics.median(r[f"{page}_wall"] for r in rows)
            cpu = statistics.median(r[f"{page}_cpu"] for r in rows)
            print(f"{page:<10}{mode:<8}{wall:>9.3f}{cpu:>9.3f}")
    for mode, rows in results.items():
        print(f"peak RSS {mode}: {statistics.median(r['rss_mb'] for r in rows):.0f} MB")


if __name__ == "__main__":
    main()
