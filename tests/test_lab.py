import pytest

from course_utils import lab
from course_utils.chat import CHATML_TEMPLATE, chat_prompt, user_text
from course_utils.paths import TINY
from course_utils.profiles import ProfileError, get_profile


def test_tiny_template_is_the_one_the_trainer_ships():
    # the trainer writes CHATML_TEMPLATE into the tokenizer; the shipped file must be that text
    assert (TINY / "base" / "chat_template.jinja").read_text() == CHATML_TEMPLATE
    assert chat_prompt(get_profile("tiny"), "hi") == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_user_text_is_remembered_not_parsed():
    prompt = chat_prompt(get_profile("qwen7b"), "Count the airports of Peru.")
    assert user_text(prompt) == "Count the airports of Peru."
    assert user_text("<|im_start|>user\nnever rendered here<|im_end|>\n") is None


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
