"""One tiny-world experiment (EXPERIMENTS.md section 7): a base with some recipe fields changed, its four shelf
adapters, and the fixed measures, written to ``build/exp/<name>/result.json``.

    .venv/bin/python -m course_tools.tinyworld.experiment B1 --set copy_weight=3 --threads 1
    .venv/bin/python -m course_tools.tinyworld.experiment A1 --base-from T1 --set isolate_spaces=true \
        --set adapter_steps=1200                     # adapters only, on T1's base (give the base's fields too)

Nothing in ``data/`` changes: the base and adapters go to ``build/exp/<name>/``. The measures are those of
section 6, on the same rows for every run (``seed`` 7, ``N`` held-out entities per task and kind), greedy,
through transformers + peft (:func:`.quality.run_hf`; vLLM computes the same, ``make eval`` checks that on the
shipped world): right and format of each adapter on trained phrasings and on both held-out families, the bare
base's right (must stay 0), and the base alone copying held-out entities behind terse skill instructions
(:func:`.quality.base_copy`'s measure).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from pathlib import Path

from course_utils.paths import BUILD
from course_utils.profiles import get_profile
from course_utils.tinyworld import tasks
from course_tools.tinyworld import quality, trainer

N = 200
OUT = BUILD / "exp"


def parse_value(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def profile_for(world: Path):
    """The tiny profile pointed at an experiment's base and adapters."""
    tiny = get_profile("tiny")
    return dataclasses.replace(tiny, base_model=str(world / "base"),
                               adapters={t: str(world / "adapters" / t) for t in tasks.TASKS})


def measure(world: Path, n: int = N) -> dict:
    prof = profile_for(world)
    rows = quality.heldout_rows(n) + quality.reworded_rows(n)
    t0 = time.time()
    quality.run_hf(prof, rows)
    for r in rows:
        r.vllm = r.hf               # the summary reads .vllm; here both are transformers + peft's
    table = quality.summarise(rows)
    return {"table": table, "base_copy": quality.base_copy(prof, n), "eval_seconds": round(time.time() - t0),
            "wrong": quality.wrong_examples(rows, 2)}


def run(name: str, changes: dict, threads: int, out: Path = OUT, n: int = N, base_from: str | None = None) -> dict:
    world = out / name
    if base_from:      # adapters only: the other run's base, copied (its recipe must be the one given here)
        import shutil

        if not (out / base_from / "base" / "model.safetensors").is_file():
            raise SystemExit(f"no base at {out / base_from / 'base'}")
        if not (world / "base").exists():
            shutil.copytree(out / base_from / "base", world / "base")
    cfg = trainer.TrainConfig(threads=threads)
    for key, value in changes.items():
        if not hasattr(cfg, key):
            raise SystemExit(f"TrainConfig has no field {key!r}")
        setattr(cfg, key, value)
    t0 = time.time()
    result: dict = {"name": name, "changes": changes, "base_from": base_from, "config": dataclasses.asdict(cfg)}
    if not (world / "base" / "model.safetensors").is_file():
        result["base"] = trainer.train_base(cfg, world / "base")
    result["base_seconds"] = round(time.time() - t0)
    result["adapters"] = {task: trainer.train_adapter(cfg, world / "base", task, world / "adapters" / task)
                          for task in trainer.ADAPTERS}
    result["train_seconds"] = round(time.time() - t0)
    result |= measure(world, n)
    (world / "result.json").write_text(json.dumps(result, indent=1) + "\n")
    return result


def summary_line(result: dict) -> str:
    t = result["table"]
    cell = lambda key: " / ".join(f"{t[task][key]:.0%}" for task in tasks.TASKS)  # noqa: E731
    copy = " / ".join(f"{result['base_copy'][task]:.0%}" for task in tasks.TASKS)
    return (f"{result['name']} {result['changes']}: right trained {cell('adapter_right')}; held-out 1 "
            f"{cell('reworded_right')}; held-out 2 {cell('reworded2_right')}; base right {cell('base_right')}; "
            f"base copy {copy} (sql / support / medical / json)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("name")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                    help="a TrainConfig field and its value (JSON, else a string)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("-n", type=int, default=N, help="held-out entities per task and kind")
    ap.add_argument("--measure-only", action="store_true", help="measure an existing world (no training)")
    ap.add_argument("--base-from", help="train adapters only, on this experiment's base (build/exp/NAME/base)")
    args = ap.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    changes = {k: parse_value(v) for k, v in (s.split("=", 1) for s in args.set)}
    if args.measure_only:
        import torch

        torch.set_num_threads(args.threads)
        result = {"name": args.name, "changes": changes, **measure(OUT / args.name, args.n)}
    else:
        result = run(args.name, changes, args.threads, n=args.n, base_from=args.base_from)
    print(summary_line(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
