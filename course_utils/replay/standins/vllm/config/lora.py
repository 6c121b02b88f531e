"""LoRAConfig in read mode (see course_utils.replay.standin)."""
from course_utils.replay.standin import LoRAConfig

__all__ = ["LoRAConfig"]
