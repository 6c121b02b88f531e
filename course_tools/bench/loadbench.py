"""How long loading one LoRA adapter takes, by its size: ``add_lora`` in the engine and the server's
``/v1/load_lora_adapter``, next to an engine start.

    python -m course_tools.bench.loadbench            # make bench-lora-load (a few minutes)
    python -m course_tools.bench.loadbench --save     # ... and write the recording Lab 03 shows

The seed says swapping a 20 MB adapter is cheap next to swapping a 15 GB model. The shelf's adapters
are 0.1-1.6 MB, so this benchmark writes **random-weight adapters** (timing only, never trained) of
growing rank on all seven projections:

- on the tiny base (hidden 256, 2 layers; float32, like the shelf), ranks 8 to 256;
- on widebench's random Qwen2 with Qwen2.5-1.5B's widths (hidden 1536, 2 layers; bfloat16, like most
  published adapters), ranks 8 to 128: up to about 20 MB.

For each base, one engine (``max_loras=1``, every adapter fits on the host) is started and timed;
each adapter is then added ``repeats`` times under a fresh id, so it is read from disk every time,
and removed again; the figure is the median. Then one ``vllm serve`` per base, with runtime updating
on, loads and unloads each adapter through the HTTP endpoints ``repeats`` times (median of the load
request). Nothing here is extrapolated; :func:`fit` gives the straight line through the measured
points, and a figure beyond them (a 7B adapter) is labelled as extrapolated where it is shown.
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

from course_tools.bench import cli as benchcli
from course_utils.engine.loadbench import ADAPTER_DIR, RECORDED, TINY_RANKS, WIDE_RANKS, starts, table


def make_random_adapter(out: Path, base_dir: Path, rank: int, dtype: str = "float32", seed: int = 0) -> Path:
    """A peft-layout LoRA of rank ``rank`` on all seven projections of every layer of ``base_dir``."""
    import torch
    from safetensors.torch import save_file

    from course_utils.arch import PROJECTIONS, load_config, module_path, projection_shapes

    config = load_config(base_dir)
    g = torch.Generator().manual_seed(seed)
    tensors = {}
    for layer in range(config["num_hidden_layers"]):
        for proj, shape in projection_shapes(config).items():
            key = f"base_model.model.{module_path(layer, proj)}"
            tensors[f"{key}.lora_A.weight"] = (torch.randn(rank, shape.d_in, generator=g) / shape.d_in ** 0.5
                                               ).to(getattr(torch, dtype))
            tensors[f"{key}.lora_B.weight"] = (torch.randn(shape.d_out, rank, generator=g) * 0.01
                                               ).to(getattr(torch, dtype))
    out.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(out / "adapter_model.safetensors"))
    (out / "adapter_config.json").write_text(json.dumps({
        "peft_type": "LORA", "task_type": "CAUSAL_LM", "r": rank, "lora_alpha": 2 * rank, "lora_dropout": 0.0,
        "target_modules": list(PROJECTIONS), "bias": "none", "modules_to_save": None, "use_dora": False,
        "base_model_name_or_path": f"{base_dir.name} (random LoRA weights, timing only)"}, indent=1))
    return out

def adapters_for(label: str, base_dir: Path, ranks, dtype: str) -> dict[int, Path]:
    return {r: make_random_adapter(ADAPTER_DIR / label / f"r{r}", base_dir, r, dtype, seed=r) for r in ranks}

def size_mb(path: Path) -> float:
    return round((Path(path) / "adapter_model.safetensors").stat().st_size / 1e6, 3)

def time_add_lora(prof, adapters: dict[int, Path], repeats: int = 5) -> dict:
    """Engine start (s) and the median ms of ``add_lora`` per adapter, each under a new id (so it is read
    from its files, most likely from the OS page cache after the first time)."""
    from vllm import LLM
    from vllm.lora.request import LoRARequest

    t0 = time.perf_counter()
    llm = LLM(model=prof.base_model, enable_lora=True, max_lora_rank=max(adapters), max_loras=1,
              max_cpu_loras=len(adapters) + 1, **prof.engine_kwargs(use_tqdm_on_load=False))
    start = time.perf_counter() - t0
    next_id, rows = 1, []
    for rank, path in adapters.items():
        ms = []
        for _ in range(repeats):
            req = LoRARequest(f"r{rank}-{next_id}", next_id, str(path))
            t = time.perf_counter()
            llm.llm_engine.add_lora(req)          # a new id: not in the engine's host cache yet, read from files
            ms.append(1000 * (time.perf_counter() - t))
            llm.llm_engine.remove_lora(next_id)
            next_id += 1
        rows.append({"rank": rank, "MB": size_mb(path), "add_lora ms": round(statistics.median(ms), 2)})
    del llm
    gc.collect()
    return {"engine start s": round(start, 2), "rows": rows}

def time_load_endpoint(prof, adapters: dict[int, Path], repeats: int = 5) -> dict:
    """Server start (s) and the median ms of ``POST /v1/load_lora_adapter`` per adapter.

    Each load uses a new name, so the server gives it a new id and the engine reads it (``add_lora``).
    ``/v1/unload_lora_adapter`` afterwards only makes the server forget the name; the weights stay in
    the engine's host cache until its LRU evicts them."""
    import requests

    from course_utils.server.process import Server

    with Server(prof, runtime_updates=True, max_loras=1, max_lora_rank=max(adapters), label="loadbench") as srv:
        rows = []
        for rank, path in adapters.items():
            ms = []
            for k in range(repeats):
                name = f"r{rank}-{k}"
                t = time.perf_counter()
                r = requests.post(srv.url("/v1/load_lora_adapter"), headers=srv.headers, timeout=120,
                                  json={"lora_name": name, "lora_path": str(path)})
                ms.append(1000 * (time.perf_counter() - t))
                r.raise_for_status()
                requests.post(srv.url("/v1/unload_lora_adapter"), headers=srv.headers, timeout=120,
                              json={"lora_name": name}).raise_for_status()
            rows.append({"rank": rank, "MB": size_mb(path), "load endpoint ms": round(statistics.median(ms), 2)})
        return {"server start s": srv.ready_seconds, "rows": rows}

