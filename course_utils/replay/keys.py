"""Every replay key, named and built in one place.

A recorded call is found again by its key: a kind (``"generate"``,
``"schedtrace"``, ...) and the arguments that decide its answer, with
machine-specific paths made portable. The helpers build keys only through the
functions below; :class:`course_utils.replay.session.Session` stores and finds
them. The arguments are dicts with named fields, so a reader of a recording
(the self-test) picks fields by name, not by position.

What is *not* in a key: labels that only name a run for display, and engine
settings that change what an engine prints but not what it computes
(:data:`COSMETIC_ENGINE_SETTINGS`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from .portable import portable

# Settings that change what an engine prints, not what it computes: left out of its key.
COSMETIC_ENGINE_SETTINGS = ("use_tqdm_on_load",)
# The SamplingParams fields that make up a sampling key (and that read mode's stand-in accepts).
SAMPLING_FIELDS = ("n", "temperature", "top_p", "top_k", "min_p", "seed", "max_tokens", "min_tokens",
                   "stop", "ignore_eos", "logprobs")

# Facts: values read from the live installation, kept by name for read mode.
FACT_SAMPLING_DEFAULTS = "SamplingParams.defaults"
FACT_LORA_CONFIG_DEFAULTS = "LoRAConfig.defaults"
FACT_VLLM_VERSION = "vllm.__version__"
FACT_INSTALLED_VERSION = "source.vllm_version"


@dataclass(frozen=True)
class Key:
    """One replay key: ``kind`` and the named ``args`` that decide the answer."""

    kind: str
    args: Any
    describe: str = ""  # for error messages only, not part of the key

    @property
    def digest(self) -> str:
        blob = json.dumps(portable(self.args), sort_keys=True, default=repr)
        return f"{self.kind}:{hashlib.sha256(blob.encode()).hexdigest()[:16]}"


# ---------------------------------------------------------------------------
# Pieces: what identifies an engine, an adapter, sampling, prompts
# ---------------------------------------------------------------------------
def engine(settings: dict) -> dict:
    """An engine is known by its settings (``LLM(**settings)``), cosmetic ones left out."""
    return {k: v for k, v in settings.items() if k not in COSMETIC_ENGINE_SETTINGS}


def lora(req):
    """A LoRARequest (or a list of them, or None) as [name, id, path, load_inplace]."""
    if req is None:
        return None
    if isinstance(req, (list, tuple)):
        return [lora(r) for r in req]
    return [req.lora_name, req.lora_int_id, req.lora_path, bool(getattr(req, "load_inplace", False))]


def sampling(sp):
    """SamplingParams (or a list of them) as a dict of :data:`SAMPLING_FIELDS`."""
    if sp is None:
        return None
    if isinstance(sp, (list, tuple)):
        return [sampling(s) for s in sp]
    return {f: getattr(sp, f, None) for f in SAMPLING_FIELDS}


def prompts(p):
    if isinstance(p, (list, tuple)):
        return [prompts(x) for x in p]
    if isinstance(p, dict):
        return dict(p)
    return p


def _first_prompt(p) -> str:
    first = p[0] if isinstance(p, (list, tuple)) and p else p
    return f"first prompt {str(first)[:60]!r}"


# ---------------------------------------------------------------------------
# The keys
# ---------------------------------------------------------------------------
def llm_start(engine_key: dict) -> Key:
    return Key("LLM", engine_key, "engine settings")


def generate(engine_key, prompts_, sampling_params, lora_request) -> Key:
    """One ``llm.generate`` call: the engine, the prompts, the sampling and the adapters."""
    return Key("generate", {"engine": engine_key, "prompts": prompts(prompts_),
                            "sampling": sampling(sampling_params), "lora": lora(lora_request)},
               _first_prompt(prompts_))


def add_lora(engine_key, lora_request) -> Key:
    return Key("add_lora", {"engine": engine_key, "lora": lora(lora_request)}, f"add_lora {lora(lora_request)}")


def engine_call(engine_key, method: str, args: list) -> Key:
    """Another call on ``llm.llm_engine`` whose answer read mode needs (``list_loras``, ``remove_lora``)."""
    return Key("engine_call", {"engine": engine_key, "method": method, "args": list(args)}, f"llm_engine.{method}")


def schedtrace(engine_key, prompts_, sampling_params, lora_requests, label: str = "") -> Key:
    """One step-by-step drive of the engine (the label names the run; it is not part of the key)."""
    return Key("schedtrace", {"engine": engine_key, "prompts": prompts(prompts_),
                              "sampling": sampling(sampling_params), "lora": lora(lora_requests)},
               f"step trace {label!r}")


def measure(engine_key, name: str) -> Key:
    return Key("measure", {"engine": engine_key, "name": name}, name)


def timing(label: str) -> Key:
    return Key("timing", {"label": label}, f"timing {label!r}")


def server_start(label: str, command: str) -> Key:
    return Key("server_start", {"label": label, "command": command}, label)


def shell(label: str, command: str) -> Key:
    return Key("shell", {"label": label, "command": command}, label)


def source(what: str, module: str, name: str, options: Any = None) -> Key:
    """A piece of the installed vLLM's source or metadata (``what``: source, fields, literal, signature)."""
    return Key(what, {"module": module, "name": name, "options": options}, f"{what} of {module}.{name}")


def call(function: str, args: tuple, kwargs: dict) -> Key:
    """A call of a lab function whose result read mode replays (see :func:`course_utils.replay.record.replayable`)."""
    return Key("call", {"function": function, "args": list(args), "kwargs": kwargs}, f"{function}(...)")
