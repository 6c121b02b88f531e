"""course_utils.lab and course_utils.mode: how cu.start() opens a lab (profile, live or read mode, what it says when a
profile cannot run), and the shared seconds format."""

import sys
from pathlib import Path

import pytest

from course_utils import lab, mode, timing
from course_utils.profiles import ProfileError

FAKES = Path(__file__).parent / "fakes"   # a stand-in nvidia-smi


def test_mode_env(monkeypatch):
    monkeypatch.setenv("COURSE_MODE", "replay")
    assert mode.detect_mode() == "replay"
    monkeypatch.setenv("COURSE_MODE", "sometimes")
    with pytest.raises(ProfileError, match="用 'live'（实时运行）、'replay'（读模式）"):
        mode.detect_mode()


def test_live_without_vllm_says_what_to_do(monkeypatch):
    monkeypatch.setenv("COURSE_MODE", "live")
    monkeypatch.setattr(mode, "real_vllm_installed", lambda: False)
    with pytest.raises(ProfileError, match="没有安装 vLLM.*make setup.*COURSE_MODE=replay"):
        mode.detect_mode()


def test_profile_without_the_four_adapters_opens_the_lab_in_read_mode(monkeypatch, capsys):
    # llama3b has the seed's one SQL adapter: the lab says what it runs (nothing live) and shows the tiny
    # recording instead of raising ProfileError at the first prof.adapter("support").
    monkeypatch.setenv("COURSE_PROFILE", "llama3b")
    monkeypatch.setenv("COURSE_MODE", "live")
    monkeypatch.delenv("COURSE_RECORD", raising=False)
    monkeypatch.setattr(lab, "use_replay_vllm", lambda: None)   # this process keeps its real vLLM
    try:
        prof = lab.start("01_offline_multi_lora")
        from course_utils.replay import session

        assert prof.name == "tiny" and session.current().mode == "replay" and session.current().profile == "tiny"
    finally:
        from course_utils.replay import session

        session.set_current(None)
    out = capsys.readouterr().out
    assert "配置 'llama3b' 只有 1 个 adapter（sql）" in out
    assert "这里缺 support, medical, json" in out
    assert "这里现场运行的：01_offline_multi_lora 里什么都不跑" in out
    assert "COURSE_PROFILE=llama3b python labs/multi_lora_offline.py" in out
    assert "模式：读模式（replay）" in out


def test_recording_a_profile_that_runs_no_lab_records_nothing(monkeypatch, capsys):
    # make record PROFILE=qwen7b on a 4090 must get past Lab 07 (CPU only) and llama3b past every lab:
    # the lab opens the tiny recording in read mode, records nothing, and the record loop skips it.
    monkeypatch.setenv("COURSE_PROFILE", "llama3b")
    monkeypatch.setenv("COURSE_MODE", "live")
    monkeypatch.setenv("COURSE_RECORD", "1")
    monkeypatch.setattr(lab, "use_replay_vllm", lambda: None)
    from course_utils.replay import session

    try:
        prof = lab.start("03_rank_and_max_loras")
        assert prof.name == "tiny" and session.current().mode == "replay" and not session.current().recording
    finally:
        session.set_current(None)
    assert not session.recording_path("llama3b", "03_rank_and_max_loras").exists()
    assert "没有要录的" in capsys.readouterr().out


def test_a_gpu_profile_without_recordings_opens_the_tiny_recording(monkeypatch, capsys):
    # A reader with an NVIDIA card and the base install gets qwen7b in read mode; only tiny's recordings ship.
    monkeypatch.setenv("COURSE_PROFILE", "qwen7b")
    monkeypatch.setenv("COURSE_MODE", "replay")
    monkeypatch.setattr(lab, "use_replay_vllm", lambda: None)
    from course_utils.replay import session

    assert not session.recording_path("qwen7b", "02_memory_layout").exists()
    try:
        prof = lab.start("02_memory_layout")
        assert prof.name == "tiny" and session.current().mode == "replay"
    finally:
        session.set_current(None)
    out = capsys.readouterr().out
    assert "配置 'qwen7b' 没有 02_memory_layout 的录制" in out and "make record PROFILE=qwen7b" in out


def test_a_card_and_no_torch_selects_qwen7b(monkeypatch, tmp_path):
    """How the GPU profile is chosen without torch (read mode): nvidia-smi on PATH and /dev/nvidia0."""
    import os

    from course_utils import profiles

    monkeypatch.setitem(sys.modules, "torch", None)          # import torch raises ImportError
    monkeypatch.setenv("PATH", f"{FAKES}:/usr/bin:/bin")
    monkeypatch.delenv("COURSE_PROFILE", raising=False)
    real_exists = os.path.exists
    monkeypatch.setattr(profiles.os.path, "exists", lambda p: p == "/dev/nvidia0" or real_exists(p))
    assert profiles.get_profile().name == "qwen7b"
    monkeypatch.setattr(profiles.os.path, "exists", lambda p: False if p == "/dev/nvidia0" else real_exists(p))
    assert profiles.get_profile().name == "tiny"


def test_only_a_live_profile_with_a_card_gets_one_engine_per_card(monkeypatch):
    # L4: the hook that releases a re-run cell's old engine is for hardware "cuda" (qwen7b, llama3b, the
    # rehearsal); the tiny profile's labs may hold several in-process engines, and read mode runs no vLLM.
    from course_utils.engine import one_per_card
    from course_utils.replay import session

    installed = []
    monkeypatch.setattr(one_per_card, "one_engine_per_card", lambda prof: installed.append(prof.name))
    monkeypatch.setattr(lab, "apply_env", lambda prof: None)
    monkeypatch.setattr(lab, "quiet_libraries", lambda: None)
    monkeypatch.setattr(lab, "use_replay_vllm", lambda: None)
    monkeypatch.delenv("COURSE_RECORD", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")            # no nvidia-smi: the free-memory check has nothing to ask
    try:
        for name, mode in (("tiny", "live"), ("rehearsal", "replay"), ("rehearsal", "live")):
            monkeypatch.setenv("COURSE_PROFILE", name)
            monkeypatch.setenv("COURSE_MODE", mode)
            lab.start("02_memory_layout", quiet=True)
            session.set_current(None)
    finally:
        session.set_current(None)
    assert installed == ["rehearsal"]


def test_seconds_format_matches_the_sanitizer():
    import re
    from pathlib import Path

    cfg = (Path(__file__).parent / "sanitize.cfg").read_text().splitlines()
    pattern = [ln.split(": ", 1)[1] for ln in cfg if ln.startswith("regex:")][0]
    assert re.fullmatch(pattern, timing.fmt_seconds(12.3456))


def test_a_shown_table_says_yes_no_and_a_dash_for_missing():
    import pandas as pd

    import course_utils as cu

    t = pd.DataFrame({"ok": [True, False], "n": [1, 0], "parent": ["base", float("nan")]})
    assert cu.shown(t).to_dict("list") == {"ok": ["是", "否"], "n": [1, 0], "parent": ["base", "—"]}
    assert t["ok"].dtype == bool                      # the table the cell computes with is unchanged
