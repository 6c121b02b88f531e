"""Check a LoRA adapter folder before vLLM sees it.

vLLM validates adapters too, but offline a bad adapter passed to
``llm.generate`` can leave the engine broken (see the course notes). This
pre-check reads only JSON and the safetensors header (no torch), so it also
runs in read mode, and names the problem and the fix.

:func:`read_adapter` checks the folder on its own:

- the folder, ``adapter_config.json`` or the weights file is missing, the
  config is not JSON or has no valid ``r``;
- ``modules_to_save`` or DoRA, which vLLM refuses;
- the weights disagree with the config: a module's rank is not the config's
  ``r`` (or its ``rank_pattern`` entry), ``lora_A`` and ``lora_B`` of one
  module disagree, weights for a module ``target_modules`` does not list, or
  no LoRA tensors at all.

:func:`check_adapter` adds what needs the engine and the base:

- the rank is above ``max_lora_rank`` (and which allowed value would fit);
- weights for a layer the base does not have, or shapes that do not fit the
  base model (an adapter for another base);
- an adapter trained on another base *of the same shapes*, which no shape
  check catches: the adapter records the fingerprint of its base
  (:func:`write_base_identity`, ``base_fingerprint.json``) and it must match
  the base it is served on.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import struct
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .arch import (MAX_LORA_RANKS, PROJECTIONS, ConfigError, arch, load_config, projection_shapes,
                   smallest_rank_that_fits)


class AdapterError(ValueError):
    """An adapter cannot be served as it is; the message says why and what to do."""


def _safetensors_header(path: Path) -> tuple[dict, int]:
    """The raw header of a safetensors file and where its data starts; AdapterError if it is damaged."""
    path = Path(path)
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) < 8:
            raise AdapterError(f"{path} is not a safetensors file (too short); re-save or re-download it.")
        (n,) = struct.unpack("<Q", raw)
        size = path.stat().st_size
        if n > size - 8:
            raise AdapterError(f"{path} is truncated (header says {n} bytes, file has {size}); re-download it.")
        try:
            header = json.loads(f.read(n))
        except ValueError as e:
            raise AdapterError(f"{path} has a damaged safetensors header ({type(e).__name__}: {e}); "
                               f"re-save or re-download it.") from None
    return header, 8 + n


def read_safetensors_header(path: Path) -> dict:
    """Tensor name -> {"dtype", "shape", "bytes"} from a safetensors file's header, without loading it."""
    path = Path(path)
    header, data_start = _safetensors_header(path)
    try:
        tensors, end = {}, 0
        for name, meta in header.items():
            if name == "__metadata__":
                continue
            start, stop = meta["data_offsets"]
            end = max(end, stop)
            tensors[name] = {"dtype": meta["dtype"], "shape": list(meta["shape"]), "bytes": stop - start}
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise AdapterError(f"{path} has a damaged safetensors header ({type(e).__name__}: {e}); "
                           f"re-save or re-download it.") from None
    size = path.stat().st_size
    if data_start + end > size:
        raise AdapterError(f"{path} is truncated ({size} bytes, tensors need {data_start + end}); re-download it.")
    return tensors


# --------------------------------------------------------------------------
# The base an adapter was trained on: a fingerprint of its weights
# --------------------------------------------------------------------------

BASE_IDENTITY_FILE = "base_fingerprint.json"   # written beside adapter_config.json at training time
_FINGERPRINT_BYTES = 1 << 16                   # the first 64 KiB of every tensor


def _weight_files(base_dir: Path) -> list[Path]:
    index = base_dir / "model.safetensors.index.json"
    if index.is_file():
        return [base_dir / f for f in sorted(set(json.loads(index.read_text())["weight_map"].values()))]
    return sorted(base_dir.glob("*.safetensors"))


def base_fingerprint(base_dir: str | Path) -> str:
    """A fingerprint of a base checkpoint's weights, read without torch and fast for a 7B model.

    sha256 over every tensor's name, dtype, shape and the first 64 KiB of its data, in name order.
    Two bases with the same shapes (another seed, another fine-tune, base vs instruct) differ in it;
    so does the same model saved in another dtype (a different file, not necessarily a different model).
    Computed once per set of weight files (their size and modification time), however many adapters
    are checked against the base.
    """
    base_dir = Path(base_dir)
    files = _weight_files(base_dir)
    if not files:
        raise AdapterError(f"base model folder {base_dir} has no *.safetensors weights to fingerprint.")
    return _fingerprint(tuple((str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns) for p in files))


