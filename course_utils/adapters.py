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

import contextlib
import functools
import hashlib
import json
import re
import struct
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .errors import CourseError
from .arch import (MAX_LORA_RANKS, PROJECTIONS, ConfigError, arch, load_config, projection_shapes,
                   smallest_rank_that_fits)


class AdapterError(CourseError, ValueError):
    """An adapter cannot be served as it is; the message says why and what to do."""


class AdapterRefused(CourseError):
    """vLLM refused to load an adapter; ``vllm_class`` and ``message`` are what vLLM raised, verbatim.

    vLLM has no one class for this: vLLM 0.26.0's multiprocess engine (the GPU profiles) raises a bare
    ``Exception("Call to add_lora method failed: ...")``, the in-process engine (tiny on the CPU) the
    ``ValueError`` or ``RuntimeError`` raised inside it. :func:`adapter_refusal` turns whichever it is into this."""

    def __init__(self, vllm_class: str, message: str):
        super().__init__(f"{vllm_class}: {message}")
        self.vllm_class, self.message = vllm_class, message

    @classmethod
    def replayed(cls, message: str) -> AdapterRefused:
        vllm_class, _, rest = message.partition(": ")
        return cls(vllm_class, rest)

    def __reduce__(self):   # pickled with both arguments (the default would pass only the joined message)
        return type(self), (self.vllm_class, self.message)


@contextlib.contextmanager
def adapter_refusal():
    """``with cu.adapter_refusal(): llm.llm_engine.add_lora(LoRARequest(...))``: vLLM's refusal, whatever class vLLM
    gives it, comes out as :class:`AdapterRefused` (vLLM's exception is its ``__cause__``), so a lesson catches it
    by name. The course's own errors (read mode's :class:`~course_utils.replay.session.ReplayMiss`) pass as they
    are."""
    try:
        yield
    except CourseError:
        raise
    except Exception as e:  # noqa: BLE001 - vLLM's refusal has no class of its own (see AdapterRefused)
        raise AdapterRefused(type(e).__name__, str(e)) from e


def _safetensors_header(path: Path) -> tuple[dict, int]:
    """The raw header of a safetensors file and where its data starts; AdapterError if it is damaged."""
    path = Path(path)
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) < 8:
            raise AdapterError(f"{path} 不是 safetensors 文件（太短）；重新保存或重新下载它。")
        (n,) = struct.unpack("<Q", raw)
        size = path.stat().st_size
        if n > size - 8:
            raise AdapterError(f"{path} 被截断了（文件头说有 {n} 字节，文件只有 {size} 字节）；重新下载它。")
        try:
            header = json.loads(f.read(n))
        except ValueError as e:
            raise AdapterError(f"{path} 的 safetensors 文件头损坏（{type(e).__name__}: {e}）；"
                               f"重新保存或重新下载它。") from None
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
        raise AdapterError(f"{path} 的 safetensors 文件头损坏（{type(e).__name__}: {e}）；"
                           f"重新保存或重新下载它。") from None
    size = path.stat().st_size
    if data_start + end > size:
        raise AdapterError(f"{path} 被截断了（{size} 字节，张量需要 {data_start + end} 字节）；重新下载它。")
    return tensors


# --------------------------------------------------------------------------
# The base an adapter was trained on: a fingerprint of its weights
# --------------------------------------------------------------------------

BASE_IDENTITY_FILE = "base_fingerprint.json"   # written beside adapter_config.json at training time
_FINGERPRINT_BYTES = 1 << 16                   # the first 64 KiB of every tensor


def weight_files(base_dir: Path) -> list[Path]:
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
    files = weight_files(base_dir)
    if not files:
        raise AdapterError(f"基座目录 {base_dir} 里没有可以算指纹的 *.safetensors 权重。")
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


