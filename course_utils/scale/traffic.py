"""A skewed request stream (a few hot adapters, a long tail), and where the hash policy sends each request. The client
that sends a stream to the app is :mod:`.client` (the driver's, live only)."""

from __future__ import annotations

import random
import zlib

# The policies of course_utils.scale.routers.CourseRouter, chosen per request by the x-session-id header.
POLICY_HEADER = {"aware": None, "blind": "policy=blind", "hash": "policy=hash"}


def hash_slot(model_id: str, replicas: int) -> int:
    """Static affinity: the replica (by rank of replica id) that the hash policy sends a request to, from its
    multiplexed model id (``"tiny:sql"``, what the client writes as ``model``)."""
    return zlib.crc32(model_id.encode()) % replicas


def zipf_stream(names: list[str], n: int, s: float = 1.1, seed: int = 7) -> list[str]:
    """``n`` adapter names, the i-th most popular drawn with weight 1 / i**s (the popularity order shuffled)."""
    rng = random.Random(seed)
    order = list(names)
    rng.shuffle(order)
    weights = [1 / (rank + 1) ** s for rank in range(len(order))]
    return rng.choices(order, weights=weights, k=n)
