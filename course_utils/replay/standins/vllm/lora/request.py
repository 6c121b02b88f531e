from course_utils.replay.vllm_calls import ReplayLoRARequest as LoRARequest

__all__ = ["LoRARequest"]
