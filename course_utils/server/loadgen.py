"""The load generator behind :mod:`course_utils.server.load`'s recorded calls: the threads that send
completions to a loopback server and scrape its /metrics page while they run (live only; read mode returns
the recorded result and never imports this module).
"""

from __future__ import annotations

import threading
import time

from .load import lora_info_samples, queue_sample


def run_load(srv, models, n_requests, concurrency, max_requests, max_seconds, prompt, max_tokens, during) -> dict:
    import requests

    max_requests = max_requests or 3 * n_requests
    rows: list[dict] = []
    lock = threading.Lock()
    state = {"sent": 0, "phase": "之前"}   # the phase labels are the lab's table rows
    done = threading.Event()
    if during is None:
        done.set()
    t0 = time.monotonic()

    def worker():
        s = requests.Session()
        while True:
            with lock:
                i = state["sent"]
                if (i >= n_requests and done.is_set()) or i >= max_requests or time.monotonic() - t0 > max_seconds:
                    return
                state["sent"] = i + 1
                ph = state["phase"]
            model = models[i % len(models)]
            t = time.monotonic()
            try:
                r = s.post(srv.url("/v1/completions"), headers=srv.headers, timeout=60,
                           json={"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0})
                status, ok = r.status_code, r.status_code == 200
            except requests.RequestException as e:
                status, ok = type(e).__name__, False
            with lock:
                rows.append({"i": i, "model": model, "start": round(t - t0, 4),
                             "latency": round(time.monotonic() - t, 4), "status": status, "ok": ok, "phase": ph})

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(concurrency)]
    for th in threads:
        th.start()
    during_result = None
    if during is not None:
        try:
            during_result = during(state)
        finally:
            with lock:
                state["phase"] = "之后"
            done.set()
    for th in threads:
        th.join(timeout=max_seconds + 60)
    return {"rows": sorted(rows, key=lambda r: r["i"]), "during": during_result,
            "seconds": round(time.monotonic() - t0, 2)}



def burst(srv, models, per_model, prompt, max_tokens, scrape_every) -> dict:
    import requests

    jobs = [m for m in models for _ in range(per_model)]
    results: list[dict] = [None] * len(jobs)  # type: ignore[list-item]
    samples: list[dict] = []
    t_wall = time.time()
    t0 = time.monotonic()
    go = threading.Barrier(len(jobs) + 1)      # every sender ready, then all send together
    replies_in = threading.Event()

    def sample():
        try:
            text = requests.get(srv.url("/metrics"), headers=srv.headers, timeout=5).text
            samples.append({"t": round(time.monotonic() - t0, 3), **queue_sample(text)})
        except requests.RequestException:
            pass

    def sampler():          # from before the first send until after the last reply
        while not replies_in.is_set():
            sample()
            replies_in.wait(scrape_every)

    def one(i, model):
        go.wait()
        t = time.monotonic()
        r = requests.post(srv.url("/v1/completions"), headers=srv.headers, timeout=120,
                          json={"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
                                "ignore_eos": True})
        results[i] = {"model": model, "start": round(t - t0, 4), "end": round(time.monotonic() - t0, 4),
                      "status": r.status_code}

    sample()                # the queue before anything is sent
    threads = [threading.Thread(target=one, args=(i, m), daemon=True) for i, m in enumerate(jobs)]
    for th in threads:
        th.start()
    watcher = threading.Thread(target=sampler, daemon=True)
    watcher.start()
    go.wait()
    for th in threads:
        th.join()
    replies_in.set()
    watcher.join()
    sample()                # and after the last reply
    wall = round(max(r["end"] for r in results) - min(r["start"] for r in results), 3)
    text = requests.get(srv.url("/metrics"), headers=srv.headers, timeout=5).text
    lora_sets = sorted({",".join(s["running"]) for s in lora_info_samples(text) if s["time"] >= t_wall - 1})
    starts = [r["start"] for r in results]
    return {"wall_seconds": wall, "requests": results, "samples": samples, "lora_running_label_sets": lora_sets,
            "sends_spread_s": round(max(starts) - min(starts), 3),
            "samples_during": sum(min(starts) <= s["t"] <= wall + min(starts) for s in samples),
            "max_running": max((s["running"] for s in samples), default=0),
            "max_waiting": max((s["waiting"] for s in samples), default=0)}
