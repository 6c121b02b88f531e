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

RETRY_WAITS = (1.0, 2.0, 4.0, 8.0)   # seconds before each retry of a request answered 5xx


def send(port: int, model_id: str, stream: list[str], policy: str, concurrency: int = 4,
         max_tokens: int = 8) -> dict:
    """Send the stream to ``/v1/chat/completions``, ``concurrency`` at a time. A request answered 5xx is sent
    again, at most four times, after 1, 2, 4 and 8 s: two requests that arrive together for an adapter no
    replica holds can both try to load it, and Ray answers the second "already been loaded" (Ray 2.60.0); on a
    busy machine the first load takes longer, so an immediate retry can meet the same race. Returned: how many
    were answered, failed and retried, and for each failing status the start of one answer's body."""
    url = f"http://127.0.0.1:{port}/v1/chat/completions"

    def one(item):
        i, name = item
        body = {"model": f"{model_id}:{name}", "messages": [{"role": "user", "content": f"Question {i}."}],
                "max_tokens": max_tokens, "temperature": 0}
        headers = {"Content-Type": "application/json"}
        if POLICY_HEADER[policy]:
            headers["x-session-id"] = POLICY_HEADER[policy]
        t0, first_error, last = time.perf_counter(), None, None
        for wait in RETRY_WAITS + (None,):
            try:
                with urllib.request.urlopen(urllib.request.Request(url, json.dumps(body).encode(), headers),
                                            timeout=120) as r:
                    json.load(r)
                    return 200, time.perf_counter() - t0, first_error, None
            except urllib.error.HTTPError as e:
                first_error = first_error or e.code
                last = (e.code, e.read()[:300].decode(errors="replace"))
                if e.code < 500 or wait is None:
                    break
                time.sleep(wait)
        return last[0], time.perf_counter() - t0, first_error, last[1]

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        results = list(pool.map(one, enumerate(stream)))
    latencies = [r[1] for r in results]
    out = {"requests": len(stream), "ok": sum(r[0] == 200 for r in results),
           "failed": sum(r[0] != 200 for r in results), "retried": sum(r[2] is not None for r in results),
           "status": dict(Counter(str(r[0]) for r in results)), "wall_s": round(time.perf_counter() - t0, 2),
           "p50_s": round(percentile(latencies, 50), 3), "p95_s": round(percentile(latencies, 95), 3)}
    if out["failed"]:   # what the server said, so that a failed pass can be told apart from a slow one
        out["errors"] = {str(code): text for code, _, _, text in results if code != 200}
    return out
