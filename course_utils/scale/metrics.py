"""Serve's per-replica adapter counters, read from Ray's Prometheus text (no Prometheus, no dashboard).

``ray.init(_metrics_export_port=P)`` makes the node's metrics agent serve ``http://127.0.0.1:P/metrics``.
Serve's multiplexing counters there are tagged with application, deployment and replica; they count
from the replica's start, so what a stream did is the difference of two scrapes.
"""

from __future__ import annotations

import re
import time
import urllib.request

COUNTERS = {
    "ray_serve_deployment_request_counter_total": "requests",
    "ray_serve_multiplexed_models_load_counter_total": "loads",       # a miss: the replica loads the adapter
    "ray_serve_multiplexed_models_unload_counter_total": "unloads",   # its LRU made room
    "ray_serve_num_multiplexed_models": "held",                      # a gauge: adapters held now
}
_LINE = re.compile(r"^(\w+)\{(.*)\}\s+([0-9.eE+-]+)$")


def scrape(port: int, app: str) -> dict:
    """{replica: {requests, loads, unloads, held}} of the app's LLM replicas, as Ray reports them now."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    per: dict = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m or m.group(1) not in COUNTERS:
            continue
        tags = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        if tags.get("application") != app or not tags.get("deployment", "").startswith("LLMServer"):
            continue
        replica = tags.get("replica", "?").split("#")[-1]
        key = COUNTERS[m.group(1)]
        per.setdefault(replica, {})[key] = per.get(replica, {}).get(key, 0) + float(m.group(3))
    return {r: {k: int(v) for k, v in d.items()} for r, d in sorted(per.items())}


def scrape_until(port: int, app: str, requests: int, timeout: float = 30.0) -> dict:
    """Ray flushes metrics every second here: poll until the replicas' request counters reach ``requests``."""
    end = time.time() + timeout
    while True:
        per = scrape(port, app)
        if sum(d.get("requests", 0) for d in per.values()) >= requests or time.time() > end:
            return per
        time.sleep(0.5)


def difference(after: dict, before: dict) -> dict:
    return {r: {k: v if k == "held" else v - before.get(r, {}).get(k, 0) for k, v in d.items()}
            for r, d in after.items()}
