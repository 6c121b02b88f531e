"""Throughput of multi-LoRA batches: base only, mixed adapters at max_loras=N, mixed at max_loras=1.

    python -m course_utils.engine.bench                        # tiny profile on CPU (make bench)
    python -m course_utils.engine.bench --prompts 32 --tokens 64 --reps 5
    COURSE_PROFILE=qwen7b python -m course_utils.engine.bench   # on the GPU instance

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
time (``--sequential``). Lab 03 builds its throughput table with
:func:`row` and :func:`ratio_lines` from here.

:func:`check_engine` and :func:`pick_adapters` refuse bad settings (a
``max_lora_rank`` vLLM does not accept, ``max_loras`` below 1, more
adapters than the profile has) before any engine starts.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
from dataclasses import dataclass

from ..errors import CourseError
from ..arch import MAX_LORA_RANKS, smallest_rank_that_fits
from ..timing import fmt_seconds
from ..tinyworld.tasks import TASKS, make_examples


class BenchError(CourseError, ValueError):
    """A benchmark or experiment setting that cannot run; the message says why and what to use."""


# ---------------------------------------------------------------------------
# Checking settings before an engine starts
# ---------------------------------------------------------------------------
def check_engine(max_loras: int, max_lora_rank: int, max_cpu_loras: int | None = None) -> None:
    """Raise BenchError unless vLLM's LoRAConfig would accept these values (checked without vLLM)."""
    if isinstance(max_loras, bool) or not isinstance(max_loras, int) or max_loras < 1:
        raise BenchError(f"max_loras={max_loras!r}：vLLM 要一个 >= 1 的整数（LoRAConfig.max_loras 是一个引擎步里"
                         f"最多几个不同的 adapter，默认 1）。想让 adapter 一个接一个地跑就用 1，要混着跑就用混合的 adapter 数。")
    if max_lora_rank not in MAX_LORA_RANKS:
        fit = smallest_rank_that_fits(max_lora_rank) if isinstance(max_lora_rank, int) else None
        hint = f"；装得下秩 {max_lora_rank} 的最小允许值是 {fit}" if fit else ""
        raise BenchError(f"max_lora_rank={max_lora_rank!r} 不是 vLLM 接受的取值（LoRAConfig.max_lora_rank 只能是 "
                         f"{', '.join(map(str, MAX_LORA_RANKS))} 之一）{hint}。")
    if max_cpu_loras is not None and max_cpu_loras < max_loras:
        raise BenchError(f"max_cpu_loras（{max_cpu_loras}）必须 >= max_loras（{max_loras}）：一步里用到的每个 adapter，"
                         f"vLLM 也都留在主机内存的缓存里。")


def pick_adapters(profile, n: int | None = None) -> list[str]:
    """The first ``n`` adapters of the profile (all when ``n`` is None); BenchError if it has fewer."""
    names = list(profile.adapters)
    if n is None:
        return names
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise BenchError(f"adapter 个数 {n!r}：给一个 0 到 {len(names)} 之间的整数。")
    if n > len(names):
        raise BenchError(f"实验要 {n} 个不同的 adapter，而配置 {profile.name!r} 只有 {len(names)} 个"
                         f"（{', '.join(names)}）。最多用 {len(names)} 个，或者像 Lab 03 的长尾实验那样，把同一个 adapter "
                         f"用新的 id 再登记几份（LoRARequest(f'sql_{{i}}', new_id, 同一个路径)）。")
    return names[:n]


# ---------------------------------------------------------------------------
# Workloads
# ---------------------------------------------------------------------------
def _task_of(adapter: str) -> str:
    """The synthetic task whose prompts fit an adapter (the course's adapters are named by task)."""
    fam = adapter.rsplit("_", 1)[0] if adapter not in TASKS else adapter
    return fam if fam in TASKS else "chat"


