"""Download the GPU profiles' base models (and the llama3b adapter), verify them, record their paths.

::

    python -m course_tools.gpu.download --profile qwen7b --source modelscope [--awq] [--dry-run]

* ``--source modelscope`` (default; fast inside China): ``modelscope.snapshot_download``
  of ``Qwen/Qwen2.5-7B-Instruct``, ``Qwen/Qwen2.5-7B-Instruct-AWQ`` or
  ``LLM-Research/Llama-3.2-3B-Instruct``.
* ``--source hf``: ``huggingface_hub.snapshot_download`` through the mirror
  ``HF_ENDPOINT=https://hf-mirror.com`` (unless ``HF_ENDPOINT`` is already set).
  The llama3b adapter ``jeeejeee/llama32-3b-text2sql-spider`` always comes
  from there.
* ``--print-sources`` names the sources the plan uses; ``--only-from SOURCE``
  fetches only the items that come from it. ``setup.sh`` uses them to turn
  AutoDL's academic proxy on for Hugging Face only: ModelScope is a domestic
  site, which the proxy slows down or breaks.

Files go to ``<models_dir>/models/<name>`` and ``<models_dir>/adapters/<name>``
(:func:`course_utils.profiles.models_dir`); a model that is already complete
elsewhere (a ModelScope cache, where ``Qwen2.5`` is stored as ``Qwen2___5``,
or a Hugging Face cache) is used in place. Every model is verified: the
``config.json`` fields against the expected model, the safetensors index and
every shard it lists (present, and as long as its own header says). The
resolved paths are merged into ``<models_dir>/paths.json``, which
:func:`course_utils.profiles.resolved_paths` reads.

Rerunning resumes: complete models are skipped, missing files are fetched.
The hub libraries are imported only when something is downloaded, so this
module (and its pure functions, used by the tests and by ``setup.sh``)
imports with the standard library alone.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from course_utils.errors import CourseError
from course_utils.adapters import read_safetensors_header
from course_utils.paths import models_dir as default_models_dir, read_paths_file

HF_MIRROR = "https://hf-mirror.com"
WHOLE_FOLDER = "整个文件夹"  # Check.missing when the folder itself is not there
GB = 1000**3


# --------------------------------------------------------------------------
# What to download
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class Item:
    key: str  # "qwen7b", "qwen7b-awq", "llama3b", "llama3b-sql"
    kind: str  # "model" or "adapter"
    name: str  # local folder name
    ids: dict  # source ("modelscope"/"hf") -> repository id
    approx_bytes: int
    expect: dict = field(default_factory=dict)  # config.json field -> value
    max_rank: int | None = None  # adapters: the profile's max_lora_rank
    # Meta's original consolidated checkpoint (original/*.pth, 6.4 GB for
    # Llama-3.2-3B) is not needed by transformers or vLLM.
    ignore: tuple = ("original/*", "*.pth")


QWEN7B_CONFIG = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584,
    "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
    "intermediate_size": 18944, "vocab_size": 152064,
}
LLAMA3B_CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 3072,
    "num_hidden_layers": 28, "num_attention_heads": 24, "num_key_value_heads": 8,
    "intermediate_size": 8192, "vocab_size": 128256,
}

ITEMS: dict[str, Item] = {
    "qwen7b": Item("qwen7b", "model", "Qwen2.5-7B-Instruct",
                   {"modelscope": "Qwen/Qwen2.5-7B-Instruct", "hf": "Qwen/Qwen2.5-7B-Instruct"},
                   15_300_000_000, {**QWEN7B_CONFIG, "quantization_config": None}),
    "qwen7b-awq": Item("qwen7b-awq", "model", "Qwen2.5-7B-Instruct-AWQ",
                       {"modelscope": "Qwen/Qwen2.5-7B-Instruct-AWQ", "hf": "Qwen/Qwen2.5-7B-Instruct-AWQ"},
                       5_600_000_000, {**QWEN7B_CONFIG, "quantization_config.quant_method": "awq"}),
    "llama3b": Item("llama3b", "model", "Llama-3.2-3B-Instruct",
                    {"modelscope": "LLM-Research/Llama-3.2-3B-Instruct", "hf": "meta-llama/Llama-3.2-3B-Instruct"},
                    6_500_000_000, LLAMA3B_CONFIG),
    "llama3b-sql": Item("llama3b-sql", "adapter", "llama32-3b-text2sql-spider",
                        {"hf": "jeeejeee/llama32-3b-text2sql-spider"}, 200_000_000, max_rank=16),
}


def plan_items(profile: str, awq: bool = False, with_bf16: bool = False) -> list[Item]:
    """What ``--profile`` (and ``--awq``) needs, in download order.

    ``with_bf16``: with ``--awq``, also the bf16 base (the adapters are trained on it).
    """
    if profile == "qwen7b":
        if not awq:
            return [ITEMS["qwen7b"]]
        return ([ITEMS["qwen7b"]] if with_bf16 else []) + [ITEMS["qwen7b-awq"]]
    if profile == "llama3b":
        if awq:
            raise ValueError("--awq 只能和 --profile qwen7b 一起用")
        return [ITEMS["llama3b"], ITEMS["llama3b-sql"]]
    raise ValueError(f"没有 GPU 配置 {profile!r}：请选 qwen7b 或 llama3b")


def source_for(item: Item, source: str) -> str:
    """Adapters only exist on Hugging Face (fetched through the mirror)."""
    return source if source in item.ids else "hf"


# --------------------------------------------------------------------------
# Where a model may already be (pure path logic)
# --------------------------------------------------------------------------
def modelscope_folder_name(name: str) -> str:
    """ModelScope stores ``Qwen2.5-7B-Instruct`` as ``Qwen2___5-7B-Instruct`` (dots become ``___``)."""
    return name.replace(".", "___")


def target_dir(item: Item, models_dir: Path) -> Path:
    """Where this module downloads ``item`` to."""
    return Path(models_dir) / ("models" if item.kind == "model" else "adapters") / item.name


def search_roots(models_dir: Path | str, env: dict | None = None, home: Path | None = None) -> list[Path]:
    """Folders to look in for an already downloaded copy, most preferred first."""
    env = os.environ if env is None else env
    home = Path(home) if home is not None else Path.home()
    models_dir = Path(models_dir)
    roots = [models_dir / "models", models_dir / "adapters", models_dir]
    if env.get("MODELSCOPE_CACHE"):
        roots.append(Path(env["MODELSCOPE_CACHE"]))
    roots.append(home / ".cache" / "modelscope" / "hub")
    if env.get("HF_HUB_CACHE"):
        roots.append(Path(env["HF_HUB_CACHE"]))
    if env.get("HF_HOME"):
        roots.append(Path(env["HF_HOME"]) / "hub")
    roots.append(home / ".cache" / "huggingface" / "hub")
    roots.append(Path("/root/autodl-tmp"))  # where tutorials point cache_dir on AutoDL
    seen, out = set(), []
    for r in roots:
        if r not in seen:
            seen.add(r)
            out.append(r)
    return out


def candidate_dirs(item: Item, roots: list[Path]) -> list[Path]:
    """Existing folders that may hold ``item``, in the layouts ModelScope and Hugging Face use.

    ModelScope: ``<root>/models/<org>--<name>/snapshots/<rev>`` (modelscope >= 1.38),
    ``<root>/models/<org>/<org_name___>`` and the older ``<root>/<org>/<name___>``,
    ``<root>/hub/<org>/<name___>``; Hugging Face: ``<root>/models--<org>--<name>/snapshots/<rev>``;
    this module: ``<root>/<name>``.
    """
    rels: list[str] = [item.name]
    for repo_id in item.ids.values():
        org, name = repo_id.split("/", 1)
        safe = modelscope_folder_name(name)
        for n in dict.fromkeys((safe, name)):
            rels += [f"{org}/{n}", f"models/{org}/{n}", f"hub/{org}/{n}"]
        rels += [f"models/{org}--{name}/snapshots/*", f"models--{org}--{name}/snapshots/*",
                 f"hub/models--{org}--{name}/snapshots/*"]
    found: list[Path] = []
    for root in roots:
        for rel in dict.fromkeys(rels):
            if "*" in rel:
                head, _ = rel.split("/*", 1)
                base = root / head
                paths = sorted((p for p in base.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime,
                               reverse=True) if base.is_dir() else []
            else:
                paths = [root / rel] if (root / rel).is_dir() else []
            for p in paths:
                if p not in found:
                    found.append(p)
    return found


# --------------------------------------------------------------------------
# Verification (pure: reads files, changes nothing)
# --------------------------------------------------------------------------
@dataclass
class Check:
    path: Path
    missing: list[str] = field(default_factory=list)  # files that are not there
    broken: list[str] = field(default_factory=list)  # "file：why" (truncated, empty, unreadable)
    problems: list[str] = field(default_factory=list)  # the folder holds something else
    present_bytes: int = 0

    @property
    def complete(self) -> bool:
        return not (self.missing or self.broken or self.problems)

    def summary(self) -> str:
        if self.complete:
            return f"完整（{self.present_bytes / GB:.1f} GB）"
        parts = []
        if self.problems:
            parts.append("不是这个模型：" + "；".join(self.problems))
        if self.missing:
            parts.append("缺少：" + "、".join(self.missing))
        if self.broken:
            parts.append("不完整或损坏：" + "；".join(self.broken))
        return " | ".join(parts)


def _get(cfg: dict, dotted: str):
    cur = cfg
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def check_config(cfg: dict, expect: dict) -> list[str]:
    """``config.json`` fields that differ from the expected model's."""
    return [f"config.json 里是 {k}={_get(cfg, k)!r}，应为 {v!r}" for k, v in expect.items() if _get(cfg, k) != v]


