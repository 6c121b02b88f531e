"""Quality of the tiny world, measured through real vLLM and cross-checked with transformers+peft.

``python -m course_utils.tinyworld.quality`` (``make eval``) runs held-out prompts of
every task through one heterogeneous vLLM batch (each prompt once with its
task's adapter and once with ``None``, the bare base), checks each output's
format with :mod:`course_utils.tinyworld.tasks`, and reruns the same rows greedily in
transformers+peft to show that both engines compute the same LoRA.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from dataclasses import dataclass

from . import tasks
from ..profiles import Profile, apply_env, get_profile
from ..chat import chat_prompt

MAX_TOKENS = 64


@dataclass
class Row:
    task: str
    adapter: str | None  # None: the bare base
    prompt: str
    fields: dict
    vllm: str = ""
    hf: str = ""

    @property
    def passes(self) -> bool:
        return tasks.check(self.task, self.vllm, self.fields)


def heldout_rows(n_per_task: int, seed: int = 7) -> list[Row]:
    rows = []
    for task in tasks.TASKS:
        for ex in tasks.make_examples(task, n_per_task, "heldout", seed):
            rows.append(Row(task, task, ex.prompt, ex.fields))
            rows.append(Row(task, None, ex.prompt, ex.fields))
    return rows


def generate_mixed(profile: Profile, batch: list[tuple[str | None, str]]) -> tuple[list[str], float]:
    """One heterogeneous batch through real vLLM: ``batch`` holds (adapter name or None for the bare
    base, user text) pairs, all sent in ONE greedy ``llm.generate`` call, each with its own LoRARequest.
    Returns the outputs (stripped, in order) and the seconds the generate call took."""
    apply_env(profile)
    from vllm import LLM, SamplingParams
    from vllm.lora.request import LoRARequest

    llm = LLM(model=profile.base_model, enable_lora=True, max_lora_rank=profile.max_lora_rank,
              max_loras=profile.max_loras, **profile.engine_kwargs())
    ids = {name: i + 1 for i, name in enumerate(profile.adapters)}
    requests = [LoRARequest(a, ids[a], profile.adapter(a)) if a else None for a, _ in batch]
    sp = SamplingParams(temperature=0.0, max_tokens=MAX_TOKENS)
    t0 = time.perf_counter()
    outs = llm.generate([chat_prompt(profile, text) for _, text in batch], sp, lora_request=requests,
                        use_tqdm=False)
    dt = time.perf_counter() - t0
    del llm
    return [o.outputs[0].text.strip() for o in outs], dt


def run_vllm(profile: Profile, rows: list[Row]) -> float:
    """All rows in ONE llm.generate call, each with its own LoRARequest (or None). Returns seconds."""
    texts, dt = generate_mixed(profile, [(r.adapter, r.prompt) for r in rows])
    for r, text in zip(rows, texts):
        r.vllm = text
    return dt


def run_hf(profile: Profile, rows: list[Row], batch_size: int = 64) -> float:
    """The same rows greedily through transformers + peft (one PeftModel, adapters switched by name)."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    t0 = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(profile.base_model, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(profile.base_model, dtype=torch.float32)
    names = list(profile.adapters)
    model = PeftModel.from_pretrained(model, profile.adapter(names[0]), adapter_name=names[0])
    for name in names[1:]:
        model.load_adapter(profile.adapter(name), adapter_name=name)
    model.eval()
    groups: dict = {}
    for r in rows:
        groups.setdefault(r.adapter, []).append(r)
    for adapter, group in groups.items():
        for i in range(0, len(group), batch_size):
            chunk = group[i:i + batch_size]
            enc = tok([chat_prompt(profile, r.prompt) for r in chunk], return_tensors="pt", padding=True,
                      add_special_tokens=False)
            if adapter is not None:
                model.set_adapter(adapter)
            with torch.no_grad(), (model.disable_adapter() if adapter is None else contextlib.nullcontext()):
                out = model.generate(**enc, max_new_tokens=MAX_TOKENS, do_sample=False)
            for r, seq in zip(chunk, out[:, enc["input_ids"].shape[1]:]):
                r.hf = tok.decode(seq, skip_special_tokens=True).strip()
    return time.perf_counter() - t0


def summarise(rows: list[Row]) -> dict:
    table = {}
    for task in tasks.TASKS:
        ad = [r for r in rows if r.task == task and r.adapter]
        base = [r for r in rows if r.task == task and not r.adapter]
        table[task] = {
            "rows": len(ad),
            "adapter_format": sum(r.passes for r in ad) / len(ad),
            "base_format": sum(r.passes for r in base) / len(base),
            "vllm_equals_hf": sum(r.vllm == r.hf for r in ad + base) / len(ad + base),
        }
        if task == "sql":
            table[task]["value_exact"] = sum(tasks.sql_value_exact(r.vllm, r.fields) for r in ad) / len(ad)
    return table


def format_table(table: dict) -> str:
    lines = [f"{'task':<9}{'rows':>6}{'adapter ok':>12}{'base ok':>10}{'vLLM == HF':>12}"]
    for task, t in table.items():
        lines.append(f"{task:<9}{t['rows']:>6}{t['adapter_format']:>12.1%}{t['base_format']:>10.1%}"
                     f"{t['vllm_equals_hf']:>12.1%}")
    if "value_exact" in table.get("sql", {}):
        lines.append(f"sql rows whose condition value is the prompt's entity spelled exactly: "
                     f"{table['sql']['value_exact']:.1%} (held-out names the tiny model never saw)")
    return "\n".join(lines)


def evaluate(profile: Profile | None = None, n_per_task: int = 50, hf: bool = True) -> tuple[dict, list[Row]]:
    profile = (profile or get_profile("tiny")).check()
    rows = heldout_rows(n_per_task)
    run_vllm(profile, rows)
    if hf:
        run_hf(profile, rows)
    return summarise(rows), rows


def main(argv=None):
    ap = argparse.ArgumentParser(description="Held-out quality of the tiny world through vLLM (+ HF cross-check).")
    ap.add_argument("-n", type=int, default=50, help="held-out prompts per task")
    ap.add_argument("--json", help="also write the table to this file")
    ap.add_argument("--show", type=int, default=0, help="print this many rows per task")
    args = ap.parse_args(argv)
    table, rows = evaluate(n_per_task=args.n)
    print(format_table(table))
    for task in tasks.TASKS:
        for r in [r for r in rows if r.task == task][: args.show]:
            print(f"--- {task} / {r.adapter or 'base'} | {r.prompt}\n  vLLM: {r.vllm!r}\n  HF:   {r.hf!r}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(table, f, indent=2)


if __name__ == "__main__":
    main()
