"""The course page's section-4 program (multi_lora_offline.py), as written.

One frozen base loaded once with LoRA on, and one `generate` call whose batch
mixes a row for the SQL adapter with a row for the bare base.

It was written for Llama-3.2-3B-Instruct and jeeejeee/llama32-3b-text2sql-spider,
the pair vLLM's own docs use. On a GPU instance (about 12 GB is enough):

    bash autodl/setup.sh --profile llama3b
    COURSE_PROFILE=llama3b .venv/bin/python labs/multi_lora_offline.py

Any other profile runs it with that profile's base and its sql adapter, e.g.
live on CPU with the course's tiny world:

    COURSE_PROFILE=tiny .venv/bin/python labs/multi_lora_offline.py

Two lines differ from the page, both about where the files come from: the base
and the adapter are the local folders `autodl/setup.sh` downloaded (the page
calls `snapshot_download` and names the gated hub repository; nothing here
downloads), and the profile's hardware settings (dtype, max_model_len, memory)
are passed to `LLM`. The prompts, the LoRA settings and the requests are the
page's. The prompts are plain strings in the page's own "[user] ... [/user]"
format, not the model's chat template.
"""

import course_utils as cu

prof = cu.get_profile().require_runnable()   # COURSE_PROFILE: llama3b is the page's pair
cu.profiles.apply_env(prof)       # the profile's environment, before vLLM is imported

from vllm import LLM, SamplingParams  # noqa: E402
from vllm.lora.request import LoRARequest  # noqa: E402

# 1) The adapter, trained on the same base, as a local folder.
#    The page: sql_path = snapshot_download(repo_id="jeeejeee/llama32-3b-text2sql-spider")
sql_path = prof.adapter("sql")

# 2) One base with LoRA on. max_lora_rank must be >= the largest adapter rank.
llm = LLM(
    model=prof.base_model,           # the frozen base, loaded once (the page: "meta-llama/Llama-3.2-3B-Instruct")
    enable_lora=True,                # turn the LoRA machinery on
    max_lora_rank=64,                # slot size for the adapters' rank
    max_loras=2,                     # distinct adapters allowed in one batch
    **prof.engine_kwargs(),          # this profile's hardware settings
)

sp = SamplingParams(temperature=0, max_tokens=64)

# 3) Route the prompts of one batch to different adapters.
#    LoRARequest(readable name, unique integer id, local path); every adapter needs its own id.
prompts = ["[user] Write a SQL query: list all airports in Malawi [/user] [assistant]",
           "Explain what a KV cache is in one sentence."]
requests = [LoRARequest("sql_adapter", 1, sql_path),   # row 0 -> the SQL adapter
            None]                                       # row 1 -> the bare base

outs = llm.generate(prompts, sp, lora_request=requests)  # one heterogeneous batch
for p, o in zip(prompts, outs):
    print(o.outputs[0].text.strip()[:80])
