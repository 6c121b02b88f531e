"""The record/replay layer: keys, counting per cell, errors, portable paths, formats."""

import json

import pytest

from course_utils.paths import REPO
from course_utils.replay import keys
from course_utils.replay import session
from course_utils.replay.keys import Key
from course_utils.replay.session import RecordingError, ReplayMiss, Session


def add(a, b):
    return Key("add", {"a": a, "b": b})


def test_record_then_replay(recordings):
    live = Session("lab", "tiny", "live", recording=True)
    assert live.run(add(1, 2), lambda: 3) == 3
    assert live.run(add(1, 2), lambda: 4) == 4  # the same call a second time: its own entry
    with pytest.raises(KeyError):
        live.run(Key("boom", {}), lambda: {}["x"])
    replay = Session("lab", "tiny", "replay")
    assert replay.provenance["profile"] == "tiny" and replay.provenance["lab"] == "lab"
    assert replay.run(add(1, 2), None) == 3
    assert replay.run(add(1, 2), None) == 4
    with pytest.raises(ReplayMiss, match="录了 2 次，这是第 3 次"):
        replay.run(add(1, 2), None)  # never "the last answer again"
    with pytest.raises(Exception) as e:
        replay.run(Key("boom", {}), None)
    assert type(e.value).__name__ == "KeyError" and isinstance(e.value, session.ReplayedError)


def test_rerunning_a_cell_starts_its_count_again(recordings):
    live = Session("lab", "tiny", "live", recording=True)
    live.enter_cell("x = llm.generate(...)")
    live.run(add(1, 2), lambda: "first cell")
    live.enter_cell("y = llm.generate(...)  # another cell, same call")
    live.run(add(1, 2), lambda: "second cell")
    replay = Session("lab", "tiny", "replay")
    for _ in range(2):  # run the second cell twice, then the first
        replay.enter_cell("y = llm.generate(...)  # another cell, same call")
        assert replay.run(add(1, 2), None) == "second cell"
    replay.enter_cell("x = llm.generate(...)")
    assert replay.run(add(1, 2), None) == "first cell"
    with pytest.raises(ReplayMiss, match="录了 1 次"):
        replay.run(add(1, 2), None)


def test_an_edited_cell_gets_an_answer_only_if_it_is_unambiguous(recordings):
    live = Session("lab", "tiny", "live", recording=True)
    live.enter_cell("a")
    live.run(add(1, 2), lambda: 3)
    live.run(add(5, 5), lambda: "ten, first")
    live.enter_cell("b")
    live.run(add(1, 2), lambda: 3)
    live.run(add(5, 5), lambda: "ten, second")
    replay = Session("lab", "tiny", "replay")
    replay.enter_cell("a, edited by the reader")
    assert replay.run(add(1, 2), None) == 3  # every recording of it gave 3: a fact
    with pytest.raises(ReplayMiss, match="有 2 种不同的回答"):
        replay.run(add(5, 5), None)


def test_unrecorded_input_says_how_to_run_live(recordings):
    Session("lab", "tiny", "live", recording=True).run(Key("generate", ["hello"], "first prompt 'hello'"),
                                                       lambda: "hi")
    replay = Session("lab", "tiny", "replay")
    with pytest.raises(ReplayMiss, match="first prompt 'hello, edited'.*没有录制.*COURSE_MODE=live"):
        replay.run(Key("generate", ["hello, edited"], "first prompt 'hello, edited'"), None)


def test_missing_recording_names_the_command(recordings):
    with pytest.raises(RecordingError, match="没有配置 'qwen7b' 的录制.*make record PROFILE=qwen7b"):
        Session("lab", "qwen7b", "replay")
    Session("other", "tiny", "live", recording=True)
    with pytest.raises(RecordingError, match="有这些录制：other"):
        Session("lab", "tiny", "replay")


def test_corrupt_or_foreign_recording(recordings):
    (recordings / "tiny").mkdir()
    path = recordings / "tiny" / "lab.json"
    path.write_text("{not json")
    with pytest.raises(RecordingError, match="损坏了.*git checkout"):
        Session("lab", "tiny", "replay")
    path.write_text(json.dumps({"format": 1, "calls": []}))
    with pytest.raises(RecordingError, match="是另一种格式（1；这份代码读的是 format 2）"):
        Session("lab", "tiny", "replay")
    path.write_text(json.dumps({"format": session.FORMAT, "calls": []}))
    with pytest.raises(RecordingError, match="缺少 'provenance'"):
        Session("lab", "tiny", "replay")


def test_paths_are_portable(recordings):
    s = Session("lab", "tiny", "live", recording=True)
    s.run(Key("load", {"path": str(REPO / "data" / "x")}), lambda: str(REPO / "y"))
    data = json.loads((recordings / "tiny" / "lab.json").read_text())
    assert data["calls"][0]["args"] == {"path": "$REPO/data/x"} and data["calls"][0]["result"] == "$REPO/y"
    replay = Session("lab", "tiny", "replay")
    assert replay.run(Key("load", {"path": str(REPO / "data" / "x")}), None) == str(REPO / "y")


