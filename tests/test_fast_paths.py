"""Shortcuts that make scoring a run cheaper (issue 21, requirement 4: 1,000 runs in 3 minutes) must give
exactly what the general code gives: each is compared here with the path it replaces, on demo runs under
several conventions and on hand-made files that stress its conditions (or make it step aside)."""

from __future__ import annotations

import gzip
import json
from itertools import pairwise
from pathlib import Path

import pandas as pd
import pytest

from analysis import formats, views
from analysis import metrics as M
from analysis.errors import InputError
from analysis.formats import reading, specs
from analysis.scoring import Scored, score_run
from analysis.workspace import load_entry, read_manifest
from tests.conftest import ROOT

DEMO = ROOT / "data" / "demo" / "workspace.toml"
RUNS = [
    "simulated-A-mwz-en-predicted",
    "simulated-B-mwz-en-predicted-s1",
    "crosswoz-rule-dst",
    "simulated-sgd-predicted",
]
CONVENTIONS = [None, "exact", "trade", "mwzeval", "dstc9"]


@pytest.fixture(scope="module")
def demo_scored():
    entries = {e.name: e for e in read_manifest(DEMO).entries}
    out = {}
    for name in RUNS:
        run = load_entry(entries[name])
        for convention in CONVENTIONS:
            out[(name, convention)] = score_run(run, convention)
    return out


def _fresh(scored: Scored) -> Scored:
    """The same tables without memoised results."""
    return Scored(scored.convention, scored.metas, scored.turns, scored.slots, scored.ontology, scored.alignment)


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert list(a.dtypes) == list(b.dtypes)


# --- per (domain, slot) and per (turn, domain) counts from the integer pair codes --------------------------


@pytest.mark.slow
def test_slot_pairs_paths_equal_the_group_by(demo_scored, monkeypatch):
    checked = 0
    for key, scored in demo_scored.items():
        fast = _fresh(scored)
        assert M.slot_pairs(fast) is not None, key
        tables = (
            views.slot_table(fast),
            M.per_slot_prf(fast),
            M.turn_facts(fast, by=["domain"]),
            M.joint_goal_accuracy(fast, by=["domain"]),
        )
        with monkeypatch.context() as patch:
            patch.setattr(M, "slot_pairs", lambda scored: None)
            slow = _fresh(scored)
            expected = (
                views.slot_table(slow),
                M.per_slot_prf(slow),
                M.turn_facts(slow, by=["domain"]),
                M.joint_goal_accuracy(slow, by=["domain"]),
            )
        for got, want in zip(tables, expected, strict=True):
            _same(got, want)
        checked += 1
    assert checked == len(RUNS) * len(CONVENTIONS)


def test_slot_pairs_steps_aside_when_a_code_names_two_pairs(demo_scored):
    scored = _fresh(demo_scored[("simulated-A-mwz-en-predicted", None)])
    slots = scored.slots.copy()
    slots.loc[slots.index[0], "pair_code"] = int(slots["pair_code"].iloc[-1]) + 1000  # a code of its own: fine
    assert M._slot_pairs(slots) is not None
    codes = slots["pair_code"].to_numpy().copy()
    other = slots.index[(slots["domain"] != slots["domain"].iloc[0]).to_numpy()][0]
    codes[slots.index.get_loc(other)] = codes[0]  # one code now names two (domain, slot) pairs
    slots["pair_code"] = codes
    assert M._slot_pairs(slots) is None
    assert M._slot_pairs(slots.iloc[:0]) is None


# --- per-turn slot accuracy and the domain-slot F1 without their group-by and sort ----------------------


def test_per_turn_slot_accuracy_equals_the_group_by(demo_scored, monkeypatch):
    for key, scored in demo_scored.items():
        fast = M._slot_accuracy(_fresh(scored), ["tid"])
        with monkeypatch.context() as patch:
            patch.setattr(M, "_slot_accuracy_per_turn", lambda scored: None)
            slow = M._slot_accuracy(_fresh(scored), ["tid"])
        assert isinstance(fast, pd.DataFrame) and isinstance(slow, pd.DataFrame)
        _same(fast, slow)
        assert fast["slot_accuracy"].notna().any(), key


def test_domain_slot_f1_without_sort_equals_the_sorted_path(demo_scored):
    for key, scored in demo_scored.items():
        fast = M.slot_f1_domain_slot(_fresh(scored), by=["tid"])
        # Rows out of order: the shortcut's condition fails and the general path runs.
        shuffled = _fresh(scored)
        shuffled.slots = scored.slots.iloc[::-1].reset_index(drop=True)
        slow = M.slot_f1_domain_slot(shuffled, by=["tid"])
        assert isinstance(fast, pd.DataFrame) and isinstance(slow, pd.DataFrame)
        _same(fast, slow)
        assert (fast["slot_f1_domain_slot"] > 0).any(), key


# --- JSONL: one joined decode, and predictions recorded at once ------------------------------------------


