"""GPU, driver and disk checks for the AutoDL setup (``autodl/setup.sh``).

Everything here is standard library only, so ``setup.sh`` runs it with the
instance's own ``python3`` before the course's virtual environment exists, through
``autodl/run_module.py`` (which skips ``course_utils/__init__.py`` and the dependencies it imports)::

    python3 autodl/run_module.py course_tools.gpu.checks gpu --profile qwen7b --smi "$(nvidia-smi --query-gpu=... )"
    python3 autodl/run_module.py course_tools.gpu.checks disk --profile qwen7b --df-data "$(df -Pk /root/autodl-tmp)" ...

The decisions are pure functions of ``nvidia-smi``'s and ``df``'s text so
that the tests can feed them fake outputs.

Which CUDA the wheels need, and which driver that CUDA needs
------------------------------------------------------------
* ``vllm==0.26.0`` pins ``torch==2.11.0``. The default PyPI wheels of both are
  CUDA 13.0 builds: torch 2.11 moved its PyPI wheels to CUDA 13.0
  (pytorch/pytorch PR #177975 "Move cuda stable 12.8->13.0"; the torch 2.11
  release announcement in googlecolab/colabtools issue #5925: "CUDA 13 is now
  the default version installed"), and vLLM's default wheels follow PyTorch
  (``VLLM_MAIN_CUDA_VERSION`` default "13.0" in vllm/envs.py; vllm-project/
  router PR #154: "The vLLM 0.20.0 release has switched to CUDA 13 for the
  default wheels"; allenai/open-instruct PR #1874: "PyPI vllm wheels are CUDA
  13 builds from 0.26 onward").
* CUDA 13.x needs an NVIDIA driver >= 580 (NVIDIA "CUDA Minor Version
  Compatibility" table: CUDA 13.x >= 580, CUDA 12.x >= 525, i.e. 525.60.13).
* vLLM also publishes CUDA 12.9 builds (``vllm==0.26.0+cu129``) on its own
  index ``https://wheels.vllm.ai/0.26.0/cu129`` (vllm issue #44335 and PR
  #47628; open-instruct PR #1874 runs vllm 0.26 + torch 2.11 cu12 builds on
  CUDA 12.8 drivers). PyTorch 2.11 ships CUDA 12.6 / 12.8 / 13.0 builds
  (pytorch PR #175253, RELEASE.md), so the CUDA-12 route pairs it with
  ``torch==2.11.0+cu128`` from ``https://download.pytorch.org/whl/cu128``.
  ``setup.sh --cuda12`` installs that pair. Not verified on a GPU here.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

GIB = 1024**3
GB = 1000**3

# --------------------------------------------------------------------------
# What the wheels need
# --------------------------------------------------------------------------
VLLM_VERSION = "0.26.0"

WHEELS = {
    # name: (CUDA of the wheels, minimum driver, human description)
    "cu130": ("13.0", (580,), "PyPI 默认 wheel（vllm 0.26.0 / torch 2.11.0，CUDA 13.0）"),
    "cu129": ("12.9", (525, 60, 13), "CUDA 12 的 wheel（vllm 0.26.0+cu129 / torch 2.11.0+cu128）"),
}
CUDA12_INDEXES = ("https://wheels.vllm.ai/0.26.0/cu129", "https://download.pytorch.org/whl/cu128")

# GPU memory (MiB, as nvidia-smi reports memory.total) needed to serve each
# profile with the course's engine settings, and to train the Qwen adapters
# (bf16 base 15.2 GB + LoRA + activations).
SERVE_MIB = {"qwen7b": 22000, "qwen7b-awq": 10000, "llama3b": 11000}
TRAIN_MIB = 22000
TRAIN_HERE = "在这里训练 adapter："  # gpu_verdict's line that setup.sh greps for (followed by 是 / 否)

# vLLM and torch 2.11's CUDA 13 wheels need compute capability >= 7.5
# (Turing); these older cards show up on rental markets.
MIN_COMPUTE_CAP = (7, 5)
PRE_TURING = re.compile(r"\b(V100|P100|P40|P4|P6|K80|M40|M60|GTX 10\d\d|TITAN (X|Xp|V))\b", re.IGNORECASE)

# --------------------------------------------------------------------------
# What the files need on disk (bytes)
# --------------------------------------------------------------------------
VENV_BYTES = 8 * GB  # torch + CUDA libraries + vLLM + deps in the venv
PIP_CACHE_BYTES = 4 * GB  # the wheels pip keeps in its cache (on the data disk)
ADAPTERS_BYTES = 1 * GB  # the four Qwen adapters (fp32 LoRA weights, about 0.95 GB)
MARGIN_BYTES = 1 * GB
ROOT_MIN_FREE = 2 * GB  # below this, Jupyter and the system itself start failing


def profile_key(profile: str, awq: bool = False) -> str:
    return "qwen7b-awq" if (profile == "qwen7b" and awq) else profile


# --------------------------------------------------------------------------
# nvidia-smi
# --------------------------------------------------------------------------
@dataclass
class Gpu:
    index: int
    name: str
    memory_mib: int
    driver: str
    compute_cap: tuple[int, int] | None = None


@dataclass
class Verdict:
    ok: bool
    kind: str  # "ok", "missing", "no-gpu", "driver", "memory", "arch", "parse", "disk"
    lines: list[str] = field(default_factory=list)

    def text(self) -> str:
        return "\n".join(self.lines)


def parse_version(text: str) -> tuple[int, ...]:
    """'580.65.06' -> (580, 65, 6). ValueError if it is not a dotted number."""
    text = text.strip()
    if not re.fullmatch(r"\d+(\.\d+)*", text):
        raise ValueError(f"不是驱动版本号：{text!r}")
    return tuple(int(p) for p in text.split("."))


def version_at_least(have: str | tuple[int, ...], need: tuple[int, ...]) -> bool:
    h = parse_version(have) if isinstance(have, str) else tuple(have)
    n = len(max(h, need, key=len))
    return h + (0,) * (n - len(h)) >= tuple(need) + (0,) * (n - len(need))


def fmt_version(v: tuple[int, ...]) -> str:
    return ".".join(f"{p:02d}" if i == 2 else str(p) for i, p in enumerate(v))


def parse_smi_csv(text: str) -> list[Gpu]:
    """Rows of ``nvidia-smi --query-gpu=name,memory.total,driver_version[,compute_cap] --format=csv,noheader``.

    ``memory.total`` reads like ``24564 MiB``; ``compute_cap`` like ``8.9``
    (older drivers do not know that field; setup.sh then asks without it).
    Raises ValueError on anything else.
    """
    gpus = []
    for i, line in enumerate(ln for ln in text.splitlines() if ln.strip()):
        parts = [p.strip() for p in line.split(",")]
        if len(parts) not in (3, 4):
            raise ValueError(f"nvidia-smi 的这一行看不懂：{line!r}")
        name, mem, driver = parts[:3]
        m = re.fullmatch(r"(\d+)\s*MiB", mem)
        if not m:
            raise ValueError(f"看不懂 memory.total 的值 {mem!r}（在 {line!r} 里）")
        parse_version(driver)
        cap = None
        if len(parts) == 4 and re.fullmatch(r"\d+\.\d+", parts[3]):
            major, minor = parts[3].split(".")
            cap = (int(major), int(minor))
        gpus.append(Gpu(i, name, int(m.group(1)), driver, cap))
    if not gpus:
        raise ValueError("nvidia-smi 没有列出任何 GPU")
    return gpus


def _driver_too_old_lines(gpu: Gpu, variant: str, need: tuple[int, ...]) -> list[str]:
    cuda, _, desc = WHEELS[variant]
    lines = [
        f"错误：NVIDIA 驱动 {gpu.driver} 太旧，用不了 {desc}：",
        f"      CUDA {cuda} 需要驱动 >= {fmt_version(need)}。",
        "      驱动属于宿主机：在实例里 pip install 什么、换什么镜像都改变不了它。",
        "      两条路，任选其一：",
    ]
    if variant == "cu130":
        c12_need = WHEELS["cu129"][1]
        lines += [
            "      (a) 换一台「最高CUDA版本」>= 13.0（驱动 >= 580）的 AutoDL 主机，",
            "          例如创建实例时选 CUDA 13.x 的基础镜像，然后重新运行 `bash autodl/setup.sh`；或者",
        ]
        if version_at_least(gpu.driver, c12_need):
            lines += [
                "      (b) 留在这台主机，改装 CUDA 12 的 wheel（vllm 0.26.0+cu129 来自",
                f"          {CUDA12_INDEXES[0]}，torch 2.11.0+cu128 来自 {CUDA12_INDEXES[1]}）：",
                "          bash autodl/setup.sh --cuda12   （再加上你原来的其它参数）",
            ]
        else:
            lines += [
                f"      (b) 不行：这个驱动连 CUDA 12 的最低要求（{fmt_version(c12_need)}）都不到，",
                "          只能换主机。",
            ]
    else:
        lines += [
            "      换一台驱动更新的 AutoDL 主机（「最高CUDA版本」至少 >= 12.8；>= 13.0 就不必加",
            "      --cuda12），再重新运行 setup。",
        ]
    return lines


def gpu_verdict(smi_text: str | None, smi_rc: int = 0, profile: str = "qwen7b", awq: bool = False,
                variant: str = "cu130") -> Verdict:
    """Decide whether this machine's GPU and driver can run the profile with the chosen wheels.

    ``smi_text`` is None when ``nvidia-smi`` is not on PATH; ``smi_rc`` is its exit status.
    """
    key = profile_key(profile, awq)
    if smi_text is None:
        return Verdict(False, "missing", [
            "错误：找不到 nvidia-smi：这个实例没有 NVIDIA 驱动 / GPU。",
            "      AutoDL 上以无卡模式开机的实例没有 GPU：关机后正常开机。",
            "      只想安装和下载、不用 GPU（更便宜）：加 --no-gpu 重新运行。",
        ])
    low = smi_text.lower()
    if smi_rc != 0 or "no devices were found" in low or "couldn't communicate" in low or "failed" in low:
        first = smi_text.strip().splitlines()[0] if smi_text.strip() else f"退出状态 {smi_rc}"
        return Verdict(False, "no-gpu", [
            f"错误：nvidia-smi 没有找到可用的 GPU（{first}）。",
            "      AutoDL 上以无卡模式开机的 GPU 实例就是这样：关机后正常开机。",
            "      只想安装和下载、不用 GPU：加 --no-gpu 重新运行。",
        ])
    try:
        gpus = parse_smi_csv(smi_text)
    except ValueError as e:
        return Verdict(False, "parse", [f"错误：读不懂 nvidia-smi 的输出：{e}"])
    gpu = gpus[0]
    _, need, desc = WHEELS[variant]
    cap = f"，计算能力 {gpu.compute_cap[0]}.{gpu.compute_cap[1]}" if gpu.compute_cap else ""
    more = f"（共 {len(gpus)} 块 GPU，课程只用 GPU 0）" if len(gpus) > 1 else ""
    lines = [f"GPU 0：{gpu.name}，{gpu.memory_mib} MiB，驱动 {gpu.driver}{cap}{more}"]
    if not version_at_least(gpu.driver, need):
        return Verdict(False, "driver", lines + _driver_too_old_lines(gpu, variant, need))
    lines.append(f"驱动 {gpu.driver} >= {fmt_version(need)}：可以用 {desc}")
    old_arch = (gpu.compute_cap is not None and gpu.compute_cap < MIN_COMPUTE_CAP) or (
        gpu.compute_cap is None and PRE_TURING.search(gpu.name))
    if old_arch:
        return Verdict(False, "arch", lines + [
            f"错误：{gpu.name} 比 Turing 架构还老（计算能力 < 7.5），vLLM {VLLM_VERSION} 和 torch 2.11 不支持它。",
            "      请改租 RTX 4090 / 3090 / A10 / A100 / L20 这一类 GPU。",
        ])
    if gpu.memory_mib < SERVE_MIB[key]:
        hint = {
            "qwen7b": "加 --awq 重新运行（Qwen2.5-7B-Instruct-AWQ，16 GB 的卡放得下），或者用 --profile llama3b",
            "qwen7b-awq": "换一块 >= 12 GB 的 GPU，或者在 >= 12 GB 的卡上用 --profile llama3b",
            "llama3b": "换一块 >= 12 GB 的 GPU",
        }[key]
        return Verdict(False, "memory", lines + [
            f"错误：{gpu.memory_mib} MiB 显存不够跑配置 {key}（大约要 {SERVE_MIB[key]} MiB）。",
            f"      {hint}。",
        ])
    lines.append(f"显存 {gpu.memory_mib} MiB >= {SERVE_MIB[key]} MiB：可以跑配置 {key}")
    # setup.sh reads this line (TRAIN_HERE): the adapters are trained on the bf16 base, whatever is served.
    lines.append(f"{TRAIN_HERE}{'是' if gpu.memory_mib >= TRAIN_MIB else '否'}"
                 f"（在 bf16 7B 基座上训练要 >= {TRAIN_MIB} MiB 显存）")
    return Verdict(True, "ok", lines)


# --------------------------------------------------------------------------
# df
# --------------------------------------------------------------------------
@dataclass
class DfRow:
    mount: str
    avail_bytes: int
    size_bytes: int


def parse_df(text: str) -> DfRow:
    """The filesystem row of ``df -Pk PATH`` (POSIX format, 1024-byte blocks)."""
    rows = [ln for ln in text.strip().splitlines() if ln.strip()]
    if len(rows) < 2:
        raise ValueError(f"df 的输出看不懂：{text!r}")
    parts = rows[-1].split()
    if len(parts) < 6 or not all(p.isdigit() for p in parts[1:4]):
        raise ValueError(f"df 的这一行看不懂：{rows[-1]!r}")
    return DfRow(mount=" ".join(parts[5:]), avail_bytes=int(parts[3]) * 1024, size_bytes=int(parts[1]) * 1024)


@dataclass
class Need:
    what: str
    where: str  # "root", "data" or "venv": which df output the bytes land on
    bytes: int


def disk_needs(model_remaining: int, venv_ready: bool, train: bool, adapters_done: bool) -> list[Need]:
    """What still has to be written, and on which disk."""
    needs = []
    if not venv_ready:
        needs.append(Need("Python 环境（torch、vLLM、CUDA 库）", "venv", VENV_BYTES))
        needs.append(Need("pip 缓存", "data", PIP_CACHE_BYTES))
    if model_remaining > 0:
        needs.append(Need("还要下载的模型文件", "data", model_remaining))
    if train and not adapters_done:
        needs.append(Need("训练出的四个 adapter", "data", ADAPTERS_BYTES))
    return needs


def merged_copy_bytes(profile: str) -> int:
    """Lab 05 writes one merged copy of the base (in its own dtype) under ``build/`` and removes it at the end."""
    from course_tools.gpu import download  # standard library only as well

    return download.ITEMS[profile].approx_bytes


def lab_disk_lines(rows: dict[str, DfRow], profile: str, needs: list[Need]) -> list[str]:
    """What the labs write for a while (not the setup): a note, or a warning when the repository's disk
    will not hold it after the setup's own needs."""
    if profile != "qwen7b":  # llama3b's labs open in read mode (profiles.py): Lab 05 writes nothing there
        return []
    row = rows["venv"]
    after = row.avail_bytes - sum(n.bytes for n in needs if rows[n.where].mount == row.mount)
    need = merged_copy_bytes(profile)
    verdict = "放得下" if after >= need + MARGIN_BYTES else "放不下：Lab 05 的合并一节到时会报磁盘不够并停下"
    return [(f"实验：Lab 05 会在 {row.mount} 的 build/ 下写一份基座的合并副本（{need / GIB:.1f} GiB），这一节结束时删掉；"
             f"setup 完成后那里还剩 {max(after, 0) / GIB:.1f} GiB：{verdict}")]


