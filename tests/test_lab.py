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


def test_llama_template_is_shipped():
    # Llama 3.2's own template (data/configs/llama-3.2-3b-instruct/chat_template.jinja). Rendered without
    # bos_token (vLLM's tokenizer adds <|begin_of_text|> itself) and without strftime_now (the template's
    # fixed date then: prompts, and so recordings, do not change from day to day).
    text = chat_prompt(get_profile("llama3b"), "List all airports in Malawi.")
    assert text == ("<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
                    "Today Date: 26 Jul 2024\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n"
                    "List all airports in Malawi.<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n")


def test_profile_without_the_four_adapters_opens_the_lab_in_read_mode(monkeypatch, capsys):
    # llama3b has the seed's one SQL adapter: the lab says what it runs (nothing live) and shows the tiny
    # recording instead of raising ProfileError at the first prof.adapter("support").
    monkeypatch.setenv("COURSE_PROFILE", "llama3b")
    monkeypatch.setenv("COURSE_MODE", "live")
    monkeypatch.delenv("COURSE_RECORD", raising=False)
    monkeypatch.setattr(lab, "_use_replay_vllm", lambda: None)   # this process keeps its real vLLM
    try:
        prof = lab.start("01_offline_multi_lora")
        from course_utils.replay import session

        assert prof.name == "tiny" and session.current().mode == "replay" and session.current().profile == "tiny"
    finally:
        from course_utils.replay import session

        session.set_current(None)
    out = capsys.readouterr().out
    assert "profile 'llama3b' has 1 adapter(s) (sql)" in out
    assert "support, medical, json are missing" in out
    assert "Runs live here: nothing in 01_offline_multi_lora" in out
    assert "COURSE_PROFILE=llama3b python labs/multi_lora_offline.py" in out
    assert "mode:     replay" in out


def test_recording_a_profile_that_runs_no_lab_says_so(monkeypatch):
    monkeypatch.setenv("COURSE_PROFILE", "llama3b")
    monkeypatch.setenv("COURSE_RECORD", "1")
    with pytest.raises(ProfileError, match="does not run 03_rank_and_max_loras live.*nothing to record"):
        lab.start("03_rank_and_max_loras")
