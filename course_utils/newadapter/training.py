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

import sys

from ..errors import TrainingError  # noqa: F401 -- what train raises, named here for the lab
from ..paths import BUILD
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
        target_modules: list[str], checkpoints: tuple[int, ...] = ()) -> dict:
    """What the child is told: the base, the data, the knobs and where to write (the adapter in ``out``, and the
    adapter as it stood after each step in ``checkpoints`` in ``checkpoint_dir/step-N``)."""
    device, dtype = device_of(prof)
    gpu_shaped = prof.hardware == "cuda"
    return {"name": name, "base": prof.base_model, "tiny_world": prof.tiny_world, "recipe": "gpu" if gpu_shaped else "cpu",
            "out": str(OUT / name), "pairs": task.training_pairs(examples), "rank": rank, "alpha": 2 * rank,
            "steps": steps, "target_modules": list(target_modules), "device": device, "dtype": dtype,
            "gradient_checkpointing": gpu_shaped, "checkpoints": sorted(set(checkpoints)),
            "checkpoint_dir": str(OUT / f"{name}.steps")}


def _key(prof, name, examples, rank, steps, target_modules, show=None, checkpoints=()):
    knobs = {"examples": [list(e) for e in examples], "rank": rank, "steps": steps,
             "target_modules": list(target_modules)}
    if checkpoints:
        knobs["checkpoints"] = sorted(set(checkpoints))
    return keys.call("train_adapter", [{"profile": prof.name}, name], knobs)


def train(prof: Profile, name: str, examples: list[tuple[str, str]], *, rank: int, steps: int,
          target_modules: list[str], show=None, checkpoints: tuple[int, ...] = ()) -> dict:
    """Train in a child process; ``show(step, loss)`` after each step (live only). Returns
    ``{"path", "losses", "seconds", "stats", "checkpoints"}`` (``checkpoints``: ``{step: path}``, the adapter as it
    stood after each of those steps); read mode returns the recorded run."""
    return _train(prof, name, examples, rank, steps, target_modules, show, tuple(checkpoints))


@recorded(_key)
def _train(prof, name, examples, rank, steps, target_modules, show=None, checkpoints=()) -> dict:
    from .launch import train_in_child

    return train_in_child(prof, name, examples, rank, steps, target_modules, show, checkpoints)


def progress_bar(steps: int):
    """``show(step, loss)`` for :func:`train`: a text progress bar with the latest loss, on stdout (so a saved
    notebook keeps its last state). None in read mode, where nothing trains."""
    session = active()
    if session is not None and session.mode == "replay":
        return None
    from tqdm import tqdm

    # disable=False: a lab sets TQDM_DISABLE for vLLM's own bars
    bar = tqdm(total=steps, desc="训练", unit="步", file=sys.stdout, mininterval=1.0, disable=False)

    def show(step: int, loss: float) -> None:
        bar.set_postfix(loss=f"{loss:.4f}", refresh=False)
        bar.update(step - bar.n)
        if step >= steps:
            bar.close()

    return show
