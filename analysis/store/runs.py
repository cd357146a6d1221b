"""Manifest runs through the store: the key of a `[[runs]]` entry (no file parsed), its scored tables
(stored, or scored and stored), and many runs scored into the store a few at a time."""

from __future__ import annotations

import functools
import multiprocessing
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path

from analysis import settings
from analysis.errors import InputError
from analysis.formats.mapping import Mapping
from analysis.loading import load_run
from analysis.model import Run, RunInfo
from analysis.scoring import Scored, score_run
from analysis.store import entries
from analysis.workspace import RunEntry, Workspace, load_entry


def key(
    entry: RunEntry, convention: str | None, root: Path | None = None, *, given: Sequence[str] | None = None
) -> str:
    """The store key of a manifest entry under `convention` (None: the files' own), from the files'
    content digests (remembered per path, size and modification time, so a warm restart reads no file).
    `given`: the paths as a command line named them, part of the key (the run's `sources` name them)."""
    options = entries.entry_options(entry.meta, entry.format, entry.gold_format)
    # How the files are read is part of what the run is: another declared mapping or gold field is another run.
    if entry.mapping is not None:
        options["mapping"] = asdict(entry.mapping)
    if entry.gold_field is not None:
        options["gold_field"] = entry.gold_field
    if given is not None:
        options["given"] = list(given)
    return entries.entry_key(
        entry.pred, entry.gold, options, convention, root=root if root is not None else entries.store_root()
    )


def scored(
    entry: RunEntry,
    convention: str | None,
    run: Callable[[], Run] | None = None,
    *,
    background: bool = False,
    score: Callable[[Run], Scored] | None = None,
    given: Sequence[str] | None = None,
    save_new: bool = True,
) -> Scored:
    """The entry's scored tables: read from the store when it holds them, else scored (from `run()`, or
    the entry's files; by `score(run)`, default `score_run` under `convention`) and stored for the next
    start (`background`: by a thread). Without a store (`DST_CACHE_DIR=""`), scored. `given`: see `key`."""
    root = entries.store_root()

    def compute() -> Scored:
        loaded = run() if run is not None else load_entry(entry)
        return score(loaded) if score is not None else score_run(loaded, convention)

    if root is None:
        return compute()
    return entries.score(
        key(entry, convention, root, given=given), compute, root=root, background=background, save_new=save_new
    )


def scored_files(
    pred: str,
    gold: str | None = None,
    *,
    convention: str | None = None,
    pred_format: str | None = None,
    gold_format: str | None = None,
    meta: RunInfo | None = None,
    pred_deltas: bool | None = None,
    pred_mapping: Mapping | None = None,
    gold_field: str | None = None,
    run: Callable[[], Run] | None = None,
    store: bool = False,
) -> Scored:
    """The run of files a command names (`load_run`'s arguments, paths as given), scored under `convention`
    through the store: read back when it holds the run (no file parsed), else loaded (or `run()`) and
    scored, and stored only with `store` (the commands' `--store`): writing eleven tables costs a one-off
    command more than parsing and scoring a MultiWOZ-size file again (1.8 s against 0.5 s, measured). A convention the scorer refuses is an `InputError` naming the prediction file."""
    info = meta if meta is not None else RunInfo()
    if pred_deltas is not None:
        info = replace(info, pred_deltas=pred_deltas)
    entry = RunEntry(
        info,
        Path(pred),
        Path(gold) if gold is not None else None,
        pred_format,
        gold_format,
        mapping=pred_mapping,
        gold_field=gold_field,
    )

    def load() -> Run:
        return load_run(
            pred,
            gold,
            pred_format=pred_format,
            gold_format=gold_format,
            meta=meta,
            pred_deltas=pred_deltas,
            pred_mapping=pred_mapping,
            gold_field=gold_field,
        )

    def score(loaded: Run) -> Scored:
        try:
            return score_run(loaded, convention)
        except ValueError as exc:  # the user's input too
            raise InputError(pred, loaded.meta.formats[0], str(exc)) from None

    given = [pred, *([gold] if gold is not None else [])]
    if not all(_regular(path) for path in given):  # missing, a folder, a FIFO: the reader's message, unread here
        return score(run() if run is not None else load())
    return scored(entry, convention, run or load, score=score, given=given, save_new=store)


def _given(run: Run) -> Run:
    return run


