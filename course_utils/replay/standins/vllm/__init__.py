"""Read-mode stand-in for vLLM: answers from the recordings (see course_utils.replay.standin).

Nothing here reads a recording at import: ``vllm.__version__`` is looked up when it is read, in the
lab session open at that moment, so importing vllm before ``course_utils.start()`` works, and a second
lab in the same kernel shows its own recording's version."""
from course_utils.replay.standin import LLM, SamplingParams

__all__ = ["LLM", "SamplingParams"]


def __getattr__(name):
    if name == "__version__":
        from course_utils.replay.standin import recorded_fact
        from course_utils.replay import keys

        return recorded_fact(keys.FACT_VLLM_VERSION)
    raise AttributeError(f"module 'vllm' (read mode) has no attribute {name!r}")
