"""Two scored runs over the same dialogues in two languages or ontologies: slot alignment, gaps, drill-down.

The two sides name slots differently (`restaurant-area` vs `餐厅-区域`), so their ontologies are aligned
first. The alignment is inferred from the parallel gold states, never from the names: a slot of A and
its translation in B are filled on the same paired turns (Jaccard of the two sets of turns), and
their values translate consistently (value consistency: how well the value on one side predicts the
value on the other, the weaker of the two directions). A one-to-one greedy assignment on
`score = jaccard * (1 + consistency) / 2` pairs the slots; a mapping from the workspace manifest
overrides it, and identical names on both sides pair without inference (X-RiSAWOZ shares one schema).

Correctness is always judged within each language first (values differ across languages) and only
then compared: per paired turn, per aligned slot, per aligned domain or per turn depth.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from analysis import metrics as M
from analysis.diagnostics import AGREEMENT, agreement
from analysis.errors import InputError
from analysis.gap_support import MIN_SUPPORT, gap_support
from analysis.metrics import turn_facts
from analysis.model import dialogue_key
from analysis.outcomes import Outcome
from analysis.scoring import Scored

GAP_BY = ("slot", "domain", "turn_index")
# The column each `crosslingual_gaps` table is keyed on (A's labels for slots and domains).
GAP_COLUMN = {"slot": "slot_a", "domain": "domain_a", "turn_index": "turn_index"}
SOURCES = ("inferred", "override", "identical-name")
ALIGNMENT_COLUMNS = [
    "slot_a",
    "slot_b",
    "domain_a",
    "domain_b",
    "score",
    "support",
    "source",
    "jaccard",
    "consistency",
    "support_b",
    "alternative_b",
    "alternative_score",
]
ABSENT = "∅"


def _single_run(scored: Scored, side: str) -> None:
    if len(scored.metas) != 1:
        raise ValueError(f"side {side} has to be one run, got runs {scored.run_ids}: pick one with Scored.run(run_id)")


def _paired_turns(a: Scored, b: Scored) -> pd.DataFrame:
    """The per-turn agreement table of `analysis.diagnostics.agreement` with a pair number `pair`."""
    _single_run(a, "A")
    _single_run(b, "B")
    paired, _ = agreement(a, b)
    return paired.assign(pair=np.arange(len(paired), dtype="int64"))


def _labels(scored: Scored) -> pd.DataFrame:
    """Every `domain-slot` of a run (ontology, gold and prediction), with its domain."""
    names = pd.concat([scored.ontology[["domain", "slot"]], scored.slots[["domain", "slot"]]], ignore_index=True)
    names = names.drop_duplicates().astype("str")
    names["label"] = names["domain"] + "-" + names["slot"]
    return names.drop_duplicates("label").sort_values("label", kind="stable").reset_index(drop=True)


def _filled(scored: Scored, paired: pd.DataFrame, side: str) -> pd.DataFrame:
    """(pair, label, gold value) of every slot filled in gold on a paired turn; the value as a code."""
    slots = scored.slots
    gold = slots.loc[slots["gold_value"].notna(), ["tid", "domain", "slot", "gold_value"]]
    gold = gold.merge(paired[[f"tid_{side}", "pair"]], left_on="tid", right_on=f"tid_{side}")
    label = gold["domain"].astype("str") + "-" + gold["slot"].astype("str")
    return pd.DataFrame(
        {
            "pair": gold["pair"].to_numpy(),
            "label": label.to_numpy(),
            "value": pd.factorize(gold["gold_value"])[0],
        }
    )


def _candidates(filled_a: pd.DataFrame, filled_b: pd.DataFrame) -> pd.DataFrame:
    """Every (slot of A, slot of B) filled together on at least one paired turn, with its scores.

    Counting runs on integer codes: one merge of the two filled tables on the paired turn, then
    `np.unique` over (slot of A, slot of B) and over (slot of A, slot of B, value of A, value of B).
    """
    codes_a, names_a = pd.factorize(filled_a["label"])
    codes_b, names_b = pd.factorize(filled_b["label"])
    support_a = np.bincount(codes_a, minlength=len(names_a))
    support_b = np.bincount(codes_b, minlength=len(names_b))
    left = pd.DataFrame({"pair": filled_a["pair"].to_numpy(), "ca": codes_a, "va": filled_a["value"].to_numpy()})
    right = pd.DataFrame({"pair": filled_b["pair"].to_numpy(), "cb": codes_b, "vb": filled_b["value"].to_numpy()})
    both = left.merge(right, on="pair")
    slot_pair = both["ca"].to_numpy(dtype="int64") * len(names_b) + both["cb"].to_numpy(dtype="int64")
    keys, co = np.unique(slot_pair, return_counts=True)
    # How well one side's value predicts the other's on the turns where both are filled: 1 for a
    # translation (one value, one translation), low for two slots that are merely set together.
    va = both["va"].to_numpy(dtype="int64")
    vb = both["vb"].to_numpy(dtype="int64")
    n_va, n_vb = int(va.max(initial=0)) + 1, int(vb.max(initial=0)) + 1
    triples, n = np.unique((slot_pair * n_va + va) * n_vb + vb, return_counts=True)
    per_value = pd.DataFrame(
        {"slot_pair": triples // (n_va * n_vb), "va": triples // n_vb % n_va, "vb": triples % n_vb, "n": n}
    )
    a_to_b = per_value.groupby(["slot_pair", "va"], sort=False)["n"].max().groupby(level=0).sum()
    b_to_a = per_value.groupby(["slot_pair", "vb"], sort=False)["n"].max().groupby(level=0).sum()
    consistent = np.minimum(a_to_b.reindex(keys).to_numpy(), b_to_a.reindex(keys).to_numpy())
    ca, cb = keys // len(names_b), keys % len(names_b)
    jaccard = co / (support_a[ca] + support_b[cb] - co)
    consistency = consistent / co
    return pd.DataFrame(
        {
            "label_a": np.asarray(names_a, dtype=object)[ca],
            "label_b": np.asarray(names_b, dtype=object)[cb],
            "co": co,
            "jaccard": jaccard.astype("float64"),
            "consistency": consistency.astype("float64"),
            "score": (jaccard * (1.0 + consistency) / 2.0).astype("float64"),
        }
    )


def _greedy(cands: pd.DataFrame, *, min_score: float) -> dict[str, str]:
    """One-to-one assignment, best score first (ties by name, so the result is deterministic)."""
    ranked = cands[cands["score"] >= min_score].sort_values(
        ["score", "label_a", "label_b"], ascending=[False, True, True], kind="stable"
    )
    chosen: dict[str, str] = {}
    taken: set[str] = set()
    # One step per candidate pair of slots (at most |A| x |B|), never per turn.
    for label_a, label_b in zip(ranked["label_a"], ranked["label_b"], strict=True):
        if label_a not in chosen and label_b not in taken:
            chosen[label_a] = label_b
            taken.add(label_b)
    return chosen


def align_ontologies(
    a: Scored,
    b: Scored,
    *,
    overrides: Mapping[str, str] | None = None,
    min_score: float = 0.5,
) -> pd.DataFrame:
    """Align the slots of run A with the slots of run B from their parallel gold states.

    One row per slot of A (`slot_a` as `domain-slot`) with `slot_b` (NaN when unmatched),
    `domain_a`, `domain_b`, `score` (see the module docstring; NaN when neither slot is ever filled),
    `support` (paired turns where `slot_a` is filled in gold), `source` (`override`,
    `identical-name` or `inferred`; an unmatched slot left to inference says `inferred`), the parts of the score (`jaccard`, `consistency`), `support_b`,
    and the best other candidate of B (`alternative_b`, `alternative_score`) so that a user can see
    how clear-cut each pair is. Turns pair on the dialogue id (case-insensitive) and turn index.

    `overrides` maps `slot_a` to `slot_b` and wins over everything; an empty `slot_b` declares the
    slot unmatched. Otherwise a slot whose name exists on both sides pairs with itself; the rest are
    paired one-to-one, best score first, among pairs scoring at least `min_score`.

    >>> from analysis.demo.testing import scored_from_states
    >>> en = scored_from_states([{"hotel": {"area": "east"}}, {"hotel": {"area": "east", "stars": "4"}}],
    ...                         [{}, {}], run_id="en")
    >>> zh = scored_from_states([{"旅馆": {"区域": "东"}}, {"旅馆": {"区域": "东", "星级": "4"}}], [{}, {}], run_id="zh")
    >>> aligned = align_ontologies(en, zh)
    >>> aligned[["slot_a", "slot_b", "score", "support", "source"]].to_dict("records")[1]
    {'slot_a': 'hotel-stars', 'slot_b': '旅馆-星级', 'score': 1.0, 'support': 1, 'source': 'inferred'}
    """
    paired = _paired_turns(a, b)
    labels_a, labels_b = _labels(a), _labels(b)
    filled_a, filled_b = _filled(a, paired, "a"), _filled(b, paired, "b")
    cands = _candidates(filled_a, filled_b)

    overrides = dict(overrides or {})
    identical, inferred = _pair_slots(labels_a, labels_b, cands, overrides, min_score=min_score)
    rows = _alignment_rows(labels_a, labels_b, overrides, identical, inferred)

    support_a = filled_a["label"].value_counts()
    support_b = filled_b["label"].value_counts()
    rows["support"] = rows["slot_a"].map(support_a).fillna(0).astype("int64")
    rows["support_b"] = rows["slot_b"].map(support_b).fillna(0).astype("float64").where(rows["slot_b"].notna())

    rows = _with_alternatives(_with_scores(rows, cands), cands)
    rows = rows.astype({"slot_b": "str", "domain_b": "str", "score": "float64", "jaccard": "float64"})
    rows["consistency"] = rows["consistency"].astype("float64")
    return rows[ALIGNMENT_COLUMNS].sort_values(["domain_a", "slot_a"], kind="stable").reset_index(drop=True)


def _pair_slots(
    labels_a: pd.DataFrame,
    labels_b: pd.DataFrame,
    cands: pd.DataFrame,
    overrides: dict[str, str],
    *,
    min_score: float,
) -> tuple[dict[str, str], dict[str, str]]:
    """The slots of A paired by name (a name on both sides, not overridden or claimed by an override) and
    the rest paired one-to-one by score (`_greedy`)."""
    names_b = set(labels_b["label"])
    claimed = {v for v in overrides.values() if v}
    identical = {
        label: label
        for label in labels_a["label"]
        if label not in overrides and label in names_b and label not in claimed
    }
    fixed_a = set(overrides) | set(identical)
    fixed_b = claimed | set(identical.values())
    free = cands[~cands["label_a"].isin(fixed_a) & ~cands["label_b"].isin(fixed_b)]
    inferred = _greedy(free, min_score=min_score)
    return identical, inferred


def _alignment_rows(
    labels_a: pd.DataFrame,
    labels_b: pd.DataFrame,
    overrides: dict[str, str],
    identical: dict[str, str],
    inferred: dict[str, str],
) -> pd.DataFrame:
    """One row per slot of A (and per overridden slot A lacks): its domain, its slot of B, the source of
    the pair and the domain of that slot."""
    extra = [k for k in overrides if k not in set(labels_a["label"])]
    rows = pd.DataFrame({"slot_a": [*labels_a["label"], *extra]})
    domain_of_a = dict(zip(labels_a["label"], labels_a["domain"], strict=True))
    rows["domain_a"] = [domain_of_a.get(s, s.partition("-")[0]) for s in rows["slot_a"]]
    matched = {**inferred, **identical, **{k: v for k, v in overrides.items() if v}}
    rows["slot_b"] = rows["slot_a"].map(matched)
    source = np.where(rows["slot_a"].isin(list(overrides)), "override", "")
    source = np.where(
        source == "", np.where(rows["slot_a"].isin(list(identical)), "identical-name", "inferred"), source
    )
    rows["source"] = source

    domain_of_b = dict(zip(labels_b["label"], labels_b["domain"], strict=True))
    rows["domain_b"] = rows["slot_b"].map(
        lambda s: domain_of_b.get(s, s.partition("-")[0]) if isinstance(s, str) else s
    )
    return rows


def _with_scores(rows: pd.DataFrame, cands: pd.DataFrame) -> pd.DataFrame:
    """Each pair's score and its parts (`jaccard`, `consistency`)."""
    rows = rows.merge(
        cands[["label_a", "label_b", "jaccard", "consistency", "score"]],
        left_on=["slot_a", "slot_b"],
        right_on=["label_a", "label_b"],
        how="left",
    ).drop(columns=["label_a", "label_b"])
    # A pair never filled together scores 0 when both slots are filled somewhere, NaN when one never is.
    never = rows["slot_b"].notna() & rows["score"].isna() & (rows["support"] > 0) & (rows["support_b"] > 0)
    rows.loc[never, ["jaccard", "score"]] = 0.0
    return rows


