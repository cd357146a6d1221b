"""AppTest over the demo workspace: every page of the registry that declares its first views (the pages the
prefetch warms; the others are opened by tests/test_pages_extra.py) opens without exception, and what the
pages show equals what `analysis` computes on the same files."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from analysis import views
from analysis.diagnostics import first_error_turns
from analysis.metrics import joint_goal_accuracy, per_slot_prf
from analysis.scoring import score_run
from analysis.workspace import load_entry, read_manifest
from page_registry import PAGES as REGISTRY

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"
DEMO = ROOT / "data" / "demo" / "workspace.toml"
# The pages that draw under the sidebar's convention and say which one; not FewJoint (intent and slot metrics
# of its own), Review (error items, each run under its declared convention, said in its own words) or
# Reconcile (scored under the conventions it lists).
PAGES = [page.url_path for page in REGISTRY if page.url_path not in ("fewjoint", "review", "reconcile")]
TIMEOUT = 180

pytestmark = pytest.mark.skipif(not DEMO.exists(), reason=f"the demo workspace {DEMO} is absent (make demo)")


@pytest.fixture(scope="module")
def manifest():
    return read_manifest(DEMO)


@pytest.fixture(scope="module")
def scored_runs(manifest):
    """Each demo run scored under its declared convention, straight from analysis."""
    return {entry.name: score_run(load_entry(entry)) for entry in manifest.entries}


def app(**state) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.session_state["workspace_path"] = str(DEMO)
    for key, value in state.items():
        at.session_state[key] = value
    return at


def opened(page: str, view: str | None = None, **state) -> AppTest:
    """`page` opened after the Overview; `view`: the tab to show on a page with tabs (`ui.tabs`)."""
    if view is not None:
        state[f"view_{page}"] = view
    at = app(**state)
    at.run()
    if page != "overview":
        at.switch_page(f"pages/{page}.py").run()
    return at


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def chart(at: AppTest, index: int) -> dict:
    return json.loads(at.get("plotly_chart")[index].proto.spec)


def values(encoded) -> list:
    """Plotly JSON arrays come plain or as typed binary (`bdata`)."""
    if isinstance(encoded, dict) and "bdata" in encoded:
        return np.frombuffer(base64.b64decode(encoded["bdata"]), dtype=np.dtype(encoded["dtype"])).tolist()
    return list(encoded)


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_every_page_opens_and_draws(page):
    at = opened(page)
    no_exception(at)
    assert at.get("plotly_chart"), f"{page} drew no chart"
    assert any("Convention" in c.value for c in at.caption), f"{page} has no caption stating the convention"


TABBED = {"slots": 3, "domains": 3, "turn_depth": 3, "crosslingual": 5, "fewjoint": 5}


@pytest.mark.slow
@pytest.mark.parametrize("page", sorted(TABBED))
def test_every_tab_opens_and_only_the_chosen_tab_is_sent(page):
    """Each tab of a page with tabs (`ui.tabs`) opens without exception and shows a chart or a table, and
    only the chosen tab's content is sent: the other tabs' charts are neither computed into the page nor
    drawn by the browser (Streamlit's plain tabs would send every tab's)."""
    at = opened(page)
    labels = [tab.label for tab in at.tabs]
    assert len(labels) == TABBED[page], labels
    seen = set()
    for label in labels:
        at = opened(page, view=label)
        no_exception(at)
        chosen = [tab for tab in at.tabs if tab.label == label]
        assert len(chosen) == 1
        charts = [json.loads(c.proto.spec)["layout"]["meta"]["name"] for c in chosen[0].get("plotly_chart")]
        tables = [tuple(d.value.columns) for d in chosen[0].dataframe]
        assert charts or tables, f"{page}: tab {label!r} shows nothing"
        others = [tab for tab in at.tabs if tab.label != label]
        assert all(not tab.children for tab in others), f"{page}: tabs other than {label!r} have content"
        seen.add((tuple(charts), tuple(tables)))
    assert len(seen) == len(labels)  # each tab shows its own content


def test_a_deep_link_opens_the_tab_it_names():
    at = app()
    at.query_params.update({"page": "turn_depth", "view": "Where errors come from"})
    at.run()
    no_exception(at)
    assert at.session_state["view_turn_depth"] == "Where errors come from"
    assert at.query_params["view"] in ("Where errors come from", ["Where errors come from"])
    titles = [json.loads(c.proto.spec)["layout"]["meta"]["name"] for c in at.get("plotly_chart")]
    assert titles == ["first error turn", "inherited vs new errors"]
    at = app()
    at.query_params.update({"page": "turn_depth", "view": "no such tab"})
    at.run()
    no_exception(at)
    assert at.session_state["view_turn_depth"] == "JGA by turn depth"  # an unknown tab falls back to the first


def test_the_upload_form_is_sent_only_while_its_box_is_open():
    """Closed, the sidebar's upload box holds no widgets (the file uploaders' browser code is then not
    loaded with the first page); opened, it has both uploaders, the format and the run name."""
    at = opened("overview")
    no_exception(at)
    notice = "Not comparable as they stand"  # the demo's runs side by side: the Overview's one notice
    labels = [e.label for e in at.expander if not e.label.startswith(notice)]
    assert labels == ["Upload a run", "Disk: score store and parse cache"]
    assert not at.get("file_uploader")
    assert not at.sidebar.get("code") and "disk_report" not in at.session_state  # the Disk box, closed, read nothing
    at = app(w_upload_box=True)  # a fresh session with the box open (AppTest drops an unchanged sidebar on a rerun)
    at.run()
    no_exception(at)
    assert [u.proto.label for u in at.get("file_uploader")] == ["Prediction file", "Gold file (optional)"]
    assert at.selectbox(key="w_upload_format").value == "detect"
    assert at.text_input(key="w_upload_name") is not None


def shown_jga(scored):
    """The JGA the leaderboard shows: under the sgd convention, the SGD evaluator's (analysis.sgd)."""
    if scored.convention.name == "sgd":
        from analysis.sgd import views as sgd_views

        result = sgd_views.result_of(scored.metas[0])
        assert not isinstance(result, str), result
        return result.table["#ALL_SERVICES"]["joint_goal_accuracy"]
    return joint_goal_accuracy(scored)


