"""Lab 07's sweep of ``max_num_adapters_per_replica`` (k = 1, 2, 4): one deployment per k, the same stream
and the same three routing policies each time, recorded with its provenance for the lab to show.

    python -m course_utils.scale.bench --save      # about 8 minutes on 2 CPU cores (three deployments)
"""

from __future__ import annotations

import argparse
import sys
import time

from ..replay.record import replayable
from ..paths import RECORDINGS
from . import cluster, traffic

RECORDED = RECORDINGS / "cpu" / "scale_sweep.json"
KS = (1, 2, 4)
POLICIES = ("aware", "blind", "hash", "aware")     # the first pass starts from empty caches
N, ZIPF_S, SEED, COPIES, REPLICAS = 160, 1.1, 7, 2, 2


def sweep(prof, ks=KS) -> dict:
    """One deployment per k (each its own Ray driver process), the same stream and policies each time."""
    names = sorted(cluster.shelf(prof, COPIES))
    stream = traffic.zipf_stream(names, n=N, s=ZIPF_S, seed=SEED)
    rows = []
    for k in ks:
        t0 = time.perf_counter()
        info = cluster.up(prof, copies=COPIES, replicas=REPLICAS, adapters_per_replica=k)
        try:
            for i, policy in enumerate(POLICIES):
                r = cluster.run(stream, policy)
                rows.append({"k": k, "pass": i + 1, "policy": policy,
                             "loads": sum(d.get("loads", 0) for d in r["replicas"].values()),
                             "requests per replica": [d.get("requests", 0) for d in r["replicas"].values()],
                             "failed": r["client"]["failed"], "retried": r["client"]["retried"],
                             "p50_s": r["client"]["p50_s"], "p95_s": r["client"]["p95_s"]})
        finally:
            report = cluster.down()
        print(f"k={k}: app RUNNING in {info['seconds']['app RUNNING']:.0f} s, all in {time.perf_counter() - t0:.0f} s; "
              f"off-loopback sockets {report['sockets']['off loopback']}, left {report['processes left']}", flush=True)
    return {"adapters": len(names), "replicas": REPLICAS, "requests": N, "zipf_s": ZIPF_S, "rows": rows}


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


def main(argv=None) -> int:
    from ..engine.opbench import save_run
    from ..profiles import get_profile

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--save", action="store_true", help=f"write {RECORDED.name} for Lab 07")
    ap.add_argument("--k", type=int, nargs="+", default=list(KS))
    a = ap.parse_args(argv)
    from importlib.metadata import version

    res = sweep(get_profile("tiny"), a.k)
    res["ray"] = version("ray")
    print(table(res).to_string())
    if a.save:
        print("saved", save_run(res, "python -m course_utils.scale.bench --save", RECORDED))
    return 0


if __name__ == "__main__":
    sys.exit(main())
