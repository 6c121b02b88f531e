"""Train the course's four LoRA adapters on Qwen2.5-7B-Instruct, on the GPU.

::

    python -m course_tools.gpu.train_adapters --profile qwen7b [--tasks sql,support] [--steps N] [--dry-run]

The training code is the tiny world's (:func:`course_tools.tinyworld.trainer.train_adapter`,
same data, same ranks and target modules from ``tinyworld.ADAPTERS``), run in
bf16 on CUDA with gradient checkpointing and the base's own chat template.
The configuration is sized for an RTX 4090 (24 GB): batch 8, a few hundred
steps, a few minutes per adapter.

Resumable: an adapter whose folder already has ``adapter_config.json`` and a
whole ``adapter_model.safetensors`` is skipped. Each adapter is written to a
hidden temporary folder and renamed when it is complete, so an interrupted run
never leaves half an adapter. Adapters land in
``<models_dir>/adapters/qwen7b/<task>`` and are recorded in ``paths.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from dataclasses import asdict
from pathlib import Path

from course_tools.gpu import download
from course_tools.gpu.checks import TRAIN_MIB  # GPU memory the bf16 7B base + LoRA training needs
from course_utils.adapters import read_safetensors_header
from course_utils.errors import TrainingError
from course_utils.paths import models_dir as default_models_dir, read_paths_file
from course_tools.tinyworld.trainer import ADAPTERS, TrainConfig, deterministic_env

PROFILE = "qwen7b"
BASE_NAME = "Qwen/Qwen2.5-7B-Instruct"  # written into adapter_config.json instead of a local path
TASKS = tuple(ADAPTERS)

# Sized for one RTX 4090: the bf16 base takes 15.2 GB; batch 8 of short chat
# prompts with gradient checkpointing fits in the rest. 300 steps x 8 = 2400
# examples (each seen at most once).
GPU_TRAIN = {"adapter_examples": 3000, "adapter_steps": 300, "adapter_lr": 2e-4, "batch_size": 8, "threads": 4,
             "task_steps_factor": {}}


def train_config(steps: int | None = None, batch_size: int | None = None, lr: float | None = None) -> TrainConfig:
    cfg = TrainConfig(**GPU_TRAIN)
    if steps:
        cfg.adapter_steps = steps
        cfg.adapter_examples = max(cfg.adapter_examples, steps * cfg.batch_size)
    if batch_size:
        cfg.batch_size = batch_size
    if lr:
        cfg.adapter_lr = lr
    cfg.extra = {"profile": PROFILE, "base": BASE_NAME}
    return cfg


def adapters_root(models_dir: Path) -> Path:
    return Path(models_dir) / "adapters" / PROFILE


def adapter_dirs(models_dir: Path, profile: str = PROFILE, tasks=TASKS) -> dict[str, Path]:
    """Where each trained adapter goes (only the qwen7b profile trains adapters)."""
    if profile != PROFILE:
        return {}
    return {t: adapters_root(models_dir) / t for t in tasks}


def adapter_complete(path: Path) -> bool:
    """True when ``path`` holds a readable adapter_config.json and a whole adapter_model.safetensors."""
    path = Path(path)
    try:
        json.loads((path / "adapter_config.json").read_text())
        read_safetensors_header(path / "adapter_model.safetensors")
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return True


def parse_tasks(text: str | None) -> list[str]:
    if not text:
        return list(TASKS)
    tasks = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in tasks if t not in ADAPTERS]
    if unknown:
        raise TrainingError(f"没有这个任务：{', '.join(unknown)}；可选：{', '.join(TASKS)}")
    return tasks


def training_base(models_dir: Path, override: Path | None = None) -> Path:
    """The bf16 Qwen2.5-7B-Instruct folder to train on (never the AWQ one)."""
    if override:
        return Path(override)
    entry = read_paths_file(models_dir).get(PROFILE, {})
    if entry.get("base_bf16"):
        return Path(entry["base_bf16"])
    if entry.get("base") and entry.get("quantization") is None:
        return Path(entry["base"])
    return download.target_dir(download.ITEMS[PROFILE], models_dir)


def check_base(base: Path, strict: bool = True) -> download.Check:
    chk = download.verify_model(base, download.ITEMS[PROFILE])
    if strict and not chk.complete:
        raise TrainingError(
            f"bf16 基座 {base} 还没准备好（{chk.summary()}）。先下载它："
            f"python -m course_tools.gpu.download --profile qwen7b"
            + ("" if "quantization" not in " ".join(chk.problems) else
               "（adapter 在 bf16 基座上训练，不在 AWQ 基座上）"))
    return chk


def plan(models_dir: Path, tasks: list[str], force: bool = False) -> list[tuple[str, Path, str]]:
    """(task, folder, "done" | "train") for every requested adapter."""
    out = []
    for task, path in adapter_dirs(models_dir, PROFILE, tasks).items():
        out.append((task, path, "train" if force or not adapter_complete(path) else "done"))
    return out


def clean_partials(root: Path) -> list[Path]:
    """Remove leftovers of interrupted runs (hidden ``.<task>.partial-*`` folders)."""
    removed = []
    if root.is_dir():
        for p in root.glob(".*.partial-*"):
            shutil.rmtree(p, ignore_errors=True)
            removed.append(p)
    return removed


def install_adapter(tmp: Path, final: Path) -> Path:
    """Move a finished adapter from its temporary folder into place (replacing an incomplete one)."""
    if not adapter_complete(tmp):
        raise TrainingError(f"训练没有在 {tmp} 写出完整的 adapter")
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    return final


def check_gpu(device: str) -> None:
    """Refuse early, with the reason, when the GPU cannot hold the bf16 base for training."""
    if device != "cuda":
        return
    import torch

    if not torch.cuda.is_available():
        raise TrainingError(
            "PyTorch 看不到 CUDA GPU（torch.cuda.is_available() 为 False）。先看 `nvidia-smi`；如果驱动比 wheel "
            "要求的旧，见 autodl/README.md（驱动太旧）并运行 `bash autodl/setup.sh --cuda12`。")
    props = torch.cuda.get_device_properties(0)
    total_mib = props.total_memory // 2**20
    if total_mib < TRAIN_MIB:
        raise TrainingError(
            f"{props.name} 只有 {total_mib} MiB 显存；在 bf16 7B 基座上训练 adapter 大约要 {TRAIN_MIB} MiB"
            f"（RTX 4090 / 3090 / A10 这一类 GPU）。请在这样的实例上训练，再把 {adapters_root(default_models_dir())} "
            f"复制到这里；或者用 --awq 部署，配上在别处训练好的 adapter。")
    free, _ = torch.cuda.mem_get_info()
    if free // 2**20 < TRAIN_MIB - 2000:
        from course_utils.gpu.free import kernel_pids, visible_holders   # a container's nvidia-smi names no process: what we see

        seen = "；".join(visible_holders(kernel_pids())) or "没看到别的 Jupyter 内核或课程启动的进程"
        raise TrainingError(
            f"GPU 上只有 {free // 2**20} MiB 空闲：别的进程占着显存（某个笔记本的 vLLM 引擎？）。"
            f"课程能看到的：{seen}。先关掉它（JupyterLab 左侧栏“正在运行的终端和内核”里 Shut Down，"
            f"或在那个笔记本里 Kernel > Shut Down Kernel；也可以 kill <pid>），再重新运行。")


def write_manifest(root: Path, task: str, stats: dict, cfg: TrainConfig, seconds: float) -> None:
    f = root / "manifest.json"
    try:
        data = json.loads(f.read_text()) if f.is_file() else {}
    except ValueError:
        data = {}
    data.setdefault("adapters", {})[task] = {**stats, "seconds": round(seconds)}
    data["config"] = asdict(cfg)
    data["base_name"] = BASE_NAME
    # the versions that trained it (already imported by the trainer; nothing is imported here)
    data["versions"] = {m: sys.modules[m].__version__ for m in ("torch", "transformers", "peft") if m in sys.modules}
    tmp = f.with_name(".manifest.json.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, f)


def train_all(models_dir: Path, tasks: list[str], cfg: TrainConfig, base: Path, *, device: str = "cuda",
              dtype: str = "bfloat16", force: bool = False, out=print) -> dict[str, Path]:
    """Train every adapter of ``tasks`` that is not complete yet; return task -> folder."""
    from course_tools.tinyworld.trainer import train_adapter  # pulls torch/peft lazily

    root = adapters_root(models_dir)
    root.mkdir(parents=True, exist_ok=True)
    for p in clean_partials(root):
        out(f"删掉了上次中断留下的：{p}")
    done = {}
    for task, final, status in plan(models_dir, tasks, force):
        if status == "done":
            out(f"[ok] adapter {task}：已经训练好，在 {final}")
            done[task] = final
            download.write_paths(models_dir, download.merge_paths(
                read_paths_file(models_dir), PROFILE, adapters={task: str(final.resolve())}))
            continue
        spec = ADAPTERS[task]
        out(f"[>>] adapter {task}：rank {spec.rank}，alpha {spec.alpha}，target_modules {','.join(spec.target_modules)}；"
            f"{max(1, round(cfg.adapter_steps * spec.steps_factor))} 步 x batch {cfg.batch_size}")
        tmp = root / f".{task}.partial-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        t0 = time.time()
        try:
            stats = train_adapter(cfg, base, task, tmp, device=device, dtype=dtype, gradient_checkpointing=True,
                                  base_name=BASE_NAME, chat=True)
            install_adapter(tmp, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        seconds = time.time() - t0
        write_manifest(root, task, stats, cfg, seconds)
        download.write_paths(models_dir, download.merge_paths(
            read_paths_file(models_dir), PROFILE, adapters={task: str(final.resolve())}))
        out(f"[ok] adapter {task}：最终 loss {stats['final_loss']}，{seconds:.0f} 秒 -> {final}")
        done[task] = final
        torch = sys.modules.get("torch")
        if device == "cuda" and torch is not None:
            torch.cuda.empty_cache()  # the next adapter loads the base again
    return done


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="在 Qwen2.5-7B-Instruct 上训练课程的四个 LoRA adapter（GPU）。")
    ap.add_argument("--profile", default=PROFILE, choices=["qwen7b", "llama3b"])
    ap.add_argument("--tasks", help=f"{','.join(TASKS)} 中的几个，逗号分隔（默认全部）")
    ap.add_argument("--steps", type=int, help=f"每个 adapter 的优化步数（默认 {GPU_TRAIN['adapter_steps']}）")
    ap.add_argument("--batch-size", type=int, help=f"默认 {GPU_TRAIN['batch_size']}")
    ap.add_argument("--lr", type=float, help=f"默认 {GPU_TRAIN['adapter_lr']}")
    ap.add_argument("--models-dir", type=Path, help="默认：course_utils.profiles.models_dir()")
    ap.add_argument("--base", type=Path, help="bf16 基座的文件夹（默认取自 paths.json）")
    ap.add_argument("--force", action="store_true", help="已经训练好的 adapter 也重新训练")
    ap.add_argument("--dry-run", action="store_true", help="只说会训练什么，不改动任何东西")
    ap.add_argument("--device", default="cuda", help=argparse.SUPPRESS)  # cpu: smoke tests only
    ap.add_argument("--dtype", default="bfloat16", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.profile != PROFILE:
        print(f"配置 {args.profile}：没有要训练的（它的 adapter jeeejeee/llama32-3b-text2sql-spider 由 "
              f"`python -m course_tools.gpu.download --profile {args.profile}` 下载）。")
        return 0
    models_dir = (args.models_dir or default_models_dir()).resolve()
    try:
        tasks = parse_tasks(args.tasks)
        cfg = train_config(args.steps, args.batch_size, args.lr)
        base = training_base(models_dir, args.base)
        steps = plan(models_dir, tasks, args.force)
        if args.dry_run:
            chk = check_base(base, strict=False)
            print(f"基座（bf16）：{base}：{chk.summary()}")
            print(f"设置：{cfg.adapter_steps} 步，batch {cfg.batch_size}，lr {cfg.adapter_lr}，"
                  f"{args.device}/{args.dtype}，梯度检查点")
            for task, path, status in steps:
                spec = ADAPTERS[task]
                what = "已经训练好，跳过" if status == "done" else "将训练（RTX 4090 上几分钟）"
                print(f"[dry-run] adapter {task}（rank {spec.rank}，{','.join(spec.target_modules)}）-> {path}：{what}")
            print(f"[dry-run] 将把 adapter 记录到 {models_dir / 'paths.json'}")
            return 0
        if all(s == "done" for _, _, s in steps):
            for task, path, _ in steps:
                print(f"[ok] adapter {task}：已经训练好，在 {path}")
            download.write_paths(models_dir, download.merge_paths(
                read_paths_file(models_dir), PROFILE, adapters={t: str(p.resolve()) for t, p, _ in steps}))
            return 0
        if args.device == "cuda":
            check_base(base)
        else:  # smoke runs on a tiny stand-in base
            print(f"设备 {args.device}：冒烟运行，不核对基座 {base} 是不是 Qwen2.5-7B-Instruct")
        check_gpu(args.device)
        os.environ.update(deterministic_env(os.environ))  # deterministic cuBLAS, no warnings
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        train_all(models_dir, tasks, cfg, base, device=args.device, dtype=args.dtype, force=args.force)
    except TrainingError as e:
        print(f"错误：{e}", file=sys.stderr)
        print("      接着训练（训练好的 adapter 会保留）：python -m course_tools.gpu.train_adapters --profile qwen7b",
              file=sys.stderr)
        return 1
    print(f"adapter 已记录到 {models_dir / 'paths.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
