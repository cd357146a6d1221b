"""FewJoint systems compared over seeds and sentences (`analysis.fewjoint.compare`), checked against a plain
loop bootstrap on the real FewJoint gold with perturbed predictions (five seeds a system)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from analysis.cli import main as cli
from analysis.fewjoint import load_fewjoint_gold, load_fewjoint_system, score_fewjoint
from analysis.fewjoint.compare import compare_fewjoint, comparison_table, same_gold, text_report
from tests.conftest import realdata_path
from tests.test_fewjoint_oracle import perturb

SEEDS = 5
STRENGTHS = {"steady": 0.3, "noisy": 0.45}


def write_system(out: Path, gold: Any, name: str, strength: float) -> list[Path]:
    queries = gold.queries
    intents = {d: sorted(p["intent"].unique()) for d, p in queries.groupby("domain")}
    slot_types = {
        d: sorted({t[2:] for tags in p["tags"] for t in tags if t != "O"}) for d, p in queries.groupby("domain")
    }
    paths = []
    for seed in range(SEEDS):
        lines = []
        for number, row in enumerate(queries.itertuples()):
            rng = np.random.default_rng([seed, number, int(strength * 100)])
            intent, tags = perturb(row, rng, intents[row.domain], slot_types[row.domain], strength)
            record = {"domain": row.domain, "episode": row.episode, "query_index": row.query_index}
            lines.append(json.dumps({**record, "pred_intent": intent, "pred_tags": tags}, ensure_ascii=False))
        path = out / f"{name}_seed{seed}.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    gold_path = realdata_path("fewjoint", "FewJoint1.1", "1shot", "test.json")
    gold = load_fewjoint_gold(gold_path)
    out = tmp_path_factory.mktemp("fewjoint_compare")
    files = {name: write_system(out, gold, name, strength) for name, strength in STRENGTHS.items()}
    return {
        name: score_fewjoint(load_fewjoint_system(gold_path, paths, name=name), averaging="micro")
        for name, paths in files.items()
    } | {"files": files}


@pytest.fixture(scope="module")
def systems(scored: dict[str, Any]) -> dict[str, Any]:
    return {name: scored[name] for name in STRENGTHS}


def naive_deltas(results: dict[str, Any], metric: str, *, n_resamples: int, seed: int) -> np.ndarray:
    """The hierarchical bootstrap as a plain loop: per resample, draw the sentences, then per system its seeds,
    and recompute each drawn seed's metric from its summed per-sentence counts on the drawn sentences."""
    names = list(results)
    tables = {}
    for name in names:
        per_seed = {}
        for seed_label, rows in results[name].queries.groupby("seed", observed=True, sort=False):
            rows = rows.sort_values(["domain", "episode", "query_index"])
            if metric == "slot_f1":
                per_seed[str(seed_label)] = list(
                    zip(
                        (2 * rows["n_correct_chunks"]).tolist(),
                        (rows["n_gold_chunks"] + rows["n_pred_chunks"]).tolist(),
                        strict=True,
                    )
                )
            else:
                column = {"intent_accuracy": "intent_correct", "sentence_accuracy": "sentence_correct"}[metric]
                per_seed[str(seed_label)] = [(float(v), 1.0) for v in rows[column]]
        tables[name] = [per_seed[str(s)] for s in results[name].seeds]
    n = len(tables[names[0]][0])
    sentences = np.random.default_rng(seed).integers(0, n, size=(n_resamples, n))
    seed_draws = {
        name: np.random.default_rng([seed + 1 + i, len(tables[name])]).integers(
            0, len(tables[name]), size=(n_resamples, len(tables[name]))
        )
        for i, name in enumerate(names)
    }
    deltas = []
    for r in range(n_resamples):
        value = {}
        for name in names:
            seeds_values = []
            for j in seed_draws[name][r]:
                num = sum(tables[name][j][q][0] for q in sentences[r])
                den = sum(tables[name][j][q][1] for q in sentences[r])
                seeds_values.append(num / den)
            value[name] = sum(seeds_values) / len(seeds_values)
        deltas.append(value[names[1]] - value[names[0]])
    return np.array(deltas)


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
@pytest.mark.realdata
@pytest.mark.parametrize("metric", ["intent_accuracy", "slot_f1", "sentence_accuracy"])
def test_hierarchical_interval_equals_a_plain_loop(systems: dict[str, Any], metric: str) -> None:
    n_resamples, seed = 200, 7
    found = compare_fewjoint(systems, metrics=(metric,), n_resamples=n_resamples, seed=seed)
    row = found.deltas.iloc[0]
    deltas = naive_deltas(systems, metric, n_resamples=n_resamples, seed=seed)
    low, high = np.quantile(deltas, [0.025, 0.975])
    assert abs(row["low"] - low) < 1e-12 and abs(row["high"] - high) < 1e-12
    p = min(1.0, 2 * min(np.mean(deltas <= 1e-12), np.mean(deltas >= -1e-12)))
    assert row["p_value"] == pytest.approx(p, abs=1e-12)
    # The point estimate: the mean over seeds of the pooled (micro) metric the scorer reports per seed.
    for side in ("a", "b"):
        per_seed = systems[row[side]].per_seed[metric].to_numpy(dtype=float)
        assert row[f"estimate_{side}"] == pytest.approx(per_seed.mean(), abs=1e-12)
    # Not vacuous: the noisier system is worse, beyond its seeds' spread and the sentences' sampling error.
    assert row["delta"] < 0 and row["high"] < 0 and row["n_sentences_differ"] > 100


