"""course_utils.processes: a started program's processes are all found and stopped, reparented ones too.

And the session-wide leak check of tests/conftest.py: a run that leaves a
process behind fails, names it, and kills it. Every test only ever signals
processes it started.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from course_utils import processes

PROGRAMS = Path(__file__).with_name("programs")
SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


def _orphan(env: dict, *, new_session: bool, grandchild_session: bool = False) -> tuple[int, int]:
    """Start a child (a group leader if ``new_session``) that starts a stubborn grandchild and exits.

    Returns (the child's pid, which is also its group, the grandchild's pid); the
    grandchild is reparented (to init or a subreaper) by then.
    """
    argv = [sys.executable, str(PROGRAMS / "orphan.py"), *(["--own-session"] if grandchild_session else [])]
    child = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True, start_new_session=new_session)
    grandchild = int(child.stdout.readline())
    child.wait(timeout=30)
    child.stdout.close()
    processes.wait_until(lambda: psutil.Process(grandchild).ppid() != child.pid, 10, interval=0.05)
    assert psutil.Process(grandchild).ppid() != os.getpid()
    assert grandchild not in {p.pid for p in psutil.Process().children(recursive=True)}, "reparented"
    return child.pid, grandchild


def _signals_ignored(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    if not status.is_file():  # macOS: nothing to read, trust the code
        return True
    line = next(ln for ln in status.read_text().splitlines() if ln.startswith("SigIgn:"))
    return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))


@pytest.fixture
def tag():
    t = processes.new_tag()
    yield t
    for p in processes.find(tag=t):  # a failing test still leaves nothing behind
        p.kill()


@pytest.mark.slow
def test_reparented_grandchild_that_ignores_sigterm_is_killed(tag):
    env = processes.with_tag(dict(os.environ), tag)
    pgid, grandchild = _orphan(env, new_session=True)
    processes.wait_until(lambda: _signals_ignored(grandchild), 5, interval=0.05)
    assert processes.alive(grandchild) and not processes.alive(pgid)
    # found by its group and by its tag, though it descends from nobody we know
    assert [p.pid for p in processes.find(pgid=pgid)] == [grandchild]
    assert [p.pid for p in processes.find(tag=tag)] == [grandchild]
    t0 = time.monotonic()
    ended = processes.stop(pgid=pgid, tag=tag, grace=1.0)
    assert time.monotonic() - t0 < 8
    assert [(e.pid, e.sigkill) for e in ended] == [(grandchild, True)], "SIGTERM is ignored: it needs SIGKILL"
    assert "SIG_IGN" in " ".join(ended[0].cmdline)
    assert not processes.alive(grandchild)
    assert processes.find(tag=tag) == [] and processes.stop(tag=tag) == []


def test_tag_finds_a_process_that_left_the_group(tag):
    env = processes.with_tag(dict(os.environ), tag)
    pgid, grandchild = _orphan(env, new_session=True, grandchild_session=True)
    assert processes.find(pgid=pgid) == [], "the grandchild leads a group of its own"
    assert [e.pid for e in processes.stop(pgid=pgid, tag=tag, grace=0.5)] == [grandchild]
    assert not processes.alive(grandchild)


def test_group_finds_a_process_without_the_tag(tag):
    env = {k: v for k, v in os.environ.items() if k != processes.TAG}
    pgid, grandchild = _orphan(env, new_session=True)
    assert processes.find(tag=tag) == []
    assert [e.pid for e in processes.stop(pgid=pgid, tag=tag, grace=0.5)] == [grandchild]
    assert not processes.alive(grandchild)


def test_a_polite_tree_ends_on_sigterm(tag):
    code = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); " \
           "time.sleep(60)"
    p = subprocess.Popen([sys.executable, "-c", code], env=processes.with_tag(dict(os.environ), tag))
    processes.wait_until(lambda: len(processes.find(p.pid)) >= 2, 10, interval=0.05)
    found = {q.pid for q in processes.find(p.pid)}
    assert p.pid in found and len(found) == 2
    ended = processes.stop(p.pid, tag=tag, grace=5.0)
    assert {e.pid for e in ended} == found and not any(e.sigkill for e in ended)
    assert p.wait(timeout=5) == -signal.SIGTERM


def test_tags_chain_and_match_whole_words(tag):
    env = processes.with_tag({processes.TAG: "outer"}, tag)
    assert env[processes.TAG] == f"outer {tag}"
    p = subprocess.Popen(SLEEPER, env=env)
    try:
        processes.wait_until(lambda: processes.find(tag=tag), 5, interval=0.05)
        assert [q.pid for q in processes.find(tag=tag)] == [p.pid]
        assert [q.pid for q in processes.find(env={processes.TAG: "outer"})] == [p.pid]
        assert processes.find(tag=tag[:8]) == [], "a part of a tag is not the tag"
    finally:
        p.kill()
        p.wait()


def test_never_this_process_or_its_ancestors():
    me = psutil.Process()
    mine = {me.pid, *(a.pid for a in me.parents())}
    assert not mine & {p.pid for p in processes.find(os.getpid(), pgid=os.getpgid(0))}


def test_sockets_of_a_tree(tag):
    p = subprocess.Popen([sys.executable, str(PROGRAMS / "socket_pair.py")], stdout=subprocess.PIPE, text=True,
                         env=processes.with_tag(dict(os.environ), tag))
    try:
        port = int(p.stdout.readline())
        socks = processes.sockets(processes.find(p.pid))
        assert [s.laddr for s in socks if s.listening] == [("127.0.0.1", port)]
        assert ("127.0.0.1", port) in [s.raddr for s in socks if not s.listening]
        assert all(s.laddr[0] == "127.0.0.1" for s in socks)
    finally:
        p.kill()
        p.wait()
        p.stdout.close()


def test_alive_and_cmdline():
    code = SLEEPER[-1]
    p = subprocess.Popen(SLEEPER)
    try:
        # the exec may not be done yet
        processes.wait_until(lambda: (processes.cmdline(p.pid) or [""])[-1] == code, 5, interval=0.05)
        assert processes.alive(p.pid) and processes.cmdline(p.pid)[-1] == code
    finally:
        p.kill()
    processes.wait_until(lambda: not processes.alive(p.pid), 5, interval=0.05)  # a zombie is not alive
    assert not processes.alive(p.pid)
    p.wait()
    assert processes.cmdline(p.pid) is None


# -- the session-wide leak check (tests/conftest.py) ------------------------------------------
@pytest.mark.slow
def test_a_session_that_leaves_a_process_fails_and_kills_it(tmp_path):
    (tmp_path / "conftest.py").symlink_to(Path(__file__).with_name("conftest.py"))
    (tmp_path / "test_leaky.py").symlink_to(PROGRAMS / "leaky.py")
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode != 0, out.stdout
    assert "1 passed, 1 error" in out.stdout
    assert "time.sleep(600)" in out.stdout and "test_leaky.py::test_leaves_an_orphan" in out.stdout
    assert "now killed" in out.stdout


# -- start, wait_until, stop at exit, the leftover check -------------------------------------
def test_start_leads_a_group_carries_a_tag_and_stops_everything():
    started = processes.start(SLEEPER)
    try:
        assert os.getpgid(started.pid) == started.pgid == started.pid != os.getpgid(0)
        assert processes.wait_until(lambda: processes.find(tag=started.tag), 5, interval=0.05)
        assert started.stop in processes.exit_stops(), "stopped at exit unless told otherwise"
        assert [p.pid for p in started.processes()] == [started.pid]
    finally:
        ended = started.stop(grace=5.0)
    assert [e.pid for e in ended] == [started.pid] and not started.running
    assert started.stop not in processes.exit_stops() and processes.find(tag=started.tag) == []


def test_the_registry_holds_each_started_child_with_its_owner_and_pid_file_until_stopped(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_RUN_DIR", str(tmp_path / "run"))
    owner = object()
    started = processes.start(SLEEPER, owner=owner, pidfile="test-child-", pidfile_info={"port": 1})
    try:
        assert started in processes.children() and started.owner is owner
        assert started.pidfile == processes.runtime_dir() / f"test-child-{started.pid}.json"
        info = json.loads(started.pidfile.read_text())
        assert (info["pid"], info["tag"], info["owner"], info["port"]) == (started.pid, started.tag, os.getpid(), 1)
        assert processes.cleanup_stale("test-child-") == [], "a running child of this process is left alone"
    finally:
        started.stop(grace=5.0)
    assert started not in processes.children() and not started.pidfile.exists()


def test_stop_all_runs_the_registered_stops_last_first():
    calls = []
    first, second = (lambda: calls.append("first")), (lambda: calls.append("second"))
    processes.stop_at_exit(first)
    processes.stop_at_exit(second)
    processes.stop_at_exit(first)            # once only
    processes.stop_all()
    assert calls == ["second", "first"] and first not in processes.exit_stops()


def test_wait_until_returns_the_value_or_says_what_it_waited_for():
    values = iter([0, None, [], 7])
    assert processes.wait_until(lambda: next(values), 5, interval=0.01) == 7
    t0 = time.monotonic()
    assert processes.wait_until(lambda: [], 0.2, interval=0.05) == []
    assert 0.2 <= time.monotonic() - t0 < 2
    with pytest.raises(TimeoutError, match="the flag: not after 0 s"):
        processes.wait_until(lambda: False, 0.1, interval=0.05, what="the flag")
    p = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    with pytest.raises(processes.ProcessExited, match="code 3") as e:
        processes.wait_until(lambda: False, 30, proc=p, what="the port")
    assert e.value.returncode == 3


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("die_with_parent", [True, False])
def test_die_with_parent_ends_the_child_when_its_parent_is_killed(die_with_parent):
    parent = subprocess.Popen([sys.executable, str(PROGRAMS / "parent_of_a_child.py"),
                               *(["--die-with-parent"] if die_with_parent else [])], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    parent.stdout.close()
    try:
        parent.kill()                          # SIGKILL: no exit handler of the parent runs
        parent.wait()
        gone = processes.wait_until(lambda: not processes.alive(child), 5, interval=0.05)
        assert gone == die_with_parent
    finally:
        processes.stop(child, grace=1.0)


def test_leftovers_finds_tagged_processes_but_not_zombies(tag, capsys, monkeypatch):
    p = subprocess.Popen(SLEEPER, env=processes.with_tag(dict(os.environ), tag))
    zombie = subprocess.Popen([sys.executable, "-c", "pass"], env=processes.with_tag(dict(os.environ), tag))
    try:
        processes.wait_until(lambda: processes.cmdline(p.pid) == SLEEPER
                             and psutil.Process(zombie.pid).status() == psutil.STATUS_ZOMBIE, 10, interval=0.05)
        found = {q.pid for q in processes.leftovers()}
        assert p.pid in found and zombie.pid not in found, "a zombie has ended: not a leftover"
        # other course processes of this user may run meanwhile (another checkout's tests): only ours here
        monkeypatch.setattr(processes, "leftovers", lambda: [q for q in processes.find(tag=tag)])
        assert processes.main(["leftovers", "--stop", "--what", "this test"]) == 1
        assert f"  {p.pid} {' '.join(SLEEPER)}" in capsys.readouterr().out
        assert p.wait(timeout=10) == -signal.SIGTERM
        assert processes.main(["leftovers", "--what", "this test"]) == 0
    finally:
        p.kill()
        p.wait()
        zombie.wait()
