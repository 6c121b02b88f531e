"""Start, wait for and stop the programs the course runs (psutil: Linux and macOS). One place for all three.

- :func:`start` runs a program as the leader of its own process group, tagged (below), optionally told by
  Linux to end with its parent (``die_with_parent``), and stopped at this interpreter's exit or on SIGTERM
  (SIGINT too outside a Jupyter kernel, where an interrupt must stay a cell interrupt) unless told not to.
- The registry: :func:`children` lists what :func:`start` ran and nothing has stopped yet, each with its
  ``owner`` (the :class:`~course_utils.server.Server`, the store, ...). A child started with ``pidfile`` also
  leaves a pid file in :func:`runtime_dir`, so that :func:`cleanup_stale` can stop it from a later process
  when this one died without stopping it (vLLM servers: why they need that is in ``server/process.py``).
- :func:`wait_until` polls a condition on ``time.monotonic`` until it holds, a deadline passes, or the
  process it waits for ends.
- :func:`stop` ends a program wherever its processes went (below): SIGTERM, a grace period, then SIGKILL
  for whatever is left, until nothing is.
- ``python -m course_utils.processes leftovers`` lists (and with ``--stop`` ends) every running course
  process of this user, found by tag: the check ``make test`` runs after the labs.

A process started by the course can leave helpers behind that are no longer its
descendants: when a vLLM server is killed during start, its engine process and
``multiprocessing.resource_tracker`` (which ignores SIGTERM) are reparented to
init. So a started program is found three ways at once:

- ``pid``: the process itself and its descendants;
- ``pgid``: the members of its process group;
- ``tag`` (or any ``env`` marker): this user's processes whose environment
  carries it. :func:`with_tag` puts ``COURSE_PROC_TAG=<uuid>`` in the child's
  environment at start; every process it starts inherits the marker, wherever
  it is reparented to.

:func:`find` lists them, :func:`sockets` lists their sockets. This process and its ancestors are never
included.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import psutil

from .errors import CourseError

TAG = "COURSE_PROC_TAG"


class Ended(NamedTuple):
    """A process that :func:`stop` ended: its pid, command line, and whether it needed SIGKILL."""

    pid: int
    cmdline: list[str]
    sigkill: bool


class Socket(NamedTuple):
    """One inet socket of a process: ``laddr``/``raddr`` are ``(ip, port)`` or None."""

    pid: int
    laddr: tuple | None
    raddr: tuple | None
    status: str

    @property
    def listening(self) -> bool:
        return self.status == psutil.CONN_LISTEN


def new_tag() -> str:
    return uuid.uuid4().hex


def with_tag(env: Mapping[str, str], tag: str) -> dict[str, str]:
    """``env`` with ``tag`` added to the words of ``COURSE_PROC_TAG`` (a tag inherited from a parent stays)."""
    return {**env, TAG: " ".join([*env.get(TAG, "").split(), tag])}


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True


def cmdline(pid: int) -> list[str] | None:
    try:
        return psutil.Process(pid).cmdline() or None
    except psutil.Error:
        return None


def _running(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True


def _carries(p: psutil.Process, env: Mapping[str, str]) -> bool:
    """Whether each ``env`` value is one of the space-separated words of that variable in ``p``'s environment."""
    try:
        theirs = p.environ()
    except psutil.Error:
        return False
    return all(v in theirs.get(k, "").split() for k, v in env.items())


def _never() -> set[int]:
    """This process and its ancestors: never found, never signalled."""
    me = psutil.Process()
    try:
        return {me.pid, *(p.pid for p in me.parents())}
    except psutil.Error:
        return {me.pid}


def _marker(env: Mapping[str, str] | None, tag: str | None) -> dict[str, str]:
    return {**(env or {}), **({TAG: tag} if tag else {})}


def find(pid: int | None = None, *, pgid: int | None = None, tag: str | None = None,
         env: Mapping[str, str] | None = None, exclude: Iterable[int] = ()) -> list[psutil.Process]:
    """Every running process of a started program (see the module docstring), with all their descendants.

    An ``env`` value matches when it is one of the space-separated words of that
    variable in a process's environment (so nested starts can add theirs). The
    pids in ``exclude`` are left out.
    """
    env = _marker(env, tag)
    found: dict[int, psutil.Process] = {}
    if pid is not None:
        try:
            found[pid] = psutil.Process(pid)
        except psutil.Error:
            pass
    if pgid is not None or env:
        uid = os.getuid()
        for p in psutil.process_iter(["uids"]):
            try:
                in_group = pgid is not None and os.getpgid(p.pid) == pgid
            except OSError:
                continue
            uids = p.info.get("uids")
            if in_group or (env and (uids is None or uids.real == uid) and _carries(p, env)):
                found[p.pid] = p
    for p in list(found.values()):
        try:
            found.update((c.pid, c) for c in p.children(recursive=True))
        except psutil.Error:
            pass
    never = _never() | set(exclude)
    return sorted((p for p in found.values() if p.pid not in never and _running(p)), key=lambda p: p.pid)


