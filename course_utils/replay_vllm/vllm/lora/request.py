from course_utils.vllm_record import ReplayLoRARequest as LoRARequest

__all__ = ["LoRARequest"]
