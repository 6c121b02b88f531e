"""The vLLM calls of the labs, recorded live and replayed in read mode.

Live with recording on, :func:`instrument` wraps the real ``vllm.LLM``
(constructor, ``generate``) and ``LLMEngine.add_lora`` so that each call also
goes through :meth:`course_utils.replay.session.Session.run`. In read mode the
package ``course_utils/replay/standins/vllm`` stands in for vLLM: the labs'
``from vllm import LLM, SamplingParams`` and
``from vllm.lora.request import LoRARequest`` import the classes below, which
answer from the recording. The lab code is the same in both modes.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from .session import current

SP_FIELDS = ("n", "temperature", "top_p", "top_k", "min_p", "seed", "max_tokens", "min_tokens",
             "stop", "ignore_eos", "logprobs")


# ---------------------------------------------------------------------------
# Keys and (de)serialisation, shared by both directions
# ---------------------------------------------------------------------------
def sampling_key(sp) -> dict | None:
    if sp is None:
        return None
    if isinstance(sp, (list, tuple)):
        return [sampling_key(s) for s in sp]
    return {f: getattr(sp, f, None) for f in SP_FIELDS}


def lora_key(req):
    if req is None:
        return None
    if isinstance(req, (list, tuple)):
        return [lora_key(r) for r in req]
    return [req.lora_name, req.lora_int_id, req.lora_path, bool(getattr(req, "load_inplace", False))]


def prompts_key(prompts):
    if isinstance(prompts, (list, tuple)):
        return [prompts_key(p) for p in prompts]
    if isinstance(prompts, dict):
        return {k: v for k, v in prompts.items()}
    return prompts


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


def encode_outputs(outs) -> list[dict]:
    return [{"request_id": o.request_id, "prompt": o.prompt,
             "prompt_token_ids": list(o.prompt_token_ids or []),
             "lora": lora_key(o.lora_request),
             "outputs": [{"index": c.index, "text": c.text, "token_ids": list(c.token_ids),
                          "finish_reason": c.finish_reason} for c in o.outputs]}
            for o in outs]


def decode_outputs(data) -> list[RequestOutput]:
    res = []
    for o in data:
        lr = ReplayLoRARequest(*o["lora"][:3]) if o.get("lora") else None
        res.append(RequestOutput(o["request_id"], o["prompt"], o["prompt_token_ids"],
                                 [CompletionOutput(c["index"], c["text"], c["token_ids"], c["finish_reason"],
                                                   lora_request=lr) for c in o["outputs"]],
                                 lora_request=lr))
    return res


# Settings that change what an engine prints, not what it computes: left out of its key.
COSMETIC_KWARGS = ("use_tqdm_on_load",)


def _engine_key(kwargs: dict) -> dict:
    """An engine is known by its settings. Two engines with the same settings share keys; their
    calls are told apart by order (Session.run counts repeats), which also lets a reader re-run a cell."""
    return {k: v for k, v in kwargs.items() if k not in COSMETIC_KWARGS}


def generate_key(engine_key, prompts, sampling_params, lora_request) -> list:
    """The key of one ``llm.generate`` call: the engine, the prompts, the sampling and the adapters."""
    return [engine_key, prompts_key(prompts), sampling_key(sampling_params), lora_key(lora_request)]


def _describe_generate(prompts, lora_request) -> str:
    first = prompts[0] if isinstance(prompts, (list, tuple)) and prompts else prompts
    return f"first prompt {str(first)[:60]!r}"


# ---------------------------------------------------------------------------
# Live: wrap the real classes while recording
# ---------------------------------------------------------------------------
_instrumented = False


def instrument() -> None:
    """Record the real vLLM's LLM(...), llm.generate(...) and llm.llm_engine.add_lora(...)."""
    global _instrumented
    if _instrumented:
        return
    import vllm
    from vllm.v1.engine.llm_engine import LLMEngine

    orig_init, orig_generate, orig_add_lora = vllm.LLM.__init__, vllm.LLM.generate, LLMEngine.add_lora

    @functools.wraps(orig_init)
    def init(self, *args, **kwargs):
        if args:
            kwargs = {"model": args[0], **kwargs}
        key = _engine_key(kwargs)
        current().run("LLM", key, lambda: orig_init(self, **kwargs), encode=lambda _: None)
        self._course_key = key
        self.llm_engine._course_key = key

    @functools.wraps(orig_generate)
    def generate(self, prompts=None, sampling_params=None, *args, **kwargs):
        key = generate_key(getattr(self, "_course_key", None), prompts, sampling_params, kwargs.get("lora_request"))
        return current().run("generate", key, lambda: orig_generate(self, prompts, sampling_params, *args, **kwargs),
                             encode=encode_outputs, describe=_describe_generate(prompts, kwargs.get("lora_request")))

    @functools.wraps(orig_add_lora)
    def add_lora(self, lora_request):
        key = [getattr(self, "_course_key", None), lora_key(lora_request)]
        return current().run("add_lora", key, lambda: orig_add_lora(self, lora_request), encode=bool)

    vllm.LLM.__init__, vllm.LLM.generate, LLMEngine.add_lora = init, generate, add_lora
    _instrumented = True