@pytest.mark.slow
def test_leaderboard_equals_analysis(scored_runs):
    at = opened("overview", combine_seeds=False)  # the seeds separately: one bar per run
    no_exception(at)
    board = at.dataframe[0].value.set_index("run")
    assert set(board.index) == set(scored_runs)
    for name, scored in scored_runs.items():
        assert board.loc[name, "JGA"] == pytest.approx(shown_jga(scored))
        assert board.loc[name, "turns"] == len(scored.turns)
        assert board.loc[name, "dialogues"] == scored.turns["dialogue_id"].nunique()
        assert board.loc[name, "convention"] == scored.convention.name
    (trace,) = chart(at, 0)["data"]  # one trace, a bar per run
    bars = dict(zip(values(trace["x"]), values(trace["y"]), strict=True))
    assert bars == pytest.approx({n: shown_jga(s) for n, s in scored_runs.items()})
    assert list(board["JGA"]) == sorted(board["JGA"], reverse=True)  # sorted by the chosen metric
    # A missing cell shows what the exports write (n/a or –), never Streamlit's default word "None".
    assert all(d.proto.placeholder in ("n/a", "–") for d in at.dataframe)


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
def test_overview_says_when_runs_are_not_comparable(manifest):
    metas = [e.meta for e in manifest.entries]
    versions = [m.run_id for m in metas if m.dataset == "MultiWOZ 2.1" and m.history == "predicted"][:2]
    at = opened("overview", runs=versions)
    assert not at.warning, [w.body for w in at.warning]
    mixed = [versions[0], next(m.run_id for m in metas if m.history == "gold")]
    at = opened("overview", runs=mixed)
    assert any("not comparable" in w.body for w in at.warning)


@pytest.mark.slow
def test_convention_switch_rescores(scored_runs):
    from analysis.workspace import load_workspace

    # MultiWOZ-zh gold is prepared as DSTC9's own pipeline prepares it (`analysis.scorer_inputs`): a number.
    run = "simulated-A-mwz-zh-predicted"
    at = opened("overview", runs=[run], convention="dstc9")
    no_exception(at)
    board = at.dataframe[0].value
    rescored = score_run(load_workspace(DEMO).runs[run], "dstc9")
    # The leaderboard names the DSTC9 subtask chosen from the run's data.
    assert board["convention"].tolist() == [f"dstc9 (subtask {rescored.convention.subtask})"]
    assert board["JGA"].iloc[0] == pytest.approx(joint_goal_accuracy(rescored))
    # A raw CrossWOZ file is not what DSTC9's scorer reads: n/a, never a number under its name.
    at = opened("overview", runs=["crosswoz-rule-dst"], convention="dstc9")
    no_exception(at)
    assert at.dataframe[0].value["JGA"].isna().all()


