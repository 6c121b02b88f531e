"""labs/multi_lora_offline.py: the course page's section-4 program, run live on CPU and, with fake inputs,
the way it runs on the llama3b profile (Llama-3.2-3B-Instruct + the seed's SQL adapter)."""

import json
import os
import runpy
import subprocess
import sys
import types

import pytest

from course_utils import profiles
from course_utils.paths import REPO

SCRIPT = REPO / "labs" / "multi_lora_offline.py"


@pytest.mark.live
def test_runs_live_on_the_tiny_profile():
    env = {**os.environ, "COURSE_PROFILE": "tiny", "VLLM_HOST_IP": "127.0.0.1"}
    env.pop("TQDM_DISABLE", None)   # the program as written: generate() with vLLM's default progress bar
    r = subprocess.run([sys.executable, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=600,
                       cwd=REPO)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.strip().splitlines()
    # two rows, one per prompt. Not asserted: that row 0 is a query. The page's prompts are plain strings in its own
    # "[user] ... [/user]" format, and the tiny sql adapter was trained on chat-template prompts only: the world of
    # 2026-12-04 happened to answer this one with a SELECT, issue 53's does not (Lab 01 uses the chat template).
    assert len(lines) == 2 and all(line.strip() for line in lines), r.stdout


class FakeLLM:
    calls: list = []

    def __init__(self, **kwargs):
        FakeLLM.calls.append(("LLM", kwargs))

    def generate(self, prompts, sp, lora_request=None):
        FakeLLM.calls.append(("generate", prompts, sp, lora_request))
        return [types.SimpleNamespace(outputs=[types.SimpleNamespace(text=f" answer {i} ")])
                for i in range(len(prompts))]


def _fake_vllm(monkeypatch):
    vllm = types.ModuleType("vllm")
    vllm.LLM = FakeLLM
    vllm.SamplingParams = lambda **kw: ("SamplingParams", kw)
    lora = types.ModuleType("vllm.lora")
    request = types.ModuleType("vllm.lora.request")
    request.LoRARequest = lambda *a: ("LoRARequest", *a)
    for name, mod in [("vllm", vllm), ("vllm.lora", lora), ("vllm.lora.request", request)]:
        monkeypatch.setitem(sys.modules, name, mod)


def test_on_llama3b_it_is_the_pages_pair_and_settings(tmp_path, monkeypatch, capsys):
    base = tmp_path / "models" / "Llama-3.2-3B-Instruct"
    sql = tmp_path / "adapters" / "llama32-3b-text2sql-spider"
    for folder, name in [(base, "config.json"), (sql, "adapter_config.json")]:
        folder.mkdir(parents=True)
        (folder / name).write_text("{}")
    (tmp_path / "paths.json").write_text(json.dumps({"llama3b": {"base": str(base), "adapters": {"sql": str(sql)}}}))
    monkeypatch.setenv("COURSE_MODELS_DIR", str(tmp_path))
    monkeypatch.setenv("COURSE_PROFILE", "llama3b")
    monkeypatch.setattr(profiles, "cuda_available", lambda: True)
    for k in profiles.GPU_ENV:                      # apply_env writes these; put them back afterwards
        monkeypatch.setenv(k, os.environ.get(k, profiles.GPU_ENV[k]))
    _fake_vllm(monkeypatch)
    FakeLLM.calls = []
    runpy.run_path(str(SCRIPT), run_name="__main__")

    (_, kwargs), (_, prompts, sp, requests) = FakeLLM.calls
    assert kwargs["model"] == str(base) and kwargs["enable_lora"] is True
    assert (kwargs["max_lora_rank"], kwargs["max_loras"]) == (64, 2)          # the page's values
    assert kwargs["dtype"] == "bfloat16" and kwargs["gpu_memory_utilization"] == 0.9
    assert sp == ("SamplingParams", {"temperature": 0, "max_tokens": 64})
    assert prompts[0].startswith("[user] Write a SQL query: list all airports in Malawi")
    assert requests == [("LoRARequest", "sql_adapter", 1, str(sql)), None]
    assert capsys.readouterr().out.splitlines() == ["answer 0", "answer 1"]


def test_without_the_download_it_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_MODELS_DIR", str(tmp_path))
    monkeypatch.setenv("COURSE_PROFILE", "llama3b")
    monkeypatch.setattr(profiles, "cuda_available", lambda: True)
    _fake_vllm(monkeypatch)
    with pytest.raises(profiles.ProfileError, match="找不到基座模型的文件夹 .*Llama-3.2-3B-Instruct.*setup.sh --profile llama3b"):
        runpy.run_path(str(SCRIPT), run_name="__main__")


def test_lab01_shows_the_pages_program_beside_its_conceptual_output():
    """Issue 55: Lab 01 runs the page's section-4 requests on its engine and shows them beside the page's
    conceptual output. What its prose says of the table holds in the committed run: the page's raw prompt gets no
    SELECT from the tiny sql adapter, the same question in the chat template gets the page's very SELECT."""
    from course_tools import notebooks

    nb = notebooks.read(REPO / "labs" / "01_offline_multi_lora.ipynb")
    i = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "SEED_OUTPUT = [" in c.source)
    shown = "".join(o.get("data", {}).get("text/plain", "") for o in nb.cells[i].outputs)
    row0 = [line for line in shown.splitlines() if line.startswith("0 ")]
    raw, templated = row0[-2], row0[-1]          # pandas wraps the wide table: the last two blocks are the runs
    assert not raw.split(None, 1)[1].startswith("SELECT")
    assert templated.split(None, 1)[1].strip() == "SELECT name FROM airports WHERE country = 'Malawi'"
    assert "讲义示意里那条 SELECT" in nb.cells[i + 1].source and "乱码" in nb.cells[i + 1].source
