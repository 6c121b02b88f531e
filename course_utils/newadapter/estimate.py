"""Lab 08, section 8: how long the loop would take on a 4090 with the 7B base, step by step (estimates).

The seconds come from ``data/configs/gpu_estimates.json``, each with what it rests on; none was measured on a
4090. ``python -m course_tools.budget`` reads the same file for the whole course's GPU budget.
"""

from __future__ import annotations

import json

from ..paths import CONFIGS

ESTIMATES = CONFIGS / "gpu_estimates.json"


def estimates() -> dict[str, float]:
    """Every estimate by name (``engine_start_s``, ``train_step_s``, ...), in seconds or MB/s."""
    return {k: v["value"] for k, v in json.loads(ESTIMATES.read_text()).items() if not k.startswith("_")}


def loop_estimate(train_steps: int, answer_tokens: int = 16) -> dict[str, float]:
    """Lab 08's loop in seconds: train (load the base, then ``train_steps`` steps), start a server, pre-check,
    load the adapter, the first answer of ``answer_tokens`` tokens. The keys are the rows of the lab's timing table
    (its measured loop uses the same ones): 训练, 服务启动, 预检查, load_lora_adapter, 第一个回答."""
    e = estimates()
    return {"训练": e["train_load_s"] + train_steps * e["train_step_s"],
            "服务启动": e["engine_start_s"] + e["server_extra_s"],
            "预检查": 0.0,                           # reads a JSON file and a safetensors header: no GPU work
            "load_lora_adapter": e["load_adapter_s"],
            "第一个回答": answer_tokens * e["step_s"]}
