"""Multi-LoRA end to end at a realistic width (Lab 03, section 4; Lab 06): the recorded result and its ratios.

A random-weight Qwen2 with Qwen2.5-1.5B's widths, four random rank-16 adapters on all seven projections, the
same prompts run without LoRA, as base rows, as mixed rows, and both again with the course's grouped ops.
``make bench-lora-e2e`` (:mod:`course_tools.bench.widebench`, whose docstring says how it measures) records
it; Lab 03 reads it here (:func:`load`, :func:`ratio_lines`).
"""

from __future__ import annotations

from pathlib import Path

from ..paths import BUILD, RECORDINGS

WIDE_DIR = BUILD / "wide-qwen2"
RECORDED = RECORDINGS / "cpu" / "lora_e2e.json"
# Qwen2.5-1.5B's widths (its config.json), 2 layers, the tiny world's 1024-token vocabulary.
WIDE = {"hidden_size": 1536, "intermediate_size": 8960, "num_attention_heads": 12, "num_key_value_heads": 2,
        "num_hidden_layers": 2}
RANK, ALPHA, N_ADAPTERS = 16, 32, 4
PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
SETTINGS = ("no LoRA", "base", "mixed", "base, grouped ops", "mixed, grouped ops")
# What each setting (a key of the recording) is called where the course shows it.
SETTING_LABELS = {"no LoRA": "不开 LoRA", "base": "全是基座行", "mixed": "混合 adapter",
                  "base, grouped ops": "全是基座行，分组算子", "mixed, grouped ops": "混合 adapter，分组算子"}


def ratio_lines(res: dict) -> list[str]:
    """The verdict lines (computed from the figures)."""
    m = res["median"]
    share = res["lora_op_share"]
    gap = 1 - m["mixed"] / m["base"]
    same_lora, same_base = res["grouped_same_tokens_on_adapter_rows"], res["base_rows_same_as_no_lora"]
    lines = [
        (f"vLLM 的 CPU 算子：混合 adapter / 全是基座行 = {m['mixed'] / m['base']:.2f}x；"
         f"全是基座行（开了 LoRA 的引擎）/ 不开 LoRA = {m['base'] / m['no LoRA']:.2f}x"),
        (f"分组算子：混合 adapter / 全是基座行 = {m['mixed, grouped ops'] / m['base, grouped ops']:.2f}x；"
         f"混合 adapter 时，分组算子 / vLLM 的算子 = {m['mixed, grouped ops'] / m['mixed']:.2f}x"),
        f"花在 LoRA 算子里的时间：用 vLLM 的算子时占混合 adapter 运行的 {100 * share['mixed']:.0f}%"
        + (f"（这时混合 adapter 的 tokens/s 比全是基座行时少 {100 * gap:.0f}%）" if gap > 0 else "")
        + f"，用分组算子时占 {100 * share['mixed, grouped ops']:.0f}%",
        ("每个 adapter 行上，分组算子给出的 token 与 vLLM 的算子全部相同" if same_lora else
         "有 adapter 行上，分组算子给出的 token 与 vLLM 的算子不同")
        + ("；基座行的 token 与不开 LoRA 的引擎全部相同" if same_base else
           "；有基座行的 token 与不开 LoRA 的引擎不同"),
    ]
    return lines


def load(path: Path = RECORDED) -> dict:
    from .opbench import load_run

    return load_run(path, "端到端运行结果", "bench-lora-e2e")
