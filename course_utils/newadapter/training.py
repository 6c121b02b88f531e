"""Training Lab 08's adapter in a child process, with a progress bar and the loss of every step.

The kernel starts ``python -m course_utils.newadapter.child <job.json>`` (:func:`train`); the child trains
with the course's trainer (:func:`course_tools.tinyworld.trainer.train_adapter`, a peft LoRA), tells the kernel
each step's loss and the result (:mod:`course_utils.child`), writes the adapter and exits. The kernel never imports
torch for it: on a 4090 the child holds the card while it trains and gives all of it back when it exits,
before the lab starts a server.

On a GPU profile the child trains as ``python -m course_tools.gpu.train_adapters`` does (bf16 on CUDA,
gradient checkpointing, the base's chat template, the GPU learning rate and batch); on CPU in float32.
The rehearsal (a GPU-shaped profile on CPU) takes the GPU branch with the CPU's device and dtype.

Read mode replays the recorded run (its loss curve, its figures); no adapter is written then.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ..child import heard
from ..arch import quantization
from ..errors import TrainingError
from ..paths import BUILD, REPO, short_path
from ..profiles import Profile
from ..replay import keys
from ..replay.record import recorded
from ..replay.session import active
from . import task

OUT = BUILD / "lab08"
# Learning rate and batch: the tiny world's adapters on CPU; on a GPU those of the course's Qwen adapters
# (course_tools/gpu/train_adapters.py, GPU_TRAIN).
CPU_TRAIN = {"adapter_lr": 5e-3, "batch_size": 16, "threads": 2}


def device_of(prof: Profile) -> tuple[str, str]:
    """(device, dtype) the child trains with: CUDA in bf16 on a GPU (whatever dtype the engine serves in), float32
    on CPU (the rehearsal too)."""
    if prof.hardware == "cuda" and not prof.rehearsed:
        return "cuda", "bfloat16"     # as the course's Qwen adapters are trained (gpu/train_adapters.py)
    return "cpu", "float32"


def job(prof: Profile, name: str, examples: list[tuple[str, str]], rank: int, steps: int,
        target_modules: list[str]) -> dict:
    """What the child is told: the base, the data, the knobs and where to write."""
    device, dtype = device_of(prof)
    gpu_shaped = prof.hardware == "cuda"
    return {"name": name, "base": prof.base_model, "tiny_world": prof.tiny_world, "recipe": "gpu" if gpu_shaped else "cpu",
            "out": str(OUT / name), "pairs": task.training_pairs(examples), "rank": rank, "alpha": 2 * rank,
            "steps": steps, "target_modules": list(target_modules), "device": device, "dtype": dtype,
            "gradient_checkpointing": gpu_shaped}


def _key(prof, name, examples, rank, steps, target_modules, show=None):
    return keys.call("train_adapter", [{"profile": prof.name}, name], {
        "examples": [list(e) for e in examples], "rank": rank, "steps": steps,
        "target_modules": list(target_modules)})


def train(prof: Profile, name: str, examples: list[tuple[str, str]], *, rank: int, steps: int,
          target_modules: list[str], show=None) -> dict:
    """Train in a child process; ``show(step, loss)`` after each step (live only). Returns
    ``{"path", "losses", "seconds", "stats"}``; read mode returns the recorded run."""
    return _train(prof, name, examples, rank, steps, target_modules, show)


@recorded(_key)
def _train(prof, name, examples, rank, steps, target_modules, show=None) -> dict:
    spec = job(prof, name, examples, rank, steps, target_modules)
    out = Path(spec["out"])
    _refuse_quantized(prof)
    if prof.hardware == "cuda":
        from ..server import running

        holding = [s.label for s in running()]
        if holding:                          # on one card, training and a server do not fit together
            raise TrainingError(f"服务 {', '.join(map(repr, holding))} 还在运行，占着显卡：训练要用大半张卡。"
                                f"先停掉它（例如 main.stop()），再运行这一格。")
    for srv, served in loaded_by(out):       # a re-run: the old weights are loaded in a running server
        _unload(srv, served)
    OUT.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{name}.partial")
    shutil.rmtree(tmp, ignore_errors=True)
    job_file, log = OUT / f"{name}.job.json", OUT / f"{name}.train.log"
    job_file.write_text(json.dumps({**spec, "out": str(tmp)}, indent=1))
    t0 = time.monotonic()
    from .. import processes   # live only: a reader's kernel never loads the registry

    trainer = processes.start([sys.executable, "-m", "course_utils.newadapter.child", str(job_file)],
                            stdout=subprocess.PIPE, text=True,
                            die_with_parent=True, cwd=str(REPO))
    losses, result = [], None
    try:
        with open(log, "w") as log_f:
            for line in trainer.proc.stdout:
                said = heard(line)
                if said is None:                 # the trainer's own output: the log
                    log_f.write(line)
                elif said["kind"] == "progress":
                    losses.append(said["loss"])
                    if show:
                        show(said["step"], said["loss"])
                elif said["kind"] == "result":
                    result = said["stats"]
        code = trainer.proc.wait()
    finally:
        trainer.stop()      # interrupted (Ctrl-C, a failed cell): the child goes too; off the registry
    if code != 0 or result is None:
        tail = "".join(log.read_text().splitlines(keepends=True)[-8:]) if log.is_file() else ""
        raise TrainingError(f"训练子进程失败（退出码 {code}）。日志：{short_path(log)}，最后几行：\n{tail}")
    shutil.rmtree(out, ignore_errors=True)
    tmp.replace(out)
    return {"path": str(out), "losses": [round(x, 4) for x in losses],
            "seconds": round(time.monotonic() - t0, 2), "stats": result}


def loaded_by(path: str | Path) -> list[tuple[object, str]]:
    """(server, adapter name) for every running course server that has ``path`` loaded (live only)."""
    session = active()
    if session is not None and session.mode == "replay":
        return []
    import requests

    from ..server import running

    found, want = [], Path(path).resolve()
    for srv in running():
        try:
            models = requests.get(srv.url("/v1/models"), headers=srv.headers, timeout=10).json()["data"]
        except (requests.RequestException, ValueError, KeyError):
            continue
        found += [(srv, m["id"]) for m in models if m.get("root") and Path(m["root"]).resolve() == want]
    return found


def _refuse_quantized(prof: Profile) -> None:
    """peft trains on the bf16 base, not on an int4 copy (``autodl/setup.sh --awq``): say so before the child starts."""
    quant = quantization(prof.base_model)
    if quant:
        raise TrainingError(f"这个基座是量化过的（{quant.get('quant_method', 'quantized')}）：peft 不在 int4 权重上训练。"
                            f"在 bf16 基座上训练（`bash autodl/setup.sh` 不加 --awq，要 24 GB 的卡），"
                            f"训练出的 adapter 也能挂在 AWQ 基座上服务。")


def _unload(srv, served: str) -> None:
    import requests

    r = requests.post(srv.url("/v1/unload_lora_adapter"), headers=srv.headers, json={"lora_name": served}, timeout=60)
    print(f"服务 {srv.label!r} 正加载着这个目录里的旧权重（名字 {served!r}）：重新训练会换掉文件，而服务里的还是旧的，"
          f"所以先把它卸载了（HTTP {r.status_code}）。训练完再加载一次。")


def progress_bar(steps: int):
    """``show(step, loss)`` for :func:`train`: a text progress bar with the latest loss, on stdout (so a saved
    notebook keeps its last state). None in read mode, where nothing trains."""
    session = active()
    if session is not None and session.mode == "replay":
        return None
    from tqdm import tqdm

    # disable=False: a lab sets TQDM_DISABLE for vLLM's own bars
    bar = tqdm(total=steps, desc="train", unit="step", file=sys.stdout, mininterval=1.0, disable=False)

    def show(step: int, loss: float) -> None:
        bar.set_postfix(loss=f"{loss:.4f}", refresh=False)
        bar.update(step - bar.n)
        if step >= steps:
            bar.close()

    return show