def shard_problem(path: Path) -> str | None:
    """None when ``path`` is a whole safetensors file, else why not."""
    if not path.is_file():
        return "missing"
    if path.stat().st_size == 0:
        return "空文件（0 字节）"
    try:
        read_safetensors_header(path)
    except (ValueError, OSError, KeyError, TypeError) as e:  # AdapterError is a ValueError
        return f"被截断或损坏（{e}）"
    return None


def _verify(path: Path, config_name: str, config_problems, check_files) -> Check:
    """What every folder gets: it exists, its ``config_name`` is there and parses, and
    ``config_problems(config)`` finds nothing wrong; then ``check_files(chk)`` checks the rest."""
    path = Path(path)
    chk = Check(path)
    if not path.is_dir():
        chk.missing.append(WHOLE_FOLDER)
        return chk
    cfg_file = path / config_name
    if not cfg_file.is_file():
        chk.missing.append(config_name)
    else:
        try:
            chk.problems += config_problems(json.loads(cfg_file.read_text()))
        except ValueError as e:
            chk.broken.append(f"{config_name}：不是合法的 JSON（{e}）")
    check_files(chk)
    return chk


def _model_files(chk: Check) -> None:
    """The tokenizer, the safetensors index and every shard it lists."""
    path = chk.path
    if not (path / "tokenizer_config.json").is_file():
        chk.missing.append("tokenizer_config.json")
    if not any((path / f).is_file() for f in ("tokenizer.json", "vocab.json", "tokenizer.model")):
        chk.missing.append("tokenizer.json")
    index = path / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        except (ValueError, KeyError, AttributeError) as e:
            chk.broken.append(f"{index.name}：读不了（{e}）")
            shards = []
    elif (path / "model.safetensors").is_file():
        shards = ["model.safetensors"]
    else:
        chk.missing.append("model.safetensors.index.json（或 model.safetensors）")
        shards = []
    for shard in shards:
        p = path / shard
        why = shard_problem(p)
        if why == "missing":
            chk.missing.append(shard)
        elif why:
            chk.broken.append(f"{shard}：{why}")
        if p.is_file():
            chk.present_bytes += p.stat().st_size