@pytest.mark.slow
def test_slots_page_equals_per_slot_prf(scored_runs):
    run = "simulated-A-mwz-en-predicted"
    at = opened("slots", run=run)
    no_exception(at)
    shown = at.dataframe[0].value
    expected = per_slot_prf(scored_runs[run])
    expected_f1 = dict(zip(expected["domain"] + "-" + expected["slot"], expected["f1"], strict=True))
    for slot, f1 in zip(shown["slot"], shown["F1"], strict=True):
        assert f1 == pytest.approx(expected_f1[slot], nan_ok=True)
    at = opened("slots", view="Value confusions", run=run)
    no_exception(at)
    slot = at.selectbox(key="w_slot").value
    domain, name = slot.split("-", 1)
    confusions = views.value_confusions(scored_runs[run], domain=domain, slot=name)
    assert at.dataframe[0].value["n"].tolist() == confusions["n"].tolist()


def test_domains_page_equals_metrics(scored_runs):
    at = opened("domains")
    no_exception(at)
    table = at.dataframe[0].value
    for run in ("crosswoz-rule-dst", "simulated-A-mwz-en-predicted"):
        expected = joint_goal_accuracy(scored_runs[run], by="domain").set_index("domain")["jga"]
        got = table[table["run"] == run].set_index("domain")["JGA"]
        assert got.to_dict() == pytest.approx(expected.to_dict())
    at = opened("domains", view="JGA by dialogue attribute")
    no_exception(at)
    attribute = at.dataframe[0].value
    crosswoz = attribute[attribute["run"] == "crosswoz-rule-dst"].set_index("type")["JGA"]
    expected = joint_goal_accuracy(scored_runs["crosswoz-rule-dst"], by="type").set_index("type")["jga"]
    assert crosswoz.to_dict() == pytest.approx(expected.to_dict())


def test_turn_depth_page_shows_compounding_and_first_errors(scored_runs):
    at = opened("turn_depth")
    no_exception(at)
    run = "simulated-A-mwz-en-predicted"
    depth = {t["name"]: values(t["y"]) for t in chart(at, 0)["data"]}
    expected_depth = views.depth_jga([scored_runs[run]])["jga"].tolist()
    assert depth[run] == pytest.approx(expected_depth)
    at = opened("turn_depth", view="Error compounding: JGA against GJGA")
    no_exception(at)
    assert any("GJGA" in t.value for t in at.text)
    at = opened("turn_depth", view="Where errors come from")
    no_exception(at)
    first = at.dataframe[0].value
    expected = first_error_turns(scored_runs[run])
    assert first[first["run"] == run]["dialogues"].sum() == len(expected)


def test_crosslingual_page_uses_manifest_mapping(scored_runs, manifest):
    at = opened("crosslingual")
    no_exception(at)
    run_a = at.selectbox(key="w_run_a").value
    run_b = at.selectbox(key="w_run_b").value
    assert (run_a, run_b) == (manifest.mappings[0]["a"], manifest.mappings[0]["b"])
    heat = chart(at, 0)["data"][0]
    summary = views.crosslingual_summary(scored_runs[run_a], scored_runs[run_b])
    assert sum(sum(values(row)) for row in heat["z"]) == summary["pairing"]["paired_turns"]
    at = opened("crosslingual", view="Ontology alignment")
    no_exception(at)
    alignment = next(d.value for d in at.dataframe if "source" in d.value.columns)
    assert (alignment["source"] == "override").sum() == len(manifest.mappings[0]["slots"])


