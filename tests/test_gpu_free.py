"""The check before an engine or server starts on a GPU, fed nvidia-smi's text (no GPU needed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from course_utils.gpu import free

GPU_IDLE = "0, 24564, 310, 23880\n"
GPU_HELD = "0, 24564, 16210, 7980\n"
APPS = "4242, /root/miniconda3/bin/python, 15890\n777, /usr/bin/Xorg, 20\n"


def test_room_enough_says_nothing():
    assert free.room_problem(GPU_IDLE, "", 0.9) is None


def test_a_second_kernel_is_named_with_what_to_do():
    msg = free.room_problem(GPU_HELD, APPS, 0.9, me=1)
    assert "7.8 GiB 空闲（共 24.0 GiB）" in msg and "gpu_memory_utilization=0.9" in msg and "21.3 GiB" in msg
    assert "pid 4242（/root/miniconda3/bin/python，15.5 GiB）" in msg and "Shut Down Kernel" in msg


def test_this_process_is_not_blamed():
    msg = free.room_problem(GPU_HELD, APPS, 0.9, me=4242)
    assert "pid 4242（/root/miniconda3/bin/python，15.5 GiB）：这是这个内核自己的引擎" in msg and "pid 777" in msg


def test_nothing_to_judge_by_lets_vllm_decide():
    assert free.room_problem("", "", 0.9) is None
    assert free.room_problem("No devices were found\n", "", 0.9) is None
    assert free.room_problem(GPU_HELD, "", 0.9, device=3) is None


def test_parsers_take_nvidia_smis_csv():
    assert free.parse_gpus(GPU_HELD) == [free.GpuMemory(0, 24564, 16210, 7980)]
    assert free.parse_apps(APPS + "99, python, [N/A]\n")[-1] == free.App(99, "python", 0)


def test_ensure_room_raises_with_the_message(monkeypatch):
    monkeypatch.setattr(free.shutil, "which", lambda name: "/usr/bin/nvidia-smi")

    class Done:
        def __init__(self, out):
            self.stdout, self.returncode = out, 0

    monkeypatch.setattr(free.subprocess, "run", lambda argv, **kw: Done(GPU_HELD if "--query-gpu" in argv[1] else APPS))
    with pytest.raises(free.GpuBusy, match="占用者：pid 4242"):
        free.ensure_room(0.9, what="this lab")


def test_without_nvidia_smi_it_is_a_no_op(monkeypatch):
    asked = []
    monkeypatch.setattr(free.shutil, "which", lambda name: asked.append(name))
    monkeypatch.setattr(free.subprocess, "run", lambda argv, **kw: pytest.fail(f"ran {argv}"))
    assert free.ensure_room(0.99) is None
    assert asked == ["nvidia-smi"]


def test_a_gpu_server_checks_for_room_before_it_spawns(monkeypatch):
    from course_utils.profiles import get_profile
    from course_utils.server import process, spawn

    def busy(utilization, device=0, what=""):
        raise free.GpuBusy(f"{what} asks for {utilization}")

    spawned = []
    monkeypatch.setattr(free, "ensure_room", busy)
    monkeypatch.setattr(spawn, "spawn", lambda *a, **k: spawned.append(a))
    srv = process.Server(get_profile("qwen7b"), label="gpu-test")
    with pytest.raises(free.GpuBusy, match="服务 'gpu-test' asks for 0.9"):
        srv._start_live()
    assert not spawned


def test_a_gpu_lab_checks_for_room_when_it_starts(monkeypatch):
    from course_utils import lab
    from course_utils.profiles import Profile

    monkeypatch.setattr(free, "ensure_room", lambda u, device=0, what="": (_ for _ in ()).throw(free.GpuBusy(what)))
    monkeypatch.setattr(Profile, "require_runnable", lambda self: self)
    monkeypatch.setattr(lab, "detect_mode", lambda: "live")
    monkeypatch.setattr(lab, "apply_env", lambda prof: None)
    with pytest.raises(free.GpuBusy, match="本实验"):
        lab.start("00_fake", profile="qwen7b")


# -- never stricter than vLLM (review S5) --------------------------------------------------------------
def test_the_rule_is_vllms_own_fraction_of_the_cuda_total():
    """vLLM 0.26.0 needs utilization x the CUDA total (vllm/v1/worker/utils.py), which leaves out the memory the
    driver reserves: on a 4090 24,564 MiB (nvidia-smi) - 354 MiB reserved = 24,210 MiB = RTX_4090_BYTES. A card
    with 21,950 MiB free is above 0.9 x 24,210 (21,789) and below 0.9 x 24,564 (22,108): vLLM starts, so must we."""
    from course_utils.memory import RTX_4090_BYTES

    assert 24564 - 354 == RTX_4090_BYTES // free.MIB
    assert free.room_problem("0, 24564, 2260, 21950, 354\n", "", 0.9) is None
    assert free.room_problem("0, 24564, 2260, 21950\n", "", 0.9) is None, "an older driver without memory.reserved: a 4090"
    msg = free.room_problem("0, 24564, 2500, 21700, 354\n", "", 0.9, me=1)
    assert msg and "21.3 GiB" in msg, "below vLLM's own threshold the course still speaks first"


# -- a container's nvidia-smi lists no process (review L3) and this kernel's own engine (L4) ------------
FAKES = Path(__file__).parent / "fakes"


def test_in_a_container_the_message_names_the_kernels_and_course_processes_it_can_see(tmp_path, monkeypatch):
    """nvidia-smi (the stand-in, FAKE_GPU=busy-container) reports the memory held and no process, as inside
    AutoDL's Docker container. A real second Jupyter kernel (ipykernel_launcher, started by Jupyter's way:
    JPY_SESSION_NAME names its notebook) and a course-tagged process are running: the message names both,
    with what to do."""
    import subprocess
    import sys

    from course_utils import processes

    monkeypatch.setenv("PATH", f"{FAKES}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_GPU", "busy-container")
    import psutil

    conn = tmp_path / "kernel-test.json"
    # another kernel is no descendant of this one: started through a shell that exits at once (reparented)
    out = subprocess.run(["sh", "-c", f'"{sys.executable}" -m ipykernel_launcher -f "{conn}" >/dev/null 2>&1 & echo $!'],
                         env={**os.environ, "JPY_SESSION_NAME": "labs/02_other_lab.ipynb"}, capture_output=True,
                         text=True, check=True)
    kernel = psutil.Process(int(out.stdout))
    tagged = processes.start([sys.executable, "-c", "import time; time.sleep(60)"], tag=processes.new_tag(),
                             stop_at_exit=False)   # as this kernel's server would be
    try:
        processes.wait_until(lambda: conn.is_file(), 60, what="the second kernel")
        assert kernel.pid not in free.kernel_pids()
        with pytest.raises(free.GpuBusy) as e:
            free.ensure_room(0.9, what="本实验")
    finally:
        tagged.stop()
        processes.stop(kernel.pid)
    msg = str(e.value)
    print(msg)
    assert f"另一个 Jupyter 内核 pid {kernel.pid}（labs/02_other_lab.ipynb；不用了就 kill {kernel.pid}）" in msg
    assert f"pid {tagged.pid}" in msg and "这个内核自己启动的服务" in msg, "this kernel's own tagged process"
    assert "nvidia-smi 没有列出进程" in msg and "Shut Down" in msg


def test_this_kernels_own_engine_is_not_another_labs_kernel():
    """Re-running cell 1 (cu.start) with the kernel's own engine alive: its EngineCore child is this kernel's."""
    import subprocess
    import sys

    import psutil

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        mine = {os.getpid(), *(c.pid for c in psutil.Process().children(recursive=True))}
        msg = free.room_problem(GPU_HELD, f"{child.pid}, VLLM::EngineCore, 15890\n", 0.9, me=mine)
        assert f"pid {child.pid}" in msg and "这个内核自己的引擎" in msg and "另一个实验的内核" not in msg
        assert {os.getpid(), child.pid} <= free.kernel_pids(), "what ensure_room passes: this process and its descendants"
    finally:
        child.kill()
        child.wait()


# -- the banner names the GPU without initialising CUDA (review S4) -------------------------------------
def test_the_banner_names_the_gpu_without_initialising_cuda(monkeypatch):
    """vLLM 0.26.0 switches every engine to ``spawn`` once CUDA is initialised in the kernel
    (vllm/utils/system_utils.py: "CUDA is initialized"). The banner runs in every lab's first cell, so it must
    name the card from nvidia-smi (the stand-in on PATH) and leave torch.cuda uninitialised. torch here is a CPU
    build: ``is_available`` answers as on the GPU box (it does not initialise CUDA either)."""
    torch = pytest.importorskip("torch")
    from course_utils.replay import session

    monkeypatch.setenv("PATH", f"{FAKES}:{os.environ['PATH']}")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert session.hardware_description() == "NVIDIA GeForce RTX 4090, 24 GiB"
    assert torch.cuda.is_initialized() is False
