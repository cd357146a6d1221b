"""Hostile input (issue 14): special files, limits, decompression bombs, encodings, duplicate keys, turn
indices, empty dialogues and the CLI's last resort. Every refusal is one `InputError` line (CLI: exit 2,
one stderr line, no traceback); nothing hangs (FIFOs run under a timeout) or takes memory without bound.
The static cases live in tests/malformed (tests/test_bad_input.py); these need a FIFO, a device, an
environment variable, a 2 GB bomb or a process of their own.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

from analysis.cli import main as cli
from analysis.errors import InputError
from analysis.formats import parse_file
from analysis.formats.engine import Collector
from analysis.formats.reading import LIMITS, parse_records
from analysis.loading import load_run

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "malformed"
PARTNERS = CORPUS / "partners"
TRADE_OK = {"MUL0001.json": {"0": {"turn_belief": ["hotel-area-east"], "pred_bs_ptr": ["hotel-area-east"]}}}
PEAK_LIMIT_KB = int(1.5 * 1024**2)  # 1.5 GB in ru_maxrss units (KiB on Linux)


def _cli(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, **(env or {})}
    cmd = [sys.executable, "-m", "analysis", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False, timeout=timeout, env=environ)


def _one_line(done: subprocess.CompletedProcess[str], *, contains: str) -> str:
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert contains in lines[0], lines[0]
    assert done.stdout == ""
    return lines[0]


def _write(path: Path, data: bytes | str) -> Path:
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


# --- the audit's tracebacks, through real processes -------------------------------------------------


def _audit_files(tmp: Path) -> list[tuple[list[str], str]]:
    line = json.dumps({"dialogue_id": "a", "turn_index": 0, "gold": {}, "pred": {}})
    bigint = _write(tmp / "bigint.json", json.dumps(TRADE_OK).replace("{", '{"n": ' + "9" * 5000 + ",", 1))
    deep = _write(tmp / "deep.jsonl", line + "\n" + "[" * 100_000 + "]" * 100_000 + "\n")
    escape = _write(tmp / "escape.jsonl", line.replace('"a"', '"a\\ud800"') + "\n" + line + "\n")
    raw = _write(tmp / "raw.jsonl", (line + "\n").encode().replace(b'"a"', b'"a\xed\xa0\x80"'))
    numbers = _write(tmp / "numbers.json", "[1, 2, 3]")
    return [
        (["metrics", "--pred", str(bigint)], "more than 4,300 digits"),
        (["metrics", "--pred", str(deep)], "line 2: JSON nested too deeply"),
        (["metrics", "--pred", str(escape)], "lone UTF-16 surrogate \\ud800"),
        (["metrics", "--pred", str(raw)], "not UTF-8 text"),
        (["metrics", "--pred", str(CORPUS / "zip_encrypted.zip")], "is encrypted"),
        (["metrics", "--pred", str(CORPUS / "zip_deflate64.zip")], "Deflate64"),
        (["metrics", "--pred", str(numbers), "--format", "jsonl"], "item 0 of the JSON array is a JSON number"),
        (["reconcile", "--pred", str(deep)], "nested too deeply"),
    ]


@pytest.mark.slow
def test_the_audits_tracebacks_are_one_line_each(tmp_path: Path) -> None:
    for args, contains in _audit_files(tmp_path):
        _one_line(_cli(*args), contains=contains)


# --- special files: refused at once, never read -----------------------------------------------------


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this system")
    path = tmp_path / "run.json"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("command", ["metrics", "reconcile", "fewjoint"])
def test_a_fifo_is_refused_without_waiting_for_a_writer(fifo: Path, command: str) -> None:
    args = ["--gold", str(fifo), "--pred", str(fifo)] if command == "fewjoint" else ["--pred", str(fifo)]
    done = _cli(command, *args, timeout=30)  # a regression hangs: the timeout fails the test instead
    line = _one_line(done, contains="is a named pipe (FIFO): only regular files are read")
    assert line.startswith(str(fifo))


def test_a_fifo_manifest_is_refused_by_report(fifo: Path, tmp_path: Path) -> None:
    _one_line(_cli("report", str(fifo), "--out", str(tmp_path / "out"), timeout=30), contains="named pipe")


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_dev_zero_is_refused_not_read() -> None:
    _one_line(_cli("metrics", "--pred", "/dev/zero", timeout=30), contains="/dev/zero [format: unknown]: is a device")
    with pytest.raises(InputError, match="is a device: only regular files are read"):
        parse_file("/dev/zero", use_cache=False)


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a directory, not a file"):
        parse_file(tmp_path, use_cache=False)


# --- limits: defaults, environment variables, and memory on a bomb ----------------------------------


def _gzip_bomb(path: Path, unpacked: int = 2 * 1024**3) -> Path:
    """About 1.9 MB of gzip that unpacks to 2 GB of spaces inside a JSON object (one member, repeated)."""
    block = 16 * 1024**2
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    member = packer.compress(b" " * block) + packer.flush()
    with path.open("wb") as out:
        out.write(gzip.compress(b"{", mtime=0))
        for _ in range(unpacked // block):
            out.write(member)
        out.write(gzip.compress(b"}", mtime=0))
    return path


def _peak_rss_kb(args: list[str], env: dict[str, str]) -> tuple[int, subprocess.CompletedProcess[str]]:
    """Run the CLI as the only child of a fresh interpreter, which reports its children's peak RSS."""
    probe = (
        "import json, resource, subprocess, sys\n"
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "print(json.dumps({'peak': peak, 'code': done.returncode, 'out': done.stdout, 'err': done.stderr}))\n"
    )
    cmd = [sys.executable, "-c", probe, sys.executable, "-m", "analysis", *args]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True, timeout=300, env=env)
    report = json.loads(done.stdout)
    return report["peak"], subprocess.CompletedProcess(args, report["code"], report["out"], report["err"])


