"""Uploaded files parsed in a worker process, so the server keeps only the resulting tables.

Parsing a JSON file makes millions of small Python objects; once freed, the allocator keeps most of
their memory in the process (measured: +360-400 MB on a real server after 4-6 uploads of 8 MB runs,
though nothing referenced them any more). A child process (`python -m analysis.isolated`) parses the
upload and hands back the `Run`; its memory goes when it exits. Parent and child exchange pickles of our
own objects over a pipe: the user's bytes are only ever parsed as JSON or CSV, in the child.

A prediction file whose format is not recognised is looked at there too (`analysis.formats.sniff`): the
answer is then `Unrecognised`, the one-line error with what `sniff` sees and the mapping it proposes,
which the upload form offers.

Scoring a run the server has not scored, and reading and scoring a FewJoint system, run there too
(`analysis.isolated_jobs`, through `run_isolated`): the child answers with the scored tables and closes its
output, then does what is left (saving them to the score store) while the server goes on.
"""

from __future__ import annotations

import contextlib
import copyreg
import math
import os
import pickle
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from analysis import forking
from analysis.errors import InputError
from analysis.formats.sniff import sniff
from analysis.model import Run
from analysis.workspace import RunEntry, load_entry

TIMEOUT_S = 300.0
# What one worker may use: it is killed past CPU_LIMIT_S seconds of CPU time, and an allocation past
# MEMORY_LIMIT_BYTES of address space fails (a MemoryError), so one hostile file costs the server neither
# a core nor its memory. The input limits keep a real file's parse under 1.5 GB and a few seconds.
CPU_LIMIT_S = 120
ORPHAN_S = 60.0  # a child whose parent is gone ends itself this long after TIMEOUT_S (`_alarm`)
MEMORY_LIMIT_BYTES = 6 * 1024**3
# The exit status of a child that ran out of memory where its job has no handler of its own (pickling its
# answer, the store's `then`): the parent says so in one line, and the server's log gets no traceback.
OUT_OF_MEMORY_EXIT = 3
ROOT = Path(__file__).resolve().parents[1]
# This process's warm parent for its children (`analysis.forking`): it imports what every job needs (the
# jobs import the readers, the scorers and the store), and a child forked from it runs `_child`.
_FORKS = forking.Forks(preload=("analysis.isolated_jobs",), entry="analysis.isolated._child")


@dataclass(frozen=True)
class Unrecognised:
    """A prediction file no format recognises (read without a format or mapping): the load's one-line
    error, and what `sniff` sees in the file, its proposed mapping and what reading by it gives."""

    error: str
    sniffed: dict[str, Any]


def load_entry_or_error(
    entry: RunEntry,
    pred_data: bytes | None,
    gold_data: bytes | None,
    memory_bytes: int = MEMORY_LIMIT_BYTES,
    *,
    cache_pred: bool = True,
) -> Run | str | Unrecognised:
    """`load_entry`, or the one-line error of a file that cannot be read (runs in the child)."""
    try:
        return load_entry(entry, pred_data=pred_data, gold_data=gold_data, cache_pred=cache_pred)
    except InputError as exc:
        return _unrecognised(entry, pred_data, exc) or str(exc)
    except MemoryError:
        return f"{Path(str(entry.pred)).name}: reading it needs more than {_gib(memory_bytes)} of memory; stopped"
    except (ValueError, KeyError, TypeError) as exc:  # a file no declared format can read
        return f"{entry.pred}: cannot load: {' '.join(str(exc).split())}"
    except Exception as exc:  # anything else is still one line for the user
        return f"{Path(str(entry.pred)).name}: cannot load ({type(exc).__name__})"


def _unrecognised(entry: RunEntry, pred_data: bytes | None, exc: InputError) -> Unrecognised | None:
    """`Unrecognised` when the prediction file, read by detection, is JSON or JSONL of a shape no format
    recognises (the error names it with no format); else None."""
    if entry.format is not None or entry.mapping is not None or exc.path != str(entry.pred) or exc.fmt != "unknown":
        return None
    try:
        found = sniff(entry.pred, data=pred_data)
    except Exception:  # a file sniff cannot look into (not JSON, an odd shape): the load's error alone
        return None
    if found["detected_format"] is not None or found["container"] not in ("json", "jsonl"):
        return None
    return Unrecognised(str(exc), found)


