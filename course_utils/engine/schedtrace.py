"""Which requests ran in which engine step: a per-step trace of vLLM's scheduler, and its Gantt chart.

``llm.generate`` hides the engine loop. This module runs the same loop by
hand on the engine inside ``LLM`` (``llm.llm_engine``), the way
``LLM._run_engine`` does, and writes down after every ``step()`` which
requests produced output in that step::

    eng = llm.llm_engine
    for rid, prompt, lora in zip(ids, prompts, lora_requests):
        eng.add_request(rid, prompt, params, lora_request=lora)
    while eng.has_unfinished_requests():
        outs = eng.step()                   # one engine step
        steps.append([o.request_id for o in outs])

A request appears in a step when that step advanced it by one token (its
prefill step gives the first token). With the scheduler's ``max_loras`` rule
(``vllm/v1/core/sched/scheduler.py``: a waiting request whose adapter would
exceed ``max_loras`` in this step is skipped), the trace shows how adapters
take turns. The outputs come from the same engine loop, so a trace also
holds each request's generated text and token ids.

:func:`run` goes through the lab's record/replay layer
(:func:`course_utils.replay.record.recorded`, kind ``"schedtrace"``): live it
drives the engine, with recording on it stores the JSON form of the
:class:`Trace`, and in read mode it hands the recorded trace back. Step
lists and outputs are deterministic for a given engine and workload; only
``seconds`` (and the rate derived from it) varies between live runs.

Nothing here imports vLLM or torch at module level.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..replay import keys
from ..replay.record import recorded

BASE = "base"  # the adapter name shown for rows without a LoRARequest


@dataclass
class Trace:
    """One workload driven through one engine, step by step."""

    label: str
    request_ids: list[str]  # in submission order
    adapters: list[str | None]  # lora_name per request (None: the bare base)
    lora_ids: list[int]  # lora_int_id per request (0: the bare base); vLLM counts adapters by this id
    steps: list[list[str]]  # per engine step, the request ids that produced output in it
    outputs: dict[str, dict] = field(default_factory=dict)  # request id -> text, token_ids, finish_reason
    seconds: float = 0.0  # wall time from the first add_request to the last step
    prompt_tokens: int = 0
    step_seconds: list[float] = field(default_factory=list)  # wall time of each step() call

    # -- sizes and rates -----------------------------------------------------
    @property
    def n_steps(self) -> int:
        return len(self.steps)

    @property
    def output_tokens(self) -> int:
        return sum(len(o["token_ids"]) for o in self.outputs.values())

    @property
    def tokens_per_second(self) -> float:
        return self.output_tokens / self.seconds if self.seconds > 0 else float("nan")

    def texts(self) -> list[str]:
        """Generated text per request, in submission order."""
        return [self.outputs[r]["text"] for r in self.request_ids]

    def token_ids(self) -> list[list[int]]:
        return [list(self.outputs[r]["token_ids"]) for r in self.request_ids]

    # -- what ran together -----------------------------------------------------
    def _by_id(self) -> dict[str, int]:
        return dict(zip(self.request_ids, range(len(self.request_ids))))

    def adapters_per_step(self) -> list[tuple[str, ...]]:
        """Per step, the distinct adapter names that ran (sorted; the base shows as ``'base'``)."""
        pos = self._by_id()
        return [tuple(sorted({self.adapters[pos[r]] or BASE for r in step})) for step in self.steps]

    def lora_ids_per_step(self) -> list[set[int]]:
        """Per step, the distinct LoRA ids that ran (the base, id 0, left out): what max_loras bounds."""
        pos = self._by_id()
        return [{self.lora_ids[pos[r]] for r in step} - {0} for step in self.steps]

    def max_adapters_in_a_step(self) -> int:
        return max((len(s) for s in self.lora_ids_per_step()), default=0)

    def steps_with_several_adapters(self) -> int:
        return sum(1 for s in self.lora_ids_per_step() if len(s) > 1)

    def spans(self) -> dict[str, list[int]]:
        """Request id -> the (0-based) steps in which it produced output."""
        out: dict[str, list[int]] = {r: [] for r in self.request_ids}
        for i, step in enumerate(self.steps):
            for r in step:
                out[r].append(i)
        return out

    def phases(self) -> list[tuple[int, int, tuple[str, ...]]]:
        """Runs of consecutive steps with the same set of adapters: (first step, last step, adapters),
        steps counted from 1 as in the Gantt chart."""
        res: list[tuple[int, int, tuple[str, ...]]] = []
        for i, names in enumerate(self.adapters_per_step(), start=1):
            if res and res[-1][2] == names and res[-1][1] == i - 1:
                res[-1] = (res[-1][0], i, names)
            else:
                res.append((i, i, names))
        return res

    def describe(self, max_lines: int = 12) -> str:
        """The phases as text, e.g. ``第 1-33 步    base + sql``."""
        lines = [(f"{self.label}：{self.n_steps} 个引擎步，{len(self.request_ids)} 个请求，"
                  f"一步里最多 {self.max_adapters_in_a_step()} 个 adapter")]
        ph = self.phases()
        shown = ph if len(ph) <= max_lines else ph[: max_lines - 1]
        spans = [f"第 {a}-{b} 步" for a, b, _ in shown]
        width = max(map(len, spans), default=0)
        for span, (_, _, names) in zip(spans, shown):
            lines.append(f"  {span:<{width}}  {' + '.join(names) if names else '（没有输出）'}")
        if len(shown) < len(ph):
            lines.append(f"  …… 后面还有 {len(ph) - len(shown)} 段，一直到第 {ph[-1][1]} 步")
        return "\n".join(lines)

    # -- JSON -------------------------------------------------------------------
    def to_json(self) -> dict:
        return {"label": self.label, "request_ids": list(self.request_ids), "adapters": list(self.adapters),
                "lora_ids": list(self.lora_ids), "steps": [list(s) for s in self.steps],
                "outputs": {r: {"text": o["text"], "token_ids": list(o["token_ids"]),
                                "finish_reason": o.get("finish_reason")} for r, o in self.outputs.items()},
                "seconds": round(float(self.seconds), 4), "prompt_tokens": int(self.prompt_tokens),
                "step_seconds": [round(float(x), 5) for x in self.step_seconds]}

    @classmethod
    def from_json(cls, data: dict) -> Trace:
        return cls(label=data["label"], request_ids=list(data["request_ids"]), adapters=list(data["adapters"]),
                   lora_ids=[int(i) for i in data["lora_ids"]], steps=[list(s) for s in data["steps"]],
                   outputs={r: dict(o) for r, o in data["outputs"].items()}, seconds=float(data["seconds"]),
                   prompt_tokens=int(data.get("prompt_tokens", 0)),
                   step_seconds=[float(x) for x in data.get("step_seconds", [])])


# ---------------------------------------------------------------------------
# Driving a live engine
# ---------------------------------------------------------------------------
def request_ids_for(lora_requests) -> list[str]:
    """Readable, deterministic request ids: ``00-sql``, ``01-base``, ..."""
    return [f"{i:02d}-{getattr(r, 'lora_name', None) or BASE}" for i, r in enumerate(lora_requests)]


def drive(engine, prompts, sampling_params, lora_requests, request_ids, label: str = "") -> Trace:
    """Add every request to a live ``LLMEngine`` and step it until all are finished (live only)."""
    params = sampling_params.clone()
    kind = type(getattr(params, "output_kind", None))  # vllm.sampling_params.RequestOutputKind
    if hasattr(kind, "DELTA"):
        params.output_kind = kind.DELTA  # each step's new tokens only (generate() asks for FINAL_ONLY)
    outputs = {r: {"text": "", "token_ids": [], "finish_reason": None} for r in request_ids}
    steps: list[list[str]] = []
    prompt_tokens = 0
    step_seconds: list[float] = []
    t0 = time.perf_counter()
    for rid, prompt, lora in zip(request_ids, prompts, lora_requests):
        engine.add_request(rid, prompt, params, lora_request=lora)
    while engine.has_unfinished_requests():
        t_step = time.perf_counter()
        step_outputs = engine.step()
        step_seconds.append(time.perf_counter() - t_step)
        ran = []
        for out in step_outputs:
            rid = out.request_id
            if rid not in outputs:  # not one of ours (should not happen on a private engine)
                continue
            ran.append(rid)
            comp = out.outputs[0]
            o = outputs[rid]
            if not o["token_ids"] and out.prompt_token_ids is not None:
                prompt_tokens += len(out.prompt_token_ids)
            o["text"] += comp.text
            o["token_ids"].extend(int(t) for t in comp.token_ids)
            if comp.finish_reason is not None:
                o["finish_reason"] = comp.finish_reason
        steps.append(sorted(ran, key=request_ids.index))
    seconds = time.perf_counter() - t0
    return Trace(label=label, request_ids=list(request_ids),
                 adapters=[getattr(r, "lora_name", None) for r in lora_requests],
                 lora_ids=[int(getattr(r, "lora_int_id", 0) or 0) for r in lora_requests],
                 steps=steps, outputs=outputs, seconds=seconds, prompt_tokens=prompt_tokens,
                 step_seconds=step_seconds)


def run(llm, prompts, sampling_params, lora_requests=None, label: str = "") -> Trace:
    """Drive ``llm``'s engine over ``prompts`` (one ``LoRARequest`` or ``None`` per prompt), step by step.

    Live: the real loop (:func:`drive`). Recorded for read mode and replayed there, keyed by the
    engine's settings, the prompts, the sampling parameters and the adapters (not by ``label``).
    """
    prompts = list(prompts)
    if lora_requests is None or not isinstance(lora_requests, (list, tuple)):
        lora_requests = [lora_requests] * len(prompts)
    lora_requests = list(lora_requests)
    if len(lora_requests) != len(prompts):
        raise ValueError(f"{len(prompts)} 个 prompt，却有 {len(lora_requests)} 个 lora 请求；每个 prompt 给一个 "
                         f"LoRARequest（或 None）。")
    ids = request_ids_for(lora_requests)
    trace = _traced(llm, prompts, sampling_params, lora_requests, ids, label)
    trace.label = label or trace.label
    return trace


@recorded(lambda llm, prompts, sampling_params, lora_requests, ids, label: keys.schedtrace(
    getattr(llm, "_course_key", None), prompts, sampling_params, lora_requests, label),
    encode=Trace.to_json, decode=Trace.from_json)
def _traced(llm, prompts, sampling_params, lora_requests, ids, label) -> Trace:
    return drive(llm.llm_engine, prompts, sampling_params, lora_requests, ids, label)


# ---------------------------------------------------------------------------
# The Gantt chart
# ---------------------------------------------------------------------------
PALETTE = {BASE: "#9E9E9E", "sql": "#4C72B0", "support": "#DD8452", "medical": "#55A868", "json": "#C44E52"}
_EXTRA = ["#8172B3", "#937860", "#DA8BC3", "#CCB974", "#64B5CD", "#2F4B7C", "#A05195", "#F95D6A"]


def color_for(adapter: str | None, family: str | None = None) -> str:
    """A stable colour per adapter; copies such as ``sql_7`` take their family's colour (``family``
    or the name before the last underscore)."""
    name = adapter or BASE
    if name in PALETTE:
        return PALETTE[name]
    fam = family or name.rsplit("_", 1)[0]
    if fam in PALETTE:
        return PALETTE[fam]
    return _EXTRA[sum(map(ord, name)) % len(_EXTRA)]


def _runs(steps: list[int]) -> list[tuple[int, int]]:
    """Consecutive step indices as (start, length) pairs for broken_barh."""
    out: list[tuple[int, int]] = []
    for s in steps:
        if out and out[-1][0] + out[-1][1] == s:
            out[-1] = (out[-1][0], out[-1][1] + 1)
        else:
            out.append((s, 1))
    return out


def gantt(traces, title: str = "", row_height: float = 0.17, label_rows: bool = True):
    """One panel per trace (a dict label -> Trace, or a list): requests on the y axis, engine steps on
    the x axis (shared), a bar where a request produced a token, a thin line while it waited."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    items = list(traces.items()) if isinstance(traces, dict) else [(t.label, t) for t in traces]
    heights = [max(1.2, row_height * len(t.request_ids) + 0.6) for _, t in items]
    fig, axes = plt.subplots(len(items), 1, figsize=(11, sum(heights) + 0.8), sharex=True, squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    families: dict[str, str] = {}
    for ax, (label, tr) in zip(axes[:, 0], items):
        spans = tr.spans()
        for row, (rid, adapter) in enumerate(zip(tr.request_ids, tr.adapters)):
            steps = spans[rid]
            if not steps:
                continue
            color = color_for(adapter)
            fam = (adapter or BASE) if (adapter or BASE) in PALETTE else (adapter or BASE).rsplit("_", 1)[0]
            families.setdefault(fam, color)
            ax.hlines(row, 0, steps[0], color="#DDDDDD", linewidth=1)
            ax.broken_barh([(s + 0.5, n) for s, n in _runs(steps)], (row - 0.4, 0.8), facecolors=color)
        ax.set_ylim(len(tr.request_ids) - 0.5, -0.5)
        if label_rows and len(tr.request_ids) <= 40:
            ax.set_yticks(range(len(tr.request_ids)), tr.request_ids, fontsize=8)
        else:
            ax.set_yticks([])
        ax.set_ylabel("request")
        ax.set_title(f"{label}: {tr.n_steps} steps", fontsize=10, loc="left")
    axes[-1, 0].set_xlabel("engine step")
    axes[-1, 0].set_xlim(0, max(t.n_steps for _, t in items) + 1)
    handles = [Patch(color=c, label=f) for f, c in families.items()]
    fig.legend(handles=handles, loc="upper right", ncol=len(handles), fontsize=8, frameon=False)
    if title:
        fig.suptitle(title, x=0.01, ha="left", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    return fig