def _write(tmp_path: Path, lines: list[str], name: str = "run.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _line(dialogue_id: object, turn: object, pred: object, **extra: object) -> str:
    return json.dumps({"dialogue_id": dialogue_id, "turn_index": turn, "pred": pred, **extra})


def _parsed_both_ways(path: Path, monkeypatch) -> tuple[object, object]:
    fast = formats.parse_file(path, use_cache=False)
    with monkeypatch.context() as patch:
        patch.setattr(reading, "_parse_jsonl_joined", lambda text, hook: None)
        patch.setattr(specs, "_plain_predictions", lambda records, c: False)
        slow = formats.parse_file(path, use_cache=False)
    return fast, slow


def _same_parse(fast, slow) -> None:
    _same(fast.turns, slow.turns)
    assert (fast.gold is None) == (slow.gold is None)
    if fast.pred is None or slow.pred is None:
        assert fast.pred is None and slow.pred is None
    else:
        _same(fast.pred, slow.pred)
    assert fast.notes == slow.notes and fast.listings == slow.listings


PLAIN = [
    _line("d1", 0, {}),
    _line("d1", 1, {"hotel": {"area": "east", "stars": ""}, "taxi": {}}),  # an empty value is dropped
    _line("d1", 2, {"taxi": {"leaveAt": "10:00"}, "hotel": {"area": "east", "name": "a },{ b"}}),
    _line("d2", 0, {"train": {"day": "monday"}}),
    _line("d2", 3, {"train": {"day": "monday", "people": "2"}, "hotel": {}}),
]


@pytest.mark.parametrize(
    "lines",
    [
        PLAIN,
        [line.replace('"pred"', '"pred" ') for line in PLAIN],  # spaces: the same objects
        [_line("d1", 0, {"hotel": {"area": ""}})],  # no row at all
        [_line(7, 0, {"hotel": {"area": "east"}}), _line(7, 1, {})],  # integer ids: read line by line
        [_line("d1", 0, {"hotel": {"area": "east"}}, user="hi", system="hello")],  # utterances: line by line
        [_line("d1", "01", {"hotel": {"area": "east"}})],  # a string turn index: line by line
        [_line("d1", 0, {"hotel": {"area": ["east", "west"]}})],  # a list value: line by line
        [_line("d1", 0, {"hotel": {"area": "east"}}), "", _line("d1", 1, {})],  # a blank line
    ],
)
def test_jsonl_shortcuts_parse_as_line_by_line(tmp_path, monkeypatch, lines):
    fast, slow = _parsed_both_ways(_write(tmp_path, lines), monkeypatch)
    _same_parse(fast, slow)


def test_jsonl_shortcuts_on_a_demo_run(monkeypatch):
    path = ROOT / "data" / "demo" / "simulated" / "simulated-A-mwz-en-predicted.jsonl.gz"
    fast, slow = _parsed_both_ways(path, monkeypatch)
    _same_parse(fast, slow)
    assert fast.pred is not None and len(fast.pred) > 1000


@pytest.mark.parametrize(
    ("lines", "problem"),
    [
        # Not one object a line, although joined by commas they read as three objects.
        (['{"a": [{"b": 1}', '{"c": 1}]}', '{"d": 1}, {"e": 1}'], "line 1 is not valid JSON"),
        ([_line("d1", 0, {}), _line("d1", 0, {})], "duplicate turn"),
        ([_line("d1", True, {})], "turn index must be an integer"),
        ([_line("d1", 10_001, {})], "out of range"),
        ([_line(" ", 0, {})], "dialogue_id must be a non-empty string"),
        ([_line("d1", 0, {"hotel": {"": "east"}})], "non-empty strings"),
        ([_line("d1", 0, {"hotel": {"area": "x" * 10_001}})], "too long"),
        ([_line("d1", 0, {}), json.dumps({"dialogue_id": "d1", "turn_index": 1})], "line 2 lacks a required key"),
        ([_line("d1", 0, {}), '{"dialogue_id": "d1", "turn_index": 1, "pred": {}, "pred": {}}'], "twice"),
    ],
)
def test_jsonl_errors_name_the_line_as_before(tmp_path, lines, problem):
    with pytest.raises(InputError) as error:
        formats.parse_file(_write(tmp_path, lines), fmt="jsonl", use_cache=False)
    assert problem in str(error.value)


def test_joined_decode_refuses_what_is_not_one_object_a_line():
    hook_objects, hook = reading._collecting()
    assert reading._parse_jsonl_joined('{"a": 1}\n{"b": 2}\n', hook) == [{"a": 1}, {"b": 2}]
    assert len(hook_objects) == 2
    for text in (
        '{"a": [{"b": 1}\n{"c": 1}]}\n{"d": 1}, {"e": 1}\n',  # items are not the lines
        '{"a": 1}\n[1]\n',  # not an object
        '{"a": 1}\n\n{"b": 2}\n',  # a blank line: read line by line
        '{"a": "},{"}\n',  # the boundary inside a string: read line by line (same result)
        '{"a": 1',
    ):
        assert reading._parse_jsonl_joined(text, None) is None, text


def test_gzipped_jsonl_takes_the_shortcut(tmp_path, monkeypatch):
    path = tmp_path / "run.jsonl.gz"
    path.write_bytes(gzip.compress(("\n".join(PLAIN) + "\n").encode()))
    taken = []
    original = specs._plain_predictions
    monkeypatch.setattr(specs, "_plain_predictions", lambda records, c: taken.append(1) or original(records, c))
    parsed = formats.parse_file(path, use_cache=False)
    assert taken and parsed.pred is not None
    assert parsed.pred["value"].tolist() == ["east", "10:00", "east", "a },{ b", "monday", "monday", "2"]


# --- mwzeval-style predictions ({dialogue: [{"state": ...}, ...]}) recorded at once ----------------------


def _mwzeval_both_ways(path: Path, monkeypatch) -> tuple[object, object, list[bool]]:
    """The file parsed with the shortcut (and whether it took it) and turn by turn."""
    taken: list[bool] = []
    original = specs._plain_mwzeval
    with monkeypatch.context() as patch:
        patch.setattr(specs, "_plain_mwzeval", lambda d, c: taken.append(original(d, c)) or taken[-1])
        fast = formats.parse_file(path, fmt="mwzeval", use_cache=False)
    with monkeypatch.context() as patch:
        patch.setattr(specs, "_plain_mwzeval", lambda d, c: False)
        slow = formats.parse_file(path, fmt="mwzeval", use_cache=False)
    return fast, slow, taken


MWZEVAL_PLAIN = {
    "d1": [
        {"state": {}, "response": "hello"},
        {"state": {"hotel": {"area": "east", "stars": ""}, "taxi": {}}},  # an empty value is dropped
        {"state": {"taxi": {"leaveAt": "10:00"}, "hotel": {"area": "east", "name": "a },{ b"}}, "active_domains": []},
    ],
    "d2": [{"state": {"train": {"day": "monday"}}}],
    "d3": [],  # a dialogue without turns: counted in the notes
}


@pytest.mark.parametrize(
    ("records", "shortcut"),
    [
        (MWZEVAL_PLAIN, True),
        ({"d1": [{"state": {"hotel": {"area": ""}}}]}, True),  # no row at all
        ({"d1": [{"state": {"hotel": {"area": "east"}}}, {"state": {"hotel": {"area": ["east", "west"]}}}]}, False),
        ({"d1": [{"state": {"hotel": {"area": "east"}}}, {"state": {"hotel": {"stars": 4}}}]}, False),
        ({"d1": [{"state": {"hotel": {"area": "east"}}}], " ": [{"state": {}}]}, False),  # a blank id
        ({"d1": [{"state": {"hotel": "east"}}]}, False),  # a domain that is not an object
    ],
)
def test_mwzeval_shortcut_parses_as_turn_by_turn(tmp_path, monkeypatch, records, shortcut):
    path = tmp_path / "pred.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    try:
        fast, slow, taken = _mwzeval_both_ways(path, monkeypatch)
    except InputError as error:  # a file both ways refuse: refused alike
        with monkeypatch.context() as patch, pytest.raises(InputError) as again:
            patch.setattr(specs, "_plain_mwzeval", lambda d, c: False)
            formats.parse_file(path, fmt="mwzeval", use_cache=False)
        assert str(again.value) == str(error) and not shortcut
        return
    assert taken == [shortcut]
    _same_parse(fast, slow)


@pytest.mark.parametrize(
    ("records", "problem"),
    [
        ({"d1": [{"state": {}}, ["not a turn"]]}, "a turn"),
        ({"d1": [{"state": {}}, {"belief": {}}]}, "missing key"),
        ({"d1": [{"state": {"hotel": {"": "east"}}}]}, "non-empty strings"),
        ({"d1": [{"state": {"hotel": {"area": "x" * 10_001}}}]}, "too long"),
    ],
)
def test_mwzeval_errors_name_the_turn_as_before(tmp_path, records, problem):
    path = tmp_path / "pred.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    with pytest.raises(InputError) as error:
        formats.parse_file(path, fmt="mwzeval", use_cache=False)
    assert problem in str(error.value)


@pytest.mark.realdata
@pytest.mark.parametrize("name", ["augpt", "dots", "pptod", "soloist", "ubar"])
def test_mwzeval_shortcut_on_the_real_outputs(monkeypatch, name):
    from tests.conftest import realdata_path

    fast, slow, taken = _mwzeval_both_ways(realdata_path("mwzeval_outputs", f"{name}.json"), monkeypatch)
    assert taken == [True] and fast.pred is not None and len(fast.turns) > 7000
    _same_parse(fast, slow)


# --- the stored per-(depth | domain, dialogue) JGA parts, counted with integer keys ----------------------


def test_counted_jga_parts_equal_the_stats_path(demo_scored, monkeypatch):
    from analysis.store import parts

    for key, scored in demo_scored.items():
        for by in ("turn_index", "domain"):
            counted = parts._jga_parts_counted(_fresh(scored), by)
            assert counted is not None, (key, by)
            with monkeypatch.context() as patch:
                patch.setattr(parts, "_jga_parts_counted", lambda scored, by: None)
                general = parts._jga_parts(_fresh(scored), by)
            if by == "domain":
                general["domain"] = pd.array(general["domain"], dtype="str")
            _same(counted, general)
            assert counted["num"].sum() > 0, (key, by)


# --- the dialogue picker's table counted per integer dialogue code -------------------------------------


def test_counted_picker_equals_the_group_by(demo_scored, monkeypatch):
    for key, scored in demo_scored.items():
        counted = views.compounding_runs(scored)
        assert views.dialogue._compounding_counted(scored.turns) is not None, key
        with monkeypatch.context() as patch:
            patch.setattr(views.dialogue, "_compounding_counted", lambda turns: None)
            general = views.compounding_runs(scored)
        _same(counted, general)
        assert counted["compounding_run"].sum() > 0, key
    # Turns out of order: the group-by path.
    scored = demo_scored[("simulated-A-mwz-en-predicted", None)]
    assert views.dialogue._compounding_counted(scored.turns.iloc[::-1]) is None
    assert views.dialogue._compounding_counted(scored.turns.sort_values("turn_index", kind="stable")) is None


# --- grouped means of 0/1 values counted per integer group code ------------------------------------------

TAKEN = (
    ("simulated-A-mwz-en-predicted", None),
    ("simulated-B-mwz-en-predicted-s1", "trade"),
    ("crosswoz-rule-dst", None),
    ("simulated-sgd-predicted", "trade"),
)
BYS = [["run_id"], ["domain"], ["turn_index"], ["run_id", "domain"], ["run_id", "turn_index"], ["slot", "domain"]]


@pytest.mark.slow
def test_counted_means_equal_the_group_by(demo_scored, monkeypatch):
    from analysis import registry as R

    taken = 0
    # Each of the four runs once, each of the two conventions (the run's own, trade: ontology-wide slot flags)
    # on two of them, one MultiWOZ run each: every metric and group-by under both conventions, from half the
    # pairs (29-36 s of a full run before, 11 s alone after).
    for key in TAKEN:  # a pair missing from the fixture is a KeyError, never a pair silently left out
        scored = demo_scored[key]
        for metric in R.METRICS:
            for by in BYS:
                try:
                    fast = metric.function(_fresh(scored), by=by)
                except ValueError:
                    continue  # a metric that takes no slot-level by
                with monkeypatch.context() as patch:
                    patch.setattr(M, "_mean_of_flags", lambda *args: None)
                    slow = metric.function(_fresh(scored), by=by)
                assert isinstance(fast, pd.DataFrame), (key, metric.name, by)
                _same(fast.reset_index(drop=True), slow.reset_index(drop=True))
                taken += 1
    assert taken > 100
    values = pd.DataFrame({"k": ["b", "a", "b", "c"], "v": [1.0, 0.0, float("nan"), 0.5]})
    assert M._mean_of_flags(values, values["v"].to_numpy(), ["k"], "m") is None  # 0.5: the group-by
    flags = values.assign(v=[1.0, 0.0, float("nan"), 1.0])
    got = M._mean_of_flags(flags, flags["v"].to_numpy(), ["k"], "m")
    assert got is not None
    assert got["k"].tolist() == ["a", "b", "c"] and got["n_turns"].tolist() == [1, 1, 1]
    assert got["m"].tolist() == [0.0, 1.0, 1.0]


def test_per_turn_gca_counts_equal_the_group_by(demo_scored):
    for key, scored in demo_scored.items():
        fast = M.gca_counts(_fresh(scored), by=["tid"])
        general = M.gca_counts(_fresh(scored), by=["run_id", "tid"]).drop(columns="run_id")  # the group-by
        _same(fast, general)
        assert fast[list(M.GCA_COUNTS)].to_numpy().sum() > 0, key


def test_same_turns_in_gold_order_and_shuffled():
    from analysis.loading import _same_turns

    gold = pd.DataFrame({"dialogue_id": ["a", "a", "b"], "turn_index": [0, 1, 0]})
    assert _same_turns(gold, gold.copy())
    assert _same_turns(gold, gold.iloc[::-1])
    assert not _same_turns(gold, gold.assign(turn_index=[0, 2, 0]))
    assert not _same_turns(pd.concat([gold, gold.iloc[:1]]), pd.concat([gold, gold.iloc[1:2]]))


# --- alignment: ids paired by key (mwzeval's lowercase ids) without the general merge ------------------------


def _mwzeval_file(tmp_path: Path, *, drop: str | None = None, rename: dict[str, str] | None = None) -> Path:
    """The demo's simulated MultiWOZ run written as mwzeval writes predictions: lowercase ids without
    `.json`, one list of turns per dialogue (`drop`: a dialogue left out; `rename`: ids written otherwise)."""
    with gzip.open(ROOT / "data" / "demo" / "simulated" / "simulated-A-mwz-en-predicted.jsonl.gz", "rt") as handle:
        records = [json.loads(line) for line in handle if line.strip()]
    dialogues: dict[str, list[dict]] = {}
    for record in records:
        name = record["dialogue_id"].lower().removesuffix(".json")
        if name != drop:
            dialogues.setdefault((rename or {}).get(name, name), []).append({"state": record["pred"]})
    path = tmp_path / "mwzeval_preds.json"
    path.write_text(json.dumps(dialogues), encoding="utf-8")
    return path


def _both_alignments(monkeypatch: pytest.MonkeyPatch, pred: Path) -> tuple[bool, tuple, tuple]:
    """`align` on the demo gold and `pred`: whether the shortcut took it, and the shortcut's and the general
    path's (turns, states, report)."""
    from analysis import loading

    gold = formats.parse_file(ROOT / "data" / "demo" / "multiwoz21" / "test_subset.json.gz")
    parsed = formats.parse_file(pred)
    taken: list[bool] = []
    real = loading._paired_by_key

    def watched(*args):  # type: ignore[no-untyped-def]
        found = real(*args)
        taken.append(found is not None)
        return found

    monkeypatch.setattr(loading, "_paired_by_key", watched)
    fast = loading.align(gold, parsed, parsed.pred)
    monkeypatch.setattr(loading, "_paired_by_key", lambda *a: None)
    general = loading.align(gold, parsed, parsed.pred)
    return taken == [True], fast, general


@pytest.mark.parametrize(
    ("drop", "rename", "shortcut"),
    [
        (None, None, True),  # every dialogue, ids in another case and without `.json`
        ("pmul3027", None, False),  # a dialogue missing: counted and reported by the general path
        (None, {"pmul3027": "PMUL3027.JSON"}, True),  # another spelling of the same key
        (None, {"pmul3027": "nope"}, False),  # an id the gold does not have
    ],
)
def test_alignment_by_key_equals_the_general_pairing(tmp_path, monkeypatch, drop, rename, shortcut):
    took, fast, general = _both_alignments(monkeypatch, _mwzeval_file(tmp_path, drop=drop, rename=rename))
    assert took is shortcut
    pd.testing.assert_frame_equal(fast[0], general[0])
    pd.testing.assert_frame_equal(fast[1], general[1])
    assert fast[2] == general[2]


def test_alignment_by_key_steps_aside():
    from types import SimpleNamespace

    from analysis.loading import _paired_by_key

    def turns(ids: list[str], turn: list[int]) -> pd.DataFrame:
        frame = pd.DataFrame({"dialogue_id": ids, "turn_index": turn}).astype({"dialogue_id": "str"})
        return frame.assign(_key=frame["dialogue_id"].str.lower().str.removesuffix(".json"))

    def states(ids: list[str], turn: list[int]) -> pd.DataFrame:
        n = len(ids)
        return pd.DataFrame(
            {"dialogue_id": ids, "turn_index": turn, "domain": ["hotel"] * n, "slot": ["area"] * n,
             "relation": ["="] * n, "value": ["east"] * n}
        ).astype({"dialogue_id": "str", "domain": "str", "slot": "str", "relation": "str", "value": "str"})  # fmt: skip

    gold = turns(["A.json", "A.json", "B.json"], [0, 1, 0])
    pred = turns(["a", "a", "b"], [0, 1, 0])
    found = _paired_by_key(gold, pred, SimpleNamespace(turns=pred), states(["a", "b"], [1, 0]))
    assert found is not None and found["dialogue_id"].tolist() == ["A.json", "B.json"]
    # Two gold ids of one key (turn 1 under another spelling): paired turn by turn by the general path.
    two = turns(["A.json", "a", "B.json"], [0, 1, 0])
    assert _paired_by_key(two, pred, SimpleNamespace(turns=pred), states(["a"], [1])) is None
    # A state of a turn the prediction file does not list; a turn held without a prediction.
    assert _paired_by_key(gold, pred, SimpleNamespace(turns=pred), states(["a"], [2])) is None
    assert _paired_by_key(gold, pred, SimpleNamespace(turns=pd.concat([pred, pred.iloc[:1]])), states([], [])) is None


# --- the delta check: its gold side computed once per gold file ------------------------------------------


def _delta_by_definition(turns: pd.DataFrame, gold: pd.DataFrame, pred: pd.DataFrame) -> tuple[float, int]:
    """`delta_suspicion` by its definition, one slot at a time."""
    order = turns.sort_values(["dialogue_id", "turn_index"])
    previous = {}
    for dialogue_id, group in order.groupby("dialogue_id", sort=False):
        indices = group["turn_index"].tolist()
        previous.update({(dialogue_id, t): (dialogue_id, p) for p, t in pairwise(indices)})
    gold_value = {(r.dialogue_id, r.turn_index, r.domain, r.slot): r.value for r in gold.itertuples()}
    held = {(r.dialogue_id, r.turn_index, r.domain, r.slot) for r in pred.itertuples()}
    considered = dropped = 0
    for (dialogue_id, t, domain, slot), value in gold_value.items():
        before = previous.get((dialogue_id, t))
        if before is None or gold_value.get((*before, domain, slot)) != value:
            continue
        if (*before, domain, slot) in held:
            considered += 1
            dropped += (dialogue_id, t, domain, slot) not in held
    return (dropped / considered if considered else 0.0), considered


def test_delta_check_with_its_gold_side_remembered(tmp_path, monkeypatch):
    from analysis.formats import more
    from analysis.loading import load_run

    monkeypatch.setenv("DST_CACHE_DIR", str(tmp_path / "cache"))
    formats._MEMORY.clear()
    entries = {e.name: e for e in read_manifest(DEMO).entries}
    for name in ("simulated-A-mwz-en-predicted", "simulated-B-mwz-en-predicted-s1"):
        entry = entries[name]
        gold_file = formats.parse_file(entry.gold)
        run = load_run(entry.pred, entry.gold, pred_format=entry.format, gold_format=entry.gold_format)
        # Each prediction: as given, every other row dropped (some turns read as deltas), and turn-level
        # deltas (what a cumulative reading of a delta file sees).
        pred = run.pred
        thinned = pred.iloc[::2]
        key = ["dialogue_id", "domain", "slot", "value"]
        first = pred.sort_values(["dialogue_id", "turn_index"]).drop_duplicates(key)
        for states in (pred, thinned, first):
            want = _delta_by_definition(run.turns, run.gold, states)
            derived: dict = {}
            got = more.delta_suspicion(run.turns, run.gold, states, derived)
            again = more.delta_suspicion(run.turns, run.gold, states, derived)  # the gold side remembered
            assert "delta_gold" in derived
            assert got[1] == want[1] and got == again
            assert got[0] == pytest.approx(want[0], abs=1e-12)
            assert more.delta_suspicion(run.turns, run.gold, states) == got
        assert gold_file.derived is formats.parse_file(entry.gold).derived  # shared by the memory cache's copies


def test_counted_domain_jga_equals_the_view(demo_scored):
    from analysis.store import parts

    for key, scored in demo_scored.items():
        counted = parts._jga_parts_counted(_fresh(scored), "domain")
        assert counted is not None, key
        fresh = _fresh(scored)
        summed = parts._domain_jga_counted(fresh, counted)
        if scored.convention.name == "sgd":
            assert summed is None, key
            continue
        assert summed is not None, key
        _same(summed, views.domain_jga([_fresh(scored)], resamples=0))
        assert summed["jga"].between(0, 1).all() and summed["n_turns"].sum() > 0, key


# --- the names a convention compares, without the value pipeline -------------------------------------------

REALDATA = ROOT.parent / "shared" / "realdata"
NAMED_FILES = [  # (prediction, gold): real files of several naming schemes (MultiWOZ 2.1/2.2, CrossWOZ, SGD)
    ("mwzeval_outputs/augpt.json", "multiwoz21/test.json.zip"),
    ("scorer_oracles/convlab3_augpt_predictions.json.gz", None),
]


def _probe_name_map(names: pd.DataFrame, conv) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    """The path `reconcile.core._name_map` replaces: each name as a one-row state through `normalise_states`
    (value `x`, no empty value, relation not compared), the gold side's naming read off its columns."""
    from dataclasses import replace

    from analysis.conventions import normalise_states

    frame = names.drop_duplicates().reset_index(drop=True)
    probe = pd.DataFrame(
        {
            "dialogue_id": "",
            "turn_index": 0,
            "domain": frame["domain"],
            "slot": frame["slot"],
            "relation": "=",
            "value": "x",
            "raw_domain": frame["domain"],
            "raw_slot": frame["slot"],
        }
    )
    named = normalise_states(probe, replace(conv, compare_relation=False, empty_values=frozenset()), side="gold")
    return named[["raw_domain", "raw_slot", "domain", "slot"]].rename(
        columns={"raw_domain": "domain", "raw_slot": "slot", "domain": "n_domain", "slot": "n_slot"}
    )


@pytest.mark.realdata
def test_name_map_equals_the_names_normalise_states_gives(demo_scored):
    """Under every registered convention, on the raw names of real files (both sides) and of the demo runs
    (CrossWOZ, SGD), plus names that stress the rules (case, NFC, MultiWOZ 2.2 booking names, hyphens)."""
    from analysis.conventions import CONVENTIONS as ALL
    from analysis.reconcile.core import _name_map

    frames = []
    for pred, gold in NAMED_FILES:
        if not (REALDATA / pred).exists():
            pytest.skip(f"{REALDATA / pred} is absent (the real-data checkout beside the project)")
        run = formats.parse_file(REALDATA / pred) if gold is None else None
        if run is not None:
            frames += [t[["domain", "slot"]] for t in (run.gold, run.pred) if t is not None]
        else:
            from analysis.loading import load_run

            loaded = load_run(REALDATA / pred, REALDATA / gold)
            frames += [loaded.gold[["domain", "slot"]], loaded.pred[["domain", "slot"]]]
    entries = {e.name: e for e in read_manifest(DEMO).entries}
    for name in RUNS:
        run = load_entry(entries[name])
        frames += [run.gold[["domain", "slot"]], run.pred[["domain", "slot"]]]
    stress = pd.DataFrame(
        {
            "domain": ["Hotel", "hotel", "Café", "Cafe\u0301", "restaurant", "train", "taxi", "attraction"],
            "slot": ["Book Day", "bookday", "food", "food", "book-people", "leaveAt", "arriveby", "entrance fee"],
        },
        dtype="str",
    )
    names = pd.concat([*frames, stress], ignore_index=True).astype("str")
    assert len(names.drop_duplicates()) > 100
    for conv in ALL.values():
        for side_conv in (conv, replace_renames(conv)):
            expected = _probe_name_map(names, side_conv).reset_index(drop=True)
            _same(_name_map(names, side_conv).reset_index(drop=True), expected)


def replace_renames(conv):  # type: ignore[no-untyped-def]
    """The convention as the vocabulary check names the predicted side: without the gold renames."""
    from dataclasses import replace

    return replace(conv, gold_slot_renames={})


@pytest.mark.parametrize("sparse", [False, True])
def test_first_seen_equals_the_group_by(sparse):
    """GCA's first turn of each label on a side: the dense `np.minimum.at` pass gives what a group-by's
    minimum gives, and labels too sparse for the dense array (3e12 entries here) take the group-by."""
    import numpy as np

    rng = np.random.default_rng(3)
    n = 5_000
    label = rng.integers(0, 3_000, n) * (10**9 if sparse else 1)
    tid = rng.integers(0, 800, n)
    seen = rng.random(n) < 0.6
    never = 801
    expected = pd.Series(tid[seen]).groupby(label[seen]).min().reindex(label, fill_value=never).to_numpy("int64")
    found = M._first_seen(label, tid, seen, never)
    assert found.dtype == np.int64
    assert np.array_equal(found, expected)
    assert (found == never).any() and (found < never).any()


def test_gca_first_seen_on_demo_runs_equals_the_group_by(demo_scored, monkeypatch):
    """GCA's counts on demo runs under several conventions with the group-by in place of the dense pass."""
    before = {k: M.granular_change_accuracy(_fresh(s), by=["tid"]) for k, s in demo_scored.items()}
    monkeypatch.setattr(M, "_first_seen", _first_seen_by_group)
    for key, scored in demo_scored.items():
        after = M.granular_change_accuracy(_fresh(scored), by=["tid"])
        pd.testing.assert_frame_equal(after, before[key], check_exact=True)
        assert after["gca"].notna().any(), key


def _first_seen_by_group(label, tid, seen, never):
    return pd.Series(tid[seen]).groupby(label[seen]).min().reindex(label, fill_value=never).to_numpy(dtype="int64")


def test_micro_counts_per_turn_equal_the_group_by(demo_scored, monkeypatch):
    """Micro P/R/F1 by `tid` (the store's per-dialogue parts) counted per turn position: the group-by's frame,
    bit for bit, on demo runs under several conventions; a slot row whose turn is not listed steps aside."""
    fast = {k: M.slot_prf_micro(_fresh(s), by=["tid"]) for k, s in demo_scored.items()}
    assert all(M._counted_per_turn(_fresh(s)) is not None for s in demo_scored.values())
    monkeypatch.setattr(M, "_counted_per_turn", lambda scored: None)
    for key, scored in demo_scored.items():
        general = M.slot_prf_micro(_fresh(scored), by=["tid"])
        pd.testing.assert_frame_equal(fast[key], general, check_exact=True)
        assert general["tp"].sum() > 0, key
    monkeypatch.undo()
    s = next(iter(demo_scored.values()))
    turns = s.turns[s.turns["tid"] != s.slots["tid"].iloc[0]]
    assert M._counted_per_turn(Scored(s.convention, s.metas, turns, s.slots, s.ontology, s.alignment)) is None


@pytest.mark.parametrize("function", ["flexible_goal_accuracy", "flexible_goal_accuracy_sets"])
def test_fga_by_turn_equals_the_group_by(demo_scored, monkeypatch, function):
    """FGA by `tid` with one unit per turn (the store's per-dialogue parts, Turn depth) sorted instead of
    grouped: the group-by's frame, bit for bit, on demo runs under several conventions."""
    fga = getattr(M, function)
    fast = {k: fga(_fresh(s), by=["tid"]) for k, s in demo_scored.items()}
    monkeypatch.setattr(M, "_one_unit_per_turn", lambda facts, columns: None)
    for key, scored in demo_scored.items():
        general = fga(_fresh(scored), by=["tid"])
        pd.testing.assert_frame_equal(fast[key], general, check_exact=True)
        assert len(general) == len(scored.turns) and general.iloc[:, 1].between(0, 1).all(), key
        assert (general.iloc[:, 1] < 1).any(), key


def test_alignment_in_gold_order_equals_the_keyed_path(monkeypatch):
    """A prediction file holding the gold file's turns in its order (every demo JSONL run): the gold file's
    own aligned turns and report (once per gold file), the same as keying and comparing the predicted turns;
    the report is the caller's own copy."""
    from analysis import loading

    entries = {e.name: e for e in read_manifest(DEMO).entries}
    entry = entries["simulated-A-mwz-en-predicted"]
    gold, parsed = formats.parse_file(entry.gold), formats.parse_file(entry.pred)
    assert loading._in_gold_order(gold, loading._gold_turns(gold)[1], parsed.turns)
    fast = loading.align(gold, parsed, parsed.pred)
    again = loading.align(gold, parsed, parsed.pred)
    assert again[0] is fast[0] and again[2] == fast[2] and again[2] is not fast[2]
    again[2].missing_turn_examples.append(("x", 0))
    assert loading.align(gold, parsed, parsed.pred)[2] == fast[2]
    monkeypatch.setattr(loading, "_in_gold_order", lambda *args: False)
    keyed = loading.align(gold, parsed, parsed.pred)
    pd.testing.assert_frame_equal(fast[0], keyed[0], check_exact=True)
    pd.testing.assert_frame_equal(fast[1], keyed[1], check_exact=True)
    assert fast[2] == keyed[2] and fast[2].gold_turns == len(gold.turns) > 0


def test_alignment_in_gold_order_steps_aside_for_a_gold_key_named_twice(tmp_path):
    """Two gold dialogues whose ids are one pairing key (`MUL1.json`, `mul1`): the predicted file naming the
    same ids in the same order is refused as before (its two dialogues map to one key), not taken as aligned."""
    from analysis.loading import load_run

    turn = {"metadata": {"hotel": {"semi": {"area": "east"}, "book": {"booked": []}}}}
    gold = {"MUL1.json": {"log": [{"text": "hi"}, turn]}, "mul1": {"log": [{"text": "hi"}, turn]}}
    gold_path = tmp_path / "gold.json"
    gold_path.write_text(json.dumps(gold), encoding="utf-8")
    pred_path = tmp_path / "pred.jsonl"
    lines = [{"dialogue_id": d, "turn_index": 0, "pred": {"hotel": {"area": "east"}}} for d in gold]
    pred_path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="map to the same id"):
        load_run(pred_path, gold_path)


