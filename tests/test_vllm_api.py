"""The vLLM API check: names are collected from code, found or reported missing in a source tree."""

from __future__ import annotations

import ast
import textwrap

import pytest

from course_utils import vllm_api as api


def fake_tree(tmp_path):
    files = {
        "vllm/__init__.py": 'MODULE_ATTRS = {"LLM": ".entrypoints.llm:LLM"}\n__version__ = "9.9"\n',
        "vllm/envs.py": 'environment_variables = {"VLLM_HOST_IP": None}\n',
        "vllm/entrypoints/__init__.py": "",
        "vllm/entrypoints/llm.py": textwrap.dedent("""
            class Base:
                def generate(self, prompts, sampling_params=None, lora_request=None, use_tqdm=True): ...
            class LLM(Base):
                def __init__(self, model, **kwargs): ...
        """),
        "vllm/entrypoints/router.py": '@router.post("/v1/load_lora_adapter")\ndef load(): ...\n',
        "vllm/entrypoints/args.py": "class FrontendArgs:\n    api_key: str = ''\n",
        "vllm/engine/__init__.py": "",
        "vllm/engine/arg_utils.py": "class EngineArgs:\n    max_loras: int = 1\n    enable_lora: bool = False\n",
        "vllm/lora/__init__.py": "",
        "vllm/lora/request.py": "from dataclasses import dataclass\n@dataclass\nclass LoRARequest:\n    lora_name: str\n",
    }
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return api.Tree(tmp_path)


def uses_of(code: str, where="labs/x.ipynb") -> dict:
    uses: dict = {}
    tree = ast.parse(textwrap.dedent(code))
    api.Collector(uses, where, flags=True, engine_params=api._engine_params(tree)).visit(tree)
    return uses


def test_names_are_collected_from_code():
    uses = uses_of("""
        from vllm import LLM, SamplingParams
        from vllm.lora.request import LoRARequest
        llm = LLM(model="m", enable_lora=True, max_loras=4)
        llm.generate(["hi"], lora_request=[None], use_tqdm=False)
        def drive(engine, x):
            engine.step()
        drive(llm.llm_engine, 1)
        env = {"VLLM_HOST_IP": "127.0.0.1"}
        if k.startswith("VLLM_CPU"): pass
        url = f"http://127.0.0.1:{port}/v1/load_lora_adapter"
        cmd = ["--max-loras", "4"]
        path = "vllm/v1/core/sched/scheduler.py"
    """)
    keys = set(uses)
    assert {("module", "vllm"), ("name", "vllm:LLM"), ("name", "vllm.lora.request:LoRARequest"),
            ("kwarg", "vllm.entrypoints.llm:LLM(enable_lora)"), ("kwarg", "vllm.entrypoints.llm:LLM.generate(lora_request)"),
            ("method", "vllm.v1.engine.llm_engine:LLMEngine.step"), ("env", "VLLM_HOST_IP"),
            ("endpoint", "/v1/load_lora_adapter"), ("flag", "--max-loras")} <= keys
    assert ("env", "VLLM_CPU") not in keys                          # a prefix test, not a variable
    assert not any(k == "endpoint" and "core" in n for k, n in keys)   # a source path, not an endpoint


def test_found_and_missing_in_a_tree(tmp_path):
    tree = fake_tree(tmp_path)
    assert tree.version() == "unknown" or tree.version()
    assert tree.has("name", "vllm:LLM")                                   # through the lazy MODULE_ATTRS table
    assert tree.has("method", "vllm.entrypoints.llm:LLM.generate")       # inherited from a base class
    assert tree.has("kwarg", "vllm.entrypoints.llm:LLM(max_loras)")      # LLM(**kwargs) -> EngineArgs
    assert tree.has("kwarg", "vllm.entrypoints.llm:LLM.generate(use_tqdm)")
    assert tree.has("kwarg", "vllm.lora.request:LoRARequest(lora_name)")  # a dataclass field
    assert tree.has("env", "VLLM_HOST_IP") and tree.has("endpoint", "/v1/load_lora_adapter")
    assert tree.has("flag", "--max-loras") and tree.has("flag", "--api-key")
    for kind, name in [("module", "vllm.lora.nothing"), ("name", "vllm.lora.request:LoRAThing"),
                       ("method", "vllm.entrypoints.llm:LLM.chat_forever"),
                       ("kwarg", "vllm.entrypoints.llm:LLM(max_lora_slots)"), ("env", "VLLM_NOPE"),
                       ("flag", "--max-lora-slots"), ("endpoint", "/v1/teleport")]:
        assert not tree.has(kind, name), (kind, name)


def test_check_reports_missing_and_shown_absent(tmp_path):
    tree = fake_tree(tmp_path)
    uses = uses_of("from vllm import LLM\nLLM(model='m', max_lora_slots=2)\n")
    uses[("name", "vllm.lora.model_manager:LoRAModelManager.max_loras")] = api.Use("name", "x", {"labs/05"})
    rows = {r["name"]: r["status"] for r in api.check(uses, tree)}
    assert rows["vllm.entrypoints.llm:LLM(max_lora_slots)"] == "MISSING"
    assert rows["vllm.lora.model_manager:LoRAModelManager.max_loras"] == "shown absent"
    assert rows["vllm:LLM"] == "found"


@pytest.mark.live
def test_the_installed_vllm_has_every_name_the_course_uses(capsys):
    pytest.importorskip("vllm")
    assert api.main(["--installed"]) == 0, capsys.readouterr().out
