"""The scored Parquet store (issue 21): keys, round trip, concurrent writers, damaged entries, full or
read-only disks, and the DuckDB queries against the in-memory views."""

from __future__ import annotations

import errno
import logging
import multiprocessing
import os
import re
import shutil
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from analysis import registry as R
from analysis import stats, views
from analysis.errors import InputError
from analysis.loading import load_run
from analysis.scoring import Scored, score_run
from analysis.store import entries, parts, queries
from analysis.suite import gold_inputs
from analysis.workspace import load_entry, read_manifest
from tests.conftest import ROOT, realdata_path

DEMO = ROOT / "data" / "demo" / "workspace.toml"
TOL = 1e-12


@pytest.fixture(scope="module")
def demo_entries():
    return {e.name: e for e in read_manifest(DEMO).entries}


@pytest.fixture(scope="module")
def demo_runs(demo_entries):
    names = ["crosswoz-rule-dst", "simulated-A-mwz-en-predicted", "simulated-B-mwz-en-predicted-s1"]
    return {name: load_entry(demo_entries[name]) for name in names}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "scored"


def _same(a: Scored, b: Scored) -> None:
    pd.testing.assert_frame_equal(a.turns, b.turns)
    pd.testing.assert_frame_equal(a.slots, b.slots)
    pd.testing.assert_frame_equal(a.ontology.reset_index(drop=True), b.ontology.reset_index(drop=True))
    assert a.metas == b.metas
    assert a.convention == b.convention


def _counting(run, convention):
    calls = []

    def compute() -> Scored:
        calls.append(1)
        return score_run(run, convention)

    return compute, calls


def _nan_as_none(values: dict) -> dict:
    return {k: None if isinstance(v, float) and v != v else v for k, v in values.items()}


@pytest.mark.parametrize("convention", ["exact", "trade", "mwzeval"])
def test_round_trip_equals_in_memory_scoring(demo_runs, root, convention):
    run = demo_runs["simulated-A-mwz-en-predicted"]
    fresh = score_run(run, convention)
    entries.save(root, "k", fresh)
    back = entries.load(root, "k")
    assert back is not None
    _same(fresh, back)
    # exactly: the same tables give the same numbers (n/a metrics are NaN on both sides)
    assert _nan_as_none(R.values(back)) == _nan_as_none(R.values(fresh))
    # The layout: Hive partitions by convention and run, one file each.
    assert (root / "turns" / f"convention={fresh.convention.name}" / "run=k" / "part.parquet").is_file()


def test_dstc9_subtask_round_trip(demo_runs, root):
    fresh = score_run(demo_runs["crosswoz-rule-dst"], "dstc9")
    entries.save(root, "k", fresh)
    back = entries.load(root, "k")
    assert back is not None and back.convention.subtask == "crosswoz"
    _same(fresh, back)


def test_unparseable_texts_round_trip(root):
    """A running log read from its completions: the turns' unparseable texts and reasons are stored and read
    back as scored, and the Dialogue viewer's tables from the stored run equal the in-memory ones."""
    log = ROOT / "tests" / "data" / "wild" / "gptdst_running_log_excerpt.json"
    fresh = score_run(load_run(log, pred_format="icdst-completion"))
    assert fresh.turns["pred_unparseable_text"].notna().sum() == fresh.turns["pred_unparseable"].sum() > 0
    entries.save(root, "k", fresh)
    back = entries.load(root, "k")
    assert back is not None
    _same(fresh, back)
    assert "pred_unparseable_text" not in entries.lookup(root, "k").header["attributes"]  # not a slice
    for a, b in zip(views.dialogue_view(fresh, "SNG0073.json"), views.dialogue_view(back, "SNG0073.json"), strict=True):
        pd.testing.assert_frame_equal(a, b)


def _key(entry, convention, root):
    return entries.entry_key(
        entry.pred,
        entry.gold,
        entries.entry_options(entry.meta, entry.format, entry.gold_format),
        convention,
        root=root,
    )


def test_changed_file_is_never_read_stale(demo_entries, root, tmp_path):
    entry = demo_entries["simulated-A-mwz-en-predicted"]
    pred = tmp_path / "pred.jsonl.gz"
    shutil.copy(entry.pred, pred)
    from dataclasses import replace

    copy = replace(entry, pred=pred)
    run = load_entry(copy)
    compute, calls = _counting(run, "exact")
    first = entries.score(_key(copy, "exact", root), compute, root=root)
    entries.score(_key(copy, "exact", root), compute, root=root)
    assert len(calls) == 1  # the second call read the store
    # Another file's content under the same path: a new key, scored again, and its own numbers.
    shutil.copy(demo_entries["simulated-B-mwz-en-predicted-s1"].pred, pred)
    changed = load_entry(copy)
    compute, calls = _counting(changed, "exact")
    second = entries.score(_key(copy, "exact", root), compute, root=root)
    assert len(calls) == 1
    assert R.values(second)["jga"] == R.values(score_run(changed, "exact"))["jga"] != R.values(first)["jga"]


