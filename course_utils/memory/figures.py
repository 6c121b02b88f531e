"""The memory lessons' pictures and numbers: Lab 02's stacked bars, tables and knobs, and the
course's RTX 4090 figures (Qwen2.5-7B-Instruct).

Every number comes from :mod:`.model` (mostly :func:`~course_utils.memory.plan`);
this module draws the layouts (matplotlib, imported lazily), wires ipywidgets to
them (:func:`explorer`), and computes the figures the labs, the closing note and
the self-test quote (:func:`rtx4090_figures`, :func:`full_finetunes_vs_adapters`,
:func:`adapters_on_one_card`, :func:`lora_vs_full_matrix`, :func:`check_profile`).
"""

from __future__ import annotations

from pathlib import Path

from ..arch import MAX_LORA_RANKS, PROJECTIONS, load_config
from .model import (GiB, KiB, RTX_4090_BYTES, Layout, MemoryModelError, adapter_bytes, kv_bytes_per_token,
                    parameter_count, plan, weight_bytes)

COLORS = {"weights": "#4C72B0", "lora_buffers": "#DD8452", "other": "#937860", "activation": "#C44E52",
          "kv_cache": "#55A868", "free": "#DDDDDD"}
LABELS = {"weights": "base weights", "lora_buffers": "LoRA slots (max_loras x max_lora_rank)",
          "other": "non-torch + CUDA graphs + Punica", "activation": "activation peak",
          "kv_cache": "KV-cache block pool", "free": "outside gpu_memory_utilization"}


def parts(layout: Layout) -> dict[str, float]:
    """GiB per bar segment; a negative KV cache (over budget) is drawn as zero."""
    return {
        "weights": layout.weights / GiB,
        "lora_buffers": layout.lora_buffers / GiB,
        "other": (layout.non_torch + layout.cudagraph + layout.punica) / GiB,
        "activation": layout.activation / GiB,
        "kv_cache": max(layout.kv_cache, 0) / GiB,
        "free": layout.unrequested / GiB,
    }


def misfit(layout: Layout) -> str:
    """What is missing when ``layout`` does not fit ('' when it fits)."""
    if layout.fits:
        return ""
    kv = layout.kv
    short = kv.blocks_per_seq * kv.block_bytes - layout.kv_cache
    return (f"放不下（does not fit）：KV 缓存离一条 {kv.context_len:,} token 的序列还差 {short / GiB:.2f} GiB，"
            f"vLLM 会拒绝启动（显存模型的预估）。调低 max_lora_rank、max_loras 或上下文长度，或者调高 "
            f"gpu_memory_utilization。")


