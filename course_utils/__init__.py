"""Shared helpers of the multi-LoRA serving labs: ``import course_utils as cu``.

The labs show the real vLLM code; these helpers do the plumbing. By concern:

- ``paths``, ``profiles``: where things are; which base, adapters and engine settings (tiny / qwen7b / llama3b);
- ``lab`` (``cu.start()``: open a lab), ``mode`` (live or read mode), ``banner``, ``quiet``, ``timing`` (``cu.timer``);
- ``chat``: the chat format (every prompt the labs, the trainer and the quality gate build);
- ``errors``: ``cu.CourseError``, the base of every error the course raises (each class lives beside its code);
- ``arch``, ``adapters``: model shapes, ranks and dtypes; checking an adapter before vLLM sees it; vLLM's refusal
  of one as ``cu.AdapterRefused`` (``cu.adapter_refusal()``);
- ``replay/``: recording live runs and replaying them in read mode (keys, session, vLLM stand-ins);
- ``memory/``: the memory model, live measurement of an engine, the layout figures;
- ``engine/``: scheduler traces, throughput benchmarks, FLOP arithmetic, vLLM's own source;
- ``server/``: starting, diagnosing and always stopping a vLLM OpenAI-compatible server, load tests;
- ``scale/``: Lab 07, two replicas behind Ray Serve (the driver process, the store, routing, traffic, metrics);
- ``tinyworld/``: the tiny world's tasks (prompts, reference answers, the codebook) and the answer checkers;
- ``gpu/``: whether a lab fits on the card before vLLM starts (``free``);
- ``newadapter/``: Lab 08's new task, its training in a child process (``child``), the pre-check, the estimate;
- ``recorded_figures``: the figures Lab 06 quotes, read from the other labs' recordings;
- ``exercises``, ``answers``: the labs' exercise checks (``cu.exercises.check(name, answer)``), reading answers;
- ``claims``: a lab's claim asserted where vLLM runs on the CPU, reported on GPU profiles (``cu.expect``,
  ``cu.expect_rows``);
- infrastructure: ``processes`` (start, wait, stop), ``child`` (talking with a child process), ``loopback``
  (127.0.0.1 only), ``vllm_env`` (every vLLM process's environment), ``vllm_patches`` (the course's vLLM plugin),
  ``prometheus`` (reading /metrics).

The maintainers' tools (lab runner, trainer, benchmarks, site, checks) are the package ``course_tools``, which no
lab kernel imports (ARCHITECTURE.md).
"""

from .adapters import AdapterError, AdapterRefused, adapter_refusal, check_adapter, read_adapter
from .errors import CourseError
from . import exercises, profiles
from .banner import vllm_version
from .lab import start
from .replay.record import as_recorded, measure, replayable
from .timing import fmt_seconds, timer
from .chat import chat_prompt
from .claims import expect, expect_rows
from .tables import shown
from .profiles import Profile, ProfileError, get_profile
from .replay.session import RecordingError, ReplayMiss

__all__ = ["AdapterError", "AdapterRefused", "CourseError", "adapter_refusal", "as_recorded", "Profile", "ProfileError", "RecordingError", "ReplayMiss", "check_adapter",
           "chat_prompt", "exercises", "expect", "expect_rows", "fmt_seconds", "get_profile", "measure", "profiles", "read_adapter", "replayable", "server", "shown", "start", "timer", "vllm_version"]


def __getattr__(name: str):
    # ``cu.server`` is imported when first used: importing the package starts nothing and needs no psutil
    # (``python -m course_utils.processes`` and the set-up checks import it first).
    if name == "server":
        import importlib

        return importlib.import_module(".server", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
