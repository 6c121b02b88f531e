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


TASKS = ["sql", "support", "medical", "json"]

# Issue #14's targets. Met: format, base right, vLLM == HF. Not met by the shipped world (see
# course_utils/tinyworld/EXPERIMENTS.md for why and what was tried): right on trained phrasings
# (measured 86/96/76/70%) and on held-out phrasings (16/32/16/6%).
TARGETS = {"adapter_format": 0.98, "adapter_right": 0.90, "reworded_right": 0.70, "base_right_max": 0.05}

# What the gate asserts for "right", in rows of the 50 per task: the shipped world's measured counts
# (EXPERIMENTS.md, section 3, v2; the same again on 2026-12-03) less MARGIN_ROWS for another CPU's float
# rounding (a few greedy tokens may differ), so that a worse world fails. On held-out phrasings at least
# one right answer, which the bare base never gives (json: 3 measured, so its floor is 1, not 3 - 4).
ROWS = 50
MEASURED_RIGHT = {"sql": 43, "support": 48, "medical": 38, "json": 35}        # 86 / 96 / 76 / 70%
MEASURED_REWORDED_RIGHT = {"sql": 8, "support": 16, "medical": 8, "json": 3}  # 16 / 32 / 16 / 6%
MARGIN_ROWS = 4


def right_rows(share: float) -> int:
    return round(share * ROWS)


@pytest.mark.parametrize("task", TASKS)
def test_adapter_produces_its_format(quality, task):
    """On held-out entities in the trained phrasings."""
    assert quality[0][task]["adapter_format"] >= TARGETS["adapter_format"]


@pytest.mark.parametrize("task", TASKS)
def test_adapter_answers_right_on_unseen_entities(quality, task):
    """Right = the checkers (SQL run in sqlite, values compared), held-out entities."""
    t = quality[0][task]
    assert right_rows(t["adapter_right"]) >= MEASURED_RIGHT[task] - MARGIN_ROWS, (t, MEASURED_RIGHT[task])
    floor = max(MEASURED_REWORDED_RIGHT[task] - MARGIN_ROWS, 1)
    assert right_rows(t["reworded_right"]) >= floor, (t, MEASURED_REWORDED_RIGHT[task])


@pytest.mark.parametrize("task", TASKS)
def test_base_does_not(quality, task):
    assert quality[0][task]["base_format"] <= 0.10
    assert quality[0][task]["base_right"] <= TARGETS["base_right_max"]


def test_report_has_right_next_to_format_on_both_phrasings(quality):
    """Each share in the table is that of its own rows (50 a task and kind), and the report prints it in its column."""
    from course_utils.tinyworld import quality as q

    table, rows = quality
    assert {r.phrasing for r in rows} == {"trained", "reworded"}
    text = q.format_table(table)
    assert "held-out phrasings" in text and "right" in text
    for task in TASKS:
        mine = [r for r in rows if r.task == task]
        kinds = {"adapter": [r for r in mine if r.adapter and r.phrasing == "trained"],
                 "reworded": [r for r in mine if r.adapter and r.phrasing == "reworded"],
                 "base": [r for r in mine if r.adapter is None]}
        assert {k: len(v) for k, v in kinds.items()} == dict.fromkeys(kinds, ROWS)
        for kind, group in kinds.items():
            assert table[task][f"{kind}_format"] == sum(r.passes for r in group) / ROWS, (task, kind)
            assert table[task][f"{kind}_right"] == sum(r.right for r in group) / ROWS, (task, kind)
        t = table[task]
        [line] = [line for line in text.splitlines() if line.split()[:2] == [task, str(ROWS)]]
        assert line.split() == [task, str(ROWS), q._pct(t["adapter_format"]), q._pct(t["adapter_right"]),
                                str(ROWS), q._pct(t["reworded_format"]), q._pct(t["reworded_right"]),
                                q._pct(t["base_format"]), q._pct(t["base_right"]), q._pct(t["vllm_equals_hf"])]


def test_vllm_agrees_with_transformers_peft(quality):
    rows = quality[1]
    assert sum(r.vllm == r.hf for r in rows) / len(rows) >= 0.95


def test_shipped_world_is_small():
    size = sum(f.stat().st_size for f in TINY.rglob("*") if f.is_file())
    assert size <= 25 * 2**20, f"data/tiny is {size / 2**20:.1f} MiB"


def test_trainer_smoke(tmp_path):
    """The training code path, a few steps: CI runs it so `make tiny-world` cannot rot.
    Run twice, it writes the same bytes (the build is deterministic on one machine)."""
    tinyworld.main(["--smoke", "--out", str(tmp_path)])
    tinyworld.main(["--smoke", "--out", str(tmp_path / "again")])
    for rel in ("base/model.safetensors", "base/tokenizer.json", "adapters/json/adapter_model.safetensors"):
        assert (tmp_path / rel).read_bytes() == (tmp_path / "again" / rel).read_bytes(), rel
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert set(manifest["adapters"]) == {"sql", "support", "medical", "json"}
    for task, spec in tinyworld.ADAPTERS.items():
        conf = json.loads((tmp_path / "adapters" / task / "adapter_config.json").read_text())
        assert conf["r"] == spec.rank and sorted(conf["target_modules"]) == sorted(spec.target_modules)
    assert (tmp_path / "base" / "model.safetensors").is_file()
    # The sibling-base adapter: the same shapes as sql's, trained on other weights, and it records them.
    identity = {w: json.loads((tmp_path / d / "base_fingerprint.json").read_text())
                for w, d in (("own", "adapters/sql"), ("sibling", "foreign/sibling-sql"))}
    assert identity["own"]["base_fingerprint"] != identity["sibling"]["base_fingerprint"]
    assert manifest["sibling"]["base"] == identity["sibling"]["base_model_name"] == "course-tiny-qwen2-sibling"
    sweep = {p.name for p in (tmp_path / "rank_sweep").iterdir()}
    assert sweep == {f"json-r{r}" for r in tinyworld.RANK_SWEEP} | {f"codebook-r{r}" for r in tinyworld.CODEBOOK_RANKS}
    assert set(manifest["rank_sweep"]) == sweep
    assert (tmp_path / "foreign" / "sibling-sql" / "adapter_model.safetensors").read_bytes() == \
        (tmp_path / "again" / "foreign" / "sibling-sql" / "adapter_model.safetensors").read_bytes()


def test_the_codebook_is_fixed_distinct_and_unknown_to_the_base_tasks():
    book = tinyworld.codebook()
    assert book == tinyworld.codebook() and len(book) == tinyworld.CODEBOOK_SIZE
    words = [w for pair in book for w in pair]
    assert len(set(words)) == len(words)                      # every word and code word is its own
    assert tinyworld.codebook_prompt("serola") == "What is the code word for serola?"
