"""Every in-page wait of the browser tests and benchmarks polls on a timer (`polling=`), read with `ast`.

Playwright's `wait_for_function` polls on requestAnimationFrame unless told otherwise, and headless chromium on
a loaded machine can go minutes without a frame: the condition held, but it was never evaluated again. Three
fresh-clone runs lost a test each that way (a 120 s wait "for a rerun that never came", each test passing
alone). A timer poll does not depend on frames."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _waits_without_polling(source: str) -> list[int]:
    lines = []
    for node in ast.walk(ast.parse(source)):
        waits = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        if waits and node.func.attr == "wait_for_function" and not any(k.arg == "polling" for k in node.keywords):
            lines.append(node.lineno)
    return lines


def test_every_wait_for_function_polls_on_a_timer() -> None:
    files = [*(ROOT / "tests").rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py")]
    found = {p.relative_to(ROOT).as_posix(): n for p in files if (n := _waits_without_polling(p.read_text()))}
    assert not found, f"wait_for_function without polling= (it would poll on animation frames): {found}"


def test_the_check_finds_a_wait_on_animation_frames() -> None:
    assert _waits_without_polling("page.wait_for_function('() => true', timeout=5)") == [1]
    assert _waits_without_polling("page.wait_for_function('() => true', polling=100)") == []
