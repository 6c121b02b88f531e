"""The shipped tiny world: quality through real vLLM, agreement with transformers+peft, the trainer's code path."""

import json

import pytest

from course_utils import get_profile
from course_utils.paths import TINY
from course_utils.tinyworld import trainer as tinyworld

vllm = pytest.importorskip("vllm", reason="live tests need vLLM (make setup)")
pytestmark = pytest.mark.live


@pytest.fixture(scope="module")
def quality():
    from course_utils.tinyworld import quality

    table, rows = quality.evaluate(get_profile("tiny"), n_per_task=50)
    print("\n" + quality.format_table(table))
    return table, rows


@pytest.mark.parametrize("task", ["sql", "support", "medical", "json"])
def test_adapter_produces_its_format(quality, task):
    """On held-out entities in the trained phrasings."""
    assert quality[0][task]["adapter_format"] >= 0.95


@pytest.mark.parametrize("task", ["sql", "support", "medical", "json"])
def test_base_does_not(quality, task):
    assert quality[0][task]["base_format"] <= 0.10


def test_report_has_right_next_to_format_on_both_phrasings(quality):
    """The report measures "right" (checkers) too; its targets are not asserted until the world is retrained."""
    from course_utils.tinyworld import quality as q

    table, rows = quality
    for task in ["sql", "support", "medical", "json"]:
        for key in ("adapter_right", "reworded_format", "reworded_right", "base_right"):
            assert 0.0 <= table[task][key] <= 1.0, (task, key)
        assert table[task]["reworded_rows"] == table[task]["rows"] == 50
    assert {r.phrasing for r in rows} == {"trained", "reworded"}
    text = q.format_table(table)
    assert "held-out phrasings" in text and "right" in text


def test_vllm_agrees_with_transformers_peft(quality):
    rows = quality[1]
    assert sum(r.vllm == r.hf for r in rows) / len(rows) >= 0.95


def test_shipped_world_is_small():
    size = sum(f.stat().st_size for f in TINY.rglob("*") if f.is_file())
    assert size <= 25 * 2**20, f"data/tiny is {size / 2**20:.1f} MiB"


def test_trainer_smoke(tmp_path):
    """The training code path, a few steps: CI runs it so `make tiny-world` cannot rot."""
    tinyworld.main(["--smoke", "--out", str(tmp_path)])
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert set(manifest["adapters"]) == {"sql", "support", "medical", "json"}
    for task, spec in tinyworld.ADAPTERS.items():
        conf = json.loads((tmp_path / "adapters" / task / "adapter_config.json").read_text())
        assert conf["r"] == spec.rank and sorted(conf["target_modules"]) == sorted(spec.target_modules)
    assert (tmp_path / "base" / "model.safetensors").is_file()
