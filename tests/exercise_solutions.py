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
    "07.capacity": 4,
    "07.most_loads": "blind",
    "07.replicas_per_4090": 1,
    "02.kv_page": ex.kv_page_answer(),
    "02.lora_buffer": ex.lora_buffer_answer(),
    "02.max_lora_rank": 64,
    "03.steps": {1: 128, 2: 64},
    "03.config": {"max_lora_rank": 64, "max_loras": 3},
    "03.lora_share": 0.89,
    "04.request_body": {"model": "support", "messages": [{"role": "user", "content": "Where is my order?"}]},
    "04.curl_load": """curl -s -X POST http://127.0.0.1:$PORT/v1/load_lora_adapter \\
  -H "Authorization: Bearer $VLLM_API_KEY" -H "Content-Type: application/json" \\
  -d '{"lora_name": "json", "lora_path": "data/tiny/adapters/json"}'""",
    "04.status": {"no API key": 401, "adapter unloaded": 404, "same name loaded again": 400,
                  "rank above --max-lora-rank": 500},
    "05.scaling": 2.0,
    "05.indices": [0, 0, 0, -1, -1, 1, 0, 0],
    "05.merged_disk": 61,
}

# The same references as Python source, for the nbgrader source version of a lab (tests/nbgrader_build.py):
# evaluated in the lab's own namespace (Lab 01's cell 3 registers sql, support, medical and jsonfmt).
REFERENCE_SOURCE = {name: repr(value) for name, value in REFERENCE.items()}
REFERENCE_SOURCE["01.requests"] = "[sql, None, jsonfmt, sql]"
WRONG_SOURCE = {"01.requests": "sql"}   # the first wrong answer of each exercise, as source (repr otherwise)

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
    "07.capacity": [2, 8, 16],
    "07.most_loads": ["aware", "hash", "all the same"],
    "07.replicas_per_4090": [2, 0, 3],
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
    "03.steps": [{1: 32, 2: 32},               # max_loras does not change the steps
                 {1: 160, 2: 96},              # the base rows as a wave of their own
                 {1: 512, 2: 256},             # one request per step
                 [128, 64]],                   # not a dict
    "03.config": [{"max_lora_rank": 32, "max_loras": 3},     # codegen (rank 64) refused
                  {"max_lora_rank": 256, "max_loras": 3},    # fits, but 4x the slot memory
                  {"max_lora_rank": 64, "max_loras": 5},     # a slot per shelf adapter
                  {"max_lora_rank": 64, "max_loras": 1},     # serializes the adapters in flight
                  {"max_lora_rank": 48, "max_loras": 3}],    # not an allowed value
    "03.lora_share": [0.45,                    # the shrink alone
                      0.0089,                  # a fraction, not percent
                      25],
    "04.request_body": [{"model": "tiny-qwen2", "lora": "support",
                         "messages": [{"role": "user", "content": "Where is my order?"}]},   # adapter in another field
                        {"model": "support", "prompt": "Where is my order?"},             # completions' field
                        {"messages": [{"role": "user", "content": "Where is my order?"}]},  # no model
                        "support"],
    "04.curl_load": [
        """curl http://127.0.0.1:$PORT/v1/load_lora_adapter -H "Authorization: Bearer $VLLM_API_KEY" """,   # GET
        """curl -X POST http://127.0.0.1:$PORT/v1/load_lora_adapter -H "Content-Type: application/json" """
        """-d '{"lora_name": "json", "lora_path": "data/tiny/adapters/json"}'""",                          # no key
        """curl -X POST http://127.0.0.1:$PORT/v1/load_lora_adapter -H "Authorization: Bearer $VLLM_API_KEY" """
        """-H "Content-Type: application/json" -d '{"name": "json", "path": "data/tiny/adapters/json"}'""",  # CLI names
        """curl -X POST http://127.0.0.1:$PORT/v1/models -H "Authorization: Bearer $VLLM_API_KEY" """
        """-H "Content-Type: application/json" -d '{"lora_name": "json", "lora_path": "x"}'""",           # wrong endpoint
        """curl -X POST http://127.0.0.1:$PORT/v1/load_lora_adapter -H "Authorization: Bearer $VLLM_API_KEY" """
        """-d '{"lora_name": "json", "lora_path": "data/tiny/adapters/json"}'"""],                        # form data
    "04.status": [{"no API key": 401, "adapter unloaded": 404, "same name loaded again": 400,
                   "rank above --max-lora-rank": 400},                    # the rank refusal is a 500 in vLLM
                  {"no API key": 403, "adapter unloaded": 404, "same name loaded again": 400,
                   "rank above --max-lora-rank": 500},
                  {"no API key": 401, "adapter unloaded": 400}],
    "05.scaling": [1.0,                        # what the layer passes (already folded in)
                   0.5,                        # r / alpha
                   32],
    "05.indices": [[0, -1, 1, 0],              # one per row
                   [1, 1, 1, -1, -1, 4, 1, 1],  # LoRA ids instead of slots
                   [0, 0, 0, 0, 0, 1, 0, 0],   # base tokens pointed at slot 0
                   [0, 0, 0, -1, 1, 0]],
    "05.merged_disk": [15.2,                   # one model
                       122,                    # float32
                       15.9,                   # runtime LoRA: base + four adapters
                       "big"],
}
