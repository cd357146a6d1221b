"""Dialogue viewer (issue 17 requirement 7), driven through AppTest: turns in numeric order whatever the file's
key order, the slot filter through the ontology alignment side by side, "k of n" counting, utterances
from the gold file."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from analysis import views
from analysis.crosslingual import mapping_from_manifest
from analysis.formats import parse_file
from analysis.scoring import score_run
from analysis.workspace import load_entry, read_manifest

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"
DEMO = ROOT / "data" / "demo" / "workspace.toml"
TIMEOUT = 180
EN, ZH = "simulated-A-mwz-en-predicted", "simulated-A-mwz-zh-predicted"

pytestmark = pytest.mark.skipif(not DEMO.exists(), reason=f"the demo workspace {DEMO} is absent (make demo)")


def _open(workspace: Path, **state) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.session_state["workspace_path"] = str(workspace)
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    at.switch_page("pages/dialogue.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture(scope="module")
def manifest():
    return read_manifest(DEMO)


@pytest.fixture(scope="module")
def demo(manifest):
    entries = {e.name: e for e in manifest.entries}
    return {name: score_run(load_entry(entries[name])) for name in (EN, ZH)}


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
def test_trade_turn_keys_out_of_order_are_listed_in_numeric_order(tmp_path) -> None:
    turns = {
        key: {
            "turn_belief": [f"hotel-area-{key}"],
            "pred_bs_ptr": [f"hotel-area-{key}" if key != "2" else "hotel-area-x"],
        }
        for key in ("3", "2", "1", "0", "9")
    }
    (tmp_path / "trade.json").write_text(json.dumps({"MUL0001.json": turns}), encoding="utf-8")
    (tmp_path / "workspace.toml").write_text(
        '[workspace]\nname = "keys"\n\n[[runs]]\nname = "trade"\npred = "trade.json"\n', encoding="utf-8"
    )
    at = _open(tmp_path / "workspace.toml")
    picker = at.selectbox(key="w_turn")
    assert list(picker.options) == [f"turn {t} · {k} of 5" for k, t in enumerate((0, 1, 2, 3, 9), start=1)]
    listing = at.dataframe[-1].value
    assert listing["turn"].tolist() == [0, 1, 2, 3, 9]
    at.selectbox(key="w_turn").select_index(4).run()
    assert at.session_state["turn"] == 9 and any(h.value == "Turn 9" for h in at.subheader)


def test_turn_k_of_n_counts_the_dialogues_turns(demo) -> None:
    index = views.dialogue_index(demo[EN])
    ten = index.loc[index["n_turns"] == 10, "dialogue_id"]
    if not len(ten):
        pytest.skip("no 10-turn dialogue in the demo run")
    at = _open(DEMO, runs=[EN], run=EN, dialogue=str(ten.iloc[0]), turn=9)
    options = list(at.selectbox(key="w_turn").options)
    assert options[0].endswith("1 of 10") and options[-1] == "turn 9 · 10 of 10"
    assert at.selectbox(key="w_turn").value == 9


def test_user_and_system_text_come_from_the_gold_file(demo, manifest) -> None:
    """The simulated prediction file holds states only; the viewer shows the gold file's utterances."""
    entry = next(e for e in manifest.entries if e.name == EN)
    assert entry.gold is not None
    with gzip.open(entry.pred, "rt", encoding="utf-8") as handle:
        first = json.loads(handle.readline())
    assert not {"user", "system", "text"} & set(first)  # the prediction file carries no text
    gold = parse_file(entry.gold).turns
    dialogue = str(views.dialogue_index(demo[EN])["dialogue_id"].iloc[0])
    row = gold[(gold["dialogue_id"] == dialogue) & (gold["turn_index"] == 1)].iloc[0]
    assert row["user"] and row["system"]
    at = _open(DEMO, runs=[EN], run=EN, dialogue=dialogue, turn=1)
    shown = [t.value for t in at.text]
    assert str(row["user"]) in shown and str(row["system"]) in shown