@functools.lru_cache(maxsize=8)
def _fingerprint(files: tuple) -> str:
    entries = []
    for path, _, _ in files:
        header, data_start = _safetensors_header(Path(path))
        with open(path, "rb") as f:
            for name, meta in header.items():
                if name == "__metadata__":
                    continue
                start, stop = meta["data_offsets"]
                f.seek(data_start + start)
                entries.append((name, meta["dtype"], meta["shape"], f.read(min(stop - start, _FINGERPRINT_BYTES))))
    digest = hashlib.sha256()
    for name, dtype, shape, data in sorted(entries, key=lambda e: e[0]):
        digest.update(f"{name}|{dtype}|{shape}|".encode())
        digest.update(data)
    return "sha256:" + digest.hexdigest()[:32]


def _storage(base_dir: Path) -> dict:
    """How a base checkpoint is stored: its dtype and quantization method (from config.json)."""
    try:
        cfg = json.loads((Path(base_dir) / "config.json").read_text())
    except (OSError, ValueError):
        cfg = {}
    quant = cfg.get("quantization_config") or {}
    return {"dtype": cfg.get("dtype") or cfg.get("torch_dtype"), "quantization": quant.get("quant_method")}


def write_base_identity(adapter_dir: str | Path, base_dir: str | Path, base_name: str) -> dict:
    """Record, beside a freshly trained adapter, which base it was trained on: name, storage, fingerprint.

    ``base_fingerprint.json`` is this course's convention; peft and vLLM neither write nor read it.
    """
    identity = {"base_model_name": base_name, "base_fingerprint": base_fingerprint(base_dir),
                "base_storage": _storage(Path(base_dir)),
                "how": "course_utils.adapters.base_fingerprint: sha256 of each tensor's name, dtype, shape and "
                       "first 64 KiB, truncated to 128 bits"}
    (Path(adapter_dir) / BASE_IDENTITY_FILE).write_text(json.dumps(identity, indent=2, sort_keys=True) + "\n")
    return identity


def _check_same_base(info: AdapterInfo, base_model: Path) -> str:
    """AdapterError when the adapter records another base's fingerprint; else how far the base was checked."""
    file = Path(info.path) / BASE_IDENTITY_FILE
    if not file.is_file():
        return (f"not checked: the adapter records no base fingerprint ({BASE_IDENTITY_FILE}); its config names "
                f"base_model_name_or_path={info.base_model_name!r}, compare it with the base you serve")
    recorded = json.loads(file.read_text())
    stored, here_stored = recorded.get("base_storage"), _storage(base_model)
    if stored is not None and stored != here_stored:     # e.g. trained on the bf16 base, served on its AWQ copy
        return (f"not checked: the adapter was trained on a base stored as {stored}, this base is stored as "
                f"{here_stored}; the fingerprint only compares identical files. Its base was "
                f"{recorded.get('base_model_name')!r}")
    here = base_fingerprint(base_model)
    if recorded.get("base_fingerprint") != here:
        raise AdapterError(
            f"adapter {info.name!r} was trained on another base: it records base "
            f"{recorded.get('base_model_name')!r} with fingerprint {recorded.get('base_fingerprint')}, but the "
            f"base you gave (folder {base_model.name!r}, stored the same way) has {here}. The shapes match, so "
            f"vLLM would load it without an error and answer wrongly. Use the adapter trained on this base, or "
            f"retrain it on this base.")
    return f"same base: fingerprint {here} matches"


# --------------------------------------------------------------------------
# peft's rules: which modules an adapter_config targets, and at which rank
# --------------------------------------------------------------------------

def _pattern_value(patterns: dict | None, module: str):
    """peft's get_pattern_key (and vLLM's PEFTHelper): a key matches a suffix of the module name
    at a "." boundary; the first match wins. (key, value), or None."""
    for key, value in (patterns or {}).items():
        if re.match(rf"(.*\.)?({key})$", module):
            return key, value
    return None


def module_rank(adapter_config: dict, module: str) -> int:
    """The rank peft gave ``module`` (e.g. ``model.layers.0.self_attn.q_proj``): its rank_pattern
    entry, else ``r``."""
    hit = _pattern_value(adapter_config.get("rank_pattern"), module)
    return int(hit[1]) if hit else int(adapter_config["r"])


def max_rank(adapter_config: dict) -> int:
    """The rank vLLM compares with max_lora_rank (PEFTHelper.validate_legal): the largest of ``r``
    and the rank_pattern values."""
    return max([int(adapter_config["r"]), *(adapter_config.get("rank_pattern") or {}).values()])


