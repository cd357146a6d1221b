"""Benchmark: every FewJoint metric for 5 seeds over the FewJoint 1.1 1-shot test set (~5,300 query scorings).

Predictions are seeded perturbations of the real gold (``analysis.demo.fewjoint.simulate_prediction``),
written as JSONL to a temporary directory; the timing covers reading + aligning the 5 files and
``score_fewjoint`` (all frames). Target: within 1 s. Run from the project root:

    .venv/bin/python benchmarks/bench_fewjoint.py
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis.demo.fewjoint import simulate_prediction  # noqa: E402
from analysis.fewjoint import load_fewjoint_gold, load_fewjoint_system, score_fewjoint  # noqa: E402

GOLD = ROOT.parent / "shared" / "realdata" / "fewjoint" / "FewJoint1.1" / "1shot" / "test.json"
SEEDS = (1, 2, 3, 4, 5)
TARGET_S = 1.0


def write_predictions(out_dir: Path) -> list[Path]:
    gold = load_fewjoint_gold(GOLD)
    queries = gold.queries
    intents = queries.groupby("domain")["intent"].unique().map(sorted).to_dict()
    slot_types = {
        domain: sorted({t[2:] for tags in part["tags"] for t in tags if t != "O"})
        for domain, part in queries.groupby("domain")
    }
    paths = []
    for seed in SEEDS:
        lines = []
        for number, row in enumerate(queries.itertuples()):
            rng = np.random.default_rng([seed, number])
            intent, tags = simulate_prediction(
                row.tags, row.intent, intents=intents[row.domain], slot_types=slot_types[row.domain], rng=rng
            )
            lines.append(
                json.dumps(
                    {
                        "domain": row.domain,
                        "episode": row.episode,
                        "query_index": row.query_index,
                        "pred_intent": intent,
                        "pred_tags": tags,
                        "tokens": row.tokens,
                    },
                    ensure_ascii=False,
                )
            )
        path = out_dir / f"bench_seed{seed}.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def main() -> int:
    if not GOLD.exists():
        print(f"skipped: {GOLD} is absent (the benchmark needs ../shared/realdata)")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_predictions(Path(tmp))
        best_load = best_score = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            system = load_fewjoint_system(GOLD, paths, name="perturbed-gold")
            t1 = time.perf_counter()
            result = score_fewjoint(system, averaging="episode")
            score_fewjoint(system, averaging="micro")
            t2 = time.perf_counter()
            best_load, best_score = min(best_load, t1 - t0), min(best_score, t2 - t1)
    total = best_load + best_score
    n_scored = len(result.queries)
    print(
        f"fewjoint: {len(SEEDS)} seeds x {result.n_queries} queries = {n_scored} query scorings; "
        f"load+align {best_load:.3f} s, score (episode + micro) {best_score:.3f} s, total {total:.3f} s "
        f"(best of 3; target {TARGET_S:.1f} s: {'met' if total <= TARGET_S else 'MISSED'})"
    )
    summary = result.summary.set_index("metric")["mean"].round(4).to_dict()
    print(f"  means over seeds (episode averaging): {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