def _with_alternatives(rows: pd.DataFrame, cands: pd.DataFrame) -> pd.DataFrame:
    """Each slot's best other candidate of B and its score, to see how clear-cut its pair is."""
    others = cands.merge(rows[["slot_a", "slot_b"]], left_on="label_a", right_on="slot_a")
    others = others[others["label_b"] != others["slot_b"]]
    best = others.sort_values(["score", "label_b"], ascending=[False, True], kind="stable").drop_duplicates("label_a")
    best = best.set_index("label_a")
    rows["alternative_b"] = rows["slot_a"].map(best["label_b"])
    rows["alternative_score"] = rows["slot_a"].map(best["score"]).astype("float64")
    return rows


def align_domains(slot_alignment: pd.DataFrame) -> pd.DataFrame:
    """Domain of B for each domain of A: the one most of its matched slots map to (ties by name).

    Columns `domain_a`, `domain_b` (NaN when no slot of the domain is matched), `n_slots` (matched
    slots behind the pair) and `n_slots_a` (slots of the domain in A).

    >>> alignment = pd.DataFrame({"slot_a": ["hotel-area", "hotel-stars", "taxi-leaveAt"],
    ...                           "slot_b": ["旅馆-区域", "旅馆-星级", None],
    ...                           "domain_a": ["hotel", "hotel", "taxi"], "domain_b": ["旅馆", "旅馆", None]})
    >>> align_domains(alignment)
      domain_a domain_b  n_slots  n_slots_a
    0    hotel       旅馆        2          2
    1     taxi      NaN        0          1
    """
    n_slots_a = slot_alignment.groupby("domain_a", sort=True).size().rename("n_slots_a")
    matched = slot_alignment[slot_alignment["slot_b"].notna()]
    pairs = matched.groupby(["domain_a", "domain_b"], sort=True).size().rename("n_slots").reset_index()
    pairs = pairs.sort_values(["domain_a", "n_slots", "domain_b"], ascending=[True, False, True], kind="stable")
    pairs = pairs.drop_duplicates("domain_a")
    out = n_slots_a.reset_index().merge(pairs, on="domain_a", how="left")
    out["n_slots"] = out["n_slots"].fillna(0).astype("int64")
    out = out.astype({"domain_a": "str", "domain_b": "str"})
    return out[["domain_a", "domain_b", "n_slots", "n_slots_a"]]


