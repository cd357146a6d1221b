"""DST and few-shot joint NLU evaluation core: formats -> canonical tables -> conventions -> metrics.

Nothing in this package imports Streamlit; every number the dashboard shows is computed here.

The public API, for a notebook or a script (each name is imported on first use, so ``import analysis``
itself loads no pandas and ``python -m analysis`` starts quickly)::

    import analysis as dst

    run = dst.load_run("predictions.json")              # a Run: canonical tables, format detected
    dst.load_run("p.json", meta=dst.RunInfo("mine", history="gold"))  # what the run is, declared
    scored = dst.score_run(run)                         # the format's community convention
    dst.metrics.joint_goal_accuracy(scored, by="domain")  # a DataFrame
    dst.metric_suite(scored)                            # every metric, as the command line prints them
    dst.figures.grouped_jga_bar(...)                    # Plotly figures of the dashboard
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from analysis.errors import InputError

if TYPE_CHECKING:  # the same names, eagerly, for type checkers and editors
    from analysis import figures, metrics, stats
    from analysis.conventions import CONVENTIONS, Convention
    from analysis.formats import FORMATS, format_names, parse_file
    from analysis.loading import load_run
    from analysis.model import Run, RunInfo
    from analysis.scoring import Scored, combine, score_run
    from analysis.suite import headline_metrics, metric_suite
    from analysis.workspace import Workspace, load_entry, load_workspace

# name -> (module, attribute); attribute None: the module itself.
_LAZY: dict[str, tuple[str, str | None]] = {
    "load_run": ("analysis.loading", "load_run"),
    "parse_file": ("analysis.formats", "parse_file"),
    "FORMATS": ("analysis.formats", "FORMATS"),
    "format_names": ("analysis.formats", "format_names"),
    "CONVENTIONS": ("analysis.conventions", "CONVENTIONS"),
    "Convention": ("analysis.conventions", "Convention"),
    "Run": ("analysis.model", "Run"),
    "RunInfo": ("analysis.model", "RunInfo"),
    "score_run": ("analysis.scoring", "score_run"),
    "combine": ("analysis.scoring", "combine"),
    "Scored": ("analysis.scoring", "Scored"),
    "metrics": ("analysis.metrics", None),
    "metric_suite": ("analysis.suite", "metric_suite"),
    "headline_metrics": ("analysis.suite", "headline_metrics"),
    "stats": ("analysis.stats", None),
    "figures": ("analysis.figures", None),
    "load_workspace": ("analysis.workspace", "load_workspace"),
    "load_entry": ("analysis.workspace", "load_entry"),
    "Workspace": ("analysis.workspace", "Workspace"),
}

__all__ = [
    "CONVENTIONS",
    "FORMATS",
    "Convention",
    "InputError",
    "Run",
    "RunInfo",
    "Scored",
    "Workspace",
    "combine",
    "figures",
    "format_names",
    "headline_metrics",
    "load_entry",
    "load_run",
    "load_workspace",
    "metric_suite",
    "metrics",
    "parse_file",
    "score_run",
    "stats",
]


def __getattr__(name: str) -> Any:
    """PEP 562: a public name is imported the first time it is used, then kept in the package."""
    try:
        module_name, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
