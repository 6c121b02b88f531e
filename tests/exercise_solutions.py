"""Reference answers and typical wrong answers for the labs' exercises (kept apart from the labs).

``test_exercises.py`` proves each check with them: the reference is accepted, every wrong answer is
rejected with a reason, and a blank answer neither passes nor raises.
"""

from course_utils import exercises as ex
from course_utils.replay.standin import LoRARequest   # the same fields as vllm.lora.request.LoRARequest

sql, support, jsonfmt = LoRARequest("sql", 1, "p/sql"), LoRARequest("support", 2, "p/s"), LoRARequest("json", 4, "p/j")

REFERENCE = {
    "01.requests": [sql, None, jsonfmt, sql],
    "01.max_loras": 2,
    "01.more_steps": "max_loras=1",
    "02.kv_page": ex.kv_page_answer(),
    "02.lora_buffer": ex.lora_buffer_answer(),
    "02.max_lora_rank": 64,
}

WRONG = {
    "01.requests": [sql,                                       # one request for every row (pitfall 2)
                    [sql, None, jsonfmt],                      # one entry short
                    [sql, sql, jsonfmt, sql],                  # the base row given an adapter
                    [sql, None, LoRARequest("json", 1, "p/j"), sql],   # json under sql's id (pitfall 1)
                    [sql, None, support, sql]],                # the wrong adapter
    "01.max_loras": [3,                                        # counted the base row
                     4,                                        # counted sql's rows, not the adapter
                     1],                                       # the default: serializes
    "01.more_steps": ["max_loras=4", "same", "no idea"],
    "02.kv_page": [16_384,                     # K or V only
                   2 * 16 * 28 * 128 * 2,      # all 28 attention heads instead of the 4 KV heads
                   32_768 * 28,                # all layers
                   "a lot"],
    "02.lora_buffer": [ex.lora_buffer_answer() // 3,   # one slot
                       ex.lora_buffer_answer() // 2,   # sized by the adapters' rank 16 (or 1 byte per value)
                       0],
    "02.max_lora_rank": [48,                   # the largest rank itself: not an allowed value
                         32, 16,               # too small for the rank-48 adapter
                         256],                 # fits, but wastes slots
}
