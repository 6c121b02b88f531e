"""Lab 07's sweep of ``max_num_adapters_per_replica`` (k = 1, 2, 4): one deployment per k, the same stream
and the same three routing policies each time, recorded with its provenance for the lab to show.

``make bench-scale`` (:mod:`course_tools.bench.scale`) runs and records it; here is what Lab 07 reads and shows.
"""

from __future__ import annotations


from ..replay.record import replayable
from ..paths import RECORDINGS

RECORDED = RECORDINGS / "cpu" / "scale_sweep.json"
KS = (1, 2, 4)
POLICIES = ("aware", "blind", "hash", "aware")     # the first pass starts from empty caches
N, ZIPF_S, SEED, COPIES, REPLICAS = 160, 1.1, 7, 2, 2
K_LABEL = "k（每个副本留几个 adapter）"          # the table's index: max_num_adapters_per_replica


def load(path=RECORDED) -> dict:
    from ..engine.opbench import load_run

    return load_run(path, "scale-out sweep", "bench-scale")


def warm_loads(rec: dict) -> dict:
    """k -> policy -> loads in that policy's warm pass (passes 2-4; aware's is pass 4, after hash's)."""
    out: dict = {}
    for r in rec["rows"]:
        if r["pass"] > 1:
            out.setdefault(r["k"], {})[r["policy"]] = r["loads"]
    return out


def ratio_and_gap(rec: dict) -> tuple[dict, dict]:
    """Per k: round robin's warm loads over adapter-aware routing's, and the hit rate aware gains over round robin."""
    loads, n = warm_loads(rec), rec["requests"]
    return ({k: v["blind"] / max(v["aware"], 1) for k, v in loads.items()},
            {k: (v["blind"] - v["aware"]) / n for k, v in loads.items()})


def verdict(rec: dict) -> list[str]:
    """What the sweep shows, said from its numbers: round robin's loads against adapter-aware routing's per k, as a
    ratio and as a difference in hit rate (the two can pick different k's), and where adapter-aware routing loaded
    fewer times than a pass from empty caches must (it starts from the cache the hash pass left: Lab 07 §5)."""
    loads = warm_loads(rec)
    ratio, gap = ratio_and_gap(rec)
    lines = [f"k={k}：轮询加载 {v['blind']} 次，按 adapter 路由 {v['aware']} 次，静态哈希 {v['hash']} 次"
             f"（轮询 / 按 adapter 路由 = {ratio[k]:.1f} 倍；命中率高出 {gap[k]:.2f}）" for k, v in sorted(loads.items())]
    by_ratio, by_gap = max(ratio, key=ratio.get), max(gap, key=gap.get)
    lines.append(f"按比值看，k={by_ratio} 时差得最多；按命中率之差看，" + (
        f"也是 k={by_gap}" if by_gap == by_ratio else
        f"是 k={by_gap}（{gap[by_gap]:.2f}，k={by_ratio} 是 {gap[by_ratio]:.2f}）：两种量法给的答案不同"))
    for k, v in sorted(loads.items()):
        if v["aware"] < rec["adapters"]:
            lines.append(f"k={k} 时按 adapter 路由只装载了 {v['aware']} 次，少于从空缓存开始至少要装的 {rec['adapters']} 次"
                         f"（货架上每个 adapter 一次）：这一遍接着哈希那一遍留下的缓存开始，一部分 adapter 已经在副本上（开始时副本上装着哪些，录制里没有记下）")
    return lines


def table(rec: dict):
    """The hit rate per policy (columns, the policies' names) and k (rows) in the warm passes; hit rate =
    1 - loads / requests. Headers in Chinese: 路由 (policy), 命中率 (hit rate)."""
    import pandas as pd

    warm = [r for r in rec["rows"] if r["pass"] > 1]
    df = pd.DataFrame([{K_LABEL: r["k"], "路由": r["policy"], "加载": r["loads"],
                        "命中率": round(1 - r["loads"] / rec["requests"], 2), "失败": r["failed"]} for r in warm])
    return df.drop_duplicates([K_LABEL, "路由"], keep="last").pivot(index=K_LABEL, columns="路由", values="命中率")


def plot(rec: dict, ax=None):
    import matplotlib.pyplot as plt

    t = table(rec)
    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 3.4))
    for policy in t.columns:
        ax.plot(t.index, t[policy], marker="o", label=policy)
    ax.set_xticks(list(t.index))
    ax.set_xlabel(f"max_num_adapters_per_replica (shelf: {rec['adapters']} adapters, {rec['replicas']} replicas)")
    ax.set_ylabel("hit rate (1 - loads / requests)")
    ax.set_ylim(0, 1)
    ax.set_title("warm passes, Zipf stream of 160 requests")
    ax.legend(fontsize=8)
    return ax


@replayable
def ray_llm_vllm_requirement() -> str:
    """The vLLM that ``pip install ray[llm]`` would bring, from the installed Ray's own metadata."""
    from importlib.metadata import requires, version

    reqs = [r for r in requires("ray") or [] if r.startswith("vllm") and 'extra == "llm"' in r]
    return f"ray {version('ray')}: " + ("; ".join(r.split(";")[0].strip() for r in reqs) or "没有指定 vLLM")