def text_width(text: str) -> int:
    """Columns ``text`` takes in a monospace font: a CJK character (East Asian wide or full width) takes two."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def pad(text: str, width: int, align: str = "<") -> str:
    """``text`` padded with spaces to ``width`` columns (see :func:`text_width`), left- or right-aligned."""
    fill = " " * max(0, width - text_width(text))
    return text + fill if align == "<" else fill + text


def layout_table(p: Layout) -> str:
    """Every part of the layout in GiB, then the KV blocks (or what is missing) and the host cache."""
    rows = [("显存总量", p.gpu_total),
            (f"申请的显存（× {p.gpu_memory_utilization:.2f}）", p.requested),
            (f"权重（{p.quant or p.dtype}）", p.weights),
            (f"LoRA 缓冲区（{p.max_loras} 个槽位 × 秩 {p.max_lora_rank}，{p.lora_dtype}）", p.lora_buffers),
            ("Punica 元数据", p.punica),
            ("激活峰值", p.activation), ("非 torch 内存", p.non_torch), ("CUDA graph 内存", p.cudagraph),
            ("KV 缓存", p.kv_cache)]
    w = max(text_width(r[0]) for r in rows)
    lines = [f"{pad(name, w)}  {b / GiB:8.2f} GiB" for name, b in rows]
    if not p.fits:
        over = f"超出预算 {-p.kv_cache / GiB:.2f} GiB" if p.kv_cache < 0 else "太小"
        lines[-1] = f"{pad('KV 缓存', w)}  {max(p.kv_cache, 0) / GiB:8.2f} GiB  （{over}）"
        return "\n".join([*lines, misfit(p)])
    lines.append(f"{pad(f'KV block（每块 {p.kv.block_size} 个 token）', w)}  {p.kv.num_blocks:8,d}  "
                 f"（共 {p.kv.max_tokens:,} 个 token；可同时放 {p.kv.concurrent_seqs} 条 {p.kv.context_len:,} token 的序列）")
    lines.append(f"{pad(f'主机缓存（{p.max_cpu_loras} 个 adapter）', w)}  {p.host_adapter_cache / GiB:8.2f} GiB")
    return "\n".join(lines)


def draw(layouts: dict[str, Layout], ax=None, title: str = ""):
    """Horizontal stacked bars, one per labelled layout, with the card's total as vLLM sees it and the
    ``gpu_memory_utilization`` budget as lines, the LoRA slice labelled however thin it is, and a
    "does not fit" mark (a model estimate) in the row's label where the KV cache would get nothing; such a
    bar ends at the card's total (what is reserved past the budget eats the unrequested rest)."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(12.5, 2.4 + 0.7 * len(layouts)))
    names = list(layouts)
    for row, name in enumerate(names):
        left = 0.0
        total_gib = layouts[name].gpu_total / GiB
        for part, gib in parts(layouts[name]).items():
            if part == "free":                    # over budget: what is reserved runs into the unrequested rest
                gib = max(0.0, min(gib, total_gib - left))
            ax.barh(row, gib, left=left, color=COLORS[part], edgecolor="white",
                    label=LABELS[part] if row == 0 else None)
            if gib >= 1.2:
                ax.text(left + gib / 2, row, f"{gib:.1f}", ha="center", va="center", fontsize=8, color="white"
                        if part != "free" else "black")
            elif part == "lora_buffers":          # thin, but it is the lesson: label it above the bar
                ax.annotate(f"LoRA {gib:.2f}", (left + gib / 2, row - 0.4), ha="center", va="bottom",
                            fontsize=8, color=COLORS[part])
            left += gib
    totals = {(p.gpu_total, p.requested) for p in layouts.values()}
    if len(totals) == 1:                          # one card and one budget for every bar: draw them once
        total, requested = (b / GiB for b in totals.pop())
        util = next(iter(layouts.values())).gpu_memory_utilization
        ax.axvline(total, color="black", lw=1, label=f"card total as vLLM sees it ({total:.2f} GiB)")
        ax.axvline(requested, color="black", lw=1, ls="--",
                   label=f"gpu_memory_utilization={util:g} ({requested:.2f} GiB)")
    ax.set_ylim(len(names) - 0.5, -0.8)            # top row first, room above it for the LoRA label
    ax.set_yticks(range(len(names)), [f"{n}\nover budget by the memory model\n(an estimate, not run on a 4090)"
                                      if not layouts[n].fits else n for n in names])
    for label, name in zip(ax.get_yticklabels(), names):
        if not layouts[name].fits:
            label.set_color("#C44E52")
    ax.set_xlabel("GiB")
    ax.set_title(title)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False)
    ax.figure.tight_layout()
    return ax


def summary_rows(layouts: dict[str, Layout]) -> list[dict]:
    rows = []
    for name, p in layouts.items():
        rows.append({"设置": name, "权重 GiB": round(p.weights / GiB, 2),
                     "LoRA 槽位 GiB": round(p.lora_buffers / GiB, 2),
                     "KV 缓存 GiB": round(max(p.kv_cache, 0) / GiB, 2),
                     "KV block 数": p.kv.num_blocks, "最多 token 数": p.kv.max_tokens,
                     f"可同时放的 {p.kv.context_len} token 序列": p.kv.concurrent_seqs})
    return rows


