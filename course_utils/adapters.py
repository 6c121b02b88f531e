"""Check a LoRA adapter folder before vLLM sees it.

vLLM validates adapters too, but offline a bad adapter passed to
``llm.generate`` can leave the engine broken (see the course notes). This
pre-check reads only JSON and the safetensors header (no torch), so it also
runs in read mode, and names the problem and the fix:

- the folder, ``adapter_config.json`` or the weights file is missing;
- the rank is above ``max_lora_rank`` (and which allowed value would fit);
- ``modules_to_save`` or DoRA, which vLLM refuses;
- weight shapes that do not fit the base model (an adapter for another base).
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass
from pathlib import Path

# The values vLLM's LoRAConfig accepts for max_lora_rank (vllm/config/lora.py,
# MaxLoRARanks). Read from the installed vLLM when it is there.
FALLBACK_ALLOWED_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1,
               "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}


class AdapterError(ValueError):
    """An adapter cannot be served as it is; the message says why and what to do."""


def allowed_max_lora_ranks() -> tuple[int, ...]:
    """The ``max_lora_rank`` values the installed vLLM accepts (its own type annotation)."""
    try:
        import typing

        from vllm.config.lora import MaxLoRARanks  # noqa: PLC0415

        return tuple(typing.get_args(MaxLoRARanks))
    except Exception:  # no vLLM here (read mode) or the name moved
        return FALLBACK_ALLOWED_RANKS


def smallest_rank_that_fits(rank: int, allowed=None) -> int | None:
    allowed = allowed or allowed_max_lora_ranks()
    fits = [r for r in allowed if r >= rank]
    return min(fits) if fits else None


def read_safetensors_header(path: Path) -> dict:
    """Tensor name -> {"dtype", "shape", "bytes"} from a safetensors file's header, without loading it."""
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) < 8:
            raise AdapterError(f"{path} is not a safetensors file (too short); re-save or re-download it.")
        (n,) = struct.unpack("<Q", raw)
        size = path.stat().st_size
        if n > size - 8:
            raise AdapterError(f"{path} is truncated (header says {n} bytes, file has {size}); re-download it.")
        header = json.loads(f.read(n))
    tensors = {}
    end = 0
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        start, stop = meta["data_offsets"]
        end = max(end, stop)
        tensors[name] = {"dtype": meta["dtype"], "shape": meta["shape"], "bytes": stop - start}
    if 8 + n + end > size:
        raise AdapterError(f"{path} is truncated ({size} bytes, tensors need {8 + n + end}); re-download it.")
    return tensors


@dataclass
class AdapterInfo:
    name: str
    path: str
    rank: int
    alpha: float
    target_modules: list[str]
    base_model_name: str
    tensors: dict  # name -> {"dtype", "shape", "bytes"}

    @property
    def weight_bytes(self) -> int:
        return sum(t["bytes"] for t in self.tensors.values())

    @property
    def scaling(self) -> float:
        return self.alpha / self.rank


def read_adapter(path: str | Path, name: str | None = None) -> AdapterInfo:
    """Read an adapter folder's config and weight header; AdapterError if it is not a usable peft LoRA."""
    path = Path(path)
    name = name or path.name
    if not path.is_dir():
        raise AdapterError(f"adapter {name!r}: folder {path} does not exist. Check the path "
                           f"(a LoRARequest needs a local folder with adapter_config.json).")
    cfg_file = path / "adapter_config.json"
    if not cfg_file.is_file():
        raise AdapterError(f"adapter {name!r}: {path} has no adapter_config.json, so it is not a peft "
                           f"LoRA adapter. Point to the folder that peft's save_pretrained wrote.")
    try:
        cfg = json.loads(cfg_file.read_text())
    except ValueError as e:
        raise AdapterError(f"adapter {name!r}: {cfg_file} is not valid JSON ({e}).") from None
    weights = path / "adapter_model.safetensors"
    if not weights.is_file():
        if (path / "adapter_model.bin").is_file():
            raise AdapterError(f"adapter {name!r}: only adapter_model.bin found; re-save it with "
                               f"safe_serialization=True so it can be checked here.")
        raise AdapterError(f"adapter {name!r}: {path} has no adapter_model.safetensors (the weights).")
    if cfg.get("peft_type", "LORA") != "LORA":
        raise AdapterError(f"adapter {name!r}: peft_type is {cfg.get('peft_type')!r}; vLLM serves LoRA only.")
    if cfg.get("use_dora"):
        raise AdapterError(f"adapter {name!r} uses DoRA (use_dora: true), which vLLM does not support; "
                           f"retrain it as plain LoRA or merge it into the base.")
    if cfg.get("modules_to_save"):
        raise AdapterError(f"adapter {name!r} also saves full modules ({cfg['modules_to_save']}); vLLM only "
                           f"supports modules_to_save being None. Retrain without them or merge the adapter.")
    targets = cfg.get("target_modules") or []
    if isinstance(targets, str):
        targets = [targets]
    return AdapterInfo(name=name, path=str(path), rank=int(cfg["r"]), alpha=float(cfg.get("lora_alpha", cfg["r"])),
                       target_modules=sorted(targets), base_model_name=cfg.get("base_model_name_or_path") or "",
                       tensors=read_safetensors_header(weights))