# The data disk of a fresh instance with the repository cloned onto it (autodl/README.md §2), per setup
# command: what the setup's disk check (step 2) and its Lab 05 line add up to. autodl/README.md shows this
# table (tests/test_autodl.py compares): `python3 autodl/run_module.py course_tools.gpu.checks disk-plan`.
DISK_PLAN_ROWS = (
    ("`bash autodl/setup.sh`（24 GB 卡，训练 adapter）", "qwen7b", False, False),
    ("`--awq`（16 GB 卡；adapter 从 4090 实例复制来）", "qwen7b", True, False),
    ("`--awq`（24 GB 卡：另下 bf16 基座并训练）", "qwen7b", True, True),
    ("`--profile llama3b`", "llama3b", False, False),
)


def disk_plan(profile: str, awq: bool = False, with_bf16: bool = False) -> dict[str, int]:
    """Bytes a fresh data disk must hold (repository, venv and caches on it), by kind, and their total: the
    setup's needs, Lab 05's temporary merged copy and the margin the checks keep."""
    from course_tools.gpu import download  # standard library only as well

    model = sum(i.approx_bytes for i in download.plan_items(profile, awq=awq, with_bf16=with_bf16))
    plan = {"venv": VENV_BYTES, "pip": PIP_CACHE_BYTES, "model": model,
            # trained here, or (16 GB card) copied from a 4090 instance: on the disk all the same
            "adapters": ADAPTERS_BYTES if profile == "qwen7b" else 0,
            "merged": merged_copy_bytes(profile) if profile == "qwen7b" else 0,
            "margin": MARGIN_BYTES}
    plan["total"] = sum(plan.values())
    return plan


