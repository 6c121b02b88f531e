"""GPU, driver and disk checks for the AutoDL setup (``autodl/setup.sh``).

Everything here is standard library only, so ``setup.sh`` runs it with the
instance's own ``python3`` before the course's virtual environment exists, through
``autodl/run_module.py`` (which skips ``course_utils/__init__.py`` and the dependencies it imports)::

    python3 autodl/run_module.py course_utils.gpu.checks gpu --profile qwen7b --smi "$(nvidia-smi --query-gpu=... )"
    python3 autodl/run_module.py course_utils.gpu.checks disk --profile qwen7b --df-data "$(df -Pk /root/autodl-tmp)" ...

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
    "cu130": ("13.0", (580,), "default PyPI wheels (vllm 0.26.0 / torch 2.11.0, CUDA 13.0)"),
    "cu129": ("12.9", (525, 60, 13), "CUDA 12 wheels (vllm 0.26.0+cu129 / torch 2.11.0+cu128)"),
}
CUDA12_INDEXES = ("https://wheels.vllm.ai/0.26.0/cu129", "https://download.pytorch.org/whl/cu128")

# GPU memory (MiB, as nvidia-smi reports memory.total) needed to serve each
# profile with the course's engine settings, and to train the Qwen adapters
# (bf16 base 15.2 GB + LoRA + activations).
SERVE_MIB = {"qwen7b": 22000, "qwen7b-awq": 10000, "llama3b": 11000}
TRAIN_MIB = 22000

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
        raise ValueError(f"not a driver version: {text!r}")
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
            raise ValueError(f"unexpected nvidia-smi line: {line!r}")
        name, mem, driver = parts[:3]
        m = re.fullmatch(r"(\d+)\s*MiB", mem)
        if not m:
            raise ValueError(f"unexpected memory.total {mem!r} in {line!r}")
        parse_version(driver)
        cap = None
        if len(parts) == 4 and re.fullmatch(r"\d+\.\d+", parts[3]):
            major, minor = parts[3].split(".")
            cap = (int(major), int(minor))
        gpus.append(Gpu(i, name, int(m.group(1)), driver, cap))
    if not gpus:
        raise ValueError("nvidia-smi printed no GPU")
    return gpus


def _driver_too_old_lines(gpu: Gpu, variant: str, need: tuple[int, ...]) -> list[str]:
    cuda, _, desc = WHEELS[variant]
    lines = [
        f"ERROR: NVIDIA driver {gpu.driver} is too old for the {desc}:",
        f"       CUDA {cuda} needs driver >= {fmt_version(need)}.",
        "       The driver belongs to the host machine; no pip install or image inside the instance changes it.",
        "       What to do, either:",
    ]
    if variant == "cu130":
        c12_need = WHEELS["cu129"][1]
        lines += [
            "       (a) rent another AutoDL host whose '最高CUDA版本' (max CUDA) is >= 13.0 (driver >= 580),",
            "           e.g. by choosing a CUDA 13.x base image when creating the instance, then rerun",
            "           `bash autodl/setup.sh`; or",
        ]
        if version_at_least(gpu.driver, c12_need):
            lines += [
                "       (b) stay on this host and install the CUDA 12 wheels instead (vllm 0.26.0+cu129 from",
                f"           {CUDA12_INDEXES[0]} with torch 2.11.0+cu128 from {CUDA12_INDEXES[1]}):",
                "           bash autodl/setup.sh --cuda12   (plus your other flags)",
            ]
        else:
            lines += [
                f"       (b) no: this driver is even older than CUDA 12's minimum ({fmt_version(c12_need)}),",
                "           so only another host helps.",
            ]
    else:
        lines += [
            "       rent another AutoDL host with a newer driver ('最高CUDA版本' >= 12.8 at least; >= 13.0 lets",
            "       you drop --cuda12), then rerun the setup.",
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
            "ERROR: nvidia-smi not found: this instance has no NVIDIA driver / GPU.",
            "       On AutoDL: an instance started in 无卡模式 (no-GPU mode) has no GPU; shut it down and start",
            "       it normally (开机). To only install and download without a GPU (cheaper), rerun with --no-gpu.",
        ])
    low = smi_text.lower()
    if smi_rc != 0 or "no devices were found" in low or "couldn't communicate" in low or "failed" in low:
        first = smi_text.strip().splitlines()[0] if smi_text.strip() else f"exit status {smi_rc}"
        return Verdict(False, "no-gpu", [
            f"ERROR: nvidia-smi found no usable GPU ({first}).",
            "       On AutoDL: a GPU instance started in 无卡模式 shows this; restart it normally (开机).",
            "       To only install and download without a GPU, rerun with --no-gpu.",
        ])
    try:
        gpus = parse_smi_csv(smi_text)
    except ValueError as e:
        return Verdict(False, "parse", [f"ERROR: could not read nvidia-smi's output: {e}"])
    gpu = gpus[0]
    _, need, desc = WHEELS[variant]
    cap = f", compute capability {gpu.compute_cap[0]}.{gpu.compute_cap[1]}" if gpu.compute_cap else ""
    more = f" ({len(gpus)} GPUs; the course uses GPU 0)" if len(gpus) > 1 else ""
    lines = [f"GPU 0: {gpu.name}, {gpu.memory_mib} MiB, driver {gpu.driver}{cap}{more}"]
    if not version_at_least(gpu.driver, need):
        return Verdict(False, "driver", lines + _driver_too_old_lines(gpu, variant, need))
    lines.append(f"driver {gpu.driver} >= {fmt_version(need)}: OK for the {desc}")
    old_arch = (gpu.compute_cap is not None and gpu.compute_cap < MIN_COMPUTE_CAP) or (
        gpu.compute_cap is None and PRE_TURING.search(gpu.name))
    if old_arch:
        return Verdict(False, "arch", lines + [
            f"ERROR: {gpu.name} is older than Turing (compute capability < 7.5); vLLM {VLLM_VERSION} and",
            "       torch 2.11 do not support it. Rent an RTX 4090 / 3090 / A10 / A100 / L20 class GPU instead.",
        ])
    if gpu.memory_mib < SERVE_MIB[key]:
        hint = {
            "qwen7b": "rerun with --awq (Qwen2.5-7B-Instruct-AWQ, fits 16 GB cards) or --profile llama3b",
            "qwen7b-awq": "use a GPU with >= 12 GB, or --profile llama3b on >= 12 GB",
            "llama3b": "use a GPU with >= 12 GB",
        }[key]
        return Verdict(False, "memory", lines + [
            f"ERROR: {gpu.memory_mib} MiB of GPU memory is not enough for profile {key} (needs about "
            + f"{SERVE_MIB[key]} MiB).",
            f"       {hint}.",
        ])
    lines.append(f"GPU memory {gpu.memory_mib} MiB >= {SERVE_MIB[key]} MiB: OK for profile {key}")
    # setup.sh reads this line: the adapters are trained on the bf16 base, whatever is served.
    lines.append(f"train adapters here: {'yes' if gpu.memory_mib >= TRAIN_MIB else 'no'} "
                 f"(training on the bf16 7B base needs >= {TRAIN_MIB} MiB)")
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
        raise ValueError(f"unexpected df output: {text!r}")
    parts = rows[-1].split()
    if len(parts) < 6 or not all(p.isdigit() for p in parts[1:4]):
        raise ValueError(f"unexpected df line: {rows[-1]!r}")
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
        needs.append(Need("Python environment (torch, vLLM, CUDA libraries)", "venv", VENV_BYTES))
        needs.append(Need("pip cache", "data", PIP_CACHE_BYTES))
    if model_remaining > 0:
        needs.append(Need("model files still to download", "data", model_remaining))
    if train and not adapters_done:
        needs.append(Need("the four trained adapters", "data", ADAPTERS_BYTES))
    return needs


def merged_copy_bytes(profile: str) -> int:
    """Lab 05 writes one merged copy of the base (in its own dtype) under ``build/`` and removes it at the end."""
    from . import download  # standard library only as well

    return download.ITEMS[profile].approx_bytes


def lab_disk_lines(rows: dict[str, DfRow], profile: str, needs: list[Need]) -> list[str]:
    """What the labs write for a while (not the setup): a note, or a warning when the repository's disk
    will not hold it after the setup's own needs."""
    if profile != "qwen7b":  # llama3b's labs open in read mode (profiles.py): Lab 05 writes nothing there
        return []
    row = rows["venv"]
    after = row.avail_bytes - sum(n.bytes for n in needs if rows[n.where].mount == row.mount)
    need = merged_copy_bytes(profile)
    verdict = "OK" if after >= need + MARGIN_BYTES else "NOT ENOUGH: Lab 05's merge section will stop with this message"
    return [(f"labs: Lab 05 writes a merged copy of the base ({need / GIB:.1f} GiB) under build/ on {row.mount} and "
             f"removes it when the section ends; {max(after, 0) / GIB:.1f} GiB will be free there after setup: {verdict}")]