def test_changed_convention_is_never_read_stale(demo_entries, demo_runs, root):
    entry, run = demo_entries["simulated-A-mwz-en-predicted"], demo_runs["simulated-A-mwz-en-predicted"]
    assert _key(entry, "exact", root) != _key(entry, "trade", root)
    entries.score(_key(entry, "exact", root), lambda: score_run(run, "exact"), root=root)
    compute, calls = _counting(run, "trade")
    got = entries.score(_key(entry, "trade", root), compute, root=root)
    assert calls == [1] and got.convention.name == "trade"


def test_changed_scorer_version_is_never_read_stale(demo_entries, demo_runs, root, monkeypatch):
    entry, run = demo_entries["simulated-A-mwz-en-predicted"], demo_runs["simulated-A-mwz-en-predicted"]
    before = _key(entry, "exact", root)
    entries.score(before, lambda: score_run(run, "exact"), root=root)
    monkeypatch.setattr(entries, "scorer_version", lambda: "edited-scorer")
    after = _key(entry, "exact", root)
    assert after != before
    compute, calls = _counting(run, "exact")
    entries.score(after, compute, root=root)
    assert calls == [1]


def _package(base: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = base / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return base / "analysis"


PACKAGE = {
    "analysis/__init__.py": "",
    "analysis/store/__init__.py": "from analysis.store.entries import save\n",
    "analysis/store/entries.py": "def save():\n    from analysis.scoring import score  # imported when called\n",
    "analysis/store/parts.py": (
        "from typing import TYPE_CHECKING\nfrom .. import metrics\nif TYPE_CHECKING:\n    from analysis import figures\n"
    ),
    "analysis/store/runs.py": "import json\n",
    "analysis/scoring.py": "from analysis.rules.outcomes import OUTCOMES\n",
    "analysis/rules/__init__.py": "",
    "analysis/rules/outcomes.py": "OUTCOMES = ('correct',)\n",
    "analysis/metrics.py": "x = 1\n",
    "analysis/figures.py": "y = 1\n",  # only for type checkers: not run when scoring
    "analysis/unrelated.py": "z = 1\n",
}


def test_scorer_modules_follow_the_imports_not_paths(tmp_path):
    """The scorer's version covers the modules the scoring code imports, at the top or inside a function,
    with their packages: a module moved to another folder (or renamed) is followed through the import
    that names it; what only type checkers import, or nothing imports, is not covered."""
    package = _package(tmp_path, PACKAGE)
    found = entries.scorer_modules(package=package)
    assert set(found) == {
        "analysis",
        "analysis.store",
        "analysis.store.entries",
        "analysis.store.parts",
        "analysis.store.runs",
        "analysis.scoring",
        "analysis.metrics",
        "analysis.rules",
        "analysis.rules.outcomes",
    }
    assert found["analysis.rules.outcomes"] == package / "rules" / "outcomes.py"
    # Moved and renamed: the import that names it is followed to its new place.
    (package / "rules" / "outcomes.py").rename(package / "labels.py")
    (package / "scoring.py").write_text("from analysis import labels\n")
    moved = entries.scorer_modules(package=package)
    assert "analysis.labels" in moved and "analysis.rules.outcomes" not in moved


def test_scorer_version_changes_with_a_covered_module_only(monkeypatch, tmp_path):
    package = _package(tmp_path / "code", PACKAGE)
    monkeypatch.setattr(entries, "__file__", str(package / "store" / "entries.py"))
    monkeypatch.setenv("DST_CACHE_DIR", str(tmp_path / "cache"))  # where the module list is remembered
    entries.scorer_version.cache_clear()
    try:
        first = entries.scorer_version()
        assert list((tmp_path / "cache" / "scored" / "digests").glob("modules-*"))
        (package / "unrelated.py").write_text("z = 2\n")
        (package / "figures.py").write_text("y = 2\n")
        entries.scorer_version.cache_clear()
        assert entries.scorer_version() == first
        (package / "rules" / "outcomes.py").write_text("OUTCOMES = ('correct', 'missed')\n")
        entries.scorer_version.cache_clear()
        second = entries.scorer_version()
        assert second != first
        (package / "rules" / "outcomes.py").rename(package / "labels.py")  # moved, same source
        (package / "scoring.py").write_text("from analysis import labels\n")
        entries.scorer_version.cache_clear()
        assert entries.scorer_version() not in (first, second)
    finally:
        monkeypatch.undo()
        entries.scorer_version.cache_clear()


@pytest.mark.slow  # a fresh interpreter scores one run of every kind
def test_the_scorer_version_covers_every_module_scoring_imports(tmp_path):
    """In a fresh interpreter, a demo run loaded, scored and stored (every stored table built): each
    `analysis` module it imported is one the scorer's version digests. One run of each kind the demo has
    (everything declared but its name, system, seed and prediction file alike): the demo's other runs are
    other seeds and systems of the same files' shapes, read and scored by the same modules."""
    probe = (
        "import json, sys\n"
        "from dataclasses import replace\n"
        "from analysis.store import entries, runs\n"
        "from analysis.workspace import read_manifest\n"
        "kinds = set()\n"
        f"for entry in read_manifest({str(DEMO)!r}).entries:\n"
        "    kind = repr((replace(entry.meta, run_id='', system='', seed=None), entry.format, entry.gold_format,\n"
        "                 entry.gold, entry.mapping, entry.gold_field, entry.pred.suffixes))\n"
        "    if kind in kinds:\n"
        "        continue\n"
        "    kinds.add(kind)\n"
        "    runs.scored(entry, entry.meta.convention)\n"
        "    runs.scored(entry, 'dstc9')\n"
        "print(json.dumps([sorted(m for m in sys.modules if m.split('.')[0] == 'analysis'), "
        "list(entries.scorer_modules())]))\n"
    )
    import json
    import subprocess
    import sys

    env = {**os.environ, "DST_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    imported, covered = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(list((tmp_path / "cache" / "scored" / "entries").glob("*.json"))) >= 10  # every table built
    assert {"analysis.scoring", "analysis.store.parts", "analysis.formats.specs", "analysis.sgd.views"} <= set(imported)
    assert set(imported) <= set(covered), sorted(set(imported) - set(covered))


def test_a_remembered_digest_follows_the_file(tmp_path):
    """The process remembers digests per file identity: content rewritten in place (a new modification
    time), or another file moved over the path (a new inode, even at the same size and time), is hashed again."""
    import hashlib

    path = tmp_path / "pred.jsonl"
    path.write_bytes(b"a" * 100)
    assert entries.file_digest(path) == hashlib.sha256(b"a" * 100).hexdigest()
    stat = path.stat()
    path.write_bytes(b"b" * 100)  # same size, in place
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert entries.file_digest(path) == hashlib.sha256(b"b" * 100).hexdigest()
    other = tmp_path / "other.jsonl"
    other.write_bytes(b"c" * 100)
    stat = path.stat()
    os.utime(other, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same size and time, another file
    other.replace(path)
    assert entries.file_digest(path) == hashlib.sha256(b"c" * 100).hexdigest()
    path.unlink()
    assert entries.file_digest(path) == "missing"


def test_a_remembered_header_follows_its_file(demo_runs, root):
    """Headers are remembered per file identity: a header rewritten is read again, a removed one is gone."""
    import json

    entry = entries.save(root, "k", score_run(demo_runs["simulated-A-mwz-en-predicted"], "exact"))
    assert entry is not None
    assert entries._header(root, "k").run_id == entry.run_id == "simulated-A-mwz-en-predicted"
    path = entries.header_path(root, "k")
    header = json.loads(path.read_text(encoding="utf-8"))
    header["meta"]["run_id"] = "renamed"
    path.write_text(json.dumps(header), encoding="utf-8")
    assert entries._header(root, "k").run_id == "renamed"
    path.unlink()
    assert entries._header(root, "k") is None
    assert entries.lookup(root, "k") is None


def test_store_moves_with_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("DST_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert entries.store_root() == tmp_path / "elsewhere" / "scored"
    monkeypatch.setenv("DST_CACHE_DIR", "")
    assert entries.store_root() is None


def test_the_split_views_and_figures_are_covered_by_the_scorer_version():
    """The views and figures are packages now (one module per page): the stored views' modules are followed
    through their imports, so each module a stored answer depends on is in the digest."""
    covered = set(entries.scorer_modules())
    assert {"analysis.views.slots", "analysis.views.overview", "analysis.views.depth"} <= covered


def _write_entry(root: str, key: str, entry, barrier) -> None:
    scored = score_run(load_entry(entry), "exact")
    barrier.wait()  # both processes write at the same moment
    entries.save(Path(root), key, scored)


def test_two_processes_writing_one_entry(demo_entries, root):
    entry = demo_entries["simulated-A-mwz-en-predicted"]
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_write_entry, args=(str(root), "same", entry, barrier)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    stored = entries.lookup(root, "same")  # whole: sizes, rows and digests match its header
    assert stored is not None
    back = entries.load(root, "same")
    assert back is not None
    _same(back, score_run(load_entry(entry), "exact"))
    leftovers = [p for p in root.rglob("*") if p.name.endswith(".tmp")]
    assert leftovers == []
    assert len(list((root / "turns").rglob("*.parquet"))) == 1


@pytest.mark.parametrize("damage", ["truncate", "garbage", "header", "missing"])
def test_damaged_entry_is_removed_and_rebuilt(demo_runs, root, caplog, damage):
    run = demo_runs["simulated-A-mwz-en-predicted"]
    fresh = score_run(run, "exact")
    entry = entries.save(root, "k", fresh)
    assert entry is not None
    target = entry.path("slots")
    if damage == "truncate":
        target.write_bytes(target.read_bytes()[: target.stat().st_size // 2])
    elif damage == "garbage":  # same size, other bytes: only the digest can tell
        data = bytearray(target.read_bytes())
        data[len(data) // 2 : len(data) // 2 + 64] = bytes(64)
        target.write_bytes(bytes(data))
    elif damage == "header":
        entries.header_path(root, "k").write_text("{not json")
    else:
        target.unlink()
    compute, calls = _counting(run, "exact")
    with caplog.at_level(logging.WARNING, logger="analysis.store"):
        got = entries.score("k", compute, root=root)
    assert calls == [1]
    warnings = [r for r in caplog.records if r.name == "analysis.store"]
    assert len(warnings) == 1 and "damaged" in warnings[0].getMessage() and "k" in warnings[0].getMessage()
    _same(got, fresh)
    rebuilt = entries.load(root, "k")  # written again, whole
    assert rebuilt is not None
    _same(rebuilt, fresh)


def test_full_disk_falls_back_to_memory(demo_runs, root, caplog, monkeypatch):
    run = demo_runs["simulated-A-mwz-en-predicted"]

    def full(path, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(entries, "_write_atomic", full)
    with caplog.at_level(logging.WARNING, logger="analysis.store"):
        got = entries.score("k", lambda: score_run(run, "exact"), root=root)
    assert _nan_as_none(R.values(got)) == _nan_as_none(R.values(score_run(run, "exact")))
    messages = [r.getMessage() for r in caplog.records if r.name == "analysis.store"]
    assert len(messages) == 1 and "disk is full" in messages[0] and "stays in memory" in messages[0]
    assert entries.lookup(root, "k") is None


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder; see the EROFS test below")
def test_read_only_folder_falls_back_to_memory(demo_runs, tmp_path, caplog):
    root = tmp_path / "ro"
    root.mkdir()
    root.chmod(0o555)
    run = demo_runs["simulated-A-mwz-en-predicted"]
    try:
        with caplog.at_level(logging.WARNING, logger="analysis.store"):
            got = entries.score("k", lambda: score_run(run, "exact"), root=root)
    finally:
        root.chmod(0o755)
    assert _nan_as_none(R.values(got)) == _nan_as_none(R.values(score_run(run, "exact")))
    assert len([r for r in caplog.records if r.name == "analysis.store"]) == 1


def test_read_only_file_system_falls_back_to_memory(demo_runs, root, caplog, monkeypatch):
    run = demo_runs["simulated-A-mwz-en-predicted"]

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(entries.Path, "mkdir", read_only)
    with caplog.at_level(logging.WARNING, logger="analysis.store"):
        got = entries.score("k", lambda: score_run(run, "exact"), root=root)
    assert _nan_as_none(R.values(got)) == _nan_as_none(R.values(score_run(run, "exact")))
    messages = [r.getMessage() for r in caplog.records if r.name == "analysis.store"]
    assert len(messages) == 1 and "Read-only" in messages[0]


# --- DuckDB queries against the in-memory views ----------------------------------------------------


def _stored(runs: dict, root: Path, convention: str | None) -> tuple[list[Scored], list[entries.Entry]]:
    scoreds, stored = [], []
    for i, run in enumerate(runs.values()):
        scored = score_run(run, convention)
        entry = entries.save(root, f"{convention}-{i}", scored)
        assert entry is not None
        scoreds.append(scored)
        stored.append(entry)
    return scoreds, stored


def _equal(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=TOL, atol=TOL)


@pytest.mark.slow
@pytest.mark.parametrize("convention", ["exact", "trade", "mwzeval", "convlab3"])
def test_duckdb_leaderboard_equals_in_memory_on_every_metric(demo_runs, root, convention):
    scoreds, stored = _stored(demo_runs, root, convention)
    for sort in (None, "jga", "gca", "slot_f1_micro"):
        _equal(queries.leaderboard(stored, sort=sort), views.leaderboard(scoreds, sort=sort))
    _equal(queries.depth_jga(stored), views.depth_jga(scoreds))  # JGA per depth and its intervals
    _equal(queries.depth_metrics(stored), views.depth_metrics(scoreds))
    # Every metric's interval, against the stats module's bootstrap of each run.
    bounds = queries.intervals_of(stored, R.INTERVAL_METRICS)
    for name in R.INTERVAL_METRICS:
        for i, scored in enumerate(scoreds):
            ci = stats.bootstrap_ci(scored, name, n_resamples=1000)
            assert isinstance(ci, dict)
            for side, got in zip(("low", "high"), bounds[name], strict=True):
                want = ci[side]
                assert (np.isnan(want) and np.isnan(got[i])) or abs(got[i] - want) <= TOL, (name, side, i)


@pytest.mark.slow
@pytest.mark.realdata
def test_duckdb_leaderboard_on_real_files(root):
    gold = realdata_path("multiwoz21", "test.json.zip")
    runs = {name: load_run(realdata_path("mwzeval_outputs", f"{name}.json"), gold) for name in ("augpt", "pptod")}
    for convention in ("mwzeval", "trade"):
        scoreds, stored = _stored(runs, root / convention, convention)
        _equal(queries.leaderboard(stored, sort="jga", intervals=R.NAMES), _board_all(scoreds, "jga"))
        _equal(queries.domain_jga(stored), views.domain_jga(scoreds))
        _equal(queries.depth_jga(stored), views.depth_jga(scoreds))
        _equal(queries.depth_metrics(stored), views.depth_metrics(scoreds))


def _board_all(scoreds: list[Scored], sort: str) -> pd.DataFrame:
    """The in-memory leaderboard with every metric's interval (columns as the DuckDB path orders them)."""
    board = views.leaderboard(scoreds)
    for name in R.INTERVAL_METRICS:
        cis = [stats.bootstrap_ci(s, name, n_resamples=1000) for s in scoreds]
        board[f"{name}_low"] = [c["low"] for c in cis]  # type: ignore[index]
        board[f"{name}_high"] = [c["high"] for c in cis]  # type: ignore[index]
    tail = ["not_applicable", "n_warnings", "warnings"]
    board = board[[c for c in board.columns if c not in tail] + tail]
    best_first = R.get(sort).higher_is_better
    return board.sort_values(sort, ascending=not best_first, kind="stable", na_position="last").reset_index(drop=True)


def test_duckdb_slot_domain_and_picker_tables(demo_runs, root):
    scoreds, stored = _stored(demo_runs, root, "exact")
    _equal(queries.domain_jga(stored), views.domain_jga(scoreds))
    _equal(queries.depth_jga(stored), views.depth_jga(scoreds))
    for resamples in (0, 200):  # any resample count, from the stored parts
        _equal(queries.domain_jga(stored, resamples=resamples), views.domain_jga(scoreds, resamples=resamples))
        _equal(queries.depth_jga(stored, resamples=resamples), views.depth_jga(scoreds, resamples=resamples))
    _equal(queries.depth_metrics(stored), views.depth_metrics(scoreds))
    want = pd.concat([views.slot_table(s).assign(run_id=s.run_ids[0]) for s in scoreds], ignore_index=True)
    got = queries.slot_tables(stored)
    _equal(got[want.columns.tolist()], want)
    filters = [
        {},
        {"search": "hotel", "sort": "number of errors (most first)"},
        {"search": "北京"},
        {"first_error": (0, 2), "min_errors": 2, "sort": "first error turn (earliest first)"},
        {"min_run": 3, "sort": "compounding run (longest first)"},
        {"search": "no such text anywhere"},
    ]
    for scored, entry in zip(scoreds, stored, strict=True):
        for f in filters:
            want_p = views.pick_dialogues(scored, **f)
            got_p = queries.pick_dialogues(entry, **f)
            assert len(want_p) == len(got_p), f
            _equal(got_p.astype(want_p.dtypes.to_dict()), want_p)


DOCUMENTED_FOLDER = "/shared/dst-cache/scored"


def documented_query() -> str:
    """The first ```sql block of docs/store.md (the README links it), as written there."""
    text = (ROOT / "docs" / "store.md").read_text(encoding="utf-8")
    match = re.search(r"```sql\n(.*?)```", text, re.S)
    assert match, "docs/store.md has no ```sql block"
    return match.group(1)


def test_leaderboard_query_over_the_shared_folder(demo_runs, root):
    """docs/store.md's query, as written there with the store's folder for the shared one: DuckDB over the
    whole folder, every run of one convention."""
    scoreds, _ = _stored(demo_runs, root, "exact")
    query = documented_query()
    assert DOCUMENTED_FOLDER in query
    con = duckdb.connect()
    board = con.execute(query.replace(DOCUMENTED_FOLDER, str(root))).df()
    want = views.leaderboard(scoreds, sort="jga", resamples=0)
    assert board["run_id"].tolist() == want["run_id"].tolist()
    assert np.allclose(board["jga"], want["jga"], rtol=0, atol=TOL)
    assert np.allclose(board["fga_0_5"], want["fga_0.5"], rtol=0, atol=TOL)
    per_dialogue = con.execute(
        "SELECT run_id, sum(jga__num) / sum(jga__den) AS jga FROM read_parquet($glob) GROUP BY run_id",
        {"glob": str(root / "dialogues" / "*" / "*" / "*.parquet")},
    ).df()
    pooled = dict(zip(per_dialogue["run_id"], per_dialogue["jga"], strict=True))
    for scored in scoreds:
        assert abs(pooled[scored.run_ids[0]] - R.values(scored)["jga"]) <= TOL


@pytest.mark.slow
def test_ensure_all_scores_runs_in_worker_processes(demo_entries, root):
    """Runs scored into the store by two worker processes, each replaced after 50 runs: every entry stored
    under the key the caller computes, equal to the scoring in this process; a second pass scores none."""
    from analysis.store import runs as store_runs

    items = [demo_entries[n] for n in ("simulated-A-mwz-en-predicted", "simulated-A-mwz-en-gold", "crosswoz-rule-dst")]
    stored = store_runs.ensure_all(items, "exact", workers=2, root=root)
    assert [e.key if e else None for e in stored] == [store_runs.key(i, "exact", root) for i in items]
    for item, entry in zip(items, stored, strict=True):
        assert entry is not None
        back = entries.load(root, entry.key)
        assert back is not None
        _same(back, score_run(load_entry(item), "exact"))
    before = {p: p.stat().st_mtime_ns for p in root.rglob("*.parquet")}
    store_runs.ensure_all(items, "exact", workers=2, root=root)
    assert {p: p.stat().st_mtime_ns for p in root.rglob("*.parquet")} == before


def test_scoring_workers_use_one_blas_thread_each(demo_entries, root, monkeypatch):
    """Each worker process limits BLAS to one thread (the workers already use every core; OpenBLAS's threads
    spun against each other's, about 0.3 CPU-s more per run): the pool starts every worker with
    `_one_blas_thread`, and that leaves a fresh process's BLAS libraries one thread."""
    import subprocess
    import sys
    import types

    from analysis.store import runs as store_runs

    started = []

    class Pool:
        def __init__(self, workers, *, initializer=None, maxtasksperchild=None):
            started.append(initializer)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def starmap(self, function, jobs, chunksize=1):
            return [function(*job) for job in jobs]

    context = types.SimpleNamespace(set_forkserver_preload=lambda modules: None, Pool=Pool)
    monkeypatch.setattr(store_runs, "multiprocessing", types.SimpleNamespace(get_context=lambda kind: context))
    items = [demo_entries[n] for n in ("simulated-A-mwz-en-predicted", "crosswoz-rule-dst")]
    assert all(e is not None for e in store_runs.ensure_all(items, "exact", workers=2, root=root))
    assert started == [store_runs._one_blas_thread]
    code = (
        "import numpy, threadpoolctl\n"
        "from analysis.store.runs import _one_blas_thread\n"
        "_one_blas_thread()\n"
        "blas = [p['num_threads'] for p in threadpoolctl.threadpool_info() if p['user_api'] == 'blas']\n"
        "print(blas)\n"
    )
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "2"}  # what an unlimited worker on 2 cores would have
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[1]", out.stdout + out.stderr


def test_attribute_columns_of_any_name_and_a_damaged_file(tmp_path: Path) -> None:
    """An attribute's name comes from a data file: quotes, spaces or SQL in it are a column name, nothing
    more. More than 100 distinct values is not an attribute; nulls are not counted (as pandas' nunique)."""
    entry = entries.Entry("k" * 16, "exact", {"meta": {"run_id": "r"}}, tmp_path)
    hostile = 'type"; DROP TABLE t; --'
    turns = pd.DataFrame(
        {
            "run_id": "r",
            "dialogue_id": [f"d{i}" for i in range(300)],
            "turn_index": 0,
            hostile: ["a", "b", None] * 100,
            "utterance id": [str(i) for i in range(300)],
        }
    )
    entry.path("turns").parent.mkdir(parents=True)
    turns.to_parquet(entry.path("turns"))
    assert queries.attribute_columns([entry]) == [hostile]
    assert turns[hostile].nunique() == 2
    entry.path("turns").write_bytes(b"PAR1 not a parquet file")
    with pytest.raises(InputError, match="the score store cannot be queried"):
        queries.attribute_columns([entry])
    # A header written by `entries.save` holds the counts: no file is opened (there is none here).
    counted = entries.Entry(
        "c" * 16, "exact", {"meta": {"run_id": "c"}, "attributes": {hostile: 2, "id": 300}}, tmp_path
    )
    assert not counted.path("turns").exists()
    assert queries.attribute_columns([counted]) == [hostile]
    # A header whose counts are not names and integers is not trusted: the turns file is read (here, none).
    for odd in ({hostile: "2"}, [hostile], {hostile: None}):
        bad = entries.Entry("d" * 16, "exact", {"meta": {"run_id": "d"}, "attributes": odd}, tmp_path)
        with pytest.raises(InputError, match="the score store cannot be queried"):
            queries.attribute_columns([bad])


def test_jga_by_attribute_keeps_runs_apart_and_in_order(tmp_path: Path) -> None:
    """The stored JGA by attribute groups all runs in one call and puts them back in the entries' order; two
    entries of one run id (two conventions of a run) stay two blocks, as the view gives them run by run."""
    from analysis.conventions import get_convention

    def entry(key: str, run_id: str, correct: list[bool]) -> tuple[entries.Entry, Scored]:
        made = entries.Entry(key * 16, "exact", {"meta": {"run_id": run_id}}, tmp_path)
        turns = pd.DataFrame(
            {
                "run_id": run_id,
                "tid": range(len(correct)),
                "type": ["x", "y", None][: len(correct)],
                "joint_correct": correct,
            }
        )
        made.path("turns").parent.mkdir(parents=True)
        turns.to_parquet(made.path("turns"))
        return made, Scored(get_convention("exact"), [], turns, pd.DataFrame(), pd.DataFrame())

    made = [entry("b", "zz", [True, False, True]), entry("a", "aa", [False, False]), entry("c", "zz", [True, True])]
    stored = [e for e, _ in made]
    for picked in (stored, stored[:2]):
        want = views.jga_by_attribute([s for e, s in made if e in picked], attribute="type")
        got = queries.jga_by_attribute(picked, attribute="type")
        pd.testing.assert_frame_equal(got, want, check_dtype=False)
    assert queries.jga_by_attribute(stored[:2], attribute="type")["run_id"].tolist() == ["zz", "zz", "zz", "aa", "aa"]


def test_the_arrow_fetch_gives_the_frame_df_gives(tmp_path: Path) -> None:
    """`_read(via_arrow=True)` answers with `.df()`'s frame whatever the columns: strings through Arrow, and
    a query with a null number or boolean (which Arrow and `.df()` convert differently) through `.df()`."""
    entry = entries.Entry("n" * 16, "exact", {"meta": {"run_id": "r"}}, tmp_path)
    turns = pd.DataFrame(
        {
            "run_id": ["r", "r", None],
            "level": pd.array([1, None, 3], dtype="Int64"),
            "flag": pd.array([True, None, False], dtype="boolean"),
            "score": [0.5, float("nan"), 1.0],
            "tid": [0, 1, 2],
            "joint_correct": [True, False, True],
        }
    )
    entry.path("turns").parent.mkdir(parents=True)
    turns.to_parquet(entry.path("turns"))
    con = queries.connect()
    for columns in ("run_id, tid, joint_correct", "run_id, level", "flag, tid", "score", "*"):
        sql = f"SELECT {columns} FROM t ORDER BY file_row_number"
        want = queries._read(con, [entry], "turns", sql)
        pd.testing.assert_frame_equal(queries._read(con, [entry], "turns", sql, via_arrow=True), want)
    assert queries._arrow_as_df(pa.chunked_array([["a", None]])) and not queries._arrow_as_df(
        pa.chunked_array([[1, None]])
    )


# --- the leaderboard's bootstrap over stored parts: less arithmetic, the same numbers --------------------


def _plain(weights: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    return weights @ np.ascontiguousarray(matrix, dtype=float)


def test_resampled_products_equal_the_float64_product_bit_for_bit():
    weights = stats.resample_counts(400, n_resamples=300, seed=3)
    narrow = weights.astype(np.float32)
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 25, size=(400, 7)).astype(float)  # integers: the float32 path
    alike = np.repeat(rng.integers(1, 30, size=(400, 1)).astype(float), 5, axis=1)  # one column, repeated
    shares = rng.random((400, 6))  # fractions: float64
    huge = rng.integers(2**20, 2**23, size=(400, 3)).astype(float)  # integers whose sums need float64
    for matrix in (counts, alike, shares, huge, counts.T.copy().T):
        got = parts._resampled(weights, narrow, matrix)
        assert got.dtype == np.float64 and got.shape == (300, matrix.shape[1])
        assert np.array_equal(got, _plain(weights, matrix))
    # Which path each took: a wrong float32 copy of the weights shows up only where it is used.
    wrong = np.zeros_like(narrow)
    assert not np.array_equal(parts._resampled(weights, wrong, counts), _plain(weights, counts))
    for matrix in (shares, huge):
        assert np.array_equal(parts._resampled(weights, wrong, matrix), _plain(weights, matrix))
    # The float32 product of the huge integers would not be exact: the check keeps them out of it.
    assert not np.array_equal((narrow @ huge.astype(np.float32)).astype(float), _plain(weights, huge))


def test_tables_only_duckdb_reads_are_written_bare_and_read_back_alike(demo_runs, root):
    import pyarrow.parquet as pq

    scored = score_run(demo_runs["simulated-A-mwz-en-predicted"], "exact")
    entry = entries.save(root, "k" * 32, scored)
    assert entry is not None
    for table in entries.BARE_TABLES:
        meta = pq.ParquetFile(entry.path(table)).metadata
        assert b"pandas" not in (meta.metadata or {}), table
        assert not meta.row_group(0).column(0).is_stats_set, table
    assert entries.BARE_TABLES | {"turns", "slots"} == set(entry.header["tables"])
    for table in ("turns", "slots"):  # read back into pandas: they keep their metadata
        kept = pq.ParquetFile(entry.path(table)).metadata
        assert b"pandas" in kept.metadata and kept.row_group(0).column(0).is_stats_set
    # What the bootstrap reads from them is what the in-memory bootstrap computes.
    bounds = queries.intervals_of([entry], R.INTERVAL_METRICS)
    for name in ("jga", "slot_f1_micro", "gca", "rsa"):
        ci = stats.bootstrap_ci(scored, name, n_resamples=1000)
        assert bounds[name][0][0] == pytest.approx(ci["low"], abs=1e-12)
        assert bounds[name][1][0] == pytest.approx(ci["high"], abs=1e-12)


def test_intervals_of_runs_whose_parts_are_all_alike(demo_runs, root):
    """Two runs with the very same parts (one file listed twice) take the alike-columns path for every
    metric, GCA's counts included, and get the single run's intervals."""
    scored = score_run(demo_runs["simulated-A-mwz-en-predicted"], "trade")
    entry = entries.save(root, "a" * 32, scored)
    assert entry is not None
    once = queries.intervals_of([entry], R.INTERVAL_METRICS)
    twice = queries.intervals_of([entry, entry], R.INTERVAL_METRICS)
    for name in R.INTERVAL_METRICS:
        for side in (0, 1):
            assert np.array_equal(twice[name][side], np.repeat(once[name][side], 2), equal_nan=True), name
    # Every query lists such an entry once per position, never its rows twice under each.
    board = queries.leaderboard([entry, entry], sort="jga")
    single = queries.leaderboard([entry], sort="jga")
    _equal(board, pd.concat([single, single], ignore_index=True))
    for query in (queries.slot_tables, queries.depth_jga, queries.depth_metrics, queries.domain_jga):
        one, two = query([entry]), query([entry, entry])
        assert len(two) == 2 * len(one) > 0, query.__name__


@pytest.mark.slow
def test_the_leaderboard_reads_each_runs_stored_intervals(demo_runs, root, monkeypatch):
    """Every interval metric's interval is stored in the run's `runs` row (`bounds`) when it is scored, from its parts
    by the function `intervals_of` uses: a leaderboard with every interval reads those rows, not the
    dialogues. The same numbers as resampling the parts over all runs at once, and as the in-memory
    bootstrap; another resample count, or a row without them, is resampled from the parts."""
    scoreds, stored = _stored(demo_runs, root, "trade")
    computed = queries.intervals_of(stored, R.INTERVAL_METRICS)
    sql = "SELECT run, bounds_resamples, unnest(bounds, recursive := true) FROM t"
    rows = queries._read(queries.connect(), stored, "runs", sql)
    assert (rows["bounds_resamples"] == views.INTERVAL_RESAMPLES).all()
    assert sorted(set(rows["metric"])) == sorted(stats.METRICS)
    assert (rows.groupby("run")["metric"].count() == len(stats.METRICS)).all()  # each run lists each once
    for name in R.INTERVAL_METRICS:
        kept = rows[rows["metric"] == name].sort_values("run")
        assert kept["run"].tolist() == list(range(len(stored)))
        for side, values in zip(("low", "high"), computed[name], strict=True):
            assert np.allclose(kept[side], values, rtol=0, atol=1e-12, equal_nan=True), (name, side)
    jga = rows[rows["metric"] == "jga"]
    # A run whose gold the convention's scorer never reads (TRADE and a CrossWOZ file) has no interval: n/a.
    unread = [i for i, s in enumerate(scoreds) if {g["status"] for g in gold_inputs(s).values()} == {"n/a"}]
    assert jga.loc[jga["run"].isin(unread), "low"].isna().all()
    read = jga[~jga["run"].isin(unread)]
    assert len(read) and read["low"].notna().all() and (read["low"] < read["high"]).all()

    def not_resampled(*args, **kwargs):
        raise AssertionError("the stored intervals were not used")

    monkeypatch.setattr(queries, "intervals_of", not_resampled)
    board = queries.leaderboard(stored, sort="jga", intervals=R.NAMES)
    _equal(board, _board_all(scoreds, "jga"))
    with pytest.raises(AssertionError, match="not used"):  # another resample count: from the parts
        queries.leaderboard(stored, sort="jga", resamples=200)
    with pytest.raises(ValueError, match="metric has to be one of"):  # a name without an interval
        monkeypatch.undo()
        queries.leaderboard(stored, intervals=["no_such_metric"])
    # A `runs` row whose intervals are listed in another order, or without them (as a store written before
    # them had): the leaderboard resamples the parts, and gives the same numbers.
    import pyarrow.parquet as pq

    calls = []
    real = queries.intervals_of
    monkeypatch.setattr(queries, "intervals_of", lambda *a, **k: calls.append(1) or real(*a, **k))
    first = stored[0].path("runs")
    table = pq.read_table(first)
    column = table.column("bounds").combine_chunks()
    turned = pa.array([list(reversed(column[0].as_py()))], type=column.type)
    for changed in (
        table.set_column(table.column_names.index("bounds"), "bounds", turned),
        table.drop_columns(["bounds", "bounds_resamples"]),
    ):
        pq.write_table(changed, first)
        _equal(queries.leaderboard(stored, sort="jga", intervals=R.NAMES), _board_all(scoreds, "jga"))
    assert len(calls) == 2
