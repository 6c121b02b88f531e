"""One running server of the tiny profile with the shelf adapters (conftest.py's ``tiny_server``), shared by this
module's tests as vLLM's ``tests/entrypoints/openai`` share their module's ``server``: each test only reads it.

Its start (within 120 s) and its stop (nothing of it left: no child, no member of its process group, no process
with its tag) are checked by the fixture itself; the starts that fail, and a start behind a proxy, are
``tests/test_server.py``'s, each with a server of its own.
"""

from __future__ import annotations

import pytest

from course_utils import profiles

pytestmark = [pytest.mark.live, pytest.mark.slow]

TINY = profiles.get_profile("tiny")


def test_it_started_in_time_and_lists_the_base_and_every_shelf_adapter(tiny_server):
    import requests

    assert tiny_server.ready_seconds < 120
    r = requests.get(tiny_server.url("/v1/models"), headers=tiny_server.headers, timeout=10)
    assert r.status_code == 200
    ids = {m["id"] for m in r.json()["data"]}
    assert {"base", "sql", "support", "json", "medical"} <= ids and set(TINY.adapters) <= ids


def test_it_answers_only_with_its_key(tiny_server):
    import requests

    assert requests.get(tiny_server.url("/v1/models"), timeout=10).status_code == 401


def test_its_engine_runs_in_a_process_of_its_own_and_every_socket_is_on_loopback(tiny_server):
    names = {" ".join(p.cmdline()) for p in tiny_server.processes()}
    assert any("EngineCore" in n for n in names), names
    socks = tiny_server.sockets()
    assert any(c.listening and c.laddr == ("127.0.0.1", tiny_server.port) for c in socks)
    assert all(c.laddr[0] == "127.0.0.1" and (not c.raddr or c.raddr[0] == "127.0.0.1") for c in socks), \
        f"every socket of the server is on loopback: {socks}"