# ---------------------------------------------------------------------------
# Read mode: stand-ins with the same names and fields
# ---------------------------------------------------------------------------
class ReplayLoRARequest:
    """Same fields, checks and equality (by name) as ``vllm.lora.request.LoRARequest``."""

    def __init__(self, lora_name: str, lora_int_id: int, lora_path: str = "", base_model_name=None,
                 load_inplace: bool = False):
        if lora_int_id < 1:
            raise ValueError(f"id must be > 0, got {lora_int_id}")
        assert lora_path, "lora_path cannot be empty"
        self.lora_name, self.lora_int_id, self.lora_path = lora_name, lora_int_id, lora_path
        self.base_model_name, self.load_inplace = base_model_name, load_inplace

    adapter_id = property(lambda self: self.lora_int_id)
    name = property(lambda self: self.lora_name)
    path = property(lambda self: self.lora_path)

    def __eq__(self, other):
        return isinstance(other, ReplayLoRARequest) and self.lora_name == other.lora_name

    def __hash__(self):
        return hash(self.lora_name)

    def __repr__(self):
        return f"LoRARequest(lora_name={self.lora_name!r}, lora_int_id={self.lora_int_id}, lora_path={self.lora_path!r})"


class ReplaySamplingParams:
    """Holds the arguments; defaults are the installed vLLM's, read when the lab was recorded."""

    def __init__(self, **kwargs):
        defaults = current().fact("SamplingParams.defaults", lambda: None) or {}
        unknown = set(kwargs) - set(SP_FIELDS)
        if unknown:
            raise TypeError(f"read mode records only these SamplingParams fields: {', '.join(SP_FIELDS)} "
                            f"(got {', '.join(sorted(unknown))})")
        for f in SP_FIELDS:
            setattr(self, f, kwargs.get(f, defaults.get(f)))

    def __repr__(self):
        return "SamplingParams(" + ", ".join(f"{f}={getattr(self, f)!r}" for f in SP_FIELDS) + ")"


class _ReplayEngine:
    def __init__(self, key):
        self._course_key = key

    def add_lora(self, lora_request):
        return current().run("add_lora", [self._course_key, lora_key(lora_request)], None)


class ReplayLLM:
    """``vllm.LLM`` in read mode: construction and ``generate`` answer from the recording."""

    def __init__(self, *args, **kwargs):
        if args:
            kwargs = {"model": args[0], **kwargs}
        key = _engine_key(kwargs)
        current().run("LLM", key, None, describe="engine settings")
        self._course_key = key
        self.llm_engine = _ReplayEngine(key)

    def generate(self, prompts=None, sampling_params=None, *args, **kwargs):
        key = generate_key(self._course_key, prompts, sampling_params, kwargs.get("lora_request"))
        return current().run("generate", key, None, decode=decode_outputs,
                             describe=_describe_generate(prompts, kwargs.get("lora_request")))


def record_facts(session) -> None:
    """Facts from the installed vLLM that read mode needs to build its stand-ins."""
    def sp_defaults():
        from vllm import SamplingParams

        return sampling_key(SamplingParams())

    def lora_defaults():
        import dataclasses

        from vllm.config.lora import LoRAConfig

        config = LoRAConfig()  # every field at its default, validated as vLLM does
        return {f.name: getattr(config, f.name) for f in dataclasses.fields(LoRAConfig)
                if isinstance(getattr(config, f.name), (int, float, str, bool, type(None)))}

    def version():
        import vllm

        return vllm.__version__

    session.fact("SamplingParams.defaults", sp_defaults)
    session.fact("LoRAConfig.defaults", lora_defaults)
    session.fact("vllm.__version__", version)