def run(repeats: int = 5, server: bool = True, log=print) -> dict:
    from course_utils.profiles import apply_env, get_profile
    from course_utils.replay import session
    from course_tools.bench.widebench import build_wide

    tiny = get_profile("tiny")
    apply_env(tiny)
    session.set_current(session.Session("loadbench", tiny.name, "live", recording=False))
    wide = replace(tiny, name="wide", base_model=str(build_wide() / "base"), adapters={})
    bases = {"tiny": (tiny, TINY_RANKS, "float32"), "wide": (wide, WIDE_RANKS, "bfloat16")}
    out = {}
    for label, (prof, ranks, dtype) in bases.items():
        adapters = adapters_for(label, Path(prof.base_model), ranks, dtype)
        res = time_add_lora(prof, adapters, repeats)
        log(f"{label}: engine start {res['engine start s']} s; add_lora " +
            ", ".join(f"{r['MB']} MB {r['add_lora ms']} ms" for r in res["rows"]))
        if server:
            srv = time_load_endpoint(prof, adapters, repeats)
            log(f"{label}: server start {srv['server start s']} s; load endpoint " +
                ", ".join(f"{r['MB']} MB {r['load endpoint ms']} ms" for r in srv["rows"]))
            res["server start s"] = srv["server start s"]
            for row, s in zip(res["rows"], srv["rows"]):
                row["load endpoint ms"] = s["load endpoint ms"]
        engine_dtype = prof.engine.get("dtype", "auto")
        out[label] = {"model": describe(label, dtype, engine_dtype), **res}
    session.set_current(None)
    return {"repeats": repeats, "bases": out}

def describe(label: str, dtype: str, engine_dtype: str) -> str:
    """What a base of the recording is, in the words Lab 03 prints above its table."""
    from course_tools.bench.widebench import WIDE

    base = ("hidden 256，2 层" if label == "tiny" else
            f"随机权重的 Qwen2：hidden {WIDE['hidden_size']}，intermediate {WIDE['intermediate_size']}，"
            f"{WIDE['num_hidden_layers']} 层")
    return f"{base}；adapter 文件 {dtype}，引擎 {engine_dtype}（vLLM 加载时把 adapter 转成引擎的 dtype）"


def main(argv=None) -> int:
    def options(p):
        p.add_argument("--repeats", type=int, default=5)
        p.add_argument("--no-server", action="store_true", help="time add_lora only (no vllm serve)")

    def measure(a):
        res = run(a.repeats, server=not a.no_server)
        print(table(res).to_string(index=False))
        print(starts(res).to_string())
        return res

    return benchcli.main(argv, doc=__doc__, module="course_tools.bench.loadbench", recorded=RECORDED, what="figures",
                         options=options, measure=measure)

if __name__ == "__main__":
    sys.exit(main())
