"""Lab 07's Ray driver: a process of its own that owns the store, Ray, Serve and the app.

The lab's kernel never imports Ray. Ray's core worker can abort the whole process it runs in when a Serve
thread touches it after ``ray.shutdown()`` (seen here now and then with Ray 2.60.0: "The core worker has
already been shutdown ... The process will exit"); in its own process that costs nothing, in a notebook
kernel it would kill the kernel. The kernel (``cluster.py``) sends one JSON command per line on stdin and
reads one JSON answer per line, marked ``@@course``, on stdout; everything Ray prints goes to a log file.

Loopback, and why each setting is needed (Ray 2.60.0 on Linux, seen on the course's machine):

- ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` before ``import ray``: otherwise ``ray.init(_node_ip_address=
  "127.0.0.1")`` is rewritten to the host's routable address and the GCS and raylet listen on all
  interfaces;
- every Serve replica starts an internal gRPC server on ``[::]:0`` (hard-coded); ``site/sitecustomize.py``,
  put on the workers' ``PYTHONPATH``, moves it to 127.0.0.1;
- ``VLLM_HOST_IP``/``VLLM_LOOPBACK_IP``: vLLM's multiprocess executor otherwise picks the host address;
- Serve's HTTP proxy on 127.0.0.1, no dashboard, usage stats off;
- ``NO_PROXY``/``no_proxy`` list 127.0.0.1 (:func:`course_utils.loopback.bypass_proxy`): a proxy in the
  environment would otherwise take the store's, the metrics' and Serve's loopback traffic.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import time
from pathlib import Path

from ..loopback import LOOPBACK, LOOPBACK_ENV, bypass_proxy, free_port
from ..server.command import ENGINE_FLAGS  # the profile's engine settings a server gets, as engine_kwargs
from .. import child, vllm_env
from .cluster import shelf   # the shelf, as the kernel's side has it

SITE = Path(__file__).resolve().parent / "site"
RAY_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0",
           "RAY_SERVE_LLM_ENABLE_DIRECT_STREAMING": "0"}
LORA_DISK_CACHE = Path("/tmp/ray/llm/lora/cache")   # Ray Serve LLM's adapter download cache (fixed path)
APP = "scale"
APP_RUNNING = "应用进入 RUNNING"   # up()'s step, in its "seconds": serve.run until the app is RUNNING
_live: dict = {}


def worker_env(prof, s3_env: dict) -> dict:
    # Ray's workers inherit this process's environment (a lab's kernel has the profile's, which turns vLLM's
    # engine process off for the in-process tiny engine); Serve's replicas run vLLM's AsyncLLM, which keeps it.
    return vllm_env.ray_workers(prof, {**RAY_ENV, **s3_env}, str(SITE))


def up(profile: str, copies: int, replicas: int, adapters_per_replica: int) -> dict:
    from ..profiles import get_profile
    from . import metrics, store as store_mod

    prof = get_profile(profile)
    seconds = {}
    t0 = time.perf_counter()
    store = store_mod.S3Store.start("adapters")
    _live["store"] = store
    for name, folder in shelf(prof, copies).items():
        store.upload(name, folder)
    seconds["存储与上传"] = time.perf_counter() - t0
    shutil.rmtree(LORA_DISK_CACHE, ignore_errors=True)

    import ray
    from ray import serve

    from .serve_app import build_app

    t0 = time.perf_counter()
    _live["metrics_port"] = free_port()
    ray.init(logging_level=logging.WARNING,
             num_cpus=8,                        # logical CPUs: 2 replicas x 2 + the ingress and controller
             _node_ip_address=LOOPBACK, include_dashboard=False, log_to_driver=False,
             _metrics_export_port=_live["metrics_port"], _system_config={"metrics_report_interval_ms": 1000},
             runtime_env={"env_vars": worker_env(prof, store.env)})
    _live["ray"] = True
    seconds["Ray 启动"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    _live["http_port"] = free_port()
    serve.start(http_options={"host": LOOPBACK, "port": _live["http_port"]})
    seconds["Serve 启动"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    app = build_app(prof.base_model, prof.name, store.bucket, replicas, adapters_per_replica,
                    {k: prof.engine[k] for k in ENGINE_FLAGS if k in prof.engine})
    serve.run(app, name=APP, route_prefix="/", blocking=False)   # returns once the app is RUNNING
    seconds[APP_RUNNING] = time.perf_counter() - t0
    _live.update(model_id=prof.name, served=metrics.scrape(_live["metrics_port"], APP), requests=0)
    return {"adapters in the bucket": store.adapters(), "replicas": replicas,
            "adapters per replica": adapters_per_replica, "node address": ray.util.get_node_ip_address(),
            "seconds": {k: round(v, 1) for k, v in seconds.items()}}


def run(stream: list, policy: str, concurrency: int) -> dict:
    from . import client as traffic_client, metrics

    client = traffic_client.send(_live["http_port"], _live["model_id"], stream, policy, concurrency)
    _live["requests"] += client["ok"]      # Serve's request counter counts answered requests; failed ones elsewhere
    t0 = time.perf_counter()
    after = metrics.scrape_until(_live["metrics_port"], APP, _live["requests"], client=client)
    print(f"{policy} 这一遍：最后一个回答之后 {time.perf_counter() - t0:.1f} s，Ray 的计数器才加齐",
          file=sys.stderr)   # to the log (build/lab07/driver.log): how far the metrics lagged
    per_replica = metrics.difference(after, _live["served"])
    _live["served"] = after
    names = {r: f"replica {i}" for i, r in enumerate(sorted(per_replica))}   # Ray's ids change from run to run
    return {"policy": policy, "client": client, "replicas": {names[r]: d for r, d in per_replica.items()}}


def stop() -> None:
    """Stop whatever is up (the app, Serve, Ray, the store); never raises."""
    if _live.get("ray"):
        try:
            from ray import serve

            serve.delete(APP)
            serve.shutdown()
        except Exception as e:   # noqa: BLE001 - stopping must go on
            print(f"serve.shutdown 出错：{e}", file=sys.stderr)
        import ray

        ray.shutdown()
    if _live.get("store"):
        _live["store"].stop()
    shutil.rmtree(LORA_DISK_CACHE, ignore_errors=True)
    _live.clear()


def main() -> int:
    import signal

    os.environ.update({**RAY_ENV, **LOOPBACK_ENV})          # before Ray is imported
    bypass_proxy()   # boto3 (the store), urllib (traffic, metrics) and Ray's gRPC, here and in every worker
    # The kernel's end (or a SIGTERM from it) stops everything: sys.exit runs the finally below.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    answer = sys.stdout
    sys.stdout = sys.stderr                                 # what Ray and vLLM print goes to the log
    ops = {"up": up, "run": run}
    try:
        for line in sys.stdin:
            cmd = json.loads(line)
            op = cmd.pop("op")
            if op == "down":
                stop()
                child.tell(answer, "reply", ok=True)
                break
            try:
                reply = {"ok": True, "result": ops[op](**cmd)}
            except Exception as e:  # noqa: BLE001 - the kernel raises it with its message
                reply = {"ok": False, "error": f"{type(e).__name__}: {e}"}
            child.tell(answer, "reply", **reply)
    finally:
        stop()
        sys.stderr.flush()
        # Ray is stopped: leave without the interpreter's exit handlers, which can hang or abort once Ray's
        # core worker is gone (the kernel waits for this process to end). Under make coverage-gpu, save first:
        # os._exit skips coverage's own exit handler.
        cov = sys.modules["coverage"].Coverage.current() if "coverage" in sys.modules else None
        if cov is not None:
            cov.save()
        os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