def check_same_base(info: AdapterInfo, base_model: Path) -> str:
    """AdapterError when the adapter records another base's fingerprint; else how far the base was checked: a short
    verdict ("同一个基座" or "没查"), then ": " and the details (a table shows ``base_check.split(":")[0]``)."""
    file = Path(info.path) / BASE_IDENTITY_FILE
    if not file.is_file():
        return (f"没查: 这个 adapter 没有记录基座指纹（{BASE_IDENTITY_FILE}）；它的配置写的是 "
                f"base_model_name_or_path={info.base_model_name!r}，请自己和要服务的基座核对")
    recorded = json.loads(file.read_text())
    stored, here_stored = recorded.get("base_storage"), _storage(base_model)
    if stored is not None and stored != here_stored:     # e.g. trained on the bf16 base, served on its AWQ copy
        return (f"没查: 这个 adapter 训练时的基座存储方式是 {stored}，这个基座是 {here_stored}；"
                f"指纹只能比较完全相同的文件。它的基座是 {recorded.get('base_model_name')!r}")
    here = base_fingerprint(base_model)
    if recorded.get("base_fingerprint") != here:
        raise AdapterError(
            f"adapter {info.name!r} 是在另一个基座上训练的：它记录的基座是 "
            f"{recorded.get('base_model_name')!r}，指纹 {recorded.get('base_fingerprint')}；而你给的基座（目录 "
            f"{base_model.name!r}，存储方式相同）的指纹是 {here}。形状都对得上，所以 vLLM 会不报错地加载它，"
            f"然后答错。请用在这个基座上训练的 adapter，或在这个基座上重新训练。")
    return f"同一个基座: 指纹 {here} 一致"


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
        raise AdapterError(f"adapter {name!r}：{cfg_file} 不是合法的 JSON（{e}）。请恢复 peft 的 "
                           f"save_pretrained 与权重一起写出的 adapter_config.json。") from None
    if not isinstance(cfg, dict):
        raise AdapterError(f"adapter {name!r}：{cfg_file} 里是一个 JSON {type(cfg).__name__}，不是对象。"
                           f"请恢复 peft 的 save_pretrained 写出的 adapter_config.json。")
    if not _positive_int(cfg.get("r")):
        what = f"写的是 \"r\": {json.dumps(cfg['r'])}" if "r" in cfg else "没有 \"r\""
        raise AdapterError(f"adapter {name!r}：{cfg_file} {what}；LoRA 的秩必须是正整数（peft 总会写它）。"
                           f"请恢复与权重一起保存的 adapter_config.json，或把 \"r\" 设成权重的秩（每个 lora_A 的行数）。")
    missing = [k for k in ("lora_alpha", "target_modules") if cfg.get(k) is None]
    if missing:
        raise AdapterError(f"adapter {name!r}：{cfg_file} 里没有 {'、'.join(missing)}，vLLM 需要它们"
                           f"（缺了它们 vLLM 的 PEFTHelper 会拒绝这个 adapter）。请恢复 peft 的 save_pretrained "
                           f"与权重一起写出的 adapter_config.json。")
    if not _number(cfg["lora_alpha"]):
        raise AdapterError(f"adapter {name!r}：{cfg_file} 写的是 \"lora_alpha\": {json.dumps(cfg['lora_alpha'])}；"
                           f"它必须是数（缩放系数是 lora_alpha / r）。请恢复 peft 写出的文件。")
    for key, want, ok in (("rank_pattern", "正整数的秩", _positive_int),
                          ("alpha_pattern", "数", _number)):
        pattern = cfg.get(key) or {}
        bad = {k: v for k, v in pattern.items() if not ok(v)} if isinstance(pattern, dict) else pattern
        if bad:
            raise AdapterError(f"adapter {name!r}：adapter_config.json 里的 {key} 必须把模块名映射到{want}，"
                               f"而不是 {json.dumps(bad)}。改正这些条目，或恢复 peft 写出的文件。")
    return cfg


def _more(n: int) -> str:
    return f"（还有另外 {n} 个模块）" if n else ""


