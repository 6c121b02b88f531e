"""127.0.0.1 only: the address every server, engine and cluster of the course binds and talks to.

``LOOPBACK_ENV`` is what vLLM reads to put its own sockets (front end <-> engine core, torch.distributed)
on loopback instead of the host's routable address; the course's servers and Lab 07's Ray workers both get it.
"""

from __future__ import annotations

import socket

LOOPBACK = "127.0.0.1"
LOOPBACK_ENV = {"VLLM_HOST_IP": LOOPBACK, "VLLM_LOOPBACK_IP": LOOPBACK}


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
