"""Load on a running server, and what its /metrics page says.

:func:`run_load` keeps a steady stream of completions going (e.g. while
adapters are swapped); :func:`burst` sends many at once and samples the queue;
:func:`queue_sample` and :func:`lora_info_samples` read a /metrics page;
:func:`percentile` summarizes latencies. Loopback servers only.

Inside a lab, :func:`run_load` and :func:`burst` are recorded calls: live they
run (and ``make record`` keeps their result); read mode returns what they
returned, and sends nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import prometheus
from ..loopback import is_loopback
from ..replay import keys
from ..replay.record import recorded

if TYPE_CHECKING:
    from .process import Server



def lora_info_samples(metrics_text: str) -> list[dict]:
    """The ``vllm:lora_requests_info`` series of a /metrics page: running/waiting adapter sets per label set."""
    def names(labels: dict, key: str) -> list[str]:
        return sorted(a for a in labels.get(key, "").split(",") if a)

    return [{"running": names(s.labels, "running_lora_adapters"), "waiting": names(s.labels, "waiting_lora_adapters"),
             "max_lora": s.labels.get("max_lora"), "time": s.value}
            for s in prometheus.samples(metrics_text, ["vllm:lora_requests_info"])]


def _loopback_only(srv: Server, what: str) -> None:
    if not (is_loopback(srv.host) or srv.host == "localhost"):
        raise ValueError(f"{what} 只对回环地址（127.0.0.1）上的服务发请求")


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    v = sorted(values)
    k = (len(v) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def run_load(srv: Server, models: list[str], *, n_requests: int = 240, concurrency: int = 6,
             max_requests: int | None = None, max_seconds: float = 120.0, prompt: str = "Hello",
             max_tokens: int = 8, during=None) -> dict:
    """A bounded load generator: a steady stream of completions, round-robin over ``models``.

    Loopback only, at most ``concurrency`` requests in flight. It sends at least
    ``n_requests``; if ``during`` is given it keeps sending until ``during``
    has returned too, but never more than ``max_requests`` (3 x n_requests by
    default) and never after ``max_seconds``. ``during(state)`` runs in this
    thread while the workers send: ``state["sent"]`` is the number sent so far,
    and whatever it puts in ``state["phase"]`` labels the requests sent from then
    on (it starts as "之前"; once ``during`` has returned it is "之后"). Returns ``{"rows", "during", "seconds"}``: one row
    per request (model, start and latency in s since the load began, status, ok,
    phase), what ``during`` returned (JSON-able), and the load's wall time.
    """
    _loopback_only(srv, "run_load")
    return _run_load(srv, models, n_requests, concurrency, max_requests, max_seconds, prompt, max_tokens, during)


def _load_key(srv, models, n_requests, concurrency, max_requests, max_seconds, prompt, max_tokens, during):
    return keys.call("run_load", [srv.label], {
        "models": list(models), "n_requests": n_requests, "concurrency": concurrency, "max_requests": max_requests,
        "max_seconds": max_seconds, "prompt": prompt, "max_tokens": max_tokens,
        "during": getattr(during, "__name__", None)})


@recorded(_load_key)
def _run_load(srv, models, n_requests, concurrency, max_requests, max_seconds, prompt, max_tokens, during) -> dict:
    from .loadgen import run_load

    return run_load(srv, models, n_requests, concurrency, max_requests, max_seconds, prompt, max_tokens, during)


def queue_sample(metrics_text: str) -> dict:
    """Running and waiting request counts from a /metrics page (summed over engines)."""
    out = {"running": 0.0, "waiting": 0.0}
    for s in prometheus.samples(metrics_text, ["vllm:num_requests_running", "vllm:num_requests_waiting"]):
        out[s.name.rsplit("_", 1)[1]] += s.value
    return out


def burst(srv: Server, models: list[str], *, per_model: int = 8, prompt: str = "Hello", max_tokens: int = 32,
          scrape_every: float = 0.05) -> dict:
    """Send ``per_model`` requests to each model at once and scrape /metrics while they run.

    Returns the wall time of the burst, each request's model/latency/status, the
    running/waiting counts seen in /metrics, and the ``vllm:lora_requests_info``
    label sets updated during the burst.
    """
    _loopback_only(srv, "burst")
    return _burst(srv, models, per_model, prompt, max_tokens, scrape_every)


@recorded(lambda srv, models, per_model, prompt, max_tokens, scrape_every: keys.call("burst", [srv.label], {
    "models": list(models), "per_model": per_model, "prompt": prompt, "max_tokens": max_tokens,
    "scrape_every": scrape_every}))
def _burst(srv, models, per_model, prompt, max_tokens, scrape_every) -> dict:
    from .loadgen import burst

    return burst(srv, models, per_model, prompt, max_tokens, scrape_every)
