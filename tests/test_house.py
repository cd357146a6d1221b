"""The house's size rule: no function in `analysis/`, `ui/`, `pages/` or `app.py` grows past LIMIT lines (its
`def` line to its last, docstring included), read with `ast`. A long function is split where it reads
better; the few that do not yet are listed in EXCEPTIONS with their length today and why, and the test fails
when one of them grows, or is split (so the list only shrinks), or when a new one grows past the limit."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 80
# (file, function): (its length today, at most; why it is still longer than LIMIT). Lower a length when the
# function shrinks, remove the entry when it is split: never raise one.
EXCEPTIONS = {
    ("analysis/fewjoint/scoring.py", "score_fewjoint"): (108, "FewJoint's scorer; split with its oracle tests"),
}


def _long_functions() -> dict[tuple[str, str], int]:
    files = [*(ROOT / "analysis").rglob("*.py"), *(ROOT / "ui").rglob("*.py"), *(ROOT / "pages").glob("*.py")]
    found: dict[tuple[str, str], int] = {}
    for path in [*files, ROOT / "app.py"]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > LIMIT:
                    found[(path.relative_to(ROOT).as_posix(), node.name)] = lines
    return found


def test_no_function_grows_past_the_limit() -> None:
    grown = {where: n for where, n in _long_functions().items() if where not in EXCEPTIONS}
    assert not grown, f"split these functions (over {LIMIT} lines) where it reads better: {grown}"


def test_no_listed_exception_grows() -> None:
    grown = {
        where: f"{n} lines, listed at {EXCEPTIONS[where][0]}"
        for where, n in _long_functions().items()
        if where in EXCEPTIONS and n > EXCEPTIONS[where][0]
    }
    assert not grown, f"longer than EXCEPTIONS allows (split them rather than raise the length): {grown}"


def test_every_listed_exception_is_still_long() -> None:
    split = set(EXCEPTIONS) - set(_long_functions())
    assert not split, f"no longer over {LIMIT} lines: remove them from EXCEPTIONS: {sorted(split)}"
