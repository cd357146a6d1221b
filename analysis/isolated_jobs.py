"""Scoring the server has not done before, in the worker process of `analysis.isolated`: a workspace run's
files read and scored (and saved to the score store after the server has its tables), an upload's run
scored under another convention, a FewJoint system's files read and scored. The server's request thread
only waits; a job past the worker's CPU-time or memory limit is stopped and reported in one line.

What comes back is the scored tables, pickled (pandas' pickle of a MultiWOZ-size run's tables: 10.6 MB,
0.03 s to load; reading the same tables back from the store's Parquet files takes 0.25 s), or the one line
of a file that does not load; an error the scorer raises on the user's input (a convention that refuses the
run) is raised again in the server as the in-process scorer raised it (`Refused`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from analysis.errors import InputError
from analysis.isolated import (
    MEMORY_LIMIT_BYTES,
    Answer,
    Unrecognised,
    _gib,
    load_entry_or_error,
    run_isolated,
    run_isolated_each,
    settle,
)
from analysis.model import Run
from analysis.scoring import Scored, score_run
from analysis.store import entries
from analysis.workspace import FewJointEntry, RunEntry

entries.FLUSHERS.append(settle)  # `entries.flush()` waits for the workers still saving what they scored


@dataclass(frozen=True)
class Refused:
    """The scorer's `InputError` (its fields) or `ValueError` (its message), raised again by `raise_`."""

    problem: str
    path: str | None = None
    fmt: str | None = None
    dialogue_id: str | None = None
    turn: int | str | None = None
    field: str | None = None

    @classmethod
    def of(cls, exc: ValueError) -> Refused:
        if isinstance(exc, InputError):
            return cls(exc.problem, exc.path, exc.fmt, exc.dialogue_id, exc.turn, exc.field)
        return cls(str(exc))

    def raise_(self) -> None:
        if self.path is None:
            raise ValueError(self.problem)
        raise InputError(
            self.path, self.fmt, self.problem, dialogue_id=self.dialogue_id, turn=self.turn, field=self.field
        )


@dataclass(frozen=True)
class NotLoaded:
    """The one line of a run whose files do not load (or whose worker was stopped)."""

    line: str


@dataclass(frozen=True)
class Elsewhere:
    """A run of a batch that another process stored (found stored once claimed, or after waiting for its claim)."""


@dataclass(frozen=True)
class Unwritten:
    """A run of a batch scored but not written: the store refused the write (read-only, full, not a folder),
    as the warning the store logs says. The dashboard scores it again when a page needs it."""

    line: str


@dataclass(frozen=True)
class _Busy:
    """(From the child.) A run of a batch whose claim another process holds: `score_entries_isolated` waits
    for that process, then looks again."""


def _score(run: Run, convention: str | None, name: str, memory_bytes: int) -> Scored | Refused | NotLoaded:
    try:
        return score_run(run, convention)
    except ValueError as exc:  # InputError too: the user's input, raised again in the server
        return Refused.of(exc)
    except MemoryError:
        return NotLoaded(f"{name}: scoring it needs more than {_gib(memory_bytes)} of memory; stopped")


def score_entry_job(
    entry: RunEntry,
    convention: str | None,
    root: str | None,
    key: str | None,
    memory_bytes: int = MEMORY_LIMIT_BYTES,
    *,
    cache_pred: bool = True,
) -> Answer:
    """(In the child.) The entry's files read and scored under `convention`; once the parent has the tables,
    saved in the store at `root` under `key` (when given)."""
    loaded = load_entry_or_error(entry, None, None, memory_bytes, cache_pred=cache_pred)
    if isinstance(loaded, Unrecognised):
        return Answer(NotLoaded(loaded.error))
    if isinstance(loaded, str):
        return Answer(NotLoaded(loaded))
    scored = _score(loaded, convention, Path(str(entry.pred)).name, memory_bytes)
    if not isinstance(scored, Scored) or root is None or key is None:
        return Answer(scored)
    return Answer(scored, functools.partial(entries.save, Path(root), key, scored))