KNOBS = dict(gpu_gb=24.0, dtype="bfloat16", gpu_memory_utilization=0.90, n_adapters=4, adapter_rank=16,
             max_loras=4, max_lora_rank=16, context_len=4096)


def layout_for(config="qwen2.5-7b-instruct", gpu_gb=24.0, dtype="bfloat16", gpu_memory_utilization=0.9,
               n_adapters=4, adapter_rank=16, max_loras=4, max_lora_rank=16, context_len=4096):
    """One layout from the widget's knobs (dtype 'awq' picks the AWQ checkpoint's config)."""
    awq = dtype == "awq"
    cfg = "qwen2.5-7b-instruct-awq" if awq and config == "qwen2.5-7b-instruct" else config
    adapters = [(f"adapter{i}", {"r": adapter_rank, "target_modules": list(PROJECTIONS)})
                for i in range(n_adapters)]
    gpu_bytes = RTX_4090_BYTES if gpu_gb == 24.0 else None
    return plan(cfg, adapters, gpu_gb=gpu_gb, gpu_bytes=gpu_bytes, dtype="float16" if awq else dtype,
                       gpu_memory_utilization=gpu_memory_utilization, max_loras=max_loras,
                       max_lora_rank=max_lora_rank, max_cpu_loras=max(n_adapters, max_loras),
                       context_len=context_len, check=False)


def explorer(config="qwen2.5-7b-instruct"):
    """The layout for :data:`KNOBS` (figure and table, what every reader sees, in any front end), then
    the knobs as widgets: in JupyterLab, moving one redraws the bar and the table below the controls.

    The widget is shown with a short plain-text stand-in, so a notebook's saved output does not depend
    on whether a front end was there to draw it (nbval compares the text, not the widget)."""
    import ipywidgets as w
    import matplotlib.pyplot as plt
    from IPython.display import display

    layout = layout_for(config, **KNOBS)
    print("旋钮的默认值：", KNOBS)
    draw({"default knobs": layout}, title="RTX-class GPU memory, Qwen2.5-7B-Instruct")
    plt.show()
    print(layout.table())

    out = w.Output()
    ranks = [r for r in MAX_LORA_RANKS if r >= 8]
    controls = dict(
        gpu_gb=w.Dropdown(options=[16.0, 24.0, 40.0, 48.0, 80.0], value=KNOBS["gpu_gb"], description="显存 GiB"),
        dtype=w.Dropdown(options=["bfloat16", "float16", "awq"], value=KNOBS["dtype"], description="权重"),
        gpu_memory_utilization=w.FloatSlider(value=KNOBS["gpu_memory_utilization"], min=0.5, max=0.98, step=0.01,
                                             description="显存比例"),
        n_adapters=w.IntSlider(value=KNOBS["n_adapters"], min=0, max=64, description="adapter 数"),
        adapter_rank=w.Dropdown(options=[8, 16, 32, 64], value=KNOBS["adapter_rank"], description="它们的秩"),
        max_loras=w.IntSlider(value=KNOBS["max_loras"], min=1, max=64, description="max_loras"),
        max_lora_rank=w.Dropdown(options=ranks, value=KNOBS["max_lora_rank"], description="max_lora_rank"),
        context_len=w.Dropdown(options=[1024, 2048, 4096, 8192, 32768], value=KNOBS["context_len"],
                               description="上下文长度"),
    )

    def redraw(**knobs):
        if knobs == KNOBS:
            return  # the static view above already shows it
        with out:
            out.clear_output(wait=True)
            try:
                layout = layout_for(config, **knobs)
            except MemoryModelError as e:
                print(e)
                return
            draw({"this setting": layout}, title="RTX-class GPU memory, Qwen2.5-7B-Instruct")
            plt.show()
            print(layout.table())

    w.interactive_output(redraw, controls)
    box = w.VBox([w.HBox(list(controls.values())[:4]), w.HBox(list(controls.values())[4:]), out])
    display({"application/vnd.jupyter.widget-view+json": {"version_major": 2, "version_minor": 0,
                                                          "model_id": box.model_id},
             "text/plain": "[旋钮：在 JupyterLab 里拖动它们，下方的柱状图与表格会按新设置重画]"}, raw=True)