def test_slot_filter_is_translated_through_the_alignment_side_by_side(demo, manifest) -> None:
    overrides = tuple(sorted(mapping_from_manifest(manifest.mappings, EN, ZH).items()))
    slot = "hotel-area"
    slot_zh = views.aligned_slot(demo[EN], demo[ZH], slot=slot, overrides=overrides)
    assert slot_zh == "旅馆-区域"
    # A dialogue and turn where both runs have a row for the slot (an error on the English side).
    dialogue, turn = None, None
    for candidate in views.dialogue_index(demo[EN])["dialogue_id"]:
        _, diff_en = views.dialogue_view(demo[EN], candidate)
        other = views.matching_dialogue(demo[ZH], candidate)
        if other is None:
            continue
        _, diff_zh = views.dialogue_view(demo[ZH], other)
        en_turns = set(diff_en.loc[(diff_en["slot"] == slot) & (diff_en["outcome"] != "correct"), "turn_index"])
        zh_turns = set(diff_zh.loc[diff_zh["slot"] == slot_zh, "turn_index"])
        if en_turns & zh_turns:
            dialogue, turn = candidate, min(en_turns & zh_turns)
            break
    assert dialogue is not None, "no demo dialogue with the slot on both sides"
    at = _open(DEMO, runs=[EN, ZH], run=EN, compare=ZH, dialogue=dialogue, turn=turn, slot=slot)
    assert at.selectbox(key="w_slot").value == slot and at.session_state["turn"] == turn
    tables = [d.value for d in at.dataframe if "status" in d.value.columns]
    assert len(tables) >= 2, "side by side shows two state diffs"
    english, chinese = tables[0], tables[1]
    assert len(english) and set(english["slot"]) == {slot}
    assert len(chinese) and set(chinese["slot"]) == {slot_zh}  # by name it would be empty
    _, diff_zh = views.dialogue_view(demo[ZH], views.matching_dialogue(demo[ZH], dialogue))
    assert chinese["gold"].tolist() == views.diff_at(diff_zh, turn, slot=slot_zh)["gold"].tolist()
    assert any(slot_zh in c.value for c in at.caption)


def test_aligned_slot_prefers_the_manifest_then_identical_names_then_inference() -> None:
    from analysis.demo.testing import scored_from_states

    gold_en = [{"hotel": {"area": "east"}}, {"hotel": {"area": "east", "stars": "4"}}]
    gold_zh = [{"旅馆": {"区域": "东"}}, {"旅馆": {"区域": "东", "星级": "4"}}]
    en = scored_from_states(gold_en, [{}, {}], run_id="en")
    en2 = scored_from_states(gold_en, [{}, {}], run_id="en2")
    zh = scored_from_states(gold_zh, [{}, {}], run_id="zh")
    assert views.aligned_slot(en, zh, slot="hotel-stars") == "旅馆-星级"  # inferred from the parallel gold
    assert views.aligned_slot(en, en2, slot="hotel-area") == "hotel-area"  # identical names
    assert views.aligned_slot(en, zh, slot="hotel-area", overrides=(("hotel-area", "旅馆-星级"),)) == "旅馆-星级"
    assert views.aligned_slot(en, zh, slot="hotel-area", overrides=(("hotel-area", ""),)) is None  # unmatched
    assert views.aligned_slot(en, zh, slot="taxi-leave") is None


