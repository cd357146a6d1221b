"""A workspace of several runs the store does not hold is scored into it by worker children, many runs per
child and two children at a time (`ui.data._score_new`, `analysis.isolated_jobs.score_entries_isolated`,
`analysis.isolated.run_isolated_each`), not one child per run handing its tables back: each run keeps the
worker's limits, a run past them costs no other run its work, a file that does not load is its one line,
and no run is scored twice."""

from __future__ import annotations

import gzip
import json
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from analysis import isolated, isolated_jobs
from analysis.isolated_jobs import NotLoaded
from analysis.scoring import Scored, score_run
from analysis.store import entries as store_entries
from analysis.store import runs as store_runs
from analysis.workspace import load_entry, read_manifest
from tests.test_isolated_limits import _hostile_entry
from ui import data

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo"
SIMULATED = "simulated-A-mwz-en-predicted"


def _copies(tmp_path: Path, n: int, *, broken: int | None = None) -> Path:
    """A manifest of `n` distinct runs: the demo's simulated MultiWOZ run with one predicted value changed
    per copy (so each has its own store key), the `broken` one (index) not JSON at all."""
    entry = next(e for e in read_manifest(DEMO / "workspace.toml").entries if e.name == SIMULATED)
    with gzip.open(entry.pred, "rt", encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle if line.strip()]
    tmp_path.mkdir(parents=True, exist_ok=True)
    gold = tmp_path / Path(str(entry.gold)).name
    shutil.copy(entry.gold, gold)
    runs = []
    for i in range(n):
        pred = tmp_path / f"run-{i}.jsonl"
        if i == broken:
            pred.write_text('{"dialogue_id": "x", "turn_index": 0, "pred": {\n', encoding="utf-8")
        else:
            changed = json.loads(json.dumps(records))
            changed[i % len(changed)]["pred"] = {"hotel": {"name": f"copy {i}"}}
            pred.write_text("".join(json.dumps(r) + "\n" for r in changed), encoding="utf-8")
        runs.append(
            f'[[runs]]\nname = "run-{i}"\nsystem = "copy"\ndataset = "MultiWOZ 2.1"\nformat = "{entry.format}"\n'
            f'convention = "exact"\npred = "{pred.name}"\ngold = "{gold.name}"\n'
        )
    manifest = tmp_path / "workspace.toml"
    manifest.write_text('[workspace]\nname = "copies"\n\n' + "\n".join(runs), encoding="utf-8")
    return manifest


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DST_CACHE_DIR", str(tmp_path / "cache"))
    root = store_entries.store_root()
    assert root is not None
    return root


