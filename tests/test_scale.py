"""Lab 07's pieces with small or fake inputs: the stream, the hash, Ray's metrics text, the socket watch,
the S3 store on loopback, and the refusals. The whole cluster runs live in Lab 07 (make test-live)."""

import contextlib
import http.server
import json
import math
import socket
import subprocess
import sys
import threading
from collections import Counter

import pytest

from course_utils import child, lab, prometheus
from course_utils.paths import TINY
from course_utils.profiles import get_profile
from course_utils.scale import cluster, control, metrics, sockets, traffic
from course_utils.scale.store import S3Store


@contextlib.contextmanager
def loopback_page(handler):
    """A real HTTP server on 127.0.0.1 answering with ``handler`` (a BaseHTTPRequestHandler), in a thread: its port."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_zipf_stream_is_skewed_and_repeatable():
    names = [f"a{i}" for i in range(8)]
    s = traffic.zipf_stream(names, n=160, s=1.1, seed=7)
    assert s == traffic.zipf_stream(names, n=160, s=1.1, seed=7) and len(s) == 160
    counts = Counter(s).most_common()
    assert counts[0][1] >= 3 * counts[-1][1] and set(s) <= set(names)


def test_hash_policy_is_static_and_uses_every_replica():
    slots = {traffic.hash_slot(f"tiny:{n}", 2) for n in ["sql", "support", "medical", "json", "sql_2", "json_2"]}
    assert slots == {0, 1} and traffic.hash_slot("tiny:sql", 2) == traffic.hash_slot("tiny:sql", 2)


PROM = """# HELP ray_serve_multiplexed_models_load_counter_total loads
ray_serve_multiplexed_models_load_counter_total{application="scale",deployment="LLMServer:tiny",replica="LLMServer:tiny#abc"} 7.0
ray_serve_multiplexed_models_load_counter_total{application="scale",deployment="LLMServer:tiny",replica="LLMServer:tiny#xyz"} 3.0
ray_serve_multiplexed_models_unload_counter_total{application="scale",deployment="LLMServer:tiny",replica="LLMServer:tiny#abc"} 5.0
ray_serve_num_multiplexed_models{application="scale",deployment="LLMServer:tiny",replica="LLMServer:tiny#abc"} 2.0
ray_serve_deployment_request_counter_total{application="scale",deployment="LLMServer:tiny",replica="LLMServer:tiny#abc",route="/"} 10.0
ray_serve_deployment_request_counter_total{application="scale",deployment="OpenAiIngress",replica="OpenAiIngress#i"} 20.0
ray_serve_deployment_request_counter_total{application="other",deployment="LLMServer:x",replica="LLMServer:x#q"} 99.0
"""


def test_metrics_are_read_per_replica_of_the_app(monkeypatch):
    class Resp:
        def read(self):
            return PROM.encode()

    monkeypatch.setattr(metrics.urllib.request, "urlopen", lambda url, timeout: Resp())
    per = metrics.scrape(1234, "scale")
    assert per == {"abc": {"loads": 7, "unloads": 5, "held": 2, "requests": 10}, "xyz": {"loads": 3}}
    before = {"abc": {"loads": 4, "unloads": 5, "held": 1, "requests": 6}}
    assert metrics.difference(per, before)["abc"] == {"loads": 3, "unloads": 0, "held": 2, "requests": 4}


def test_metrics_pages_are_read_by_prometheus_clients_parser(monkeypatch):
    """NaN and +Inf values, escaped quotes and commas in labels, TYPE lines: the format's corners."""
    text = ('# TYPE ray_serve_num_multiplexed_models gauge\n'
            'ray_serve_num_multiplexed_models{application="scale",deployment="LLMServer:t",replica="a#r1"} NaN\n'
            'ray_serve_num_multiplexed_models{application="scale",deployment="LLMServer:t",replica="a#r2"} +Inf\n'
            'ray_serve_deployment_request_counter_total{application="scale",deployment="LLMServer:t",'
            'replica="a#r1",route="/a\\"b,c"} 2.0\n')

    class Resp:
        def read(self):
            return text.encode()

    monkeypatch.setattr(metrics.urllib.request, "urlopen", lambda url, timeout: Resp())
    per = metrics.scrape(1234, "scale")
    assert per["r1"]["requests"] == 2 and math.isnan(per["r1"]["held"]) and per["r2"] == {"held": math.inf}
    (sample,) = prometheus.samples(text, ["ray_serve_deployment_request_counter_total"])
    assert sample.labels["route"] == '/a"b,c' and sample.value == 2.0


