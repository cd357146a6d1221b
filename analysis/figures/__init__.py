"""Page-ready frames (`analysis.views`) -> Plotly figures; pure builders, no Streamlit.

One fixed colour per run across every figure (`run_colours`, Okabe-Ito, colour-blind safe), outcome
colours paired with a pattern so a chart reads in grey too, hover templates on every trace, and a
`style` switch ("screen" or "paper") applied by `apply_style`.

One module per page (`overview`, `slots`, `domains`, `depth`, `crosslingual`, `dialogue`) and what they
share (`style`). Every public name is imported from here, `from analysis.figures import depth_lines`, and
named here (`__module__` is `analysis.figures`): the figure cache keys a builder by `module.qualname`.
"""

from __future__ import annotations

from analysis.figures.crosslingual import (
    AGREEMENT_NAMES,
    LANGUAGE_METRIC_NAMES,
    agreement_heatmap,
    gap_bar,
    language_heatmap,
    language_labels,
)
from analysis.figures.depth import (
    HIGHLIGHT_RUNS,
    MARKED_RUNS,
    MERGED_RUNS,
    OTHERS,
    compounding_figure,
    depth_lines,
    first_error_bar,
    origins_bar,
    trace_runs,
)
from analysis.figures.dialogue import turn_strip
from analysis.figures.domains import grouped_jga_bar, jga_heatmap
from analysis.figures.overview import delta_bar, leaderboard_bar, significance_heatmap
from analysis.figures.slots import confusion_heatmap, outcome_mix_bar, slot_f1_bar
from analysis.figures.style import (
    DRAWN_TRACES,
    ORIGIN_COLOURS,
    ORIGIN_PATTERNS,
    OUTCOME_COLOURS,
    STYLES,
    UNDRAWN_SUBPLOTS,
    apply_style,
    empty_figure,
    metric_label,
    run_colours,
    template_for,
)

__all__ = [
    "AGREEMENT_NAMES",
    "DRAWN_TRACES",
    "HIGHLIGHT_RUNS",
    "LANGUAGE_METRIC_NAMES",
    "MARKED_RUNS",
    "MERGED_RUNS",
    "ORIGIN_COLOURS",
    "ORIGIN_PATTERNS",
    "OTHERS",
    "OUTCOME_COLOURS",
    "STYLES",
    "UNDRAWN_SUBPLOTS",
    "agreement_heatmap",
    "apply_style",
    "compounding_figure",
    "confusion_heatmap",
    "delta_bar",
    "depth_lines",
    "empty_figure",
    "first_error_bar",
    "gap_bar",
    "grouped_jga_bar",
    "jga_heatmap",
    "language_heatmap",
    "language_labels",
    "leaderboard_bar",
    "metric_label",
    "origins_bar",
    "outcome_mix_bar",
    "run_colours",
    "significance_heatmap",
    "slot_f1_bar",
    "template_for",
    "trace_runs",
    "turn_strip",
]

# A public function's home is the package (as numpy's `set_module` does): its `module.qualname` is
# `analysis.figures.<name>` whichever module defines it. Its docstring examples run here, with the package's
# names (`tests/test_doctests.py`).
for _name in __all__:
    _value = globals()[_name]
    if callable(_value) and getattr(_value, "__module__", "").startswith(f"{__name__}."):
        _value.__module__ = __name__
del _name, _value
