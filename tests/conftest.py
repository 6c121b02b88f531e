"""Shared pytest configuration of the tests in tests/ (the repository's conftest.py configures nbval)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

import psutil
import pytest

from course_utils import processes
from course_utils.paths import REPO

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
    except psutil.Error:  # it ended meanwhile
        line, test = "?", "?"
    return f"  pid {p.pid}: {line}\n      started during: {test}"


def leftover_report(settle: float = 3.0) -> str:
    """Stop what the session left running; '' when nothing, else which processes (and their tests)."""
    helpers = _interpreter_helpers()

    def left():
        return processes.find(os.getpid(), env={SESSION_ENV: SESSION_ID}, exclude=helpers)

    processes.wait_until(lambda: not left(), settle)  # a process already on its way out is not a leak
    procs = left()
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
# Shared fixtures: a scratch recordings folder
# ---------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def no_cassette_left_open():
    """A read-mode HTTP cassette patches HTTP for the whole process: a test must not leave one open."""
    yield
    from course_utils.replay import session

    assert session.close_cassettes() == 0, "the test left an HTTP cassette open (call session.leave_cell())"


@pytest.fixture
def tiny_llm():
    """Build a LoRA engine the way the labs do: ``tiny_llm(max_loras=2)`` is ``LLM(model=<base>, enable_lora=True,
    max_lora_rank=<profile's>, max_loras=<profile's>, **<profile's engine settings>)`` with the overrides, on the
    tiny profile unless ``prof=`` names another. vLLM is imported at the call (after any instrumentation the test
    put in place); the test owns the engine (``del`` it to free it before the next)."""
    def make(prof=None, **overrides):
        from vllm import LLM

        from course_utils.profiles import get_profile

        prof = prof or get_profile("tiny")
        knobs = {"max_lora_rank": prof.max_lora_rank, "max_loras": prof.max_loras, **overrides}
        return LLM(model=prof.base_model, enable_lora=True, **prof.engine_kwargs(**knobs))

    return make


def _server_leftovers(srv, children_before: set[int]) -> list[str]:
    """What of a stopped server still runs: a new child of this process, a member of its group, a process with its
    tag (reparented ones included); [] when nothing."""
    def left():
        kids = [p for p in psutil.Process().children(recursive=True)
                if p.pid not in children_before and p.status() != psutil.STATUS_ZOMBIE]
        return [f"pid {p.pid}: {' '.join(processes.cmdline(p.pid) or [])[:120]}"
                for p in {p.pid: p for p in [*kids, *processes.find(pgid=srv.pgid, tag=srv.tag)]}.values()]

    processes.wait_until(lambda: not left(), 5, interval=0.2)
    return left()


@pytest.fixture(scope="module")
def tiny_server(tmp_path_factory):
    """One running server of the tiny profile with the shelf adapters, for the tests of one module.

    As vLLM's ``tests/entrypoints/openai`` do with their module-scoped ``server`` fixture (``RemoteOpenAIServer``):
    the course's ``course_utils.server.serve(tiny, ["sql=<path>", "support=...", "json=...", "medical=..."])``
    (the profile's own ``--max-lora-rank``/``--max-loras``, label ``tiny-server``) starts once per module that
    uses it and is stopped after that module's last test; the next module gets a fresh process. For tests that
    only need a running server and change nothing in it that another test would see (no adapter loaded or
    unloaded, no other flag): a test of starting, stopping or failing, or one that changes the server, starts its
    own. Its pid file and log go to a folder of its own (not the user's runtime folder, not a test's). At the
    end it must still run (no test stopped it), and once stopped nothing of it may be left: no new child of this
    process, no member of its process group, no process with its tag. Mark the tests ``live`` and ``slow``."""
    from course_utils.profiles import get_profile
    from course_utils.replay import session
    from course_utils.server import serve

    prof = get_profile("tiny")
    if not (Path(prof.base_model) / "config.json").is_file():
        pytest.skip("no tiny base model (make tiny-world)")
    assert session.active() is None, "a lab session is open: its start would be recorded or replayed, not run"
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COURSE_RUN_DIR", str(tmp_path_factory.mktemp("tiny-server-run")))
        srv = serve(prof, [f"{name}={path}" for name, path in prof.adapters.items()], label="tiny-server")
    try:
        yield srv
        assert srv.running, "a test stopped the module's shared tiny_server (start a server of its own instead)"
    finally:
        srv.stop()
    left = _server_leftovers(srv, before)
    assert not left, f"the stopped tiny_server left processes behind: {left}"


@pytest.fixture
def recordings(tmp_path, monkeypatch):
    """An empty recordings folder: sessions opened in the test read and write here, not in data/."""
    from course_utils.replay import session

    monkeypatch.setattr(session, "RECORDINGS", tmp_path)
    yield tmp_path
    session.set_current(None)


# ---------------------------------------------------------------------------
# @pytest.mark.fresh_process(**env): the test runs in a pytest process of its own
#
# For tests that start real vLLM engines or patch vLLM: nothing they load stays in this
# process. Here the test is replaced by a stand-in that runs ``pytest <its node id>`` in a
# new interpreter (COURSE_FRESH_PROCESS set there, so the test body runs as usual) and
# passes, skips or fails as the test did there, with the child's output. The child's
# environment gets vLLM's quiet, offline CPU settings, then the marker's keywords.
# ---------------------------------------------------------------------------
FRESH_PROCESS = "COURSE_FRESH_PROCESS"
FRESH_PROCESS_ENV = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0", "VLLM_CPU_KVCACHE_SPACE": "1",
                     "VLLM_LOGGING_LEVEL": "ERROR", "TQDM_DISABLE": "1", "HF_HUB_OFFLINE": "1",
                     "TOKENIZERS_PARALLELISM": "false", "VLLM_NO_USAGE_STATS": "1", "VLLM_HOST_IP": "127.0.0.1"}
FRESH_PROCESS_TIMEOUT = 600


class FreshProcess(pytest.Item):
    """Stands in for a ``fresh_process`` test: same node id, markers and location, no fixtures here."""

    @classmethod
    def stand_in_for(cls, test: pytest.Item) -> FreshProcess:
        item = cls.from_parent(test.parent, name=test.name)
        item.own_markers, item.test = list(test.own_markers), test
        item.keywords.update(test.keywords)
        return item

    def reportinfo(self):
        return self.test.reportinfo()

    def runtest(self):
        env = {**os.environ, **FRESH_PROCESS_ENV, "PYTHONPATH": str(REPO), FRESH_PROCESS: "1",
               **self.get_closest_marker("fresh_process").kwargs}
        with tempfile.TemporaryDirectory() as tmp:
            junit = Path(tmp) / "junit.xml"
            # no nbval in the child: it only runs this test, and importing nbformat alone takes seconds
            argv = [sys.executable, "-m", "pytest", self.nodeid, "-q", "-p", "no:cacheprovider", "-p", "no:nbval",
                    f"--junitxml={junit}"]
            r = subprocess.run(argv, cwd=self.config.rootpath, env=env, capture_output=True, text=True,
                               timeout=FRESH_PROCESS_TIMEOUT, check=False)
            cases = list(ET.parse(junit).getroot().iter("testcase")) if junit.is_file() else []
        output = f"fresh process (exit {r.returncode}):\n{r.stdout[-20000:]}\n{r.stderr[-4000:]}"
        if len(cases) != 1 or cases[0].find("failure") is not None or cases[0].find("error") is not None:
            pytest.fail(output, pytrace=False)
        skipped = cases[0].find("skipped")
        if skipped is not None:
            pytest.skip(skipped.get("message", ""))
        if r.returncode != 0:  # e.g. the child's leak check, after its last test
            pytest.fail(output, pytrace=False)


def pytest_configure(config):
    config.addinivalue_line("markers", "fresh_process(**env): runs in a pytest process of its own, with these "
                                       "environment variables besides vLLM's quiet CPU settings (tests/conftest.py)")


def pytest_collection_modifyitems(config, items):
    """A ``fresh_process`` test runs through its stand-in. ``@pytest.mark.live`` is the one way to say "needs vLLM":
    where vLLM is not installed (the read-mode venv), those tests are skipped, saying so."""
    import importlib.util

    if not os.environ.get(FRESH_PROCESS):
        items[:] = [FreshProcess.stand_in_for(t) if t.get_closest_marker("fresh_process") else t for t in items]
    if importlib.util.find_spec("vllm") is None:
        skip = pytest.mark.skip(reason="needs vLLM: run it in the live environment (.venv, make test-unit)")
        for item in items:
            if "live" in item.keywords:
                item.add_marker(skip)