def test_counters_that_stay_short_raise_instead_of_giving_partial_numbers():
    """Under load Ray's metrics have lagged past the wait (a CI run's hash pass): a real page on loopback whose
    counters stay at 10 of 12 answered requests is an error that says so, not a split missing two requests."""
    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(PROM.encode())

        def log_message(self, *args):
            pass

    with loopback_page(Page) as port:
        assert metrics.scrape_until(port, "scale", 10, timeout=1.0)["abc"]["requests"] == 10
        with pytest.raises(RuntimeError, match="10 / 12"):
            metrics.scrape_until(port, "scale", 12, timeout=1.0)


def test_the_socket_watch_sees_a_socket_off_loopback():
    import psutil

    watch = sockets.SocketWatch(tag="unused")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        watch.sample([psutil.Process()])
        assert watch.report()["off loopback"] == 0 and "127.0.0.1" in watch.report()["listening on"]
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        s.listen()
        watch.sample([psutil.Process()])
    assert watch.report()["off loopback"] == 1
    assert sockets.is_loopback("127.0.0.1") and sockets.is_loopback("::1") and not sockets.is_loopback("0.0.0.0")


def test_survivors_names_what_still_carries_the_tag():
    from course_utils import processes

    tag = processes.new_tag()
    env = processes.with_tag(__import__("os").environ, tag)
    done = subprocess.Popen([sys.executable, "-c", "pass"], env=env)
    done.wait()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], env=env)
    try:
        left = sockets.survivors(tag, timeout=0.5)
        assert len(left) == 1 and left[0].startswith(str(alive.pid))
    finally:
        alive.kill()
        alive.wait()
    assert sockets.survivors(tag, timeout=0.5) == []


@pytest.mark.slow
def test_s3_store_on_loopback_holds_adapters_and_stops():
    pytest.importorskip("moto")
    store = S3Store.start("adapters")
    try:
        assert store.env["AWS_ENDPOINT_URL_S3"].startswith("http://127.0.0.1:")
        store.upload("sql", TINY / "adapters" / "sql")
        store.upload("sql_2", TINY / "adapters" / "sql")
        assert store.adapters() == ["sql", "sql_2"]
    finally:
        store.stop()
    assert store.proc.poll() is not None and "AWS_ENDPOINT_URL_S3" not in __import__("os").environ


def test_the_shelf_names_each_adapter_and_its_copies():
    names = sorted(cluster.shelf(get_profile("tiny"), 2))
    assert names == ["json", "json_2", "medical", "medical_2", "sql", "sql_2", "support", "support_2"]


@pytest.mark.slow
def test_a_driver_that_dies_at_start_gives_a_clear_error_and_leaves_nothing(monkeypatch):
    real_popen = subprocess.Popen

    def dying_driver(cmd, **kw):
        return real_popen([sys.executable, "-c", "import sys; sys.exit(3)"], **kw)

    monkeypatch.setattr(subprocess, "Popen", dying_driver)
    with pytest.raises(RuntimeError, match="Ray 驱动进程在 'up' 途中退出了（退出码 3）.*driver.log"):
        cluster.up.__wrapped__(get_profile("tiny"))
    assert not control._live


