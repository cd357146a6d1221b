"""AppTest over the demo workspace for the pages of the registry that declare no first views (FewJoint,
Review, Reconcile): each opens without exception, and what it shows equals what `analysis` computes on the
same files. The annotation store is a temporary SQLite file (DST_ANNOTATIONS_URL), so the demo folder gets
no database."""

from __future__ import annotations

import base64
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from analysis.conventions import CONVENTIONS
from analysis.fewjoint import load_fewjoint_system, score_fewjoint
from analysis.metrics import joint_goal_accuracy, slot_prf_micro
from analysis.reconcile.core import DEFAULT_CONVENTIONS
from analysis.review import AnnotationStore, Item, error_items, review_progress
from analysis.scoring import score_run
from analysis.suite import gold_inputs
from analysis.workspace import load_entry, read_manifest
from page_registry import PAGES as REGISTRY

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"
DEMO = ROOT / "data" / "demo" / "workspace.toml"
TIMEOUT = 300

pytestmark = pytest.mark.skipif(not DEMO.exists(), reason=f"the demo workspace {DEMO} is absent (make demo)")


@pytest.fixture(autouse=True)
def annotations_url(tmp_path, monkeypatch) -> str:
    url = f"sqlite:///{tmp_path / 'annotations.sqlite'}"
    monkeypatch.setenv("DST_ANNOTATIONS_URL", url)
    return url


@pytest.fixture(scope="module")
def manifest():
    return read_manifest(DEMO)


@pytest.fixture(scope="module")
def fewjoint(manifest):
    entry = manifest.fewjoint_entries[0]
    system = load_fewjoint_system(entry.gold, entry.pred, name=entry.name, shots=entry.shots)
    return {averaging: score_fewjoint(system, averaging=averaging) for averaging in ("episode", "micro")}


def opened(page: str, workspace: Path = DEMO, **state) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.session_state["workspace_path"] = str(workspace)
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    at.switch_page(f"pages/{page}.py").run()
    return at


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def values(encoded) -> list:
    if isinstance(encoded, dict) and "bdata" in encoded:
        return np.frombuffer(base64.b64decode(encoded["bdata"]), dtype=np.dtype(encoded["dtype"])).tolist()
    return list(encoded)


def chart(at: AppTest, index: int) -> dict:
    return json.loads(at.get("plotly_chart")[index].proto.spec)


def table_with(at: AppTest, column: str) -> pd.DataFrame:
    return next(d.value for d in at.dataframe if column in d.value.columns)


@pytest.mark.parametrize("page", [page.url_path for page in REGISTRY if page.first is None])
def test_page_opens_and_draws(page):
    at = opened(page)
    no_exception(at)
    assert at.get("plotly_chart"), f"{page} drew no chart"
    assert at.title[0].value


# --- FewJoint ------------------------------------------------------------------------------------


def parse_mean_std(text: str) -> tuple[float, float]:
    mean, std = re.fullmatch(r"([0-9.]+) ± ([0-9.]+)", text).groups()
    return float(mean), float(std)


@pytest.mark.slow
@pytest.mark.parametrize("averaging", ["episode", "micro"])
def test_fewjoint_leaderboard_equals_score_fewjoint(fewjoint, averaging):
    at = opened("fewjoint", fewjoint_averaging=averaging, fewjoint_metric="sentence_accuracy")
    no_exception(at)
    summary = fewjoint[averaging].summary.set_index("metric")
    board = table_with(at, "intent accuracy (mean ± std)")
    assert board["system"].tolist() == ["simulated"]
    for label, metric in (("intent accuracy", "intent_accuracy"), ("slot F1", "slot_f1")):
        mean, std = parse_mean_std(board[f"{label} (mean ± std)"].iloc[0])
        assert mean == pytest.approx(summary.loc[metric, "mean"], abs=5e-5)
        assert std == pytest.approx(summary.loc[metric, "std"], abs=5e-5)
    bar = chart(at, 0)["data"][0]
    assert values(bar["y"])[0] == pytest.approx(summary.loc["sentence_accuracy", "mean"])
    captions = " ".join(c.value for c in at.caption)
    assert ("per episode" if averaging == "episode" else "pooled over all queries") in captions
    assert "ddof=1" in captions


