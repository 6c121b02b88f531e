"""Throughput of multi-LoRA batches, what Lab 03 shows of it: the workload, the table rows and the ratios.

The benchmark itself (base only, mixed adapters at max_loras=N, mixed at max_loras=1, over several
repetitions) is ``make bench`` (:mod:`course_tools.bench.engine`); Lab 03 builds its throughput table
with :func:`row` and :func:`ratio_lines` from here, on engines it starts itself.

:func:`check_engine` and :func:`pick_adapters` refuse bad settings (a ``max_lora_rank`` vLLM does not
accept, ``max_loras`` below 1, more adapters than the profile has) before any engine starts.
"""

from __future__ import annotations

import statistics
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
                         f"（{', '.join(names)}）。最多用 {len(names)} 个，或者像 Lab 03 第 4 节的长尾实验那样，把同一个 adapter "
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
        raise BenchError("per_adapter 和 base_rows 都必须 >= 0（每个 adapter 几行、几行只用基座）。")
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
    r = {"设置": setting}
    if max_loras is not None:
        r["max_loras"] = max_loras
    r.update({"请求数": len(trace.request_ids), "引擎步数": trace.n_steps,
              "一步里最多几个 adapter": trace.max_adapters_in_a_step(), "输出 token 数": trace.output_tokens,
              "墙钟时间": fmt_seconds(trace.seconds), "吞吐": rate(trace.tokens_per_second)})
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
        return f"{rate(self.median)}（{self.low:,.0f}-{self.high:,.0f}）"

    def as_ratio(self) -> str:
        if self.low == self.high:       # one repetition (a lab's single run): no range to show
            return f"{self.median:.2f}x（只跑了一次）"
        return f"{self.median:.2f}x（{self.low:.2f}-{self.high:.2f}）"


def ratios(a: list[float], b: list[float]) -> Spread:
    """Per-repetition ratios a[i] / b[i] (same repetition, same prompts), summarised."""
    if len(a) != len(b) or not a:
        raise BenchError("算比值要两边的重复次数相同，而且不为 0。")
    return Spread.of(x / y for x, y in zip(a, b))


def ratio_lines(rates: dict[str, list[float]], pairs: list[tuple[str, str]]) -> list[str]:
    """'A / B 的吞吐之比：median（min-max）' for each pair of settings, from per-repetition rates."""
    return [f"{a} / {b} 的吞吐之比：{ratios(rates[a], rates[b]).as_ratio()}" for a, b in pairs]


def wall_breakdown(traces: dict) -> list[dict]:
    """Where each run's wall time went (Lab 03 sections 3 and 4): its first step (the prefill of every prompt it
    admitted at once) against the rest of its steps (decode, plus the prefills of later waves)."""
    rows = []
    for label, t in traces.items():
        s = t.step_seconds
        rest = s[1:]
        rows.append({"设置": label, "引擎步数": t.n_steps, "第一步 (ms)": round(1000 * s[0]) if s else None,
                     "其余各步合计 (ms)": round(1000 * sum(rest)),
                     "其余步的中位数 (ms)": round(1000 * statistics.median(rest), 1) if rest else None,
                     "墙钟 (s)": round(t.seconds, 2),
                     "第一步占墙钟": f"{s[0] / t.seconds:.0%}" if s and t.seconds else None})
    return rows


BASE_ONLY = "只走基座"