def test_slot_table_by_position_equals_the_merge(demo_scored, monkeypatch):
    """The Slots page's table (stored with each run) with each slot's outcome counts taken by its position
    among the pairs: the merged table, bit for bit, on demo runs under several conventions."""
    from analysis.views import slots as V

    fast = {k: V.slot_table(_fresh(s)) for k, s in demo_scored.items()}
    taken = [V._in_pair_order(M.per_slot_prf(_fresh(s)), M.slot_pairs(s)[1]) for s in demo_scored.values()]
    assert all(taken)
    monkeypatch.setattr(V, "_in_pair_order", lambda per_slot, names: False)
    for key, scored in demo_scored.items():
        merged = V.slot_table(_fresh(scored))
        pd.testing.assert_frame_equal(fast[key], merged, check_exact=True)
        assert merged["support"].sum() > 0 and len(merged) > 1, key
    shuffled = M.per_slot_prf(_fresh(scored)).reset_index(drop=True)
    assert not V._in_pair_order(shuffled, M.slot_pairs(scored)[1])


# --- ConvLab-3's unified slot names: each distinct (domain, slot) pair mapped once ---------------------------


def _convlab3_names_by_multiindex(states: pd.DataFrame) -> pd.DataFrame:
    """`scorer_inputs._convlab3_names` as it was: the pairs factorised as a MultiIndex (a tuple per row)."""
    from analysis import scorer_inputs as S

    domains = states["domain"].str.lower()
    codes, distinct = pd.factorize(pd.MultiIndex.from_frame(pd.DataFrame({"domain": domains, "slot": states["slot"]})))
    mapped = [S._convlab3_name(str(d), str(s)) for d, s in distinct]
    return states.assign(
        domain=domains, slot=pd.array(mapped, dtype="str").take(codes) if len(codes) else states["slot"]
    )