# --- The course's figures (RTX 4090 + Qwen2.5-7B-Instruct) ------------------------------------------

def lora_vs_full_matrix(d: int = 4096, k: int = 4096, r: int = 16) -> dict:
    """A d x k weight update: full d*k parameters vs LoRA r*(d+k) (4096 x 4096, r=16: 128x fewer)."""
    full, lora = d * k, r * (d + k)
    return {"d": d, "k": k, "r": r, "full": full, "lora": lora, "ratio": full / lora}


def _all_linear_adapter(r: int) -> dict:
    return {"r": r, "target_modules": list(PROJECTIONS)}


def full_finetunes_vs_adapters(config="qwen2.5-7b-instruct", n: int = 3, rank: int = 16,
                               dtype="bfloat16") -> dict:
    """n full fine-tuned copies vs one base + n rank-``rank`` all-linear adapters, in bytes."""
    base = weight_bytes(config, dtype, "none").parameter_bytes  # the checkpoint, as a fine-tune saves it
    one = adapter_bytes(_all_linear_adapter(rank), config, dtype)
    return {"n": n, "rank": rank, "full_copies": n * base, "base": base, "adapter": one,
            "base_plus_adapters": base + n * one, "ratio": n * base / (base + n * one)}


def adapters_on_one_card(config="qwen2.5-7b-instruct", n: int = 30, rank: int = 16, max_loras: int = 4,
                         gpu_bytes: int = RTX_4090_BYTES, **kw) -> dict:
    """n adapters behind one base on one card: all n in the CPU cache (max_cpu_loras=n) with
    ``max_loras`` GPU slots, and the extreme of n GPU slots (max_loras=n)."""
    adapters = [(f"a{i}", _all_linear_adapter(rank)) for i in range(n)]
    slots = plan(config, adapters, gpu_bytes=gpu_bytes, max_loras=max_loras, max_lora_rank=rank,
                 max_cpu_loras=n, **kw)
    all_on_gpu = plan(config, adapters, gpu_bytes=gpu_bytes, max_loras=n, max_lora_rank=rank, max_cpu_loras=n,
                      check=False, **kw)
    return {"n": n, "rank": rank, "adapter_bytes": adapter_bytes(_all_linear_adapter(rank), config, "bfloat16"),
            "host_cache_bytes": slots.host_adapter_cache, "slots": slots, "all_slots": all_on_gpu,
            "full_copies_bytes": n * slots.weight_detail.parameter_bytes}


def rtx4090_figures(config="qwen2.5-7b-instruct", awq_config="qwen2.5-7b-instruct-awq", max_loras: int = 4,
                    ranks=(16, 256), context_len: int = 4096, gpu_memory_utilization: float = 0.9, **kw) -> dict:
    """The numbers the lab and the closing note quote for Qwen2.5-7B-Instruct on an RTX 4090."""
    out = {"gpu_total": RTX_4090_BYTES, "weights_bf16": weight_bytes(config, "bfloat16").total,
           "weights_awq": weight_bytes(awq_config).total, "parameters": parameter_count(config),
           "kv_bytes_per_token": kv_bytes_per_token(config, "bfloat16")}
    for key, cfg in (("plans", config), ("plans_awq", awq_config)):
        out[key] = {r: plan(cfg, gpu_bytes=RTX_4090_BYTES, max_loras=max_loras, max_lora_rank=r,
                            context_len=context_len, gpu_memory_utilization=gpu_memory_utilization, check=False, **kw)
                    for r in ranks}
    out["three_full_vs_adapters"] = full_finetunes_vs_adapters(config, 3, 16)
    out["thirty_adapters"] = adapters_on_one_card(config, 30, 16, max_loras)
    out["lora_vs_full_4096"] = lora_vs_full_matrix(4096, 4096, 16)
    return out


