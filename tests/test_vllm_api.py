"""The vLLM API check: names are collected from code, found or reported missing in a source tree.

The source tree here is a small fake vLLM written under tmp_path (the real layout, a few classes each),
so these tests need neither vLLM nor the 300 MB wheel; one test checks the real course against the
real 0.26.0 source when ``build/vllm-0.26.0/src`` is there.
"""

from __future__ import annotations

import ast
import json
import textwrap
import zipfile

import pytest

from course_tools import vllm_api as api
from course_tools.vllm_api import cli

FAKE_VLLM = {
    "vllm/__init__.py": 'MODULE_ATTRS = {"LLM": ".entrypoints.llm:LLM", "SamplingParams": ".sampling_params:SamplingParams"}\n',
    "vllm/_version.py": '__version__ = "9.9.9"\n',
    "vllm/envs.py": """
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            VLLM_HOST_IP: str = ""
        environment_variables = {"VLLM_API_KEY": lambda: None}
        def validate():
            raise ValueError("VLLM_NOT_A_VARIABLE is only named in a message")
    """,
    "vllm/outputs.py": """
        class CompletionOutput:
            text: str
            token_ids: list[int]
        class RequestOutput:
            def __init__(self, request_id: str, prompt_token_ids: list[int] | None, outputs: list[CompletionOutput]):
                self.request_id = request_id
                self.prompt_token_ids = prompt_token_ids
                self.outputs = outputs
                self.note = "waiting_lora_adapters"   # a label-like string outside the metric files
        class PoolingRequestOutput:
            request_id: str
    """,
    "vllm/sampling_params.py": "class SamplingParams:\n    temperature: float = 1.0\n    max_tokens: int = 16\n",
    "vllm/entrypoints/__init__.py": "",
    "vllm/entrypoints/llm.py": """
        from vllm.outputs import RequestOutput
        from vllm.v1.engine.llm_engine import LLMEngine
        class Base:
            def generate(self, prompts, sampling_params=None, lora_request=None, use_tqdm=True) -> list[RequestOutput]: ...
        class LLM(Base):
            def __init__(self, model, **kwargs):
                self.llm_engine = LLMEngine.from_engine_args(kwargs)
    """,
    "vllm/entrypoints/openai/__init__.py": "",
    "vllm/entrypoints/openai/cli_args.py": "class FrontendArgs:\n    port: int = 8000\n    api_key: str = ''\n",
    "vllm/entrypoints/openai/api_server.py": """
        @router.post("/v1/load_lora_adapter")
        def load(): ...
        @router.get("/health")
        def health(): ...
    """,
    "vllm/v1/__init__.py": "",
    "vllm/v1/engine/__init__.py": "",
    "vllm/v1/engine/llm_engine.py": """
        from typing import TYPE_CHECKING
        from vllm.outputs import PoolingRequestOutput, RequestOutput
        if TYPE_CHECKING:
            from vllm.config import VllmConfig
        class LLMEngine:
            def __init__(self, vllm_config: "VllmConfig"):
                self.vllm_config = vllm_config
            @classmethod
            def from_engine_args(cls, engine_args) -> "LLMEngine": ...
            def add_lora(self, lora_request) -> bool: ...
            def step(self) -> list[RequestOutput | PoolingRequestOutput]: ...
    """,
    "vllm/v1/metrics/__init__.py": "",
    "vllm/v1/metrics/loggers.py": """
        class PrometheusStatLogger:
            def __init__(self, vllm_config):
                labelnames = ["model_name", "engine"]
                self.gauge_running = Gauge(name="vllm:num_requests_running", labelnames=labelnames)
                self.labelname_running_lora_adapters = "running_lora_adapters"
                self.gauge_lora_info = Gauge(name="vllm:lora_requests_info",
                                             labelnames=[self.labelname_running_lora_adapters])
    """,
    "vllm/config/__init__.py": "from vllm.config.vllm import VllmConfig\n",
    "vllm/config/vllm.py": """
        from dataclasses import field
        from vllm.config.cache import CacheConfig
        class VllmConfig:
            cache_config: CacheConfig = field(default_factory=CacheConfig)
    """,
    "vllm/config/cache.py": "class CacheConfig:\n    block_size: int = 16\n    num_gpu_blocks: int | None = None\n",
    "vllm/config/lora.py": "class LoRAConfig:\n    max_loras: int = 1\n    max_lora_rank: int = 16\n",
    "vllm/engine/__init__.py": "",
    "vllm/engine/arg_utils.py": """
        from dataclasses import dataclass
        @dataclass
        class EngineArgs:
            model: str = ""
            enable_lora: bool = False
            max_loras: int = 1
            max_lora_rank: int = 16
    """,
    "vllm/lora/__init__.py": "",
    "vllm/lora/request.py": """
        from dataclasses import dataclass
        @dataclass
        class LoRARequest:
            lora_name: str
            lora_int_id: int
            lora_path: str = ""
    """,
    "vllm/lora/model_manager.py": """
        class LoRAModelManager:
            def __init__(self, model):
                self.model = model
                self.model.lora_manager = self
                self.punica_wrapper_mapping: dict[str, object] = {}
    """,
    "vllm/lora/layers/__init__.py": "",
    "vllm/lora/layers/base_linear.py": """
        class BaseLinearLayerWithLoRA:
            def create_lora_weights(self, max_loras):
                self.lora_a_stacked = tuple()
                self.lora_b_stacked = tuple()
    """,
}


