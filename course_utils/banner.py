"""What a lab says when it opens: the banner (mode, profile, hardware, vLLM), and why a profile that cannot
run a lab live opens a recording instead."""

from __future__ import annotations

import re

from .paths import short_path
from .profiles import Profile, get_profile
from .replay import session
from .replay.session import Session
from .tinyworld.tasks import TASKS


def banner(profile: Profile, current: Session) -> str:
    """The banner for the lab's session ``current``."""
    if current.mode == "replay":
        p = current.provenance
        mode = f"读模式（replay），显示 {p.get('date', '?')} 用 `{p.get('command', '?')}` 录制的运行"
        hardware, version = p.get("hardware", "?"), p.get("vllm_version", "?")
    else:
        mode = "实时运行（live）" + (f"，录制到 {short_path(current.path)}" if current.recording else "")
        hardware, version = session.hardware_description(), session.installed_vllm_version()
    return "\n".join([
        f"模式：{mode}",
        f"配置：{profile.name}（{profile.description}）",
        f"硬件：{hardware}",
        f"vLLM 版本：{version}",
    ])


def read_instead_notice(prof: Profile, lab: str, why: str, live_here: str) -> str:
    """What a lab does on a profile that cannot run it live (why, what runs instead, how to run it live)."""
    return "\n".join([
        why,
        (f"这里现场运行的：{lab} 里什么都不跑。它以读模式打开，显示 tiny 配置（{get_profile('tiny').description}）"
         f"录下的运行结果。"),
        *([live_here] if live_here else []),
        "",
    ])


def cannot_run_live(prof: Profile, lab: str, cpu_only: str | None) -> str | None:
    if prof.missing_adapters:
        return read_instead_notice(
            prof, lab,
            f"配置 {prof.name!r} 只有 {len(prof.adapters)} 个 adapter（{', '.join(prof.adapters)}）；本实验要在同一个基座上"
            f"用课程的四个 adapter（{', '.join(TASKS)}）来讲，这里缺 {', '.join(prof.missing_adapters)}。",
            f"这个配置能现场跑的是讲义第 4 节的程序："
            f"`COURSE_PROFILE={prof.name} python labs/multi_lora_offline.py`。\n"
            f"想现场跑本实验：GPU 上用 COURSE_PROFILE=qwen7b（`bash autodl/setup.sh` 会训练四个 adapter），"
            f"CPU 上用 COURSE_PROFILE=tiny。")
    if cpu_only and prof.hardware != "cpu":
        return read_instead_notice(prof, lab, f"配置 {prof.name!r}（{prof.description}）：{cpu_only}",
                                   "想现场跑本实验：在一台 CPU 机器上 `make setup`（tiny 配置）。")
    return None


def no_recording_notice(prof: Profile, lab: str) -> str | None:
    """Read mode on a profile that has no recording of ``lab`` (a reader whose machine has an NVIDIA card and
    the base install selects qwen7b; only the tiny world's recordings ship): the lab shows the tiny recording
    and says so, instead of stopping at its first cell."""
    if prof.name == "tiny" or session.recording_path(prof.name, lab).is_file():
        return None
    return "\n".join([
        (f"读模式：配置 {prof.name!r} 没有 {lab} 的录制（随仓库提供的是 tiny 配置的录制；"
         f"{prof.name} 的录制要在它的硬件上用 `make record PROFILE={prof.name}` 录）。"),
        f"下面显示 tiny 配置（{get_profile('tiny').description}）录下的真实运行结果。",
        "",
    ])


def vllm_version() -> str:
    """``vllm.__version__`` of the installed vLLM (in read mode: of the one that made the recording)."""
    import vllm

    return vllm.__version__


PROVENANCE_LABELS = {"hardware": "硬件", "torch": "torch", "vllm": "vLLM", "date": "日期", "command": "命令",
                     "config": "设置"}


def provenance(p: dict, skip=("config",)) -> str:
    """One line saying where a benchmark recording (``data/recordings/cpu/*.json``) comes from: Lab 03 and Lab 07
    show it above the figures they read from such a recording."""
    said = {k: re.sub(r"(\d+) torch threads", r"torch 用 \1 个线程", str(v)) for k, v in p.items() if k not in skip}
    return "录制信息：" + "；".join(f"{PROVENANCE_LABELS.get(k, k)} {v}" for k, v in said.items())
