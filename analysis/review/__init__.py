"""Team review: reviewers' tags and comments on error items, their store, and their analysis.

By stage:

* `analysis.review.items`: what is annotated (`Item`, `item_key`, `item_keys`, `split_slot`), the tag
  taxonomy, and the checks every value passes before it is written (`InvalidAnnotationError`);
* `analysis.review.store`: `AnnotationStore` in any SQLAlchemy database, its errors (`StoreError`,
  `StoreUnavailableError`, `StoreLockedError`), migrations, retries, and CSV/JSON export and import;
* `analysis.review.analysis`: `error_items`, `error_episodes` (an error carried over consecutive turns as
  one item), `episode_turns`, `confusion_counts`, `review_queue`, `review_progress`, `tag_counts`,
  `cohens_kappa`, `tag_agreement` (per tag: Cohen's kappa or Krippendorff's alpha), `annotation_context`
  (gold, predicted and outcome of annotated items, for the export);
* `analysis.review.figures`: their figures and display tables (convention reconciliation's are
  `analysis.reconcile.figures`).

The names below are imported from their module on first use, so ``from analysis.review import Item``
does not load SQLAlchemy; only the store needs it.

>>> from analysis.review import Item, item_key
>>> item_key("MultiWOZ 2.1", "MUL0001.json", 3, slot="hotel-area") == Item("MultiWOZ 2.1", "MUL0001.json", 3,
...     domain="hotel", slot="area").key
True
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from analysis.review.analysis import (
        ERROR_OUTCOMES,
        RATING_DEFINITION,
        Agreement,
        TagAgreement,
        annotation_context,
        cohens_kappa,
        confusion_counts,
        episode_turns,
        error_episodes,
        error_items,
        review_progress,
        review_progress_per_run,
        review_queue,
        tag_agreement,
        tag_counts,
    )
    from analysis.review.items import (
        CONTEXT_COLUMNS,
        DEFAULT_TAGS,
        ITEM_COLUMNS,
        MAX_COMMENT,
        MAX_COMPONENT,
        MAX_KEY,
        MAX_REVIEWER,
        MAX_TAG,
        MAX_TURN_INDEX,
        SPAN_COLUMNS,
        InvalidAnnotationError,
        Item,
        item_key,
        item_keys,
        split_slot,
        taxonomy,
    )
    from analysis.review.store import (
        DEFAULT_FILENAME,
        ENV_URL,
        EXPORT_COLUMNS,
        FILE_COLUMNS,
        LOCK_TIMEOUT_S,
        LOCKED_MESSAGE,
        MIGRATIONS,
        SCHEMA_VERSION,
        TAG_SEPARATOR,
        AnnotationStore,
        StoreError,
        StoreLockedError,
        StoreUnavailableError,
        annotations_csv,
        annotations_json,
        default_url,
    )

__all__ = [
    "CONTEXT_COLUMNS",
    "DEFAULT_FILENAME",
    "DEFAULT_TAGS",
    "ENV_URL",
    "ERROR_OUTCOMES",
    "EXPORT_COLUMNS",
    "FILE_COLUMNS",
    "ITEM_COLUMNS",
    "LOCKED_MESSAGE",
    "LOCK_TIMEOUT_S",
    "MAX_COMMENT",
    "MAX_COMPONENT",
    "MAX_KEY",
    "MAX_REVIEWER",
    "MAX_TAG",
    "MAX_TURN_INDEX",
    "MIGRATIONS",
    "RATING_DEFINITION",
    "SCHEMA_VERSION",
    "SPAN_COLUMNS",
    "TAG_SEPARATOR",
    "Agreement",
    "AnnotationStore",
    "InvalidAnnotationError",
    "Item",
    "StoreError",
    "StoreLockedError",
    "StoreUnavailableError",
    "TagAgreement",
    "annotation_context",
    "annotations_csv",
    "annotations_json",
    "cohens_kappa",
    "confusion_counts",
    "default_url",
    "episode_turns",
    "error_episodes",
    "error_items",
    "item_key",
    "item_keys",
    "review_progress",
    "review_progress_per_run",
    "review_queue",
    "split_slot",
    "tag_agreement",
    "tag_counts",
    "taxonomy",
]

_ITEMS = (
    "CONTEXT_COLUMNS",
    "DEFAULT_TAGS",
    "ITEM_COLUMNS",
    "MAX_COMMENT",
    "MAX_COMPONENT",
    "MAX_KEY",
    "MAX_REVIEWER",
    "MAX_TAG",
    "MAX_TURN_INDEX",
    "SPAN_COLUMNS",
    "InvalidAnnotationError",
    "Item",
    "item_key",
    "item_keys",
    "split_slot",
    "taxonomy",
)
_ANALYSIS = (
    "ERROR_OUTCOMES",
    "RATING_DEFINITION",
    "Agreement",
    "TagAgreement",
    "annotation_context",
    "cohens_kappa",
    "confusion_counts",
    "episode_turns",
    "error_episodes",
    "error_items",
    "review_progress",
    "review_progress_per_run",
    "review_queue",
    "tag_agreement",
    "tag_counts",
)
# Which module holds each public name; the store is everything else.
_HOME = {name: "items" for name in _ITEMS} | {name: "analysis" for name in _ANALYSIS}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use (then kept in the package's namespace)."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOME.get(name, 'store')}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