_MODULE_RE = re.compile(r"layers\.(\d+)\..*?(\w+_proj)\.lora_([AB])\.weight$")


def expected_shapes(base_config: dict) -> dict[str, tuple[int, int]]:
    """(out_features, in_features) of every LoRA-able projection of a Qwen2/Llama-style model."""
    h = base_config["hidden_size"]
    heads = base_config["num_attention_heads"]
    kv = base_config.get("num_key_value_heads", heads)
    hd = base_config.get("head_dim") or h // heads
    inter = base_config["intermediate_size"]
    return {"q_proj": (heads * hd, h), "k_proj": (kv * hd, h), "v_proj": (kv * hd, h), "o_proj": (h, heads * hd),
            "gate_proj": (inter, h), "up_proj": (inter, h), "down_proj": (h, inter)}


def check_adapter(path: str | Path, base_model: str | Path | None = None, max_lora_rank: int | None = None,
                  name: str | None = None) -> AdapterInfo:
    """Everything vLLM would object to, checked up front. Returns the AdapterInfo when it fits."""
    info = read_adapter(path, name)
    if max_lora_rank is not None and info.rank > max_lora_rank:
        fit = smallest_rank_that_fits(info.rank)
        raise AdapterError(
            f"adapter {info.name!r} has rank {info.rank}, above max_lora_rank={max_lora_rank}. "
            f"Start the engine with max_lora_rank={fit} (the smallest allowed value >= {info.rank}).")
    if base_model is not None:
        cfg_file = Path(base_model) / "config.json"
        if not cfg_file.is_file():
            raise AdapterError(f"base model folder {base_model} has no config.json.")
        base_cfg = json.loads(cfg_file.read_text())
        shapes = expected_shapes(base_cfg)
        n_layers = base_cfg["num_hidden_layers"]
        for tname, t in info.tensors.items():
            m = _MODULE_RE.search(tname)
            if not m:
                continue
            layer, module, ab = int(m.group(1)), m.group(2), m.group(3)
            if layer >= n_layers:
                raise AdapterError(
                    f"adapter {info.name!r} was made for another base: it has weights for layer {layer}, "
                    f"but the base model ({base_model}) has {n_layers} layers. Use an adapter trained on "
                    f"this base ({base_cfg.get('_name_or_path') or base_model}).")
            if module not in shapes:
                continue
            out_f, in_f = shapes[module]
            want = [info.rank, in_f] if ab == "A" else [out_f, info.rank]
            if list(t["shape"]) != want:
                side = "input" if ab == "A" else "output"
                got = t["shape"][1] if ab == "A" else t["shape"][0]
                need = in_f if ab == "A" else out_f
                raise AdapterError(
                    f"adapter {info.name!r} was made for another base: its {module} lora_{ab} expects "
                    f"{side} size {got}, but this base's {module} has {need} (hidden_size "
                    f"{base_cfg['hidden_size']}). Use an adapter trained on this base "
                    f"(adapter says base_model_name_or_path={info.base_model_name!r}).")
    return info