def test_dialogue_viewer_steps_to_next_error(scored_runs):
    run = "simulated-A-mwz-en-predicted"
    scored = scored_runs[run]
    index = views.dialogue_index(scored)
    dialogue = views.first_dialogue_with_errors(index)
    at = opened("dialogue", run=run)
    no_exception(at)
    assert at.selectbox(key="w_dialogue").value == dialogue
    turns, diff = views.dialogue_view(scored, dialogue)
    errors = views.filter_turns(turns, diff, errors_only=True)
    start = at.session_state["turn"]
    expected = views.step_turn(errors, start, direction=1)
    if expected is None:
        pytest.skip("the first erroneous dialogue has one error turn only")
    at.button(key="next_error").click().run()
    no_exception(at)
    assert at.session_state["turn"] == expected
    shown = at.dataframe[0].value
    wanted = views.diff_at(diff, expected)
    assert shown["status"].tolist() == wanted["status"].tolist()
    assert shown["gold"].tolist() == wanted["gold"].tolist()
    assert any(f"Turn {expected}" == h.value for h in at.subheader)
    previous = views.step_turn(errors, expected, direction=-1)
    if previous is None:
        assert at.button(key="prev_error").disabled
    else:
        at.button(key="prev_error").click().run()
        assert at.session_state["turn"] == previous


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
def test_deep_link_opens_the_same_view(scored_runs):
    run = "simulated-B-mwz-en-predicted-s1"
    dialogue = views.dialogue_index(scored_runs[run])["dialogue_id"].iloc[3]
    at = app()
    at.query_params.update({"page": "dialogue", "run": run, "dialogue": dialogue, "turn": "2", "slot": ""})
    at.run()
    no_exception(at)
    assert at.selectbox(key="w_run_page").value == run
    assert at.selectbox(key="w_dialogue").value == dialogue
    assert at.session_state["turn"] == 2
    assert any(h.value == "Turn 2" for h in at.subheader)
    assert at.query_params["dialogue"] == [dialogue] or at.query_params["dialogue"] == dialogue


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
def test_failed_run_is_marked_and_the_others_load(tmp_path, manifest):
    good = manifest.entries[0]
    (tmp_path / "broken.json").write_text("{ not json", encoding="utf-8")
    (tmp_path / "workspace.toml").write_text(
        f"""[workspace]
name = "partly broken"
allow_outside_root = true  # the good run's files are the demo's

[[runs]]
name = "good"
pred = "{good.pred}"
gold = "{good.gold}"

[[runs]]
name = "missing"
pred = "nowhere.json"

[[runs]]
name = "malformed"
pred = "broken.json"
gold = "{good.gold}"
""",
        encoding="utf-8",
    )
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.session_state["workspace_path"] = str(tmp_path / "workspace.toml")
    at.run()
    no_exception(at)
    errors = " ".join(e.body for e in at.error)
    assert "missing" in errors and "nowhere.json" in errors and "malformed" in errors
    assert at.dataframe[0].value["run"].tolist() == ["good"]


def test_bad_manifest_shows_its_error(tmp_path):
    (tmp_path / "workspace.toml").write_text("[workspace\n", encoding="utf-8")
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.session_state["workspace_path"] = str(tmp_path / "workspace.toml")
    at.run()
    no_exception(at)
    assert any("malformed TOML" in e.body for e in at.error)


@pytest.mark.slow
def test_seeds_of_one_system_show_as_mean_and_std_with_each_seed(scored_runs, manifest):
    """Issue 17 req 2: the demo's simulated-B runs differ only in their seed (21, 22, 23): by default one bar
    at their mean JGA, ± their sample std, with the three seeds' values as points; the toggle shows them apart."""
    import numpy as np

    seeded = [e.name for e in manifest.entries if e.meta.system == "simulated-B"]
    jgas = [shown_jga(scored_runs[name]) for name in seeded]
    assert len(seeded) == 3
    at = opened("overview")
    no_exception(at)
    figure = chart(at, 0)["data"]
    bar = next(t for t in figure if t["type"] == "bar" and t["name"].startswith("simulated-B"))
    assert values(bar["y"])[0] == pytest.approx(np.mean(jgas))
    assert values(bar["error_y"]["array"])[0] == pytest.approx(np.std(jgas, ddof=1))
    points = next(t for t in figure if t["type"] == "scatter" and t["name"].startswith("simulated-B"))
    assert sorted(values(points["y"])) == pytest.approx(sorted(jgas))
    assert sum(t["type"] == "bar" for t in figure) == len(scored_runs) - 2  # three seeds, one bar
    table = next(d.value for d in at.dataframe if "seeds" in d.value.columns)
    row = table[table["seeds"] == "21, 22, 23"].iloc[0]
    assert row["JGA"] == f"{np.mean(jgas):.4f} ± {np.std(jgas, ddof=1):.4f}"
    at.toggle(key="w_combine_seeds").set_value(False).run()
    no_exception(at)
    (trace,) = chart(at, 0)["data"]  # one trace, a bar per run
    bars = set(values(trace["x"]))
    assert set(seeded) <= bars and not any("seeds" in d.value.columns for d in at.dataframe)