def _slot_accuracy(scored: Scored, tids: pd.Series, labels: pd.Series) -> pd.DataFrame:
    """Per slot label: share of paired turns where the slot occurs (gold or prediction) and is correct."""
    slots = scored.slots[scored.slots["tid"].isin(tids)]
    label = slots["domain"].astype("str") + "-" + slots["slot"].astype("str")
    keep = label.isin(labels).to_numpy()
    frame = pd.DataFrame(
        {"label": label[keep].to_numpy(), "ok": (slots["outcome"] == Outcome.CORRECT.key).to_numpy()[keep]}
    )
    return frame.groupby("label", sort=False)["ok"].agg(acc="mean", n_turns="size")


def _domain_accuracy(scored: Scored, tids: pd.Series) -> pd.DataFrame:
    """Per domain: share of paired turns where the domain occurs and all its slots are correct."""
    facts = turn_facts(scored, by="domain")
    facts = facts[facts["tid"].isin(tids)]
    return facts.groupby("domain", sort=False)["joint_correct"].agg(acc="mean", n_turns="size")


def crosslingual_gaps(a: Scored, b: Scored, alignment: pd.DataFrame, *, by: str, support: bool = False) -> pd.DataFrame:
    """Accuracy on each side and the gap `acc_a - acc_b` per aligned slot, aligned domain or turn depth.

    Only paired turns count, and correctness is judged within each side. `by="turn_index"`: JGA of
    each side per turn index (the same turns on both sides). `by="slot"`: per aligned slot pair,
    on each side the turns where that side's slot occurs in gold or prediction, correct when its
    value is. `by="domain"`: per aligned domain pair (`align_domains`), the turns where the domain
    occurs, correct when all its slots are (as `analysis.metrics` groups by domain). Columns: the
    group (`turn_index`, or `slot_a`/`slot_b`/`domain_a`/`domain_b`), `acc_a`, `n_turns_a`, `acc_b`,
    `n_turns_b`, `gap`; an accuracy over no turns is NaN. With `support`, also the gap's 95% paired
    dialogue-bootstrap interval and support (`analysis.gap_support`: `low`, `high`, `n_dialogues`,
    `n_dialogues_differ`, `n_turns_differ`, `tested`; no interval for a gap too thin to test).

    >>> from analysis.demo.testing import scored_from_states
    >>> en = scored_from_states([{"hotel": {"area": "east"}}, {"hotel": {"area": "east"}}],
    ...                         [{"hotel": {"area": "east"}}, {"hotel": {"area": "west"}}], run_id="en")
    >>> zh = scored_from_states([{"旅馆": {"区域": "东"}}, {"旅馆": {"区域": "东"}}],
    ...                         [{"旅馆": {"区域": "东"}}, {"旅馆": {"区域": "东"}}], run_id="zh")
    >>> crosslingual_gaps(en, zh, align_ontologies(en, zh), by="turn_index")
       turn_index  acc_a  n_turns_a  acc_b  n_turns_b  gap
    0           0    1.0          1    1.0          1  0.0
    1           1    0.0          1    1.0          1 -1.0
    """
    if by not in GAP_BY:
        raise ValueError(f"by has to be one of {', '.join(repr(v) for v in GAP_BY)}, got {by!r}")
    paired = _paired_turns(a, b)
    if by == "turn_index":
        out = (
            paired.groupby("turn_index", sort=True)
            .agg(
                acc_a=("joint_correct_a", "mean"),
                n_turns_a=("tid_a", "size"),
                acc_b=("joint_correct_b", "mean"),
                n_turns_b=("tid_b", "size"),
            )
            .reset_index()
        )
        out[["acc_a", "acc_b"]] = out[["acc_a", "acc_b"]].astype("float64")
    elif by == "slot":
        pairs = alignment.loc[alignment["slot_b"].notna(), ["slot_a", "slot_b", "domain_a", "domain_b"]]
        side_a = _slot_accuracy(a, paired["tid_a"], pairs["slot_a"])
        side_b = _slot_accuracy(b, paired["tid_b"], pairs["slot_b"])
        out = pairs.merge(side_a, left_on="slot_a", right_index=True, how="left")
        out = out.merge(side_b, left_on="slot_b", right_index=True, how="left", suffixes=("_a", "_b"))
    else:
        pairs = align_domains(alignment)
        pairs = pairs.loc[pairs["domain_b"].notna(), ["domain_a", "domain_b"]]
        side_a = _domain_accuracy(a, paired["tid_a"])
        side_b = _domain_accuracy(b, paired["tid_b"])
        out = pairs.merge(side_a, left_on="domain_a", right_index=True, how="left")
        out = out.merge(side_b, left_on="domain_b", right_index=True, how="left", suffixes=("_a", "_b"))
    out = out.astype({"acc_a": "float64", "acc_b": "float64"})
    out[["n_turns_a", "n_turns_b"]] = out[["n_turns_a", "n_turns_b"]].fillna(0).astype("int64")
    out["gap"] = out["acc_a"] - out["acc_b"]
    out = out.reset_index(drop=True)
    if not support:
        return out
    group = "turn_index" if by == "turn_index" else f"{by}_a"
    names = dict(zip(out[f"{by}_b"], out[group], strict=True)) if by != "turn_index" else None
    rows_a = _gap_rows(a, paired, "a", by, None)
    rows_b = _gap_rows(b, paired, "b", by, names)
    counted = gap_support(rows_a, rows_b, pd.Index(out[group]))
    out = pd.concat([out, counted], axis=1)
    out.attrs["min_support"] = MIN_SUPPORT
    return out


