"""Serve's per-replica adapter counters, read from Ray's Prometheus text (no Prometheus, no dashboard).

``ray.init(_metrics_export_port=P)`` makes the node's metrics agent serve ``http://127.0.0.1:P/metrics``.
Serve's multiplexing counters there are tagged with application, deployment and replica; they count
from the replica's start, so what a stream did is the difference of two scrapes.
"""

from __future__ import annotations

import math
import urllib.request

from .. import processes, prometheus
from ..loopback import LOOPBACK

COUNTERS = {
    "ray_serve_deployment_request_counter_total": "requests",
    "ray_serve_multiplexed_models_load_counter_total": "loads",       # a miss: the replica loads the adapter
    "ray_serve_multiplexed_models_unload_counter_total": "unloads",   # its LRU made room
    "ray_serve_num_multiplexed_models": "held",                      # a gauge: adapters held now
    "ray_serve_deployment_error_counter_total": "errors",             # requests the replica failed
}


def scrape(port: int, app: str) -> dict:
    """{replica: {requests, loads, unloads, held}} of the app's LLM replicas, as Ray reports them now."""
    text = urllib.request.urlopen(f"http://{LOOPBACK}:{port}/metrics", timeout=10).read().decode()
    per: dict = {}
    for s in prometheus.samples(text, COUNTERS):
        if s.labels.get("application") != app or not s.labels.get("deployment", "").startswith("LLMServer"):
            continue
        replica = s.labels.get("replica", "?").split("#")[-1]
        key = COUNTERS[s.name]
        per.setdefault(replica, {})[key] = per.get(replica, {}).get(key, 0) + s.value
    # counts are whole numbers; a NaN or Inf (a metric Ray could not compute) is shown as it is
    return {r: {k: int(v) if math.isfinite(v) else v for k, v in d.items()} for r, d in sorted(per.items())}


def scrape_until(port: int, app: str, requests: int, timeout: float = 120.0, client: dict | None = None) -> dict:
    """Poll until the replicas' request counters add up to ``requests`` (every request answered since ``up``:
    Serve counts a request when it has answered it, and one it failed under ``errors``), and return the scrape.

    Ray flushes metrics about every second on an idle machine; under load it has taken more than 30 s. Numbers
    read before the counters add up would be missing requests, so after ``timeout`` s this raises instead,
    with what the client saw of the last pass (``client``, :func:`.client.send`'s summary).
    """
    def reached() -> dict | None:
        per = scrape(port, app)
        return per if sum(d.get("requests", 0) for d in per.values()) >= requests else None

    per = processes.wait_until(reached, timeout, interval=0.5)
    if per:
        return per
    per = scrape(port, app)
    seen = sum(d.get("requests", 0) for d in per.values())
    seen_by_client = "" if client is None else (
        f"这一轮客户端：{client['ok']} 个答了，{client['failed']} 个失败，{client['retried']} 个重发过"
        f"（状态码 {client['status']}）。")
    raise RuntimeError(
        f"Ray 的指标 {timeout:.0f} s 后只数到 {seen} / {requests} 个已回答的请求"
        f"（每个副本 requests / errors：{ {r: (d.get('requests', 0), d.get('errors', 0)) for r, d in per.items()} }）。"
        f"{seen_by_client}每个副本的数字还不完整，所以不报出来。"
        "机器太忙时 Ray 上报指标会落后：等别的任务结束，重启内核，再从头运行这个 lab。")


def difference(after: dict, before: dict) -> dict:
    return {r: {k: v if k == "held" else v - before.get(r, {}).get(k, 0) for k, v in d.items()}
            for r, d in after.items()}