def _gib(n: int) -> str:
    return f"{n / 1024**3:g} GB"


def load_entry_isolated(entry: RunEntry, pred_data: bytes | None, gold_data: bytes | None) -> Run | str | Unrecognised:
    """`load_entry_or_error` in a child process, within CPU_LIMIT_S and MEMORY_LIMIT_BYTES; a child that
    fails or overruns is one line too. The calling thread only waits (it holds no lock other sessions
    need), so a slow file costs the server nothing but this wait. Relative paths are the caller's: the
    child runs in the caller's working directory."""
    result = run_isolated(
        Path(str(entry.pred)).name, "reading", "analysis.isolated.load_entry_or_error", entry, pred_data, gold_data
    )
    return result if isinstance(result, Run | str | Unrecognised) else f"{Path(str(entry.pred)).name}: cannot load"


@dataclass(frozen=True)
class Answer:
    """What a job in the child answers (`value`), and what the child does after the parent has it (`then`,
    e.g. saving the scored tables to the store): the parent does not wait for `then`."""

    value: Any
    then: Callable[[], Any] | None = None


def run_isolated(name: str, doing: str, function: str, *args: Any, on_exit: Callable[[], Any] | None = None) -> Any:
    """`function(*args)` (`module.name`, called with the memory limit as `memory_bytes` when it takes one)
    in a child process within CPU_LIMIT_S and MEMORY_LIMIT_BYTES: its answer (an `Answer`'s value), or the
    one line saying why there is none (`name: <doing> it used more than ...`). The calling thread only waits;
    an `Answer`'s `then` runs in the child after the answer is read, under the same limits. `on_exit` is
    called once the child has ended, `then` included (from another thread when the answer came first)."""
    expired = threading.Event()
    waits = on_exit  # called here unless handed to the thread that waits for the child at its `then`
    try:
        child, timer = _start(((CPU_LIMIT_S, MEMORY_LIMIT_BYTES), function, args), expired)
        assert child.stdout is not None
        answer = child.stdout.read()  # to the end: the child closes its output once it has answered
        child.stdout.close()
        if answer:
            try:
                value = pickle.loads(answer)  # our own child's answer, never the user's bytes
            except Exception:  # cut short: the child was stopped while answering; its exit says why
                pass
            else:  # the child may still be at its `then`: waited for by a thread, the timer still armed
                with _FINISHING_LOCK:
                    _FINISHING.add(child)
                threading.Thread(target=_reap, args=(child, timer, on_exit), daemon=True).start()
                waits = None
                return value
        code = child.wait()
        timer.cancel()
        return _stopped(name, doing, code, expired)
    finally:
        if waits is not None:
            waits()


def run_isolated_each(names: Sequence[str], doing: str, function: str, *args: Any) -> Iterator[tuple[int, Any]]:
    """`function(*args)`, a job that answers once per item (a generator, `names[i]` naming item `i`), in one
    child process: within MEMORY_LIMIT_BYTES, and within CPU_LIMIT_S of CPU time and TIMEOUT_S of wall time
    per item (the limits are set again before each). Yields `(i, answer)` as the child answers; when the
    child stops at item `i`, `(i, the one line saying why)` and nothing after: the caller runs the items
    after `i` again (in a new child). One child for many items: the imports and anything the job keeps
    between items (a gold file's parse and shared side) are paid once, not per item."""
    expired = threading.Event()
    child, timer = _start(((CPU_LIMIT_S, MEMORY_LIMIT_BYTES, len(names)), function, args), expired)
    assert child.stdout is not None
    i = 0
    try:
        while i < len(names):
            try:
                value = pickle.load(child.stdout)  # our own child's answer, never the user's bytes
            except Exception:  # the end, or cut short: the child stopped; its exit says why
                break
            timer.cancel()
            yield i, value
            i += 1
            timer = _armed(child, expired)
    finally:
        if i < len(names):  # stopped early, or the caller stopped asking: no child is left running
            child.kill()
        child.stdout.close()
        code = child.wait()
        timer.cancel()
    if i < len(names):
        yield i, _stopped(names[i], doing, code, expired)


