"""The course page's section-4 program (multi_lora_offline.py), as written.

One frozen base loaded once with LoRA on, and one `generate` call whose batch
mixes a row for the SQL adapter with a row for the bare base.

It was written for Llama-3.2-3B-Instruct and jeeejeee/llama32-3b-text2sql-spider,
the pair vLLM's own docs use. On a GPU instance (an estimated 12 GB is enough; not measured):

    bash autodl/setup.sh --profile llama3b
    COURSE_PROFILE=llama3b .venv-gpu/bin/python labs/multi_lora_offline.py   # .venv-gpu: the GPU environment setup.sh builds

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

# 1) 把两个基于「同一基座」训练的 adapter 拉到本地路径。
#    讲义：sql_path = snapshot_download(repo_id="jeeejeee/llama32-3b-text2sql-spider")  # 示例 SQL adapter
#    课程改动：用 autodl/setup.sh 事先下载好的本地目录（运行时不下载）。
sql_path = prof.adapter("sql")
# （实际请用你自己的 Qwen2.5-7B adapter；基座与 adapter 必须匹配）

# 2) 一份基座，开启 LoRA。max_lora_rank 必须 ≥ 最高的 adapter 秩。
llm = LLM(
    model=prof.base_model,           # 冻结基座，只加载一次（讲义："meta-llama/Llama-3.2-3B-Instruct"）
    enable_lora=True,                # 打开 LoRA 机制
    max_lora_rank=64,                # 按你的最大秩给 adapter 槽位定尺寸
    max_loras=2,                     # 单 batch 内允许的不同 adapter 数
    **prof.engine_kwargs(),          # 课程改动：这个配置的硬件参数（dtype、上下文长度、显存）
)

sp = SamplingParams(temperature=0, max_tokens=64)

# 3) 在一个 batch 里把不同 prompt 路由到不同 adapter。
#    LoRARequest(可读名, 唯一整数 id, 本地路径)；每个 adapter 的整数 id 必须唯一。
prompts   = ["[user] Write a SQL query: list all airports in Malawi [/user] [assistant]",
             "Explain what a KV cache is in one sentence."]
requests  = [LoRARequest("sql_adapter", 1, sql_path),   # 行 0 → SQL adapter
             None]                                       # 行 1 → 裸基座，无 adapter

outs = llm.generate(prompts, sp, lora_request=requests)  # 异构 batch
for p, o in zip(prompts, outs):
    print(o.outputs[0].text.strip()[:80])