def disk_plan_table() -> str:
    """The plan as the Markdown table of autodl/README.md (GiB, as `df -h` and the setup's messages count)."""
    lines = ["| 命令 | 虚拟环境 | pip 缓存 | 下载的模型 | 4 个 adapter | Lab 05 的临时合并副本 | 余量 | 合计 |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for label, profile, awq, with_bf16 in DISK_PLAN_ROWS:
        p = disk_plan(profile, awq, with_bf16)
        cells = [f"{p[k] / GIB:.1f}" if p[k] else "–" for k in ("venv", "pip", "model", "adapters", "merged", "margin")]
        lines.append(f"| {label} | {' | '.join(cells)} | **{p['total'] / GIB:.1f} GiB** |")
    return "\n".join(lines)


def disk_verdict(rows: dict[str, DfRow], needs: list[Need]) -> Verdict:
    """Add the needs up per filesystem (two labels can be the same disk) and compare with what is free."""
    per_mount: dict[str, list[Need]] = {}
    for n in needs:
        per_mount.setdefault(rows[n.where].mount, []).append(n)
    lines, ok = [], True
    mounts = {r.mount: r for r in rows.values()}
    for mount, row in mounts.items():
        items = per_mount.get(mount, [])
        need = sum(n.bytes for n in items) + (MARGIN_BYTES if items else 0)
        if mount == rows["root"].mount:
            need = max(need, ROOT_MIN_FREE)
        free = row.avail_bytes
        detail = "、".join(f"{n.what} {n.bytes / GIB:.1f} GiB" for n in items) or "没有新东西要写"
        if free >= need:
            lines.append(f"磁盘 {mount}：剩 {free / GIB:.1f} GiB，需要 {need / GIB:.1f} GiB（{detail}）：够用")
            continue
        ok = False
        lines.append(f"错误：磁盘 {mount} 只剩 {free / GIB:.1f} GiB，需要 {need / GIB:.1f} GiB（{detail}）。")
        if mount == rows["root"].mount:
            lines += [
                "      系统盘常被 pip/conda 的缓存占满。可以这样腾出空间：",
                "        pip cache purge; conda clean -a -y; rm -rf ~/.cache/pip ~/.cache/huggingface /tmp/*",
                "      大文件放在数据盘 /root/autodl-tmp 上（把课程仓库克隆到那里：虚拟环境建在仓库里面）。",
            ]
        else:
            lines += [
                "      在数据盘上腾出空间（/root/autodl-tmp 下的旧模型），或者在 AutoDL 控制台扩容数据盘；",
                "      16 GB 的卡用 --awq 需要的少一些（模型 5.6 GB）。",
            ]
    return Verdict(ok, "ok" if ok else "disk", lines)


# --------------------------------------------------------------------------
# Command line (used by autodl/setup.sh)
# --------------------------------------------------------------------------
def _disk_command(args) -> Verdict:
    from course_tools.gpu import download  # standard library only as well

    rows = {"root": parse_df(args.df_root), "data": parse_df(args.df_data),
            "venv": parse_df(args.df_venv or args.df_root)}
    remaining = 0
    for item in download.plan_items(args.profile, awq=args.awq, with_bf16=args.with_bf16):
        remaining += download.remaining_bytes(item, Path(args.models_dir))
    adapters_done = False
    if args.train:
        from course_tools.gpu import train_adapters as gpu_adapters

        adapters_done = all(gpu_adapters.adapter_complete(p)
                            for p in gpu_adapters.adapter_dirs(args.models_dir, args.profile).values())
    needs = disk_needs(remaining, args.venv_ready, args.train, adapters_done)
    v = disk_verdict(rows, needs)
    v.lines += lab_disk_lines(rows, args.profile, needs)
    return v


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="autodl/setup.sh 的 GPU/驱动与磁盘检查。")
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gpu", help="拿 nvidia-smi 的输出对照 wheel 和配置的要求")
    g.add_argument("--smi", help="nvidia-smi --query-gpu=... 的输出；没有 nvidia-smi 时省略")
    g.add_argument("--smi-rc", type=int, default=0)
    g.add_argument("--profile", default="qwen7b", choices=sorted({k.split("-")[0] for k in SERVE_MIB}))
    g.add_argument("--awq", action="store_true")
    g.add_argument("--variant", default="cu130", choices=sorted(WHEELS))
    d = sub.add_parser("disk", help="检查剩下要安装、下载、训练的东西放不放得下")
    d.add_argument("--profile", default="qwen7b")
    d.add_argument("--awq", action="store_true")
    d.add_argument("--with-bf16", action="store_true", help="还要 bf16 基座（AWQ + 训练）")
    d.add_argument("--models-dir", required=True)
    d.add_argument("--df-root", required=True, help="df -Pk / 的输出")
    d.add_argument("--df-data", required=True, help="df -Pk <数据盘> 的输出")
    d.add_argument("--df-venv", help="df -Pk <venv 所在文件夹> 的输出")
    d.add_argument("--venv-ready", action="store_true")
    d.add_argument("--train", action="store_true", help="adapter 要在这里训练")
    sub.add_parser("disk-plan", help="打印 autodl/README.md 里的数据盘表（新实例）")
    args = ap.parse_args(argv)
    if args.cmd == "disk-plan":
        print(disk_plan_table())
        return 0
    if args.cmd == "gpu":
        v = gpu_verdict(args.smi, args.smi_rc, args.profile, args.awq, args.variant)
    else:
        try:
            v = _disk_command(args)
        except ValueError as e:
            v = Verdict(False, "parse", [f"错误：读不懂 df 的输出：{e}"])
    print(v.text(), file=sys.stdout if v.ok else sys.stderr)
    return 0 if v.ok else 1


if __name__ == "__main__":
    sys.exit(main())
