"""Every `DST_*` environment variable, declared once (name, type, default, meaning) and read here only.

Modules ask this table for a variable's value (`text`, `flag`, `positive_int`, `number`, `cache_root`)
instead of reading `os.environ`; `docs/settings.md` lists the table as `markdown_table` writes it, and
`tests/test_settings.py` checks both (no other module reads a `DST_` variable; the page lists each one).

>>> [s.name for s in SETTINGS][:2]
['DST_CACHE_DIR', 'DST_WORKSPACE_ROOT']
>>> positive_int("DST_MAX_DEPTH")  # unset here: its default
200
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

MiB = 1024**2


@dataclass(frozen=True)
class Setting:
    name: str
    type: str  # what the value has to be, as the docs say it
    default: str | int | float | None  # the value in force when the variable is unset (None: see `shown`)
    shown: str  # the default as the docs write it
    meaning: str
    read_by: str  # who reads it


DEFAULT_UPLOAD_MB = 200
# The input limits' defaults keep a refused file's peak memory under 1.5 GB: parsed JSON takes up to ~20x its
# text (a 63 MiB JSONL file refused at its last line peaks at 1.3 GB), and the largest real file is 39 MB
# unpacked.
SETTINGS: tuple[Setting, ...] = (
    Setting(
        "DST_CACHE_DIR",
        "folder",
        None,
        "`$XDG_CACHE_HOME/dst-analysis`, else `~/.cache/dst-analysis`",
        "Where the parse cache (`parsed/`) and the score store (`scored/`) live; set to an empty string, "
        "nothing is written to disk (everything is kept in memory).",
        "`analysis.formats.cache`, `analysis.store`",
    ),
    Setting(
        "DST_WORKSPACE_ROOT",
        "folder",
        None,
        "the folder the server was started in",
        "The folder a path typed in the dashboard (a manifest, a run file) must lie in.",
        "`analysis.safety`",
    ),
    Setting(
        "DST_MAX_UPLOAD_MB",
        "number",
        DEFAULT_UPLOAD_MB,
        "the manifest's `[dashboard] max_upload_mb`, else 200",
        "The dashboard's upload limit in MB (it wins over the manifest's setting).",
        "`analysis.safety`",
    ),
    Setting(
        "DST_MAX_FILE_BYTES",
        "positive integer",
        64 * MiB,
        "67108864 (64 MiB)",
        "Bytes read from disk or from an upload.",
        "`analysis.formats.reading`",
    ),
    Setting(
        "DST_MAX_BYTES",
        "positive integer",
        64 * MiB,
        "67108864 (64 MiB)",
        "Bytes after unpacking a .gz or .zip file.",
        "`analysis.formats.reading`",
    ),
    Setting(
        "DST_MAX_DIRECTORY_BYTES",
        "positive integer",
        256 * MiB,
        "268435456 (256 MiB)",
        "Bytes of all the files of a directory read as one run (SGD's `dialogues_*.json`), after unpacking.",
        "`analysis.formats.sgd_files`",
    ),
    Setting(
        "DST_MAX_RATIO",
        "positive integer",
        200,
        "200",
        "Unpacked / packed size of an archive (judged past 16 MiB of output).",
        "`analysis.formats.reading`",
    ),
    Setting(
        "DST_MAX_DEPTH",
        "positive integer",
        200,
        "200",
        "Nesting depth of JSON arrays and objects.",
        "`analysis.formats.reading`",
    ),
    Setting(
        "DST_BROWSER_START_SECONDS",
        "positive integer",
        14,
        "14",
        "Seconds figure export gives Chromium to start and open its tabs; one that has not is killed and a "
        "fresh one given as long, then the report stops with exit 3 (a start takes 1-3 s on a quiet machine; "
        "more on one that is very busy).",
        "`analysis.export.browser`",
    ),
    Setting(
        "DST_SCORE_WORKERS",
        "positive integer",
        None,
        "the cores this process may use, at most 2",
        "How many processes score new runs into the score store at a time (the dashboard opening a workspace, "
        "`python -m analysis store`): each needs about 0.35 GB; more than the cores only makes them wait.",
        "`analysis.store.runs`",
    ),
    Setting(
        "DST_ANNOTATIONS_URL",
        "SQLAlchemy URL",
        None,
        "the manifest's `[review] database_url`, else `annotations.sqlite` beside the manifest",
        "The team review's annotation store (e.g. `postgresql://user@host/db`; it wins over the manifest).",
        "`analysis.review.store`",
    ),
    Setting(
        "DST_DEBUG",
        "flag (`1` on, empty or `0` off)",
        "",
        "off",
        "An unforeseen error of `python -m analysis` also prints its traceback on stderr.",
        "`analysis.cli.main`",
    ),
    Setting(
        "DST_LOG",
        "file",
        "",
        "none",
        "An unforeseen error of `python -m analysis` appends its traceback to this file.",
        "`analysis.cli.main`",
    ),
    Setting(
        "DST_NO_PREFETCH",
        "flag (`1` on, empty or `0` off)",
        "",
        "off: the prefetch runs",
        "The dashboard does not compute the other pages' first views in the background after a page loads "
        "(a server with no CPU to spare; the in-process page tests, which the prefetch would only slow down).",
        "`ui.prefetch`",
    ),
    Setting(
        "DST_REALDATA",
        "folder",
        None,
        "`../shared/realdata` beside the repository",
        "The real data files the tests check numbers against (tests that need them skip when absent).",
        "`tests/conftest.py`",
    ),
    Setting(
        "DST_BENCH_PROFILE",
        "file",
        None,
        "none",
        "Set by `benchmarks/bench_scale_browser.py --profile` for the server it starts: the file its timings go to.",
        "`benchmarks/bench_scale_browser.py`",
    ),
)
_BY_NAME = {s.name: s for s in SETTINGS}


def setting(name: str) -> Setting:
    """The declaration of `name`; a name the table does not declare is a programming error."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"{name} is not declared in analysis.settings.SETTINGS") from None


def raw(name: str) -> str | None:
    """The variable as set (None when unset)."""
    return os.environ.get(setting(name).name)


def text(name: str) -> str:
    """The variable with surrounding spaces removed ("" when unset)."""
    return (raw(name) or "").strip()


def flag(name: str) -> bool:
    """Whether a flag is on: set to anything but "" or "0"."""
    return text(name) not in ("", "0")


def positive_int(name: str) -> int:
    """The variable as a positive integer (plain ASCII digits), its default when unset or empty; ValueError
    naming the variable and its value otherwise."""
    value = text(name)
    if not value:
        default = setting(name).default
        assert isinstance(default, int)
        return default
    if not value.isascii() or not value.isdigit() or int(value) <= 0:
        raise ValueError(f"environment variable {name}={value!r} must be a positive integer")
    return int(value)


def cache_root() -> Path | None:
    """`DST_CACHE_DIR`, resolved once for every cache: the folder holding `parsed/` (the parse cache) and
    `scored/` (the score store); None when set to an empty string (nothing on disk)."""
    configured = raw("DST_CACHE_DIR")
    if configured == "":
        return None
    if configured:
        return Path(configured)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "dst-analysis"


def markdown_table() -> str:
    """The table as docs/settings.md lists it (one row per variable, in declaration order)."""
    rows = ["| Variable | Type | Default | Meaning | Read by |", "|---|---|---|---|---|"]
    rows += [f"| `{s.name}` | {s.type} | {s.shown} | {s.meaning} | {s.read_by} |" for s in SETTINGS]
    return "\n".join(rows) + "\n"
