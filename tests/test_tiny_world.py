"""The shipped tiny world: quality through real vLLM, agreement with transformers+peft, the trainer's code path."""

import json

import pytest

from course_utils import get_profile
from course_utils.paths import TINY
from course_tools.tinyworld import trainer as tinyworld
from course_utils.tinyworld import tasks

vllm = pytest.importorskip("vllm", reason="live tests need vLLM (make setup)")
pytestmark = pytest.mark.live


@pytest.fixture(scope="module")
def quality():
    from course_tools.tinyworld import quality

    table, rows = quality.evaluate(get_profile("tiny"), n_per_task=50)
    print("\n" + quality.format_table(table))
    return table, rows


TASKS = ["sql", "support", "medical", "json"]
# A known-worse adapter for a task (its folder under data/tiny): the json recipe at rank 1 (Lab 03's sweep).
WORSE = ("json", "rank_sweep/json-r1")


@pytest.mark.parametrize("task", TASKS)
def test_the_shipped_world_passes_the_quality_gate(quality, task):
    """Format on trained phrasings, right on held-out entities in trained and both held-out phrasings
    (the checkers: SQL run in sqlite, values compared), the bare base silent: quality.gate's floors."""
    from course_tools.tinyworld import quality as q

    assert q.gate({task: quality[0][task]}) == [], quality[0][task]


def test_the_gate_fails_a_worse_adapter():
    """The gate can fail: WORSE serves a known-worse adapter in place of the shipped one, and the gate says so."""
    from dataclasses import replace

    from course_tools.tinyworld import quality as q

    task, folder = WORSE
    profile = replace(get_profile("tiny"), adapters={**get_profile("tiny").adapters, task: str(TINY / folder)})
    table, _ = q.evaluate(profile, n_per_task=q.ROWS, hf=False, only=(task,))
    misses = q.gate(table)
    assert misses and all(m.startswith(f"{task}:") for m in misses), (table, misses)


def test_report_has_right_next_to_format_on_every_phrasing(quality):
    """Each share in the table is that of its own rows (50 a task and kind), and the report prints it in its column."""
    from course_tools.tinyworld import quality as q

    table, rows = quality
    assert {r.phrasing for r in rows} == {"trained", *q.REWORDED}
    text = q.format_table(table)
    assert "held-out phrasings 2" in text and "right" in text
    for task in TASKS:
        mine = [r for r in rows if r.task == task]
        kinds = {"adapter": [r for r in mine if r.adapter and r.phrasing == "trained"],
                 **{label: [r for r in mine if r.adapter and r.phrasing == label] for label in q.REWORDED},
                 "base": [r for r in mine if r.adapter is None]}
        assert {k: len(v) for k, v in kinds.items()} == dict.fromkeys(kinds, q.ROWS)
        for kind, group in kinds.items():
            assert table[task][f"{kind}_format"] == sum(r.passes for r in group) / q.ROWS, (task, kind)
            assert table[task][f"{kind}_right"] == sum(r.right for r in group) / q.ROWS, (task, kind)
        t = table[task]
        [line] = [line for line in text.splitlines() if line.split()[:2] == [task, str(q.ROWS)]]
        cells = [str(q.ROWS), q.percent(t["adapter_format"]), q.percent(t["adapter_right"])]
        for label in q.REWORDED:
            cells += [str(q.ROWS), q.percent(t[f"{label}_format"]), q.percent(t[f"{label}_right"])]
        assert line.split() == [task, *cells, q.percent(t["base_format"]), q.percent(t["base_right"]),
                                q.percent(t["vllm_equals_hf"])]


def test_vllm_agrees_with_transformers_peft_on_every_row(quality):
    """The README's quality table says 100% per task: every row's vLLM answer is transformers+peft's, word for word."""
    rows = quality[1]
    differ = [(r.task, r.phrasing, r.adapter, r.vllm, r.hf) for r in rows if r.vllm != r.hf]
    assert not differ, f"{len(differ)} of {len(rows)} rows differ, e.g. {differ[:3]}"


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
    assert book == tinyworld.codebook() and len(book) == tasks.CODEBOOK_SIZE
    words = [w for pair in book for w in pair]
    assert len(set(words)) == len(words)                      # every word and code word is its own
    assert tinyworld.codebook_prompt("serola") == "What is the code word for serola?"