def score_entry_isolated(
    entry: RunEntry, convention: str | None, root: Path | None = None, key: str | None = None
) -> Scored | NotLoaded | Refused:
    """A workspace run the server has not scored: read and scored under `convention` in the worker, and
    saved in the store at `root` under `key` by the worker after answering. Its claim (`entries.claimed`)
    is held here from before the worker starts until it has ended, its save included: another process
    needing the same run (a batch, another server, another session's page) waits instead of scoring it too.
    A run whose claim another process holds is waited for the same way and read from the store once that
    process stored it; scored here when it could not. `NotLoaded`: its files do not load, or the worker went
    past its limits (one line); `Refused`: the scorer refused it."""
    held = None
    if root is not None and key is not None:
        held, stored = entries.claim_or_stored(root, key)
        if stored is not None:
            return stored
    name = Path(str(entry.pred)).name
    found = run_isolated(
        name, "reading and scoring", "analysis.isolated_jobs.score_entry_job", entry, convention,
        None if root is None else str(root), key, on_exit=None if held is None else held.close,
    )  # fmt: skip
    return NotLoaded(found) if isinstance(found, str) else _checked(found, name)


def score_entries_job(
    jobs: Sequence[tuple[RunEntry, str | None, str]], root: str, memory_bytes: int = MEMORY_LIMIT_BYTES
) -> Iterator[NotLoaded | Refused | Elsewhere | Unwritten | _Busy | None]:
    """(In the child, through `run_isolated_each`.) Each (entry, convention, store key) read, scored and saved
    in the store at `root`, one after the other in this one process: None once it is stored (or could not
    be written: `Unwritten`, the server scores it again when a page needs it), else the entry's `NotLoaded` or
    `Refused`;
    `Elsewhere` when another process stored it meanwhile, `_Busy` while another process holds its claim
    (`entries.claimed`, held here while a run is read, scored and saved).
    Only that goes back: the server reads a stored run's tables when a page needs them. The prediction's
    parse is not cached (the store keeps its tables); the gold file's is, and its shared side, for the runs
    after the first."""
    from analysis.store.runs import _one_blas_thread

    _one_blas_thread()  # as a batch worker of `ensure_all`: one BLAS thread, the imported objects frozen
    store = Path(root)
    for entry, convention, key in jobs:
        with entries.claimed(store, key) as mine:  # held while the run is read, scored and saved
            if not mine:
                yield _Busy()
                continue
            if entries.lookup(store, key, deep=False) is not None:  # stored by another process meanwhile
                yield Elsewhere()
                continue
            answer = score_entry_job(entry, convention, root, key, memory_bytes, cache_pred=False)
            if isinstance(answer.value, Scored):
                assert answer.then is not None
                saved = answer.then()
                name = Path(str(entry.pred)).name
                yield None if saved is not None else Unwritten(f"{name}: scored, but not written to the score store")
            else:
                yield answer.value


# At most how many runs one child scores before the next takes over. A child's first run costs about 1.9 s
# (the gold file's parse read from the cache, its shared side computed), each next one about 0.3 s: so each
# worker takes two long batches (1,000 runs, 2 workers: 10 children of 100), and a child that stops (a hostile
# file past its limits) loses no other run's work, the runs after it going to a new child.
ENTRIES_PER_CHILD = 100


