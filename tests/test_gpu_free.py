"""The check before an engine or server starts on a GPU, fed nvidia-smi's text (no GPU needed)."""

from __future__ import annotations

import pytest

from course_utils.gpu import free

GPU_IDLE = "0, 24564, 310, 23880\n"
GPU_HELD = "0, 24564, 16210, 7980\n"
APPS = "4242, /root/miniconda3/bin/python, 15890\n777, /usr/bin/Xorg, 20\n"


def test_room_enough_says_nothing():
    assert free.check(GPU_IDLE, "", 0.9) is None


def test_a_second_kernel_is_named_with_what_to_do():
    msg = free.check(GPU_HELD, APPS, 0.9, me=1)
    assert "7.8 GiB 空闲（共 24.0 GiB）" in msg and "gpu_memory_utilization=0.9" in msg and "21.6 GiB" in msg
    assert "pid 4242（/root/miniconda3/bin/python，15.5 GiB）" in msg and "Shut Down Kernel" in msg


def test_this_process_is_not_blamed():
    msg = free.check(GPU_HELD, APPS, 0.9, me=4242)
    assert "pid 4242" not in msg and "pid 777" in msg


def test_nothing_to_judge_by_lets_vllm_decide():
    assert free.check("", "", 0.9) is None
    assert free.check("No devices were found\n", "", 0.9) is None
    assert free.check(GPU_HELD, "", 0.9, device=3) is None


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
    from course_utils.server import process

    def busy(utilization, device=0, what=""):
        raise free.GpuBusy(f"{what} asks for {utilization}")

    spawned = []
    monkeypatch.setattr(free, "ensure_room", busy)
    monkeypatch.setattr(process, "_spawn", lambda *a, **k: spawned.append(a))
    srv = process.Server(get_profile("qwen7b"), label="gpu-test")
    with pytest.raises(free.GpuBusy, match="服务 'gpu-test' asks for 0.9"):
        srv._start_live()
    assert not spawned


def test_a_gpu_lab_checks_for_room_when_it_starts(monkeypatch):
    from course_utils import lab
    from course_utils.profiles import Profile

    monkeypatch.setattr(free, "ensure_room", lambda u, device=0, what="": (_ for _ in ()).throw(free.GpuBusy(what)))
    monkeypatch.setattr(Profile, "check", lambda self: self)
    monkeypatch.setattr(lab, "detect_mode", lambda: "live")
    monkeypatch.setattr(lab, "apply_env", lambda prof: None)
    with pytest.raises(free.GpuBusy, match="本实验"):
        lab.start("00_fake", profile="qwen7b")
