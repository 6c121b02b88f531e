"""A student's budget on an AutoDL RTX 4090: what each lab makes the GPU do, and an estimate of the time.

    python -m course_tools.budget                 # the table, GPU hours only
    python -m course_tools.budget --price 2.0     # ... and the cost at your price per hour (CNY)

The *counts* are computed, not estimated: every engine start, server start, generated token and
engine step a lab makes is in its recording (``data/recordings/tiny/<lab>.json``), so the table stays
true when a lab changes. Calls made by cells that skip on a GPU profile (``prof.skips(...)``: the
demonstrations that need the tiny base) are left out.

The *seconds per item* on a 4090 are estimates (预估): nothing here has run on a 4090. They are
in ``data/configs/gpu_estimates.json``, each with what it rests on, and every one can be overridden on the command line.
No price is assumed: AutoDL's price changes and was not checked here (no internet on the machine that
wrote this); pass yours with ``--price``. The instance is billed while it is on, reading included, so
the table is the floor of what a lab costs, not the bill.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

from course_tools.notebooks import code_cells
from course_utils.paths import RECORDINGS, REPO
from course_utils.newadapter.estimate import estimates
from course_utils.replay.session import cell_id

LABS = REPO / "labs"

# The estimates (seconds and rates on a 4090, none measured) live in data/configs/gpu_estimates.json, each with what
# it rests on; Lab 08 reads the same file (course_utils.newadapter.loop_estimate).
_E = estimates()
ENGINE_START_S, SERVER_EXTRA_S, STEP_S = _E["engine_start_s"], _E["server_extra_s"], _E["step_s"]
INSTALL_S, DOWNLOAD_MB_S = _E["install_s"], _E["download_mb_s"]
TRAIN_STEP_S, TRAIN_LOAD_S = _E["train_step_s"], _E["train_load_s"]
HOST_LOAD_S, WRITE_MB_S = _E["host_load_s"], _E["write_mb_s"]
HOST_LOADING_CALLS = {"compare_with_peft": 1, "merge_adapter": 1}   # Lab 05's checks (engine/lora_check.py)
WRITING_CALLS = ("merge_adapter",)                                  # writes one full copy of the base


@dataclass
class LabWork:
    lab: str
    engine_starts: int = 0
    server_starts: int = 0
    steps: int = 0            # engine steps of generation (decode-bound)
    tokens: int = 0           # tokens generated
    skipped_on_gpu: int = 0   # calls in cells that skip on a GPU profile
    host_loads: int = 0       # base loads into host memory (transformers: Lab 05's peft check and merge)
    written_gb: float = 0.0   # GB written to disk (Lab 05's merged copy of the base)
    train_steps: int = 0      # optimizer steps of adapter training (Lab 08's own adapter)
    train_loads: int = 0      # base loads for training (one per trained adapter)

    def seconds(self, engine_start=ENGINE_START_S, server_extra=SERVER_EXTRA_S, step=STEP_S,
                host_load=HOST_LOAD_S, write_mb_s=WRITE_MB_S, train_step=TRAIN_STEP_S, train_load=TRAIN_LOAD_S) -> float:
        return (self.engine_starts * engine_start + self.server_starts * (engine_start + server_extra)
                + self.steps * step + self.host_loads * host_load + self.written_gb * 1000 / write_mb_s
                + self.train_steps * train_step + self.train_loads * train_load)


def _base_gb() -> float:
    """GB of the qwen7b base in bf16 (what the merged copy writes), from the shipped config."""
    from course_utils.memory import load_config, weight_bytes
    from course_utils.paths import CONFIGS

    return weight_bytes(load_config(CONFIGS / "qwen2.5-7b-instruct"), "bfloat16").total / 1e9


GPU_SKIP_MARKS = ("prof.skips(", 'if prof.hardware == "cpu":')   # tiny-base demos; CPU-only sections (Lab 01 §6)


def _skipping_cells(notebook: Path) -> set[str]:
    """Recording cell ids of the code cells that skip on a GPU profile."""
    return {cell_id(src) for src in code_cells(notebook) if any(m in src for m in GPU_SKIP_MARKS)}


def lab_work(notebook: Path, recordings: Path = RECORDINGS / "tiny") -> LabWork:
    """What ``notebook`` makes an engine do, from its recording."""
    work = LabWork(notebook.stem)
    rec_file = recordings / f"{notebook.stem}.json"
    if not rec_file.is_file():
        return work
    skipping = _skipping_cells(notebook)
    for call in json.loads(rec_file.read_text())["calls"]:
        if call.get("cell") in skipping:
            work.skipped_on_gpu += 1
            continue
        kind, result = call["kind"], call.get("result")
        if kind == "LLM":
            work.engine_starts += 1
        elif kind == "server_start" and "result" in call:
            # a start that failed is not counted: Lab 04's port clash fails before vLLM loads anything
            # (0.26.0 binds its port first, entrypoints/openai/api_server.py run_server)
            work.server_starts += 1
        elif kind == "generate" and result:
            lengths = [len(o["token_ids"]) for r in result for o in r["outputs"]]
            work.tokens += sum(lengths)
            work.steps += max(lengths, default=0)     # one batch: as many steps as its longest answer
        elif kind == "schedtrace" and result:
            work.steps += len(result["steps"])                 # one entry per engine step
            work.tokens += sum(len(o["token_ids"]) for o in result["outputs"].values())
        elif kind == "call" and call["args"]["function"] in HOST_LOADING_CALLS and "result" in call:
            work.host_loads += HOST_LOADING_CALLS[call["args"]["function"]]
            if call["args"]["function"] in WRITING_CALLS:
                work.written_gb += round(_base_gb(), 1)
        elif kind == "call" and call["args"]["function"] == "train_adapter" and "result" in call:
            work.train_steps += int(call["args"]["kwargs"]["steps"])     # Lab 08 trains on the GPU, in a child
            work.train_loads += 1
        elif kind == "call" and isinstance(result, dict) and call["args"]["function"] in ("run_load", "burst"):
            kw = call["args"]["kwargs"]
            n = len(result.get("rows") or result.get("requests") or [])
            per = int(kw.get("max_tokens", 16))
            work.tokens += n * per
            work.steps += -(-n * per // max(1, int(kw.get("concurrency", n) or n)))   # requests share steps
    return work


MINUTES = "预估 GPU 分钟"   # table()'s column of estimated minutes (README.md's budget table shows it)


def table(labs=None, price: float | None = None, **costs):
    import pandas as pd

    rows = []
    for nb in labs or sorted(LABS.glob("[0-9]*.ipynb")):
        w = lab_work(Path(nb))
        s = w.seconds(**costs)
        row = {"实验": w.lab, "起引擎": w.engine_starts, "起服务": w.server_starts,
               "生成 token": w.tokens, "引擎步数": w.steps, MINUTES: round(s / 60, 1),
               "主机加载基座": w.host_loads, "写盘 (GB)": w.written_gb, "训练步数": w.train_steps}
        if price is not None:
            row["按你的价格"] = round(s / 3600 * price, 2)
        rows.append(row)
    return pd.DataFrame(rows)


def setup_table(install=INSTALL_S, download_mb_s=DOWNLOAD_MB_S, train_step=TRAIN_STEP_S, train_load=TRAIN_LOAD_S):
    """The one-time setup of the qwen7b profile: what it moves and trains (from the setup's code), and time."""
    import pandas as pd

    from course_tools.gpu import download
    from course_tools.gpu.train_adapters import GPU_TRAIN, TASKS
    from course_tools.tinyworld.trainer import ADAPTERS

    nbytes = sum(item.approx_bytes for item in download.plan_items("qwen7b"))
    per_task = {t: max(1, round(GPU_TRAIN["adapter_steps"] * ADAPTERS[t].steps_factor)) for t in TASKS}
    steps = sum(per_task.values())   # json trains twice as long (its quoting needs it), as on the tiny world
    rows = [
        {"准备步骤": "装环境（vLLM、torch）", "工作量": "整个环境", "要 GPU": "否",
         "预估分钟": round(install / 60, 1)},
        {"准备步骤": "下载基座", "工作量": f"{nbytes / 1e9:.1f} GB", "要 GPU": "否",
         "预估分钟": round(nbytes / (download_mb_s * 1e6) / 60, 1)},
        {"准备步骤": "训练 adapter", "工作量": " + ".join(f"{n}" for n in per_task.values()) + " 步",
         "要 GPU": "是", "预估分钟": round((steps * train_step + len(TASKS) * train_load) / 60, 1)},
    ]
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------
# The cost box each lab opens with (issue 55): generated here, written into the lab by `make cost-boxes`
# (and by `make record`), and checked against this function by tests/test_budget.py.
# ---------------------------------------------------------------------------

COST_BOX_TAG = "cost-box"
EXAMPLE_PRICE = _E["example_price_cny_per_hour"]   # an example, not AutoDL's price (gpu_estimates.json says why)
RUNS_ON_GPU = {   # what a lab does on a 4090 that its counts do not say
    "06_self_test": "什么都不启动，只读前几课的录制",
    "07_scale_out": "在 GPU 配置上它打开 CPU 上录下的结果（Ray 集群只在 CPU 上现场跑），不占 GPU",
}


def cpu_minutes(notebook: Path) -> float:
    """How long the committed run of ``notebook`` took, first cell to last (the timestamps Jupyter keeps in each
    cell's metadata when `make record` runs it on this machine), in minutes."""
    from datetime import datetime

    from course_tools import notebooks

    stamps = [c.metadata["execution"] for c in notebooks.read(notebook).cells
              if c.cell_type == "code" and c.metadata.get("execution")]
    if not stamps:
        return 0.0
    t = lambda s: datetime.fromisoformat(s.rstrip("Z"))
    return (t(stamps[-1]["shell.execute_reply"]) - t(stamps[0]["iopub.execute_input"])).total_seconds() / 60


def cost_box(notebook: Path, price: float = EXAMPLE_PRICE) -> str:
    """The lab's first box: minutes here on CPU, GPU minutes and yuan on an AutoDL 4090, what runs where."""
    w = lab_work(notebook)
    gpu_min = w.seconds() / 60
    minutes = cpu_minutes(notebook)                 # to the half minute: 87 s and 90 s both read 1.5
    cpu = "不到 1 分钟" if minutes < 1 else f"约 {math.floor(2 * minutes + 0.5) / 2:g} 分钟"
    if w.lab in RUNS_ON_GPU:
        gpu = f"AutoDL RTX 4090 上：{RUNS_ON_GPU[w.lab]}。"
        tail = ""
    else:
        work = "、".join(x for x in [f"起 {w.engine_starts} 次 7B 引擎" if w.engine_starts else "",
                                    f"起 {w.server_starts} 次服务" if w.server_starts else "",
                                    f"训练 {w.train_steps} 步" if w.train_steps else "",
                                    f"把基座读进主机内存 {w.host_loads} 次" if w.host_loads else ""] if x)
        gpu = (f"AutoDL RTX 4090 上（`qwen7b` 配置）：{work}，预估约 {gpu_min:.1f} GPU 分钟；按每小时 ¥{price:g} 的"
               f"示例价格约 ¥{round(gpu_min, 1) / 60 * price:.2f}（费用 = GPU 分钟 ÷ 60 × 你在 AutoDL 控制台上看到的每小时价格；"
               f"这个示例价格没有核实过）。实例开着就计费，读和想的时间也算。")
        tail = "GPU 上的时间都是预估（`python -m course_tools.budget`），这门课的 GPU 路径还没有在 4090 上实际跑过。"
    return f"> **这一课的成本**　这台机器上（CPU，`tiny` 配置）：上一次录制从第一格跑到最后一格{cpu}。{gpu}{tail}"


def write_cost_boxes(labs=None) -> list[str]:
    """Put each lab's cost box right after its title cell (replacing the one there); the labs changed."""
    import nbformat

    from course_tools import notebooks

    changed = []
    for nb_path in labs or sorted(LABS.glob("[0-9]*.ipynb")):
        nb = notebooks.read(nb_path)
        box = cost_box(nb_path)
        at = next((i for i, c in enumerate(nb.cells) if COST_BOX_TAG in c.metadata.get("tags", [])), None)
        if at is None:
            cell = nbformat.v4.new_markdown_cell(box, metadata={"tags": [COST_BOX_TAG]})
            nb.cells.insert(1, cell)
        elif nb.cells[at].source == box:
            continue
        else:
            nb.cells[at].source = box
        nbformat.write(nb, nb_path)
        changed.append(nb_path.name)
    return changed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="学生在 AutoDL RTX 4090 上的预算：每个实验让 GPU 做多少事，以及预估的时间。")
    ap.add_argument("--price", type=float, help="你的每 GPU 小时价格（例如 AutoDL 控制台上的人民币价格）")
    ap.add_argument("--engine-start", type=float, default=ENGINE_START_S, help="每次起 7B 引擎的秒数")
    ap.add_argument("--server-extra", type=float, default=SERVER_EXTRA_S, help="每次起服务多出的秒数")
    ap.add_argument("--step", type=float, default=STEP_S, help="每个解码步的秒数")
    ap.add_argument("--install", type=float, default=INSTALL_S, help="装环境的秒数")
    ap.add_argument("--download-mb-s", type=float, default=DOWNLOAD_MB_S, help="下载速度，MB/s")
    ap.add_argument("--train-step", type=float, default=TRAIN_STEP_S, help="每个训练步的秒数")
    ap.add_argument("--write-cost-boxes", action="store_true", help="把每个实验开头的成本框按现在的录制重写一遍")
    a = ap.parse_args(argv)
    if a.write_cost_boxes:
        print("成本框已更新：" + ("、".join(write_cost_boxes()) or "没有变化"))
        return 0
    setup = setup_table(a.install, a.download_mb_s, a.train_step)
    print("一次性准备（bash autodl/setup.sh；装环境和下载用不到 GPU，可以在 AutoDL 的无卡模式里做：`--no-gpu`）：")
    print(setup.to_string(index=False))
    print(f"（预估：装环境 {a.install:.0f} 秒，下载 {a.download_mb_s:.0f} MB/s，每个训练步 {a.train_step:.1f} 秒，"
          f"每次加载基座 {TRAIN_LOAD_S:.0f} 秒；都没有在 AutoDL 上实测。装环境的时间按有卡的实例估：无卡模式只有"
          f"不到一个 CPU 核、约 2 GB 内存，装得慢得多，没有预估）\n")
    print("各个实验：")
    t = table(price=a.price, engine_start=a.engine_start, server_extra=a.server_extra, step=a.step,
              train_step=a.train_step)
    print(t.to_string(index=False))
    total = t[MINUTES].sum()
    print(f"\n合计：机器自己的工作约 {total:.0f} GPU 分钟（预估：每次起引擎 {a.engine_start:.0f} 秒，每次起服务再多 "
          f"{a.server_extra:.0f} 秒，每步 {1000 * a.step:.0f} 毫秒，每次把基座读进主机内存 {HOST_LOAD_S:.0f} 秒，"
          f"写盘 {WRITE_MB_S:.0f} MB/s，每个训练步 {a.train_step:.1f} 秒，训练时每次加载基座 {TRAIN_LOAD_S:.0f} 秒；"
          f"都没有在 4090 上实测）。实例开着就计费：再加上你读代码、想问题的时间。")
    cheap = t.sort_values(MINUTES)
    print("最省钱、可以先现场跑的：" + "、".join(cheap["实验"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
