from course_utils.replay.standin import LoRARequest

__all__ = ["LoRARequest"]