def _adapter_files(chk: Check) -> None:
    """The adapter's weights: a whole safetensors file (or a non-empty .bin)."""
    st, binf = chk.path / "adapter_model.safetensors", chk.path / "adapter_model.bin"
    if st.is_file():
        why = shard_problem(st)
        if why:
            chk.broken.append(f"{st.name}：{why}")
        chk.present_bytes += st.stat().st_size
    elif binf.is_file() and binf.stat().st_size > 0:
        chk.present_bytes += binf.stat().st_size
    else:
        chk.missing.append("adapter_model.safetensors")


def verify_model(path: Path, item: Item) -> Check:
    """Is ``path`` a complete copy of ``item`` (a base model)?"""
    return _verify(path, "config.json", lambda cfg: check_config(cfg, item.expect), _model_files)


def verify_adapter(path: Path, item: Item) -> Check:
    """Is ``path`` a complete peft LoRA adapter folder (within the profile's max rank)?"""
    def rank_problems(cfg: dict) -> list[str]:
        if item.max_rank and int(cfg.get("r", 0)) > item.max_rank:
            return [f"rank {cfg.get('r')} > max_lora_rank {item.max_rank}"]
        return []

    return _verify(path, "adapter_config.json", rank_problems, _adapter_files)


def verify(path: Path, item: Item) -> Check:
    return verify_model(path, item) if item.kind == "model" else verify_adapter(path, item)


