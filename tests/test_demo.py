"""The committed demo workspace: it loads, every run scores, it is small, and it rebuilds byte for byte."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import pytest

from analysis.demo.build import DEMO_FILES, RULE_RUN, SOURCES, build_demo
from analysis.demo.simulate import pick_dialogues
from analysis.loading import load_run
from analysis.metrics import joint_goal_accuracy
from analysis.model import RunInfo
from analysis.scoring import score_run
from analysis.workspace import Workspace, load_workspace
from tests.conftest import REALDATA, ROOT, realdata_path

DEMO = ROOT / "data" / "demo"
MAX_BYTES = 20 * 1024**2


@pytest.fixture(scope="module")
def workspace() -> Workspace:
    return load_workspace(DEMO / "workspace.toml")


@pytest.mark.slow
def test_demo_loads_with_no_failed_run_and_every_run_scores(workspace: Workspace) -> None:
    assert workspace.failed == {}
    assert workspace.convention == "exact"
    assert set(workspace.runs) == {e.name for e in workspace.entries}
    for entry in workspace.entries:
        scored = score_run(workspace.runs[entry.name], entry.meta.convention)
        jga = joint_goal_accuracy(scored)
        assert isinstance(jga, float) and not math.isnan(jga)
        assert 0.3 < jga < 0.95, (entry.name, jga)


def test_demo_covers_every_page(workspace: Workspace) -> None:
    entries = workspace.entries
    simulated = [e for e in entries if "simulated" in e.meta.system]
    assert all("simulated" in e.name for e in simulated)
    assert len({e.meta.system for e in simulated}) >= 3
    real = [e for e in entries if "simulated" not in e.meta.system]
    real_metas = [(e.name, e.meta.dataset, e.meta.history, e.meta.convention) for e in real]
    assert real_metas == [(RULE_RUN, "CrossWOZ", "gold", "exact")]
    # A predicted- and a gold-history run of one simulated system on one dataset (JGA vs GJGA).
    histories = {(e.meta.system, e.meta.dataset, e.meta.language, e.meta.history) for e in simulated}
    assert ("simulated-A", "MultiWOZ 2.1", "en", "gold") in histories
    assert ("simulated-A", "MultiWOZ 2.1", "en", "predicted") in histories
    # The same system in two languages over the same dialogues, for both corpora.
    system_a = "simulated-A"
    for en, zh in (("MultiWOZ 2.1", "MultiWOZ-zh"), ("CrossWOZ-en", "CrossWOZ")):
        a = next(e for e in simulated if (e.meta.dataset, e.meta.history, e.meta.system) == (en, "predicted", system_a))
        b = next(e for e in simulated if (e.meta.dataset, e.meta.history, e.meta.system) == (zh, "predicted", system_a))
        ids_a = set(workspace.runs[a.name].turns["dialogue_id"])
        ids_b = set(workspace.runs[b.name].turns["dialogue_id"])
        assert ids_a == ids_b and len(ids_a) >= 120
        assert len(workspace.runs[a.name].turns) == len(workspace.runs[b.name].turns)
    # At least one run whose alignment warns about missing predicted turns.
    warned = [name for name, run in workspace.runs.items() if not run.alignment.ok]
    assert warned == ["simulated-C-mwz-en-predicted"]
    assert any("no prediction" in line for line in workspace.runs[warned[0]].alignment.warnings())
    assert {m["a"] for m in workspace.mappings} <= set(workspace.runs)


def test_weaker_language_and_gold_history_show_in_the_demo(workspace: Workspace) -> None:
    jga = {e.name: joint_goal_accuracy(score_run(workspace.runs[e.name], e.meta.convention)) for e in workspace.entries}
    assert jga["simulated-A-mwz-en-gold"] > jga["simulated-A-mwz-en-predicted"]
    assert jga["simulated-A-mwz-zh-predicted"] < jga["simulated-A-mwz-en-predicted"]
    assert jga["simulated-A-crosswoz-en-predicted"] < jga["simulated-A-crosswoz-zh-predicted"]


def test_demo_is_small_and_holds_only_built_files() -> None:
    files = [p for p in DEMO.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) < MAX_BYTES
    ours = {str(p.relative_to(DEMO)) for p in files if p.relative_to(DEMO).parts[0] != "fewjoint"}
    assert ours == set(DEMO_FILES)


@pytest.mark.realdata
def test_rule_dst_subset_scores_as_the_full_real_file_on_those_dialogues(workspace: Workspace) -> None:
    pred = realdata_path("crosswoz_ruledst", "test_preds.json")
    gold = realdata_path("crosswoz", "test.json.zip")
    full = score_run(load_run(pred, gold, meta=RunInfo(history="gold")), "exact")
    demo_run = workspace.runs[RULE_RUN]
    kept = set(demo_run.turns["dialogue_id"])
    expected = full.turns.loc[full.turns["dialogue_id"].isin(kept), "joint_correct"].mean()
    got = joint_goal_accuracy(score_run(demo_run, "exact"))
    assert got == pytest.approx(expected, abs=1e-12)
    assert len(demo_run.turns) == int(full.turns["dialogue_id"].isin(kept).sum())
    assert kept == set(pick_dialogues(set(full.turns["dialogue_id"]), len(kept)))


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slow
@pytest.mark.realdata
def test_demo_rebuilds_byte_for_byte(tmp_path: Path) -> None:
    for source, _ in SOURCES.values():
        realdata_path(*source.split("/"))
    build_demo(REALDATA, tmp_path)
    built = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    fewjoint = sorted(str(p.relative_to(DEMO)) for p in (DEMO / "fewjoint").glob("*") if p.name != "README.md")
    assert built == sorted([*DEMO_FILES, *fewjoint])
    changed = [name for name in [*DEMO_FILES, *fewjoint] if _digest(tmp_path / name) != _digest(DEMO / name)]
    assert changed == [], f"data/demo is stale: run `make demo` ({changed})"
