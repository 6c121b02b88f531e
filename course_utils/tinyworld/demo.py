"""One heterogeneous batch through real vLLM: every row its own adapter, None for the bare base.

    python -m course_utils.tinyworld.demo            # the tiny profile on CPU
    COURSE_PROFILE=qwen7b python -m course_utils.tinyworld.demo   # on the GPU instance
"""

from __future__ import annotations

from ..profiles import apply_env, get_profile
from ..chat import chat_prompt

QUESTIONS = [
    ("sql", "Write a SQL query: List all airports in Malawi."),
    ("support", "Customer complaint: my thermostat arrived broken and I am not happy."),
    ("medical", "Clinical note: Yoko, 41 years old, has had knee-pain for 6 days. Temperature 37.2."),
    ("json", "Convert to JSON: Gustav is a 52-year-old translator who lives in Tashkent."),
    (None, "Write a SQL query: List all airports in Malawi."),
    (None, "Tell me something about chess."),
]


def main():
    profile = get_profile().check()
    apply_env(profile)
    from vllm import LLM, SamplingParams
    from vllm.lora.request import LoRARequest

    llm = LLM(model=profile.base_model, enable_lora=True, max_lora_rank=profile.max_lora_rank,
              max_loras=profile.max_loras, **profile.engine_kwargs())
    ids = {name: i + 1 for i, name in enumerate(profile.adapters)}
    prompts = [chat_prompt(profile, q) for _, q in QUESTIONS]
    requests = [LoRARequest(a, ids[a], profile.adapter(a)) if a else None for a, _ in QUESTIONS]
    outputs = llm.generate(prompts, SamplingParams(temperature=0, max_tokens=64), lora_request=requests,
                           use_tqdm=False)
    for row, ((adapter, question), out) in enumerate(zip(QUESTIONS, outputs)):
        print(f"row {row} | adapter: {adapter or 'None (base)'}\n  prompt: {question}\n"
              f"  output: {out.outputs[0].text.strip()}\n")


if __name__ == "__main__":
    main()
