"""Benchmark: the full paper report (`python -m analysis report`) of the demo workspace (11 runs, two
cross-lingual mappings, a FewJoint system) and of a 5-run workspace cut from it, PDF + SVG + PNG.

Times cover loading, scoring, the bootstrap intervals (1,000 resamples), rendering every figure in
three formats with one Chromium, the tables and the index. Target: about 60 files for the 5-run
workspace within 30 s. Needs Chromium (`make test` installs it). Run from the project root:

    .venv/bin/python benchmarks/bench_report.py
"""

from __future__ import annotations

import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis.export.figures import ExportUnavailable, check_export  # noqa: E402
from analysis.export.report import build_report  # noqa: E402

DEMO = ROOT / "data" / "demo"
FIVE_RUNS = [
    "simulated-A-mwz-en-predicted",
    "simulated-A-mwz-en-gold",
    "simulated-A-mwz-zh-predicted",
    "simulated-B-mwz-en-predicted-s1",
    "simulated-C-mwz-en-predicted",
]
TARGET_S = 30.0


def five_run_manifest(folder: Path) -> Path:
    """The demo manifest cut to FIVE_RUNS (paths made absolute), its first mapping and the FewJoint system."""
    blocks = re.split(r"\n(?=\[\[)", (DEMO / "workspace.toml").read_text(encoding="utf-8"))
    keep = ['[workspace]\nname = "Five runs"\nconvention = "exact"\nallow_outside_root = true\n']
    for block in blocks:
        name = re.search(r'^name = "([^"]+)"', block, flags=re.M)
        run = block.startswith("[[runs]]") and name is not None and name.group(1) in FIVE_RUNS
        mapping = block.startswith("[[mappings]]") and f'a = "{FIVE_RUNS[0]}"' in block
        if run or mapping or block.startswith("[[fewjoint]]"):
            keep.append(block)
    text = "\n".join(keep)
    text = re.sub(r'"([^"]+\.(?:gz|json|jsonl))"', lambda m: f'"{(DEMO / m.group(1)).as_posix()}"', text)
    path = folder / "workspace.toml"
    path.write_text(text, encoding="utf-8")
    return path


def bench(label: str, manifest: Path, out: Path) -> bool:
    started = time.perf_counter()
    written = build_report(manifest, out, progress=False)
    seconds = time.perf_counter() - started
    n_files = sum(1 for _ in out.iterdir())
    figures = sum(1 for w in written if w.kind == "figure")
    tables = sum(1 for w in written if w.kind == "table")
    ok = seconds <= TARGET_S
    print(
        f"{label:<28} {n_files:>4} files ({figures} figures x 3 formats, {tables} tables x 3, index) "
        f"in {seconds:6.1f} s  ({seconds / n_files * 1000:.0f} ms/file)  {'ok' if ok else 'SLOW'} (target {TARGET_S:.0f} s)"
    )
    return ok


def main() -> int:
    try:
        check_export()
    except ExportUnavailable as exc:
        print(f"skipped: {exc}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "five").mkdir()
        five = bench("5-run workspace", five_run_manifest(folder / "five"), folder / "five-out")
        demo = bench("demo workspace (11 runs)", DEMO / "workspace.toml", folder / "demo-out")
    print("target (5 runs, ~60 files, <= 30 s):", "met" if five else "missed", "| demo:", "ok" if demo else "over")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
