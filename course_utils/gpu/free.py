"""Before an engine or a server starts on a GPU: is there room, and if not, who holds it?

vLLM asks, at start, for ``gpu_memory_utilization`` of the card's *total* memory as CUDA reports it (nvidia-smi's
total minus what the driver reserves: ``memory.reserved``), and fails with a generic out-of-memory error when
another process already holds part of it: on an AutoDL 4090 that is usually a second lab kernel whose engine is
still alive. :func:`check` says so in plain words, naming the processes that hold the memory and what to do.

Who holds it: ``nvidia-smi``'s compute apps where it lists them. Inside a Docker container (AutoDL) it lists
none, so the message names what the course can see instead (:func:`visible_holders`): this kernel's own engine
and server processes, other course-tagged processes (:mod:`course_utils.processes`) and other Jupyter kernels.

The decision is a pure function of ``nvidia-smi``'s text (tests feed it fake outputs);
:func:`ensure_room` runs ``nvidia-smi`` (and psutil, for what it can see) and raises :class:`GpuBusy`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass

from ..errors import CourseError

MIB = 1024**2
GPU_QUERY = ("nvidia-smi", "--query-gpu=index,memory.total,memory.used,memory.free,memory.reserved",
             "--format=csv,noheader,nounits")
GPU_QUERY_OLD = ("nvidia-smi", "--query-gpu=index,memory.total,memory.used,memory.free",
                 "--format=csv,noheader,nounits")   # a driver that does not know memory.reserved
RTX_4090_SMI_MIB = 24564      # nvidia-smi's total of an RTX 4090; CUDA's is memory.RTX_4090_BYTES (24,210 MiB)
APPS_QUERY = ("nvidia-smi", "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader,nounits")


class GpuBusy(CourseError, RuntimeError):
    """Not enough free GPU memory for the engine about to start; the message names who holds it."""


@dataclass(frozen=True)
class GpuMemory:
    index: int
    total_mib: int
    used_mib: int
    free_mib: int
    reserved_mib: int | None = None

    @property
    def cuda_total_mib(self) -> float:
        """The total vLLM takes its fraction of: CUDA's, which leaves out the driver's reserved memory."""
        if self.reserved_mib is not None:
            return self.total_mib - self.reserved_mib
        if self.total_mib == RTX_4090_SMI_MIB:
            from ..memory.model import RTX_4090_BYTES

            return RTX_4090_BYTES / MIB
        return self.total_mib


@dataclass(frozen=True)
class App:
    pid: int
    name: str
    used_mib: int


def _rows(text: str) -> list[list[str]]:
    return [[c.strip() for c in line.split(",")] for line in (text or "").splitlines() if line.strip()]


def parse_gpus(text: str) -> list[GpuMemory]:
    """``nvidia-smi --query-gpu=index,memory.total,memory.used,memory.free[,memory.reserved] --format=csv,...``."""
    def reserved(r):
        return int(float(r[4])) if len(r) >= 5 and r[4].replace(".", "").isdigit() else None

    return [GpuMemory(int(r[0]), int(float(r[1])), int(float(r[2])), int(float(r[3])), reserved(r))
            for r in _rows(text) if len(r) >= 4 and r[1].replace(".", "").isdigit()]


def parse_apps(text: str) -> list[App]:
    """``nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader,nounits``."""
    out = []
    for r in _rows(text):
        if len(r) >= 3 and r[0].isdigit():
            used = r[2] if r[2].replace(".", "").isdigit() else "0"
            out.append(App(int(r[0]), r[1], int(float(used))))
    return out


OWN_HINT = ("这是这个内核自己的引擎（或这个内核本身）占的：是在重新运行这一格吗？创建引擎的那一格"
            "（llm = LLM(...)）会先释放旧引擎；否则 Kernel > Restart Kernel 后从头运行")
OWN_SERVER_HINT = "这是这个内核自己启动的服务：不用了就停掉它（srv.stop()，或让它的 with 块结束）"
KERNEL_HINT = ("关掉不用的那个内核：JupyterLab 左侧栏“正在运行的终端和内核”（Running Terminals and Kernels）里点 "
               "Shut Down，或在那个笔记本里 Kernel > Shut Down Kernel；也可以在终端里用上面的 kill 命令")


def room_problem(gpu_text: str, apps_text: str, utilization: float, device: int = 0, me=None,
                 what: str = "引擎", seen=()) -> str | None:
    """None when ``utilization`` x the CUDA total fits in the free memory of GPU ``device``, else what to say.

    ``me``: this kernel's pids (a pid or a set: itself and its descendants; default this process), whose
    processes are its own, never "another lab's kernel". ``seen``: lines naming what the course can see, for
    when ``nvidia-smi`` lists no process (a container; :func:`visible_holders`)."""
    gpus = {g.index: g for g in parse_gpus(gpu_text)}
    g = gpus.get(device)
    if g is None:
        return None                                   # nothing to judge by: let vLLM decide
    need = utilization * g.cuda_total_mib
    if g.free_mib >= need:
        return None
    mine = {os.getpid()} if me is None else {me} if isinstance(me, int) else set(me)
    apps = parse_apps(apps_text)
    own = [a for a in apps if a.pid in mine]
    others = [a for a in apps if a.pid not in mine]
    parts = []
    if own:
        parts.append("；".join(f"pid {a.pid}（{a.name}，{a.used_mib / 1024:.1f} GiB）" for a in own) + f"：{OWN_HINT}。")
    if others:
        parts.append("；".join(f"pid {a.pid}（{a.name}，{a.used_mib / 1024:.1f} GiB）" for a in others)
                     + "。如果那是另一个实验的内核，先关掉它（JupyterLab：Kernel > Shut Down Kernel）或停掉它的服务，"
                       "再运行这一格")
    if not apps:
        shown = "；".join(seen) if seen else "课程也没看到别的 Jupyter 内核或课程启动的进程（占用者可能不在这个容器里）"
        parts.append(f"nvidia-smi 没有列出进程（AutoDL 这样的容器里通常如此）。课程能看到的：{shown}。"
                     f"{KERNEL_HINT}，再运行这一格")
    return (f"GPU {device} 只有 {g.free_mib / 1024:.1f} GiB 空闲（共 {g.total_mib / 1024:.1f} GiB），而{what}按 "
            f"gpu_memory_utilization={utilization} 要 CUDA 可用总量（{g.cuda_total_mib / 1024:.1f} GiB，不含驱动保留的"
            f"部分）的这一份（{need / 1024:.1f} GiB），vLLM 会启动失败。占用者：{''.join(parts)}；"
            f"也可以调低 gpu_memory_utilization。")


def kernel_pids() -> set[int]:
    """This process and all its descendants (its engine's EngineCore, its servers): never "another kernel"."""
    import psutil

    me = psutil.Process()
    try:
        return {me.pid, *(c.pid for c in me.children(recursive=True))}
    except psutil.Error:
        return {me.pid}


def _describe(p, width: int = 80) -> str:
    cmd = " ".join(p.info.get("cmdline") or []) or p.info.get("name") or "?"
    return cmd if len(cmd) <= width else cmd[:width] + "…"


def visible_holders(mine: set[int]) -> list[str]:
    """What the course can see that may hold the GPU when nvidia-smi lists nothing: this kernel's own vLLM
    processes, other course-tagged processes (servers of other kernels, left-overs) and other Jupyter kernels."""
    import psutil

    from .. import processes

    never = processes._never()
    own, own_servers, course, kernels = [], [], [], []
    tagged = {p.pid for p in processes.leftovers()}
    for p in psutil.process_iter(["pid", "ppid", "name", "cmdline"]):
        pid, cmd = p.info["pid"], " ".join(p.info.get("cmdline") or [])
        if pid in mine:
            if pid in tagged:
                if p.info.get("ppid") not in tagged:      # the program, not each of its helpers
                    own_servers.append(f"pid {pid}（{_describe(p)}）")
            elif pid != os.getpid() and ("vllm" in cmd.lower() or "EngineCore" in (p.info.get("name") or "")):
                own.append(f"pid {pid}（{_describe(p)}）")
        elif pid in tagged:
            if p.info.get("ppid") not in tagged:          # the program, not each of its helpers
                course.append(f"课程启动的进程 pid {pid}（{_describe(p)}；不属于这个内核，不用了就 kill {pid}）")
        elif "ipykernel_launcher" in cmd and pid not in never:
            where = ""
            try:
                where = p.environ().get("JPY_SESSION_NAME", "")
            except psutil.Error:
                pass
            args = p.info.get("cmdline") or []
            if not where and "-f" in args[:-1]:
                where = "连接文件 " + args[args.index("-f") + 1]
            kernels.append(f"另一个 Jupyter 内核 pid {pid}（{where + '；' if where else ''}不用了就 kill {pid}）")
    lines = []
    if own:
        lines.append("、".join(own) + f"：{OWN_HINT}")
    if own_servers:
        lines.append("、".join(own_servers) + f"：{OWN_SERVER_HINT}")
    return lines + course + kernels


NAME_QUERY = ("nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader,nounits")


def describe_gpu() -> str | None:
    """"NVIDIA GeForce RTX 4090, 24 GiB" for the first GPU, from nvidia-smi (CUDA is not touched); None without."""
    if not shutil.which("nvidia-smi"):
        return None
    try:
        r = subprocess.run(NAME_QUERY, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    rows = [row for row in _rows(r.stdout) if len(row) >= 2 and row[1].replace(".", "").isdigit()] if r.returncode == 0 else []
    return f"{rows[0][0]}, {float(rows[0][1]) / 1024:.0f} GiB" if rows else None


def ensure_room(utilization: float, device: int = 0, what: str = "引擎") -> None:
    """Raise :class:`GpuBusy` when the GPU cannot give ``utilization`` of its memory (no-op without nvidia-smi)."""
    if not shutil.which("nvidia-smi"):
        return

    def run(argv):
        r = subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False)
        return r.stdout if r.returncode == 0 else ""

    gpu_text = run(GPU_QUERY) or run(GPU_QUERY_OLD)
    apps_text = run(APPS_QUERY)
    problem = room_problem(gpu_text, apps_text, utilization, device, me=set(), what=what)
    if problem:
        mine = kernel_pids()
        seen = visible_holders(mine) if not parse_apps(apps_text) else ()
        raise GpuBusy(room_problem(gpu_text, apps_text, utilization, device, me=mine, what=what, seen=seen) or problem)


def ensure_room_for(profile, what: str) -> None:
    """:func:`ensure_room` for a profile's engine settings (a no-op for a CPU profile)."""
    if profile.hardware == "cuda":
        ensure_room(profile.engine.get("gpu_memory_utilization", 0.9), what=what)
