"""What each exercise asks: the one line shown while its answer is blank, and the givens its question states.

The judges (``lab01.py`` ... ``lab08.py``) import the givens from here. :func:`course_utils.exercises.check`
imports a lab's judges only once there is an answer to judge, so a lab run top to bottom with blank answers
loads this module and not the judges or the answer reader (issue 51).
"""

from __future__ import annotations

TOLERANCE = 0.02           # a number within ±2% of the right one is right, unless the exercise says otherwise

SHELF_02 = {"sql": 16, "support": 8, "medical": 48}                                  # 02.max_lora_rank's shelf
LAB03_SHELF = {"faq": 8, "sql": 16, "contracts": 32, "triage": 16, "codegen": 64}   # 03.config's shelf
LAB03_IN_FLIGHT = 3   # at most this many different adapters have requests in flight at the same moment
LAB04_CASES = ("no API key", "adapter unloaded", "same name loaded again", "rank above --max-lora-rank")
LAB05_ADAPTER = {"r": 16, "lora_alpha": 32}
LAB08_SAME = 0.10          # 08.other: final held-out shares this close (5 of 50 questions) count as "差不多"
MERGED_TOLERANCE = 0.05    # the parameter count rounded (7.6 B) or the checkpoint's extra files: ±5% is right

TASKS = {
    "01.requests": "一个列表：上面这批的每个 prompt 一项（LoRARequest 或 None）",
    "01.max_loras": "让上面这批在同一步里跑完所需的最小 max_loras（一个整数）",
    "01.more_steps": '你的预测："max_loras=1"、"max_loras=4" 或 "same"',
    "02.kv_page": "Qwen2.5-7B、bf16、一层的一个 16-token KV block 的字节数（±2% 以内算对）",
    "02.lora_buffer": "vLLM 为 Qwen2.5-7B 预留的 LoRA 缓冲区字节数（max_loras=3、max_lora_rank=32、bf16，"
                      "adapter 都是秩 16；±2% 以内算对）",
    "02.max_lora_rank": f"货架 {SHELF_02} 该用的 max_lora_rank",
    "03.steps": "你的预测，一个 dict：{1: max_loras=1 的步数, 2: max_loras=2 的步数}",
    "03.cache_reads": "你的预测：这 5 次请求里有几次要从磁盘读（一个整数）",
    "03.config": f'一个 dict {{"max_lora_rank": ..., "max_loras": ...}}：货架 {LAB03_SHELF}，'
                 f"同一时刻最多 {LAB03_IN_FLIGHT} 个 adapter 在跑",
    "03.lora_share": "秩 16 的 LoRA 给 Qwen2.5-7B 的 q_proj 多加的 FLOPs，百分之几（一个数；和正确值相差不超过它的 2% 算对）",
    "04.request_body": "一个 dict：让 support adapter 回答问题的 /v1/chat/completions 请求体",
    "04.curl_load": "一条 curl 命令（字符串）：在运行时加载 json adapter",
    "04.status": f"你的预测，一个 dict：{'、'.join(LAB04_CASES)} 这四种情况各自的状态码",
    "05.scaling": f"r={LAB05_ADAPTER['r']}、lora_alpha={LAB05_ADAPTER['lora_alpha']} 的 adapter 加载时 "
                  f"vLLM 乘进 B 的系数（一个数）",
    "05.lora_linear": "写好 lora_linear 的函数体：返回 (T, d) 的输出",
    "05.indices": "上面这个 batch 的每个 token 的槽位下标（一个整数列表）",
    "05.merged_disk": f"四个合并后的 Qwen2.5-7B-Instruct（bf16）一共占多少 GB 磁盘（一个数；"
                      f"±{MERGED_TOLERANCE:.0%} 以内算对）",
    "07.capacity": "上面两个副本同一时刻最多能装着几个不同的 adapter（一个整数）",
    "07.most_loads": '你的预测：哪种路由装载 adapter 最多，"aware"、"blind" 或 "hash"',
    "07.replicas_per_4090": "只看权重，一张 4090 放得下几个 bf16 Qwen2.5-7B 副本（一个整数）",
    "08.base_score": "你的预测：基座在留出集上答对的比例（一个百分数，写 \"12%\" 或 12）",
    "08.other": '你的预测："更高"、"更低" 或 "差不多"（第二组训练完答对的比例，和 KNOBS 那组比；相差不超过 10 个百分点算差不多）',
    "08.load_request": "一个 dict：POST /v1/load_lora_adapter 的请求体，加载刚训练的 stamp adapter",
    "08.harder": "一个 dict，两个键：{\"rank\": ..., \"steps\": ...}，按题目里的规则给更难的变体",
}
