"""Schema-guided dialogue (SGD, MultiWOZ 2.2): files, schemas and the SGD evaluator's metrics.

    from analysis.sgd import read_dialogues, read_schema, evaluate
    result = evaluate("gold_dir", "pred_dir", "schema.json", train_schema="train/schema.json")
    result.table["#ALL_SERVICES"]["joint_goal_accuracy"]   # the evaluator's number
    result.frames                                            # per-frame scores, seen flag, pred_missing
    result.slots                                             # per (frame, schema slot) scores

`analysis.formats.sgd_files` reads the files (one file, `.gz`, `.zip` or a directory of `dialogues_*.json`),
`analysis.sgd.scoring` re-implements google-research `schema_guided_dst` evaluate.py + metrics.py.
"""

from analysis.formats.sgd_files import Schema, Service, SgdDialogues, read_dialogues, read_schema, schema_beside
from analysis.sgd.scoring import (
    ALL_SERVICES,
    HEADLINE,
    METRICS,
    SEEN_SERVICES,
    UNSEEN_SERVICES,
    SgdResult,
    evaluate,
)
from analysis.sgd_rules import fuzzy_score

__all__ = [
    "ALL_SERVICES",
    "HEADLINE",
    "METRICS",
    "SEEN_SERVICES",
    "UNSEEN_SERVICES",
    "Schema",
    "Service",
    "SgdDialogues",
    "SgdResult",
    "evaluate",
    "fuzzy_score",
    "read_dialogues",
    "read_schema",
    "schema_beside",
]
