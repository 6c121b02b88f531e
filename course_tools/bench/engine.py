"""Throughput of multi-LoRA batches: base only, mixed adapters at max_loras=N, mixed at max_loras=1.

    python -m course_tools.bench.engine                        # tiny profile on CPU (make bench)
    python -m course_tools.bench.engine --prompts 32 --tokens 64 --reps 5
    COURSE_PROFILE=qwen7b python -m course_tools.bench.engine   # on the GPU instance

The same prompts (held-out examples of the four tasks, one chat template)
run three ways, greedy with ``ignore_eos`` so every request makes exactly
``--tokens`` tokens:

1. **base only**: every row without an adapter, on the engine with
   ``max_loras = number of adapters``;
2. **mixed, max_loras=N**: each row with its task's adapter, same engine;
3. **mixed, max_loras=1**: the same rows on an engine that admits one
   adapter per step.

Each run goes through :func:`course_utils.engine.schedtrace.run` (the engine
driven step by step), which also counts engine steps and times each step.
The table gives output tokens per second, median and spread (min-max) over
repetitions, the ratios per repetition, and the step times (the first step
holds the prefill). On CPU both engines stay alive and the settings
alternate repetition by repetition (``--interleave``), so that a busy spell
of a shared machine hits every setting alike; on a GPU one engine runs at a
time (``--sequential``). The table's rows and ratios are Lab 03's
(:mod:`course_utils.engine.bench`).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys

from course_utils.engine.bench import (BASE_ONLY, BenchError, Spread, check_engine, pick_adapters, ratio_lines,
                                       workload)


def mixed(n: int, max_loras: int) -> str:
    return f"{n} adapters mixed, max_loras={max_loras}"


def run_benchmark(profile, n_prompts: int = 32, tokens: int = 64, reps: int = 5, n_adapters: int | None = None,
                  max_lora_rank: int | None = None, interleave: bool | None = None, out=print) -> dict:
    """Run the three settings, ``reps`` times each after one warm-up, and return rates, step counts and
    step timings. ``interleave`` (default: on CPU) keeps both engines alive and alternates the settings
    repetition by repetition, so that a slow spell of the machine hits all settings alike; otherwise
    (one GPU, one engine at a time) the max_loras=N engine serves base-only and mixed, then the
    max_loras=1 engine runs."""
    from vllm import LLM, SamplingParams
    from vllm.lora.request import LoRARequest

    from course_utils.chat import chat_prompt
    from course_utils.engine import schedtrace

    names = pick_adapters(profile, n_adapters)
    if not names:
        raise BenchError("the benchmark needs at least one adapter")
    if reps < 1 or n_prompts < 1 or tokens < 1:
        raise BenchError("--reps, --prompts and --tokens must be >= 1")
    rank = max_lora_rank or profile.max_lora_rank
    n = len(names)
    check_engine(n, rank, max_cpu_loras=n)
    check_engine(1, rank, max_cpu_loras=n)
    if interleave is None:
        interleave = profile.hardware == "cpu"
    per = -(-n_prompts // n)
    rows = workload(names, per)[:n_prompts]
    prompts = [chat_prompt(profile, text) for _, text in rows]
    reqs = {a: LoRARequest(a, i + 1, profile.adapter(a)) for i, a in enumerate(names)}
    mixed_loras = [reqs[a] for a, _ in rows]
    sp = SamplingParams(temperature=0, max_tokens=tokens, ignore_eos=True)
    plan = [(n, [(BASE_ONLY, [None] * len(rows)), (mixed(n, n), mixed_loras)]), (1, [(mixed(n, 1), mixed_loras)])]
    traces: dict[str, list] = {}
    engines: dict[int, object] = {}

    def start(max_loras):
        out(f"starting engine max_loras={max_loras}, max_lora_rank={rank} ...")
        llm = LLM(model=profile.base_model, enable_lora=True, max_loras=max_loras, max_lora_rank=rank,
                  max_cpu_loras=n, **profile.engine_kwargs())
        for r in reqs.values():  # preload: adapter loading is not part of the measurement
            llm.llm_engine.add_lora(r)
        return llm

    def measure(llm, settings, keep: bool):
        for label, loras in settings:
            tr = schedtrace.run(llm, prompts, sp, loras, label)
            if keep:
                traces.setdefault(label, []).append(tr)

    if interleave:
        engines = {ml: start(ml) for ml, _ in plan}
        for rep in range(reps + 1):  # repetition 0 is the warm-up
            for ml, settings in plan:
                measure(engines[ml], settings, keep=rep > 0)
        engines.clear()
        gc.collect()
    else:
        for ml, settings in plan:
            llm = start(ml)
            for rep in range(reps + 1):
                measure(llm, settings, keep=rep > 0)
            del llm
            gc.collect()
    a, b = traces[mixed(n, n)][-1], traces[mixed(n, 1)][-1]
    return {"adapters": names, "n_prompts": len(prompts), "tokens": tokens, "reps": reps, "max_lora_rank": rank,
            "interleaved": interleave, "rates": {k: [t.tokens_per_second for t in v] for k, v in traces.items()},
            "steps": {k: v[-1].n_steps for k, v in traces.items()},
            "first_step": {k: [t.step_seconds[0] for t in v if t.step_seconds] for k, v in traces.items()},
            "median_step": {k: [statistics.median(t.step_seconds) for t in v if t.step_seconds]
                            for k, v in traces.items()},
            "prompt_tokens": a.prompt_tokens, "mixed_outputs_identical": a.token_ids() == b.token_ids()}


def report(res: dict) -> str:
    n = len(res["adapters"])
    a, b, base = mixed(n, n), mixed(n, 1), BASE_ONLY
    order = "interleaved (both engines alive)" if res.get("interleaved") else "one engine after the other"
    lines = [(f"{res['n_prompts']} prompts x {res['tokens']} tokens (greedy, ignore_eos), adapters: "
              f"{', '.join(res['adapters'])}, max_lora_rank={res['max_lora_rank']}, {res['reps']} repetitions "
              f"after one warm-up, {order}"),
             f"{'setting':<34}{'steps':>7}   tokens/s median (min-max)"]
    for label in (base, a, b):
        lines.append(f"{label:<34}{res['steps'][label]:>7}   {Spread.of(res['rates'][label]).as_rate()}")
    if res.get("median_step"):
        lines.append("step times, median over repetitions (the first step holds the prefill it admitted):")
        for label in (base, a, b):
            first, med = res["first_step"].get(label), res["median_step"].get(label)
            if first and med:
                lines.append(f"  {label:<32}first step {statistics.median(first) * 1000:>7,.0f} ms, "
                             f"median step {statistics.median(med) * 1000:>6.1f} ms")
    lines.append("ratios per repetition, median (min-max):")
    lines += ["  " + s for s in ratio_lines(res["rates"], [(a, base), (b, base), (a, b)])]
    lines.append(f"mixed outputs identical at max_loras={n} and max_loras=1: {res['mixed_outputs_identical']}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default=None, help="tiny | qwen7b | llama3b (default: $COURSE_PROFILE or auto)")
    ap.add_argument("--prompts", type=int, default=32)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--adapters", type=int, default=None, help="how many of the profile's adapters (default all)")
    ap.add_argument("--max-lora-rank", type=int, default=None)
    ap.add_argument("--interleave", dest="interleave", action="store_true", default=None,
                    help="keep both engines alive and alternate settings (default on CPU)")
    ap.add_argument("--sequential", dest="interleave", action="store_false",
                    help="one engine at a time (default on GPU)")
    args = ap.parse_args(argv)

    from course_utils.profiles import apply_env, get_profile
    from course_utils.replay import session

    prof = get_profile(args.profile)
    try:
        names = pick_adapters(prof, args.adapters)
        rank = args.max_lora_rank or prof.max_lora_rank
        check_engine(max(len(names), 1), rank)
    except BenchError as e:
        print(f"bench: {e}", file=sys.stderr)
        return 2
    prof.require_runnable()
    apply_env(prof)
    session.set_current(session.Session("bench", prof.name, "live", recording=False))
    print(f"course_tools.bench.engine: profile {prof.name} ({prof.description}), {session.hardware_description()}, "
          f"vLLM {session.installed_vllm_version()}")
    res = run_benchmark(prof, args.prompts, args.tokens, args.reps, args.adapters, args.max_lora_rank,
                        args.interleave)
    print(report(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
