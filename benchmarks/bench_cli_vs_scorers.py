"""`metrics` on a MultiWOZ-size file against the community's own scorers, whole processes side by side
(issue 43, requirement 4): ours at most 0.4x mwzeval's time and at most 2x ConvLab-3's.

Measured in one run of this script, interleaved (ours, theirs, ours, theirs, ...), `--runs` times each
(default 5), median wall seconds and median CPU seconds (user + system: steadier than wall on a shared
machine) from `/usr/bin/time`, with the load average before and after:

1. mwzeval (Tomiinek/MultiWOZ_Evaluation, DST only: `Evaluator(bleu=False, success=False, richness=False,
   dst=True).evaluate(...)`, its `evaluate.py` has no DST switch) on `../shared/realdata/mwzeval_outputs/
   augpt.json`: the whole process (imports, its gold states, its normalisation, its fuzzy matching),
   against `python -m analysis metrics --pred augpt.json --gold multiwoz21/test.json.zip` (its own
   convention, mwzeval's).
2. ConvLab-3's `convlab/dst/evaluate_unified_datasets.py -p FILE` on the AuGPT predictions in ConvLab-3's
   unified format (`../shared/realdata/scorer_oracles/convlab3_augpt_predictions.json.gz`, decompressed
   to a temporary file: their script reads plain JSON), against `python -m analysis metrics --pred` on
   the same file; then, beside their script again, a process that only imports pandas: the floor of any
   `metrics` on this stack.

Before anything is timed, each side's own modules are compiled to bytecode (`compile_sources`): where
`PYTHONDONTWRITEBYTECODE` is set, a checkout's modules would otherwise be compiled again at every run.

Ours runs with the disk parse cache off (`DST_CACHE_DIR=""`): every run parses its files. Against mwzeval,
also with only the gold file's parse cached (a copy of a cache folder holding nothing else, per run): mwzeval
reads gold states it prepared once (`mwzeval/data/gold_states.json`) and parses only the predictions.

Neither scorer is part of this project. Give their places (or skip, with a message saying what is absent):

    MWZEVAL_DIR=scorers/MultiWOZ_Evaluation     a checkout (the folder holding `mwzeval/`)
    CONVLAB3_EVALUATE=scorers/evaluate_unified_datasets.py
    SCORER_PYTHON=scorers/venv/bin/python       a Python with mwzeval's requirements (fuzzywuzzy,
                                                python-Levenshtein, sacrebleu, sacremoses, lexical-diversity);
                                                never the project's venv

or the same as `--mwzeval`, `--convlab3`, `--scorer-python`. mwzeval builds its gold states by downloading
MultiWOZ 2.2; offline, when `mwzeval/data/gold_states.json` is absent from the checkout, this script
writes it there from `../shared/realdata/multiwoz21/test.json.zip` the way `scorer_oracles/README.md`
says those oracle numbers were made (`dontcare` dropped, the first of several values, booking slots
named `bookday`, `bookpeople`, `bookstay`, `booktime`, then mwzeval's own `normalize_data`).

    .venv/bin/python benchmarks/bench_cli_vs_scorers.py [--runs 5]
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REALDATA = ROOT.parent / "shared" / "realdata"
MWZ_PRED = REALDATA / "mwzeval_outputs" / "augpt.json"
MWZ_GOLD = REALDATA / "multiwoz21" / "test.json.zip"
CONVLAB3_PRED = REALDATA / "scorer_oracles" / "convlab3_augpt_predictions.json.gz"
MWZEVAL_RATIO = 0.4  # ours at most this times mwzeval's whole process
CONVLAB3_RATIO = 2.0  # ours at most this times ConvLab-3's

# mwzeval's DST evaluation as a whole process (its evaluate.py offers BLEU, success and richness only).
MWZEVAL_DRIVER = """\
import json, sys
from mwzeval.metrics import Evaluator
with open(sys.argv[1]) as handle:
    data = json.load(handle)
print(Evaluator(bleu=False, success=False, richness=False, dst=True).evaluate(data)["dst"])
"""

# Gold states for mwzeval from MultiWOZ 2.1's test file (scorer_oracles/README.md), normalised by mwzeval.
GOLD_STATES_WRITER = """\
import json, sys, zipfile
from mwzeval.normalization import normalize_data
archive = zipfile.ZipFile(sys.argv[1])
dialogues = json.loads(archive.read(archive.namelist()[0]))
data = {}
for name, dialogue in dialogues.items():
    turns = []
    for i, entry in enumerate(dialogue["log"]):
        if i % 2 == 0:
            continue
        state = {}
        for domain, parts in entry["metadata"].items():
            slots = {}
            for slot, value in parts.get("semi", {}).items():
                slots[slot] = value
            for slot, value in parts.get("book", {}).items():
                if slot != "booked":
                    slots["book" + slot] = value
            kept = {}
            for slot, value in slots.items():
                value = value[0] if isinstance(value, list) and value else value
                if isinstance(value, str) and value not in ("", "not mentioned", "none", "dontcare"):
                    kept[slot] = value
            if kept:
                state[domain] = kept
        turns.append({"response": "", "state": state})
    data[name.split(".")[0].lower()] = turns
