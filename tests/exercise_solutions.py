"""Reference answers and typical wrong answers for the labs' exercises (kept apart from the labs).

``test_exercises.py`` proves each check with them: the reference is accepted, every wrong answer is
rejected with a reason, and a blank answer neither passes nor raises.
"""

from course_utils import exercises as ex

REFERENCE = {
    "02.kv_page": ex.kv_page_answer(),
    "02.lora_buffer": ex.lora_buffer_answer(),
    "02.max_lora_rank": 64,
}

WRONG = {
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
