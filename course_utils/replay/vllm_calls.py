"""The labs' vLLM calls, recorded from the real vLLM (live side of the record layer).

Live with recording on, :func:`instrument` wraps the real ``vllm.LLM``
(constructor, ``generate``) and ``LLMEngine``'s adapter methods with
:func:`course_utils.replay.record.recorded`, keyed by :mod:`course_utils.replay.keys`;
the session puts the originals back when it closes. Read mode answers the same calls with the
stand-ins in :mod:`course_utils.replay.standin`; the lab code is the same in
both modes.
"""

from __future__ import annotations

import functools
from typing import Callable

from .. import chat
from . import keys
from .record import recorded


def encode_outputs(outs) -> list[dict]:
    """``llm.generate``'s RequestOutputs as JSON (what :func:`course_utils.replay.standin.decode_outputs` reads)."""
    return [{"request_id": o.request_id, "prompt": o.prompt,
             "prompt_token_ids": list(o.prompt_token_ids or []),
             "lora": keys.lora(o.lora_request),
             "outputs": [{"index": c.index, "text": c.text, "token_ids": list(c.token_ids),
                          "finish_reason": c.finish_reason} for c in o.outputs]}
            for o in outs]


def user_texts(prompts) -> dict:
    """The user message behind each prompt (from :mod:`course_utils.chat`), kept beside the recorded call."""
    items = prompts if isinstance(prompts, (list, tuple)) else [prompts]
    return {"users": [chat.user_text(p) if isinstance(p, str) else None for p in items]}


def _kwargs(args, kwargs) -> dict:
    return {"model": args[0], **kwargs} if args else kwargs


def instrument() -> Callable[[], None]:
    """Record the real vLLM's LLM(...), llm.generate(...) and llm.llm_engine's add_lora, list_loras and
    remove_lora; returns the function that puts the originals back (the session calls it when it closes)."""
    import vllm
    from vllm.v1.engine.llm_engine import LLMEngine

    originals = [(vllm.LLM, "__init__"), (vllm.LLM, "generate"), (LLMEngine, "add_lora"),
                 (LLMEngine, "list_loras"), (LLMEngine, "remove_lora")]
    saved = [(cls, name, getattr(cls, name)) for cls, name in originals]
    orig_init, orig_generate = vllm.LLM.__init__, vllm.LLM.generate

    @recorded(lambda self, engine, kwargs: keys.llm_start(engine), encode=lambda _: None)
    def start_engine(self, engine, kwargs):
        orig_init(self, **kwargs)

    @functools.wraps(orig_init)
    def init(self, *args, **kwargs):
        kwargs = _kwargs(args, kwargs)
        engine = keys.engine(kwargs)
        start_engine(self, engine, kwargs)
        self._course_key = engine
        self.llm_engine._course_key = engine

    @functools.wraps(orig_generate)
    @recorded(lambda self, prompts=None, sampling_params=None, *args, **kwargs: keys.generate(
        getattr(self, "_course_key", None), prompts, sampling_params, kwargs.get("lora_request")),
        encode=encode_outputs, note=lambda self, prompts=None, *args, **kwargs: user_texts(prompts))
    def generate(self, prompts=None, sampling_params=None, *args, **kwargs):
        return orig_generate(self, prompts, sampling_params, *args, **kwargs)

    vllm.LLM.__init__, vllm.LLM.generate = init, generate
    LLMEngine.add_lora = recorded(lambda self, lora_request: keys.add_lora(getattr(self, "_course_key", None),
                                                                          lora_request),
                                  encode=bool)(LLMEngine.add_lora)
    for method, encode in (("list_loras", sorted), ("remove_lora", bool)):     # list_loras: a set of adapter ids
        setattr(LLMEngine, method, recorded(
            lambda self, *args, _m=method: keys.engine_call(getattr(self, "_course_key", None), _m, args),
            encode=encode)(getattr(LLMEngine, method)))

    def undo():
        for cls, name, orig in saved:
            setattr(cls, name, orig)

    return undo


def record_facts(session) -> None:
    """Facts from the installed vLLM that read mode needs to build its stand-ins."""
    def sp_defaults():
        from vllm import SamplingParams

        return keys.sampling(SamplingParams())

    def lora_defaults():
        import dataclasses

        from vllm.config.lora import LoRAConfig

        config = LoRAConfig()  # every field at its default, validated as vLLM does
        return {f.name: getattr(config, f.name) for f in dataclasses.fields(LoRAConfig)
                if isinstance(getattr(config, f.name), (int, float, str, bool, type(None)))}

    def version():
        import vllm

        return vllm.__version__

    session.fact(keys.FACT_SAMPLING_DEFAULTS, sp_defaults)
    session.fact(keys.FACT_LORA_CONFIG_DEFAULTS, lora_defaults)
    session.fact(keys.FACT_VLLM_VERSION, version)