def test_the_driver_answers_an_error_and_stops_when_its_input_ends():
    cmd = {"op": "run", "stream": ["sql"], "policy": "aware", "concurrency": 1}   # before "up": nothing to run on
    r = subprocess.run([sys.executable, "-m", "course_utils.scale.driver"], input=json.dumps(cmd) + "\n",
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0
    [reply] = [said for line in r.stdout.splitlines() if (said := child.heard(line)) is not None]
    assert reply["kind"] == "reply" and reply["ok"] is False and reply["error"].startswith("KeyError")


def test_run_before_up_says_what_to_do():
    with pytest.raises(RuntimeError, match="集群还没有起来：先运行调用 up"):
        cluster.run.__wrapped__(["sql"], "aware")


def test_on_a_gpu_profile_lab07_says_why_and_opens_the_cpu_recording(monkeypatch, capsys):
    monkeypatch.setenv("COURSE_PROFILE", "qwen7b")
    monkeypatch.setenv("COURSE_MODE", "live")
    monkeypatch.delenv("COURSE_RECORD", raising=False)
    monkeypatch.setattr(lab, "use_replay_vllm", lambda: None)
    from course_utils.replay import session

    try:
        prof = lab.start("07_scale_out", cpu_only="a 4090 holds one 7B replica.")
        assert prof.name == "tiny" and session.current().mode == "replay"
    finally:
        session.set_current(None)
    out = capsys.readouterr().out
    assert "配置 'qwen7b'" in out and "a 4090 holds one 7B replica." in out
    assert "这里现场运行的：07_scale_out 里什么都不跑" in out and "make setup" in out


def test_the_sweep_verdict_is_said_from_the_numbers():
    from course_utils.scale import bench

    rows = [{"k": k, "pass": p, "policy": pol, "loads": n}
            for k, passes in {1: (90, 100, 95, 80), 4: (9, 40, 12, 4)}.items()
            for p, (pol, n) in enumerate(zip(("aware", "blind", "hash", "aware"), passes), start=1)]
    rec = {"rows": rows, "replicas": 2, "adapters": 8, "requests": 160}
    assert bench.warm_loads(rec) == {1: {"blind": 100, "hash": 95, "aware": 80}, 4: {"blind": 40, "hash": 12, "aware": 4}}
    lines = bench.verdict(rec)
    assert lines[0] == "k=1：轮询加载 100 次，按 adapter 路由 80 次，静态哈希 95 次（轮询 / 按 adapter 路由 = 1.2 倍；命中率高出 0.12）"
    assert lines[2] == "按比值看，k=4 时差得最多；按命中率之差看，也是 k=4"
    assert lines[3].startswith("k=4 时按 adapter 路由只装载了 4 次，少于从空缓存开始至少要装的 8 次")
    assert len(lines) == 4                       # k=1's 80 loads are not below the 8 a cold pass needs
    rec["rows"][-1]["loads"] = 30                # aware at k=4: the gap now widest at k=1, the ratio still at k=4
    assert bench.verdict(rec)[2] == ("按比值看，k=4 时差得最多；按命中率之差看，是 k=1（0.12，k=4 是 0.06）：两种量法给的答案不同")


def test_the_client_retries_a_5xx_after_a_wait_and_keeps_what_a_failed_request_was_told(monkeypatch):
    """Ray answers the second of two racing loads of one adapter 500 ("already been loaded"); on a busy machine
    an immediate retry met the same race. A real page on loopback answers adapter ``a`` 500 twice and then 200,
    and adapter ``b`` 500 every time: ``a`` counts as answered and retried, ``b`` as failed, with the body."""
    from course_utils.scale import client

    monkeypatch.setattr(client, "RETRY_WAITS", (0.01, 0.01, 0.01, 0.01))
    tries: dict = {}

    class Page(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            model = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["model"]
            tries[model] = tries.get(model, 0) + 1
            ok = model.endswith(":a") and tries[model] > 2
            body = b'{"choices": []}' if ok else b'{"message": "LoRA adapter b has already been loaded"}'
            self.send_response(200 if ok else 500)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    with loopback_page(Page) as port:
        out = client.send(port, "m", ["a", "b"], "blind", concurrency=1)
    assert tries == {"m:a": 3, "m:b": 5}
    assert (out["ok"], out["failed"], out["retried"], out["status"]) == (1, 1, 2, {"200": 1, "500": 1})
    assert "already been loaded" in out["errors"]["500"]