def _regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def score_workspace(workspace: Workspace, convention: str | None = None) -> dict[str, Scored]:
    """Every run of the workspace scored under `convention` (None: each run's own, as the dashboard scores
    it) through the store: a run it holds is read back, nothing parsed; any other is taken from
    `workspace.runs` (loaded already) or loaded now, scored and stored. A run that does not load goes to
    `workspace.failed` with its one-line error (before the other failures, in manifest order); a
    convention the scorer refuses is an `InputError` naming the workspace and the run."""
    scoreds: dict[str, Scored] = {}
    failed: dict[str, str] = {}
    for entry in workspace.entries:
        if entry.name in workspace.failed:
            continue
        loaded = workspace.runs.get(entry.name)
        run: Callable[[], Run] | None = None if loaded is None else functools.partial(_given, loaded)
        try:
            scoreds[entry.name] = scored(entry, convention or entry.meta.convention, run)
        except InputError as exc:
            failed[entry.name] = str(exc)
        except ValueError as exc:
            raise InputError(str(workspace.path), "workspace", f"run {entry.name}: {exc}") from None
    if failed:
        workspace.failed = {**failed, **workspace.failed}
    return scoreds


def stored(entry: RunEntry, convention: str | None, *, tables: tuple[str, ...] = ("runs",)) -> entries.Entry | None:
    """The entry's stored tables if present and whole, else None. Checked: its header, and each of `tables`
    has the size its header recorded (a file of another size gets the full check, which removes it with
    a warning line); a same-size file that is damaged fails the query that reads it, with its name."""
    root = entries.store_root()
    if root is None:
        return None
    found = entries._header(root, key(entry, convention, root))
    if found is None:
        return None
    if entries.part_sizes_problem(found, tables) is not None:
        return entries.lookup(root, found.key, tables=tables, deep=False)
    return found


_PRELOAD = ("analysis.store.runs", "analysis.store.parts")
# A worker holds the last few parsed files (`analysis.formats.MEMORY_ENTRIES`) and one run at a time; it is
# replaced after this many runs, in case anything else grows (a worker's RSS stays about flat across runs).
_RUNS_PER_WORKER = 200


def _ensure(entry: RunEntry, convention: str | None, root: str, known: str | None = None) -> entries.Entry | None:
    path = Path(root)
    store_key = known or key(entry, convention, path)
    # The prediction file is read once: the store keeps its scored tables, so its parse is not cached too
    # (about 13 ms a MultiWOZ-size run, and a file written per run); the shared gold file stays cached.
    return entries.ensure(store_key, lambda: score_run(load_entry(entry, cache_pred=False), convention), root=path)


def _one_blas_thread() -> None:
    """A worker's start. Its matrix products (the stored intervals' resampling) run on one BLAS thread: the
    workers already use every core, and OpenBLAS's own threads, one per core in each worker, spin while
    waiting for one another (1,000 runs scored by 2 workers: about 0.3 CPU-s more per run). The objects
    the worker starts with (the modules the fork server imported, ~68,000) are frozen out of garbage
    collection: every full collection would traverse them again (about 2 ms a run) and touch their pages."""
    import gc

    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")
    gc.freeze()


def default_workers() -> int:
    """How many processes score runs at a time: `DST_SCORE_WORKERS` when set (a sweep on a bigger machine),
    else the cores this process may use, at most 2 (the server's other sessions keep the rest of a bigger
    machine). A value that is not a positive integer is a ValueError naming the variable."""
    if settings.text("DST_SCORE_WORKERS"):
        return settings.positive_int("DST_SCORE_WORKERS")
    return max(1, min(2, len(os.sched_getaffinity(0))))


def ensure_all(
    items: Sequence[RunEntry], convention: str | None, *, workers: int | None = None, root: Path | None = None
) -> list[entries.Entry | None]:
    """Every entry scored into the store (those already stored are only checked), `workers` processes at
    a time (default: the cores, at most 2), each scoring one run at a time: memory is bounded by a few
    runs, not by how many there are. None for an entry that could not be written."""
    root = root if root is not None else entries.store_root()
    if root is None:
        return [None] * len(items)
    workers = workers or default_workers()
    # Keys are computed here, once: every worker stores under the key this process will look up.
    keys = [key(item, convention, root) for item in items]
    if workers == 1 or len(items) <= 1:
        return [_ensure(item, convention, str(root), k) for item, k in zip(items, keys, strict=True)]
    # Fresh workers (forkserver), each replaced after `_RUNS_PER_WORKER` runs to bound its memory. The fork
    # server imports the scoring modules once (`_PRELOAD`), so a new worker starts without importing pandas
    # and the scorer again (about 1 s of CPU each). multiprocessing.Pool, not ProcessPoolExecutor: the
    # latter's max_tasks_per_child hangs once the first workers retire (Python 3.11).
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(_PRELOAD))  # no effect if this process's fork server already runs
    jobs = [(item, convention, str(root), k) for item, k in zip(items, keys, strict=True)]
    with context.Pool(workers, initializer=_one_blas_thread, maxtasksperchild=_RUNS_PER_WORKER) as pool:
        return pool.starmap(_ensure, jobs, chunksize=1)
