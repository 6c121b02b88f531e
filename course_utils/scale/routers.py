"""Three routing policies on one Ray Serve deployment, chosen per request (Lab 07).

Plugged in through Ray Serve's own extension point, ``deployment_config={"request_router_config":
{"request_router_class": "course_utils.scale.routers.CourseRouter"}}``; it runs in the OpenAI ingress
replica, in front of the LLM replicas. The policy comes from the request's session id (the HTTP header
``x-session-id``, which Ray's OpenAI ingress passes on):

* no header: Ray's default, ``PowerOfTwoChoicesRequestRouter`` with its multiplex preference (a replica
  that already holds the request's adapter first; else the ones holding the fewest) - adapter-aware;
* ``policy=blind``: round robin over the replicas, the adapter ignored;
* ``policy=hash``: static affinity, ``crc32(model id) % replicas`` on the multiplexed model id Ray passes
  (``"tiny:sql"``: base, colon, adapter), what a consistent-hash router in front of plain ``vllm serve``
  processes gives.

One deployment serves all three, so the lab starts the app once (Lab 07 prints how long it took; about 90 s on 2 CPU cores when last recorded).
Ray's experimental ``RoundRobinRouter`` is not adapter-blind (it keeps the multiplex preference), hence
the blind policy here.
"""

from __future__ import annotations

from ray.serve._private.request_router.pow_2_router import PowerOfTwoChoicesRequestRouter

from .traffic import hash_slot  # the header values (POLICY_HEADER) and the hash live with the client


class CourseRouter(PowerOfTwoChoicesRequestRouter):
    def initialize_state(self, **kwargs):
        self._next = 0

    async def choose_replicas(self, candidate_replicas, pending_request=None):
        sid = pending_request.metadata.session_id if pending_request is not None else None
        if not candidate_replicas or not sid or not sid.startswith("policy="):
            return await super().choose_replicas(candidate_replicas, pending_request)
        reps = sorted(candidate_replicas, key=lambda r: r.replica_id.unique_id)
        if sid == "policy=blind":
            i, self._next = self._next, self._next + 1
        else:
            i = hash_slot(pending_request.metadata.multiplexed_model_id, len(reps))
        # ranked: the chosen replica first, the others only if it is full
        return [[reps[(i + k) % len(reps)]] for k in range(len(reps))]
