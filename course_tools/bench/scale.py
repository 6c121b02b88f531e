"""Lab 07's sweep of ``max_num_adapters_per_replica`` (k = 1, 2, 4): one deployment per k, the same stream
and the same three routing policies each time, recorded with its provenance for the lab to show
(``course_utils.scale.bench`` reads it).

    python -m course_tools.bench.scale --save      # make bench-scale: about 8 minutes on 2 CPU cores
"""

from __future__ import annotations

import argparse
import sys
import time

from course_tools.bench.opbench import save_run
from course_utils.scale import cluster, driver, traffic
from course_utils.scale.bench import COPIES, KS, N, POLICIES, RECORDED, REPLICAS, SEED, ZIPF_S, table


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
        print(f"k={k}: app RUNNING in {info['seconds'][driver.APP_RUNNING]:.0f} s, all in {time.perf_counter() - t0:.0f} s; "
              f"off-loopback sockets {report['sockets']['off loopback']}, left {report['processes left']}", flush=True)
    return {"adapters": len(names), "replicas": REPLICAS, "requests": N, "zipf_s": ZIPF_S, "rows": rows}

def main(argv=None) -> int:
    from course_utils.profiles import get_profile

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--save", action="store_true", help=f"write {RECORDED.name} for Lab 07")
    ap.add_argument("--k", type=int, nargs="+", default=list(KS))
    a = ap.parse_args(argv)
    from importlib.metadata import version

    res = sweep(get_profile("tiny"), a.k)
    res["ray"] = version("ray")
    print(table(res).to_string())
    if a.save:
        print("saved", save_run(res, "python -m course_tools.bench.scale --save", RECORDED))
    return 0

if __name__ == "__main__":
    sys.exit(main())