def _signal(procs: Iterable[psutil.Process], sig: int, pgid: int | None) -> None:
    if pgid is not None and pgid not in _never():
        try:
            os.killpg(pgid, sig)
        except OSError:
            pass
    for p in procs:
        try:
            p.send_signal(sig)
        except psutil.Error:
            pass


def _wait_gone(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Wait up to ``timeout`` s for ``procs`` to end (a zombie counts as ended); the ones still running."""
    wait_until(lambda: not any(_running(p) for p in procs), timeout, interval=0.05)
    return [p for p in procs if _running(p)]


def stop(pid: int | None = None, *, pgid: int | None = None, tag: str | None = None,
         env: Mapping[str, str] | None = None, exclude: Iterable[int] = (), grace: float = 10.0,
         kill_wait: float = 5.0) -> list[Ended]:
    """End every process of a started program: SIGTERM, up to ``grace`` s, then SIGKILL whatever is left.

    After the grace period the program is looked up again (a process may have
    been started or reparented meanwhile) and everything still running gets
    SIGKILL, until nothing is found (three rounds at most). Returns what ended.
    ``exclude`` spares pids from the search, not from a signal to the whole ``pgid``.
    """
    env, exclude = _marker(env, tag), set(exclude)
    procs = find(pid, pgid=pgid, env=env, exclude=exclude)
    if not procs:
        return []
    seen = {p.pid: (p, _cmdline_of(p)) for p in procs}
    _signal(procs, signal.SIGTERM, pgid)
    left = _wait_gone(procs, grace)
    hard: set[int] = set()
    for _ in range(3):
        left = list({p.pid: p for p in [*left, *find(pid, pgid=pgid, env=env, exclude=exclude)]}.values())
        if not left:
            break
        seen.update((p.pid, (p, _cmdline_of(p))) for p in left if p.pid not in seen)
        hard.update(p.pid for p in left)
        _signal(left, signal.SIGKILL, pgid)
        left = _wait_gone(left, kill_wait)
    return [Ended(pid_, line, pid_ in hard) for pid_, (p, line) in sorted(seen.items()) if not _running(p)]


def _cmdline_of(p: psutil.Process) -> list[str]:
    try:
        return p.cmdline()
    except psutil.Error:
        return []


def sockets(procs: Iterable[psutil.Process]) -> list[Socket]:
    """The inet sockets (TCP and UDP, listening or connected) of ``procs``, e.g. of ``find(...)``."""
    out = []
    for p in procs:
        try:
            conns = (getattr(p, "net_connections", None) or p.connections)(kind="inet")
        except psutil.Error:
            continue
        out += [Socket(p.pid, tuple(c.laddr) if c.laddr else None, tuple(c.raddr) if c.raddr else None, c.status)
                for c in conns]
    return out


# -- waiting ------------------------------------------------------------------------------------------
T = TypeVar("T")


class ProcessExited(CourseError, RuntimeError):
    """The process :func:`wait_until` waited on ended first; ``returncode`` is its exit status."""

    def __init__(self, what: str, returncode: int | None):
        super().__init__(f"{what}: the process exited (code {returncode})")
        self.returncode = returncode


def wait_until(condition: Callable[[], T], timeout: float, *, interval: float = 0.1,
               proc: subprocess.Popen | None = None, what: str | None = None) -> T:
    """Call ``condition()`` every ``interval`` s until it returns something truthy, and return that.

    The deadline is on ``time.monotonic`` (a clock change cannot stretch or cut it). At the deadline the
    last (falsy) value is returned, or, when ``what`` names the awaited thing, ``TimeoutError`` is raised.
    With ``proc``, a process that ends first raises :class:`ProcessExited`.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            raise ProcessExited(what or "wait_until", proc.returncode)
        if time.monotonic() >= deadline:
            if what is not None:
                raise TimeoutError(f"{what}: not after {timeout:.0f} s")
            return value
        time.sleep(interval)


# -- starting, and stopping at exit -------------------------------------------------------------------
def _die_with_parent() -> None:  # pragma: no cover - runs in the child, between fork and exec
    """Linux sends the child SIGTERM when the thread that started it ends (PR_SET_PDEATHSIG = 1)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


@dataclass
class Started:
    """A program :func:`start` ran: its ``proc`` (``subprocess.Popen``), ``tag``, the ``grace`` its stop gives,
    its ``owner`` (whoever manages it, or None) and its pid file (None without one)."""

    proc: subprocess.Popen
    tag: str
    grace: float = 10.0
    owner: Any = None
    pidfile: Path | None = None
    ended: list = field(default_factory=list)

    pid = property(lambda self: self.proc.pid)
    pgid = property(lambda self: self.proc.pid, doc="The program leads its own process group.")

    @property
    def running(self) -> bool:
        return self.proc.poll() is None

    def processes(self) -> list[psutil.Process]:
        """Its running processes, wherever they were reparented."""
        return find(self.pid if self.running else None, pgid=self.pgid, tag=self.tag)

    def stop(self, grace: float | None = None) -> list[Ended]:
        """Stop every process of the program (:func:`stop`), collect its exit status, and take it off the
        registry (its pid file too)."""
        forget(self.stop)
        # an unreaped pid is still this program's; once reaped, its group and tag still find the rest
        self.ended += stop(self.pid if self.running else None, pgid=self.pgid, tag=self.tag,
                           grace=self.grace if grace is None else grace)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILLed above
            pass
        self._off_the_registry()
        return self.ended

    def exited(self) -> int:
        """It ended by itself: reap it, take it off the registry (its pid file too), and return its exit status.
        What it left running is not stopped here: the caller reports it or stops it."""
        code = self.proc.wait()
        forget(self.stop)
        self._off_the_registry()
        return code

    def _off_the_registry(self) -> None:
        if self in _children:
            _children.remove(self)
        if self.pidfile is not None:
            self.pidfile.unlink(missing_ok=True)


def start(argv: list[str], *, env: Mapping[str, str] | None = None, tag: str | None = None,
          cwd: str | os.PathLike | None = None, stdin: Any = subprocess.DEVNULL, stdout: Any = subprocess.DEVNULL,
          stderr: Any = subprocess.STDOUT, text: bool = False, die_with_parent: bool = False,
          grace: float = 10.0, stop_at_exit: bool = True, owner: Any = None, pidfile: str | None = None,
          pidfile_info: Mapping[str, Any] | None = None) -> Started:
    """Run ``argv`` as the leader of a new session and process group, with ``tag`` (a new one by default) in its
    environment (``env``, else this process's), and put it on the registry (:func:`children`) with its ``owner``.
    ``die_with_parent``: Linux stops it when this process dies, even by SIGKILL. ``stop_at_exit``:
    :func:`stop_at_exit` registers its stop (whoever manages it may register its own instead, to clean up more
    than the processes). ``pidfile``: a name prefix; the child's pid file (:func:`cleanup_stale`) is written
    with ``pidfile_info`` added."""
    tag = tag or new_tag()
    proc = subprocess.Popen(argv, env=with_tag(os.environ if env is None else env, tag), cwd=cwd, stdin=stdin,
                            stdout=stdout, stderr=stderr, text=text, start_new_session=True,
                            preexec_fn=_die_with_parent if die_with_parent and sys.platform == "linux" else None)
    started = Started(proc, tag, grace, owner)
    _children.append(started)
    if pidfile is not None:
        started.pidfile = _write_pidfile(started, pidfile, argv, pidfile_info or {})
    if stop_at_exit:
        globals()["stop_at_exit"](started.stop)
    return started


_children: list[Started] = []  # the registry: started here, not stopped yet


def children() -> list[Started]:
    """What :func:`start` ran in this process and nothing has stopped yet, oldest first."""
    return list(_children)


# -- pid files: a child whose parent died without stopping it ------------------------------------------
def runtime_dir() -> Path:
    """``$XDG_RUNTIME_DIR/multi-lora-course`` when that exists, else ``~/.cache/multi-lora-course/run``
    (``COURSE_RUN_DIR`` overrides both)."""
    override = os.environ.get("COURSE_RUN_DIR")
    if override:
        d = Path(override)
    elif os.environ.get("XDG_RUNTIME_DIR") and Path(os.environ["XDG_RUNTIME_DIR"]).is_dir():
        d = Path(os.environ["XDG_RUNTIME_DIR"]) / "multi-lora-course"
    else:
        d = Path.home() / ".cache" / "multi-lora-course" / "run"
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    return d


def _write_pidfile(started: Started, prefix: str, argv: list[str], info: Mapping[str, Any]) -> Path:
    path = runtime_dir() / f"{prefix}{started.pid}.json"
    path.write_text(json.dumps({
        **info, "pid": started.pid, "pgid": started.pgid, "tag": started.tag, "cmdline": cmdline(started.pid) or argv,
        "owner": os.getpid(), "owner_cmdline": cmdline(os.getpid()), "started": time.time()}))
    return path


def cleanup_stale(prefix: str) -> list[int]:
    """Stop the children whose pid files (named ``prefix<pid>.json``) were left by a process that is gone;
    returns their pids.

    A pid file names the child's pid, its process group, its tag, the exact
    command line and the process that started it. Only a pid whose command line
    is still exactly that one is stopped (a reused pid is left alone); when the
    pid is gone, the processes that still carry the child's tag are stopped.
    """
    stopped = []
    for f in sorted(runtime_dir().glob(prefix + "*.json")):
        try:
            info = json.loads(f.read_text())
            pid, owner = int(info["pid"]), int(info["owner"])
        except (OSError, ValueError, KeyError, TypeError):
            f.unlink(missing_ok=True)
            continue
        if owner != os.getpid() and alive(owner) and cmdline(owner) == info.get("owner_cmdline"):
            continue  # another running process's child: not ours to stop
        if owner == os.getpid() and any(c.pid == pid for c in _children):
            continue  # one of this process's own running children
        if alive(pid) and cmdline(pid) == info["cmdline"]:
            ended = stop(pid, pgid=info.get("pgid"), tag=info.get("tag"))
        else:
            ended = stop(tag=info["tag"]) if info.get("tag") else []
        if ended:
            stopped.append(pid)
        f.unlink(missing_ok=True)
    return stopped


# -- stopping at exit ----------------------------------------------------------------------------------
_at_exit: list = []            # the stops stop_all() calls, last registered first
_hooks_installed = False
_previous_handlers: dict[int, Any] = {}


def exit_stops() -> list[Callable[[], object]]:
    """The stops :func:`stop_all` will call (at exit, on SIGTERM), in the order it calls them."""
    return list(reversed(_at_exit))


def stop_at_exit(stop: Callable[[], object]) -> None:
    """Call ``stop()`` at this interpreter's exit and on SIGTERM (SIGINT outside a Jupyter kernel)."""
    _install_hooks()
    if stop not in _at_exit:
        _at_exit.append(stop)


def forget(stop: Callable[[], object]) -> None:
    """``stop`` has run: not needed at exit."""
    if stop in _at_exit:
        _at_exit.remove(stop)


def stop_all() -> None:
    for stop_ in reversed(list(_at_exit)):
        try:
            stop_()
        except Exception:  # noqa: BLE001 - best effort at exit: the next one must still stop
            pass
        forget(stop_)


def _in_jupyter_kernel() -> bool:
    if "IPython" not in sys.modules:
        return False
    try:
        from IPython import get_ipython

        return getattr(get_ipython(), "kernel", None) is not None
    except Exception:  # noqa: BLE001
        return False


def _on_signal(signum, frame):
    stop_all()
    prev = _previous_handlers.get(signum)
    if callable(prev):
        prev(signum, frame)
    elif prev == signal.SIG_DFL or prev is None:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def _install_hooks() -> None:
    """atexit, and SIGTERM (and SIGINT outside a Jupyter kernel) chained to the handlers there were before."""
    global _hooks_installed
    if _hooks_installed:
        return
    _hooks_installed = True
    atexit.register(stop_all)
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in [signal.SIGTERM] + ([] if _in_jupyter_kernel() else [signal.SIGINT]):
        try:
            prev = signal.getsignal(sig)
            if prev is signal.SIG_IGN:
                continue
            _previous_handlers[sig] = prev
            signal.signal(sig, _on_signal)
        except (ValueError, OSError):  # pragma: no cover
            pass


# -- the leftover check --------------------------------------------------------------------------------
def leftovers() -> list[psutil.Process]:
    """This user's running processes (zombies are not) that carry any course tag, wherever they are."""
    uid, never = os.getuid(), _never()
    found = []
    for p in psutil.process_iter(["uids"]):
        uids = p.info.get("uids")
        if p.pid in never or (uids is not None and uids.real != uid):
            continue
        try:
            tagged = bool(p.environ().get(TAG, "").split())
        except psutil.Error:
            continue
        if tagged and _running(p):
            found.append(p)
    return found


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m course_utils.processes")
    sub = ap.add_subparsers(dest="command", required=True)
    left = sub.add_parser("leftovers", help="list the course's processes still running (found by tag); exit 1 if any")
    left.add_argument("--stop", action="store_true", help="and stop them")
    left.add_argument("--what", default="the run", help="what ran before, for the message")
    args = ap.parse_args(argv)
    procs = leftovers()
    if not procs:
        return 0
    print(f"processes left after {args.what} (course-tagged: vLLM servers, Ray, the store):")
    for p in procs:
        print(f"  {p.pid} {' '.join(_cmdline_of(p))[:200]}")
    if args.stop:
        for p in procs:
            stop(p.pid)
    return 1


if __name__ == "__main__":
    sys.exit(main())
