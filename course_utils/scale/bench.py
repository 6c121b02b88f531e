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


def verdict(rec: dict) -> list[str]:
    """What the sweep shows, said from its numbers: round robin's loads against adapter-aware routing's per
    k, and at which k the gap between them is widest (as a ratio)."""
    loads = warm_loads(rec)
    ratio = {k: v["blind"] / max(v["aware"], 1) for k, v in loads.items()}
    lines = [f"k={k}: round robin {v['blind']} loads, adapter-aware {v['aware']}, hash {v['hash']} "
             f"(round robin / adapter-aware: {ratio[k]:.1f}x)" for k, v in sorted(loads.items())]
    widest = max(ratio, key=ratio.get)
    slots = widest * rec["replicas"]
    lines.append(f"the ratio is widest at k={widest}, where the cluster's {slots} slots "
                 f"{'hold' if slots >= rec['adapters'] else 'do not hold'} the whole shelf of {rec['adapters']}")
    return lines


def table(rec: dict):
    """Loads per policy (the warm passes) and k; hit rate = 1 - loads / requests."""
    import pandas as pd

    warm = [r for r in rec["rows"] if r["pass"] > 1]
    df = pd.DataFrame([{"k (adapters per replica)": r["k"], "policy": r["policy"], "loads": r["loads"],
                        "hit rate": round(1 - r["loads"] / rec["requests"], 2), "failed": r["failed"]} for r in warm])
    return df.drop_duplicates(["k (adapters per replica)", "policy"], keep="last").pivot(
        index="k (adapters per replica)", columns="policy", values="hit rate")


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
    return f"ray {version('ray')}: " + ("; ".join(r.split(";")[0].strip() for r in reqs) or "no vLLM pinned")
