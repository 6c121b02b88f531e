"""The course's pre-check of a new adapter folder, before a server sees it: its rank against the server's
``--max-lora-rank`` and the base it was trained on (:func:`course_utils.check_adapter`).

Recorded like a lab call: read mode shows what the check said on the recorded run (the adapter folder exists
only where it was trained), the refusal included.
"""

from __future__ import annotations

from ..adapters import check_adapter
from ..profiles import Profile
from ..replay import keys
from ..replay.record import recorded


@recorded(lambda prof, path, max_lora_rank: keys.call("precheck", [{"profile": prof.name}, str(path)],
                                                      {"max_lora_rank": max_lora_rank}))
def precheck(prof: Profile, path: str, max_lora_rank: int) -> dict:
    """What the check found (rank, alpha, target modules, weight bytes, the base check), or its AdapterError."""
    info = check_adapter(path, base_model=prof.base_model, max_lora_rank=max_lora_rank)
    return {"name": info.name, "rank": info.rank, "alpha": info.alpha, "target_modules": sorted(info.target_modules),
            "weight_bytes": info.weight_bytes, "base_check": info.base_check}