def _layer_of(module: str) -> int | None:
    m = re.search(r"\blayers\.(\d+)\.", module)
    return int(m.group(1)) if m else None


def targets_module(adapter_config: dict, module: str) -> bool:
    """Whether peft adapts ``module`` under this config: target_modules (a list of names or name
    suffixes, 'all-linear', or a regex over the whole name), exclude_modules, layers_to_transform."""
    exclude = adapter_config.get("exclude_modules")
    if isinstance(exclude, str) and re.fullmatch(exclude, module):
        return False
    if isinstance(exclude, (list, tuple)) and any(module == e or module.endswith("." + e) for e in exclude):
        return False
    targets = adapter_config.get("target_modules") or []
    if targets == "all-linear":
        targets = PROJECTIONS
    if isinstance(targets, str):
        return bool(re.fullmatch(targets, module))
    if not any(module == t or module.endswith("." + t) for t in targets):
        return False
    layers = adapter_config.get("layers_to_transform")
    if layers is None or _layer_of(module) is None:
        return True
    return _layer_of(module) in ([layers] if isinstance(layers, int) else layers)


# --------------------------------------------------------------------------
# Reading an adapter folder
# --------------------------------------------------------------------------

_LORA_TENSOR = re.compile(r"^(?:base_model\.model\.)?(?P<module>.+)\.lora_(?:embedding_)?(?P<ab>[AB])(?:\.weight)?$")


@dataclass
class AdapterInfo:
    name: str
    path: str
    rank: int
    alpha: float
    target_modules: list[str]
    base_model_name: str
    tensors: dict  # name -> {"dtype", "shape", "bytes"}
    config: dict = field(default_factory=dict)  # adapter_config.json
    modules: dict = field(default_factory=dict)  # module name -> {"A": tensor name, "B": tensor name}
    base_check: str = ""  # check_adapter: whether the base it was trained on is the one given

    @property
    def weight_bytes(self) -> int:
        return sum(t["bytes"] for t in self.tensors.values())

    @property
    def scaling(self) -> float:
        return self.alpha / self.rank



def _positive_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _read_config(cfg_file: Path, name: str) -> dict:
    try:
        cfg = json.loads(cfg_file.read_text())
    except ValueError as e:
        raise AdapterError(f"adapter {name!r}: {cfg_file} is not valid JSON ({e}). Restore the "
                           f"adapter_config.json that peft's save_pretrained wrote with the weights.") from None
    if not isinstance(cfg, dict):
        raise AdapterError(f"adapter {name!r}: {cfg_file} holds a JSON {type(cfg).__name__}, not an object. "
                           f"Restore the adapter_config.json that peft's save_pretrained wrote.")
    if not _positive_int(cfg.get("r")):
        what = f"has \"r\": {json.dumps(cfg['r'])}" if "r" in cfg else "has no \"r\""
        raise AdapterError(f"adapter {name!r}: {cfg_file} {what}; the LoRA rank must be a positive integer "
                           f"(peft always writes it). Restore the adapter_config.json saved with the weights, or "
                           f"set \"r\" to the rank of the weights (the rows of each lora_A).")
    missing = [k for k in ("lora_alpha", "target_modules") if cfg.get(k) is None]
    if missing:
        raise AdapterError(f"adapter {name!r}: {cfg_file} has no {' and no '.join(missing)}, which vLLM requires "
                           f"(its PEFTHelper refuses the adapter without them). Restore the adapter_config.json "
                           f"that peft's save_pretrained wrote with the weights.")
    if not _number(cfg["lora_alpha"]):
        raise AdapterError(f"adapter {name!r}: {cfg_file} has \"lora_alpha\": {json.dumps(cfg['lora_alpha'])}; "
                           f"it must be a number (the scaling is lora_alpha / r). Restore the file peft wrote.")
    for key, want, ok in (("rank_pattern", "positive integer ranks", _positive_int),
                          ("alpha_pattern", "numbers", _number)):
        pattern = cfg.get(key) or {}
        bad = {k: v for k, v in pattern.items() if not ok(v)} if isinstance(pattern, dict) else pattern
        if bad:
            raise AdapterError(f"adapter {name!r}: {key} in adapter_config.json must map module names to {want}, "
                               f"not {json.dumps(bad)}. Fix those entries or restore the file peft wrote.")
    return cfg


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _more(n: int, noun: str) -> str:
    return f" (and {_count(n, 'more ' + noun)})" if n else ""