@pytest.mark.realdata
def test_convlab3_names_by_pair_codes_equal_the_multiindex():
    from analysis import scorer_inputs as S
    from analysis.loading import load_run

    gold = ROOT.parent / "shared" / "realdata" / "multiwoz21" / "test.json.zip"
    pred = ROOT.parent / "shared" / "realdata" / "mwzeval_outputs" / "augpt.json"
    if not (gold.exists() and pred.exists()):
        pytest.skip("the real data (../shared/realdata) is absent")
    run = load_run(pred, gold)
    for states in (run.gold, run.pred, run.pred.iloc[:0], run.gold.iloc[::-7]):
        _same(S._convlab3_names(states), _convlab3_names_by_multiindex(states))
    # Mixed case and every ConvLab-3 renaming, in both orders of first appearance.
    names = [("Hotel", "pricerange"), ("train", "leaveAt"), ("hotel", "PriceRange"), ("attraction", "type")]
    hand = pd.DataFrame({"domain": [d for d, _ in names] * 3, "slot": [s for _, s in names] * 3, "value": "x"})
    hand = hand.astype({"domain": "str", "slot": "str", "value": "str"})
    for frame in (hand, hand.iloc[::-1].reset_index(drop=True)):
        _same(S._convlab3_names(frame), _convlab3_names_by_multiindex(frame))