def locate(item: Item, roots: list[Path]) -> tuple[Path | None, list[Check]]:
    """The first complete copy of ``item`` under ``roots`` (or None), and every candidate's check."""
    checks = [verify(p, item) for p in candidate_dirs(item, roots)]
    for c in checks:
        if c.complete:
            return c.path, checks
    return None, checks


def remaining_bytes(item: Item, models_dir: Path, roots: list[Path] | None = None) -> int:
    """About how many bytes are still to download for ``item`` (0 when a complete copy exists).

    A partial copy counts only in the folder the download resumes (``target_dir``).
    """
    found, checks = locate(item, search_roots(models_dir) if roots is None else roots)
    if found:
        return 0
    target = target_dir(item, models_dir)
    present = next((c.present_bytes for c in checks if c.path == target), 0)
    return max(item.approx_bytes - present, 0)


# --------------------------------------------------------------------------
# paths.json
# --------------------------------------------------------------------------
def merge_paths(current: dict, profile: str, **updates) -> dict:
    """``current`` with ``profile``'s entry updated (pure; ``adapters`` merges, a None value removes a key)."""
    out = json.loads(json.dumps(current))  # deep copy
    entry = out.setdefault(profile, {})
    for k, v in updates.items():
        if k == "adapters":
            entry.setdefault("adapters", {}).update(v)
        elif v is None:
            entry.pop(k, None)
        else:
            entry[k] = v
    return out