def write(root, files: dict):
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return root


def fake_tree(tmp_path):
    return api.Tree(write(tmp_path / "site", FAKE_VLLM))


def notebook(*cells: str) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                                  "source": textwrap.dedent(c)} for c in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


# A course that uses the fake vLLM, with one wrong name of each kind planted ("# planted").
FAKE_COURSE = {
    "course_utils/__init__.py": "",
    "course_utils/serving.py": """
        import re
        import subprocess

        CPU_ENTRYPOINT = "vllm.entrypoints.openai.api_server"
        _INFO = re.compile(r'^vllm:lora_requests_info\\{([^}]*)\\}')

        def argv(port):
            return ["python", "-m", CPU_ENTRYPOINT, "--port", str(port), "--max-lora-slots", "4"]   # planted

        def adapters(text):
            for labels in _INFO.findall(text):
                lab = dict(x.split("=") for x in labels.split(","))
                yield lab.get("running_lora_adapters"), lab.get("running_lora_adapterz")               # planted

        def busy(text):
            return "vllm:num_requests_running" in text or "vllm:num_requests_wating" in text          # planted

        def tools(p, port):
            p.add_argument("--profile")                                       # the course's own CLI
            subprocess.run(["jupyter", "nbconvert", "--to", "notebook", "--execute", "x.ipynb"])
            urls = [f"http://127.0.0.1:{port}/v1/load_lora_adapter", f"http://127.0.0.1:{port}/v1/teleport"]  # planted
            env = {"VLLM_HOST_IP": "127.0.0.1", "VLLM_API_KEY": "k", "VLLM_NOPE": "1"}                # planted
            return urls, env

        def kv(llm):
            cc = llm.llm_engine.vllm_config.cache_config
            return cc.num_gpu_blocks, cc.block_size, cc.num_gpu_blokcs                                # planted

        def buffers(model):
            manager = getattr(model, "lora_manager", None)
            for name, mod in model.named_modules():
                for attr in ("lora_a_stacked", "lora_b_stacked"):
                    getattr(mod, attr, None)
            return manager.punica_wrapper_mapping.values()
    """,
    "labs/01_fake.ipynb": notebook(
        """
        import vllm.lora.nothing                                   # planted
        from vllm import LLM, SamplingParams
        from vllm.lora.request import LoRARequest, LoRAReqest      # planted
        """,
        """
        llm = LLM(model="m", enable_lora=True, max_lora_slots=2)   # planted
        outs = llm.generate(["hi"], SamplingParams(temperature=0), lora_request=LoRARequest("a", 1, "/p"), use_tqdm=False)
        for i, o in enumerate(outs):
            print(o.outputs[0].text, o.prompt_token_ids)
        !vllm serve m --enable-lora --max-loras 2
        """),
    "autodl/setup.sh": """
        # vllm serve --a-comment-not-a-command
        pip install --upgrade vllm
        vllm serve "$BASE" \\
            --max-lora-rank 64
    """,
}

PLANTED = {
    ("module", "vllm.lora.nothing"),
    ("name", "vllm.lora.request:LoRAReqest"),
    ("kwarg", "vllm.entrypoints.llm:LLM(max_lora_slots)"),
    ("attr", "vllm.entrypoints.llm:LLM.llm_engine.vllm_config.cache_config.num_gpu_blokcs"),
    ("metric", "vllm:num_requests_wating"),
    ("label", "running_lora_adapterz"),
    ("flag", "--max-lora-slots"),
    ("env", "VLLM_NOPE"),
    ("endpoint", "/v1/teleport"),
}


def uses_of(code: str, where="labs/x.ipynb") -> dict:
    uses: dict = {}
    tree = ast.parse(textwrap.dedent(code))
    api.Collector(uses, where, tree).visit(tree)
    return uses


