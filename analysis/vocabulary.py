"""One vocabulary for what people read: every column header and axis title the dashboard, the CLI's tables and
the report show comes from a machine name through `label` (metrics as the registry labels them)."""

from __future__ import annotations

from analysis.suite import LABELS

# Names as people read them; frames keep their machine names.
COLUMN_LABELS: dict[str, str] = {
    **LABELS,
    "run_id": "run",
    "n_turns": "turns",
    "n_dialogues": "dialogues",
    "n_warnings": "alignment warnings",
    "warnings": "warning details",
    "slot_name": "slot",
    "f1": "F1",
    "wrong_value": "wrong value",
    "dialogue_id": "dialogue",
    "turn_index": "turn",
    "first_error_turn": "first error turn",
    "error_turns": "turns with errors",
    "n_errors": "errors",
    "n_new": "new errors",
    "n_inherited": "inherited errors",
    "gold_changes": "gold changed this turn",
    "pred_changes": "prediction changed this turn",
    "gold_change": "gold Δ",
    "pred_change": "pred Δ",
    "pred": "predicted",
    # the turns behind a difference, and the pages that set two runs (or conventions) A and B side by side
    "errors_a": "wrong slots of A",
    "errors_b": "wrong slots of B",
    "slot_a": "slot of A",
    "slot_b": "slot of B",
    "domain_a": "domain of A",
    "domain_b": "domain of B",
    "user_a": "user said (A)",
    "user_b": "user said (B)",
    "acc_a": "accuracy of A",
    "acc_b": "accuracy of B",
    "n_turns_a": "turns of A",
    "n_turns_b": "turns of B",
    "support_b": "support of B",
    "alternative_b": "next best slot of B",
    "alternative_score": "its score",
    "correct_a": "correct under a",
    "correct_b": "correct under b",
    "outcome_a": "outcome under a",
    "outcome_b": "outcome under b",
    "only_a": "only a right",
    "only_b": "only b right",
    "estimate_a": "value of a",
    "estimate_b": "value of b",
    # the paired comparison
    "row": "run (row)",
    "column": "run (column)",
    "label": "metric name",
    "delta": "Δ",
    "low": "95% low",
    "high": "95% high",
    "p_value": "p (number)",
    "p_text": "p",
    "p_holm": "Holm p (number)",
    "p_holm_text": "Holm p",
    "significant": "significant (Holm)",
    "family_size": "tests corrected together",
    # review, slices, FewJoint
    "n_reviewed": "reviewed",
    "n_gold_errors": "gold annotation errors",
    "n_seeds": "seeds",
    "slot_f1": "slot F1",
    "ill_formed_bio_tags": "ill-formed BIO tags",
    "queries_with_ill_formed_bio": "queries with ill-formed BIO",
}
_BOUNDS = {"_low": "95% low", "_high": "95% high"}


def label(name: str) -> str:
    """The header or axis title of a machine name: the vocabulary's, an interval bound of a metric as the
    metric's label and the bound, else the name with spaces for underscores.

    >>> label("run_id"), label("jga_low"), label("dialogue_type")
    ('run', 'JGA 95% low', 'dialogue type')
    """
    if name in COLUMN_LABELS:
        return COLUMN_LABELS[name]
    for suffix, bound in _BOUNDS.items():
        if name.endswith(suffix) and name[: -len(suffix)] in LABELS:
            return f"{LABELS[name[: -len(suffix)]]} {bound}"
    return name.replace("_", " ")
