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


def ratio_lines(res: dict) -> list[str]:
    """The verdict lines (computed from the figures)."""
    m = res["median"]
    share = res["lora_op_share"]
    gap = 1 - m["mixed"] / m["base"]
    lines = [
        (f"vLLM's CPU ops:   mixed / base = {m['mixed'] / m['base']:.2f}x; base (LoRA engine) / no LoRA = "
         f"{m['base'] / m['no LoRA']:.2f}x"),
        (f"grouped ops:      mixed / base = {m['mixed, grouped ops'] / m['base, grouped ops']:.2f}x; "
         f"mixed, grouped / mixed, vLLM's ops = {m['mixed, grouped ops'] / m['mixed']:.2f}x"),
        f"time inside the LoRA ops: {100 * share['mixed']:.0f}% of the mixed run with vLLM's ops, "
        f"{100 * share['mixed, grouped ops']:.0f}% with the grouped ops"
        + (f" (mixed makes {100 * gap:.0f}% fewer tokens/s than base)" if gap > 0 else ""),
        (f"grouped ops give vLLM's tokens on every adapter row: {res['grouped_same_tokens_on_adapter_rows']}; "
         f"base rows give the no-LoRA engine's tokens: {res['base_rows_same_as_no_lora']}"),
    ]
    return lines


def load(path: Path = RECORDED) -> dict:
    from .opbench import load_run

    return load_run(path, "end-to-end run", "bench-lora-e2e")