normalize_data(data)
states = {name: [turn["state"] for turn in turns] for name, turns in data.items()}
with open(sys.argv[2], "w") as handle:
    json.dump(states, handle)
"""


def compile_sources(python: str, folder: Path) -> None:
    """Each side's own modules compiled to bytecode before anything is timed, as an installed package or any
    second run has them: where `PYTHONDONTWRITEBYTECODE` is set (as on the machines this project is built
    on), nothing run from a checkout is ever cached, and every run would compile its sources again (about
    0.1 s of ours, less of mwzeval's). `compileall` writes them whatever that variable says."""
    done = subprocess.run([python, "-m", "compileall", "-q", str(folder)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"could not compile {folder}: {done.stderr.strip()[-800:]}")


def interpreter(python: str) -> str:
    """The base interpreter a Python (or venv) runs on, and its version: builds of one version differ in
    speed (a PGO/LTO static build against a plain shared one: ~0.1 s of imports, 5-20% of pure Python), so
    a fair comparison runs both sides on the same one."""
    code = "import sys; print(sys._base_executable if hasattr(sys, '_base_executable') else sys.executable, sys.version.split()[0])"
    done = subprocess.run([python, "-c", code], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else f"{python} (did not run: {done.stderr.strip()[-200:]})"


def timed(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one run of `command`, from /usr/bin/time."""
    with tempfile.NamedTemporaryFile(suffix=".time") as out:
        done = subprocess.run(
            ["/usr/bin/time", "-f", "%e %U %S", "-o", out.name, *command],
            cwd=cwd,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed: {done.stderr.strip()[-800:]}")
        wall, user, system = map(float, Path(out.name).read_text().split()[-3:])
    return wall, user + system


def side_by_side(
    ours: list[str],
    theirs: list[str],
    runs: int,
    our_env: Callable[[], dict[str, str]],
    their_env: dict[str, str],
    their_cwd: Path,
) -> dict[str, list[tuple[float, float]]]:
    """Each command `runs` times, interleaved (after one untimed run of each: the files in the page cache);
    `our_env()` gives the environment of each of our runs."""
    timed(ours, our_env(), ROOT)
    timed(theirs, their_env, their_cwd)
    found: dict[str, list[tuple[float, float]]] = {"ours": [], "theirs": []}
    for _ in range(runs):
        found["ours"].append(timed(ours, our_env(), ROOT))
        found["theirs"].append(timed(theirs, their_env, their_cwd))
    return found


class GoldCached:
    """Environments for our runs with the gold file's parse cached and no run stored: each run gets a copy
    (made before it starts, not timed) of a cache folder that holds only the gold file's parsed tables and
    the scoring modules' names (as any used cache folder does), so the prediction file is parsed and the
    run scored every time, as mwzeval reads its prepared `gold_states.json` and parses the predictions
    every time."""

    def __init__(self, gold: Path) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="bench-gold-cache-"))
        self.warm = self.folder / "warm"
        self.warm.mkdir()
        # The gold file parsed, and the names of the scoring modules read once (the store key's scorer
        # version: `entries._scorer_modules_remembered`, which any cache folder keeps after its first use).
        code = (
            f"from analysis.formats import parse_file; parse_file({str(gold)!r}); "
            "from analysis.store.entries import scorer_version; scorer_version()"
        )
        env = {**os.environ, "DST_CACHE_DIR": str(self.warm)}
        subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True)
        self.n = 0

    def __call__(self) -> dict[str, str]:
        self.n += 1
        fresh = self.folder / f"run-{self.n}"
        shutil.copytree(self.warm, fresh)
        return {**os.environ, "DST_CACHE_DIR": str(fresh)}

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def report(name: str, found: dict[str, list[tuple[float, float]]], ratio: float) -> bool:
    ours = statistics.median(w for w, _ in found["ours"])
    theirs = statistics.median(w for w, _ in found["theirs"])
    ours_cpu = statistics.median(c for _, c in found["ours"])
    theirs_cpu = statistics.median(c for _, c in found["theirs"])
    met = ours <= ratio * theirs
    print(
        f"   ours {ours:.2f} s (CPU {ours_cpu:.2f} s), {name} {theirs:.2f} s (CPU {theirs_cpu:.2f} s): "
        f"{ours / theirs:.2f}x wall, {ours_cpu / theirs_cpu:.2f}x CPU; target at most {ratio}x: "
        f"{'met' if met else 'MISSED'}"
    )
    print(f"   runs (wall, CPU): ours {found['ours']}, {name} {found['theirs']}")
    return met


def floor(importing: list[str], theirs: list[str], runs: int, their_cwd: Path) -> None:
    """The floor of any `metrics` on this stack beside ConvLab-3's whole process: a Python process that only
    imports pandas (every metric is computed with it), timed interleaved with their script."""
    found = side_by_side(importing, theirs, runs, lambda: dict(os.environ), dict(os.environ), their_cwd)
    ours = statistics.median(w for w, _ in found["ours"])
    theirs_wall = statistics.median(w for w, _ in found["theirs"])
    print(
        f'   the floor, `python -c "import pandas"` alone: {ours:.2f} s, {ours / theirs_wall:.2f}x ConvLab-3\'s '
        f"{theirs_wall:.2f} s (the target, {CONVLAB3_RATIO}x, is {CONVLAB3_RATIO * theirs_wall:.2f} s for the whole "
        "of `metrics`)"
    )


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def mwzeval_gold(checkout: Path, python: str) -> Path:
    """mwzeval's gold states file in the checkout, written from MultiWOZ 2.1 when absent."""
    target = checkout / "mwzeval" / "data" / "gold_states.json"
    if not target.exists():
        print(f"   writing mwzeval's gold states from {MWZ_GOLD.name} into {target} (offline, see the docstring)")
        done = subprocess.run(
            [python, "-c", GOLD_STATES_WRITER, str(MWZ_GOLD), str(target)], cwd=checkout, capture_output=True, text=True
        )
        if done.returncode != 0:
            raise SystemExit(f"could not write mwzeval's gold states: {done.stderr.strip()[-800:]}")
    return target


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--mwzeval", type=Path, default=os.environ.get("MWZEVAL_DIR"))
    parser.add_argument("--convlab3", type=Path, default=os.environ.get("CONVLAB3_EVALUATE"))
    parser.add_argument("--scorer-python", default=os.environ.get("SCORER_PYTHON"))
    args = parser.parse_args()
    if not MWZ_PRED.exists() or not CONVLAB3_PRED.exists():
        print(f"skipped: the real data ({REALDATA}) is absent")
        return 0
    our_env = {**os.environ, "DST_CACHE_DIR": ""}
    python = args.scorer_python
    outcome = []
    print(f"load average before: {load()}")
    compile_sources(sys.executable, ROOT / "analysis")
    ours_on, theirs_on = interpreter(sys.executable), interpreter(python or "python3")
    print(f"   interpreters: ours {ours_on}; the scorers' {theirs_on}")
    if ours_on.split()[0] != theirs_on.split()[0]:
        print("   ! the two sides run on different interpreter builds: build SCORER_PYTHON's venv on ours")
    print(
        "   both sides' modules compiled to bytecode first (PYTHONDONTWRITEBYTECODE is "
        f"{'set' if os.environ.get('PYTHONDONTWRITEBYTECODE') else 'not set'} here)"
    )
    if args.mwzeval is None or not (args.mwzeval / "mwzeval").is_dir() or python is None:
        print("1. mwzeval: skipped (give MWZEVAL_DIR, a checkout holding mwzeval/, and SCORER_PYTHON)")
    else:
        mwzeval_gold(args.mwzeval, python)
        compile_sources(python, args.mwzeval / "mwzeval")
        with tempfile.TemporaryDirectory() as tmp:
            driver = Path(tmp) / "mwzeval_dst.py"
            driver.write_text(MWZEVAL_DRIVER, encoding="utf-8")
            ours = [sys.executable, "-m", "analysis", "metrics", "--pred", str(MWZ_PRED), "--gold", str(MWZ_GOLD)]
            theirs = [python, str(driver), str(MWZ_PRED)]
            their_env = {**os.environ, "PYTHONPATH": str(args.mwzeval)}
            print(
                f"1. {MWZ_PRED.name} (7,372 turns): `metrics` against mwzeval's DST evaluation, {args.runs} runs each"
            )
            print("   a. ours with no parse cache at all (both files parsed every run)")
            found = side_by_side(ours, theirs, args.runs, lambda: our_env, their_env, args.mwzeval)
            outcome.append(report("mwzeval", found, MWZEVAL_RATIO))
            print("   b. ours with the gold file's parse cached (as mwzeval's gold_states.json), the prediction parsed")
            gold_cached = GoldCached(MWZ_GOLD)
            try:
                found = side_by_side(ours, theirs, args.runs, gold_cached, their_env, args.mwzeval)
            finally:
                gold_cached.close()
            outcome.append(report("mwzeval", found, MWZEVAL_RATIO))
    if args.convlab3 is None or not args.convlab3.exists():
        print("2. ConvLab-3: skipped (give CONVLAB3_EVALUATE, the path of its evaluate_unified_datasets.py)")
    else:
        tmp = Path(tempfile.mkdtemp(prefix="bench-convlab3-"))
        try:
            plain = tmp / "convlab3_augpt_predictions.json"
            with gzip.open(CONVLAB3_PRED, "rb") as source, plain.open("wb") as target:
                shutil.copyfileobj(source, target)
            ours = [sys.executable, "-m", "analysis", "metrics", "--pred", str(plain)]
            theirs = [python or "python3", str(args.convlab3), "-p", str(plain)]
            print(f"2. {plain.name} (7,372 samples): `metrics` against ConvLab-3's script, {args.runs} runs each")
            found = side_by_side(ours, theirs, args.runs, lambda: our_env, dict(os.environ), tmp)
            outcome.append(report("ConvLab-3", found, CONVLAB3_RATIO))
            floor([sys.executable, "-c", "import pandas"], theirs, args.runs, tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"load average after: {load()} (2 cores, shared: wall times on a loaded machine say little)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