def _lora_modules(name: str, tensors: dict, weights: Path) -> dict[str, dict[str, str]]:
    """module -> {"A": tensor name, "B": tensor name}; AdapterError when there are none or a half is missing."""
    modules: dict[str, dict[str, str]] = {}
    for tname in tensors:
        m = _LORA_TENSOR.match(tname)
        if m:
            if len(tensors[tname]["shape"]) != 2:
                raise AdapterError(f"adapter {name!r}: {tname} in {weights} has shape {tensors[tname]['shape']}, "
                                   f"but a LoRA matrix is 2-D. The file is damaged: re-save or re-download it.")
            modules.setdefault(m.group("module"), {})[m.group("ab")] = tname
    if not modules:
        found = f"it has {_count(len(tensors), 'tensor')}" + (f", e.g. {', '.join(map(repr, list(tensors)[:3]))}"
                                                              if tensors else "")
        raise AdapterError(f"adapter {name!r}: {weights} holds no LoRA weights (no tensor named "
                           f"'...lora_A.weight' / '...lora_B.weight'; {found}). It is "
                           f"not a peft LoRA save (full or merged model weights?): point to the folder that peft's "
                           f"save_pretrained wrote for the adapter.")
    for module, pair in modules.items():
        if len(pair) < 2:
            have, lack = ("A", "B") if "A" in pair else ("B", "A")
            raise AdapterError(f"adapter {name!r}: {module} has lora_{have} but no lora_{lack} in {weights}; "
                               f"the file is incomplete. Re-save or re-download the adapter.")
    return modules


def _check_weights_match_config(name: str, cfg: dict, tensors: dict, modules: dict) -> None:
    """The weights' ranks are the config's, lora_A and lora_B agree, and the config targets every module."""
    ranks = {m: (tensors[p["A"]]["shape"][0], tensors[p["B"]]["shape"][-1]) for m, p in modules.items()}

    def shapes(m: str) -> str:
        return f"lora_A {tensors[modules[m]['A']]['shape']}, lora_B {tensors[modules[m]['B']]['shape']}"

    wrong = [m for m, (ra, rb) in ranks.items() if ra == rb != module_rank(cfg, m)]
    if wrong:
        m = wrong[0]
        hit = _pattern_value(cfg.get("rank_pattern"), m)
        says = (f"gives {m} rank {hit[1]} (rank_pattern {hit[0]!r})" if hit else f"says r={cfg['r']}")
        got = {ranks[x][0] for x in wrong}
        scope = (f"every LoRA pair has rank {ranks[m][0]}" if len(wrong) == len(modules) and len(got) == 1
                 else f"{m} has rank {ranks[m][0]} ({shapes(m)})")
        raise AdapterError(
            f"adapter {name!r}: adapter_config.json {says}, but its weights disagree: {scope}. vLLM takes the rank "
            f"for its max_lora_rank check and the scaling (lora_alpha / r) from the config, so it would check and "
            f"scale these weights wrongly. Restore the adapter_config.json saved with these weights (or set the "
            f"rank to {ranks[m][0]} there).")
    split = [m for m, (ra, rb) in ranks.items() if ra != rb]
    if split:
        m = split[0]
        raise AdapterError(
            f"adapter {name!r}: {m} has lora_A of rank {ranks[m][0]} but lora_B of rank {ranks[m][1]} ({shapes(m)}); "
            f"the two halves of a LoRA pair share one rank. The weights file is damaged or mixes two adapters: "
            f"re-save or re-download the adapter.")
    extra = [m for m in modules if not targets_module(cfg, m)]
    if extra:
        rules = ", ".join(f"{k} {json.dumps(cfg.get(k))}" for k in ("target_modules", "exclude_modules",
                                                                     "layers_to_transform") if cfg.get(k) is not None)
        raise AdapterError(
            f"adapter {name!r} has weights for {extra[0]}{_more(len(extra) - 1, 'module')}, which "
            f"adapter_config.json does not target ({rules}). vLLM matches LoRA weights by their tensor names, "
            f"not by this list, so it would apply them anyway, while peft and the memory model go by the list. "
            f"Add {extra[0].rsplit('.', 1)[-1]!r} to target_modules if these weights are meant, or re-save the "
            f"adapter from the peft model that trained it.")


def read_adapter(path: str | Path, name: str | None = None) -> AdapterInfo:
    """Read an adapter folder's config and weight header; AdapterError if it is not a usable peft LoRA
    or its weights contradict its config.

    Inside a lab that is being recorded, what was read is also kept (a fact of the recording), so read
    mode can show it where the folder is not: a 4090 profile's adapters on a reader's machine. Where the
    folder is there, read mode reads it like live mode does.
    """
    from .replay import session as record   # the adapters module has no other tie to the labs

    s = record.active()
    if s is not None and (s.recording or (s.mode == "replay" and not Path(path).is_dir())):
        data = s.fact(f"adapter {name or Path(path).name}", lambda: asdict(_read_adapter(path, name)))
        return AdapterInfo(**data)
    return _read_adapter(path, name)


