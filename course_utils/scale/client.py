"""The client that sends a request stream (:mod:`.traffic`) to Lab 07's app, run by the driver process."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from ..server.load import percentile   # the same percentiles as Lab 04's load test
from .traffic import POLICY_HEADER


def send(port: int, model_id: str, stream: list[str], policy: str, concurrency: int = 4,
         max_tokens: int = 8) -> dict:
    """Send the stream to ``/v1/chat/completions``, ``concurrency`` at a time. A request answered 5xx is sent
    again, at most twice: two requests that arrive together for an adapter no replica holds can both try to
    load it, and Ray answers the second "already been loaded" (Ray 2.60.0). Both counts are returned."""
    url = f"http://127.0.0.1:{port}/v1/chat/completions"

    def one(item):
        i, name = item
        body = {"model": f"{model_id}:{name}", "messages": [{"role": "user", "content": f"Question {i}."}],
                "max_tokens": max_tokens, "temperature": 0}
        headers = {"Content-Type": "application/json"}
        if POLICY_HEADER[policy]:
            headers["x-session-id"] = POLICY_HEADER[policy]
        t0, first_error = time.perf_counter(), None
        for _ in range(3):
            try:
                with urllib.request.urlopen(urllib.request.Request(url, json.dumps(body).encode(), headers),
                                            timeout=120) as r:
                    json.load(r)
                    return 200, time.perf_counter() - t0, first_error
            except urllib.error.HTTPError as e:
                first_error = first_error or e.code
                if e.code < 500:
                    break
        return first_error, time.perf_counter() - t0, first_error

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        results = list(pool.map(one, enumerate(stream)))
    latencies = [r[1] for r in results]
    return {"requests": len(stream), "ok": sum(r[0] == 200 for r in results),
            "failed": sum(r[0] != 200 for r in results), "retried": sum(r[2] is not None for r in results),
            "status": dict(Counter(str(r[0]) for r in results)), "wall_s": round(time.perf_counter() - t0, 2),
            "p50_s": round(percentile(latencies, 50), 3), "p95_s": round(percentile(latencies, 95), 3)}
