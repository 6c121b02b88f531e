"""The labs' vLLM calls, recorded from the real vLLM (live side of the record layer).

Live with recording on, :func:`instrument` wraps the real ``vllm.LLM``
(constructor, ``generate``) and ``LLMEngine.add_lora`` so that each call also
goes through :meth:`course_utils.replay.session.Session.run`, keyed by
:mod:`course_utils.replay.keys`. Read mode answers the same calls with the
stand-ins in :mod:`course_utils.replay.standin`; the lab code is the same in
both modes.
"""

from __future__ import annotations

import functools

from .. import chat
from . import keys
from .session import current


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


_instrumented = False


def instrument() -> None:
    """Record the real vLLM's LLM(...), llm.generate(...) and llm.llm_engine's add_lora, list_loras and
    remove_lora."""
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
        engine = keys.engine(kwargs)
        current().run(keys.llm_start(engine), lambda: orig_init(self, **kwargs), encode=lambda _: None)
        self._course_key = engine
        self.llm_engine._course_key = engine

    @functools.wraps(orig_generate)
    def generate(self, prompts=None, sampling_params=None, *args, **kwargs):
        key = keys.generate(getattr(self, "_course_key", None), prompts, sampling_params, kwargs.get("lora_request"))
        return current().run(key, lambda: orig_generate(self, prompts, sampling_params, *args, **kwargs),
                             encode=encode_outputs, note=lambda: user_texts(prompts))

    @functools.wraps(orig_add_lora)
    def add_lora(self, lora_request):
        return current().run(keys.add_lora(getattr(self, "_course_key", None), lora_request),
                             lambda: orig_add_lora(self, lora_request), encode=bool)

    vllm.LLM.__init__, vllm.LLM.generate, LLMEngine.add_lora = init, generate, add_lora

    def recorded(method, encode):
        orig = getattr(LLMEngine, method)

        @functools.wraps(orig)
        def call(self, *args):
            return current().run(keys.engine_call(getattr(self, "_course_key", None), method, args),
                                 lambda: orig(self, *args), encode=encode)
        setattr(LLMEngine, method, call)

    recorded("list_loras", lambda ids: sorted(ids))       # a set of adapter ids
    recorded("remove_lora", bool)
    _instrumented = True


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