# The data disk of a fresh instance with the repository cloned onto it (autodl/README.md §2), per setup
# command: what the setup's disk check (step 2) and its Lab 05 line add up to. autodl/README.md shows this
# table (tests/test_autodl.py compares): `python3 autodl/run_module.py course_utils.gpu.checks disk-plan`.
DISK_PLAN_ROWS = (
    ("`bash autodl/setup.sh`（24 GB 卡，训练 adapter）", "qwen7b", False, False),
    ("`--awq`（16 GB 卡；adapter 从 4090 实例复制来）", "qwen7b", True, False),
    ("`--awq`（24 GB 卡：另下 bf16 基座并训练）", "qwen7b", True, True),
    ("`--profile llama3b`", "llama3b", False, False),
)


def disk_plan(profile: str, awq: bool = False, with_bf16: bool = False) -> dict[str, int]:
    """Bytes a fresh data disk must hold (repository, venv and caches on it), by kind, and their total: the
    setup's needs, Lab 05's temporary merged copy and the margin the checks keep."""
    from . import download  # standard library only as well

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


def require_free_disk(path, need_bytes: int, what: str) -> None:
    """Raise a clear error (how much, where, what to do) unless ``path``'s disk has ``need_bytes`` free."""
    import shutil

    path = Path(path)
    probe = next(p for p in [path, *path.parents] if p.exists())
    free = shutil.disk_usage(probe).free
    if free < need_bytes + MARGIN_BYTES:
        raise RuntimeError(
            f"{what} needs {need_bytes / GIB:.1f} GiB on the disk of {probe} (plus {MARGIN_BYTES / GIB:.0f} GiB "
            f"margin), but only {free / GIB:.1f} GiB is free. Free space there (old models, `pip cache purge`, "
            f"build/) or enlarge the data disk (AutoDL: 扩容数据盘), then run the cell again.")


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
        detail = ", ".join(f"{n.what} {n.bytes / GIB:.1f} GiB" for n in items) or "nothing new"
        if free >= need:
            lines.append(f"disk {mount}: {free / GIB:.1f} GiB free, needs {need / GIB:.1f} GiB ({detail}): OK")
            continue
        ok = False
        lines.append(f"ERROR: disk {mount} has {free / GIB:.1f} GiB free but needs {need / GIB:.1f} GiB ({detail}).")
        if mount == rows["root"].mount:
            lines += [
                "       The system disk fills up with pip/conda caches. Free space with e.g.:",
                "         pip cache purge; conda clean -a -y; rm -rf ~/.cache/pip ~/.cache/huggingface /tmp/*",
                "       and keep big files on the data disk /root/autodl-tmp (clone the course there: the venv",
                "       is created inside the repository).",
            ]
        else:
            lines += [
                "       Free space on the data disk (old models under /root/autodl-tmp) or enlarge it in the",
                "       AutoDL console (扩容数据盘); with 16 GB cards --awq needs less (5.6 GB model).",
            ]
    return Verdict(ok, "ok" if ok else "disk", lines)


