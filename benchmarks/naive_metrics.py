"""A plain per-turn Python implementation of the headline DST metrics, for the speed comparison only.

It walks state entries and turns one by one with dicts and sets, normalising every value as it goes,
the way most DST scorers are written. It uses the convention's own per-value rules, so both
implementations must agree to the last digit (the benchmark checks).
"""

from __future__ import annotations

from collections import defaultdict

from analysis.conventions import Convention, _canonical
from analysis.model import Run
from analysis.scoring import Scored


def naive_metrics(run: Run, scored: Scored) -> dict[str, float]:
    conv = scored.convention
    gold: dict[tuple[str, int], dict[tuple[str, str], str]] = defaultdict(dict)
    alts: dict[tuple[str, int], dict[tuple[str, str], str]] = defaultdict(dict)
    pred: dict[tuple[str, int], dict[tuple[str, str], str]] = defaultdict(dict)
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
    ontology = {(d, s) for d, s in zip(scored.ontology["domain"], scored.ontology["slot"], strict=True)}
    listed = dict(zip(turns, run.turns["n_listed"], strict=True)) if "n_listed" in run.turns else {}
    jga = seed_f1 = ds_f1 = joint_f1 = acc_cells = acc_err = trade_acc = 0.0
    tp = fp = fn = 0
    aga_sum, aga_n = 0.0, 0
    for key in turns:
        g, p, a = gold.get(key, {}), pred.get(key, {}), alts.get(key, {})
        correct = {
            k for k, v in g.items() if k in p and (p[k] == v or (k in a and (p[k] == a[k] or p[k] in a[k].split("|"))))
        }
        n_wrong = sum(1 for k in g if k in p and k not in correct)
        n_missed = sum(1 for k in g if k not in p)
        n_spurious = sum(1 for k in p if k not in g)
        jga += n_wrong + n_missed + n_spurious == 0
        tp += len(correct)
        fp += n_wrong + n_spurious
        fn += n_wrong + n_missed
        resolved = {k: (g[k] if k in correct else v) for k, v in p.items()}
        if g:
            by_name_g: dict[str, set[str]] = defaultdict(set)
            by_name_p: dict[str, set[str]] = defaultdict(set)
            for (_, slot), v in g.items():
                by_name_g[slot].add(v)
            for (_, slot), v in resolved.items():
                by_name_p[slot].add(v)
            f1s = []
            for slot, gv in by_name_g.items():
                pv = by_name_p.get(slot, set())
                f1s.append(2 * len(gv & pv) / (len(gv) + len(pv)))
            seed_f1 += sum(f1s) / len(f1s)
            ds_f1 += len(correct) / len(g)
            aga_sum += len(correct) / len(g)
            aga_n += 1
            t_fp, t_fn = n_wrong + n_spurious, n_wrong + n_missed
            joint_f1 += 2 * len(correct) / (2 * len(correct) + t_fp + t_fn) if correct else 0.0
        else:
            joint_f1 += 1.0 if not p else 0.0
        errors_in_onto = sum(1 for k in set(g) | set(p) if k in ontology and k not in correct)
        cells = listed.get(key) or len(ontology)
        acc_cells += cells
        acc_err += errors_in_onto
        trade_acc += 1 - (n_wrong + n_missed + n_spurious) / len(ontology)
    n = len(turns)
    return {
        "jga": jga / n,
        "slot_f1_seed": seed_f1 / n,
        "slot_f1_domain_slot": ds_f1 / n,
        "joint_f1_trade": joint_f1 / n,
        "slot_accuracy": 1 - acc_err / acc_cells,
        "slot_f1_micro": 2 * tp / (2 * tp + fp + fn),
        "aga": aga_sum / aga_n,
    }


def _dropped(value: str, conv: Convention, side: str) -> bool:
    marker = value.strip().lower()
    drop_dontcare = conv.dontcare == "drop_both" or (conv.dontcare == "drop_gold" and side == "gold")
    return marker in conv.empty_values or (drop_dontcare and marker in conv.dontcare_values)


def _name(domain: str, slot: str, conv: Convention) -> tuple[str, str]:
    if conv.lower_names:
        domain, slot = domain.lower(), slot.lower()
    return domain, conv.slot_aliases.get(slot, slot)