def _start(
    job: tuple[Any, ...], expired: threading.Event
) -> tuple[subprocess.Popen[bytes] | forking.Forked, threading.Timer]:
    """A child running `job` (its limits, function, arguments), forked from the warm parent when there is
    one, and the timer that stops it after TIMEOUT_S (setting `expired`)."""
    path = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *([path] if path else [])])}
    payload = pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL)
    child: subprocess.Popen[bytes] | forking.Forked | None = _FORKS.spawn(env)  # forked from a warm parent
    if child is not None:
        payload = forking.preamble(env) + payload
    else:  # no warm parent: a fresh interpreter, as `python -m analysis.isolated`
        child = subprocess.Popen(
            [sys.executable, "-m", "analysis.isolated"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
        )
    timer = _armed(child, expired)
    assert child.stdin is not None
    with contextlib.suppress(BrokenPipeError):  # a child that stopped early: its exit says why
        child.stdin.write(payload)
    with contextlib.suppress(BrokenPipeError):
        child.stdin.close()
    return child, timer


def _armed(child: subprocess.Popen[bytes] | forking.Forked, expired: threading.Event) -> threading.Timer:
    timer = threading.Timer(TIMEOUT_S, _expire, (child, expired))
    timer.daemon = True
    timer.start()
    return timer


def _stopped(name: str, doing: str, code: int, expired: threading.Event) -> str:
    """The one line of a child that stopped without answering."""
    if expired.is_set():
        return f"{name}: {doing} took longer than {TIMEOUT_S:.0f} s and was stopped"
    if code == -signal.SIGXCPU:  # sent by the kernel at the CPU limit (`_limit_self`)
        return f"{name}: {doing} it used more than {CPU_LIMIT_S} s of CPU time; stopped"
    if code == OUT_OF_MEMORY_EXIT:
        return f"{name}: {doing} it needs more than {_gib(MEMORY_LIMIT_BYTES)} of memory; stopped"
    return f"{name}: the process {doing} it stopped (exit {code}; out of memory?)"


def _expire(child: subprocess.Popen[bytes] | forking.Forked, expired: threading.Event) -> None:
    expired.set()
    child.kill()


# Children that have answered and are still at their `then` (saving to the store): `settle` waits for them.
_FINISHING: set[subprocess.Popen[bytes] | forking.Forked] = set()
_FINISHING_LOCK = threading.Lock()


def _reap(
    child: subprocess.Popen[bytes] | forking.Forked, timer: threading.Timer, on_exit: Callable[[], Any] | None = None
) -> None:
    try:
        child.wait()
        timer.cancel()
        with _FINISHING_LOCK:
            _FINISHING.discard(child)
    finally:
        if on_exit is not None:
            on_exit()


def settle(timeout: float | None = None) -> None:
    """Wait (at most `timeout` seconds each) for the children that answered to finish what they do after
    (tests and benchmarks, through `analysis.store.entries.flush`)."""
    with _FINISHING_LOCK:
        children = list(_FINISHING)
    for child in children:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout)


def _mapping_proxy(items: dict) -> MappingProxyType:
    return MappingProxyType(items)


# A convention's read-only tables (`MappingProxyType`, not picklable as such) travel as their dict: a scored
# run holds its convention, and the worker's answer is pickled.
copyreg.pickle(MappingProxyType, lambda proxy: (_mapping_proxy, (dict(proxy),)))