def _lora_modules(name: str, tensors: dict, weights: Path) -> dict[str, dict[str, str]]:
    """module -> {"A": tensor name, "B": tensor name}; AdapterError when there are none or a half is missing."""
    modules: dict[str, dict[str, str]] = {}
    for tname in tensors:
        m = _LORA_TENSOR.match(tname)
        if m:
            if len(tensors[tname]["shape"]) != 2:
                raise AdapterError(f"adapter {name!r}：{weights} 里的 {tname} 形状是 {tensors[tname]['shape']}，"
                                   f"而 LoRA 矩阵是二维的。文件损坏了：重新保存或重新下载它。")
            modules.setdefault(m.group("module"), {})[m.group("ab")] = tname
    if not modules:
        found = f"它有 {len(tensors)} 个张量" + (f"，例如 {', '.join(map(repr, list(tensors)[:3]))}"
                                               if tensors else "")
        raise AdapterError(f"adapter {name!r}：{weights} 里没有 LoRA 权重（没有名为 "
                           f"'...lora_A.weight' / '...lora_B.weight' 的张量；{found}）。它不是 peft 保存的 LoRA"
                           f"（是完整模型或合并后的权重？）：请指向 peft 的 save_pretrained 为 adapter 写出的目录。")
    for module, pair in modules.items():
        if len(pair) < 2:
            have, lack = ("A", "B") if "A" in pair else ("B", "A")
            raise AdapterError(f"adapter {name!r}：{weights} 里 {module} 有 lora_{have} 却没有 lora_{lack}；"
                               f"文件不完整。重新保存或重新下载这个 adapter。")
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
        says = (f"给 {m} 的秩是 {hit[1]}（rank_pattern {hit[0]!r}）" if hit else f"写的是 r={cfg['r']}")
        got = {ranks[x][0] for x in wrong}
        scope = (f"每一对 LoRA 矩阵的秩都是 {ranks[m][0]}" if len(wrong) == len(modules) and len(got) == 1
                 else f"{m} 的秩是 {ranks[m][0]}（{shapes(m)}）")
        raise AdapterError(
            f"adapter {name!r}：adapter_config.json {says}，但权重不一致：{scope}。vLLM 的 max_lora_rank 检查和缩放系数"
            f"（lora_alpha / r）都取自配置，所以会用错的秩检查、按错的系数缩放这些权重。请恢复与这些权重一起保存的 "
            f"adapter_config.json（或在那里把秩设成 {ranks[m][0]}）。")
    split = [m for m, (ra, rb) in ranks.items() if ra != rb]
    if split:
        m = split[0]
        raise AdapterError(
            f"adapter {name!r}：{m} 的 lora_A 秩是 {ranks[m][0]}，lora_B 秩却是 {ranks[m][1]}（{shapes(m)}）；"
            f"一对 LoRA 矩阵的秩必须相同。权重文件损坏了，或混进了两个 adapter：重新保存或重新下载这个 adapter。")
    extra = [m for m in modules if not targets_module(cfg, m)]
    if extra:
        rules = ", ".join(f"{k} {json.dumps(cfg.get(k))}" for k in ("target_modules", "exclude_modules",
                                                                     "layers_to_transform") if cfg.get(k) is not None)
        raise AdapterError(
            f"adapter {name!r} 有 {extra[0]}{_more(len(extra) - 1)}的权重，adapter_config.json 却不以它为目标"
            f"（{rules}）。vLLM 按张量名字匹配 LoRA 权重、不看这张列表，所以照样会用上它们；peft 和显存模型却按列表算。"
            f"如果这些权重是有意的，就把 {extra[0].rsplit('.', 1)[-1]!r} 加进 target_modules；否则从训练它的 peft 模型"
            f"重新保存这个 adapter。")


def read_adapter(path: str | Path, name: str | None = None) -> AdapterInfo:
    """Read an adapter folder's config and weight header; AdapterError if it is not a usable peft LoRA
    or its weights contradict its config.

    Inside a lab that is being recorded, what was read is also kept (a fact of the recording), so read
    mode can show it where the folder is not: a 4090 profile's adapters on a reader's machine. Where the
    folder is there, read mode reads it like live mode does.
    """
    from .replay import session   # the adapters module has no other tie to the labs

    s = session.active()
    if s is not None and (s.recording or (s.mode == "replay" and not Path(path).is_dir())):
        data = s.fact(f"adapter {name or Path(path).name}", lambda: asdict(_read_adapter(path, name)))
        return AdapterInfo(**data)
    return _read_adapter(path, name)


