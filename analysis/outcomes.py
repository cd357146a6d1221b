"""The outcome of a slot row, in one place: its code, its name in frames, its label, marker, colour and pattern.

A slot row present in gold or prediction is `correct` (the values match), `wrong_value` (both sides
name the slot, the values differ), `missed` (only gold) or `spurious` (only the prediction); a gold slot
of a turn whose predicted text could not be read (an LLM tracker's, `analysis.formats.more`) is
`unparseable`, an error counted with the misses in slot metrics (`counts_as_missed`). A predicted slot
whose (domain, slot) the gold file and the convention's ontology never use (a model's `hotel-wifi`, a
TRADE string `2-norfolk street`) is `off_vocabulary`: a wrong prediction counted as every scorer counts
it, with the spurious ones (`counts_as_spurious`), and shown as its own class. The code is
the position in the categorical `outcome` column (`analysis.scoring.OUTCOME_DTYPE`), so code arrays
compare with the enum itself: `codes == Outcome.CORRECT`.

>>> Outcome.WRONG_VALUE.key, int(Outcome.WRONG_VALUE), Outcome.WRONG_VALUE.label, Outcome.WRONG_VALUE.marker
('wrong_value', 1, 'wrong value', '≠')
>>> OUTCOMES
('correct', 'wrong_value', 'missed', 'spurious', 'unparseable', 'off_vocabulary')
>>> ERROR_OUTCOMES
('wrong_value', 'missed', 'spurious', 'unparseable', 'off_vocabulary')
>>> MISSED_CODES, SPURIOUS_CODES
((2, 4), (3, 5))
>>> Outcome.of("missed") is Outcome.MISSED
True
"""

from __future__ import annotations

import enum


class Outcome(enum.IntEnum):
    """One outcome: its int value is the categorical code; `key` is the name stored in frames, `label`
    what people read, `marker` the sign shown beside it (the marker, not the colour, carries the meaning),
    `colour` (Okabe-Ito) and `pattern` (Plotly bar pattern, so a chart reads in grey too)."""

    key: str
    label: str
    marker: str
    colour: str
    pattern: str

    def __new__(cls, code: int, key: str, label: str, marker: str, colour: str, pattern: str) -> Outcome:
        member = int.__new__(cls, code)
        member._value_ = code
        member.key = key
        member.label = label
        member.marker = marker
        member.colour = colour
        member.pattern = pattern
        return member

    CORRECT = 0, "correct", "correct", "✓", "#009E73", ""
    WRONG_VALUE = 1, "wrong_value", "wrong value", "≠", "#D55E00", "x"
    MISSED = 2, "missed", "missed", "−", "#E69F00", "/"
    SPURIOUS = 3, "spurious", "spurious", "+", "#CC79A7", "."
    UNPARSEABLE = 4, "unparseable", "unparseable", "?", "#0072B2", "\\"
    OFF_VOCABULARY = 5, "off_vocabulary", "off-vocabulary", "∉", "#56B4E9", "-"

    @property
    def shown(self) -> str:
        """Marker and label, as a status cell or a legend entry shows it: `≠ wrong value`."""
        return f"{self.marker} {self.label}"

    @property
    def is_error(self) -> bool:
        return self is not Outcome.CORRECT

    @property
    def counts_as_missed(self) -> bool:
        """A gold slot the prediction does not hold: a miss in precision/recall, slot accuracy and F1."""
        return self in (Outcome.MISSED, Outcome.UNPARSEABLE)

    @property
    def counts_as_spurious(self) -> bool:
        """A predicted slot gold does not hold: a false positive in precision, slot accuracy and F1."""
        return self in (Outcome.SPURIOUS, Outcome.OFF_VOCABULARY)

    @classmethod
    def of(cls, key: str) -> Outcome:
        """The outcome stored in frames as `key`."""
        return _BY_KEY[key]


_BY_KEY = {o.key: o for o in Outcome}
ERRORS: tuple[Outcome, ...] = tuple(o for o in Outcome if o.is_error)
OUTCOMES: tuple[str, ...] = tuple(o.key for o in Outcome)  # in code order: the categorical's categories
ERROR_OUTCOMES: tuple[str, ...] = tuple(o.key for o in ERRORS)
MISSED_CODES: tuple[int, ...] = tuple(int(o) for o in Outcome if o.counts_as_missed)
MISSED_KEYS: tuple[str, ...] = tuple(o.key for o in Outcome if o.counts_as_missed)
SPURIOUS_CODES: tuple[int, ...] = tuple(int(o) for o in Outcome if o.counts_as_spurious)
SPURIOUS_KEYS: tuple[str, ...] = tuple(o.key for o in Outcome if o.counts_as_spurious)
