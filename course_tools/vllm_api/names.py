"""What the checker knows by name: the vLLM classes it follows, the types it assumes, the patterns
that find each kind of name, and the names a lab shows to be absent."""

from __future__ import annotations

import ast
import re

SHOWN_ABSENT = {
    "vllm.lora.model_manager:LoRAModelManager.max_loras":
        "the seed's name; Lab 05 looks it up to show that it is lora_slots in the installed vLLM and in 0.26.0",
}

CLASSES = {  # the vLLM classes whose calls and methods are checked, by the name the code imports
    "LLM": "vllm.entrypoints.llm:LLM",
    "SamplingParams": "vllm.sampling_params:SamplingParams",
    "LoRARequest": "vllm.lora.request:LoRARequest",
    "LoRAConfig": "vllm.config.lora:LoRAConfig",
    "LLMEngine": "vllm.v1.engine.llm_engine:LLMEngine",
}
ENGINE_ARGS = "vllm.engine.arg_utils:EngineArgs"
# The chain an attribute stands for when the code does not show its owner's class (the owner is not typed):
TYPES = {
    # the course's way to an LLM's engine, also on LLMs it does not name llm (`lora.llm_engine`)
    "llm_engine": CLASSES["LLM"] + ".llm_engine",
    # read on the torch model, a class outside vLLM: LoRAModelManager.__init__ sets self.model.lora_manager = self
    "lora_manager": "vllm.lora.model_manager:LoRAModelManager",
    # the LoRA buffers, read on the torch model's modules (model.named_modules()): the LoRA-wrapped linear
    # layers (vllm/lora/layers/base_linear.py) set them in create_lora_weights
    "lora_a_stacked": "vllm.lora.layers.base_linear:BaseLinearLayerWithLoRA.lora_a_stacked",
    "lora_b_stacked": "vllm.lora.layers.base_linear:BaseLinearLayerWithLoRA.lora_b_stacked",
}
ENV = re.compile(r"\bVLLM_[A-Z0-9_]{3,}\b")
# an endpoint in a URL or a path argument ("/v1/models", ":$PORT/v1/...", f"{base}/v1/..."), not a
# source path such as "vllm/v1/core/sched/scheduler.py"
ENDPOINT = re.compile(r"((?<![a-z_./-])/v1/[a-z_]+(?:/[a-z_]+)*|^/health$|^/metrics$)")
FLAG = re.compile(r"^--[a-z][a-z0-9-]+$")
METRIC = re.compile(r"(?<![\w.])vllm:[a-z][a-z0-9_]*")        # vllm:num_requests_running, also inside a pattern
LABEL = re.compile(r"[a-z_][a-z0-9_]*")
SHELL_COMMAND = re.compile(r"(?:\bvllm serve\b|-m vllm\.entrypoints\S*)(.*)")   # a vLLM command line in a shell line
LINK = re.compile(r"\.(\w+)(\?)?(\(\))?|\[\]")                   # .name, .name? (a probe), .name() (a call), []
SEQUENCES = {"list", "List", "tuple", "Tuple", "Sequence", "GenericSequence", "Iterable", "Iterator", "set", "Set"}


def _strs(node) -> list[str]:
    """The string constants in ``node``."""
    return [c.value for c in ast.walk(node) if isinstance(c, ast.Constant) and isinstance(c.value, str)]


def _targets(node) -> list:
    """What an assignment statement assigns to (``x = ...``, ``x: T = ...``); [] for other statements."""
    return node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []


