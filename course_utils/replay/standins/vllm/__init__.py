"""Read-mode stand-in for vLLM: answers from the recordings (see course_utils.replay.standin)."""
from course_utils.replay import keys as _keys
from course_utils.replay.session import current as _current
from course_utils.replay.standin import LLM, SamplingParams

__version__ = _current().fact(_keys.FACT_VLLM_VERSION, lambda: None)
__all__ = ["LLM", "SamplingParams"]
