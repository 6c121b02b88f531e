"""Lab 08's training run, live: refuse what cannot train, unload stale weights from a running server, start the
training child (:mod:`.child`), read its progress and result (:mod:`course_utils.child`) and put the adapter in
place. :func:`course_utils.newadapter.training.train` is the recorded call; read mode never imports this module.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ..arch import quantization
from ..child import heard
from ..errors import TrainingError
from ..paths import REPO, short_path
from ..profiles import Profile
from ..replay.session import active
from . import training


def train_in_child(prof, name, examples, rank, steps, target_modules, show=None, checkpoints=()) -> dict:
    spec = training.job(prof, name, examples, rank, steps, target_modules, checkpoints)
    out, steps_out = Path(spec["out"]), Path(spec["checkpoint_dir"])
    _refuse_quantized(prof)
    if prof.hardware == "cuda":
        from ..server import running

        holding = [s.label for s in running()]
        if holding:                          # on one card, training and a server do not fit together
            raise TrainingError(f"服务 {', '.join(map(repr, holding))} 还在运行，占着显卡：训练要用大半张卡。"
                                f"先停掉它（例如 main.stop()），再运行这一格。")
    for srv, served in loaded_by(out):       # a re-run: the old weights are loaded in a running server
        _unload(srv, served)
    training.OUT.mkdir(parents=True, exist_ok=True)
    tmp, tmp_steps = out.with_name(f".{name}.partial"), steps_out.with_name(f".{steps_out.name}.partial")
    for d in (tmp, tmp_steps):
        shutil.rmtree(d, ignore_errors=True)
    job_file, log = training.OUT / f"{name}.job.json", training.OUT / f"{name}.train.log"
    job_file.write_text(json.dumps({**spec, "out": str(tmp), "checkpoint_dir": str(tmp_steps)}, indent=1))
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
    shutil.rmtree(steps_out, ignore_errors=True)
    if spec["checkpoints"]:
        tmp_steps.replace(steps_out)
    return {"path": str(out), "losses": [round(x, 4) for x in losses],
            "seconds": round(time.monotonic() - t0, 2), "stats": result,
            "checkpoints": {str(s): str(steps_out / f"step-{s}") for s in spec["checkpoints"]}}


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
        raise TrainingError(f"这个基座是量化过的（{quant.get('quant_method', '量化方式不明')}）：peft 不在 int4 权重上训练。"
                            f"在 bf16 基座上训练（`bash autodl/setup.sh` 不加 --awq，要 24 GB 的卡），"
                            f"训练出的 adapter 也能挂在 AWQ 基座上服务。")


def _unload(srv, served: str) -> None:
    import requests

    r = requests.post(srv.url("/v1/unload_lora_adapter"), headers=srv.headers, json={"lora_name": served}, timeout=60)
    print(f"服务 {srv.label!r} 正加载着这个目录里的旧权重（名字 {served!r}）：重新训练会换掉文件，而服务里的还是旧的，"
          f"所以先把它卸载了（HTTP {r.status_code}）。训练完再加载一次。")