def test_fewjoint_shows_ill_formed_bio_per_seed(fewjoint):
    at = opened("fewjoint")
    no_exception(at)
    seeds = table_with(at, "ill-formed BIO tags").set_index("seed")
    per_seed = fewjoint["episode"].per_seed.assign(seed=lambda f: f["seed"].astype(str)).set_index("seed")
    assert seeds["ill-formed BIO tags"].to_dict() == per_seed["n_ill_formed"].astype(int).to_dict()
    merged = [w.body for w in at.warning if "Ill-formed BIO" in w.body]
    assert len(merged) == 1, "one box for all seeds"
    for seed, row in per_seed.iterrows():
        if row["n_ill_formed"]:
            assert f"seed {seed}: {int(row['n_ill_formed'])} in {int(row['n_ill_formed_queries'])} quer" in merged[0]


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
def test_fewjoint_warns_below_five_seeds(tmp_path, manifest):
    entry = manifest.fewjoint_entries[0]
    run = manifest.entries[0]
    (tmp_path / "workspace.toml").write_text(
        f"""[workspace]
name = "two seeds"
allow_outside_root = true

[[runs]]
name = "one"
pred = "{run.pred}"
gold = "{run.gold}"

[[fewjoint]]
name = "two-seeds"
gold = "{entry.gold}"
pred = ["{entry.pred[0]}", "{entry.pred[1]}"]
shots = 1
""",
        encoding="utf-8",
    )
    at = opened("fewjoint", workspace=tmp_path / "workspace.toml")
    no_exception(at)
    assert any("only 2 seed" in w.body for w in at.warning)


def test_fewjoint_query_browser_filters_and_diffs(fewjoint):
    result = fewjoint["episode"]
    at = opened("fewjoint", fewjoint_domain="music", fewjoint_errors_only=False, view_fewjoint="Query browser")
    no_exception(at)
    queries = table_with(at, "verdict")
    expected = result.queries[(result.queries["seed"].astype(str) == "1") & (result.queries["domain"] == "music")]
    assert set(queries["domain"]) == {"music"} and len(queries) == len(expected)
    diff = table_with(at, "gold chunk")
    assert {"token", "gold tag", "pred tag", "pred chunk"} <= set(diff.columns)
    assert any(t.value.startswith(("✓ sentence correct", "✗ sentence wrong")) for t in at.text)


def test_fewjoint_without_systems_says_so(tmp_path, manifest):
    run = manifest.entries[0]
    (tmp_path / "workspace.toml").write_text(
        f'[workspace]\nname = "none"\nallow_outside_root = true\n\n[[runs]]\nname = "one"\npred = "{run.pred}"\ngold = "{run.gold}"\n',
        encoding="utf-8",
    )
    at = opened("fewjoint", workspace=tmp_path / "workspace.toml")
    no_exception(at)
    assert any("no FewJoint systems" in i.body for i in at.info)


# --- Reconcile -----------------------------------------------------------------------------------


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
def test_reconcile_table_equals_score_run(manifest):
    run_id = "simulated-A-mwz-en-predicted"
    at = opened("reconcile", run=run_id)
    no_exception(at)
    assert at.selectbox(key="w_run_reconcile").value == run_id
    table = table_with(at, "convention").set_index("convention")
    run = load_entry(next(e for e in manifest.entries if e.name == run_id))
    # The run's own convention first, its lenient variant, then the default ones.
    expected = list(dict.fromkeys([run.meta.convention, *DEFAULT_CONVENTIONS]))
    if f"{run.meta.convention}-lenient" in CONVENTIONS:
        expected.insert(1, f"{run.meta.convention}-lenient")
    assert list(table.index) == expected
    for convention in expected:
        scored = score_run(run, convention)
        if {g["status"] for g in gold_inputs(scored).values()} == {"n/a"}:  # its scorer never reads this gold
            assert math.isnan(table.loc[convention, "JGA"]) and math.isnan(table.loc[convention, "Slot F1 (micro)"])
            continue
        assert table.loc[convention, "JGA"] == pytest.approx(joint_goal_accuracy(scored))
        assert table.loc[convention, "Slot F1 (micro)"] == pytest.approx(slot_prf_micro(scored)["f1"])
    bars = chart(at, 0)["data"][0]
    assert values(bars["y"]) == pytest.approx(table["JGA"].tolist(), nan_ok=True)


def test_reconcile_pair_shows_its_flips(manifest):
    run_id = "crosswoz-rule-dst"
    at = opened("reconcile", run=run_id, reconcile_a="exact", reconcile_b="mwzeval")
    no_exception(at)
    from analysis.reconcile.core import reconcile

    rec = reconcile(load_entry(next(e for e in manifest.entries if e.name == run_id)), list(DEFAULT_CONVENTIONS))
    flips = table_with(at, "correct under a")
    assert len(flips) == len(rec.flips("exact", "mwzeval"))
    responsible = table_with(at, "outcome under a")
    assert len(responsible) == sum(rec.causes("exact", "mwzeval").values())
    causes = next(chart(at, i) for i in range(len(at.get("plotly_chart"))) if "cause" in json.dumps(chart(at, i)))
    assert sum(values(causes["data"][0]["y"])) == len(responsible)


# --- Review --------------------------------------------------------------------------------------


def demo_errors(manifest) -> pd.DataFrame:
    return pd.concat([error_items(score_run(load_entry(e))) for e in manifest.entries], ignore_index=True)