# --- each per-turn row's dialogue position: the turns' memoised positions when the rows are the turns --------


def test_dialogue_positions_equal_keying_the_ids(demo_scored):
    from analysis import stats
    from analysis.model import dialogue_key

    shortcut = 0
    for scored in demo_scored.values():
        fresh = _fresh(scored)
        dialogues = stats._dialogues(fresh)
        for metric in ("jga", "slot_accuracy", "aga"):
            for keys in ([], ["domain"]):
                if keys and metric == "aga":
                    continue
                per = stats._turn_parts(fresh, metric, keys)[0]
                found = stats._dialogue_positions(fresh, per, dialogues)
                expected = dialogues.get_indexer(dialogue_key(per["dialogue_id"]))
                assert found.tolist() == expected.tolist()
                shortcut += found is stats.turn_dialogue_positions(fresh)
        # Another dialogue list (a comparison's union of runs), or rows in another order: keyed, not the turns'.
        per = stats._turn_parts(fresh, "jga", [])[0]
        other = pd.Index(list(reversed(dialogues)))
        assert (
            stats._dialogue_positions(fresh, per, other).tolist()
            == other.get_indexer(dialogue_key(per["dialogue_id"])).tolist()
        )
        shuffled = per.iloc[::-1].reset_index(drop=True)
        assert (
            stats._dialogue_positions(fresh, shuffled, dialogues).tolist()
            == dialogues.get_indexer(dialogue_key(shuffled["dialogue_id"])).tolist()
        )
    assert shortcut >= len(demo_scored)  # JGA without keys took the turns' positions on every run
