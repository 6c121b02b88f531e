"""Before an engine or a server starts on a GPU: is there room, and if not, who holds it?

vLLM asks, at start, for ``gpu_memory_utilization`` of the card's *total* memory, and fails with a
generic out-of-memory error when another process already holds part of it: on an AutoDL 4090 that
is usually a second lab kernel whose engine is still alive. :func:`check` says so in plain words,
naming the processes that hold the memory (``nvidia-smi``'s compute apps) and what to do.

The decision is a pure function of ``nvidia-smi``'s text (tests feed it fake outputs);
:func:`ensure_room` runs ``nvidia-smi`` and raises :class:`GpuBusy` (standard library only).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass

MIB = 1024**2
GPU_QUERY = ("nvidia-smi", "--query-gpu=index,memory.total,memory.used,memory.free",
             "--format=csv,noheader,nounits")
APPS_QUERY = ("nvidia-smi", "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader,nounits")


class GpuBusy(RuntimeError):
    """Not enough free GPU memory for the engine about to start; the message names who holds it."""


@dataclass(frozen=True)
class GpuMemory:
    index: int
    total_mib: int
    used_mib: int
    free_mib: int


@dataclass(frozen=True)
class App:
    pid: int
    name: str
    used_mib: int


def _rows(text: str) -> list[list[str]]:
    return [[c.strip() for c in line.split(",")] for line in (text or "").splitlines() if line.strip()]


def parse_gpus(text: str) -> list[GpuMemory]:
    """``nvidia-smi --query-gpu=index,memory.total,memory.used,memory.free --format=csv,noheader,nounits``."""
    return [GpuMemory(int(r[0]), int(float(r[1])), int(float(r[2])), int(float(r[3]))) for r in _rows(text)
            if len(r) >= 4 and r[1].replace(".", "").isdigit()]


def parse_apps(text: str) -> list[App]:
    """``nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader,nounits``."""
    out = []
    for r in _rows(text):
        if len(r) >= 3 and r[0].isdigit():
            used = r[2] if r[2].replace(".", "").isdigit() else "0"
            out.append(App(int(r[0]), r[1], int(float(used))))
    return out


def check(gpu_text: str, apps_text: str, utilization: float, device: int = 0, me: int | None = None,
          what: str = "引擎") -> str | None:
    """None when ``utilization`` x total fits in the free memory of GPU ``device``, else what to say."""
    gpus = {g.index: g for g in parse_gpus(gpu_text)}
    g = gpus.get(device)
    if g is None:
        return None                                   # nothing to judge by: let vLLM decide
    need = utilization * g.total_mib
    if g.free_mib >= need:
        return None
    others = [a for a in parse_apps(apps_text) if a.pid != (me if me is not None else os.getpid())]
    held = "；".join(f"pid {a.pid}（{a.name}，{a.used_mib / 1024:.1f} GiB）" for a in others) or "nvidia-smi 没有列出进程"
    return (f"GPU {device} 只有 {g.free_mib / 1024:.1f} GiB 空闲（共 {g.total_mib / 1024:.1f} GiB），而{what}按 "
            f"gpu_memory_utilization={utilization} 要总量的这一份（{need / 1024:.1f} GiB），vLLM 会启动失败。"
            f"占用者：{held}。如果那是另一个实验的内核，先关掉它（JupyterLab：Kernel > Shut Down Kernel）或停掉它的服务，"
            f"再运行这一格；也可以调低 gpu_memory_utilization。")


def ensure_room(utilization: float, device: int = 0, what: str = "引擎") -> None:
    """Raise :class:`GpuBusy` when the GPU cannot give ``utilization`` of its memory (no-op without nvidia-smi)."""
    if not shutil.which("nvidia-smi"):
        return

    def run(argv):
        r = subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False)
        return r.stdout if r.returncode == 0 else ""

    problem = check(run(GPU_QUERY), run(APPS_QUERY), utilization, device, what=what)
    if problem:
        raise GpuBusy(problem)


def ensure_room_for(profile, what: str) -> None:
    """:func:`ensure_room` for a profile's engine settings (a no-op for a CPU profile)."""
    if profile.hardware == "cuda":
        ensure_room(profile.engine.get("gpu_memory_utilization", 0.9), what=what)