def test_review_progress_equals_review_progress(manifest, annotations_url):
    errors = demo_errors(manifest)
    store = AnnotationStore(annotations_url)
    for row in errors.head(3).itertuples():
        store.annotate(
            Item(row.dataset, row.dialogue_id, row.turn_index, domain=row.domain, slot=row.slot, run_id=row.run_id),
            ["wrong value"],
            reviewer="ana",
        )
    expected = review_progress(errors, store.annotations())
    at = opened("review")
    no_exception(at)
    metric = next(m for m in at.metric if m.label == "Reviewed errors")
    assert metric.value == f"{int(expected['n_reviewed'].iloc[0]):,} / {int(expected['n_errors'].iloc[0]):,}"
    assert int(expected["n_reviewed"].iloc[0]) == 3
    per_run = table_with(at, "share reviewed")
    assert per_run["errors"].sum() == len(errors)
    store.close()


def test_reviewer_name_is_required_before_tagging(annotations_url):
    at = opened("review")
    no_exception(at)
    save = next(b for b in at.button if b.label == "Save tags")
    assert save.disabled
    assert any("reviewer name" in i.body for i in [*at.info, *at.warning])
    assert at.multiselect(key=next(m.key for m in at.multiselect if m.label == "Tags")).disabled

    at.text_input(key="w_reviewer").input("ana").run()
    no_exception(at)
    tags = next(m for m in at.multiselect if m.label == "Tags")
    assert not tags.disabled
    tags.set_value(["missed update"])
    next(b for b in at.button if b.label == "Save tags").click().run()
    no_exception(at)
    stored = AnnotationStore(annotations_url).annotations()
    assert stored["reviewer"].tolist() == ["ana"]
    assert stored["tags"].tolist() == [("missed update",)]
    assert any("saved" in s.body for s in at.success)
    metric = next(m for m in at.metric if m.label == "Annotations in the store")
    assert metric.value == "1"


def test_review_filters_rerun_their_row_and_the_queue(manifest, annotations_url):
    """The filters are a fragment of their own (a save leaves them as they are); a change of one reruns
    them (the Slot choices follow the Domain) and then the queue, which lists what they ask for."""
    at = opened("review")
    no_exception(at)

    def caption() -> str:
        return next(c.value for c in at.caption if "error episode(s) match" in c.value)

    def queue() -> pd.DataFrame:
        return table_with(at, "last turn")  # the queue (its slot column: domain-slot)

    everything = caption()
    domains = [d for d in at.selectbox(key="w_review_domain").options if d != "(all)"]
    assert len(domains) >= 2
    at.selectbox(key="w_review_domain").select(domains[0]).run()
    no_exception(at)
    assert caption() != everything
    assert set(queue()["slot"].str.split("-").str[0]) == {domains[0]}
    slots = [s for s in at.selectbox(key="w_review_slot").options if s != "(all)"]
    assert slots and all(not s.startswith(f"{domains[0]}-") for s in slots)  # the slot names of that domain
    at.selectbox(key="w_review_slot").select(slots[0]).run()
    no_exception(at)
    assert set(queue()["slot"]) == {f"{domains[0]}-{slots[0]}"}
    # Another domain: the slot picked before is not one of its slots, so it no longer filters the queue.
    at.selectbox(key="w_review_domain").select(domains[1]).run()
    no_exception(at)
    assert set(queue()["slot"].str.split("-").str[0]) == {domains[1]}
    assert at.selectbox(key="w_review_slot").value == ""
    at.selectbox(key="w_review_status").select("all").run()
    no_exception(at)
    assert "(all" in caption()


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
def test_review_agreement_and_import(manifest, annotations_url, tmp_path):
    errors = demo_errors(manifest).head(4)
    store = AnnotationStore(annotations_url)
    for n, row in enumerate(errors.itertuples()):
        item = Item(row.dataset, row.dialogue_id, row.turn_index, domain=row.domain, slot=row.slot, run_id=row.run_id)
        store.annotate(item, ["wrong value"], reviewer="ana")
        store.annotate(item, ["wrong value" if n % 2 else "other"], reviewer="bo")
    from analysis.review import cohens_kappa

    agreement = cohens_kappa(store.annotations(), "ana", "bo")
    at = opened("review", review_a="ana", review_b="bo")
    no_exception(at)
    kappa = next(m for m in at.metric if m.label == "Cohen's kappa")
    assert kappa.value == f"{agreement.kappa:.3f}"
    assert len(table_with(at, "their tags")) == len(agreement.disagreements) == 2

    export = tmp_path / "export.json"
    store.export_json(export)
    other = AnnotationStore(f"sqlite:///{tmp_path / 'other.sqlite'}")
    assert other.import_json(export) == 8
    assert other.import_json(export) == 0  # the page's import is the store's: idempotent
    other.close()
    store.close()