def format_rtx4090_figures(fig: dict | None = None) -> str:
    """The figures as text for a notebook cell or the closing note."""
    fig = fig or rtx4090_figures()
    g = lambda b: f"{b / GiB:.2f} GiB"
    lines = [f"RTX 4090：{g(fig['gpu_total'])}；Qwen2.5-7B-Instruct：{fig['parameters']:,} 个参数",
             f"权重：bf16 {g(fig['weights_bf16'])}，AWQ int4 {g(fig['weights_awq'])}",
             f"KV 缓存：每个 token {fig['kv_bytes_per_token'] // KiB} KiB（bf16）"]
    for label, plans in (("bf16", fig["plans"]), ("AWQ", fig["plans_awq"])):
        for r, p in plans.items():
            kv = p.kv
            tail = (f"{kv.num_blocks:,} 个 block，{kv.max_tokens:,} 个 token，{kv.concurrent_seqs} 条 "
                    f"{kv.context_len} token 的序列" if kv.num_blocks else
                    f"没有 KV 缓存（其余部分已超出预算 {-p.kv_cache / GiB:.2f} GiB）" if p.kv_cache < 0 else
                    f"KV 缓存 {g(p.kv_cache)}：不到一个 block")
            lines.append(f"{label} max_loras={p.max_loras} max_lora_rank={r}：LoRA 缓冲区 {g(p.lora_buffers)}，"
                         f"KV 缓存 {g(max(p.kv_cache, 0))} -> {tail}")
    t = fig["three_full_vs_adapters"]
    lines.append(f"3 份全量微调：{t['full_copies'] / 1e9:.1f} GB；基座 + 3 个秩 16 的 adapter："
                 f"{t['base_plus_adapters'] / 1e9:.2f} GB（每个 adapter {t['adapter'] / 1e6:.1f} MB）")
    h = fig["thirty_adapters"]
    lines.append(f"30 个秩 16 的 adapter：主机内存里占 {h['n'] * h['adapter_bytes'] / 1e9:.2f} GB，"
                 f"{h['slots'].max_loras} 个 GPU 槽位时还能放 {h['slots'].kv.concurrent_seqs} 条 4k 序列；"
                 f"30 个 GPU 槽位时 LoRA 缓冲区 {g(h['all_slots'].lora_buffers)}，"
                 f"还能放 {h['all_slots'].kv.concurrent_seqs} 条 4k 序列（30 份全量副本则要 "
                 f"{h['full_copies_bytes'] / 1e9:.0f} GB）")
    m = fig["lora_vs_full_4096"]
    lines.append(f"4096x4096、r=16：全量 {m['full']:,} 个参数，LoRA {m['lora']:,} 个（少 {m['ratio']:.0f} 倍）")
    return "\n".join(lines)


def check_profile(name: str = "qwen7b", gpu_bytes: int = RTX_4090_BYTES, **kw) -> Layout:
    """Lay out a course profile's engine settings (course_utils.profiles) on a card; raises
    MemoryModelError when they leave no KV cache for one max_model_len sequence."""
    from ..profiles import get_profile

    prof = get_profile(name)
    eng = dict(prof.engine)
    cfg_dir = Path(prof.config_dir) if prof.config_dir else Path(prof.base_model)
    return plan(load_config(cfg_dir), gpu_bytes=gpu_bytes, dtype=eng.get("dtype", "bfloat16"),
                gpu_memory_utilization=eng.get("gpu_memory_utilization", 0.9), max_loras=eng["max_loras"],
                max_lora_rank=eng["max_lora_rank"], context_len=eng.get("max_model_len", 4096),
                max_num_seqs=eng.get("max_num_seqs", 256),
                max_num_batched_tokens=eng.get("max_num_batched_tokens", 8192), **kw)
