"""Benchmark: load the review queue over a SQLite store holding 10,000 annotations (target: within 1 s).

Error items are the slot errors of the real TRADE run (../shared/realdata/mlcsg, MultiWOZ 2.0 test) when
present, else a synthetic error table of the same size. 10,000 annotations by 3 reviewers (slot-level,
turn-level and run-independent ones mixed) are written with `import_json` (timed separately). The timed
part opens the store afresh and builds the unreviewed queue: read all annotations, match them to the
error items, filter. Run from the project root:

    .venv/bin/python benchmarks/bench_annotations.py
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis.loading import load_run  # noqa: E402
from analysis.model import RunInfo  # noqa: E402
from analysis.review import (  # noqa: E402
    DEFAULT_TAGS,
    AnnotationStore,
    error_items,
    item_keys,
    review_progress,
    review_queue,
    tag_counts,
)
from analysis.scoring import score_run  # noqa: E402

TRADE = ROOT.parent / "shared" / "realdata" / "mlcsg" / "all_prediction_TRADE.json"
N_ANNOTATIONS = 10_000
REVIEWERS = ("ana", "bo", "cy")
TARGET_S = 1.0


def errors_table() -> tuple[pd.DataFrame, str]:
    if TRADE.exists():
        scored = score_run(load_run(TRADE, meta=RunInfo("trade", dataset="MultiWOZ 2.0")), "trade")
        return error_items(scored), f"real TRADE run ({TRADE.name})"
    rng = np.random.default_rng(0)
    n = 12_000
    errors = pd.DataFrame(
        {
            "run_id": "synthetic",
            "dataset": "MultiWOZ 2.0",
            "dialogue_id": [f"MUL{i:04d}.json" for i in rng.integers(0, 1000, n)],
            "turn_index": rng.integers(0, 12, n),
            "domain": rng.choice(["hotel", "restaurant", "taxi", "train", "attraction"], n),
            "slot": rng.choice(["area", "name", "day", "people", "time", "leave at", "pricerange"], n),
            "outcome": rng.choice(["wrong_value", "missed", "spurious"], n),
        }
    ).drop_duplicates(["dialogue_id", "turn_index", "domain", "slot"], ignore_index=True)
    errors["item_key"] = item_keys(errors)
    return errors, "synthetic errors (../shared/realdata/mlcsg absent)"


def annotation_payload(errors: pd.DataFrame) -> dict:
    rng = np.random.default_rng(1)
    picks = errors.sample(n=N_ANNOTATIONS, replace=True, random_state=2).reset_index(drop=True)
    picks["reviewer"] = [REVIEWERS[i % len(REVIEWERS)] for i in range(len(picks))]
    turn_level = rng.random(len(picks)) < 0.1
    any_run = rng.random(len(picks)) < 0.2
    picks.loc[turn_level, ["domain", "slot"]] = None
    picks.loc[any_run, "run_id"] = None
    picks = picks.drop_duplicates(["dataset", "dialogue_id", "turn_index", "domain", "slot", "run_id", "reviewer"])
    # top up with turn-level annotations of other turns until there are exactly N_ANNOTATIONS rows
    extra = N_ANNOTATIONS - len(picks)
    filler = pd.DataFrame(
        {
            "run_id": None,
            "dataset": "MultiWOZ 2.0",
            "dialogue_id": [f"FILL{i:05d}.json" for i in range(extra)],
            "turn_index": 0,
            "domain": None,
            "slot": None,
            "reviewer": "cy",
        }
    )
    picks = pd.concat([picks, filler], ignore_index=True)
    picks["item_key"] = item_keys(picks)
    records = []
    for n, row in enumerate(picks.astype(object).where(picks.notna(), None).to_dict("records")):
        stamp = f"2026-01-01T00:{n // 6000 % 60:02d}:{n // 100 % 60:02d}.{n:06d}Z"
        records.append(
            {
                "item_key": row["item_key"],
                "dataset": row["dataset"],
                "dialogue_id": row["dialogue_id"],
                "turn_index": int(row["turn_index"]),
                "domain": row["domain"],
                "slot": row["slot"],
                "run_id": row["run_id"],
                "reviewer": row["reviewer"],
                "tags": [DEFAULT_TAGS[n % len(DEFAULT_TAGS)], DEFAULT_TAGS[(n * 7) % len(DEFAULT_TAGS)]],
                "comment": f"note {n}",
                "created_at": stamp,
                "updated_at": stamp,
            }
        )
    return {"annotations": records}


def main() -> int:
    errors, source = errors_table()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'annotations.sqlite'}"
        payload = annotation_payload(errors)
        export = Path(tmp) / "annotations.json"
        export.write_text(json.dumps(payload), encoding="utf-8")
        start = time.perf_counter()
        with AnnotationStore(url) as store:
            written = store.import_json(export)
        print(f"import of {written:,} annotations: {time.perf_counter() - start:.2f} s")
        assert written == N_ANNOTATIONS, written

        timings = []
        for _ in range(3):
            start = time.perf_counter()
            with AnnotationStore(url) as store:
                queue = review_queue(errors, store)
            timings.append(time.perf_counter() - start)
        with AnnotationStore(url) as store:
            annotations = store.annotations()
            start = time.perf_counter()
            progress = review_progress(errors, annotations, by="domain")
            counts = tag_counts(annotations)
            rest = time.perf_counter() - start
    reviewed = len(errors) - len(queue)
    print(f"error items: {len(errors):,} from {source}; annotations: {len(annotations):,}")
    print(f"review queue: {len(queue):,} unreviewed, {reviewed:,} reviewed")
    print(f"open store + load review queue: first {timings[0]:.3f} s, best {min(timings):.3f} s (target {TARGET_S} s)")
    print(f"review progress by domain ({len(progress)} rows) + tag counts ({len(counts)} rows): {rest:.3f} s")
    return 0 if timings[0] <= TARGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