def _scheduled(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The store keys handed to the batch scorer, in order (it still scores them)."""
    keys: list[str] = []
    real = data.score_entries_isolated

    def recording(jobs, root, **kwargs):  # type: ignore[no-untyped-def]
        keys.extend(key for _, _, key in jobs)
        return real(jobs, root, **kwargs)

    monkeypatch.setattr(data, "score_entries_isolated", recording)
    return keys


def test_a_new_workspace_is_scored_into_the_store_in_batches(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = read_manifest(_copies(tmp_path / "runs", 5, broken=3))
    scheduled = _scheduled(monkeypatch)
    monkeypatch.setattr(data, "_first_read", lambda *a: pytest.fail("a run read by a child of its own"))
    progress: list[tuple[int, int]] = []
    sources, failed = data.load_workspace(workspace, None, lambda done, total: progress.append((done, total)))

    assert list(sources) == ["run-0", "run-1", "run-2", "run-4"]  # manifest order
    assert list(failed) == ["run-3"]
    # The same line the one-run path gives (the file, its format, the first offending line).
    assert failed["run-3"] == isolated.load_entry_or_error(workspace.entries[3], None, None)
    assert failed["run-3"].endswith(
        "run-3.jsonl [format: jsonl]: line 1 is not valid JSON (Expecting property name enclosed in double quotes)"
    )
    assert len(scheduled) == 5 == len(set(scheduled))
    assert progress[-1] == (5, 5) and all(total == 5 for _, total in progress)
    # Each loaded run is in the store, with the tables this process's scorer gives.
    for entry in workspace.entries:
        if entry.name == "run-3":
            assert store_runs.stored(entry, entry.meta.convention) is None
            continue
        stored = store_runs.stored(entry, entry.meta.convention)
        assert stored is not None, entry.name
        expected = score_run(load_entry(entry), entry.meta.convention)
        read_back = store_entries.load(store, stored.key)
        assert read_back is not None
        pd.testing.assert_series_equal(
            read_back.turns["joint_correct"].reset_index(drop=True),
            expected.turns["joint_correct"].reset_index(drop=True),
            check_dtype=False,
        )

    # Read again (a rerun): nothing is scored or read again, the failure is its same line.
    monkeypatch.setattr(data, "score_entries_isolated", lambda *a, **k: pytest.fail("scored twice"))
    again = data.load_workspace(workspace)
    assert list(again[0]) == list(sources) and again[1] == failed


def test_two_reruns_at_once_score_each_run_once(tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workspace = read_manifest(_copies(tmp_path / "runs", 4))
    scheduled = _scheduled(monkeypatch)
    found: list[tuple[dict, dict]] = []
    threads = [threading.Thread(target=lambda: found.append(data.load_workspace(workspace))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(scheduled) == sorted(set(scheduled)) and len(scheduled) == 4
    assert [list(s) for s, _ in found] == [["run-0", "run-1", "run-2", "run-3"]] * 2
    assert [f for _, f in found] == [{}, {}]


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
def test_a_run_past_the_cpu_limit_costs_no_other_run_its_work(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One child takes three runs; the second spins past the CPU limit: the first is answered, the second is
    the limit's line, and the third goes to a new child."""
    monkeypatch.setattr(isolated, "CPU_LIMIT_S", 1)
    good = read_manifest(_copies(tmp_path / "runs", 3)).entries
    hostile = _hostile_entry(tmp_path)
    jobs = [(entry, "exact", store_runs.key(entry, "exact", store)) for entry in (good[0], hostile, good[1])]
    jobs[1] = (hostile, None, store_runs.key(hostile, None, store))
    answers: dict[int, object] = {}
    children = _children(monkeypatch)
    isolated_jobs.score_entries_isolated(jobs, store, workers=1, done=answers.__setitem__)
    assert answers == {
        0: None,
        1: NotLoaded("hostile.json: reading and scoring it used more than 1 s of CPU time; stopped"),
        2: None,
    }
    assert children == [3, 1]  # the first child's three runs, then the run after the hostile one
    for entry, convention, _ in (jobs[0], jobs[2]):
        assert store_runs.stored(entry, convention) is not None


def test_each_item_has_the_cpu_limit_to_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(isolated, "CPU_LIMIT_S", 1)
    # Three items of 0.6 s of CPU each: 1.8 s in one child, past one limit, within each item's own.
    answers = list(isolated.run_isolated_each(["a", "b", "c"], "spinning", "tests.test_workspace_batch.spin", 0.6))
    assert answers == [(0, "a"), (1, "b"), (2, "c")]
    answers = list(isolated.run_isolated_each(["a", "b", "c"], "spinning", "tests.test_workspace_batch.spin", 3.0))
    assert answers == [(0, "a: spinning it used more than 1 s of CPU time; stopped")]


def spin(seconds: float) -> object:
    """(In the child.) Answers "a", "b", "c", each after `seconds` of CPU time."""
    import time

    for name in "abc":
        until = time.process_time() + seconds
        while time.process_time() < until:
            pass
        yield name


def _children(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many runs each child of `score_entries_isolated` was given, in order."""
    sizes: list[int] = []
    real = isolated_jobs.run_isolated_each

    def recording(names, *args):  # type: ignore[no-untyped-def]
        sizes.append(len(names))
        return real(names, *args)

    monkeypatch.setattr(isolated_jobs, "run_isolated_each", recording)
    return sizes


def test_a_single_new_run_is_still_handed_over(tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One new run: read by `_first_read`, whose worker hands its tables to the page (no read back)."""
    workspace = read_manifest(_copies(tmp_path / "runs", 1))
    monkeypatch.setattr(data, "score_entries_isolated", lambda *a, **k: pytest.fail("one run batched"))
    data._first_read.clear()
    sources, failed = data.load_workspace(workspace)
    assert list(sources) == ["run-0"] and not failed


def test_a_run_stored_since_it_was_looked_at_is_not_scored_again(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another rerun may store a run between this rerun's look at the store and its turn to schedule the
    run: it is checked again then, and taken as it is."""
    workspace = read_manifest(_copies(tmp_path / "runs", 3, broken=2))
    first = data.load_workspace(workspace)
    monkeypatch.setattr(data, "_LOADED", set())
    monkeypatch.setattr(data, "_NOT_READ", {})
    monkeypatch.setattr(data, "_stored", lambda entry: False)  # as if looked at before the other rerun stored it
    scheduled = _scheduled(monkeypatch)
    again = data.load_workspace(workspace)
    assert scheduled == []
    assert list(again[0]) == list(first[0]) == ["run-0", "run-1"]
    assert again[1] == first[1] and list(first[1]) == ["run-2"]


def test_a_convention_chosen_in_the_sidebar_is_scored_into_the_store_in_batches(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Switching the sidebar's convention at many runs: the runs the store does not hold under it are scored
    into the store in batches before the leaderboard, which the store then answers, not read and scored by a
    child each and held in memory whole."""
    from analysis import views

    workspace = read_manifest(_copies(tmp_path / "runs", 4))
    sources, failed = data.load_workspace(workspace)
    assert failed == {}
    scheduled = _scheduled(monkeypatch)
    monkeypatch.setattr(data, "score_entry_isolated", lambda *a, **k: pytest.fail("a run scored by a child of its own"))
    pairs = [(source, "trade") for source in sources.values()]
    found = data.stored_leaderboard(pairs, "jga")

    assert found is not None  # answered by the store
    assert len(scheduled) == 4 == len(set(scheduled))
    assert all(store_runs.stored(entry, "trade") is not None for entry in workspace.entries)
    expected = views.leaderboard([score_run(load_entry(e), "trade") for e in workspace.entries], sort="jga")
    board = found[0].set_index("run_id").loc[expected["run_id"]]
    assert board["jga"].tolist() == pytest.approx(expected["jga"].tolist(), abs=1e-12)
    assert board["convention"].tolist() == expected["convention"].tolist()

    # Asked again (another view of the same runs): settled, nothing looked up or scored again.
    monkeypatch.setattr(data, "_found", lambda *a: pytest.fail("looked up again"))
    data.store_many([pairs], "trade")
    assert len(scheduled) == 4
    # The declared convention is left to the workspace's reading, as before.
    data.store_many([[(source, data.DECLARED) for source in sources.values()]], data.DECLARED)


def test_runs_a_chosen_convention_refuses_are_not_scored_again_for_each_view(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from analysis.isolated_jobs import Refused

    workspace = read_manifest(_copies(tmp_path / "runs", 3))
    sources, _ = data.load_workspace(workspace)
    handed: list[int] = []

    def refusing(jobs, root, *, workers, done):  # type: ignore[no-untyped-def]
        handed.append(len(jobs))
        for i in range(len(jobs)):
            done(i, Refused("this convention does not score these runs"))

    monkeypatch.setattr(data, "score_entries_isolated", refusing)
    pairs = [(source, "dstc10") for source in sources.values()]
    data.store_many([pairs], "dstc10")
    data.forget_queries()  # even with the settled run sets forgotten (a heal), the refusals are remembered
    data.store_many([pairs], "dstc10")
    assert handed == [3]


def _other_process_scoring(store: Path, key: str, entry: object, *, stores: bool) -> tuple[threading.Event, Callable]:
    """Another scorer holding `key`'s claim (a second `store` command, another dashboard server): it stores the
    run (`stores`) or gives up on it, and lets go of the claim when the returned `release()` is called."""
    holding, letting_go = threading.Event(), threading.Event()

    def other() -> None:
        with store_entries.claimed(store, key) as mine:
            assert mine
            holding.set()
            if stores:
                store_entries.save(store, key, score_run(load_entry(entry), "exact"))  # type: ignore[arg-type]
            letting_go.wait(60)

    thread = threading.Thread(target=other, daemon=True)
    thread.start()
    assert holding.wait(30)

    def release() -> None:
        letting_go.set()
        thread.join(30)

    return letting_go, release


@pytest.mark.parametrize("stores", [True, False])
def test_a_run_another_process_is_scoring_is_waited_for_not_scored_twice(
    tmp_path: Path, store: Path, stores: bool
) -> None:
    """Two scorers on one store take turns: a run whose claim another process holds is skipped, the other runs
    scored meanwhile; then, its claim let go, it is `Elsewhere` when that process stored it, else scored here."""
    good = read_manifest(_copies(tmp_path / "runs", 3)).entries
    jobs = [(entry, "exact", store_runs.key(entry, "exact", store)) for entry in good]
    letting_go, release = _other_process_scoring(store, jobs[1][2], good[1], stores=stores)
    answers: dict[int, object] = {}

    def done(i: int, answer: object) -> None:
        answers[i] = answer
        if set(answers) == {0, 2}:  # the others answered while the run's claim was held: now let go
            letting_go.set()

    try:
        isolated_jobs.score_entries_isolated(jobs, store, workers=1, done=done)
    finally:
        release()
    assert answers == {0: None, 2: None, 1: isolated_jobs.Elsewhere() if stores else None}
    assert list(answers) == [0, 2, 1]  # the busy run after the others, not waited for first
    for entry in good:
        assert store_runs.stored(entry, "exact") is not None


@pytest.mark.parametrize("stores", [True, False])
def test_a_run_a_page_needs_while_another_process_scores_it_is_waited_for(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch, stores: bool
) -> None:
    """A page needing one run that another process is scoring into the store (a batch, another server): it
    waits for that process's claim, then reads the run from the store, with no child of its own; scored
    here when that process gave it up."""
    entry = read_manifest(_copies(tmp_path / "runs", 1)).entries[0]
    key = store_runs.key(entry, "exact", store)
    _, release = _other_process_scoring(store, key, entry, stores=stores)
    waiting = threading.Event()
    real_wait, real_run = store_entries.await_claim, isolated_jobs.run_isolated
    children: list[str] = []

    def wait(*args: object) -> bool:
        waiting.set()
        return real_wait(*args)  # type: ignore[arg-type]

    def child(*args: object, **kwargs: object) -> object:
        children.append(str(args[2]))
        return real_run(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(store_entries, "await_claim", wait)
    monkeypatch.setattr(isolated_jobs, "run_isolated", child)
    answer: list[object] = []
    page = threading.Thread(
        target=lambda: answer.append(isolated_jobs.score_entry_isolated(entry, "exact", store, key)), daemon=True
    )
    try:
        page.start()
        assert waiting.wait(60)  # the page is waiting for the other process's claim
        assert not answer
    finally:
        release()
    page.join(120)
    assert len(answer) == 1 and isinstance(answer[0], Scored)
    assert children == ([] if stores else ["analysis.isolated_jobs.score_entry_job"])
    expected = score_run(load_entry(entry), "exact")
    pd.testing.assert_frame_equal(
        answer[0].turns[["tid", "joint_correct"]].reset_index(drop=True),
        expected.turns[["tid", "joint_correct"]].reset_index(drop=True),
    )
    store_entries.flush()
    assert store_runs.stored(entry, "exact") is not None


def _claim_free(store: Path, key: str) -> bool:
    with store_entries.claimed(store, key) as free:
        return free


def test_a_run_scored_for_a_page_keeps_its_claim_until_its_worker_has_ended(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The claim of a run scored for a page is taken before its worker starts and let go only once the
    worker has ended (its save included, which comes after the answer), so another process needing the run
    meanwhile waits for it instead of scoring it too."""
    entry = read_manifest(_copies(tmp_path / "runs", 1)).entries[0]
    key = store_runs.key(entry, "exact", store)
    ended: list[Callable[[], object]] = []

    def worker(*args: object, on_exit: Callable[[], object]) -> object:
        assert not _claim_free(store, key)  # taken before the worker starts
        ended.append(on_exit)  # the worker still at its save: not ended yet
        return score_run(load_entry(entry), "exact")

    monkeypatch.setattr(isolated_jobs, "run_isolated", worker)
    assert isinstance(isolated_jobs.score_entry_isolated(entry, "exact", store, key), Scored)
    assert len(ended) == 1 and not _claim_free(store, key)  # answered, the worker not ended: still claimed
    ended[0]()
    assert _claim_free(store, key)


@pytest.mark.parametrize("stores", [True, False])
def test_a_command_storing_a_run_another_process_is_scoring_waits_for_it(
    tmp_path: Path, store: Path, stores: bool
) -> None:
    """In process (`metrics --store`, `compare --store`): a run whose claim another process holds is waited
    for and read back once stored, not scored again; scored and saved here, its claim held, when that
    process gave it up."""
    entry = read_manifest(_copies(tmp_path / "runs", 1)).entries[0]
    key = store_runs.key(entry, "exact", store)
    _, release = _other_process_scoring(store, key, entry, stores=stores)
    computed: list[bool] = []

    def compute() -> Scored:
        computed.append(_claim_free(store, key))
        return score_run(load_entry(entry), "exact")

    answer: list[Scored] = []
    command = threading.Thread(target=lambda: answer.append(store_entries.score(key, compute, root=store)), daemon=True)
    try:
        command.start()
        command.join(1.0)
        assert not answer and not computed  # waiting for the other process's claim
    finally:
        release()
    command.join(120)
    assert len(answer) == 1 and len(answer[0].turns) > 0
    assert computed == ([] if stores else [False])  # scored here only when not stored there, claimed meanwhile
    assert _claim_free(store, key) and store_runs.stored(entry, "exact") is not None
    assert store_entries.CLAIM_WAIT_S >= isolated.TIMEOUT_S  # as long as a worker may take over a run


def answer_then_wait(flag: str) -> isolated.Answer:
    """(A job in the child.) Answers at once, then waits (at most 60 s) for the file `flag` to exist."""
    import time

    def then() -> None:
        deadline = time.monotonic() + 60
        while not Path(flag).exists() and time.monotonic() < deadline:
            time.sleep(0.05)

    return isolated.Answer("answered", then)


def test_on_exit_is_called_once_the_worker_has_ended_not_when_it_answers(tmp_path: Path) -> None:
    flag = tmp_path / "go"
    ended = threading.Event()
    calls: list[int] = []

    def on_exit() -> None:
        calls.append(1)
        ended.set()

    job = "tests.test_workspace_batch.answer_then_wait"
    assert isolated.run_isolated("x", "doing", job, str(flag), on_exit=on_exit) == "answered"
    assert not ended.is_set()  # the child is at its `then`, waiting for the flag
    flag.touch()
    assert ended.wait(60) and calls == [1]
    # A worker that stops without answering: called once too, before the line comes back.
    stopped: list[int] = []
    line = isolated.run_isolated("x", "doing", "os._exit", 5, on_exit=lambda: stopped.append(1))
    assert "exit 5" in line and stopped == [1]


def test_two_store_commands_on_one_sweep_store_each_run_once(tmp_path: Path, store: Path) -> None:
    """Two `store` commands started together on one workspace and store: every run is stored, by one of them
    (the other counts it as already in the store), and both exit 0."""
    import os
    import subprocess
    import sys

    manifest = _copies(tmp_path / "runs", 8)
    command = [sys.executable, "-m", "analysis", "store", str(manifest), "--workers", "1", "--json", "--no-progress"]
    env = {**os.environ, "DST_CACHE_DIR": str(store.parent)}
    started = [subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outcomes = [json.loads(process.communicate(timeout=300)[0]) for process in started]
    assert [process.returncode for process in started] == [0, 0]
    assert all(len(o["stored"]) + len(o["already_stored"]) == 8 and not o["not_stored"] for o in outcomes)
    assert sorted(run for o in outcomes for run in o["stored"]) == [f"run-{i}" for i in range(8)]
