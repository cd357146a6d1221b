"""Scored runs -> page-ready tidy frames: what each dashboard view shows, computed without Streamlit.

Every function takes one `Scored` (a single run) or a sequence of them (one per run, each under its
own convention, so runs scored differently can still sit side by side) and returns a small frame,
list or dict. Pages only place these; the CLI and reports can export the very same frames.

One module per page (`overview`, `slots`, `domains`, `depth`, `dialogue`, `crosslingual`) and what they
share (`common`). Every public name is imported from here, `from analysis.views import leaderboard`, and
named here: a view's `__module__` is `analysis.views`, so the name that keys the dashboard's caches
(`ui.data.compute`: `module.qualname`) and the score store's answers does not change when a view moves
between the modules.
"""

from __future__ import annotations

from analysis.views.common import (
    ABSENT,
    INTERVAL_RESAMPLES,
    META_COLUMNS,
    STANDARD_TURN_COLUMNS,
    attribute_columns,
    board_caption,
    chart_pick,
    jga_interval,
    scope,
    scope_caption,
    values_note,
    values_note_for,
)
from analysis.views.crosslingual import crosslingual_summary, crosslingual_turns, default_pair
from analysis.views.depth import (
    DEPTH_METRICS,
    TURN_LIST_COLUMNS,
    compounding_curve,
    depth_jga,
    depth_metrics,
    first_error_counts,
    first_error_dialogues,
    first_error_distribution,
    history_pairs,
    history_pairs_of,
    origins_by_depth,
    per_turn,
    turns_at_depth,
)
from analysis.views.dialogue import (
    OUTCOME_LABELS,
    PICKER_COLUMNS,
    PICKER_SORTS,
    aligned_slot,
    compounding_runs,
    dialogue_index,
    dialogue_view,
    diff_at,
    filter_turns,
    first_dialogue_with_errors,
    matching_dialogue,
    pick_dialogues,
    step_turn,
    turn_position_label,
    turn_row,
    turns_listing,
)
from analysis.views.differences import DIFFERENCE_COLUMNS, SIDES, delta_group, differing_turns, language_cell
from analysis.views.domains import domain_jga, jga_by_attribute
from analysis.views.overview import (
    COMPARABLE_BY,
    LEADERBOARD_METRICS,
    LEADERBOARD_SHOWN,
    comparability_warnings,
    comparable_groups,
    dataset_version,
    gold_fingerprint,
    gold_groups,
    gold_groups_of,
    gold_input_notes,
    leaderboard,
    left_out_of_comparison,
    not_applicable_notes,
    pair_deltas,
    pairwise_comparison,
    run_table,
    scorer_lead,
    seed_comparison,
    seed_systems,
    significance_table,
)
from analysis.views.slots import outcome_mix, slot_error_turns, slot_examples, slot_table, split_slot, value_confusions
from analysis.views.unread import unread_gold, unread_notice, unread_of

__all__ = [
    "ABSENT",
    "COMPARABLE_BY",
    "DEPTH_METRICS",
    "DIFFERENCE_COLUMNS",
    "INTERVAL_RESAMPLES",
    "LEADERBOARD_METRICS",
    "LEADERBOARD_SHOWN",
    "META_COLUMNS",
    "OUTCOME_LABELS",
    "PICKER_COLUMNS",
    "PICKER_SORTS",
    "SIDES",
    "STANDARD_TURN_COLUMNS",
    "TURN_LIST_COLUMNS",
    "aligned_slot",
    "attribute_columns",
    "board_caption",
    "chart_pick",
    "comparability_warnings",
    "comparable_groups",
    "compounding_curve",
    "compounding_runs",
    "crosslingual_summary",
    "crosslingual_turns",
    "dataset_version",
    "default_pair",
    "delta_group",
    "depth_jga",
    "depth_metrics",
    "dialogue_index",
    "dialogue_view",
    "diff_at",
    "differing_turns",
    "domain_jga",
    "filter_turns",
    "first_dialogue_with_errors",
    "first_error_counts",
    "first_error_dialogues",
    "first_error_distribution",
    "gold_fingerprint",
    "gold_groups",
    "gold_groups_of",
    "gold_input_notes",
    "history_pairs",
    "history_pairs_of",
    "jga_by_attribute",
    "jga_interval",
    "language_cell",
    "leaderboard",
    "left_out_of_comparison",
    "matching_dialogue",
    "not_applicable_notes",
    "origins_by_depth",
    "outcome_mix",
    "pair_deltas",
    "pairwise_comparison",
    "per_turn",
    "pick_dialogues",
    "run_table",
    "scope",
    "scope_caption",
    "scorer_lead",
    "seed_comparison",
    "seed_systems",
    "significance_table",
    "slot_error_turns",
    "slot_examples",
    "slot_table",
    "split_slot",
    "step_turn",
    "turn_position_label",
    "turn_row",
    "turns_at_depth",
    "turns_listing",
    "unread_gold",
    "unread_notice",
    "unread_of",
    "value_confusions",
    "values_note",
    "values_note_for",
]

# A public function's home is the package (as numpy's `set_module` does): its `module.qualname` is
# `analysis.views.<name>` whichever module defines it. Its docstring examples run here, with the package's
# names (`tests/test_doctests.py`).
for _name in __all__:
    _value = globals()[_name]
    if callable(_value) and getattr(_value, "__module__", "").startswith(f"{__name__}."):
        _value.__module__ = __name__
del _name, _value
