"""Read-mode stand-in for vLLM: answers from the recordings (see course_utils.replay.vllm_calls)."""
from course_utils.replay.session import current as _current
from course_utils.replay.vllm_calls import ReplayLLM as LLM
from course_utils.replay.vllm_calls import ReplaySamplingParams as SamplingParams

__version__ = _current().fact("vllm.__version__", lambda: None)
__all__ = ["LLM", "SamplingParams"]
