"""course_utils.processes: a started program's processes are all found and stopped, reparented ones too.

And the session-wide leak check of tests/conftest.py: a run that leaves a
process behind fails, names it, and kills it. Every test only ever signals
processes it started.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from course_utils import processes

# A grandchild that ignores SIGTERM (as multiprocessing's resource tracker does) and outlives its parent.
STUBBORN = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"


def _orphan(env: dict, *, new_session: bool, grandchild_session: bool = False) -> tuple[int, int]:
    """Start a child (a group leader if ``new_session``) that starts a stubborn grandchild and exits.

    Returns (the child's pid, which is also its group, the grandchild's pid); the
    grandchild is reparented (to init or a subreaper) by then.
    """
    code = textwrap.dedent(f"""
        import subprocess, sys
        g = subprocess.Popen([sys.executable, "-c", {STUBBORN!r}], start_new_session={grandchild_session})
        print(g.pid, flush=True)
    """)
    child = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True,
                             start_new_session=new_session)
    grandchild = int(child.stdout.readline())
    child.wait(timeout=30)
    child.stdout.close()
    deadline = time.monotonic() + 10
    while psutil.Process(grandchild).ppid() == child.pid and time.monotonic() < deadline:
        time.sleep(0.05)
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


def test_reparented_grandchild_that_ignores_sigterm_is_killed(tag):
    env = processes.with_tag(dict(os.environ), tag)
    pgid, grandchild = _orphan(env, new_session=True)
    deadline = time.monotonic() + 5
    while not _signals_ignored(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
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
    deadline = time.monotonic() + 10
    while len(processes.find(p.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    found = {q.pid for q in processes.find(p.pid)}
    assert p.pid in found and len(found) == 2
    ended = processes.stop(p.pid, tag=tag, grace=5.0)
    assert {e.pid for e in ended} == found and not any(e.sigkill for e in ended)
    assert p.wait(timeout=5) == -signal.SIGTERM


def test_tags_chain_and_match_whole_words(tag):
    env = processes.with_tag({processes.TAG: "outer"}, tag)
    assert env[processes.TAG] == f"outer {tag}"
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env)
    try:
        deadline = time.monotonic() + 5
        while not processes.find(tag=tag) and time.monotonic() < deadline:
            time.sleep(0.05)
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
    code = textwrap.dedent("""
        import socket, time
        srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen()
        out = socket.create_connection(srv.getsockname())
        print(srv.getsockname()[1], flush=True)
        time.sleep(60)
    """)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
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
    code = "import time; time.sleep(60)"
    p = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 5
        while (processes.cmdline(p.pid) or [""])[-1] != code and time.monotonic() < deadline:
            time.sleep(0.05)  # the exec may not be done yet
        assert processes.alive(p.pid) and processes.cmdline(p.pid)[-1] == code
    finally:
        p.kill()
    deadline = time.monotonic() + 5
    while processes.alive(p.pid) and time.monotonic() < deadline:  # a zombie is not alive
        time.sleep(0.05)
    assert not processes.alive(p.pid)
    p.wait()
    assert processes.cmdline(p.pid) is None


# -- the session-wide leak check (tests/conftest.py) ------------------------------------------
LEAKY = textwrap.dedent("""
    import subprocess, sys

    def test_leaves_an_orphan():
        # as the stand-in server did: its child outlives it, reparented to init
        subprocess.run([sys.executable, "-c",
                        "import subprocess, sys; "
                        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])"], check=True)
""")


def test_a_session_that_leaves_a_process_fails_and_kills_it(tmp_path):
    (tmp_path / "conftest.py").symlink_to(Path(__file__).with_name("conftest.py"))
    (tmp_path / "test_leaky.py").write_text(LEAKY)
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode != 0, out.stdout
    assert "1 passed, 1 error" in out.stdout
    assert "time.sleep(600)" in out.stdout and "test_leaky.py::test_leaves_an_orphan" in out.stdout
    assert "now killed" in out.stdout