def score_entries_isolated(
    jobs: Sequence[tuple[RunEntry, str | None, str]],
    root: Path,
    *,
    workers: int,
    done: Callable[[int, NotLoaded | Refused | Elsewhere | Unwritten | None], None],
) -> None:
    """Workspace runs the store does not hold, each (entry, convention, store key) read, scored and saved in
    the store at `root` by `score_entries_job` in children within the worker's limits, `workers` children at
    a time, each taking the next few runs (at most ENTRIES_PER_CHILD). `done(i, answer)` is called (from
    a thread of this function) as the run `jobs[i]` is answered; a run whose child stopped gets that line as
    a `NotLoaded`, and the runs after it go to another child. Returns when every run is answered.

    A run another process is scoring into the same store at the time (its claim held) is skipped, and after
    the others, waited for and looked at again: `Elsewhere` when that process stored it, else scored here
    (a run it could not store: its one line is this process's to give)."""
    import threading

    busy: list[int] = []
    lock = threading.Lock()

    def first(i: int, answer: NotLoaded | Refused | Elsewhere | Unwritten | _Busy | None) -> None:
        if isinstance(answer, _Busy):
            with lock:
                busy.append(i)
        else:
            done(i, answer)

    _score_all(jobs, list(range(len(jobs))), root, workers, first)
    if not busy:
        return
    for i in busy:  # each as long as a worker may take over a run (its process stops it then)
        entries.await_claim(root, jobs[i][2], entries.CLAIM_WAIT_S)

    def again(i: int, answer: NotLoaded | Refused | Elsewhere | Unwritten | _Busy | None) -> None:
        if isinstance(answer, _Busy):  # claimed again by then (a third process): its own answer
            answer = NotLoaded(f"{Path(str(jobs[i][0].pred)).name}: another process is scoring it; not waited for")
        done(i, answer)

    _score_all(jobs, sorted(busy), root, workers, again)


