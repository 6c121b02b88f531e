"""The environment of every vLLM process the course starts, composed here and nowhere else.

- An offline engine in the lab's kernel: the profile's environment, put in place before ``import vllm`` and
  never over what the user set (:func:`apply`).
- A server (``vllm serve``): the kernel's environment less what only an offline engine may have, plus the
  server's own settings (:func:`server_changes`, the part the page shows; :func:`server`, the whole).
- Lab 07's Ray Serve replicas: the profile's environment with vLLM's engine process on (:func:`ray_workers`).

Every one of them talks on 127.0.0.1 only (:data:`course_utils.loopback.LOOPBACK_ENV`, the proxy bypass).
"""

from __future__ import annotations

import os

from .loopback import LOOPBACK_ENV, bypass_proxy

# Offline engines only: the in-process engine (the tiny profile) and sending functions to the engine process
# (llm.apply_model, the GPU profiles' measurements). A server never gets them.
OFFLINE_ONLY = ("VLLM_ENABLE_V1_MULTIPROCESSING", "VLLM_ALLOW_INSECURE_SERIALIZATION")
RUNTIME_UPDATES = "VLLM_ALLOW_RUNTIME_LORA_UPDATING"   # /v1/load_lora_adapter; only a server that asks for it


def apply(profile) -> None:
    """Put the profile's environment in place in this process; call before ``import vllm``."""
    for k, v in profile.env.items():
        os.environ.setdefault(k, v)


def server_changes(profile, runtime_updates: bool = False, extra: dict | None = None) -> dict:
    """What a server's environment changes against the kernel's (the profile's, minus offline-only settings)."""
    env = {k: v for k, v in profile.env.items() if k not in OFFLINE_ONLY}
    env.setdefault("VLLM_LOGGING_LEVEL", "INFO")
    if profile.hardware == "cpu":
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    if runtime_updates:
        env[RUNTIME_UPDATES] = "True"
    env.update(extra or {})
    env.update(LOOPBACK_ENV)
    return env


def server(profile, runtime_updates: bool = False, extra: dict | None = None) -> dict:
    """A server's whole environment: the kernel's, without offline-only settings or runtime updating unless asked,
    with :func:`server_changes`, the proxy bypassed for 127.0.0.1."""
    env = dict(os.environ)
    for k in (*OFFLINE_ONLY, RUNTIME_UPDATES):
        env.pop(k, None)
    env.update(server_changes(profile, runtime_updates, extra))
    return dict(bypass_proxy(env))


def ray_workers(profile, extra: dict, pythonpath_first: str) -> dict:
    """Lab 07's Ray workers (they run Serve's vLLM replicas): the profile's environment with vLLM's engine process
    on (a lab kernel's tiny profile turns it off), loopback, ``extra`` (Ray's settings, the store's), and
    ``pythonpath_first`` ahead on PYTHONPATH."""
    path = os.pathsep.join(p for p in [pythonpath_first, os.environ.get("PYTHONPATH", "")] if p)
    return {**profile.env, "VLLM_ENABLE_V1_MULTIPROCESSING": "1", **LOOPBACK_ENV, **extra, "PYTHONPATH": path}