def _read_adapter(path: str | Path, name: str | None = None) -> AdapterInfo:
    path = Path(path)
    name = name or path.name
    if not path.is_dir():
        raise AdapterError(f"adapter {name!r}: folder {path} does not exist. Check the path "
                           f"(a LoRARequest needs a local folder with adapter_config.json).")
    cfg_file = path / "adapter_config.json"
    if not cfg_file.is_file():
        raise AdapterError(f"adapter {name!r}: {path} has no adapter_config.json, so it is not a peft "
                           f"LoRA adapter. Point to the folder that peft's save_pretrained wrote.")
    cfg = _read_config(cfg_file, name)
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
    tensors = read_safetensors_header(weights)
    modules = _lora_modules(name, tensors, weights)
    _check_weights_match_config(name, cfg, tensors, modules)
    targets = cfg.get("target_modules") or []
    if isinstance(targets, str):
        targets = [targets]
    return AdapterInfo(name=name, path=str(path), rank=cfg["r"], alpha=float(cfg["lora_alpha"]),
                       target_modules=sorted(targets), base_model_name=cfg.get("base_model_name_or_path") or "",
                       tensors=tensors, config=cfg, modules=modules)


# --------------------------------------------------------------------------
# Against the engine and the base
# --------------------------------------------------------------------------

def _check_fits_base(info: AdapterInfo, base_model) -> None:
    if not (Path(base_model) / "config.json").is_file():
        raise AdapterError(f"base model folder {base_model} has no config.json; pass the folder of the base model "
                           f"the adapter will be served on (the one with config.json).")
    try:
        base_cfg = load_config(Path(base_model))
        a = arch(base_cfg)
    except ConfigError as e:
        raise AdapterError(f"base model {base_model}: {e}") from None
    # Shapes first: a wrong width says more about the adapter's base than a layer count does.
    shapes = projection_shapes(a)
    for module, pair in info.modules.items():
        proj = module.rsplit(".", 1)[-1]
        if proj not in shapes:
            continue
        for ab, got, need, side in (("A", info.tensors[pair["A"]]["shape"][-1], shapes[proj].d_in, "input"),
                                    ("B", info.tensors[pair["B"]]["shape"][0], shapes[proj].d_out, "output")):
            if got != need:
                raise AdapterError(
                    f"adapter {info.name!r} was made for another base: its {proj} lora_{ab} expects "
                    f"{side} size {got}, but this base's {proj} has {need} (hidden_size "
                    f"{a.hidden}). Use an adapter trained on this base "
                    f"(adapter says base_model_name_or_path={info.base_model_name!r}).")
    beyond = sorted(x for x in map(_layer_of, info.modules) if x is not None and x >= a.layers)
    if beyond:
        raise AdapterError(
            f"adapter {info.name!r} was made for another base: it has weights for layer {beyond[0]}, "
            f"but the base model ({base_model}) has {a.layers} layers. Use an adapter trained on "
            f"this base ({base_cfg.get('_name_or_path') or base_model}).")


def check_adapter(path: str | Path, base_model: str | Path | None = None, max_lora_rank: int | None = None,
                  name: str | None = None) -> AdapterInfo:
    """Everything vLLM would object to, checked up front. Returns the AdapterInfo when it fits."""
    info = read_adapter(path, name)
    rank = max_rank(info.config)
    if max_lora_rank is not None and rank > max_lora_rank:
        fit = smallest_rank_that_fits(rank)
        fix = (f"Start the engine with max_lora_rank={fit} (the smallest allowed value >= {rank})."
               if fit else f"vLLM accepts max_lora_rank up to {MAX_LORA_RANKS[-1]}; retrain the adapter with a "
               f"lower rank.")
        raise AdapterError(f"adapter {info.name!r} has rank {rank}, above max_lora_rank={max_lora_rank}. {fix}")
    if base_model is not None:
        _check_fits_base(info, base_model)
        info.base_check = _check_same_base(info, Path(base_model))
    return info


__all__ = ["AdapterError", "AdapterInfo", "base_fingerprint", "check_adapter", "max_rank", "module_rank",
           "read_adapter",
           "read_safetensors_header", "smallest_rank_that_fits", "targets_module", "write_base_identity"]
