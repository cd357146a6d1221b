"""The Overview's views: the leaderboard, whether runs side by side compare (dataset, split, convention,
history), and the paired comparison of runs on the same gold."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from analysis import registry as R
from analysis import scorer_inputs, stats
from analysis.model import dialogue_key
from analysis.scoring import Scored
from analysis.shared_turns import group_by_gold, on_shared_turns
from analysis.suite import headline_metrics, not_applicable, not_applicable_text
from analysis.views.common import INTERVAL_RESAMPLES, META_COLUMNS, _meta

LEADERBOARD_METRICS = R.NAMES  # the leaderboard's metric columns, in order: every registered metric


LEADERBOARD_SHOWN = R.LEADERBOARD_SHOWN  # the columns the Overview shows by default (a hidden one when sorted by)


def leaderboard(
    scoreds: Sequence[Scored], *, sort: str | None = None, resamples: int = INTERVAL_RESAMPLES
) -> pd.DataFrame:
    """One row per run: metadata, convention, counts, every headline metric and alignment warnings;
    sorted by the metric `sort` (best first) when given, else in the order of `scoreds`. The `sort`
    metric also gets its 95% dialogue-level bootstrap interval (`<sort>_low`, `<sort>_high`). A metric
    whose definition does not apply to a run is NaN there, and `not_applicable` says which and why
    (empty when all apply; see `not_applicable_notes`)."""
    rows = []
    for scored in scoreds:
        meta = _meta(scored)
        warnings = list(scored.alignment.get(meta.run_id, {}).get("warnings", []))
        interval: dict[str, float] = {}
        if sort in stats.METRICS and resamples > 0:
            ci = stats.bootstrap_ci(scored, sort, n_resamples=resamples)
            assert isinstance(ci, dict)
            interval = {f"{sort}_low": ci["low"], f"{sort}_high": ci["high"]}
        row = {
            **{c: getattr(meta, c) for c in META_COLUMNS},
            "convention": scored.convention.label,
            "n_dialogues": int(scored.turns["dialogue_id"].nunique()),
            "n_turns": len(scored.turns),
            **headline_metrics(scored),
            **interval,
            "not_applicable": not_applicable_text(not_applicable(scored)),
            "n_warnings": len(warnings),
            "warnings": " | ".join(warnings),
        }
        if scored.convention.name == "sgd":  # JGA and AGA under the SGD evaluator's name are its own
            from analysis.sgd.views import leaderboard_values

            evaluator = leaderboard_values(scored, sort, resamples)
            note = evaluator.pop("sgd_note", "")
            row |= evaluator
            if note:
                row["not_applicable"] = "; ".join(filter(None, [row["not_applicable"], f"JGA, AGA n/a: {note}"]))
        rows.append(row)
    board = pd.DataFrame(rows)
    if sort is not None and len(board):
        if sort not in board.columns:
            raise ValueError(f"sort has to be a leaderboard column, got {sort!r}")
        best_first = R.get(sort).higher_is_better if sort in R.LABELS else True
        board = board.sort_values(sort, ascending=not best_first, kind="stable", na_position="last")
        board = board.reset_index(drop=True)
    return board


def scorer_lead(board: pd.DataFrame) -> tuple[str, list[tuple[str, str]]]:
    """What the scorer prints, when every run of the board is under one convention named after a scorer:
    its heading ("what mwzeval prints") and its metrics in its order, each with the scorer's own name; ("", [])
    otherwise. The Overview and the report lead with these, then show the rest.

    >>> scorer_lead(pd.DataFrame({"convention": ["convlab3"]}))[1][-1]
    ('jga', 'accuracy')
    >>> scorer_lead(pd.DataFrame({"convention": ["exact"]}))
    ('', [])
    """
    if "convention" not in board.columns or not len(board):
        return "", []
    names = {str(c).split(" (")[0] for c in board["convention"]}  # dstc9's label names its subtask
    if len(names) != 1:
        return "", []
    name = names.pop()
    lead = R.scorer_metrics(name)
    return (R.scorer_heading(name), list(lead)) if lead else ("", [])


def gold_input_notes(board: pd.DataFrame) -> list[str]:
    """One line per run whose gold its convention's scorer reads only once prepared, or never (every metric
    n/a), or holds placeholders it scores as values: from the run's warnings (`analysis.scorer_inputs`).

    >>> gold_input_notes(pd.DataFrame({"run_id": ["a"], "warnings": ["x | gold under convlab3 prepared: y"]}))
    ['a: gold under convlab3 prepared: y']
    """
    if "warnings" not in board.columns:
        return []
    return [
        f"{run}: {line}"
        for run, text in zip(board["run_id"], board["warnings"], strict=True)
        for line in str(text or "").split(" | ")
        if line.startswith(scorer_inputs.WARNING_PREFIX)
    ]


def not_applicable_notes(board: pd.DataFrame) -> list[str]:
    """One line per run with a metric shown as n/a: the run, the metrics and the reason (for captions).

    >>> not_applicable_notes(pd.DataFrame({"run_id": ["a", "b"], "not_applicable": ["", "Slot accuracy n/a: x"]}))
    ['b: Slot accuracy n/a: x']
    """
    if "not_applicable" not in board.columns:
        return []
    return [f"{run}: {text}" for run, text in zip(board["run_id"], board["not_applicable"], strict=True) if text]


# The columns that make runs comparable, as `comparability_warnings` reads them.
COMPARABLE_BY = ("dataset", "split", "convention", "history")


def comparable_groups(table: pd.DataFrame) -> pd.Series:
    """For each row of a table of runs, a label naming its group of comparable runs: the same dataset
    (family and version, as `dataset_version` reads the name), split, convention and history mode, the
    differences `comparability_warnings` names. Columns the table lacks do not split it; a table with
    none of them is one group (label ""). Best values are compared only within a group.

    >>> table = pd.DataFrame({"dataset": ["MultiWOZ 2.1", "CrossWOZ", "multiwoz-2.1"], "history": ["gold"] * 3})
    >>> comparable_groups(table).tolist()
    ['MultiWOZ 2.1, gold history', 'CrossWOZ, gold history', 'MultiWOZ 2.1, gold history']
    """
    parts = []
    for column in COMPARABLE_BY:
        if column not in table.columns:
            continue
        values = table[column].fillna("").astype(str)
        if column == "dataset":
            key = values.map(dataset_version)
            first = dict(zip(key[::-1], values[::-1], strict=True))  # the first spelling of a dataset names it
            parts.append(key.map(first))
        else:
            parts.append(values + (" history" if column == "history" else ""))
    if not parts:
        return pd.Series("", index=table.index)
    return pd.concat(parts, axis=1).apply(lambda row: ", ".join(v for v in row if v), axis=1)


def dataset_version(name: str) -> tuple[str, str]:
    """Split a dataset name into (family, version): the name ends in a version (`2`, `2.1`), maybe after
    separators (spaces, `_`, `-`) and a `v`, and something comes before it on the first line.

    Scanned back from the end by hand, in linear time: the pattern it replaces,
    `^(.*?)[\\s_-]*v?(\\d+(?:\\.\\d+)+|\\d+)$`, tried every end of its lazy family against every run of
    separators (8,000 spaces took 3.8 s), and a dataset name is the user's.

    >>> dataset_version("MultiWOZ 2.1"), dataset_version("CrossWOZ"), dataset_version("MultiWOZ-zh")
    (('multiwoz', '2.1'), ('crosswoz', ''), ('multiwoz-zh', ''))
    """
    text = name.strip()
    # The version: the longest tail of digit runs joined by single dots (`\d` is any decimal digit).
    start = len(text)
    while start > 0 and text[start - 1].isdecimal():
        start -= 1
        while start > 0 and text[start - 1].isdecimal():
            start -= 1
        if not (start >= 2 and text[start - 1] == "." and text[start - 2].isdecimal()):
            break
        start -= 1
    if start == len(text):
        return text.lower(), ""
    family = start - 1 if start > 0 and text[start - 1] == "v" else start
    while family > 0 and (text[family - 1].isspace() or text[family - 1] in "_-"):
        family -= 1
    if family == 0 or "\n" in text[:family]:  # `.` matched no line break
        return text.lower(), ""
    return text[:family].strip().lower(), text[start:]


def _groups(board: pd.DataFrame, column: str, label: Any = None) -> str:
    parts = []
    for value, part in board.groupby(column, sort=True):
        shown = label(value) if label else value
        parts.append(f"{shown or '(unset)'} ({', '.join(map(str, part['run_id']))})")
    return " vs ".join(parts)


def run_table(scoreds: Sequence[Scored]) -> pd.DataFrame:
    """One row per run: its metadata and the convention it was scored under (no metrics).

    >>> from analysis.demo.testing import scored_from_states
    >>> run_table([scored_from_states([{}], [{}])])[["run_id", "convention"]].to_dict("records")
    [{'run_id': 'run', 'convention': 'exact'}]
    """
    rows = [
        {**{c: getattr(meta, c) for c in META_COLUMNS}, "convention": scored.convention.name}
        for scored in scoreds
        for meta in scored.metas
    ]
    return pd.DataFrame(rows, columns=[*META_COLUMNS, "convention"])


def comparability_warnings(runs: pd.DataFrame | Sequence[Scored], *, about: Sequence[str] = COMPARABLE_BY) -> list[str]:
    """Plain sentences for every way the runs side by side differ so their numbers cannot be compared:
    dataset (or its version), split, convention, history mode. Empty when they are comparable.

    `runs`: the leaderboard (or any frame with a row per run and the `COMPARABLE_BY` columns), or the
    scored runs a table or chart sets side by side; `about`: the differences to check, e.g.
    `("convention",)` for views that only ever set runs of different datasets side by side. Each run is
    scored under its own convention unless one is chosen for all, so mixed conventions are the difference
    nobody typed: that sentence names every run's convention and says how to score them alike.

    >>> board = pd.DataFrame({"run_id": ["a", "b"], "convention": ["trade", "mwzeval"]})
    >>> comparability_warnings(board, about=("convention",))  # doctest: +NORMALIZE_WHITESPACE
    ['Scored under different conventions: a (trade), b (mwzeval). Their numbers are not comparable: score
    them under one convention to compare them.']
    """
    unknown = sorted(set(about) - set(COMPARABLE_BY))
    if unknown:
        raise ValueError(f"about has to name some of {', '.join(COMPARABLE_BY)}, got {unknown}")
    board = runs if isinstance(runs, pd.DataFrame) else run_table(runs)
    if len(board) < 2:
        return []
    lines = []
    if "dataset" in about:
        names = board["dataset"].fillna("").astype(str)
        family = names.map(lambda n: dataset_version(n)[0])
        version = names.map(lambda n: dataset_version(n)[1])
        frame = board.assign(_family=family, _version=version, _dataset=names)
        for fam, part in frame.groupby("_family", sort=True):
            if part["_version"].nunique() > 1:
                lines.append(
                    f"Dataset versions differ within {part['_dataset'].iloc[0].rsplit(' ', 1)[0] or fam}: "
                    f"{_groups(part, '_dataset')}. Their numbers are not comparable."
                )
        if frame["_family"].nunique() > 1:
            lines.append(
                f"The runs are on different datasets: {_groups(frame, '_dataset')}. "
                "Numbers are comparable only within one dataset."
            )
    if "split" in about and board["split"].nunique(dropna=False) > 1:
        lines.append(f"Splits differ: {_groups(board, 'split')}. Their numbers are not comparable.")
    if "convention" in about and board["convention"].nunique(dropna=False) > 1:
        each = ", ".join(f"{run} ({conv})" for run, conv in zip(board["run_id"], board["convention"], strict=True))
        lines.append(
            f"Scored under different conventions: {each}. Their numbers are not comparable: "
            "score them under one convention to compare them."
        )
    if "history" in about and board["history"].nunique(dropna=False) > 1:
        history = {"predicted": "predicted history (JGA)", "gold": "gold history (GJGA)"}
        lines.append(
            f"History modes differ: {_groups(board, 'history', history.get)}. Their numbers are not comparable."
        )
    return lines


def _gold_fingerprint(scored: Scored) -> tuple[str, int, int]:
    """(convention, turns, order-free hash of every turn and gold slot): equal for runs on the same gold.
    Memoised on the run: the Overview's grouping and its comparison both ask."""
    return scored.memoised(("gold_fingerprint",), lambda: _fingerprint(scored))


def _fingerprint(scored: Scored) -> tuple[str, int, int]:
    turns = scored.turns[["dialogue_id", "turn_index"]]
    columns = ["dialogue_id", "turn_index", "domain", "slot", "gold_value"]
    gold = scored.slots.loc[scored.slots["gold_value"].notna(), columns]
    parts = [
        turns.assign(dialogue_id=dialogue_key(turns["dialogue_id"])),
        gold.assign(dialogue_id=dialogue_key(gold["dialogue_id"])).astype(str),
    ]
    digest = sum(int(pd.util.hash_pandas_object(p, index=False).sum()) for p in parts) % (1 << 64)
    return scored.convention.name, len(turns), digest


def gold_groups(scoreds: Sequence[Scored], *, shared_turns: bool = False) -> list[list[str]]:
    """The runs on the same gold (same turns and gold state, scored under one convention), groups of two
    or more runs in the order given, largest group first: the runs `analysis.compare` can pair. With
    `shared_turns`, runs whose gold agrees on the turns they share are grouped although turns are missing
    (`analysis.shared_turns`; they are compared on the turns all of them hold)."""
    if shared_turns:
        return group_by_gold([(_meta(s).run_id, s) for s in scoreds], shared_turns=True)[0]
    return gold_groups_of({_meta(s).run_id: _gold_fingerprint(s) for s in scoreds})


def gold_fingerprint(scored: Scored) -> tuple[str, int, int]:
    """The run's gold fingerprint (`gold_groups`): equal for runs on the same gold."""
    return _gold_fingerprint(scored)


def gold_groups_of(fingerprints: Mapping[str, tuple[str, int, int]]) -> list[list[str]]:
    """`gold_groups` from each run's `gold_fingerprint` (run id -> fingerprint, in the runs' order): what a
    caller that holds one run at a time (the report) keeps instead of the runs."""
    groups: dict[tuple[str, int, int], list[str]] = {}
    for run_id, fingerprint in fingerprints.items():
        groups.setdefault(fingerprint, []).append(run_id)
    found = [g for g in groups.values() if len(g) >= 2]
    return sorted(found, key=len, reverse=True)


def left_out_of_comparison(scoreds: Sequence[Scored], *, shared_turns: bool = False) -> list[str]:
    """What the paired comparison leaves out, one sentence each: every selected run in no group of
    `gold_groups` and why (no other run on its gold; or the turns differ, with the option that takes it
    in), and with `shared_turns`, the turns each grouped run loses.

    >>> from analysis.demo.testing import scored_from_states
    >>> a = scored_from_states({"d": [{}, {}]}, {"d": [{}, {}]}, run_id="a")
    >>> b = scored_from_states({"d": [{}]}, {"d": [{}]}, run_id="b")
    >>> left_out_of_comparison([a, b])[0][:44]
    'b is on the gold of a but the turns differ ('
    >>> left_out_of_comparison([a, b], shared_turns=True)
    ['a: 1 turn of 2 not compared (d turn 1): missing from b']
    """
    named = [(_meta(s).run_id, s) for s in scoreds]
    if len(named) < 2:
        return []
    groups, reasons = group_by_gold(named, shared_turns=shared_turns)
    lines = list(reasons.values())
    if shared_turns:
        by_name = dict(named)
        for group in groups:
            lines += [f"{run}: {what}" for run, what in on_shared_turns({r: by_name[r] for r in group})[1].items()]
    return lines


def pairwise_comparison(
    scoreds: Sequence[Scored],
    *,
    metrics: tuple[str, ...] = ("jga",),
    scopes: tuple[str, ...] = ("overall",),
    resamples: int = INTERVAL_RESAMPLES,
    shared_turns: bool = False,
) -> Any:
    """`analysis.compare.compare` of the runs (every pair, b - a in the order given), for the pages: the
    paired bootstrap only (their charts show no McNemar, which costs ~35 ms a pair: 7 s for 20 runs). The
    runs are one of `gold_groups`, whose gold fingerprint already says they hold the same gold, so the
    per-pair gold check (~0.1 s a run) is skipped."""
    from analysis.compare import compare

    named = {_meta(s).run_id: s for s in scoreds}
    if not shared_turns and len({_gold_fingerprint(s) for s in scoreds}) > 1:
        raise ValueError("paired comparison needs runs on the same gold: pick them from gold_groups")
    return compare(
        named,
        metrics=metrics,
        scopes=scopes,
        n_resamples=resamples,
        mcnemar=False,
        check_gold=False,  # grouped by their fingerprint, or checked on the shared turns
        shared_turns=shared_turns,
    )


def significance_table(
    scoreds: Sequence[Scored], *, metric: str = "jga", resamples: int = INTERVAL_RESAMPLES, shared_turns: bool = False
) -> pd.DataFrame:
    """Every ordered pair of the runs (row run, column run) with the overall delta row - column of
    `metric`, its interval, Holm-corrected p over all pairs and whether it is significant; for the
    Overview's matrix. `attrs["holm_note"]` says how the p-values were corrected."""
    result = pairwise_comparison(scoreds, metrics=(metric,), resamples=resamples, shared_turns=shared_turns)
    overall = result.overall(metric)
    forward = overall.assign(row=overall["b"], column=overall["a"])
    backward = overall.assign(
        row=overall["a"],
        column=overall["b"],
        delta=-overall["delta"],
        low=-overall["high"],
        high=-overall["low"],
        estimate_a=overall["estimate_b"],
        estimate_b=overall["estimate_a"],
    )
    keep = ["row", "column", "metric", "label", "delta", "low", "high", "p_value", "p_text", "p_holm", "p_holm_text"]
    support = ["n_dialogues_differ", "n_turns_differ", "support_text", "tested"]
    table = pd.concat([forward, backward], ignore_index=True)[[*keep, "significant", "family_size", *support]]
    table.attrs["holm_note"] = result.holm_note
    table.attrs["runs"] = list(result.runs)
    return table.reset_index(drop=True)


def pair_deltas(
    a: Scored,
    b: Scored,
    *,
    metric: str = "jga",
    scope: str = "slot",
    resamples: int = INTERVAL_RESAMPLES,
    shared_turns: bool = False,
) -> pd.DataFrame:
    """Per domain or per slot (`scope`): `metric` of run b minus run a with its paired interval and
    Holm-corrected p over the groups (`analysis.compare`), and its support; for the delta charts."""
    result = pairwise_comparison(
        [a, b], metrics=(metric,), scopes=(scope,), resamples=resamples, shared_turns=shared_turns
    )
    rows = result.deltas[result.deltas["scope"] == scope].reset_index(drop=True)
    thin = int((~rows["tested"].astype(bool)).sum())
    rows.attrs["holm_note"] = (
        f"Per {scope}: p-values Holm-corrected over this pair's {int(rows['p_value'].notna().sum())} tested {scope}s "
        f"(a bootstrap p of 0 counts as 1/B, B = {resamples:,}); pale bars are not significant at {result.alpha:g}."
        + (
            f" {thin} {scope}s are not tested: their runs differ in fewer than {result.min_support} dialogues "
            "(the count beside each name), or their interval has no width: pale, without an interval, listed last."
            if thin
            else ""
        )
    )
    return rows


def seed_systems(scoreds: Sequence[Scored]) -> dict[str, list[Scored]]:
    """The runs as systems over seeds: runs that differ only in their seed (`seeds.seed_groups`) are one
    system, named by the group's label; every other run is a system of one seed, named by its run id."""
    from analysis.seeds import seed_groups

    table = run_table(scoreds)
    labels = seed_groups(table)
    systems: dict[str, list[Scored]] = {}
    for scored, run, label in zip(scoreds, table["run_id"], labels, strict=True):
        systems.setdefault(label or str(run), []).append(scored)
    return systems


def seed_comparison(
    scoreds: Sequence[Scored],
    *,
    metric: str = "jga",
    resamples: int = INTERVAL_RESAMPLES,
    shared_turns: bool = False,
) -> pd.DataFrame:
    """Every pair of systems among the runs (`seed_systems`), `metric` b − a of their means over seeds with
    the hierarchical bootstrap of `analysis.seed_compare` (seeds, then dialogues), overall; empty when no
    system has two seeds or more. Columns: a, b, their seeds, estimates, delta, interval, p, Holm p,
    significance and support. `attrs["note"]` says how it was computed."""
    from analysis.seed_compare import METHOD, compare_seeds

    systems = seed_systems(scoreds)
    if len(systems) < 2 or all(len(runs) < 2 for runs in systems.values()):
        return pd.DataFrame()
    result = compare_seeds(
        systems, metrics=(metric,), scopes=("overall",), n_resamples=resamples, shared_turns=shared_turns
    )
    keep = ["a", "n_seeds_a", "b", "n_seeds_b", "label", "estimate_a", "estimate_b", "delta", "low", "high"]
    keep += ["p_text", "p_holm_text", "significant", "support_text", "tested"]
    table = result.deltas[keep].reset_index(drop=True)
    table.attrs["note"] = (
        f"Systems over their seeds (runs that differ only in their seed): delta b − a of the seed means, "
        f"{result.level:.0%} {METHOD}; B = {resamples:,}; Holm over the pairs. A system of one seed is "
        "resampled over dialogues only."
    )
    return table
