"""The memory lessons: what a GPU holds when it serves one base and many adapters.

- :mod:`.model`: the memory model, pure arithmetic over config files (weights,
  adapter sizes, LoRA slot buffers, KV cache, the whole card's plan);
- :mod:`.figures`: the layout figure, its tables and the interactive knobs.

``from course_utils import memory`` gives the model's names directly
(``memory.plan``, ``memory.lora_buffer_bytes``, ...).
"""

from .model import *  # noqa: F401,F403
from .model import CONFIGS, PROJECTIONS, __all__  # noqa: F401