def test_names_are_collected_from_code():
    uses = uses_of("""
        from vllm import LLM, SamplingParams
        from vllm.lora.request import LoRARequest
        llm = LLM(model="m", enable_lora=True, max_loras=4)
        llm.generate(["hi"], lora_request=[None], use_tqdm=False)
        def drive(engine, x):
            for out in engine.step():
                out.outputs[0].token_ids
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
            ("endpoint", "/v1/load_lora_adapter"),
            ("attr", "vllm.v1.engine.llm_engine:LLMEngine.step()[].outputs[].token_ids")} <= keys
    assert ("env", "VLLM_CPU") not in keys                          # a prefix test, not a variable
    assert not any(k == "endpoint" and "core" in n for k, n in keys)   # a source path, not an endpoint
    assert not any(k == "flag" for k, n in keys)                     # a list of strings, not a vLLM command line


def test_attribute_chains_follow_names_loops_and_probes():
    uses = uses_of("""
        from vllm.config.lora import LoRAConfig
        defaults = LoRAConfig()
        defaults.max_loras
        eng = getattr(llm, "llm_engine", llm)
        eng.vllm_config.cache_config.block_size
        outs = llm_b.generate(prompts)
        for p, o in zip(prompts, outs):
            o.outputs[0].text
        [o.request_id for o in outs[1:3]]
        outs = something_else()
        outs[0].outputs
    """)
    chains = {n for k, n in api.drop_prefixes(uses) if k == "attr"}
    assert chains == {"vllm.config.lora:LoRAConfig.max_loras",
                      "vllm.entrypoints.llm:LLM.llm_engine?.vllm_config.cache_config.block_size",
                      "vllm.entrypoints.llm:LLM.generate()[].outputs[].text",
                      "vllm.entrypoints.llm:LLM.generate()[].request_id"}   # a slice is still the list; a new value drops the type


def test_shell_flags_are_those_of_vllm_command_lines():
    text = 'pip install --upgrade vllm\n# vllm serve --commented\nvllm serve "$B" \\\n  --max-loras 2 --enable-lora\n' \
           "python -m vllm.entrypoints.openai.api_server --model m --port 1\njupyter lab --port 2\n"
    assert api.shell_flags(text) == ["--max-loras", "--enable-lora", "--model", "--port"]


def test_found_and_missing_in_a_tree(tmp_path):
    tree = fake_tree(tmp_path)
    assert tree.version() == "9.9.9"
    assert tree.has("name", "vllm:LLM")                                   # through the lazy MODULE_ATTRS table
    assert tree.has("method", "vllm.entrypoints.llm:LLM.generate")       # inherited from a base class
    assert tree.has("kwarg", "vllm.entrypoints.llm:LLM(max_loras)")      # LLM(**kwargs) -> EngineArgs
    assert tree.has("kwarg", "vllm.entrypoints.llm:LLM.generate(use_tqdm)")
    assert tree.has("kwarg", "vllm.lora.request:LoRARequest(lora_name)")  # a dataclass field
    assert tree.has("env", "VLLM_HOST_IP") and tree.has("env", "VLLM_API_KEY")
    assert tree.has("endpoint", "/v1/load_lora_adapter") and tree.has("endpoint", "/health")
    assert tree.has("flag", "--max-loras") and tree.has("flag", "--api-key")
    assert tree.has("metric", "vllm:lora_requests_info") and tree.has("label", "running_lora_adapters")
    assert tree.has("label", "engine")
    # a chain through a classmethod's return annotation, a TYPE_CHECKING import, a re-export and a field
    assert tree.has("attr", "vllm.entrypoints.llm:LLM.llm_engine.vllm_config.cache_config.num_gpu_blocks")
    # the first member of a union, an element of a list, a `self.x = param` typed by the parameter
    assert tree.has("attr", "vllm.v1.engine.llm_engine:LLMEngine.step()[].outputs[].token_ids")
    assert tree.has("attr", "vllm.entrypoints.llm:LLM.generate()[].outputs[].text.strip()")   # str: not vLLM's
    assert tree.has("attr", "vllm.entrypoints.llm:LLM.llm_engine.nothing?.more")   # a probe the class lacks
    for kind, name in [("module", "vllm.lora.nothing"), ("name", "vllm.lora.request:LoRAThing"),
                       ("method", "vllm.entrypoints.llm:LLM.chat_forever"),
                       ("kwarg", "vllm.entrypoints.llm:LLM(max_lora_slots)"), ("env", "VLLM_NOPE"),
                       ("env", "VLLM_NOT_A_VARIABLE"),            # in envs.py's text, not among its names
                       ("flag", "--max-lora-slots"), ("endpoint", "/v1/teleport"),
                       ("metric", "vllm:num_requests_wating"), ("label", "waiting_lora_adapters"),
                       ("attr", "vllm.entrypoints.llm:LLM.generate()[].outputs[].txt"),
                       ("attr", "vllm.v1.engine.llm_engine:LLMEngine.vllm_config.cache_config.num_gpu_blokcs"),
                       ("attr", "vllm.lora.model_manager:LoRAModelManager.model.x")]:   # model: untyped, then .x
        assert not tree.has(kind, name), (kind, name)
    assert tree.chain_problem("vllm.lora.model_manager:LoRAModelManager.model.x") == \
        "no annotation says what LoRAModelManager.model holds"


def test_each_planted_wrong_name_is_reported_missing(tmp_path):
    tree = fake_tree(tmp_path)
    uses = api.collect_code(write(tmp_path / "course", FAKE_COURSE))
    rows = api.compare(uses, tree)
    missing = {(r["kind"], r["name"]) for r in rows if r["status"] == "MISSING"}
    assert missing == PLANTED
    found = {(r["kind"], r["name"]) for r in rows if r["status"] == "found"}
    assert {("module", "vllm.lora.request"), ("name", "vllm.lora.request:LoRARequest"),
            ("kwarg", "vllm.entrypoints.llm:LLM(enable_lora)"),
            ("attr", "vllm.entrypoints.llm:LLM.llm_engine.vllm_config.cache_config.num_gpu_blocks"),
            ("attr", "vllm.entrypoints.llm:LLM.generate()[].outputs[].text"),
            ("attr", "vllm.lora.model_manager:LoRAModelManager.punica_wrapper_mapping.values()"),
            ("attr", "vllm.lora.layers.base_linear:BaseLinearLayerWithLoRA.lora_a_stacked"),
            ("metric", "vllm:lora_requests_info"), ("label", "running_lora_adapters"),
            ("flag", "--port"), ("flag", "--enable-lora"), ("flag", "--max-lora-rank"),
            ("env", "VLLM_HOST_IP"), ("endpoint", "/v1/load_lora_adapter")} <= found
    flags = {n for k, n in uses if k == "flag"}      # vLLM's only: not argparse's, jupyter's, pip's or a comment's
    assert flags == {"--port", "--max-lora-slots", "--enable-lora", "--max-loras", "--max-lora-rank"}


def test_check_reports_missing_and_shown_absent(tmp_path):
    tree = fake_tree(tmp_path)
    uses = uses_of("from vllm import LLM\nLLM(model='m', max_lora_slots=2)\n")
    uses[("name", "vllm.lora.model_manager:LoRAModelManager.max_loras")] = api.Use("name", "x", {"labs/05"})
    rows = {r["name"]: r["status"] for r in api.compare(uses, tree)}
    assert rows["vllm.entrypoints.llm:LLM(max_lora_slots)"] == "MISSING"
    assert rows["vllm.lora.model_manager:LoRAModelManager.max_loras"] == "shown absent"
    assert rows["vllm:LLM"] == "found"


@pytest.mark.parametrize("error", [RuntimeError("could not download vllm==0.0.1: no network"),
                                   zipfile.BadZipFile("File is not a zip file")])
def test_require_makes_a_missing_source_tree_fail(monkeypatch, capsys, error):
    def unavailable(version):
        raise error

    monkeypatch.setattr(cli, "wheel_source", unavailable)     # where main() looks it up
    assert api.main(["--wheel", "0.0.1"]) == 0
    assert "skipped" in capsys.readouterr().out
    assert api.main(["--wheel", "0.0.1", "--require"]) == 1
    assert "FAILED" in capsys.readouterr().err


def test_a_broken_wheel_leaves_no_half_tree(tmp_path):
    folder = tmp_path / "vllm-0.0.1"
    folder.mkdir()
    (folder / "vllm-0.0.1-py3-none-any.whl").write_text("not a zip")
    with pytest.raises(zipfile.BadZipFile):
        api.wheel_source("0.0.1", cache=tmp_path)
    assert not (folder / "src").exists()


def test_the_course_has_every_name_in_the_0_26_0_wheel(capsys):
    src = api.REPO / "build" / "vllm-0.26.0" / "src"
    if not (src / "vllm" / "__init__.py").is_file():
        pytest.skip(f"no vllm 0.26.0 source at {src} (make check-vllm-api fetches it)")
    assert api.main(["--root", str(src)]) == 0, capsys.readouterr().out


@pytest.mark.live
def test_the_installed_vllm_has_every_name_the_course_uses(capsys):
    assert api.main(["--installed"]) == 0, capsys.readouterr().out
