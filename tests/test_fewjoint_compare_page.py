"""The FewJoint page compares the systems of one gold over seeds and sentences (AppTest): two systems made of
the demo's seed files, the table the page shows equals `compare_fewjoint` on the same files."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from analysis.fewjoint import load_fewjoint_system, score_fewjoint
from analysis.fewjoint.compare import compare_fewjoint, comparison_table

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo" / "fewjoint"
SYSTEMS = {"first seeds": [1, 2, 3], "last seeds": [4, 5]}

pytestmark = pytest.mark.skipif(not DEMO.exists(), reason=f"the demo FewJoint files {DEMO} are absent (make demo)")


def files(seeds: list[int]) -> list[str]:
    return [str(DEMO / f"simulated_seed{s}.jsonl") for s in seeds]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    blocks = [
        f'[[fewjoint]]\nname = "{name}"\ngold = "{DEMO / "episodes.json"}"\npred = {files(seeds)!r}\nshots = 1\n'
        for name, seeds in SYSTEMS.items()
    ]
    run = (  # a workspace lists one run at least: the demo's first (the files stay where the demo keeps them)
        "[workspace]\nallow_outside_root = true\n\n"
        f'[[runs]]\nname = "crosswoz-rule-dst"\npred = "{DEMO.parent / "crosswoz_ruledst" / "test_preds_subset.json.gz"}"\n'
        f'gold = "{DEMO.parent / "crosswoz" / "test_subset.json.gz"}"\nconvention = "exact"\n'
    )
    path = tmp_path / "workspace.toml"
    path.write_text("\n".join([run, *blocks]).replace("'", '"'), encoding="utf-8")
    return path


@pytest.mark.slow
def test_the_page_compares_the_systems_over_seeds(workspace: Path) -> None:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.session_state["workspace_path"] = str(workspace)
    at.run()
    at.switch_page("pages/fewjoint.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(h.value == "Systems compared over seeds and sentences" for h in at.subheader)
    shown = next(d.value for d in at.dataframe if "systems (b − a)" in d.value.columns)
    results = {
        name: score_fewjoint(load_fewjoint_system(DEMO / "episodes.json", files(seeds), name=name))
        for name, seeds in SYSTEMS.items()
    }
    expected = comparison_table(compare_fewjoint(results))
    assert shown["systems (b − a)"].tolist() == ["last seeds − first seeds"] * 3
    assert shown["seeds (a, b)"].tolist() == ["3, 2"] * 3
    assert shown["Δ"].tolist() == pytest.approx(expected["Δ"].tolist(), abs=1e-12)
    assert shown["Δ low"].tolist() == pytest.approx(expected["Δ low"].tolist(), abs=1e-12)
    assert any("hierarchical paired bootstrap" in c.value for c in at.caption)
