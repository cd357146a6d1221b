"""DST and few-shot joint NLU evaluation core: formats -> canonical tables -> conventions -> metrics.

Nothing in this package imports Streamlit; every number the dashboard shows is computed here.
"""

from analysis.errors import InputError

__all__ = ["InputError"]