def test_live_without_recording_writes_nothing(recordings):
    Session("lab", "tiny", "live").run(Key("x", {}), lambda: 1)
    assert not (recordings / "tiny" / "lab.json").exists()


def test_keys_leave_out_cosmetic_settings_and_labels():
    assert keys.engine({"model": "/m", "use_tqdm_on_load": False}) == {"model": "/m"}
    a = keys.schedtrace({"model": "/m"}, ["p"], None, [None], label="warm-up")
    b = keys.schedtrace({"model": "/m"}, ["p"], None, [None], label="shown")
    assert a.digest == b.digest and a.describe != b.describe
    assert keys.generate({"model": "/m"}, ["p"], None, None).digest != keys.generate({"model": "/n"}, ["p"], None,
                                                                                     None).digest


def test_replayable_records_plain_calls_only(recordings):
    from course_utils.replay.record import replayable

    session.set_current(Session("lab", "tiny", "live", recording=True))
    calls = []

    @replayable
    def check(seed=0):
        calls.append(seed)
        return {"seed": seed}

    assert check(3) == {"seed": 3} and calls == [3]
    with pytest.raises(TypeError, match="plain arguments"):
        check(object())
    session.set_current(Session("lab", "tiny", "replay"))
    assert check(3) == {"seed": 3} and calls == [3]  # replayed, not run
    session.set_current(None)


def test_an_install_away_from_the_checkout_says_how_to_point_to_it(tmp_path):
    """A plain `pip install .` puts the package in site-packages; run elsewhere, it cannot see data/."""
    import os
    import shutil
    import subprocess
    import sys

    from course_utils.paths import PACKAGE

    site = tmp_path / "site"
    site.mkdir()
    shutil.copytree(PACKAGE, site / "course_utils", ignore=shutil.ignore_patterns("__pycache__"))  # no data/ beside it
    code = ("from course_utils.replay.session import Session\n"
            "try:\n    Session('01_offline_multi_lora', 'tiny', 'replay')\n"
            "except Exception as e:\n    print(type(e).__name__, e)\n")
    env = {k: v for k, v in os.environ.items() if k != "COURSE_REPO"} | {"PYTHONPATH": str(site)}
    out = subprocess.run([sys.executable, "-c", code], check=False, cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=60).stdout
    assert out.startswith("CheckoutError") and "COURSE_REPO=<path of the checkout>" in out
    env["COURSE_REPO"] = str(PACKAGE.parent)
    out = subprocess.run([sys.executable, "-c", code], check=False, cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=60).stdout
    assert out == ""  # found the checkout's recordings


@pytest.fixture
def http_server():
    """A loopback HTTP server whose answer to GET /state is a counter (so repeated requests differ)."""
    import http.server
    import threading

    hits = {"n": 0}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            hits["n"] += 1
            body = json.dumps({"path": self.path, "n": hits["n"]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}", hits
    srv.shutdown()
    srv.server_close()


def test_each_cells_http_is_recorded_and_replayed_in_order(recordings, http_server):
    import requests

    url, hits = http_server
    live = Session("lab", "tiny", "live", recording=True)
    live.enter_cell("cell with http")
    live.record_http()
    first = requests.get(url + "/state", timeout=5).json()
    second = requests.get(url + "/state", timeout=5).json()          # the same request, another answer
    live.run(Key("load-test", {}), lambda: requests.get(url + "/load", timeout=5).json())   # part of a result
    live.enter_cell("another cell")
    other = requests.get(url + "/state", timeout=5).json()
    live.leave_cell()
    assert [p.name for p in live.cassettes()] == sorted(
        f"lab.http-{session.cell_id(c)}.yaml" for c in ("cell with http", "another cell"))
    assert "/load" not in "".join(p.read_text() for p in live.cassettes())   # a recorded call's HTTP stays out

    n = hits["n"]
    replay = Session("lab", "tiny", "replay")
    replay.record_http()
    for _ in range(2):                                                # re-running the cell starts again
        replay.enter_cell("cell with http")
        assert requests.get(url + "/state", timeout=5).json() == first
        assert requests.get(url + "/state", timeout=5).json() == second
        with pytest.raises(Exception, match="(?i)cassette"):          # a third time was never recorded
            requests.get(url + "/state", timeout=5)
    replay.enter_cell("another cell")
    assert requests.get(url + "/state", timeout=5).json() == other
    replay.leave_cell()
    assert hits["n"] == n                                             # read mode opened no connection


def test_live_without_recording_leaves_http_alone(recordings, http_server):
    import requests

    url, _ = http_server
    live = Session("lab", "tiny", "live")
    live.enter_cell("cell")
    live.record_http()
    assert requests.get(url + "/state", timeout=5).ok
    live.leave_cell()
    assert live.cassettes() == []
