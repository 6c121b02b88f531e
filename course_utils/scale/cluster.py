"""Lab 07's cluster, seen from the lab: ``up``, ``run`` and ``down``, each answered by the Ray driver process.

``up(prof, ...)`` starts the driver (:mod:`.driver`: the store, Ray, Serve and the app, all on 127.0.0.1) and
returns what it did; ``run(stream, policy)`` sends one stream and returns what each replica did; ``down()``
stops everything and returns the socket and leftover-process checks. The three are ``replayable``: read mode
shows what they returned when the lab was recorded. Live, each is answered by :mod:`.control`, the kernel's
side of the driver. The kernel never imports Ray (see :mod:`.driver` for why). While the cluster is up, a thread samples the sockets of every process under the kernel. Everything
also stops when ``up`` fails half-way, and when the kernel exits or dies (:func:`course_utils.processes.start`:
stopped at exit, and Linux sends the driver and the store SIGTERM when their parent goes).
"""

from __future__ import annotations

from ..replay.record import replayable


def shelf(prof, copies: int) -> dict:
    """Adapter name -> folder: each of the profile's adapters, and copies of it under more names."""
    return {(name if c == 0 else f"{name}_{c + 1}"): folder
            for c in range(copies) for name, folder in prof.adapters.items()}


@replayable
def up(prof, copies: int = 2, replicas: int = 2, adapters_per_replica: int = 2) -> dict:
    """The store (each of the profile's adapters under ``copies`` names: sql, sql_2, ...), Ray on loopback,
    Serve, and the app with ``replicas`` replicas of the base; returns timings and facts."""
    from . import control

    return control.up(prof, copies, replicas, adapters_per_replica)


@replayable
def run(stream: list, policy: str, concurrency: int = 4) -> dict:
    """Send ``stream`` (adapter names) through the app with ``policy``; what the client and each replica saw."""
    from . import control

    return control.run(stream, policy, concurrency)


@replayable
def down() -> dict:
    """Stop the app, Serve, Ray and the store; then check the sockets seen and the processes left."""
    from . import control

    return control.down()
