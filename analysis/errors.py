"""The one exception type for bad input, raised at the boundary where files become tables."""

from __future__ import annotations


class InputError(ValueError):
    """A file could not be read as the format it claims (or was detected) to be.

    The message always names the file, the format and the first offending record, so a user can
    open the file at the right place:

    >>> str(InputError("run.json", "trade", "truncated JSON", dialogue_id="MUL0001", turn=3, field="pred_bs_ptr"))
    "run.json [format: trade]: truncated JSON (first offending record: dialogue 'MUL0001', turn 3, field 'pred_bs_ptr')"
    """

    def __init__(
        self,
        path: str,
        fmt: str | None,
        problem: str,
        *,
        dialogue_id: str | None = None,
        turn: int | str | None = None,
        field: str | None = None,
    ) -> None:
        self.path = str(path)
        self.fmt = fmt or "unknown"
        self.problem = problem
        self.dialogue_id = dialogue_id
        self.turn = turn
        self.field = field
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.dialogue_id is not None:
            where.append(f"dialogue {_short(repr(self.dialogue_id))}")
        if self.turn is not None:
            where.append(f"turn {_short(str(self.turn))}")
        if self.field is not None:
            where.append(f"field {_short(repr(self.field))}")
        located = f" (first offending record: {', '.join(where)})" if where else ""
        # One line, always: the CLI prints exactly this to stderr and the dashboard shows it as-is.
        problem = _short(" ".join(self.problem.split()), PROBLEM_CHARS)
        return f"{self.path} [format: {self.fmt}]: {problem}{located}"


RECORD_CHARS = 200  # a dialogue id, turn or field shown in a message: a hostile file's 2 MB id is cut here
PROBLEM_CHARS = 2_000


def _short(text: str, limit: int = RECORD_CHARS) -> str:
    """`text`, or its start and how much was left out when it is longer than `limit` characters.

    >>> _short("x" * 300, 10)
    'xxxxxxxxxx… (300 characters)'
    """
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"
