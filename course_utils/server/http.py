"""HTTP to a server that is recorded live and replayed in read mode, and paths for the page.

:class:`RequestsTransport` lets the lab's HTTP recording (vcrpy, one
cassette per cell: :meth:`course_utils.replay.session.Session.record_http`) see the
openai client's calls; :func:`shell` runs a command such as curl against a server
and records its output; ``short_path`` (:func:`course_utils.paths.short_path`) shortens a path for the page.
"""

from __future__ import annotations

import os
import subprocess
from typing import TYPE_CHECKING

from ..loopback import bypass_proxy
from ..paths import REPO, short_path  # noqa: F401  (cu.server.short_path: the labs show paths with it)
from ..replay import keys
from ..replay.record import recorded

if TYPE_CHECKING:
    from .process import Server


class RequestsTransport:
    """An ``httpx2`` transport that sends through ``requests``, so vcrpy cassettes see the openai client's calls.

    The openai client speaks ``httpx2``, which vcrpy does not patch; ``requests``
    it does. ``srv.client()`` plugs this in: live it is an ordinary HTTP call,
    in read mode the cassette answers and no socket opens.
    """

    def __init__(self):
        import requests

        self._session = requests.Session()

    def handle_request(self, request):
        import httpx2

        body = request.read()
        timeout = (request.extensions or {}).get("timeout", {}) or {}
        r = self._session.request(request.method, str(request.url), headers=dict(request.headers), data=body or None,
                                  timeout=timeout.get("read") or 120)
        headers = [(k, v) for k, v in r.headers.items()
                   if k.lower() not in ("content-encoding", "transfer-encoding", "content-length")]
        return httpx2.Response(r.status_code, headers=headers, content=r.content, request=request)

    def close(self):
        self._session.close()


def openai_client(srv: Server, **kw):
    """An ``openai.OpenAI`` client for ``srv`` (no retries, so every answer is the server's own)."""
    import httpx2
    import openai

    kw.setdefault("max_retries", 0)
    kw.setdefault("timeout", 120)
    kw.setdefault("http_client", httpx2.Client(transport=RequestsTransport()))
    return openai.OpenAI(base_url=srv.url("/v1"), api_key=srv.api_key, **kw)


@recorded(lambda command, srv, label="shell": keys.shell(label, command))
def shell(command: str, srv: Server, label: str = "shell") -> str:
    """Run a shell command (e.g. curl) with ``$PORT`` and ``$VLLM_API_KEY`` set for ``srv``; its stdout.

    The command shown on the page is the one that runs: the port and key come
    from the environment, not pasted in. Recorded live, replayed in read mode.
    """
    env = bypass_proxy({**os.environ, "PORT": str(srv.port), "VLLM_API_KEY": srv.api_key})
    out = subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise RuntimeError(f"命令以退出码 {out.returncode} 结束：{out.stderr.strip()}")
    return out.stdout


