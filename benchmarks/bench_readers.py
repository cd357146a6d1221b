"""Benchmark: the readers declared as mappings (issue 38) against the existing fast paths, per turn.

Each file is parsed with `parse_file` (no disk cache, median of 5); printed: the whole parse, its first
step alone (bytes to JSON records, `parse_records`: the same for every reader, and most of the time for
IC-DST logs, whose records carry each turn's ~7 kB prompt), and the reader's own cost per turn (the
difference: the walk into the Collector and the tables):

- the real files of ../shared/realdata/wild (gpt-DST's 50-turn running log, CheckDST's 30-line JSONL), and
  any further files given on the command line (e.g. gpt-DST's 368-turn
  `expts/230418_1649-gpt35_turbo_5p_v2_custom_prompt_0to368/running_log.json`, fetched by hand);
- MultiWOZ-size files made from them (their records repeated under new dialogue ids up to 7,372 turns,
  the test set's size), so that a per-turn cost is not the fixed cost of a small file;
- DSTC10 track 2 task 1's entry and labels (6,588 instances each, real, gzipped: all 19 slots listed on
  every labels instance), beside the existing reader of such a file (DSTC9-shaped MultiWOZ gold);
- for comparison, two existing fast paths on files of the same size: TRADE (`mlcsg`, 7,368 turns, real)
  and our predictions-only JSONL (made from the same gold).

Target (issue 38, requirement 7): each new reader within the per-turn cost of those fast paths' range.
Run from the project root:

    .venv/bin/python benchmarks/bench_readers.py [more running_log.json files ...]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["DST_CACHE_DIR"] = ""  # every parse is a real parse

from analysis.formats import parse_file  # noqa: E402
from analysis.formats.reading import parse_records  # noqa: E402

REALDATA = ROOT.parent / "shared" / "realdata"
WILD = REALDATA / "wild"
MULTIWOZ_TURNS = 7_372
RUNS = 5


def timed(path: Path) -> tuple[str, int, float, float]:
    """(format, turns, median seconds of parsing `path` without any cache, median seconds of its first
    step alone: reading the file into JSON records, the same for every reader)."""
    times, decode, parsed = [], [], None
    for _ in range(RUNS):
        start = time.perf_counter()
        parse_records(path)
        decode.append(time.perf_counter() - start)
        start = time.perf_counter()
        parsed = parse_file(path, use_cache=False)
        times.append(time.perf_counter() - start)
    assert parsed is not None
    return parsed.fmt, len(parsed.turns), statistics.median(times), statistics.median(decode)


def tiled(records: list[dict], key: str, size: int, *, split_turn: bool = False) -> list[dict]:
    """`records` repeated up to `size`, each copy's dialogue ids made new (`<dialogue>x<copy>`); with
    `split_turn`, `key` holds `<dialogue>-<turn>` and the copy number goes into its dialogue part."""
    out: list[dict] = []
    copy = 0
    while len(out) < size:
        for record in records:
            if split_turn:
                dialogue, _, turn = record[key].rpartition("-")
                out.append({**record, key: f"{dialogue}x{copy}-{turn}"})
            else:
                out.append({**record, key: f"{record[key]}x{copy}"})
        copy += 1
    return out[:size]


def main(argv: list[str]) -> int:
    files: list[tuple[str, Path]] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        gptdst = WILD / "gptdst_gpt35_ours_running_log.json"
        checkdst = WILD / "checkdst_PI_example.checkdst_prediction.jsonl"
        if gptdst.exists():
            files.append(("gpt-DST running log (real)", gptdst))
            records = json.loads(gptdst.read_text())
            big = work / "gptdst_7372.json"
            big.write_text(json.dumps(tiled(records, "ID", MULTIWOZ_TURNS)))
            files.append(("gpt-DST running log x MultiWOZ size", big))
        for extra in argv:
            files.append((f"given: {Path(extra).parent.name or extra}", Path(extra)))
        if checkdst.exists():
            files.append(("CheckDST JSONL (real)", checkdst))
            lines = [json.loads(line) for line in checkdst.read_text().splitlines() if line.strip()]
            big = work / "checkdst_7372.jsonl"
            big.write_text(
                "".join(json.dumps(r) + "\n" for r in tiled(lines, "dial_id", MULTIWOZ_TURNS, split_turn=True))
            )
            files.append(("CheckDST JSONL x MultiWOZ size", big))
            # LLM-DST-EVAL parsed turns of the same states (flat, two golds)
            flat = []
            for line in lines:
                dialogue, _, turn = line["dial_id"].rpartition("-")
                gold = _flat(line["gold"])
                flat.append(
                    {
                        "flag": f"{dialogue}.json-{turn}",
                        "predict": _flat(line["pred"]),
                        "ground_truth": gold,
                        "ground_truth_m24": gold,
                    }
                )
            big = work / "llm_dst_eval_7372.json"
            big.write_text(json.dumps(tiled(flat, "flag", MULTIWOZ_TURNS, split_turn=True)))
            files.append(("LLM-DST-EVAL parsed turns x MultiWOZ size", big))
        for name, label in (
            ("dstc10_task1_teamA01_entry0.json.gz", "DSTC10 track 2 entry (real, 6,588 instances)"),
            ("dstc10_task1_test_labels.json.gz", "DSTC10 track 2 labels.json (real)"),
        ):
            if (WILD / name).exists():
                files.append((label, WILD / name))
        every_slot = REALDATA / "dstc9_shaped_gold" / "multiwoz_zh_test.json"
        if every_slot.exists():  # the existing reader of a file that lists every slot of every turn, as DSTC10's do
            files.append(("DSTC9 gold, every slot listed (existing, real)", every_slot))
        trade = REALDATA / "mlcsg" / "all_prediction_TRADE.json"
        if trade.exists():
            files.append(("TRADE (existing fast path, real)", trade))
            document = json.loads(trade.read_text())
            lines_out = [
                json.dumps({"dialogue_id": d, "turn_index": int(t), "pred": _nested(body["pred_bs_ptr"])})
                for d, turns in document.items()
                for t, body in turns.items()
            ]
            ours = work / "ours_pred.jsonl"
            ours.write_text("\n".join(lines_out) + "\n")
            files.append(("our predictions-only JSONL (existing fast path)", ours))
        if not files:
            print("no input: ../shared/realdata is absent and no file was given")
            return 1
        print(f"{'file':<48} {'format':<22} {'turns':>6} {'parse ms':>9} {'JSON ms':>8} {'reader us/turn':>15}")
        for label, path in files:
            fmt, turns, seconds, decode = timed(path)
            reader = (seconds - decode) * 1e6 / max(turns, 1)
            print(f"{label:<48} {fmt:<22} {turns:>6,} {seconds * 1000:>9.1f} {decode * 1000:>8.1f} {reader:>15.1f}")
    return 0


def _flat(text: str) -> dict[str, str]:
    pieces = (piece.strip().split(" ", 2) for piece in text.split(","))
    return {f"{p[0]}-{p[1]}": p[2] for p in pieces if len(p) == 3}


def _nested(triples: list[str]) -> dict[str, dict[str, str]]:
    state: dict[str, dict[str, str]] = {}
    for item in triples:
        domain, slot, value = item.split("-", 2)
        state.setdefault(domain, {})[slot] = value
    return state


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
