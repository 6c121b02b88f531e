"""The figures Lab 06 (the self-test) quotes, read from what the other labs measured.

The figures are read from the labs' recordings (``data/recordings/<profile>/<lab>.json``:
the recorded ``calls`` and ``facts``), or computed with the memory and FLOP
models, never typed in. Pure Python: runs the same in read mode. The questions
themselves are templates in Lab 06's cells (a teacher edits the notebook).

Each question renders as an HTML ``<details>`` element (the answer opens on
click in Jupyter and in static renderings) and as plain text (the question and
its answer, always visible: what nbval compares and what a terminal shows).
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass

from . import memory
from .engine import flops
from .paths import short_path
from .replay.session import RecordingError, http_cassettes, recording_path

QWEN = "qwen2.5-7b-instruct"


# ---------------------------------------------------------------------------
# Reading recordings
# ---------------------------------------------------------------------------

QUOTED_LABS = ("01_offline_multi_lora", "03_rank_and_max_loras", "04_server_lab", "05_source_tour")
LATER_LABS = ("07_scale_out", "08_your_adapter")   # quoted from the profile's own recording when it has one, else tiny's


def recorded_profile(profile: str) -> str:
    """The profile whose recordings the self-test quotes: ``profile``'s own when it has all of them, else the
    shipped tiny ones, said in a line (a 4090 student before ``make record PROFILE=qwen7b``: only tiny's ship)."""
    missing = [lab for lab in QUOTED_LABS if not recording_path(profile, lab).is_file()]
    if profile == "tiny" or not missing:
        return profile
    print(f"配置 {profile!r} 还没有 {', '.join(missing)} 的录制（在它的硬件上用 `make record PROFILE={profile}` 录），"
          f"所以下面的数字读自随仓库提供的 tiny 配置的录制。")
    return "tiny"


def lab_profile(lab: str, profile: str) -> str:
    """``profile`` when it has ``lab``'s recording, else tiny (Lab 07 records nothing on a GPU profile)."""
    return profile if recording_path(profile, lab).is_file() else "tiny"


def load(lab: str, profile: str = "tiny") -> dict:
    """The recording of ``lab`` (its provenance, facts and calls)."""
    path = recording_path(profile, lab)
    if not path.is_file():
        raise RecordingError(f"自测要引用 {short_path(path)}，这个文件不存在；"
                             f"先录制那一课：`make record PROFILE={profile}`。")
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
    # The lab's heterogeneous batch: the list call with the most adapters (section 2 also runs the page's
    # two-row program, one adapter and the base, before it).
    batch = max((g for g in gens if g["list"] and len(set(g["lora"])) > 1),
                key=lambda g: (len({x for x in g["lora"] if x}), len(g["rows"])))
    later = gens[gens.index(batch) + 1:]
    # Each batch row against the first later call that ran the same prompt with the same adapter alone.
    same = total = 0
    for lora, row in zip(batch["lora"], batch["rows"]):
        alone = next((r for g in later if not g["list"] for lo, r in zip(g["lora"], g["rows"])
                      if lo == lora and r["prompt"] == row["prompt"]), None)
        if alone is not None:
            total += 1
            same += alone["text"] == row["text"]

    if not total:
        raise RecordingError("Lab 01 的录制里找不到逐个 adapter 单独跑的那几次调用，无法比较异构 batch："
                             "重新录制 Lab 01（make record LABS=labs/01_offline_multi_lora.ipynb）。")

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
        "steps": (steps := [len(c["result"]["steps"]) for c in rec["calls"]
                            if c["kind"] == "schedtrace" and "result" in c]),
        "steps_max_loras_4": steps[0] if len(steps) >= 2 else None,
        "steps_default": steps[1] if len(steps) >= 2 else None,
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
    # the recorded lab's lora_linear is 练习 2's blank: vLLM's ops and peft are each compared with the formula
    ops_worst = max((v for k, v in ops.items() if k.startswith(("|bgmv", "|sgmv"))), default=None)
    peft_worst = max((r["|peft - float64 公式| 的最大值"] for r in peft), default=None)
    worst = [v for v in (ops_worst, peft_worst) if v is not None]
    return {
        "merged_adapters": sorted({k[0] for k in merged}), "merged_names": ", ".join(sorted({k[0] for k in merged})),
        "pairs": len(pairs),
        "within_tolerance": bool(worst) and ops.get("容差") is not None and max(worst) <= ops["容差"],
        "same": sum(a == b for _, a, b in pairs),
        "ops_worst": ops_worst, "peft_worst": peft_worst,
        "tolerance": ops.get("容差"),
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
        raise RecordingError(f"自测要引用 Lab 04 录下的拒绝回答，在 "
                             f"{short_path(recording_path(profile, '04_server_lab'))} 旁边没有找到；"
                             f"先录制 Lab 04：`make record PROFILE={profile}`。")
    return out


# ---------------------------------------------------------------------------
# Figures of Lab 07 (routing on a Ray Serve cluster) and Lab 08 (a new adapter)
# ---------------------------------------------------------------------------

def lab07_figures(rec: dict) -> dict:
    """Each recorded pass of Lab 07 section 4 (policy, loads, hit rate, requests per replica) and the cluster's
    shape; ``warm`` holds each policy's pass after the first (aware's is pass 4: pass 1 starts from empty caches)."""
    up = call_result(rec, "up") or {}
    passes = []
    for i, c in enumerate(c for c in rec["calls"] if c["kind"] == "call" and c["args"]["function"] == "run"
                          and "result" in c):
        r, replicas = c["result"], c["result"]["replicas"].values()
        loads = sum(d.get("loads", 0) for d in replicas)
        passes.append({"policy": r["policy"], "pass": i + 1, "loads": loads, "requests": r["client"]["requests"],
                       "hit": 1 - loads / r["client"]["requests"],
                       "split": " / ".join(str(d.get("requests", 0)) for d in replicas)})
    warm = {p["policy"]: p for p in passes[1:]}
    return {"passes": passes, "warm": warm, "replicas": up.get("replicas"), "k": up.get("adapters per replica"),
            "adapters": len(up.get("adapters in the bucket", [])),
            "most": max(warm, key=lambda name: warm[name]["loads"]) if warm else None,
            "fewest": min(warm, key=lambda name: warm[name]["loads"]) if warm else None}


def lab08_figures(rec: dict) -> dict:
    """Lab 08's new adapter on the held-out dates (the base alone, then the adapter, in the recorded batches),
    its knobs and size, and the pre-check's refusal of too small a ``max_lora_rank``."""
    import re

    from .newadapter import task

    def scored(rows):
        dates = [re.search(r"\d{4}-\d{2}-\d{2}", r["prompt"])[0] for r in rows]
        return task.score([r["text"] for r in rows], dates)

    gens = generations(rec)
    knobs = rec["facts"].get("input:KNOBS", {})
    adapter = rec["facts"].get("adapter stamp", {})
    base = next((g for g in gens if not g["engine"].get("enable_lora")), None)
    mixed = next((g for g in gens if g["engine"].get("enable_lora")
                  and any(lo and lo[0] == adapter.get("name") for lo in g["lora"])), None)
    # section 3.1: every checkpoint of two trainings as an adapter of its own, named "<name>-<KNOBS|OTHER>-<step>"
    curves: dict = {}
    for g in gens:
        for lo, r in zip(g["lora"], g["rows"]):
            m = re.fullmatch(rf"{re.escape(str(adapter.get('name')))}-(KNOBS|OTHER)-(\d+)", lo[0]) if lo else None
            if m:
                curves.setdefault(m[1], {}).setdefault(int(m[2]), []).append(r)
    refused = next((c["error"]["message"] for c in rec["calls"] if c["kind"] == "call"
                    and c["args"]["function"] == "precheck" and "error" in c), None)
    out = {"examples": len(rec["facts"].get("input:EXAMPLES", [])), "rank": knobs.get("rank"),
           "steps": knobs.get("steps"), "refused": refused,
           "adapter_mb": sum(t["bytes"] for t in adapter.get("tensors", {}).values()) / 1e6}   # a file size: MB
    out["curves"] = {label: {step: scored(rows)["share"] for step, rows in sorted(steps.items())}
                     for label, steps in curves.items()}
    out["other"] = rec["facts"].get("input:OTHER")
    if base:
        out["base"] = scored(base["rows"])
    if mixed:
        out["adapter"] = scored([r for lo, r in zip(mixed["lora"], mixed["rows"]) if lo and lo[0] == adapter.get("name")])
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
        "thirty_full_gib": 30 * fig["weights_bf16"] / memory.GiB,
        "thirty_lora_gib": (fig["weights_bf16"] + 30 * thirty["adapter"]) / memory.GiB,
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
        src = f"<p><small>出处：{html.escape(self.source)}</small></p>" if self.source else ""
        page = (f"<details style='margin:0.6em 0'><summary><b>Q{self.number}.</b> {html.escape(self.question)}"
                f" <i>（点击展开答案）</i></summary><div style='margin:0.4em 1.2em'>{paragraphs}{src}</div></details>")
        return {"text/html": page, "text/plain": str(self)}

    def __str__(self):
        tail = f"\n   [出处：{self.source}]" if self.source else ""
        return f"Q{self.number}. {self.question}\n答：{self.answer}{tail}"


# ---------------------------------------------------------------------------
# All of it, for the notebook's templates
# ---------------------------------------------------------------------------

def figures(profile: str) -> dict:
    """Every figure the self-test quotes, by source: ``l01``, ``l03``, ``l04``, ``l05`` (the labs' recordings of
    ``profile``), ``l07``, ``l08`` (``profile``'s when it has them, else tiny's: :func:`lab_profile`) and ``m`` (the memory and FLOP models). Lab 06's cells hold the questions, as templates over
    these (``"{m[weights_gib]:.2f} GiB".format(**f)``); a figure a template needs and the recordings lack raises
    RecordingError naming the lab to record again."""
    out = {"l01": lab01_figures(load("01_offline_multi_lora", profile)),
           "l03": lab03_figures(load("03_rank_and_max_loras", profile)),
           "l04": lab04_figures(profile),
           "l05": lab05_figures(load("05_source_tour", profile)),
           "l07": lab07_figures(load("07_scale_out", lab_profile("07_scale_out", profile))),
           "l08": lab08_figures(load("08_your_adapter", lab_profile("08_your_adapter", profile))),
           "m": model_figures()}
    missing = {"01_offline_multi_lora": [k for k in ("support_reused_id", "sql_id1", "support_right_id",
                                                      "single_request_adapter", "steps_max_loras_4",
                                                      "steps_default") if out["l01"].get(k) is None],
               "03_rank_and_max_loras": [] if out["l03"].get("e2e") else ["e2e (make bench-lora-e2e)"],
               "04_server_lab": [k for k in ("rank", "twice") if k not in out["l04"]],
               "05_source_tour": [k for k in ("ops_worst", "peft_worst", "tolerance") if out["l05"].get(k) is None]
                                 + ([] if out["l05"].get("moved") else ["moved"]),
               "07_scale_out": [k for k in ("blind", "hash", "aware") if k not in out["l07"]["warm"]],
               "08_your_adapter": [k for k in ("base", "adapter", "refused", "rank") if out["l08"].get(k) is None]}
    missing = {lab: keys for lab, keys in missing.items() if keys}
    if missing:
        raise RecordingError("自测要引用的数字在这些录制里找不到：" + "；".join(
            f"{lab}（{', '.join(keys)}）" for lab, keys in missing.items())
            + f"。重新录制这几课：`make record PROFILE={profile}`。")
    return out