def workload(adapters, per_adapter: int, base_rows: int = 0, seed: int = 0) -> list[tuple[str | None, str]]:
    """``(adapter or None, user message)`` rows: ``per_adapter`` held-out prompts of each adapter's task,
    interleaved (sql, support, ..., sql, support, ...), with ``base_rows`` plain chat rows (adapter None)
    spread through the queue. Deterministic for a given seed."""
    adapters = list(adapters)
    if per_adapter < 0 or base_rows < 0:
        raise BenchError("per_adapter and base_rows must be >= 0")
    cols = {a: [e.prompt for e in make_examples(_task_of(a), per_adapter, "heldout", seed)] for a in adapters}
    base = [e.prompt for e in make_examples("chat", base_rows, "heldout", seed)]
    rows: list[tuple[str | None, str]] = []
    rounds = max(per_adapter, 1)
    for i in range(per_adapter):
        rows.extend((a, cols[a][i]) for a in adapters)
        # spread the base rows over the rounds
        lo, hi = i * base_rows // rounds, (i + 1) * base_rows // rounds
        rows.extend((None, base[j]) for j in range(lo, hi))
    if per_adapter == 0:
        rows.extend((None, b) for b in base)
    return rows


# ---------------------------------------------------------------------------
# Rows, summaries, ratios
# ---------------------------------------------------------------------------
def rate(tokens_per_second: float) -> str:
    """Rates are printed as '<n> tok/s' so the nbval sanitizer can mask them (tests/sanitize.cfg)."""
    return f"{tokens_per_second:,.0f} tok/s"


def row(setting: str, trace, max_loras: int | None = None) -> dict:
    """One table row for a step trace: the deterministic counts, then wall time and rate (masked by nbval)."""
    r = {"setting": setting}
    if max_loras is not None:
        r["max_loras"] = max_loras
    r.update({"requests": len(trace.request_ids), "engine steps": trace.n_steps,
              "max adapters in a step": trace.max_adapters_in_a_step(), "output tokens": trace.output_tokens,
              "wall time": fmt_seconds(trace.seconds), "throughput": rate(trace.tokens_per_second)})
    return r


def show_table(rows: list[dict]) -> None:
    """Display rows as an HTML table (no padded plain-text copy, so masked timings compare cleanly)."""
    import pandas as pd
    from IPython.display import HTML, display

    display(HTML(pd.DataFrame(rows).to_html(index=False)))


@dataclass
class Spread:
    median: float
    low: float
    high: float

    @classmethod
    def of(cls, values) -> Spread:
        v = [float(x) for x in values]
        return cls(statistics.median(v), min(v), max(v))

    def as_rate(self) -> str:
        return f"{rate(self.median)} ({self.low:,.0f}-{self.high:,.0f})"

    def as_ratio(self) -> str:
        return f"{self.median:.2f}x ({self.low:.2f}-{self.high:.2f})"


def ratios(a: list[float], b: list[float]) -> Spread:
    """Per-repetition ratios a[i] / b[i] (same repetition, same prompts), summarised."""
    if len(a) != len(b) or not a:
        raise BenchError("ratios need the same, non-zero number of repetitions on both sides")
    return Spread.of(x / y for x, y in zip(a, b))


def ratio_lines(rates: dict[str, list[float]], pairs: list[tuple[str, str]]) -> list[str]:
    """'A / B: median (min-max)' for each pair of settings, from per-repetition rates."""
    return [f"{a} / {b}: {ratios(rates[a], rates[b]).as_ratio()}" for a, b in pairs]


# ---------------------------------------------------------------------------
# The benchmark
# ---------------------------------------------------------------------------
BASE_ONLY = "base only"


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

    from . import schedtrace
    from ..chat import chat_prompt

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


def step_profile(trace) -> str:
    """'first step 4,186 ms, median step 75.4 ms' (the first step holds the prefill of what it admitted)."""
    s = trace.step_seconds
    if not s:
        return "no step timings"
    return f"first step {s[0] * 1000:,.0f} ms, median step {statistics.median(s) * 1000:.1f} ms"


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

    from ..replay import session
    from ..profiles import apply_env, get_profile

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
    print(f"course_utils.engine.bench: profile {prof.name} ({prof.description}), {session.hardware_description()}, "
          f"vLLM {session.installed_vllm_version()}")
    res = run_benchmark(prof, args.prompts, args.tokens, args.reps, args.adapters, args.max_lora_rank,
                        args.interleave)
    print(report(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