def _gap_rows(scored: Scored, paired: pd.DataFrame, side: str, by: str, names: dict | None) -> pd.DataFrame:
    """One side's (group, dialogue, pair, ok) rows behind `crosslingual_gaps` (`gap_support`'s input); a
    B-side slot or domain is named by its A-side partner (`names`)."""
    pairs = paired[[f"tid_{side}", "pair", "dialogue_id", "turn_index", f"joint_correct_{side}"]]
    dialogue = dialogue_key(pairs["dialogue_id"])
    if by == "turn_index":
        return pd.DataFrame(
            {
                "group": pairs["turn_index"],
                "dialogue": dialogue,
                "pair": pairs["pair"],
                "ok": pairs[f"joint_correct_{side}"],
            }
        )
    if by == "slot":
        slots = scored.slots[["tid", "domain", "slot", "outcome"]]
        rows = pd.DataFrame(
            {
                "tid": slots["tid"].to_numpy(),
                "group": (slots["domain"].astype("str") + "-" + slots["slot"].astype("str")).to_numpy(),
                "ok": (slots["outcome"] == Outcome.CORRECT.key).to_numpy(),
            }
        )
    else:
        facts = turn_facts(scored, by="domain")
        rows = pd.DataFrame(
            {
                "tid": facts["tid"].to_numpy(),
                "group": facts["domain"].astype("str").to_numpy(),
                "ok": facts["joint_correct"].to_numpy(),
            }
        )
    on_pairs = pd.DataFrame(
        {"tid": pairs[f"tid_{side}"].to_numpy(), "pair": pairs["pair"].to_numpy(), "dialogue": dialogue.to_numpy()}
    )
    rows = rows.merge(on_pairs, on="tid")
    if names is not None:
        rows["group"] = rows["group"].map(names)
        rows = rows[rows["group"].notna()]
    return rows[["group", "dialogue", "pair", "ok"]]