@pytest.mark.realdata
def test_text_report_names_every_pair_and_metric(systems: dict[str, Any]) -> None:
    both = compare_fewjoint(systems, metrics=("slot_f1",), n_resamples=100).deltas.iloc[0]
    assert both["n_seeds_a"] == SEEDS == both["n_seeds_b"]
    report = text_report(compare_fewjoint(systems, n_resamples=100))
    assert "noisy - steady" in report and "slot_f1" in report and "1,065 query sentences" in report
    assert same_gold(systems) == [list(systems)]


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
@pytest.mark.realdata
def test_systems_on_another_gold_are_refused(systems: dict[str, Any], tmp_path: Path) -> None:
    gold_path = realdata_path("fewjoint", "FewJoint1.1", "5shot", "test.json")
    gold = load_fewjoint_gold(gold_path)
    other = score_fewjoint(load_fewjoint_system(gold_path, write_system(tmp_path, gold, "five", 0.3)[:2]))
    named = {**systems, "five": other}
    assert same_gold(named) == [list(systems), ["five"]]
    with pytest.raises(ValueError, match="same gold"):
        compare_fewjoint(named)


@pytest.mark.slow  # seconds of work: `make check` leaves it to `make test`
@pytest.mark.realdata
def test_cli_compares_the_systems_its_files_name(
    scored: dict[str, Any], systems: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    gold = str(realdata_path("fewjoint", "FewJoint1.1", "1shot", "test.json"))
    files = [str(p) for name in STRENGTHS for p in scored["files"][name]]
    names = [name for name in STRENGTHS for _ in range(SEEDS)]
    base = ["fewjoint", "--gold", gold, "--pred", *files, "--averaging", "micro", "--resamples", "100"]
    assert cli.main([*base, "--system", *names, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = compare_fewjoint(systems, n_resamples=100).to_dict()
    assert printed["comparison"] == expected
    assert set(printed["systems"]) == set(STRENGTHS)
    assert cli.main([*base, "--system", *names]) == 0
    assert "== noisy - steady (over seeds and sentences)" in capsys.readouterr().out
    assert cli.main([*base, "--system", "steady"]) == 2
    assert "--system names 1 systems for 10 --pred files" in capsys.readouterr().err


@pytest.mark.realdata
def test_the_report_tables_each_gold_that_two_systems_share(systems: dict[str, Any]) -> None:
    from analysis.export.report import fewjoint_comparisons

    items = fewjoint_comparisons(systems, n_resamples=100)
    assert [item.name for item in items] == ["fewjoint-compare-steady"]
    table = items[0].frame
    expected = comparison_table(compare_fewjoint(systems, n_resamples=100))
    assert table.equals(expected) and len(table) == 3
    assert table["metric"].tolist() == ["intent accuracy", "slot F1", "sentence accuracy"]
    assert "hierarchical paired bootstrap" in items[0].caption


@pytest.mark.realdata
def test_the_report_table_renders_as_latex_with_its_intervals(systems: dict[str, Any]) -> None:
    from analysis.export.report import fewjoint_comparisons
    from analysis.export.tables import table_bytes

    item = fewjoint_comparisons(systems, n_resamples=100)[0]
    latex = table_bytes(item.frame, "latex", caption=item.caption, **item.options).decode("utf-8")
    low, high = item.frame.loc[0, ["Δ low", "Δ high"]]
    assert f"{low:.3f}" in latex and f"{high:.3f}" in latex and "Δ low" not in latex  # drawn as an interval
    assert "steady" in latex and "noisy" in latex