def write_paths(models_dir: Path, data: dict) -> Path:
    """Write ``paths.json`` atomically (a reader never sees half a file)."""
    f = Path(models_dir) / "paths.json"
    f.parent.mkdir(parents=True, exist_ok=True)
    tmp = f.with_name(f".paths.json.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, f)
    return f


def record(models_dir: Path, item: Item, path: Path, serve_key: str) -> Path:
    """Merge ``item``'s resolved path into paths.json.

    ``serve_key`` is the base the profile serves: with ``--awq`` the AWQ
    model is ``base`` and the bf16 one is kept as ``base_bf16`` (for training).
    """
    path = str(Path(path).resolve())
    if item.key == "llama3b-sql":
        updates = {"adapters": {"sql": path}}
        profile = "llama3b"
    elif item.key == "llama3b":
        updates, profile = {"base": path}, "llama3b"
    else:
        profile = "qwen7b"
        updates = {"base_awq" if item.key == "qwen7b-awq" else "base_bf16": path}
        if item.key == serve_key:
            updates["base"] = path
            updates["quantization"] = "awq" if item.key == "qwen7b-awq" else None
    return write_paths(models_dir, merge_paths(read_paths_file(models_dir), profile, **updates))


# --------------------------------------------------------------------------
# Downloading (the only part that needs the network and the hub libraries)
# --------------------------------------------------------------------------
class DownloadError(CourseError, RuntimeError):
    pass


def download_modelscope(repo_id: str, target: Path, ignore: tuple) -> None:
    from modelscope.hub.snapshot_download import snapshot_download

    try:
        snapshot_download(repo_id, local_dir=str(target), ignore_patterns=list(ignore))
    except TypeError:  # older modelscope: regular expressions instead of glob patterns
        snapshot_download(repo_id, local_dir=str(target),
                          ignore_file_pattern=[fnmatch.translate(p) for p in ignore])


def download_hf(repo_id: str, target: Path, ignore: tuple) -> None:
    os.environ.setdefault("HF_ENDPOINT", HF_MIRROR)  # read when huggingface_hub is imported
    os.environ["HF_HUB_OFFLINE"] = "0"
    from huggingface_hub import snapshot_download

    snapshot_download(repo_id=repo_id, local_dir=str(target), ignore_patterns=list(ignore))


DOWNLOADERS = {"modelscope": download_modelscope, "hf": download_hf}


def remove_broken_files(chk: Check) -> list[str]:
    """Delete truncated/corrupt weight files in our own download folder so they are fetched again."""
    removed = []
    for entry in chk.broken:
        name = entry.split("：", 1)[0]
        p = chk.path / name
        if name.endswith(".safetensors") and p.is_file():
            p.unlink()
            removed.append(name)
    return removed


def rerun_command(args) -> str:
    cmd = f"python -m course_tools.gpu.download --profile {args.profile} --source {args.source}"
    if args.awq:
        cmd += " --awq"
    if args.with_bf16:
        cmd += " --with-bf16"
    return cmd


def fetch(item: Item, args, models_dir: Path, roots: list[Path], out=print) -> Path | None:
    """Make sure ``item`` is complete somewhere; return its folder (None in a dry run that would download)."""
    found, checks = locate(item, roots)
    src = source_for(item, args.source)
    repo_id = item.ids[src]
    if found:
        out(f"[ok] {item.name}：{verify(found, item).summary()}，在 {found}")
        return found
    target = target_dir(item, models_dir)
    for c in checks:
        if c.path != target:
            out(f"[..] {item.name}：不用 {c.path} 里不完整的一份（{c.summary()}）")
    partial = next((c for c in checks if c.path == target), None)
    endpoint = os.environ.get("HF_ENDPOINT") or HF_MIRROR
    via = f"ModelScope（{repo_id}）" if src == "modelscope" else f"Hugging Face（{repo_id}，经 {endpoint}）"
    if partial:
        out(f"[..] {item.name}：{target} 不完整：{partial.summary()}")
        out("     再下载会接着下：已完整的文件会保留。")
    if args.dry_run:
        left = item.approx_bytes - (partial.present_bytes if partial else 0)
        out(f"[dry-run] 将从 {via}下载 {item.name} 到 {target}（{'还剩' if partial else ''}约 {max(left, 0) / GB:.1f} GB；"
            f"跳过 {', '.join(item.ignore)}）")
        return None
    if args.verify_only:
        raise DownloadError(f"{item.name} 还没有下载（{partial.summary() if partial else '哪里都没找到'}）")
    if partial:
        for name in remove_broken_files(partial):
            out(f"     删掉了截断的文件 {name}，它会重新下载")
    target.parent.mkdir(parents=True, exist_ok=True)
    out(f"[>>] {item.name}：从 {via}下载到 {target}（约 {item.approx_bytes / GB:.1f} GB）")
    try:
        DOWNLOADERS[src](repo_id, target, item.ignore)
    except ImportError as e:
        raise DownloadError(f"没有装 {src} 的客户端（{e}）；请安装课程的 GPU extra："
                            f"pip install -e '.[gpu]'") from None
    except Exception as e:  # network, auth, disk: name it and say how to continue
        hint = ""
        text = str(e)
        if src == "hf" and any(s in text for s in ("401", "403", "gated", "Unauthorized", "restricted")):
            hint = ("meta-llama 的仓库要先申请：在 huggingface.co 上同意许可并 `export HF_TOKEN=...`，"
                    "或者改用 --source modelscope（LLM-Research 的镜像，不要 token）。")
        elif "No space left" in text:
            hint = "磁盘满了：在模型文件夹所在的盘上腾出空间（df -h），再重新运行。"
        raise DownloadError(f"从 {src} 下载 {repo_id} 失败：{type(e).__name__}: {text[:500]}。{hint}") from e
    chk = verify(target, item)
    if not chk.complete:
        raise DownloadError(f"下载之后 {target} 里的 {item.name} 仍不完整：{chk.summary()}")
    out(f"[ok] {item.name}：{chk.summary()}，在 {target}")
    return target


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="下载并校验 GPU 配置的模型，把路径记录到 paths.json。")
    ap.add_argument("--profile", default="qwen7b", choices=["qwen7b", "llama3b"])
    ap.add_argument("--source", default="modelscope", choices=["modelscope", "hf"])
    ap.add_argument("--awq", action="store_true", help="Qwen2.5-7B-Instruct-AWQ（给 16 GB 的卡）")
    ap.add_argument("--with-bf16", action="store_true", help="和 --awq 一起：也下载 bf16 基座（训练 adapter 用）")
    ap.add_argument("--models-dir", type=Path, default=None, help="默认：course_utils.profiles.models_dir()")
    ap.add_argument("--dry-run", action="store_true", help="只说会下载什么，不改动任何东西")
    ap.add_argument("--verify-only", action="store_true",
                    help="什么都不下载：只校验，把完整的模型记到 paths.json，缺了就以状态 1 退出")
    ap.add_argument("--print-sources", action="store_true",
                    help="列出计划要用的下载来源（如 'modelscope hf'）后退出")
    ap.add_argument("--only-from", choices=["modelscope", "hf"],
                    help="只下载来自这个来源的部分（setup.sh 用它只给 hf 开学术加速）")
    args = ap.parse_args(argv)
    try:
        items = plan_items(args.profile, args.awq, args.with_bf16)
    except ValueError as e:
        print(f"错误：{e}", file=sys.stderr)
        return 2
    serve_key = items[-1].key if args.profile == "qwen7b" else "llama3b"
    sources = list(dict.fromkeys(source_for(item, args.source) for item in items))
    if args.print_sources:
        print(" ".join(sources))
        return 0
    if args.only_from:
        items = [item for item in items if source_for(item, args.source) == args.only_from]
    models_dir = (args.models_dir or default_models_dir()).resolve()
    roots = search_roots(models_dir)
    print(f"模型文件夹：{models_dir}")
    for item in items:
        try:
            path = fetch(item, args, models_dir, roots)
        except DownloadError as e:
            print(f"错误：{e}", file=sys.stderr)
            print(f"      接着下载（保留已完整的文件）：{rerun_command(args)}", file=sys.stderr)
            return 1
        if path is not None and not args.dry_run:
            record(models_dir, item, path, serve_key)
    if args.dry_run:
        print(f"[dry-run] 将把路径记录到 {models_dir / 'paths.json'}")
    else:
        print(f"路径已记录到 {models_dir / 'paths.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
