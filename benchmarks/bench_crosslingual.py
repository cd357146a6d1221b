"""Benchmark: ontology alignment of full MultiWOZ 2.1 test vs MultiWOZ-zh test (7,372 paired turns).

Both sides are the real gold scored against itself (loading is timed apart, it is not the
alignment's cost). Times `align_ontologies` (target: well under 1 s), `align_domains`, the three
`crosslingual_gaps` and one `drill_down`; prints the median of a few repeats and how many of the
30 slot pairs match the names read off the two ontology files. Then N languages: `language_summary` (both
language matrices and the unaligned lists) on X-RiSAWOZ's four languages, 4 x 4,058 turns (target 2 s).
Run from the project root:

    .venv/bin/python benchmarks/bench_crosslingual.py
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis.crosslingual import (  # noqa: E402
    align_domains,
    align_ontologies,
    crosslingual_gaps,
    drill_down,
    language_summary,
)
from analysis.loading import load_run  # noqa: E402
from analysis.model import RunInfo  # noqa: E402
from analysis.scoring import score_run  # noqa: E402
from tests.test_crosslingual import MULTIWOZ_EN_ZH  # noqa: E402

REALDATA = ROOT.parent / "shared" / "realdata"
TARGET_S = 1.0
LANGUAGES_TARGET_S = 2.0
REPEATS = 5


def timed(label: str, func: Callable[[], object]) -> object:
    times, result = [], None
    for _ in range(REPEATS):
        start = time.perf_counter()
        result = func()
        times.append(time.perf_counter() - start)
    print(f"{label:<32} median {statistics.median(times):.3f} s  (min {min(times):.3f}, max {max(times):.3f})")
    return result


def main() -> int:
    start = time.perf_counter()
    en_path = REALDATA / "multiwoz21" / "test.json.zip"
    zh_path = REALDATA / "multiwoz_zh" / "test.json.zip"
    en = score_run(load_run(en_path, en_path, meta=RunInfo("mwz-en")))
    zh = score_run(load_run(zh_path, zh_path, meta=RunInfo("mwz-zh")))
    print(
        f"load + score both sides           {time.perf_counter() - start:.3f} s ({len(en.turns)} / {len(zh.turns)} turns)"
    )

    timed("align_ontologies", lambda: align_ontologies(en, zh))
    alignment = align_ontologies(en, zh)
    timed("align_domains", lambda: align_domains(alignment))
    for by in ("slot", "domain", "turn_index"):
        timed(f"crosslingual_gaps by={by}", partial(crosslingual_gaps, en, zh, alignment, by=by))
    # Gold against gold: every paired turn is in both_correct, the largest cell there is.
    timed("drill_down both_correct", lambda: drill_down(en, zh, "both_correct"))

    matched = alignment[alignment["slot_b"].notna()]
    pairs = dict(zip(matched["slot_a"], matched["slot_b"], strict=True))
    right = sum(pairs.get(a) == b for a, b in MULTIWOZ_EN_ZH.items())
    print(f"inferred pairs matching the ontologies: {right} / {len(MULTIWOZ_EN_ZH)}; other pairs: {len(pairs) - right}")

    start = time.perf_counter()
    align_ontologies(en, zh)
    elapsed = time.perf_counter() - start
    print(f"align_ontologies {elapsed:.3f} s (target {TARGET_S:.1f} s): {'OK' if elapsed < TARGET_S else 'TOO SLOW'}")

    languages = [
        score_run(
            load_run(REALDATA / "xrisawoz_llm" / f"{lang}.jsonl", meta=RunInfo(f"xrisawoz-{lang}", language=lang))
        )
        for lang in ("zh", "fr", "ko", "enhi")
    ]
    # Fresh runs each repeat would time loading; the metrics' memo is per run, so the first call is the cold one.
    start = time.perf_counter()
    language_summary(languages, pivot="xrisawoz-zh")
    cold = time.perf_counter() - start
    timed("language_summary 4 languages", lambda: language_summary(languages, pivot="xrisawoz-fr"))
    verdict = "OK" if cold < LANGUAGES_TARGET_S else "TOO SLOW"
    print(f"language_summary, 4 X-RiSAWOZ languages, cold {cold:.3f} s (target {LANGUAGES_TARGET_S:.1f} s): {verdict}")
    return 0 if elapsed < TARGET_S and cold < LANGUAGES_TARGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