@pytest.mark.parametrize(
    ("settings", "contains"),
    [
        ({}, "unpacks more than 200 times its packed size"),
        ({"DST_MAX_RATIO": "100000"}, "unpacked is larger than the limit of 64 MiB (DST_MAX_BYTES"),
    ],
    ids=["ratio", "unpacked-size"],
)
def test_a_gzip_bomb_is_refused_within_bounded_memory(tmp_path: Path, settings: dict[str, str], contains: str) -> None:
    bomb = _gzip_bomb(tmp_path / "bomb.json.gz")
    assert bomb.stat().st_size < 2.5 * 1024**2
    env = {k: v for k, v in os.environ.items() if not k.startswith("DST_")} | settings
    peak, done = _peak_rss_kb(["metrics", "--pred", str(bomb)], env)
    _one_line(done, contains=contains)
    assert peak <= PEAK_LIMIT_KB, f"peak RSS {peak / 1024:.0f} MB"
    print(f"peak RSS on the refused bomb ({'+'.join(settings) or 'defaults'}): {peak / 1024:.0f} MB")


def test_every_limit_has_a_documented_environment_variable() -> None:
    """Documented where the README sends a reader for input limits (docs/formats.md)."""
    docs = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    limits = docs.split("\n## Bad input and input limits\n", 1)[1].split("\n## ", 1)[0]
    for spec in LIMITS:
        assert spec.env in limits, spec.env


@pytest.mark.parametrize(
    ("env", "value", "contains"),
    [
        ("DST_MAX_FILE_BYTES", "100", "file is larger than the limit of 100 bytes (DST_MAX_FILE_BYTES"),
        ("DST_MAX_DEPTH", "3", "JSON nested too deeply: more than 3 levels (DST_MAX_DEPTH"),
        ("DST_MAX_BYTES", "abc", "environment variable DST_MAX_BYTES='abc' must be a positive integer"),
        ("DST_MAX_DEPTH", "0", "DST_MAX_DEPTH='0' must be a positive integer"),
    ],
)
def test_limits_follow_their_environment_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: str, value: str, contains: str
) -> None:
    path = _write(tmp_path / "run.json", json.dumps(TRADE_OK, indent=1))
    parse_file(path, use_cache=False)  # fine under the defaults
    monkeypatch.setenv(env, value)
    with pytest.raises(InputError) as caught:
        parse_file(path, use_cache=False)
    assert contains in str(caught.value)


def test_unpacked_size_limit_applies_to_gzip_zip_and_uploads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = json.dumps(TRADE_OK).encode() + b" " * 5000
    packed = _write(tmp_path / "run.json.gz", gzip.compress(text, mtime=0))
    monkeypatch.setenv("DST_MAX_BYTES", "4096")
    with pytest.raises(
        InputError, match=r"gzip archive unpacked is larger than the limit of 4,096 bytes \(DST_MAX_BYTES"
    ):
        parse_file(packed, use_cache=False)
    monkeypatch.setenv("DST_MAX_FILE_BYTES", "1000")
    with pytest.raises(InputError, match="file is larger than the limit of 1,000 bytes"):
        load_run(tmp_path / "upload.json", pred_data=text)


