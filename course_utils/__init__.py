"""Shared helpers of the multi-LoRA serving labs.

The labs show the real vLLM code; these helpers do the plumbing:

- :mod:`~course_utils.profiles`: which base, adapters and engine settings (tiny / qwen7b / llama3b);
- :mod:`~course_utils.lab`: ``start()`` (profile, mode, banner) and ``timer``;
- :mod:`~course_utils.replay.session`: record live runs, replay them in read mode;
- :mod:`~course_utils.adapters`: check an adapter before vLLM sees it;
- :mod:`~course_utils.server`: start, diagnose and always stop a vLLM OpenAI-compatible server;
- :mod:`~course_utils.tinyworld.tasks`: the four synthetic tasks and their format checks;
- :mod:`~course_utils.tinyworld`: the tiny-model trainer (``make tiny-world``);
- :mod:`~course_utils.tinyworld.quality`: the tiny world's held-out quality table (``make eval``).
"""

from .adapters import AdapterError, check_adapter, read_adapter
from . import profiles, server
from .lab import fmt_seconds, measure, start, timer, vllm_version
from .chat import chat_prompt
from .profiles import Profile, ProfileError, get_profile
from .replay.session import RecordingError, ReplayMiss

__all__ = ["AdapterError", "Profile", "ProfileError", "RecordingError", "ReplayMiss", "check_adapter",
           "chat_prompt", "fmt_seconds", "get_profile", "measure", "profiles", "read_adapter", "server", "start", "timer", "vllm_version"]
