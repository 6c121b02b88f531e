"""Read-mode stand-in for vLLM: answers from the recordings (see course_utils.vllm_record)."""
from course_utils.record import current as _current
from course_utils.vllm_record import ReplayLLM as LLM
from course_utils.vllm_record import ReplaySamplingParams as SamplingParams

__version__ = _current().fact("vllm.__version__", lambda: None)
__all__ = ["LLM", "SamplingParams"]
