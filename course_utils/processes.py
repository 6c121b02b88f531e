"""The processes a program started, found and stopped without missing one (psutil: Linux and macOS).

A process started by the course can leave helpers behind that are no longer its
descendants: when a vLLM server is killed during start, its engine process and
``multiprocessing.resource_tracker`` (which ignores SIGTERM) are reparented to
init. So a started program is found three ways at once:

- ``pid``: the process itself and its descendants;
- ``pgid``: the members of its process group (``start_new_session=True`` makes
  the program lead one);
- ``tag`` (or any ``env`` marker): this user's processes whose environment
  carries it. :func:`with_tag` puts ``COURSE_PROC_TAG=<uuid>`` in the child's
  environment at start; every process it starts inherits the marker, wherever
  it is reparented to.

:func:`find` lists them, :func:`stop` ends them (SIGTERM, a grace period, then
SIGKILL for whatever is left, until nothing is), :func:`sockets` lists their
sockets. This process and its ancestors are never included.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import NamedTuple

import psutil

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
    deadline = time.monotonic() + timeout
    left = [p for p in procs if _running(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in left if _running(p)]
    return left


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