WILD_EXCERPT = ROOT / "tests" / "data" / "wild" / "gptdst_running_log_excerpt.json"
HOSTILE_TEXT = "I think [the hotel](http://evil.example/x) is **fine** <b>:red[ok]</b> $x$\nsecond line"


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
def test_an_unparseable_turn_shows_its_own_text_and_reason(tmp_path) -> None:
    """Requirement 3 of issue 38: an unparseable turn is kept, counted and its text shown. The viewer shows
    the model's words literally (no link, markup or Markdown from them) with the reason, for a running log
    read with `format = "icdst-completion"` and for an `llm` file paired with a gold file apart."""
    records = json.loads(WILD_EXCERPT.read_text(encoding="utf-8"))
    (tmp_path / "log.json").write_text(json.dumps(records), encoding="utf-8")
    gold = [{"dialogue_id": "d1", "turn_index": t, "gold": {"hotel": {"area": "east"}}} for t in range(2)]
    pred = [
        {"dialogue_id": "d1", "turn_index": 0, "output": "hotel-area = east"},
        {"dialogue_id": "d1", "turn_index": 1, "output": HOSTILE_TEXT},
    ]
    for name, rows in (("gold.jsonl", gold), ("llm.jsonl", pred)):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (tmp_path / "workspace.toml").write_text(
        '[workspace]\nname = "texts"\n\n[[runs]]\nname = "completion"\npred = "log.json"\nformat = "icdst-completion"\n'
        '\n[[runs]]\nname = "llm"\npred = "llm.jsonl"\ngold = "gold.jsonl"\n',
        encoding="utf-8",
    )
    # The first unparseable completion of the excerpt: SNG0073.json turn 2, slot names without values.
    text = next(r["completion"] for r in records if r["ID"] == "SNG0073.json" and r["turn_id"] == 2)
    at = _open(
        tmp_path / "workspace.toml", runs=["completion", "llm"], run="completion", dialogue="SNG0073.json", turn=2
    )
    assert [c.value for c in at.code] == [text]
    assert "The predicted text could not be read (slot names without values); the model wrote:" in [
        t.value for t in at.text
    ]
    at = _open(tmp_path / "workspace.toml", runs=["completion", "llm"], run="llm", dialogue="d1", turn=1)
    assert [c.value for c in at.code] == [HOSTILE_TEXT]  # every character as written, the line break too
    assert any(t.value.startswith("The predicted text could not be read (prose without a state)") for t in at.text)
    rendered = [m.value for m in (*at.markdown, *at.caption, *at.info, *at.warning)]
    assert not any("evil.example" in value or "<b>" in value for value in rendered)
    # A parsed turn shows no such text.
    at = _open(tmp_path / "workspace.toml", runs=["completion", "llm"], run="llm", dialogue="d1", turn=0)
    assert not at.code and not any("could not be read" in t.value for t in at.text)


def test_a_search_that_excludes_the_open_dialogue_moves_the_viewer_off_it(demo) -> None:
    """Issue 41: the viewer kept showing a dialogue the active search excluded. A search typed while a dialogue
    is open shows one the search keeps; a dialogue opened by a link or a click afterwards stays, said aloud."""
    scored = demo[EN]
    word = "am"
    every = views.dialogue_index(scored)["dialogue_id"].astype(str).tolist()
    at = _open(DEMO, runs=[EN], run=EN, dialogue=every[0], turn=0)
    at.text_input(key="picker_search").input(word).run()
    assert not at.exception, [e.value for e in at.exception]
    kept = [o.split(" · ")[0] for o in at.selectbox(key="w_dialogue").options]
    assert 0 < len(kept) < len(every)
    # from a dialogue the search excludes, typing the search again (changed) moves the viewer into its matches
    outside = next(d for d in every if d not in kept)
    at.session_state["dialogue"] = outside
    at.text_input(key="picker_search").input(word.upper()).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["dialogue"] in kept and at.selectbox(key="w_dialogue").value in kept
    assert outside not in [o.split(" · ")[0] for o in at.selectbox(key="w_dialogue").options]
    # with the search unchanged, a click elsewhere (a chart, a link) opens a dialogue it excludes: it stays, said
    at.session_state["dialogue"] = outside
    at.run()
    assert at.selectbox(key="w_dialogue").value == outside
    assert any("outside the search" in c.value for c in at.caption), (outside, kept[:5], [m.value for m in at.markdown])