def _error_text(scored: Scored, tids: pd.Series) -> pd.DataFrame:
    """Per turn: its errors as `domain-slot: gold → predicted` joined by `; `, and their number."""
    slots = scored.slots
    errors = slots[slots["tid"].isin(tids) & (slots["outcome"] != Outcome.CORRECT.key)]
    gold = errors["gold_display"].astype("str").fillna(ABSENT)
    pred = errors["pred_display"].astype("str").fillna(ABSENT)
    text = errors["domain"].astype("str") + "-" + errors["slot"].astype("str") + ": " + gold + " → " + pred
    frame = pd.DataFrame({"tid": errors["tid"].to_numpy(), "text": text.to_numpy()})
    return frame.groupby("tid", sort=False)["text"].agg(errors="; ".join, n_errors="size")


def _wrong_turns(scored: Scored, label: str) -> pd.Series:
    """The tids where the slot `label` occurs and is not correct."""
    slots = scored.slots
    label_of = slots["domain"].astype("str") + "-" + slots["slot"].astype("str")
    return slots.loc[(label_of == label) & (slots["outcome"] != Outcome.CORRECT.key), "tid"]


def drill_down(
    a: Scored,
    b: Scored,
    cell: str,
    *,
    alignment: pd.DataFrame | None = None,
    slot_a: str | None = None,
) -> pd.DataFrame:
    """The paired turns of one agreement cell, ready for a table linking to the dialogue viewer.

    `cell` is one of `both_correct`, `only_a`, `only_b`, `both_wrong` (A correct and B wrong is
    `only_a`). With `slot_a`, only turns where that slot of A or its aligned slot of B (from
    `alignment`, inferred when not given) is wrong on its side. Columns: `dialogue_id` (as in A),
    `turn_index`, `user_a`, `user_b`, `tid_a`, `tid_b`, `agreement`, `errors_a`/`errors_b` (each
    side's wrong slots as `domain-slot: gold → predicted`, `∅` for absent, values as written in the
    files; empty when the side is correct) and `n_errors_a`/`n_errors_b`.

    >>> from analysis.demo.testing import scored_from_states
    >>> en = scored_from_states([{"hotel": {"area": "east"}}], [{"hotel": {"area": "west"}}], run_id="en")
    >>> zh = scored_from_states([{"旅馆": {"区域": "东"}}], [{"旅馆": {"区域": "东"}}], run_id="zh")
    >>> drill_down(en, zh, "only_b")[["dialogue_id", "turn_index", "errors_a", "errors_b"]].to_dict("records")
    [{'dialogue_id': 'd1', 'turn_index': 0, 'errors_a': 'hotel-area: east → west', 'errors_b': ''}]
    """
    if cell not in AGREEMENT:
        raise ValueError(f"cell has to be one of {', '.join(repr(c) for c in AGREEMENT)}, got {cell!r}")
    paired = _paired_turns(a, b)
    paired = paired[paired["agreement"] == cell]
    if slot_a is not None:
        table = alignment if alignment is not None else align_ontologies(a, b)
        row = table[table["slot_a"] == slot_a]
        if row.empty:
            raise ValueError(f"slot_a {slot_a!r} is not a slot of A: the alignment has {sorted(table['slot_a'])}")
        wrong = paired["tid_a"].isin(_wrong_turns(a, slot_a))
        slot_b = row["slot_b"].iloc[0]
        if isinstance(slot_b, str):
            wrong = wrong | paired["tid_b"].isin(_wrong_turns(b, slot_b))
        paired = paired[wrong]
    out = paired[["dialogue_id", "turn_index", "tid_a", "tid_b", "agreement"]]
    out = out.merge(a.turns[["tid", "user"]].rename(columns={"tid": "tid_a", "user": "user_a"}), on="tid_a", how="left")
    out = out.merge(b.turns[["tid", "user"]].rename(columns={"tid": "tid_b", "user": "user_b"}), on="tid_b", how="left")
    for side, scored in (("a", a), ("b", b)):
        errors = _error_text(scored, out[f"tid_{side}"]).add_suffix(f"_{side}")
        out = out.merge(errors, left_on=f"tid_{side}", right_index=True, how="left")
        out[f"errors_{side}"] = out[f"errors_{side}"].fillna("").astype("str")
        out[f"n_errors_{side}"] = out[f"n_errors_{side}"].fillna(0).astype("int64")
    columns = ["dialogue_id", "turn_index", "user_a", "user_b", "tid_a", "tid_b", "agreement"]
    columns += ["errors_a", "errors_b", "n_errors_a", "n_errors_b"]
    return out[columns].sort_values(["dialogue_id", "turn_index"], kind="stable").reset_index(drop=True)


