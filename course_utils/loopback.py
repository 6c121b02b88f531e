"""127.0.0.1 only: the address every server, engine and cluster of the course binds and talks to.

``LOOPBACK_ENV`` is what vLLM reads to put its own sockets (front end <-> engine core, torch.distributed)
on loopback instead of the host's routable address; the course's servers and Lab 07's Ray workers both get it.

:func:`bypass_proxy` keeps a proxy in the environment (AutoDL's academic proxy: ``http_proxy``/``https_proxy``
set by the shell that started JupyterLab) off the way to 127.0.0.1: requests, urllib, curl, boto3 and gRPC
(Ray) send loopback requests through such a proxy too unless ``no_proxy`` lists the host.
"""

from __future__ import annotations

import os
import socket
from collections.abc import MutableMapping

LOOPBACK = "127.0.0.1"
LOOPBACK_ENV = {"VLLM_HOST_IP": LOOPBACK, "VLLM_LOOPBACK_IP": LOOPBACK}
LOOPBACK_HOSTS = (LOOPBACK, "localhost", "::1")
PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
NO_PROXY_VARS = ("NO_PROXY", "no_proxy")   # curl and gRPC read the lower-case one, Python's urllib both


def bypass_proxy(env: MutableMapping[str, str] | None = None) -> MutableMapping[str, str]:
    """Add 127.0.0.1, localhost and ::1 to ``NO_PROXY`` and ``no_proxy`` of ``env`` (default: this process's
    environment, which requests and curl read at each request), after what is there; nothing is removed."""
    env = os.environ if env is None else env
    for var in NO_PROXY_VARS:
        have = [h.strip() for h in env.get(var, "").split(",") if h.strip()]
        env[var] = ",".join(have + [h for h in LOOPBACK_HOSTS if h not in have])
    return env


def proxies(env: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """The proxy variables set in ``env`` (default: this process's environment)."""
    env = os.environ if env is None else env
    return {k: env[k] for k in PROXY_VARS if env.get(k)}


def is_loopback(ip: str) -> bool:
    return ip == "::1" or ip.startswith("127.") or ip.startswith("::ffff:127.")


def free_port(host: str = LOOPBACK) -> int:
    """A port nothing listens on now (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def port_free(host: str, port: int) -> bool:
    """Whether a server could bind ``host:port`` now (with SO_REUSEADDR, as vLLM binds it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


def listening(port: int, host: str = LOOPBACK) -> bool:
    """Whether something accepts connections on ``host:port``."""
    with socket.socket() as s:
        return s.connect_ex((host, port)) == 0