def _limit_self(cpu_s: int, memory_bytes: int, items: int = 1) -> None:
    """The child's own limits, set before it parses the user's bytes: CPU time (SIGXCPU at the soft limit,
    whose default action ends the process; SIGKILL 5 s later), address space, and no core file. With
    `items`, the hard limit leaves room for that many jobs of `cpu_s` each, `_rearm` giving each its own."""
    import resource

    signal.signal(signal.SIGXCPU, signal.SIG_DFL)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Each item may be up to a second over its whole seconds (`_rearm` rounds up): room for that too.
    resource.setrlimit(resource.RLIMIT_CPU, (_soft_cpu(cpu_s), _soft_cpu(cpu_s) + (cpu_s + 1) * (items - 1) + 5))
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    _alarm()


def _alarm() -> None:
    """A backstop on wall time: the child ends itself (SIGALRM's default action) ORPHAN_S after TIMEOUT_S,
    should the parent that stops it at TIMEOUT_S be gone (a child waiting, not computing, is past no CPU
    limit and would otherwise wait for good). Re-armed for each item of `run_isolated_each`."""
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(math.ceil(TIMEOUT_S + ORPHAN_S))


def _soft_cpu(cpu_s: int) -> int:
    """The limit counts the process's whole CPU time, in whole seconds: what it has spent so far (a fresh
    interpreter's imports, about 0.6 s; next to nothing in a child forked from the warm parent; the items
    before this one), rounded up, plus `cpu_s`. So a job is stopped only past `cpu_s` seconds of its own, as
    its message says."""
    import resource

    used = resource.getrusage(resource.RUSAGE_SELF)
    return math.ceil(used.ru_utime + used.ru_stime) + cpu_s


def _rearm(cpu_s: int) -> None:
    """The next item's CPU time: `cpu_s` from now (within the hard limit `_limit_self` set)."""
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    resource.setrlimit(resource.RLIMIT_CPU, (min(_soft_cpu(cpu_s), hard - 5), hard))
    _alarm()


def _child() -> None:
    """The job read from the input, run within its limits, its answer(s) written to the output. Out of memory
    anywhere (the job's own handlers answer a file too big to read; this is the rest: pickling a large answer,
    the store's `then`) ends the child with `OUT_OF_MEMORY_EXIT`, no traceback; a parent gone, or Ctrl-C, ends it
    quietly."""
    try:
        _job()
    except MemoryError:
        raise SystemExit(OUT_OF_MEMORY_EXIT) from None
    except BrokenPipeError:  # the parent stopped reading (it stopped the job, or it is gone): nobody to answer
        raise SystemExit(1) from None
    except KeyboardInterrupt:  # Ctrl-C on the terminal reaches the whole group: the parent says so, once
        raise SystemExit(130) from None


def _job() -> None:
    # Through the module's import name, not `__main__`: an `Unrecognised` pickled as `__main__.Unrecognised`
    # would not load in the parent.
    import importlib
    import inspect

    from analysis import isolated

    try:
        limits, function, args = pickle.load(sys.stdin.buffer)
    except EOFError:  # no job came: the parent was gone (interrupted) before it wrote one
        raise SystemExit(1) from None
    cpu_s, memory_bytes, *each = limits  # `each`: how many items a job of `run_isolated_each` answers
    isolated._limit_self(cpu_s, memory_bytes, *each)
    module, _, attr = function.rpartition(".")
    call = getattr(importlib.import_module(module), attr)
    takes_limit = "memory_bytes" in inspect.signature(call).parameters
    result = call(*args, memory_bytes=memory_bytes) if takes_limit else call(*args)
    if each:
        for _ in range(each[0]):
            isolated._rearm(cpu_s)
            value = next(result, _DONE)
            if value is _DONE:
                break
            sys.stdout.buffer.write(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
            sys.stdout.buffer.flush()
        return
    answer = result if isinstance(result, isolated.Answer) else isolated.Answer(result)
    sys.stdout.buffer.write(pickle.dumps(answer.value, protocol=pickle.HIGHEST_PROTOCOL))
    sys.stdout.buffer.flush()
    # The answer is whole: the output pipe is closed (its descriptor pointed at /dev/null), so the parent
    # reads to its end now, before `then` runs.
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    if answer.then is not None:
        answer.then()


_DONE = object()


if __name__ == "__main__":
    _child()
