"""Lab 08's training child: ``python -m course_utils.newadapter.child <job.json>``, started by
:func:`course_utils.newadapter.training.train`. It trains with the maintainers' trainer (``course_tools``, which a
child may use and the kernel never imports), tells the kernel each step's loss and the result (:mod:`course_utils.child`)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from pathlib import Path

from ..child import tell
from .training import CPU_TRAIN


def settings(spec: dict) -> dict:
    """The trainer's learning rate, batch and threads for a job: the tiny world's on CPU; on a GPU (or the
    rehearsal, GPU-shaped on CPU) those of the course's Qwen adapters (course_tools/gpu/train_adapters.py)."""
    from course_tools.gpu.train_adapters import GPU_TRAIN

    chosen = {k: GPU_TRAIN[k] for k in CPU_TRAIN} if spec["recipe"] == "gpu" else dict(CPU_TRAIN)   # steps: a knob
    if spec["device"] == "cpu":
        chosen["threads"] = CPU_TRAIN["threads"]
    chosen["batch_size"] = min(chosen["batch_size"], len(spec["pairs"]))
    return chosen


def base_name(spec: dict) -> str:
    """The name written into adapter_config.json instead of a local path."""
    from course_tools.gpu.train_adapters import BASE_NAME as QWEN_NAME
    from course_tools.tinyworld.trainer import BASE_NAME as TINY_NAME

    return TINY_NAME if spec["tiny_world"] else QWEN_NAME


def main(job_file: str) -> int:
    spec = json.loads(Path(job_file).read_text())
    from course_tools.tinyworld.trainer import AdapterSpec, TrainConfig, deterministic_env, train_adapter

    # deterministic cuBLAS on CUDA (the trainer asks torch for deterministic algorithms), as train_adapters does:
    # set here, before torch starts cuBLAS
    os.environ.update(deterministic_env(os.environ))
    cfg = TrainConfig(adapter_steps=spec["steps"], **settings(spec))
    lora = AdapterSpec(spec["rank"], spec["alpha"], tuple(spec["target_modules"]))

    def on_loss(step: int, loss: float) -> None:
        tell(sys.stdout, "progress", step=step, loss=loss)

    if spec["device"] == "cuda":
        from course_tools.gpu.train_adapters import check_gpu

        check_gpu("cuda")      # the card must be free: a kernel's engine or a server still holding it is named
    stats = train_adapter(cfg, Path(spec["base"]), spec["name"], Path(spec["out"]), device=spec["device"],
                          dtype=spec["dtype"], gradient_checkpointing=spec["gradient_checkpointing"],
                          base_name=base_name(spec), chat=True, spec=lora,
                          pairs=[tuple(p[:2]) + (tuple(p[2]),) for p in spec["pairs"]], on_loss=on_loss,
                          checkpoints=tuple(spec.get("checkpoints", ())), checkpoint_dir=spec.get("checkpoint_dir"))
    tell(sys.stdout, "result", stats={**stats, "config": asdict(cfg)})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
