import pytest

from course_utils import lab
from course_utils.tinyworld import trainer as tinyworld
from course_utils.profiles import ProfileError, get_profile
from course_utils.chat import chat_prompt


def test_chat_prompt_renders_the_models_own_template():
    assert chat_prompt(get_profile("tiny"), "hi") == tinyworld.chat_prompt("hi")


def test_qwen_template_is_shipped_for_read_mode():
    text = chat_prompt(get_profile("qwen7b"), "List all airports in Malawi.")
    assert text.startswith("<|im_start|>system\n") and text.endswith("<|im_start|>assistant\n")


def test_mode_env(monkeypatch):
    monkeypatch.setenv("COURSE_MODE", "replay")
    assert lab.detect_mode() == "replay"
    monkeypatch.setenv("COURSE_MODE", "sometimes")
    with pytest.raises(ProfileError, match="use 'live', 'replay'"):
        lab.detect_mode()


def test_live_without_vllm_says_what_to_do(monkeypatch):
    monkeypatch.setenv("COURSE_MODE", "live")
    monkeypatch.setattr(lab, "_real_vllm_installed", lambda: False)
    with pytest.raises(ProfileError, match="vLLM is not installed.*make setup.*COURSE_MODE=replay"):
        lab.detect_mode()


def test_seconds_format_matches_the_sanitizer():
    import re
    from pathlib import Path

    cfg = (Path(__file__).parent / "sanitize.cfg").read_text().splitlines()
    pattern = [ln.split(": ", 1)[1] for ln in cfg if ln.startswith("regex:")][0]
    assert re.fullmatch(pattern, lab.fmt_seconds(12.3456))