def mapping_from_manifest(workspace_mappings: list[dict[str, Any]], run_a: str, run_b: str) -> dict[str, str]:
    """The slot overrides for the pair (run_a, run_b) from a manifest's `[[mappings]]` entries.

    An entry `a = run_b, b = run_a` is read in reverse. Later entries win. An empty target (declaring
    a slot unmatched) only applies in the direction it was written.

    >>> mapping_from_manifest([{"a": "zh", "b": "en", "slots": {"餐厅-区域": "restaurant-area"}}], "en", "zh")
    {'restaurant-area': '餐厅-区域'}
    """
    mapping: dict[str, str] = {}
    for number, entry in enumerate(workspace_mappings, start=1):
        slots = entry.get("slots", {})
        valid = isinstance(slots, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in slots.items())
        if not valid or not isinstance(entry.get("a"), str) or not isinstance(entry.get("b"), str):
            raise InputError(
                "workspace manifest",
                "workspace",
                f"[[mappings]] entry {number} needs a = run id, b = run id and slots = "
                '{ "slot of a" = "slot of b" } with string values, got ' + repr(dict(entry)),
                field="mappings",
            )
        if (entry["a"], entry["b"]) == (run_a, run_b):
            mapping.update(slots)
        elif (entry["a"], entry["b"]) == (run_b, run_a):
            mapping.update({v: k for k, v in slots.items() if v})
    return mapping


# --- N languages: one run per language over the same dialogues, against a pivot ---------------------------

LANGUAGE_BY = ("domain", "slot")
LANGUAGE_METRICS = ("jga", "slot_f1")
# `language_matrix` columns: the run and its row label, the pivot's name of the group (`key`) and the run's
# own (`own`), both metrics with what they count, and each metric minus the pivot's on the same group.
LANGUAGE_COLUMNS = [
    "run_id",
    "language",
    "key",
    "domain",
    "own",
    "source",
    "jga",
    "n_turns",
    "slot_f1",
    "support",
    "jga_gap",
    "slot_f1_gap",
]


def _dialogue_key_set(scored: Scored) -> set[str]:
    return set(dialogue_key(scored.turns["dialogue_id"]).unique())


def same_dialogues(scoreds: Sequence[Scored], *, min_share: float = 0.5) -> list[list[str]]:
    """Runs grouped as "the same dialogues": a run joins the first group whose first run shares more than
    `min_share` of the dialogue ids of the smaller of the two (ids compared as the pairing does, through
    `analysis.model.dialogue_key`: case-insensitive, `.json` ignored); else it starts a group.
    Groups and their runs keep the input order.

    >>> from analysis.demo.testing import scored_from_states
    >>> en = scored_from_states([{"hotel": {"area": "east"}}], [{}], run_id="en")
    >>> zh = scored_from_states([{"旅馆": {"区域": "东"}}], [{}], run_id="zh")
    >>> same_dialogues([en, zh])
    [['en', 'zh']]
    """
    groups: list[tuple[set[str], list[str]]] = []
    for scored in scoreds:
        _single_run(scored, scored.run_ids[0] if scored.run_ids else "?")
        keys = _dialogue_key_set(scored)
        for first, members in groups:
            shared = len(first & keys)
            if keys and first and shared > min_share * min(len(first), len(keys)):
                members.append(scored.run_ids[0])
                break
        else:
            groups.append((keys, [scored.run_ids[0]]))
    return [members for _, members in groups]


def language_of(scored: Scored) -> str:
    """A run's language as declared (`language` in the manifest), else its run id."""
    language = scored.metas[0].language
    return str(language) if language else scored.run_ids[0]


def language_runs(scoreds: Sequence[Scored], *, anchor: str, min_share: float = 0.5) -> dict[str, Any]:
    """The runs to set side by side with run `anchor`: `group`, every run over the same dialogues
    (`same_dialogues`); `chosen`, one run per language of the group, the first run with the anchor's
    system and history where there is one, else the first of that language (the anchor for its own);
    `pivot`, the first chosen run in English (`en`), else the first chosen; `languages`, each run's
    language (`language_of`)."""
    by_id = {s.run_ids[0]: s for s in scoreds}
    if anchor not in by_id:
        raise ValueError(f"anchor {anchor!r} is not one of the runs {sorted(by_id)}")
    group = next(g for g in same_dialogues(scoreds, min_share=min_share) if anchor in g)
    meta = by_id[anchor].metas[0]
    languages = {run: language_of(by_id[run]) for run in group}
    chosen: dict[str, str] = {languages[anchor]: anchor}
    for run in group:
        other = by_id[run].metas[0]
        same_system = (other.system, other.history) == (meta.system, meta.history)
        current = chosen.get(languages[run])
        if current is None:
            chosen[languages[run]] = run
        elif current != anchor and same_system:
            held = by_id[current].metas[0]
            if (held.system, held.history) != (meta.system, meta.history):
                chosen[languages[run]] = run
    ordered = [run for run in group if run in set(chosen.values())]
    pivot = next((run for run in ordered if languages[run].lower() == "en"), ordered[0])
    return {"group": group, "chosen": ordered, "pivot": pivot, "languages": languages}


def _common_tids(scoreds: Sequence[Scored]) -> list[pd.Series]:
    """Per run, the tids of the turns every run has (dialogue key and turn index, as the pairing)."""
    keyed = [s.turns[["tid", "turn_index"]].assign(_key=dialogue_key(s.turns["dialogue_id"])) for s in scoreds]
    common = keyed[0][["_key", "turn_index"]]
    for frame in keyed[1:]:
        common = common.merge(frame[["_key", "turn_index"]].drop_duplicates(), on=["_key", "turn_index"])
    return [frame.merge(common, on=["_key", "turn_index"])["tid"] for frame in keyed]


def _restricted(scored: Scored, tids: pd.Series) -> Scored:
    """`scored` over the turns `tids` only (itself when those are all its turns, keeping its memo)."""
    if len(tids) == len(scored.turns):
        return scored
    keep = scored.turns["tid"].isin(tids)
    return Scored(
        scored.convention,
        scored.metas,
        scored.turns[keep],
        scored.slots[scored.slots["tid"].isin(tids)],
        scored.ontology,
        scored.alignment,
    )


