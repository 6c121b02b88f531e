"""Review finding L4: re-running an ``llm = LLM(...)`` cell on a profile whose card holds one engine.

``llm = LLM(...)`` builds the new engine before the old one is released (the old object stays bound to ``llm``
until the assignment completes). On a 24 GB card the old 7B engine still holds about 21 GiB, so vLLM 0.26.0
refuses to start the new one (``vllm/v1/worker/utils.py``: "Free memory on device ... less than desired GPU memory
utilization"). On CPU nothing runs out, so the test watches the real mechanism instead: Lab 01's own engine cell,
run twice in one kernel on the rehearsal profile (multiprocess engine, hardware "cuda"), while a thread here
polls the kernel's EngineCore processes every 50 ms; two alive at once is what fails on a 4090.

The kernel's ``nvidia-smi`` is a stand-in that counts those same EngineCore processes (each holds the profile's
``gpu_memory_utilization`` of a 4090), so the course's own free-memory check judges the real state of the kernel.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import uuid

import pytest
from nbformat.v4 import new_code_cell, new_notebook

from course_utils import processes
from course_tools import labrun, notebooks
from course_utils.paths import REPO

PROBE = "COURSE_L4_PROBE"

# A 4090 whose used memory is what the kernel's EngineCore processes hold: 0.9 x 24,564 MiB each (the profile's
# gpu_memory_utilization), found by the probe marker every process of the kernel inherits.
NVIDIA_SMI = f"""#!{sys.executable}
import os, sys
import psutil
probe = os.environ.get("{PROBE}", "")
cores = []
for p in psutil.process_iter():
    try:
        if "EngineCore" in " ".join(p.cmdline()) and probe and p.environ().get("{PROBE}") == probe:
            cores.append(p.pid)
    except psutil.Error:
        pass
args = " ".join(sys.argv[1:])
total, each = 24564, 22108
used = 310 + each * len(cores)
if args == "-L":
    print("GPU 0: NVIDIA GeForce RTX 4090 (UUID: GPU-00000000-0000-0000-0000-000000000000)")
elif "--query-gpu=index,memory.total,memory.used,memory.free" in args:
    print(f"0, {{total}}, {{min(used, total)}}, {{max(total - used, 0)}}")
elif "--query-compute-apps=pid,process_name,used_memory" in args:
    for pid in cores:
        print(f"{{pid}}, VLLM::EngineCore, {{each}}")
else:
    print("stand-in nvidia-smi: no answer for: " + args, file=sys.stderr)
    sys.exit(2)
"""


def engine_cores(probe: str) -> list[int]:
    """The EngineCore processes of the kernel that carries ``probe``."""
    found = []
    for p in processes.find(env={PROBE: probe}):
        try:
            if "EngineCore" in " ".join(p.cmdline()):
                found.append(p.pid)
        except Exception:  # noqa: BLE001 - it ended meanwhile
            pass
    return found


class Watcher(threading.Thread):
    """Polls the kernel's EngineCore processes every 50 ms: each one's first and last sighting, and the most
    alive at once."""

    def __init__(self, probe: str):
        super().__init__(daemon=True)
        self.probe, self.done = probe, threading.Event()
        self.seen: dict[int, list[float]] = {}
        self.most = 0

    def run(self):
        while not self.done.is_set():
            alive = engine_cores(self.probe)
            now = time.monotonic()
            self.most = max(self.most, len(alive))
            for pid in alive:
                self.seen.setdefault(pid, [now, now])[1] = now
            time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.live
def test_rerunning_lab01s_engine_cell_releases_the_first_engine_before_the_second_starts(tmp_path):
    lab = notebooks.read(REPO / "labs" / "01_offline_multi_lora.ipynb")
    code = [c.source for c in lab.cells if c.cell_type == "code"]
    start_cell = next(s for s in code if "cu.start(" in s)
    engine_cell = next(s for s in code if "llm = LLM(" in s)
    assert 'cu.start("01_offline_multi_lora")' in start_cell and "llm = LLM(" in engine_cell
    use_it = ('outs = llm.generate([cu.chat_prompt(prof, "Hello")], SamplingParams(temperature=0, max_tokens=2), '
              'use_tqdm=False)\nprint("answered:", len(outs[0].outputs[0].token_ids))')
    nb = new_notebook(cells=[new_code_cell(start_cell), new_code_cell(engine_cell),
                             new_code_cell(engine_cell),   # the student runs the engine cell again
                             new_code_cell(use_it)])
    path = tmp_path / "rerun.ipynb"
    notebooks.write(nb, path)

    fakes = tmp_path / "bin"
    fakes.mkdir()
    (fakes / "nvidia-smi").write_text(NVIDIA_SMI)
    (fakes / "nvidia-smi").chmod(0o755)
    probe = uuid.uuid4().hex
    env = {"PATH": f"{fakes}:{os.environ['PATH']}", "COURSE_PROFILE": "rehearsal", "COURSE_MODE": "live",
           "COURSE_RECORD": "0", "PYTHONPATH": str(REPO), PROBE: probe, "VLLM_CPU_KVCACHE_SPACE": "1",
           "OMP_NUM_THREADS": "1", "VLLM_CPU_OMP_THREADS_BIND": "nobind"}
    watcher = Watcher(probe)
    watcher.start()
    try:
        labrun.execute(path, tmp_path / "out.ipynb", env)
    finally:
        time.sleep(0.2)
        watcher.done.set()
        watcher.join()
        processes.stop(env={PROBE: probe}, grace=5)       # nothing of the kernel outlives the test

    out = notebooks.read(tmp_path / "out.ipynb")
    said = "".join(o.get("text", "") for c in out.cells for o in c.get("outputs", []))
    assert "answered: 2" in said                           # the second engine started and answers
    assert len(watcher.seen) == 2, f"two engines built, EngineCore processes seen: {watcher.seen}"
    (first, (_, gone1)), (second, (born2, _)) = sorted(watcher.seen.items(), key=lambda kv: kv[1][0])
    assert watcher.most == 1, (f"at most {watcher.most} EngineCore processes of the kernel alive at once: the first "
                               f"(pid {first}) last seen {gone1 - born2:+.2f} s after the second (pid {second}) "
                               f"appeared")
    assert gone1 < born2
    assert "一张卡只放一个引擎" in said                       # the notice says what was released and why
