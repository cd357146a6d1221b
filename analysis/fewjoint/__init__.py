"""Few-shot joint NLU (FewJoint): episodes and per-seed predictions -> query table -> metrics, views, figures.

Pipeline place: this package is the FewJoint edge *and* its metrics. ``load_fewjoint_system`` reads
MetaDialog episode gold and one prediction file per seed, validates them once and aligns them by
``(domain, episode, query_index)``; ``score_fewjoint`` turns the aligned system into tidy frames.

By stage:

* `analysis.fewjoint.episodes`: the episode gold (``load_fewjoint_gold``, ``FewJointGold``);
* `analysis.fewjoint.predictions`: one seed's prediction file, ``jsonl`` or ``conlleval``
  (``read_fewjoint_predictions``, ``detect_prediction_format``);
* `analysis.fewjoint.align`: gold and seeds aligned into one system (``load_fewjoint_system``,
  ``FewJointSystem``);
* `analysis.fewjoint.chunks`: conlleval chunking of BIO tags (``conlleval_chunks``, ``count_ill_formed``);
* `analysis.fewjoint.scoring`: metrics per seed and over seeds (``score_fewjoint``, ``FewJointResult``,
  ``fewjoint_leaderboard``);
* `analysis.fewjoint.views` and `analysis.fewjoint.figures`: what the page and the report show.

>>> from analysis.fewjoint import METRICS, conlleval_chunks
>>> METRICS, conlleval_chunks(["B-city", "I-city", "O"])
(('intent_accuracy', 'slot_f1', 'sentence_accuracy'), [('city', 0, 1)])
"""

from analysis.fewjoint.align import ALIGNMENT_CONSEQUENCES, FewJointSystem, load_fewjoint_system
from analysis.fewjoint.chunks import conlleval_chunks, count_ill_formed
from analysis.fewjoint.episodes import GOLD_FORMAT, FewJointGold, load_fewjoint_gold, shots_from_path
from analysis.fewjoint.predictions import PRED_FORMATS, detect_prediction_format, read_fewjoint_predictions
from analysis.fewjoint.scoring import (
    AVERAGINGS,
    ERROR_KINDS,
    METRICS,
    MIN_SEEDS,
    FewJointResult,
    fewjoint_leaderboard,
    score_fewjoint,
    slot_f1,
)

__all__ = [
    "ALIGNMENT_CONSEQUENCES",
    "AVERAGINGS",
    "ERROR_KINDS",
    "GOLD_FORMAT",
    "METRICS",
    "MIN_SEEDS",
    "PRED_FORMATS",
    "FewJointGold",
    "FewJointResult",
    "FewJointSystem",
    "conlleval_chunks",
    "count_ill_formed",
    "detect_prediction_format",
    "fewjoint_leaderboard",
    "load_fewjoint_gold",
    "load_fewjoint_system",
    "read_fewjoint_predictions",
    "score_fewjoint",
    "shots_from_path",
    "slot_f1",
]
