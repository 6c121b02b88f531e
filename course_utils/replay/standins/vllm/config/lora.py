"""LoRAConfig in read mode: a dataclass whose defaults are those the recorded vLLM had."""
import dataclasses

from course_utils.replay import keys as _keys
from course_utils.replay.session import current as _current

_defaults = _current().fact(_keys.FACT_LORA_CONFIG_DEFAULTS, lambda: None) or {}

LoRAConfig = dataclasses.make_dataclass(
    "LoRAConfig", [(name, type(value), dataclasses.field(default=value)) for name, value in _defaults.items()])
LoRAConfig.__doc__ = "Fields and defaults of vllm.config.lora.LoRAConfig as recorded from the live installation."
