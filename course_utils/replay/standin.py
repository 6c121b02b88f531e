"""Read mode's stand-ins for the vLLM classes the labs use (no vLLM, no torch).

The package ``course_utils/replay/standins/vllm`` is put in front of
``sys.path`` in read mode, so a lab's ``from vllm import LLM, SamplingParams``
and ``from vllm.lora.request import LoRARequest`` import the classes below.
They answer from the recording, found by the same keys
(:mod:`course_utils.replay.keys`) the live side recorded them under.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import keys
from .record import read_mode_only, recorded
from .session import active


def recorded_fact(name: str):
    """A fact of the vLLM that made the open lab's recording (read when asked, never at import)."""
    session = active()
    if session is None:
        raise RuntimeError(f"{name} in read mode comes from a lab's recording: call course_utils.start('<lab name>') "
                           f"first")
    return session.fact(name, lambda: None)


class LoRARequest:
    """Same fields, checks and equality (by name) as ``vllm.lora.request.LoRARequest``."""

    def __init__(self, lora_name: str, lora_int_id: int, lora_path: str = "", base_model_name=None,
                 load_inplace: bool = False):
        if lora_int_id < 1:
            raise ValueError(f"id must be > 0, got {lora_int_id}")
        if not lora_path:
            raise ValueError("lora_path cannot be empty")
        self.lora_name, self.lora_int_id, self.lora_path = lora_name, lora_int_id, lora_path
        self.base_model_name, self.load_inplace = base_model_name, load_inplace

    adapter_id = property(lambda self: self.lora_int_id)
    name = property(lambda self: self.lora_name)
    path = property(lambda self: self.lora_path)

    def __eq__(self, other):
        return isinstance(other, LoRARequest) and self.lora_name == other.lora_name

    def __hash__(self):
        return hash(self.lora_name)

    def __repr__(self):
        return f"LoRARequest(lora_name={self.lora_name!r}, lora_int_id={self.lora_int_id}, lora_path={self.lora_path!r})"


class SamplingParams:
    """Holds the arguments; defaults are the installed vLLM's, read when the lab was recorded."""

    def __init__(self, **kwargs):
        defaults = recorded_fact(keys.FACT_SAMPLING_DEFAULTS) or {}
        unknown = set(kwargs) - set(keys.SAMPLING_FIELDS)
        if unknown:
            raise TypeError(f"read mode records only these SamplingParams fields: {', '.join(keys.SAMPLING_FIELDS)} "
                            f"(got {', '.join(sorted(unknown))})")
        for f in keys.SAMPLING_FIELDS:
            setattr(self, f, kwargs.get(f, defaults.get(f)))

    def __repr__(self):
        return "SamplingParams(" + ", ".join(f"{f}={getattr(self, f)!r}" for f in keys.SAMPLING_FIELDS) + ")"


@dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: list[int]
    finish_reason: str | None
    cumulative_logprob: float | None = None
    lora_request: object = None


@dataclass
class RequestOutput:
    request_id: str
    prompt: str | None
    prompt_token_ids: list[int] | None
    outputs: list[CompletionOutput] = field(default_factory=list)
    finished: bool = True
    lora_request: object = None


def decode_outputs(data) -> list[RequestOutput]:
    """What :func:`course_utils.replay.vllm_calls.encode_outputs` recorded, as vLLM's output objects."""
    res = []
    for o in data:
        lr = LoRARequest(*o["lora"][:3]) if o.get("lora") else None
        res.append(RequestOutput(o["request_id"], o["prompt"], o["prompt_token_ids"],
                                 [CompletionOutput(c["index"], c["text"], c["token_ids"], c["finish_reason"],
                                                   lora_request=lr) for c in o["outputs"]],
                                 lora_request=lr))
    return res


class LoRAConfig:
    """``vllm.config.lora.LoRAConfig`` in read mode: the fields and defaults the recorded vLLM had."""

    def __init__(self, **kwargs):
        defaults = recorded_fact(keys.FACT_LORA_CONFIG_DEFAULTS) or {}
        unknown = set(kwargs) - set(defaults)
        if unknown:
            raise TypeError(f"LoRAConfig has no field {', '.join(sorted(unknown))} (the recorded vLLM's fields: "
                            f"{', '.join(defaults)})")
        for name, value in {**defaults, **kwargs}.items():
            setattr(self, name, value)


class _Engine:
    def __init__(self, engine_key):
        self._course_key = engine_key

    add_lora = recorded(lambda self, lora_request: keys.add_lora(self._course_key, lora_request))(
        read_mode_only("llm.llm_engine.add_lora"))
    remove_lora = recorded(lambda self, lora_id: keys.engine_call(self._course_key, "remove_lora", [lora_id]))(
        read_mode_only("llm.llm_engine.remove_lora"))
    _list_loras = recorded(lambda self: keys.engine_call(self._course_key, "list_loras", []))(
        read_mode_only("llm.llm_engine.list_loras"))

    def list_loras(self) -> set:
        return set(self._list_loras())


@recorded(lambda engine: keys.llm_start(engine))
def _start_engine(engine):
    read_mode_only("vllm.LLM")()


class LLM:
    """``vllm.LLM`` in read mode: construction and ``generate`` answer from the recording."""

    def __init__(self, *args, **kwargs):
        if args:
            kwargs = {"model": args[0], **kwargs}
        engine = keys.engine(kwargs)
        _start_engine(engine)
        self._course_key = engine
        self.llm_engine = _Engine(engine)

    @recorded(lambda self, prompts=None, sampling_params=None, *args, **kwargs: keys.generate(
        self._course_key, prompts, sampling_params, kwargs.get("lora_request")), decode=decode_outputs)
    def generate(self, prompts=None, sampling_params=None, *args, **kwargs):
        read_mode_only("llm.generate")()

    def reset_prefix_cache(self, *args, **kwargs) -> bool:
        """Nothing is cached in read mode: the recorded outputs already reflect the live call."""
        return True
