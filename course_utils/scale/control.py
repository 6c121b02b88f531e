"""Lab 07's cluster, live: the kernel's side of the Ray driver process (:mod:`.driver`). Start it, ask it, stop it,
and watch the sockets of every process under the kernel while it runs. :mod:`.cluster` holds the recorded calls
the lab makes; read mode never imports this module.
"""

from __future__ import annotations

import subprocess
import sys
import time

from .. import child
from ..paths import BUILD, REPO
from . import sockets

LOG = BUILD / "lab07" / "driver.log"      # what Ray, Serve and vLLM print in the driver process

_live: dict = {}


def _ask(op: str, **args):
    proc = _live["driver"].proc
    child.send(proc.stdin, op=op, **args)
    for line in proc.stdout:
        reply = child.heard(line)                # the driver's answer; what Ray prints goes to its log
        if reply is not None:
            if not reply["ok"]:
                raise RuntimeError(f"Ray 驱动进程里的 {op} 失败了：{reply['error']}（详情见 build/lab07/driver.log）")
            return reply.get("result")
    raise RuntimeError(f"Ray 驱动进程在 {op!r} 途中退出了（退出码 {proc.wait()}）；看 build/lab07/driver.log")


def up(prof, copies: int, replicas: int, adapters_per_replica: int) -> dict:
    from .. import processes   # live only: a reader's kernel never loads the registry

    if _live:
        raise RuntimeError("这个实验的集群已经起来了：先运行 down()（或者重启内核）。")
    tag = processes.new_tag()                    # inherited by every process the driver starts
    watch = sockets.SocketWatch(tag)
    watch.start()
    LOG.parent.mkdir(parents=True, exist_ok=True)
    log = open(LOG, "a")   # noqa: SIM115 - the driver writes to it for its whole life
    _live.update(tag=tag, watch=watch, log=log)
    processes.stop_at_exit(_stop)                 # the kernel's exit: the same orderly stop as down()
    try:
        # die_with_parent: a kernel that crashed or was killed takes the driver with it (its SIGTERM handler
        # stops Ray and the store before it leaves, driver.main)
        _live["driver"] = processes.start(
            [sys.executable, "-m", "course_utils.scale.driver"], tag=tag, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=log, text=True, cwd=REPO, die_with_parent=True, grace=30.0,
            stop_at_exit=False)
        return _ask("up", profile=prof.name, copies=copies, replicas=replicas,
                    adapters_per_replica=adapters_per_replica)
    except BaseException:
        _stop()
        raise


def run(stream: list, policy: str, concurrency: int) -> dict:
    if not _live.get("driver"):
        raise RuntimeError("集群还没有起来：先运行调用 up(...) 的那一格。")
    return _ask("run", stream=stream, policy=policy, concurrency=concurrency)


def down() -> dict:
    from .. import processes   # live only: a reader's kernel never loads the registry

    watch = _live.get("watch")
    if watch is None:
        return {"stopped": "什么也没有在运行"}
    tag = _live["tag"]
    t0 = time.perf_counter()
    _stop(sweep=False)
    stopped_s = time.perf_counter() - t0
    left = sockets.survivors(tag)
    processes.stop(tag=tag, grace=5.0)          # whatever is left is reported above, and stopped now
    return {"seconds to stop": round(stopped_s, 1), "sockets": watch.report(), "processes left": left}


def _stop(sweep: bool = True) -> None:
    """Stop whatever is up; never raises. The driver stops Ray and the store, then exits; with ``sweep``,
    whatever still carries the cluster's tag is stopped too (a failed start, the kernel's exit)."""
    from .. import processes   # live only: a reader's kernel never loads the registry

    driver = _live.get("driver")
    if driver is not None and driver.running:
        try:
            _ask("down")
        except Exception:  # noqa: BLE001 - it may have died; it is stopped below either way
            pass
        if not processes.wait_until(lambda: not driver.running, 60.0, interval=0.2):
            processes.stop(driver.pid, grace=30.0)     # it did not leave: SIGTERM, then SIGKILL
        driver.exited()                                # reaped, off the registry
    watch = _live.get("watch")
    if watch is not None:
        time.sleep(1.0)                 # one more sample after the stop
        watch.stop()
    if sweep and _live.get("tag"):
        processes.stop(tag=_live["tag"], grace=5.0)
    if _live.get("log"):
        _live["log"].close()
    _live.clear()
    processes.forget(_stop)