def _read_adapter(path: str | Path, name: str | None = None) -> AdapterInfo:
    path = Path(path)
    name = name or path.name
    if not path.is_dir():
        raise AdapterError(f"adapter {name!r}：目录 {path} 不存在。检查路径"
                           f"（LoRARequest 需要一个装着 adapter_config.json 的本地目录）。")
    cfg_file = path / "adapter_config.json"
    if not cfg_file.is_file():
        raise AdapterError(f"adapter {name!r}：{path} 里没有 adapter_config.json，所以它不是 peft 的 LoRA adapter。"
                           f"请指向 peft 的 save_pretrained 写出的目录。")
    cfg = _read_config(cfg_file, name)
    weights = path / "adapter_model.safetensors"
    if not weights.is_file():
        if (path / "adapter_model.bin").is_file():
            raise AdapterError(f"adapter {name!r}：只找到 adapter_model.bin；用 safe_serialization=True "
                               f"重新保存它，这里才能检查。")
        raise AdapterError(f"adapter {name!r}：{path} 里没有 adapter_model.safetensors（权重文件）。")
    if cfg.get("peft_type", "LORA") != "LORA":
        raise AdapterError(f"adapter {name!r}：peft_type 是 {cfg.get('peft_type')!r}；vLLM 只服务 LoRA。")
    if cfg.get("use_dora"):
        raise AdapterError(f"adapter {name!r} 用了 DoRA（use_dora: true），vLLM 不支持；"
                           f"把它重新训练成普通 LoRA，或合并进基座。")
    if cfg.get("modules_to_save"):
        raise AdapterError(f"adapter {name!r} 还保存了完整的模块（modules_to_save: {cfg['modules_to_save']}）；"
                           f"vLLM 只支持 modules_to_save 为 None。不带它们重新训练，或合并这个 adapter。")
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
        raise AdapterError(f"基座目录 {base_model} 里没有 config.json；请传入要服务这个 adapter 的基座目录"
                           f"（有 config.json 的那个）。")
    try:
        base_cfg = load_config(Path(base_model))
        a = arch(base_cfg)
    except ConfigError as e:
        raise AdapterError(f"基座 {base_model}：{e}") from None
    # Shapes first: a wrong width says more about the adapter's base than a layer count does.
    shapes = projection_shapes(a)
    for module, pair in info.modules.items():
        proj = module.rsplit(".", 1)[-1]
        if proj not in shapes:
            continue
        for ab, got, need, side in (("A", info.tensors[pair["A"]]["shape"][-1], shapes[proj].d_in, "输入"),
                                    ("B", info.tensors[pair["B"]]["shape"][0], shapes[proj].d_out, "输出")):
            if got != need:
                raise AdapterError(
                    f"adapter {info.name!r} 是为另一个基座做的：它的 {proj} lora_{ab} 要的{side}维度是 {got}，"
                    f"而这个基座的 {proj} 是 {need}（hidden_size {a.hidden}）。请用在这个基座上训练的 adapter"
                    f"（adapter 自己写的是 base_model_name_or_path={info.base_model_name!r}）。")
    beyond = sorted(x for x in map(_layer_of, info.modules) if x is not None and x >= a.layers)
    if beyond:
        raise AdapterError(
            f"adapter {info.name!r} 是为另一个基座做的：它有第 {beyond[0]} 层的权重，而基座（{base_model}）只有 "
            f"{a.layers} 层。请用在这个基座（{base_cfg.get('_name_or_path') or base_model}）上训练的 adapter。")


def check_adapter(path: str | Path, base_model: str | Path | None = None, max_lora_rank: int | None = None,
                  name: str | None = None) -> AdapterInfo:
    """Everything vLLM would object to, checked up front. Returns the AdapterInfo when it fits."""
    info = read_adapter(path, name)
    rank = max_rank(info.config)
    if max_lora_rank is not None and rank > max_lora_rank:
        fit = smallest_rank_that_fits(rank)
        fix = (f"启动引擎时用 max_lora_rank={fit}（不小于 {rank} 的最小允许值）。"
               if fit else f"vLLM 接受的 max_lora_rank 最大是 {MAX_LORA_RANKS[-1]}；用更低的秩重新训练这个 adapter。")
        raise AdapterError(f"adapter {info.name!r} 的秩是 {rank}，超过了 max_lora_rank={max_lora_rank}。{fix}")
    if base_model is not None:
        _check_fits_base(info, base_model)
        info.base_check = check_same_base(info, Path(base_model))
    return info


__all__ = ["AdapterError", "AdapterInfo", "base_fingerprint", "check_adapter", "max_rank", "module_rank",
           "read_adapter",
           "read_safetensors_header", "smallest_rank_that_fits", "targets_module", "write_base_identity"]