def _group_metrics(scored: Scored, by: str) -> pd.DataFrame:
    """Per domain (`by="domain"`) or domain-slot (`by="slot"`, as `label`): JGA over the turns where the
    group occurs in gold or prediction (`analysis.metrics.joint_goal_accuracy`), its `n_turns`, micro slot
    F1 (`analysis.metrics.slot_prf_micro`) and its gold `support`."""
    keys = ["domain"] if by == "domain" else ["domain", "slot"]
    jga = M.joint_goal_accuracy(scored, by=keys)
    prf = M.slot_prf_micro(scored, by=keys)
    assert isinstance(jga, pd.DataFrame) and isinstance(prf, pd.DataFrame)
    out = jga.merge(prf[[*keys, "f1", "support"]], on=keys, how="outer").rename(columns={"f1": "slot_f1"})
    out["domain"] = out["domain"].astype("str")
    if by == "slot":
        out["label"] = out["domain"] + "-" + out["slot"].astype("str")
    else:
        out["label"] = out["domain"]
    return out[["label", "domain", "jga", "n_turns", "slot_f1", "support"]]


def align_to_pivot(
    scoreds: Sequence[Scored],
    *,
    pivot: str,
    overrides: Mapping[str, Mapping[str, str]] | None = None,
    min_score: float = 0.5,
) -> dict[str, pd.DataFrame]:
    """Each run's `align_ontologies(pivot, run)` (the pivot is side A), with the manifest overrides of that
    pair (`overrides[run]`, e.g. from `mapping_from_manifest(mappings, pivot, run)`); the pivot maps onto
    itself by name."""
    by_id = {s.run_ids[0]: s for s in scoreds}
    if pivot not in by_id:
        raise ValueError(f"pivot {pivot!r} is not one of the runs {sorted(by_id)}")
    overrides = overrides or {}
    return {
        run: _self_alignment(scored)
        if run == pivot and not overrides.get(run)
        else align_ontologies(by_id[pivot], scored, overrides=dict(overrides.get(run, {})) or None, min_score=min_score)
        for run, scored in by_id.items()
    }


def _self_alignment(scored: Scored) -> pd.DataFrame:
    """`align_ontologies(scored, scored)` without the inference it does not need: every slot pairs with itself
    by name (score 1)."""
    labels = _labels(scored)
    slots = scored.slots
    gold = slots.loc[slots["gold_value"].notna()]
    support = (gold["domain"].astype("str") + "-" + gold["slot"].astype("str")).value_counts()
    n = labels["label"].map(support).fillna(0).astype("int64")
    out = pd.DataFrame(
        {
            "slot_a": labels["label"],
            "slot_b": labels["label"],
            "domain_a": labels["domain"],
            "domain_b": labels["domain"],
            "score": 1.0,
            "support": n,
            "source": "identical-name",
            "jaccard": 1.0,
            "consistency": 1.0,
            "support_b": n.astype("float64"),
            "alternative_b": np.nan,
            "alternative_score": np.nan,
        }
    )
    return out[ALIGNMENT_COLUMNS].sort_values(["domain_a", "slot_a"], kind="stable").reset_index(drop=True)


def _values_by_run(scoreds: Sequence[Scored], by: str) -> dict[str, pd.DataFrame]:
    """Each run's `_group_metrics` over the turns every run has."""
    return {
        scored.run_ids[0]: _group_metrics(_restricted(scored, tids), by)
        for scored, tids in zip(scoreds, _common_tids(scoreds), strict=True)
    }