def test_depth_within_the_limit_and_brackets_inside_strings_are_fine(tmp_path: Path) -> None:
    tricky = 'a\\"[[[{{{: \\\\'
    data = {"MUL0001.json": {"0": {"turn_belief": [f"hotel-name-{tricky}"], "pred_bs_ptr": [], "x": [[[[[[1]]]]]]}}}
    parsed = parse_file(_write(tmp_path / "run.json", json.dumps(data)), use_cache=False)
    assert parsed.gold is not None and parsed.gold["value"].tolist() == [tricky]


# --- duplicate keys, turn indices, empty dialogues ---------------------------------------------------


def test_a_duplicate_dialogue_or_turn_key_is_an_error_naming_it(tmp_path: Path) -> None:
    one = '"MUL0001.json": {"0": {"turn_belief": [], "pred_bs_ptr": []}}'
    dialogues = _write(tmp_path / "d.json", "{" + one + ", " + one + "}")
    with pytest.raises(InputError, match=r"duplicate top-level key 'MUL0001\.json'"):
        parse_file(dialogues, use_cache=False)
    turn = '"1": {"turn_belief": [], "pred_bs_ptr": []}'
    turns = _write(
        tmp_path / "t.json",
        '{"MUL0001.json": {"0": {"turn_belief": [], "pred_bs_ptr": []}, ' + turn + ", " + turn + "}}",
    )
    with pytest.raises(InputError) as caught:
        parse_file(turns, use_cache=False)
    assert "duplicate key '1' in one object" in str(caught.value) and caught.value.dialogue_id == "MUL0001.json"


def test_a_duplicate_key_at_any_depth_is_an_error_naming_where(tmp_path: Path) -> None:
    # A slot of a state, a turn of a nested format: json keeps the last one silently, so it is refused too.
    with pytest.raises(InputError) as caught:
        parse_records(_write(tmp_path / "deep.json", '{"a": {"b": {"c": 1, "c": 2}}}'))
    assert "duplicate key 'c' in one object (in the object at /a/b)" in str(caught.value)
    assert caught.value.dialogue_id == "a"
    line = '{"dialogue_id": "d1", "turn_index": 0, "gold": {"hotel": {"area": "east"}}, "pred": {}}'
    jsonl = _write(tmp_path / "deep.jsonl", line + "\n" + line.replace('"east"}', '"east", "area": "west"}') + "\n")
    with pytest.raises(InputError, match=r"line 2 has the key 'area' twice \(in the object at /gold/hotel\)"):
        parse_records(jsonl)
    # Keys that only look alike, or colons inside strings, are not duplicates.
    container, records = parse_records(_write(tmp_path / "ok.json", '{"a": {"b": {"c": 1, "C": 2, "x:y": "p:q\\":"}}}'))
    assert (container, records) == ("json", {"a": {"b": {"c": 1, "C": 2, "x:y": 'p:q":'}}})


SAMPLE = {"dialogue_id": "MUL0001.json", "utt_idx": 0, "speaker": "user", "utterance": "hi", "state": {"hotel": {}}}
DIALOGUE = {"dialogue_id": "multiwoz21-test-0", "turns": [{"speaker": "user", "utt_idx": 0, "state": {"hotel": {}}}]}


@pytest.mark.parametrize(
    ("records", "inside", "twice", "dialogue_id"),
    [
        ({**SAMPLE, "predictions": {"state": {"hotel": {"area": "east"}}}}, '"area": "east"', "area", "MUL0001.json"),
        (DIALOGUE, '"state": {"hotel": {}', "hotel", "multiwoz21-test-0"),
    ],
    ids=["convlab3-sample-slot", "convlab3-dialogue-domain"],
)
def test_convlab3_duplicates_deep_in_a_state_are_refused(
    tmp_path: Path, records: dict[str, Any], inside: str, twice: str, dialogue_id: str
) -> None:
    text = json.dumps([records])
    assert inside in text
    value = '"east"' if twice == "area" else "{}"
    path = _write(tmp_path / "cl3.json", text.replace(inside, f'{inside}, "{twice}": {value}', 1))
    with pytest.raises(InputError) as caught:
        parse_file(path, use_cache=False)
    assert f"item 0 of the array has the key {twice!r} twice (in the object at /0/" in str(caught.value)
    assert caught.value.dialogue_id == dialogue_id and "\n" not in str(caught.value)


