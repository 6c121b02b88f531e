"""Every socket of a started program's processes, sampled while a lab runs, and what is left after it.

The processes are found by :mod:`course_utils.processes` (its ``COURSE_PROC_TAG`` marker is inherited by every
process the program starts, Ray's raylet, workers and vLLM engines included, even once reparented to init);
their sockets come from :func:`course_utils.processes.sockets`.
"""

from __future__ import annotations

import threading
from collections import Counter

from ..loopback import is_loopback


class SocketWatch(threading.Thread):
    """Samples the inet sockets of every process that carries ``tag``, every ``interval`` seconds."""

    def __init__(self, tag: str, interval: float = 1.0):
        super().__init__(daemon=True, name="course-socket-watch")
        self.tag, self.interval = tag, interval
        self._stop_event = threading.Event()
        self.samples = 0
        self.observations = 0
        self.listening: Counter = Counter()      # local address -> samples it was seen listening
        self.outside: list = []                  # sockets with a local or remote address off loopback
        self.pids: set[int] = set()

    def run(self):
        from .. import processes

        while not self._stop_event.is_set():
            self.sample(processes.find(tag=self.tag))
            self._stop_event.wait(self.interval)

    def sample(self, procs) -> None:
        from .. import processes

        self.pids.update(p.pid for p in procs)
        for s in processes.sockets(procs):
            self.observations += 1
            local, remote = (s.laddr or ("",))[0], (s.raddr or ("",))[0]
            if s.listening:
                self.listening[local] += 1
            if (local and not is_loopback(local)) or (remote and not is_loopback(remote)):
                self.outside.append(s)
        self.samples += 1

    def stop(self) -> None:
        self._stop_event.set()
        if self.is_alive():
            self.join()

    def report(self) -> dict:
        return {"samples": self.samples, "socket observations": self.observations,
                "processes seen": len(self.pids), "listening on": sorted(self.listening),
                "off loopback": len(self.outside)}


def survivors(tag: str, timeout: float = 20.0) -> list[str]:
    """The processes carrying ``tag`` still running after up to ``timeout`` seconds ("pid name")."""
    from .. import processes

    processes.wait_until(lambda: not processes.find(tag=tag), timeout, interval=0.5)
    left, out = processes.find(tag=tag), []
    for p in left:
        try:
            out.append(f"{p.pid} {p.name()}")
        except Exception:  # noqa: BLE001 - it ended meanwhile
            pass
    return out
