"""The dashboard's error boundary: bad input shows its one-line `InputError` in place; anything unforeseen
is logged with its traceback on the server (stderr) and shown to the user as one short line, without
paths, SQL or a traceback (a server shared on a network must not show its insides)."""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from typing import Any, ParamSpec

import streamlit as st

from analysis.errors import InputError

P = ParamSpec("P")
log = logging.getLogger("dst.dashboard")
if not log.handlers:  # Streamlit configures its own loggers only: ours goes to stderr, where the server logs
    _handler = logging.StreamHandler(sys.stderr)
    _handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    log.addHandler(_handler)
    log.setLevel(logging.INFO)
    log.propagate = False


def message(exc: BaseException, what: str) -> str:
    """What the user is shown for `exc`, raised while doing `what` ("loading the upload", ...): an
    `InputError`'s own line; otherwise a short line naming only the kind of failure, the traceback logged.

    >>> message(InputError("run.json", "jsonl", "truncated JSON"), "loading the upload")
    'run.json [format: jsonl]: truncated JSON'
    """
    if isinstance(exc, InputError):
        return str(exc)
    log.error("unexpected error while %s", what, exc_info=exc)
    if isinstance(exc, RuntimeError) and "encrypted" in str(exc).lower():  # zipfile's password-protected member
        return f"{what} failed: the archive is encrypted (password-protected); use an unencrypted file"
    if isinstance(exc, MemoryError):
        return f"{what} failed: the file needs more memory than the server has"
    return f"{what} failed: an unexpected error ({type(exc).__name__}); the details are in the server's log"


def guarded(what: str, run: Callable[..., Any], *args: Any) -> bool:
    """`run(*args)`, with any exception shown in place as one short message (see `message`); False when
    it failed. Streamlit's own control flow (`st.stop`, `st.rerun`, `st.switch_page`) passes through: it
    raises BaseExceptions, which `except Exception` does not catch."""
    try:
        run(*args)
    except Exception as exc:
        st.error(message(exc, what))
        return False
    return True


def in_place(what: str) -> Callable[[Callable[P, Any]], Callable[P, None]]:
    """A decorator: the function's exceptions shown in place as `guarded` shows them. For the body of an
    `st.fragment`: Streamlit handles an exception raised in a fragment itself (its generic exception box,
    with the traceback), before any `guarded` around the page sees it, on the page's run as on the
    fragment's own reruns. Put it under `@st.fragment`."""

    def decorate(fn: Callable[P, Any]) -> Callable[P, None]:
        @functools.wraps(fn)
        def run(*args: P.args, **kwargs: P.kwargs) -> None:
            try:
                fn(*args, **kwargs)
            except Exception as exc:
                st.error(message(exc, what))

        return run

    return decorate