@pytest.mark.parametrize(("raw", "index"), [(0, 0), (7, 7), ("0", 0), ("12", 12), ("01", 1)])
def test_turn_indices_in_plain_decimal_are_read(raw: Any, index: int) -> None:
    assert Collector("f.json", "trade", sides=("gold",)).turn_index(raw) == index


@pytest.mark.parametrize(
    "raw", [" 1", "1 ", "+1", "1_0", "\u0661", "\uff11", "1.0", "0x1", "", True, 1.5, None, "-1", -1]
)
def test_other_turn_indices_are_refused(raw: Any) -> None:
    with pytest.raises(InputError, match="turn index"):
        Collector("f.json", "trade", sides=("gold",)).turn_index(raw)


def test_dialogues_without_turns_are_counted_not_dropped(tmp_path: Path) -> None:
    data = {**TRADE_OK, "MUL0002.json": {}, "MUL0003.json": {}}
    run = load_run(_write(tmp_path / "run.json", json.dumps(data)))
    assert run.alignment.notes["dialogues_without_turns"] == 2
    assert "dialogues without turns: 2" in run.alignment.warnings()
    pred = _write(tmp_path / "pred.json", json.dumps({"mul0001": [{"state": {}}, {"state": {}}], "mul9999": []}))
    paired = load_run(pred, PARTNERS / "ok_multiwoz_gold.json")
    assert paired.alignment.notes["predicted_dialogues_without_turns"] == 1
    assert "gold_dialogues_without_turns" not in paired.alignment.notes


def test_reconcile_of_an_all_empty_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"dialogue_id": f"d{d}", "turn_index": t, "gold": {}, "pred": {}} for d in range(2) for t in range(2)]
    path = _write(tmp_path / "empty.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    assert cli.main(["reconcile", "--pred", str(path), "--conventions", "trade,exact,mwzeval", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["n_turns"] == 4
    assert all(entry["count"] == 0 for entry in result["flips"].values())


# --- the CLI's last resort ---------------------------------------------------------------------------


def _broken(args: Any) -> int:
    raise RuntimeError(f"something no check foresaw in {cli.__file__}")


@pytest.fixture
def broken_metrics(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "_metrics", _broken)
    for name in ("DST_DEBUG", "DST_LOG"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.usefixtures("broken_metrics")
def test_an_unforeseen_error_is_one_line_without_code_paths(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["metrics", "--pred", "x.json"]) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert "RuntimeError: something no check foresaw" in err and "DST_DEBUG=1" in err
    assert str(ROOT) not in err and "cli.py" not in err, err


@pytest.mark.usefixtures("broken_metrics")
def test_dst_debug_prints_and_dst_log_keeps_the_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DST_DEBUG", "1")
    assert cli.main(["metrics", "--pred", "x.json"]) == cli.EXIT_BAD_INPUT
    assert "Traceback (most recent call last)" in capsys.readouterr().err
    monkeypatch.delenv("DST_DEBUG")
    log = tmp_path / "dst.log"
    monkeypatch.setenv("DST_LOG", str(log))
    assert cli.main(["metrics", "--pred", "x.json"]) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"traceback in {log}" in err
    assert "Traceback (most recent call last)" in log.read_text(encoding="utf-8")


def test_a_huge_dialogue_id_gives_a_short_message(tmp_path):
    """A 2,000,000-character dialogue id: one message line of bounded length, its start and size shown."""
    from analysis.errors import RECORD_CHARS

    pred = tmp_path / "long_id.jsonl"
    pred.write_text(json.dumps({"dialogue_id": "x" * 2_000_000, "turn_index": 0, "pred": {}}) + "\n")
    gold = ROOT / "data" / "demo" / "multiwoz21" / "test_subset.json.gz"
    with pytest.raises(InputError) as error:
        load_run(pred, gold)
    message = str(error.value)
    assert len(message) < 1_000 and "\n" not in message
    assert "'" + "x" * (RECORD_CHARS - 1) + "… (2,000,002 characters)" in message  # the repr, quote included
