"""Every parse of user-provided text runs in linear time: pathological inputs at each reader's size limit.

A backtracking pattern is quadratic (or worse) on the right input, and one such input on a shared server
stalls every session (issue 40: `-` and 20,000 spaces took 10.6 s in the LLM-text reader; 4,300-digit
numbers made the long-number search take 44 s on 1.7 MB). Each case is timed at a quarter of its size and
at its size: a linear reader takes about 4 times as long, a quadratic one 16 times and seconds in all. The
bound is generous (8 times, or one second whichever is larger), a test of complexity, not of speed: a
loaded machine slows both sizes alike.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from analysis.errors import InputError
from analysis.escaping import markdown_text, plotly_text
from analysis.formats.llm_text import read_text
from analysis.formats.more import MAX_TEXT_CHARS, parse_generation
from analysis.formats.reading import parse_records, preflight
from analysis.formats.states import MAX_VALUE_CHARS, StateError, parse_span
from analysis.sgd_rules import fuzzy_key
from analysis.views.overview import dataset_version

FLOOR_S = 1.0  # below this, timings are noise (and nothing quadratic at these sizes stays under it)
RATIO = 8.0  # linear: ~4; quadratic: ~16


TRIES = 3  # a pair over the bound is measured again, up to this many times in all; the best of each counts


def _seconds(run: Callable[[], object]) -> float:
    # CPU time of this thread: neither other processes nor a thread an earlier test left in this worker count
    start = time.thread_time()
    with contextlib.suppress(InputError, StateError):  # refusing the input is fine; refusing it slowly is not
        run()
    return time.thread_time() - start


def _linear(make: Callable[[int], Callable[[], object]], size: int) -> None:
    """Within the bound at the first try or the best of `TRIES`: a pause of the thread (the interpreter's
    garbage collector, a page fault storm on a loaded machine) lengthens one timing; quadratic time, all."""
    small, large = make(size // 4), make(size)
    quarter, full = _seconds(small), _seconds(large)
    for _ in range(TRIES - 1):
        if full <= max(RATIO * quarter, FLOOR_S):
            break
        quarter, full = min(quarter, _seconds(small)), min(full, _seconds(large))
    assert full <= max(RATIO * quarter, FLOOR_S), f"size {size // 4}: {quarter:.3f} s, size {size}: {full:.3f} s"


# Texts an LLM tracker's output may hold, each of `n` characters: runs the old patterns backtracked on.
LLM_TEXTS: dict[str, Callable[[int], str]] = {
    "dash then spaces": lambda n: "-" + " " * (n - 1),
    "bullet, dash then spaces": lambda n: "- a-" + " " * (n - 5) + "b",
    "name, dash, spaces, equals": lambda n: "hotel-" + " " * (n - 12) + "area=x",
    "assignment then spaces and a dash": lambda n: "hotel-area = " + " " * (n - 14) + "-",
    "many dashes": lambda n: "-" * n,
    "dash space pairs": lambda n: "- " * (n // 2),
    "open parentheses": lambda n: "(" * n,
    "groups without closing": lambda n: "(a-b = c, " * (n // 10),
    "many assignments": lambda n: ", ".join(["hotel-area = east"] * (n // 19)),
    "many lines": lambda n: "\n".join(["- hotel-area: east"] * (n // 19)),
    "commas": lambda n: "a-b = " + "," * (n - 6),
    "colons and equals": lambda n: ":=" * (n // 2),
    "SQL conditions": lambda n: "hotel WHERE " + " AND ".join(["area = 'e'"] * (n // 16)),
    "braces": lambda n: "{" * (n // 2) + "}" * (n // 2),
    "fences": lambda n: "```" * (n // 3),
    "header then names": lambda n: "Changed domain-slots: " + ", ".join(["a-b"] * (n // 5)),
    "linearised": lambda n: ", ".join(["hotel area east"] * (n // 17)),
}


@pytest.mark.parametrize("shape", list(LLM_TEXTS))
def test_llm_text_is_read_in_linear_time_up_to_its_limit(shape: str) -> None:
    make = LLM_TEXTS[shape]
    _linear(lambda n: lambda: read_text(make(n)), MAX_TEXT_CHARS)
    _linear(lambda n: lambda: parse_generation(make(n)), MAX_TEXT_CHARS)


def _numbers_file(tmp_path: Path, jsonl: bool) -> Callable[[int], Callable[[], object]]:
    """Files of numbers of the longest length Python converts, then one digit too long: the reader refuses
    the last one, and looks for it in the text first."""
    digits = sys.get_int_max_str_digits()

    def make(n: int) -> Callable[[], object]:
        count = max(n // (digits + 1), 1)
        numbers = ["9" * digits] * count + ["9" * (digits + 1)]
        path = tmp_path / (f"numbers_{n}.jsonl" if jsonl else f"numbers_{n}.json")
        if jsonl:
            path.write_text(
                "\n".join(json.dumps({"n": int(s) if len(s) <= digits else 0}) for s in numbers[:-1]) + "\n"
            )
            with path.open("a") as handle:
                handle.write('{"n": ' + numbers[-1] + "}\n")
        else:
            path.write_text("[" + ",".join(numbers) + "]")
        return lambda: parse_records(path)

    return make


@pytest.mark.parametrize("jsonl", [False, True], ids=["json", "jsonl"])
def test_a_number_too_long_is_found_in_linear_time(tmp_path: Path, jsonl: bool) -> None:
    sys.set_int_max_str_digits(sys.get_int_max_str_digits())  # the default in force, whatever a test set
    make = _numbers_file(tmp_path, jsonl)
    with pytest.raises(InputError, match="digits, too long to read"):
        make(20_000)()
    _linear(make, 2_000_000)


def test_preflight_finds_a_long_number_in_linear_time(tmp_path: Path) -> None:
    digits = sys.get_int_max_str_digits()

    def make(n: int) -> Callable[[], object]:
        path = tmp_path / f"episodes_{n}.json"
        path.write_text('{"x": [' + ",".join(["9" * digits] * max(n // (digits + 1), 1) + ["9" * (digits + 1)]) + "]}")
        return lambda: preflight(path)

    with pytest.raises(InputError, match="digits, too long to read"):
        make(20_000)()
    _linear(make, 2_000_000)


# Lines of CSV, JSON and JSONL files a reader must get through: long runs of what separates things.
FILE_TEXTS: dict[str, Callable[[int], str]] = {
    "csv quotes": lambda n: (
        'dialogue_id,turn_index,side,domain,slot,value\nd,0,gold,hotel,area,"' + '""' * (n // 2) + '"\n'
    ),
    "csv commas": lambda n: "dialogue_id,turn_index,side,domain,slot,value\nd,0,gold,hotel,area," + "," * n + "\n",
    "csv spaces": lambda n: "dialogue_id,turn_index,side,domain,slot,value\nd,0,gold,hotel,area, " + " " * n + "-\n",
    "json spaces between objects": lambda n: "[{}" + " " * n + ",{}]",
    "json brace comma runs": lambda n: "[" + "{}," * (n // 3) + "{}]",
    "jsonl object boundaries": lambda n: "\n".join(['{"a": "}, {"}'] * (n // 14)) + "\n",
    "jsonl escapes": lambda n: '{"a": "' + "\\\\" * (n // 2) + '"}\n{"b": 1}\n',
    "jsonl surrogate escapes": lambda n: '{"a": "' + "\\ud800" * (n // 6) + '"}\n{"b": 1}\n',
}


@pytest.mark.parametrize("shape", list(FILE_TEXTS))
def test_file_readers_are_linear_on_pathological_lines(tmp_path: Path, shape: str) -> None:
    suffix = ".csv" if shape.startswith("csv") else ".jsonl" if shape.startswith("jsonl") else ".json"

    def make(n: int) -> Callable[[], object]:
        path = tmp_path / f"{n}{suffix}"
        path.write_text(FILE_TEXTS[shape](n), encoding="utf-8")
        return lambda: parse_records(path)

    _linear(make, 4_000_000)


# Names and values the dashboard and the scorers take apart, at the longest a reader lets through.
VALUE_TEXTS: dict[str, tuple[Callable[[str], object], Callable[[int], str], int]] = {
    "dataset name, spaces": (dataset_version, lambda n: "a" + " " * (n - 2) + "b", 200_000),
    "dataset name, separators before a digit": (dataset_version, lambda n: "a" + "_- " * (n // 3) + "x", 200_000),
    "dataset name, dotted digits": (dataset_version, lambda n: "a" + "1." * (n // 2) + "x", 200_000),
    "dataset name, digits": (dataset_version, lambda n: "a" + "1" * (n - 2) + "x", 200_000),
    "span state, open quote": (
        lambda t: parse_span(t, "pred"),
        lambda n: '( hotel ) area equal_to "' * (n // 25),
        200_000,
    ),
    "span state, quotes": (lambda t: parse_span(t, "pred"), lambda n: '"' * n, 200_000),
    "markdown text": (markdown_text, lambda n: " -" * (n // 2), MAX_VALUE_CHARS * 20),
    "markdown text, leading spaces": (markdown_text, lambda n: " " * (n - 2) + "1x", MAX_VALUE_CHARS * 20),
    "plotly text": (plotly_text, lambda n: "<" * n, MAX_VALUE_CHARS * 20),
    "sgd fuzzy key": (fuzzy_key, lambda n: "é " * (n // 2), MAX_VALUE_CHARS * 20),
}


@pytest.mark.parametrize("case", list(VALUE_TEXTS))
def test_names_and_values_are_taken_apart_in_linear_time(case: str) -> None:
    read, make, size = VALUE_TEXTS[case]
    _linear(lambda n: lambda: read(make(n)), size)
