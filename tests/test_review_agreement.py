"""Second opinions (issue 18 req 5): agreement per tag (Cohen's kappa for two reviewers, Krippendorff's alpha
for three or more, from scikit-learn and krippendorff) checked against hand computations on tiny cases, the
disagreements listed, the queue filter "reviewed by others, not by me", and the Review page showing them
(AppTest on the demo workspace, a temporary SQLite store)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.review import (
    AnnotationStore,
    Item,
    cohens_kappa,
    error_episodes,
    error_items,
    review_queue,
    tag_agreement,
)
from analysis.review.analysis import ALL_TAGS, COHEN, KRIPPENDORFF, _binary_chance, _kappa, _statistic

WV, OTHER = "wrong value", "other"


def _frame(rows: list[tuple[str, str, tuple[str, ...]]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["item_key", "reviewer", "tags"])


def _row(result, tag: str) -> dict:
    return result.per_tag.set_index("tag").loc[tag].to_dict()


# ---------------------------------------------------------------------------------- two reviewers: kappa

TWO = _frame(
    [
        ("i1", "a", (WV,)),
        ("i1", "b", (WV,)),
        ("i2", "a", (WV,)),
        ("i2", "b", (OTHER,)),
        ("i3", "a", (OTHER,)),
        ("i3", "b", (OTHER,)),
        ("i4", "a", (WV, OTHER)),
        ("i4", "b", (WV,)),
        ("i5", "a", (WV,)),  # only a reviewed it: no unit
        ("i1", "c", (OTHER,)),  # c is not among the chosen reviewers
    ]
)


def test_cohens_kappa_is_scikit_learns_and_equals_the_item_tag_formula() -> None:
    """Two reviewers' per-tag agreement is scikit-learn's `cohen_kappa_score`, equal to the item-tag formula
    `cohens_kappa` uses (`_kappa` of `_binary_chance`) on 0/1 ratings of every size and balance, ties and
    perfect agreement included; n/a where every rating is the same (chance agreement 1)."""
    rng = np.random.default_rng(7)
    checked = 0
    for n in (2, 3, 5, 17, 200):
        for share_a, share_b, flip in ((0.5, 0.5, 0.3), (0.1, 0.9, 0.5), (0.3, 0.3, 0.0), (0.8, 0.6, 0.1)):
            a = (rng.random(n) < share_a).astype(int)
            b = np.where(rng.random(n) < flip, (rng.random(n) < share_b).astype(int), a)
            if len(set(a) | set(b)) < 2:
                continue  # one value only: n/a before any kappa (below)
            ours, note = _statistic(np.vstack([a, b]).astype(float), COHEN)
            assert note == ""
            assert ours == pytest.approx(_kappa(*_binary_chance(a, b)), abs=1e-12), (a, b)
            checked += 1
    assert checked >= 15
    value, note = _statistic(np.ones((2, 4)), COHEN)
    assert math.isnan(value) and "every rating is the same" in note


def test_cohens_kappa_per_tag_equals_the_hand_computation() -> None:
    result = tag_agreement(TWO, ["a", "b"])
    assert result.statistic == COHEN and result.reviewers == ("a", "b") and result.n_items == 4
    # wrong value: a = 1 1 0 1, b = 1 0 0 1 -> p_o = 3/4; p_a = 3/4, p_b = 1/2;
    # p_e = 3/4 * 1/2 + 1/4 * 1/2 = 1/2; kappa = (3/4 - 1/2) / (1 - 1/2) = 1/2
    wv = _row(result, WV)
    assert wv["value"] == pytest.approx(0.5) and wv["observed"] == pytest.approx(0.75)
    assert (wv["n_ratings"], wv["n_yes"], wv["n_items_disagreeing"]) == (8, 5, 1)
    # other: a = 0 0 1 1, b = 0 1 1 0 -> p_o = 1/2, p_e = 1/2 -> kappa 0
    other = _row(result, OTHER)
    assert other["value"] == pytest.approx(0.0) and other["observed"] == pytest.approx(0.5)
    # all tags pooled, 8 (item, tag) units: p_o = 5/8; p_a = 5/8, p_b = 1/2; p_e = 1/2 -> kappa 1/4
    pooled = _row(result, ALL_TAGS)
    assert pooled["value"] == pytest.approx(0.25) and pooled["observed"] == pytest.approx(5 / 8)
    assert pooled["n_items_disagreeing"] == 2
    # The pooled value is the store's own item-tag kappa between the two.
    assert cohens_kappa(TWO, "a", "b").kappa == pytest.approx(pooled["value"])
    # The disagreements: the items, who annotated them, their tags, the tags in dispute.
    listed = result.disagreements
    assert listed["item_key"].tolist() == ["i2", "i4"]
    assert listed["reviewers"].tolist() == [("a", "b"), ("a", "b")]
    assert listed["tag_sets"].tolist() == [((WV,), (OTHER,)), ((WV, OTHER), (WV,))]
    assert listed["disputed"].tolist() == [(WV, OTHER), (OTHER,)]


def test_a_tag_everyone_rates_the_same_has_no_agreement_value() -> None:
    same = _frame([("i1", "a", (WV,)), ("i1", "b", (WV,)), ("i2", "a", (WV,)), ("i2", "b", (WV,))])
    row = _row(tag_agreement(same), WV)
    assert math.isnan(row["value"]) and "chance agreement is 1" in row["note"]
    assert row["observed"] == 1.0
    nobody_shared = _frame([("i1", "a", (WV,)), ("i2", "b", (WV,))])
    pooled = _row(tag_agreement(nobody_shared), ALL_TAGS)
    assert math.isnan(pooled["value"]) and "no item" in pooled["note"]
    with pytest.raises(ValueError, match="at least two reviewers"):
        tag_agreement(TWO, ["a"])


# ------------------------------------------------------------------------------ three reviewers: alpha

# Ratings of `wrong value` (1) vs `other` (0); "-": the reviewer did not annotate the item.
#        u1 u2 u3 u4
#   a     1  0  1  -
#   b     1  1  0  0
#   c     -  1  1  0
THREE = _frame(
    [
        ("u1", "a", (WV,)),
        ("u1", "b", (WV,)),
        ("u2", "a", (OTHER,)),
        ("u2", "b", (WV,)),
        ("u2", "c", (WV,)),
        ("u3", "a", (WV,)),
        ("u3", "b", (OTHER,)),
        ("u3", "c", (WV,)),
        ("u4", "b", (OTHER,)),
        ("u4", "c", (OTHER,)),
    ]
)


def test_krippendorffs_alpha_per_tag_equals_the_hand_computation() -> None:
    result = tag_agreement(THREE)
    assert result.statistic == KRIPPENDORFF and result.reviewers == ("a", "b", "c") and result.n_items == 4
    # Coincidences (each unit's ordered pairs weighted 1/(m_u - 1)): u1 -> o11 += 2; u2 and u3 -> o01, o10,
    # o11 += 1 each; u4 -> o00 += 2. So o00 = 2, o11 = 4, o01 = o10 = 2; n = 10, n0 = 4, n1 = 6.
    # D_o = (o01 + o10) / n = 0.4; D_e = 2 n0 n1 / (n (n - 1)) = 48 / 90; alpha = 1 - D_o / D_e = 0.25.
    for tag in (WV, OTHER):  # `other` is the complement of `wrong value` here: the same alpha
        row = _row(result, tag)
        assert row["value"] == pytest.approx(0.25)
        # Agreeing pairs within items: u1 1/1, u2 1/3, u3 1/3, u4 1/1 -> 4/8.
        assert row["observed"] == pytest.approx(0.5)
        assert (row["n_ratings"], row["n_items_disagreeing"]) == (10, 2)
    # Pooled: coincidences doubled (n = 20), n0 = n1 = 10: D_e = 200 / 380, alpha = 1 - 0.4 * 380 / 200 = 0.24.
    assert _row(result, ALL_TAGS)["value"] == pytest.approx(0.24)
    listed = result.disagreements
    assert listed["item_key"].tolist() == ["u2", "u3"]
    assert listed["reviewers"].tolist() == [("a", "b", "c"), ("a", "b", "c")]
    assert listed["tag_sets"].tolist()[0] == ((OTHER,), (WV,), (WV,))
    # Two of the three chosen: Cohen's kappa over the items both annotated (u1, u2, u3).
    pair = tag_agreement(THREE, ["a", "b"])
    assert pair.statistic == COHEN and pair.n_items == 3


# ------------------------------------------------------------------------- reviewed by others, not me


def test_queue_of_items_reviewed_by_others_not_by_me() -> None:
    store = AnnotationStore("sqlite://")
    errors = pd.DataFrame(
        {
            "run_id": ["r"] * 4,
            "dataset": ["ds"] * 4,
            "dialogue_id": ["d1", "d2", "d3", "d4"],
            "turn_index": [0, 0, 0, 0],
            "domain": ["hotel"] * 4,
            "slot": ["area"] * 4,
            "outcome": ["wrong_value"] * 4,
        }
    )

    def item(n: int, **kw: object) -> Item:
        return Item("ds", f"d{n}", 0, **kw)  # type: ignore[arg-type]

    store.annotate(item(1, domain="hotel", slot="area", run_id="r"), [WV], reviewer="bo")
    store.annotate(item(2, domain="hotel", slot="area", run_id="r"), [WV], reviewer="bo")
    store.annotate(item(2, domain="hotel", slot="area", run_id="r"), [OTHER], reviewer="ana")
    store.annotate(item(4), [OTHER], reviewer="ana")  # ana's whole-turn annotation covers d4's slot
    store.annotate(item(4, domain="hotel", slot="area"), [WV], reviewer="bo")  # any run
    queue = review_queue(errors, store, status="by-others", me="ana")
    assert queue["dialogue_id"].tolist() == ["d1"]
    assert queue["reviewers"].tolist() == [("bo",)]
    assert review_queue(errors, store, status="by-others", me="bo")["dialogue_id"].tolist() == []
    assert review_queue(errors, store, status="by-others", me="cy")["dialogue_id"].tolist() == ["d1", "d2", "d4"]
    assert review_queue(errors, store, status="by-others", me="")["dialogue_id"].tolist() == ["d1", "d2", "d4"]
    tagged = review_queue(errors, store, status="by-others", me="cy", tag=OTHER)
    assert tagged["dialogue_id"].tolist() == ["d2", "d4"]
    store.close()


# ----------------------------------------------------------------------------------------- the page

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo" / "workspace.toml"
TIMEOUT = 300

demo = pytest.mark.skipif(not DEMO.exists(), reason=f"the demo workspace {DEMO} is absent (make demo)")


@pytest.fixture
def annotations_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite:///{tmp_path / 'annotations.sqlite'}"
    monkeypatch.setenv("DST_ANNOTATIONS_URL", url)
    return url


def _opened(**state: object):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.session_state["workspace_path"] = str(DEMO)
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    at.switch_page("pages/review.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _demo_errors() -> pd.DataFrame:
    from analysis.scoring import score_run
    from analysis.workspace import load_entry, read_manifest

    entries = read_manifest(DEMO).entries
    return pd.concat([error_items(score_run(load_entry(e))) for e in entries], ignore_index=True)


def _table(at, column: str) -> pd.DataFrame:
    return next(d.value for d in at.dataframe if column in d.value.columns)


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
@demo
def test_review_page_shows_agreement_per_tag_and_the_second_opinion_queue(annotations_url: str) -> None:
    errors = error_episodes(_demo_errors()).head(6)  # the page's items: episodes, tagged with their span
    store = AnnotationStore(annotations_url)
    for n, row in enumerate(errors.itertuples()):
        item = Item(row.dataset, row.dialogue_id, row.turn_index, domain=row.domain, slot=row.slot, run_id=row.run_id,
                    last_turn=row.last_turn, n_turns=row.n_turns)  # fmt: skip
        store.annotate(item, [WV], reviewer="ana")
        store.annotate(item, [WV if n % 3 else OTHER], reviewer="bo")
        if n < 4:
            store.annotate(item, [WV, OTHER] if n % 2 else [WV], reviewer="cy")
    annotations = store.annotations()
    expected = tag_agreement(annotations)  # all three: Krippendorff's alpha
    assert expected.statistic == KRIPPENDORFF

    at = _opened(reviewer="ana", review_status="by-others")
    alpha = next(m for m in at.metric if m.label == "Krippendorff's alpha")
    assert alpha.value == f"{expected.per_tag.iloc[-1]['value']:.3f}"
    per_tag = _table(at, "Krippendorff's alpha")
    assert per_tag["tag"].tolist() == expected.per_tag["tag"].tolist()
    assert per_tag["Krippendorff's alpha"].tolist() == [
        "n/a" if v != v else f"{v:.3f}" for v in expected.per_tag["value"]
    ]
    listed = _table(at, "their tags")
    assert len(listed) == len(expected.disagreements) > 0
    assert any(text.startswith("ana: wrong value | bo: other") for text in listed["their tags"])
    assert any("A rating is one reviewer's yes/no on one tag of one item" in c.value for c in at.caption)
    # The queue: every item is ana's, so "reviewed by others, not by me" is empty for her ...
    assert any("0 error episode(s) match, 0 turn(s) (reviewed by others, not by me)" in c.value for c in at.caption)

    # ... and holds the six items for dee, who has reviewed nothing; two reviewers: Cohen's kappa.
    at = _opened(reviewer="dee", review_status="by-others", review_reviewers=["ana", "bo"])
    queue = review_queue(errors, annotations, status="by-others", me="dee")
    assert any(f"{len(queue)} error episode(s) match" in c.value for c in at.caption)
    assert len(queue) == 6
    pair = tag_agreement(annotations, ["ana", "bo"])
    kappa = next(m for m in at.metric if m.label == "Cohen's kappa")
    assert kappa.value == f"{pair.per_tag.iloc[-1]['value']:.3f}"
    assert len(_table(at, "their tags")) == len(pair.disagreements) == 2
    store.close()
