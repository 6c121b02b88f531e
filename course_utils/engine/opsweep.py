"""The timing behind :mod:`course_utils.engine.opbench`: the LoRA delta at Qwen2.5-7B's projection shapes, with
torch on this machine's CPU (what each variant is, and the method: that module's docstring).

Lab 03 runs a few seconds of it live (``opbench.live_subset``); ``make bench-lora-ops`` runs all of it.
"""

from __future__ import annotations

import statistics
import time

from ..arch import load_config, projection_shapes
from .opbench import ADAPTERS, CONFIG, DTYPES, MAX_REPS, MIN_REPS, MIN_TIME, RANKS, TOKENS, VARIANTS, WARMUP, OpBenchError


# ---------------------------------------------------------------------------
# Shapes and FLOPs
# ---------------------------------------------------------------------------
def layer_shapes(config=CONFIG) -> dict:
    """``{(d_in, d_out): [projection names]}`` of one decoder layer (q and o share a shape, ...)."""
    groups: dict = {}
    for name, shape in projection_shapes(load_config(config)).items():
        groups.setdefault((shape.d_in, shape.d_out), []).append(name)
    return groups


def shape_label(names) -> str:
    return "/".join(n.removesuffix("_proj") for n in names)


def flop_ratio(d_in: int, d_out: int, rank: int) -> float:
    """LoRA FLOPs over base FLOPs for one projection: ``r (d_in + d_out) / (d_in d_out)``."""
    return rank * (d_in + d_out) / (d_in * d_out)


# ---------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------
def median_times(fns: dict, warmup: int = WARMUP, min_reps: int = MIN_REPS, max_reps: int = MAX_REPS,
                 min_time: float = MIN_TIME) -> dict:
    """Median seconds of each ``fns[name]()``, the calls taken in turns (base, then each LoRA variant,
    then base again ...), so that a slow spell of a shared machine hits every variant alike and each
    LoRA call finds the caches as the base GEMM before it left them (as in a model's forward pass).
    ``warmup`` rounds first; then at least ``min_reps`` rounds, more (up to ``max_reps``) while the
    rounds took under ``min_time`` seconds in all."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    times: dict = {name: [] for name in fns}
    total = 0.0
    while len(times[next(iter(fns))]) < min_reps or (total < min_time and len(times[next(iter(fns))]) < max_reps):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            dt = time.perf_counter() - t0
            times[name].append(dt)
            total += dt
    return {name: statistics.median(ts) for name, ts in times.items()}


def measure_shape(d_in: int, d_out: int, rank: int, tokens: int, adapters: int, dtype: str = "float32",
                  variants=VARIANTS, seed: int = 0, timer=median_times) -> dict:
    """Seconds per call of each variant for one projection shape and setting (one dict)."""
    import torch
    import torch.nn.functional as F

    from . import grouped_lora as gl

    if adapters > tokens:
        raise OpBenchError(f"{tokens} 个 token 的 batch 里放不下 {adapters} 个 adapter：每个 adapter 至少要一行；"
                           f"让 adapters <= tokens。")
    dt = getattr(torch, dtype)
    g = torch.Generator().manual_seed(seed)
    w = (torch.randn(d_out, d_in, generator=g) * 0.02).to(dt)
    x = torch.randn(tokens, d_in, generator=g).to(dt)
    lora_a = (torch.randn(adapters, 1, rank, d_in, generator=g) * 0.02).to(dt)   # vLLM's stacked layout
    lora_b = (torch.randn(adapters, 1, d_out, rank, generator=g) * 0.02).to(dt)
    indices = torch.arange(tokens) % adapters
    scale = 2.0
    out = torch.zeros(tokens, d_out, dtype=dt)
    fns = {}
    if "base" in variants:
        fns["base"] = lambda: F.linear(x, w)
    if "vllm-cpu" in variants:
        buffer = torch.zeros(tokens, rank, dtype=dt)
        fns["vllm-cpu"] = lambda: gl.vllm_cpu_delta(x, indices, lora_a, lora_b, scale, out, buffer)
    if "grouped" in variants:
        a_t, b_t = gl.grouped_weights(lora_a, lora_b)
        segs = gl.segments(indices)            # once per engine step, shared by every layer
        fns["grouped"] = lambda: gl.grouped_delta(x, segs, a_t, b_t, scale, out)
    merge_once = None
    if "merged" in variants:
        t0 = time.perf_counter()
        merged = gl.merge(w, lora_a[0, 0], lora_b[0, 0], scale)
        merge_once = time.perf_counter() - t0
        fns["merged"] = lambda: F.linear(x, merged)
    times = timer(fns)
    if merge_once is not None:
        times["merge once"] = merge_once
    return times


# ---------------------------------------------------------------------------
# The sweep
# ---------------------------------------------------------------------------
def sweep(ranks=RANKS, tokens=TOKENS, adapters=ADAPTERS, dtypes=DTYPES, config=CONFIG, variants=VARIANTS,
          progress=None, timer=median_times) -> list[dict]:
    """One row per (dtype, rank, tokens, adapters, shape): seconds per variant, FLOP ratio."""
    rows = []
    shapes = layer_shapes(config)
    for dtype in dtypes:
        for t in tokens:
            for n in adapters:
                if n > t:
                    continue
                for r in ranks:
                    for (d_in, d_out), names in shapes.items():
                        secs = measure_shape(d_in, d_out, r, t, n, dtype, variants, timer=timer)
                        row = {"dtype": dtype, "rank": r, "tokens": t, "adapters": n,
                               "shape": shape_label(names), "d_in": d_in, "d_out": d_out, "count": len(names),
                               "flop_ratio": flop_ratio(d_in, d_out, r), **secs}
                        rows.append(row)
                        if progress:
                            progress(row)
    return rows
