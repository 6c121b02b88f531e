"""The memory-layout picture of Lab 02: one stacked bar per setting, and the knobs that redraw it.

Figures come from :func:`course_utils.memory.plan`; this module only draws
them (matplotlib) and wires ipywidgets to them. ``static_view`` prints the
same table and draws the same bars without any widget, for read mode and
nbval.
"""

from __future__ import annotations

from . import model as memory

COLORS = {"weights": "#4C72B0", "lora_buffers": "#DD8452", "other": "#937860", "activation": "#C44E52",
          "kv_cache": "#55A868", "free": "#DDDDDD"}
LABELS = {"weights": "base weights", "lora_buffers": "LoRA slots (max_loras x max_lora_rank)",
          "other": "non-torch + CUDA graphs + Punica", "activation": "activation peak",
          "kv_cache": "KV-cache block pool", "free": "outside gpu_memory_utilization"}


def parts(layout: memory.Layout) -> dict[str, float]:
    """GiB per bar segment; a negative KV cache (over budget) is drawn as zero."""
    g = memory.GiB
    return {
        "weights": layout.weights / g,
        "lora_buffers": layout.lora_buffers / g,
        "other": (layout.non_torch + layout.cudagraph + layout.punica) / g,
        "activation": layout.activation / g,
        "kv_cache": max(layout.kv_cache, 0) / g,
        "free": layout.unrequested / g,
    }


def draw(layouts: dict[str, memory.Layout], ax=None, title: str = ""):
    """Horizontal stacked bars, one per labelled layout."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(10, 0.9 + 0.8 * len(layouts)))
    names = list(layouts)
    for row, name in enumerate(names):
        left = 0.0
        for part, gib in parts(layouts[name]).items():
            ax.barh(row, gib, left=left, color=COLORS[part], edgecolor="white",
                    label=LABELS[part] if row == 0 else None)
            if gib >= 1.2:
                ax.text(left + gib / 2, row, f"{gib:.1f}", ha="center", va="center", fontsize=8, color="white"
                        if part != "free" else "black")
            left += gib
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlabel("GiB")
    ax.set_title(title)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.35 if len(names) < 3 else -0.2), ncol=3, fontsize=8,
              frameon=False)
    ax.figure.tight_layout()
    return ax


def summary_rows(layouts: dict[str, memory.Layout]) -> list[dict]:
    rows = []
    for name, p in layouts.items():
        rows.append({"setting": name, "weights GiB": round(p.weights / memory.GiB, 2),
                     "LoRA slots GiB": round(p.lora_buffers / memory.GiB, 2),
                     "KV cache GiB": round(max(p.kv_cache, 0) / memory.GiB, 2),
                     "KV blocks": p.kv.num_blocks, "max tokens": p.kv.max_tokens,
                     f"concurrent {p.kv.context_len}-token seqs": p.kv.concurrent_seqs})
    return rows


KNOBS = dict(gpu_gb=24.0, dtype="bfloat16", gpu_memory_utilization=0.90, n_adapters=4, adapter_rank=16,
             max_loras=4, max_lora_rank=16, context_len=4096)


def layout_for(config="qwen2.5-7b-instruct", gpu_gb=24.0, dtype="bfloat16", gpu_memory_utilization=0.9,
               n_adapters=4, adapter_rank=16, max_loras=4, max_lora_rank=16, context_len=4096):
    """One layout from the widget's knobs (dtype 'awq' picks the AWQ checkpoint's config)."""
    awq = dtype == "awq"
    cfg = "qwen2.5-7b-instruct-awq" if awq and config == "qwen2.5-7b-instruct" else config
    adapters = [(f"adapter{i}", {"r": adapter_rank, "target_modules": list(memory.PROJECTIONS)})
                for i in range(n_adapters)]
    gpu_bytes = memory.RTX_4090_BYTES if gpu_gb == 24.0 else None
    return memory.plan(cfg, adapters, gpu_gb=gpu_gb, gpu_bytes=gpu_bytes, dtype="float16" if awq else dtype,
                       gpu_memory_utilization=gpu_memory_utilization, max_loras=max_loras,
                       max_lora_rank=max_lora_rank, max_cpu_loras=max(n_adapters, max_loras),
                       context_len=context_len, check=False)


def explorer(config="qwen2.5-7b-instruct"):
    """Sliders and dropdowns that redraw the bar and the table (needs a live Jupyter front end).

    Headless runs (``make run/record/test`` set COURSE_HEADLESS=1) print a pointer instead: a
    widget there has nobody to move it, and the static view above shows the same figures."""
    import os

    if os.environ.get("COURSE_HEADLESS") == "1":
        print("interactive explorer: open this notebook in JupyterLab (`make jupyter`) to move the knobs; "
              "the static view above shows the same figures for the default knobs.")
        return
    import ipywidgets as w
    import matplotlib.pyplot as plt
    from IPython.display import display

    out = w.Output()
    ranks = [r for r in memory.allowed_max_lora_ranks() if r >= 8]
    controls = dict(
        gpu_gb=w.Dropdown(options=[16.0, 24.0, 40.0, 48.0, 80.0], value=24.0, description="GPU GiB"),
        dtype=w.Dropdown(options=["bfloat16", "float16", "awq"], value="bfloat16", description="weights"),
        gpu_memory_utilization=w.FloatSlider(value=0.9, min=0.5, max=0.98, step=0.01, description="gpu util"),
        n_adapters=w.IntSlider(value=4, min=0, max=64, description="adapters"),
        adapter_rank=w.Dropdown(options=[8, 16, 32, 64], value=16, description="their rank"),
        max_loras=w.IntSlider(value=4, min=1, max=64, description="max_loras"),
        max_lora_rank=w.Dropdown(options=ranks, value=16, description="max_lora_rank"),
        context_len=w.Dropdown(options=[1024, 2048, 4096, 8192, 32768], value=4096, description="context"),
    )

    def redraw(**knobs):
        with out:
            out.clear_output(wait=True)
            try:
                layout = layout_for(config, **knobs)
            except memory.MemoryModelError as e:
                print(e)
                return
            draw({"this setting": layout}, title="RTX-class GPU memory, Qwen2.5-7B-Instruct")
            plt.show()
            print(layout.table())

    ui = w.interactive_output(redraw, controls)
    display(w.VBox([w.HBox(list(controls.values())[:4]), w.HBox(list(controls.values())[4:]), out, ui]))
