"""The headline DST metrics written the plain way, for the speed comparison only.

Each metric is its own per-turn Python loop over sets and dicts, the way the benchmark descriptions'
scoring recipes (`../shared/seeds/`) and most DST scorers are written; states are normalised value by
value as they are read. It follows the convention's own per-value rules, so both implementations must
agree to the last digit (the benchmark checks).
"""

from __future__ import annotations

from collections import defaultdict

from analysis.conventions import Convention, _canonical
from analysis.model import Run
from analysis.scoring import Scored

Key = tuple[str, int]
State = dict[tuple[str, str], str]


def read_states(run: Run, conv: Convention) -> tuple[list[Key], dict[Key, State], dict[Key, State], dict[Key, State]]:
    gold: dict[Key, State] = defaultdict(dict)
    alts: dict[Key, State] = defaultdict(dict)
    pred: dict[Key, State] = defaultdict(dict)
    for side, table, target in (("gold", run.gold, gold), ("pred", run.pred, pred)):
        for d, t, dom, slot, value in zip(
            table["dialogue_id"], table["turn_index"], table["domain"], table["slot"], table["value"], strict=True
        ):
            norm, alternatives = _canonical(value, conv, side)
            if _dropped(norm, conv, side):
                continue
            key = _name(dom, slot, conv)
            target[(d, t)][key] = norm
            if alternatives is not None:
                alts[(d, t)][key] = alternatives
    turns = list(zip(run.turns["dialogue_id"], run.turns["turn_index"], strict=True))
    return turns, gold, alts, pred


def _dropped(value: str, conv: Convention, side: str) -> bool:
    marker = value.strip().lower()
    drop_dontcare = conv.dontcare == "drop_both" or (conv.dontcare == "drop_gold" and side == "gold")
    return marker in conv.empty_values or (drop_dontcare and marker in conv.dontcare_values)


def _name(domain: str, slot: str, conv: Convention) -> tuple[str, str]:
    if conv.lower_names:
        domain, slot = domain.lower(), slot.lower()
    return domain, conv.slot_aliases.get(slot, slot)


def _match(g: State, p: State, a: State, k: tuple[str, str]) -> bool:
    return k in p and (p[k] == g[k] or (k in a and (p[k] == a[k] or p[k] in a[k].split("|"))))


def joint_goal_accuracy(turns, gold, alts, pred) -> float:
    correct = 0
    for key in turns:
        g, p, a = gold.get(key, {}), pred.get(key, {}), alts.get(key, {})
        correct += set(g) == set(p) and all(_match(g, p, a, k) for k in g)
    return correct / len(turns)


def slot_f1_seed(turns, gold, alts, pred) -> float:
    total = 0.0
    for key in turns:
        g, p, a = gold.get(key, {}), pred.get(key, {}), alts.get(key, {})
        resolved = {k: (g[k] if k in g and _match(g, p, a, k) else v) for k, v in p.items()}
        names = {s for _, s in g}
        f1s = []
        for name in names:
            gv = {v for (_, s), v in g.items() if s == name}
            pv = {v for (_, s), v in resolved.items() if s == name}
            tp = len(gv & pv)
            prec = tp / len(pv) if pv else 0
            rec = tp / len(gv) if gv else 0
            f1s.append(2 * prec * rec / (prec + rec) if prec + rec else 0)
        total += sum(f1s) / len(f1s) if f1s else 0
    return total / len(turns)


def slot_f1_domain_slot(turns, gold, alts, pred) -> float:
    total = 0.0
    for key in turns:
        g, p, a = gold.get(key, {}), pred.get(key, {}), alts.get(key, {})
        total += sum(_match(g, p, a, k) for k in g) / len(g) if g else 0
    return total / len(turns)


def slot_f1_micro(turns, gold, alts, pred) -> float:
    tp = fp = fn = 0
    for key in turns:
        g, p, a = gold.get(key, {}), pred.get(key, {}), alts.get(key, {})
        hits = sum(_match(g, p, a, k) for k in g)
        tp += hits
        fp += len(p) - hits
        fn += len(g) - hits
    return 2 * tp / (2 * tp + fp + fn)


def joint_f1_trade(turns, gold, alts, pred) -> float:
    total = 0.0
    for key in turns:
        g, p, a = gold.get(key, {}), pred.get(key, {}), alts.get(key, {})
        if not g:
            total += 1.0 if not p else 0.0
            continue
        tp = sum(_match(g, p, a, k) for k in g)
        precision = tp / len(p) if p else 0
        recall = tp / len(g)
        total += 2 * precision * recall / (precision + recall) if precision + recall else 0
    return total / len(turns)


def slot_accuracy(turns, gold, alts, pred, ontology, listed) -> float:
    cells = errors = 0
    for key in turns:
        g, p, a = gold.get(key, {}), pred.get(key, {}), alts.get(key, {})
        cells += listed.get(key) or len(ontology)
        for slot in set(g) | set(p):
            if slot in ontology and not (slot in g and _match(g, p, a, slot)):
                errors += 1
    return 1 - errors / cells


def average_goal_accuracy(turns, gold, alts, pred) -> float:
    total, n = 0.0, 0
    for key in turns:
        g, p, a = gold.get(key, {}), pred.get(key, {}), alts.get(key, {})
        if g:
            total += sum(_match(g, p, a, k) for k in g) / len(g)
            n += 1
    return total / n


def naive_metrics(run: Run, scored: Scored) -> dict[str, float]:
    turns, gold, alts, pred = read_states(run, scored.convention)
    ontology = set(zip(scored.ontology["domain"], scored.ontology["slot"], strict=True))
    listed = dict(zip(turns, run.turns["n_listed"], strict=True)) if "n_listed" in run.turns else {}
    args = (turns, gold, alts, pred)
    return {
        "jga": joint_goal_accuracy(*args),
        "slot_f1_seed": slot_f1_seed(*args),
        "slot_f1_domain_slot": slot_f1_domain_slot(*args),
        "joint_f1_trade": joint_f1_trade(*args),
        "slot_accuracy": slot_accuracy(*args, ontology, listed),
        "slot_f1_micro": slot_f1_micro(*args),
        "aga": average_goal_accuracy(*args),
    }
