"""Shared pytest configuration of the tests in tests/ (the repository's conftest.py configures nbval)."""

from __future__ import annotations

import os
import time
import uuid

import pytest

from course_utils import processes

# =====================================================================================
# Leak check: no process started by the test session may outlive it.
#
# Every process the session starts inherits COURSE_TEST_SESSION (set here, before any
# test runs), wherever it is reparented to. At the end of the run, every process that
# carries this session's id or descends from pytest and still runs is listed (with
# the test that started it), killed, and the run fails.
# =====================================================================================
SESSION_ENV = "COURSE_TEST_SESSION"
SESSION_ID = uuid.uuid4().hex
# A pytest run inside a test adds its own id: the outer session still finds the inner one's processes.
os.environ[SESSION_ENV] = " ".join([*os.environ.get(SESSION_ENV, "").split(), SESSION_ID])


def _interpreter_helpers() -> set[int]:
    """multiprocessing's resource tracker and fork server of pytest itself: they end when pytest does."""
    import multiprocessing.forkserver as fs
    import multiprocessing.resource_tracker as rt

    pids = {getattr(rt._resource_tracker, "_pid", None), getattr(fs._forkserver, "_forkserver_pid", None)}
    return {p for p in pids if p}


def _describe(p) -> str:
    try:
        line = " ".join(p.cmdline())[:200]
        test = p.environ().get("PYTEST_CURRENT_TEST", "?")
    except Exception:  # it ended meanwhile
        line, test = "?", "?"
    return f"  pid {p.pid}: {line}\n      started during: {test}"


def leftover_report(settle: float = 3.0) -> str:
    """Stop what the session left running; '' when nothing, else which processes (and their tests)."""
    helpers = _interpreter_helpers()

    def left():
        return processes.find(os.getpid(), env={SESSION_ENV: SESSION_ID}, exclude=helpers)

    deadline = time.monotonic() + settle  # a process that is already on its way out is not a leak
    while (procs := left()) and time.monotonic() < deadline:
        time.sleep(0.1)
    if not procs:
        return ""
    lines = "\n".join(_describe(p) for p in procs)
    processes.stop(os.getpid(), env={SESSION_ENV: SESSION_ID}, exclude=helpers, grace=3.0)
    return f"{len(procs)} process(es) started by the tests were still running (now killed):\n{lines}"


@pytest.fixture(scope="session", autouse=True)
def _no_process_outlives_the_session():
    yield
    report = leftover_report()
    if report:
        pytest.fail(report, pytrace=False)


def pytest_sessionfinish(session, exitstatus):
    """A last sweep, for what session teardown itself started or a run cut short left."""
    report = leftover_report(settle=1.0)
    if report:
        tr = session.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None:
            tr.write_sep("=", "processes left behind", red=True)
            tr.write_line(report, red=True)
        else:
            print(report)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
# ===================================================================== end of leak check


# ---------------------------------------------------------------------------
# Shared fixtures: a scratch recordings folder, a child process running a real engine
# ---------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def no_cassette_left_open():
    """A read-mode HTTP cassette patches HTTP for the whole process: a test must not leave one open."""
    yield
    from course_utils.replay import session

    assert session.close_cassettes() == 0, "the test left an HTTP cassette open (call session.leave_cell())"


@pytest.fixture
def recordings(tmp_path, monkeypatch):
    """An empty recordings folder: sessions opened in the test read and write here, not in data/."""
    from course_utils.replay import session

    monkeypatch.setattr(session, "RECORDINGS", tmp_path)
    yield tmp_path
    session.set_current(None)


# vLLM's quiet, offline CPU settings for a child process that runs a real engine (the in-process one
# unless the test says otherwise).
LIVE_CHILD_ENV = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0", "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_LOGGING_LEVEL": "ERROR",
                  "TQDM_DISABLE": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                  "VLLM_NO_USAGE_STATS": "1", "VLLM_HOST_IP": "127.0.0.1"}


@pytest.fixture
def live_child():
    """``live_child(code, *args, **env) -> dict``: run ``code`` in a fresh Python (real vLLM engines stay out
    of the test process) and return what it printed as ``RESULT <json>``; fail with its output otherwise."""
    import json
    import subprocess
    import sys

    from course_utils.paths import REPO as repo

    def run(code: str, *args, timeout: int = 600, **env) -> dict:
        r = subprocess.run([sys.executable, "-c", code, *map(str, args)], cwd=repo, capture_output=True, text=True,
                           timeout=timeout, check=False,
                           env={**os.environ, **LIVE_CHILD_ENV, "PYTHONPATH": str(repo), **env})
        lines = [x for x in r.stdout.splitlines() if x.startswith("RESULT ")]
        if not lines:
            pytest.fail(f"child failed (exit {r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}")
        return json.loads(lines[-1][len("RESULT "):])

    return run
