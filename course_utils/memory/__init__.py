"""The memory lessons: what a GPU holds when it serves one base and many adapters.

- :mod:`.model`: the memory model, pure arithmetic over config files (weights,
  adapter sizes, LoRA slot buffers, KV cache, the whole card's plan);
- :mod:`.measure`: the same numbers read out of a live vLLM engine;
- :mod:`.figures`: the layout figure, its tables and the interactive knobs, and
  the course's RTX 4090 figures.

The shapes, dtypes and allowed ranks they share live in :mod:`course_utils.arch`.
``from course_utils import memory`` gives the names below directly
(``memory.plan``, ``memory.lora_buffer_bytes``, ``memory.measure_kv``, ...).
"""

from ..arch import (MAX_LORA_RANKS, PROJECTIONS, Arch, ConfigError, arch, dtype_bytes, load_config,
                    projection_shapes, shipped_configs)
from ..paths import CONFIGS
from .figures import (adapters_on_one_card, check_profile, format_rtx4090_figures, full_finetunes_vs_adapters,
                      lora_vs_full_matrix, rtx4090_figures)
from .measure import (EngineInAnotherProcess, kv_budget, measure_kv, measure_lora_buffer_bytes,
                      measure_lora_buffers, measure_punica_bytes, measure_weight_bytes)
from .model import (DEFAULT_ACTIVATION_GB, DEFAULT_CUDAGRAPH_GB, DEFAULT_NON_TORCH_GB, GPU_BLOCK_SIZE,
                    RTX_4090_BYTES, AdapterSize, GiB, KiB, KVCache, Layout, LoRABuffer, MemoryModelError, MiB,
                    WeightBytes, adapter_bytes, adapter_module_shapes, adapter_params, awq_linear_bytes,
                    check_max_lora_rank, kv_bytes_per_token, kv_cache, kv_page_bytes, lora_buffer_bytes,
                    lora_buffers, parameter_count, plan, punica_metadata_bytes, verify_adapter_size, weight_bytes)

__all__ = [
    "CONFIGS", "DEFAULT_ACTIVATION_GB", "DEFAULT_CUDAGRAPH_GB", "DEFAULT_NON_TORCH_GB", "GPU_BLOCK_SIZE",
    "MAX_LORA_RANKS", "PROJECTIONS", "RTX_4090_BYTES", "AdapterSize", "Arch", "ConfigError", "EngineInAnotherProcess",
    "GiB", "KVCache", "KiB", "Layout", "LoRABuffer", "MemoryModelError", "MiB", "WeightBytes", "adapter_bytes",
    "adapter_module_shapes", "adapter_params", "adapters_on_one_card", "arch", "awq_linear_bytes",
    "check_max_lora_rank", "check_profile", "dtype_bytes", "format_rtx4090_figures",
    "full_finetunes_vs_adapters", "kv_budget", "kv_bytes_per_token", "kv_cache", "kv_page_bytes", "load_config",
    "lora_buffer_bytes", "lora_buffers", "lora_vs_full_matrix", "measure_kv", "measure_lora_buffer_bytes",
    "measure_lora_buffers", "measure_punica_bytes", "measure_weight_bytes", "parameter_count", "plan",
    "projection_shapes", "punica_metadata_bytes", "rtx4090_figures", "shipped_configs", "verify_adapter_size",
    "weight_bytes",
]