def language_matrix(
    scoreds: Sequence[Scored],
    *,
    pivot: str,
    by: str,
    alignments: Mapping[str, pd.DataFrame] | None = None,
    overrides: Mapping[str, Mapping[str, str]] | None = None,
    values: Mapping[str, pd.DataFrame] | None = None,
) -> pd.DataFrame:
    """A language × domain (`by="domain"`) or language × slot (`by="slot"`) table of JGA and slot F1, in
    the pivot's names, with each run's gap to the pivot run.

    One run per language over the same dialogues. Only the turns every run has count (dialogue key and
    turn index), and each metric is judged within its run (values differ across languages), exactly as
    `analysis.metrics` computes it on those turns: per domain or domain-slot, `jga` is the share of the
    turns where the group occurs in gold or prediction and is correct (`n_turns` of them) and `slot_f1` the
    micro F1 of its triples (`support` gold triples). A run's slots are renamed to the pivot's through
    `align_to_pivot` (`alignments`, computed with `overrides` when not given); its domains through
    `align_domains`. Long format, one row per run and pivot group, columns `LANGUAGE_COLUMNS`: `key` (the
    pivot's name), `domain` (the pivot's domain), `own` (the run's name, NaN when nothing aligns),
    `source` (how the pair was found), and `jga_gap`/`slot_f1_gap` = the run's value − the pivot's
    (negative: below the pivot). A pivot group with no counterpart in a run is NaN there; a run's groups
    with no counterpart in the pivot are listed by `unaligned_groups`. `values`: the runs' metrics per group on
    those turns when already computed (`language_summary` shares them).

    >>> from analysis.demo.testing import scored_from_states
    >>> en = scored_from_states([{"hotel": {"area": "east"}}, {"hotel": {"area": "east"}}],
    ...                         [{"hotel": {"area": "east"}}, {"hotel": {"area": "west"}}], run_id="en")
    >>> zh = scored_from_states([{"旅馆": {"区域": "东"}}, {"旅馆": {"区域": "东"}}],
    ...                         [{"旅馆": {"区域": "东"}}, {"旅馆": {"区域": "东"}}], run_id="zh")
    >>> table = language_matrix([en, zh], pivot="en", by="slot")
    >>> table[["run_id", "key", "own", "jga", "jga_gap"]].to_dict("records")[1]
    {'run_id': 'zh', 'key': 'hotel-area', 'own': '旅馆-区域', 'jga': 1.0, 'jga_gap': 0.5}
    """
    if by not in LANGUAGE_BY:
        raise ValueError(f"by has to be one of {', '.join(repr(v) for v in LANGUAGE_BY)}, got {by!r}")
    for scored in scoreds:
        _single_run(scored, scored.run_ids[0] if scored.run_ids else "?")
    if pivot not in {s.run_ids[0] for s in scoreds}:
        raise ValueError(f"pivot {pivot!r} is not one of the runs {sorted(s.run_ids[0] for s in scoreds)}")
    alignments = alignments if alignments is not None else align_to_pivot(scoreds, pivot=pivot, overrides=overrides)
    values = values if values is not None else _values_by_run(scoreds, by)
    frames = []
    for scored in scoreds:
        run = scored.run_ids[0]
        alignment = alignments[run]
        if by == "slot":
            pairs = alignment[["slot_a", "domain_a", "slot_b", "source"]]
            pairs = pairs.set_axis(["key", "domain", "own", "source"], axis=1)
        else:
            pairs = align_domains(alignment)[["domain_a", "domain_b"]].set_axis(["key", "own"], axis=1)
            pairs = pairs.assign(domain=pairs["key"], source=np.where(pairs["own"].notna(), "slots", ""))
        pairs = pairs.assign(own=pairs["own"].where(pairs["own"].notna() & (pairs["own"] != "nan")))
        merged = pairs.merge(values[run].drop(columns="domain"), left_on="own", right_on="label", how="left")
        frame = merged.drop(columns="label").assign(run_id=run, language=language_of(scored))
        frames.append(frame)
    out = pd.concat(frames, ignore_index=True)
    out["n_turns"] = out["n_turns"].fillna(0).astype("int64")
    out["support"] = out["support"].fillna(0).astype("int64")
    out[["jga", "slot_f1"]] = out[["jga", "slot_f1"]].astype("float64")
    # Rows of the pivot's groups that no run ever fills or predicts carry no number anywhere: drop them.
    seen = out.groupby("key", sort=False)["n_turns"].transform("max") > 0
    out = out[seen | (out.groupby("key", sort=False)["support"].transform("max") > 0)]
    base = out[out["run_id"] == pivot].set_index("key")
    for metric in LANGUAGE_METRICS:
        out[f"{metric}_gap"] = out[metric] - out["key"].map(base[metric]).astype("float64")
    order = {run: i for i, run in enumerate(s.run_ids[0] for s in scoreds)}
    out = out.assign(_order=out["run_id"].map(order)).sort_values(["_order", "domain", "key"], kind="stable")
    return out[LANGUAGE_COLUMNS].reset_index(drop=True)


def unaligned_groups(
    scoreds: Sequence[Scored],
    *,
    pivot: str,
    by: str,
    alignments: Mapping[str, pd.DataFrame],
    values: Mapping[str, pd.DataFrame] | None = None,
) -> pd.DataFrame:
    """The domains or slots of each run (other than the pivot) that occur on the common turns but have no
    counterpart in the pivot, so that `language_matrix` leaves them out visibly: columns `run_id`, `own`,
    `n_turns`, `support`. `values` as for `language_matrix`."""
    values = values if values is not None else _values_by_run(scoreds, by)
    rows = []
    for scored in scoreds:
        run = scored.run_ids[0]
        if run == pivot:
            continue
        alignment = alignments[run]
        matched = (
            set(alignment["slot_b"].dropna()) if by == "slot" else set(align_domains(alignment)["domain_b"].dropna())
        )
        left = values[run][~values[run]["label"].isin(matched)]
        rows.append(
            pd.DataFrame({"run_id": run, "own": left["label"], "n_turns": left["n_turns"], "support": left["support"]})
        )
    columns = ["run_id", "own", "n_turns", "support"]
    if not rows:
        return pd.DataFrame(columns=columns)
    out = pd.concat(rows, ignore_index=True)
    out[["n_turns", "support"]] = out[["n_turns", "support"]].fillna(0).astype("int64")
    return out[columns]


def language_summary(
    scoreds: Sequence[Scored],
    *,
    pivot: str,
    overrides: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (),
) -> dict[str, Any]:
    """Everything the Cross-lingual page shows for N runs against a pivot: `matrix` by domain and by slot
    (`language_matrix`), `unaligned` groups by domain and by slot, and `turns`: the turns every run has
    (`common`) and each run's total (`per_run`). `overrides`: per run, the manifest's slot mapping from the
    pivot to it, as hashable tuples (the page's cache key)."""
    by_run = {run: dict(pairs) for run, pairs in overrides}
    alignments = align_to_pivot(scoreds, pivot=pivot, overrides=by_run)
    tids = _common_tids(scoreds)
    restricted = [_restricted(s, t) for s, t in zip(scoreds, tids, strict=True)]
    values = {by: {s.run_ids[0]: _group_metrics(s, by) for s in restricted} for by in LANGUAGE_BY}
    kwargs: dict[str, Any] = {"pivot": pivot, "alignments": alignments}
    return {
        "matrix": {by: language_matrix(scoreds, by=by, values=values[by], **kwargs) for by in LANGUAGE_BY},
        "unaligned": {by: unaligned_groups(scoreds, by=by, values=values[by], **kwargs) for by in LANGUAGE_BY},
        "turns": {
            "common": len(tids[0]) if tids else 0,
            "per_run": {s.run_ids[0]: len(s.turns) for s in scoreds},
        },
    }