# --------------------------------------------------------------------------
# Command line (used by autodl/setup.sh)
# --------------------------------------------------------------------------
def _disk_command(args) -> Verdict:
    from . import download  # standard library only as well

    rows = {"root": parse_df(args.df_root), "data": parse_df(args.df_data),
            "venv": parse_df(args.df_venv or args.df_root)}
    remaining = 0
    for item in download.plan_items(args.profile, awq=args.awq, with_bf16=args.with_bf16):
        remaining += download.remaining_bytes(item, Path(args.models_dir))
    adapters_done = False
    if args.train:
        from . import train_adapters as gpu_adapters

        adapters_done = all(gpu_adapters.adapter_complete(p)
                            for p in gpu_adapters.adapter_dirs(args.models_dir, args.profile).values())
    needs = disk_needs(remaining, args.venv_ready, args.train, adapters_done)
    v = disk_verdict(rows, needs)
    v.lines += lab_disk_lines(rows, args.profile, needs)
    return v


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="GPU/driver and disk checks for autodl/setup.sh.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gpu", help="check nvidia-smi's output against the wheels and the profile")
    g.add_argument("--smi", help="output of nvidia-smi --query-gpu=...; omit when nvidia-smi is missing")
    g.add_argument("--smi-rc", type=int, default=0)
    g.add_argument("--profile", default="qwen7b", choices=sorted({k.split("-")[0] for k in SERVE_MIB}))
    g.add_argument("--awq", action="store_true")
    g.add_argument("--variant", default="cu130", choices=sorted(WHEELS))
    d = sub.add_parser("disk", help="check free disk space for what is still to install/download/train")
    d.add_argument("--profile", default="qwen7b")
    d.add_argument("--awq", action="store_true")
    d.add_argument("--with-bf16", action="store_true", help="the bf16 base is also needed (AWQ + training)")
    d.add_argument("--models-dir", required=True)
    d.add_argument("--df-root", required=True, help="output of df -Pk /")
    d.add_argument("--df-data", required=True, help="output of df -Pk <data disk>")
    d.add_argument("--df-venv", help="output of df -Pk <folder of the venv>")
    d.add_argument("--venv-ready", action="store_true")
    d.add_argument("--train", action="store_true", help="the adapters will be trained here")
    sub.add_parser("disk-plan", help="print the data-disk table of autodl/README.md (a fresh instance)")
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
            v = Verdict(False, "parse", [f"ERROR: could not read df's output: {e}"])
    print(v.text(), file=sys.stdout if v.ok else sys.stderr)
    return 0 if v.ok else 1


if __name__ == "__main__":
    sys.exit(main())