def _score_all(
    jobs: Sequence[tuple[RunEntry, str | None, str]],
    indices: list[int],
    root: Path,
    workers: int,
    done: Callable[[int, NotLoaded | Refused | Elsewhere | Unwritten | _Busy | None], None],
) -> None:
    """The runs `indices` of `jobs` scored in batches by `workers` children at a time (`score_entries_isolated`)."""
    import queue
    import threading

    if not indices:
        return
    workers = max(1, min(workers, len(indices)))
    # Two batches per worker (when there are several workers: so one finishing early takes over the other's).
    size = max(1, min(ENTRIES_PER_CHILD, -(-len(indices) // (workers * 2 if workers > 1 else 1))))
    batches: queue.SimpleQueue[list[int]] = queue.SimpleQueue()
    for start in range(0, len(indices), size):
        batches.put(indices[start : start + size])

    def work() -> None:  # batch after batch until none is left; a batch's runs after a stopped child, in a new one
        while True:
            try:
                batch = batches.get_nowait()
            except queue.Empty:
                return
            while batch:
                batch = _score_batch(jobs, batch, root, done)

    threads = [threading.Thread(target=work, daemon=True, name=f"score-entries-{n}") for n in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _score_batch(
    jobs: Sequence[tuple[RunEntry, str | None, str]],
    batch: list[int],
    root: Path,
    done: Callable[[int, NotLoaded | Refused | Elsewhere | Unwritten | _Busy | None], None],
) -> list[int]:
    """The runs `batch` names scored by one child, each answered to `done`; the runs after the one at which the
    child stopped (left for a new child)."""
    names = [Path(str(jobs[i][0].pred)).name for i in batch]
    last = -1
    try:
        answers = run_isolated_each(
            names,
            "reading and scoring",
            "analysis.isolated_jobs.score_entries_job",
            [jobs[i] for i in batch],
            str(root),
        )
        for j, value in answers:
            if isinstance(value, str):  # the child stopped at this run: its line
                value = NotLoaded(value)
            elif not isinstance(value, NotLoaded | Refused | Elsewhere | Unwritten | _Busy | None):
                value = NotLoaded(f"{names[j]}: cannot score")
            done(batch[j], value)
            last = j
    except Exception as exc:  # no child could be started (out of processes, say): one line each
        for j in range(last + 1, len(batch)):
            done(batch[j], NotLoaded(f"{names[j]}: cannot score ({type(exc).__name__})"))
        return []
    return batch[last + 1 :]


def score_run_job(
    run: Run, convention: str | None, memory_bytes: int = MEMORY_LIMIT_BYTES
) -> Scored | Refused | NotLoaded:
    """(In the child.) `run` scored under `convention`."""
    return _score(run, convention, run.meta.sources[0] if run.meta.sources else run.meta.run_id, memory_bytes)


def score_run_isolated(run: Run, convention: str | None, name: str) -> Scored:
    """An uploaded run scored under `convention` in the worker (its tables are shipped there: 9.7 MB for a
    MultiWOZ-size run). The scorer's error is raised as in process; a worker past its limits is an
    `InputError` naming `name` in one line."""
    found = run_isolated(Path(name).name, "scoring", "analysis.isolated_jobs.score_run_job", run, convention)
    if isinstance(found, str):
        raise InputError(name, None, found)
    result = _checked(found, name)
    if isinstance(result, NotLoaded):
        raise InputError(name, None, result.line)
    if isinstance(result, Refused):
        result.raise_()
    assert isinstance(result, Scored)
    return result


def _checked(found: object, name: str) -> Scored | NotLoaded | Refused:
    if isinstance(found, Scored | NotLoaded | Refused):
        return found
    return NotLoaded(f"{Path(name).name}: cannot score")


def fewjoint_job(
    gold: str,
    preds: Sequence[str],
    name: str,
    shots: int | None,
    averaging: str,
    memory_bytes: int = MEMORY_LIMIT_BYTES,
) -> object:
    """(In the child.) A FewJoint system's files read and scored with `averaging`; its one line otherwise."""
    from analysis.fewjoint.align import load_fewjoint_system
    from analysis.fewjoint.scoring import score_fewjoint

    try:
        return score_fewjoint(load_fewjoint_system(gold, preds, name=name, shots=shots), averaging=averaging)
    except InputError as exc:
        return str(exc)
    except MemoryError:
        return f"{name}: reading its files needs more than {_gib(memory_bytes)} of memory; stopped"
    except Exception as exc:  # anything else is still one line for the user
        return f"{name}: cannot score ({type(exc).__name__})"


def fewjoint_isolated(gold: str, preds: Sequence[str], name: str, shots: int | None, averaging: str) -> object:
    """A FewJoint system's files read and scored in the worker: its `FewJointResult`, or the one line of
    files that do not load or of a worker past its limits (naming the system)."""
    return run_isolated(
        name, "reading", "analysis.isolated_jobs.fewjoint_job", gold, list(preds), name, shots, averaging
    )


def fewjoint_compared_job(
    systems: Sequence[FewJointEntry], names: Sequence[str], memory_bytes: int = MEMORY_LIMIT_BYTES
) -> object:
    """(In the child.) The FewJoint systems read, scored (micro averaging) and compared over seeds and
    sentences; the one line of the first that does not load otherwise."""
    from analysis.fewjoint.align import load_fewjoint_system
    from analysis.fewjoint.compare import compare_fewjoint
    from analysis.fewjoint.scoring import score_fewjoint

    label = ", ".join(names)
    try:
        results = {
            name: score_fewjoint(
                load_fewjoint_system(str(s.gold), [str(p) for p in s.pred], name=s.name, shots=s.shots),
                averaging="micro",
            )
            for name, s in zip(names, systems, strict=True)
        }
        return compare_fewjoint(results)
    except InputError as exc:
        return str(exc)
    except MemoryError:
        return f"{label}: reading their files needs more than {_gib(memory_bytes)} of memory; stopped"
    except Exception as exc:  # anything else is still one line for the user
        return f"{label}: cannot compare ({type(exc).__name__})"


def fewjoint_compared_isolated(systems: Sequence[FewJointEntry], names: Sequence[str]) -> object:
    """`fewjoint_compared_job` in the worker: a `FewJointComparison`, or one line."""
    return run_isolated(
        ", ".join(names), "comparing", "analysis.isolated_jobs.fewjoint_compared_job", list(systems), list(names)
    )
