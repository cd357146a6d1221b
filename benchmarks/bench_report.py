"""Benchmark: the full paper report (`python -m analysis report`) of the demo workspace (12 runs, two
cross-lingual mappings, a FewJoint system) and of a 5-run workspace cut from it: PDF + SVG + PNG, the
tables, a LaTeX snippet per figure, main.tex compiled into main.pdf (latexmk with XeLaTeX, or pdflatex)
and the index.

Each phase is timed: Chromium's start (overlapping loading and planning, as in `build_report`), loading, planning (scoring, 1,000-resample bootstrap intervals,
the pairwise comparisons, building the figures), rendering every figure in three formats with one
Chromium, the tables + snippets + main.tex + index, and the LaTeX compile. Target: the demo report
within 30 s. The load average is printed too: other processes on the machine's 2 cores slow every
phase. Needs Chromium (`make test` installs it). Run from the project root:

    .venv/bin/python benchmarks/bench_report.py
"""

from __future__ import annotations

import os
import re
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis.export.figures import ExportUnavailableError, check_export  # noqa: E402
from analysis.export.report import (  # noqa: E402
    CompileError,
    browser_starting,
    compile_main,
    latex_engine,
    plan_report,
    write_report,
)
from analysis.workspace import load_workspace, read_manifest  # noqa: E402

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


def _cpu_seconds() -> tuple[float, float]:
    """CPU seconds (user + system) of this process and of its children that have ended (the browser
    ends with `browser_starting`, LaTeX with its run): wall time on a busy machine says little alone."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def bench(label: str, manifest: Path, out: Path) -> bool:
    """One report, phase by phase (the steps of `build_report`), then the total against the target."""
    phases: dict[str, float] = {}
    started = time.perf_counter()

    def lap(name: str, since: float) -> float:
        now = time.perf_counter()
        phases[name] = now - since
        return now

    load_before = os.getloadavg()[0]
    cpu_before = _cpu_seconds()
    read_manifest(manifest)
    at = time.perf_counter()
    with browser_starting() as ready:  # as build_report: Chromium starts while the runs load and are planned
        at = lap("browser start", at)
        workspace = load_workspace(manifest)
        at = lap("load", at)
        plan = plan_report(workspace)
        at = lap("plan", at)
        ready()
        at = lap("browser wait", at)
        files: list[Path] = []
        render_done: list[float] = []

        def on_file(path: Path) -> None:
            files.append(path)
            if path.suffix in (".pdf", ".svg", ".png"):
                render_done[:] = [time.perf_counter()]

        written = write_report(plan, out, progress=False, on_file=on_file, pdf=False)
        end = time.perf_counter()
        phases["render"] = (render_done[0] if render_done else at) - at
        phases["tables+tex+index"] = end - at - phases["render"]
        at = end
    compiled = None
    if latex_engine() is not None:
        try:
            compiled = compile_main(out)
        except CompileError as exc:
            print(f"{label}: {exc}")
        at = lap("latex", at)
    seconds = time.perf_counter() - started
    n_files = sum(1 for _ in out.iterdir())
    figures = sum(1 for w in written if w.kind == "figure")
    tables = sum(1 for w in written if w.kind == "table")
    ok = seconds <= TARGET_S
    pages = ""
    if compiled is not None:
        pages = f", main.pdf by {compiled.engine}"
    print(
        f"{label:<26} {n_files:>4} files ({figures} figures x 3 formats + snippets, {tables} tables x 3{pages}) "
        f"in {seconds:6.1f} s  {'ok' if ok else 'SLOW'} (target {TARGET_S:.0f} s; load average "
        f"{load_before:.1f} -> {os.getloadavg()[0]:.1f})"
    )
    print("    " + "  ".join(f"{name} {value:.1f} s" for name, value in phases.items()))
    own, children = (after - before for after, before in zip(_cpu_seconds(), cpu_before, strict=True))
    print(
        f"    CPU: this process {own:.1f} s, its children (Chromium, LaTeX) {children:.1f} s: an idle 2-core "
        f"machine needs at least {(own + children) / 2:.1f} s of wall time and at most about {own + children:.1f} s"
    )
    return ok


def main() -> int:
    try:
        check_export()
    except ExportUnavailableError as exc:
        print(f"skipped: {exc}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "five").mkdir()
        five = bench("5-run workspace", five_run_manifest(folder / "five"), folder / "five-out")
        demo = bench("demo workspace", DEMO / "workspace.toml", folder / "demo-out")
    print(
        f"target (demo report <= {TARGET_S:.0f} s):", "met" if demo else "missed", "| 5 runs:", "ok" if five else "over"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
