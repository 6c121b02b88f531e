"""Starting a course server, live: stop what an earlier kernel left, check the card has room, spawn ``vllm serve``
with a pid file and its own log, and wait until it answers ``/health`` on its own port (or say why it failed).
:meth:`.process.Server.start` is the recorded call; read mode never imports this module.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..loopback import bypass_proxy, free_port, port_free
from ..paths import REPO
from . import process
from .diagnose import start_failure

if TYPE_CHECKING:
    from ..processes import Started
    from .process import Server


def start(srv: Server) -> dict:
    """Start ``srv`` (see the module docstring); ``{"command", "ready_seconds"}``."""
    from .. import processes

    process.cleanup_stale(verbose=True)
    for old in [s for s in process.running() if s.label == srv.label and s is not srv]:
        # the lab's cell runs a second time: the first server would keep its port (and, on a GPU, the card)
        print(f"这个内核里已经有一个叫 {srv.label!r} 的服务在运行（这一格运行过）：先停掉它，再起新的。")
        old.stop()
    if srv.port is None or port_free(srv.host, srv.port):
        # Room on the card? (vLLM's error would not say who holds it.) Only for a free port: vLLM binds its
        # port before it builds the engine (0.26.0: entrypoints/openai/api_server.py, run_server calls
        # setup_server first), so on a taken port it fails on the port whatever the card holds.
        from ..gpu.free import ensure_room_for

        ensure_room_for(srv.profile, what=f"服务 {srv.label!r}")
    srv.port = srv.port or free_port(srv.host)
    srv.command = srv.launch.argv(srv.port)
    bypass_proxy()   # this kernel's health wait, openai client and the lab's requests: 127.0.0.1 never via a proxy
    t0 = time.monotonic()
    srv.started, srv.log_path = spawn(srv)
    processes.stop_at_exit(srv.stop)  # and on SIGTERM: its log goes too
    try:
        wait_ready(srv, t0)
    except BaseException:
        srv.stop()
        raise
    srv.ready_seconds = round(time.monotonic() - t0, 2)
    return {"command": srv.display_command, "ready_seconds": srv.ready_seconds}


def spawn(srv: Server) -> tuple[Started, Path]:
    """Start ``srv``'s command (:func:`course_utils.processes.start`, with a pid file), its output in a new log
    file.

    Unlike the course's other children (the store, Lab 07's driver, Lab 08's trainer), a server is not started
    with ``die_with_parent``: Linux sends that signal when the *thread* that started the child ends, not the
    process, and servers are started from other threads too (a test's thread pool, a widget's callback), where
    the server would die with the thread while the kernel still uses it. A kernel that dies without stopping
    its servers (SIGKILL, a crash) is covered instead by the pid file and :func:`.process.cleanup_stale` at the next
    start, which also finds the engine processes reparented to init, by their tag."""
    from .. import processes

    fd, log = tempfile.mkstemp(prefix=f"vllm-{srv.label}-", suffix=".log", dir=processes.runtime_dir())
    with os.fdopen(fd, "wb") as logf:  # the server writes to its own copy of the descriptor
        started = processes.start(srv.command, env=srv.launch.env(), tag=srv.tag, stdout=logf, cwd=REPO,
                                  stop_at_exit=False, owner=srv, pidfile=process.PIDFILE_PREFIX,
                                  pidfile_info={"port": srv.port, "log": log})
    return started, Path(log)


def healthy(srv: Server) -> bool:
    import requests

    try:
        return requests.get(srv.url("/health"), timeout=2).status_code == 200 and owns_port(srv)
    except requests.RequestException:
        return False


def wait_ready(srv: Server, t0: float) -> None:
    """Until ``srv`` answers /health on its own port; raises :class:`ServerError` if it ends or times out.

    On a GPU profile, a start still loading after :data:`.process.STILL_LOADING_AFTER` seconds says so once (on CPU
    profiles nothing is printed: the recorded outputs stay the same from run to run)."""
    said = srv.profile.vllm_on_cpu

    def ready() -> bool:
        nonlocal said
        if not said and time.monotonic() - t0 > process.STILL_LOADING_AFTER:
            said = True
            print(f"服务 {srv.label!r} 启动了 {time.monotonic() - t0:.0f} 秒，还在加载（读权重、为这组 LoRA 设置编译、"
                  f"捕获 CUDA graph；冷启动要几分钟），最多等 {srv.ready_timeout:.0f} 秒。进度在日志里：{srv.log_path}")
        return healthy(srv)

    from .. import processes

    try:
        processes.wait_until(ready, t0 + srv.ready_timeout - time.monotonic(), interval=0.5,
                             proc=srv.proc, what=f"服务 {srv.label!r}")
    except (TimeoutError, processes.ProcessExited):
        time.sleep(0.2)  # the last lines of the log
        raise start_failure(srv.label, srv.proc.poll(), srv.log_path, srv.ready_timeout) from None


def owns_port(srv: Server) -> bool:
    """Whether the answer came from this server's processes (not another server on a reused port)."""
    return any(s.listening and s.laddr and s.laddr[1] == srv.port for s in srv.sockets())
