"""course_utils.chat: the chat templates each profile renders prompts with (shipped for read mode) and the user text
a prompt remembers."""

from course_utils.chat import CHATML_TEMPLATE, chat_prompt, user_text
from course_utils.paths import TINY
from course_utils.profiles import get_profile


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


def test_llama_template_is_shipped():
    # Llama 3.2's own template (data/configs/llama-3.2-3b-instruct/chat_template.jinja). Rendered without
    # bos_token (vLLM's tokenizer adds <|begin_of_text|> itself) and without strftime_now (the template's
    # fixed date then: prompts, and so recordings, do not change from day to day).
    text = chat_prompt(get_profile("llama3b"), "List all airports in Malawi.")
    assert text == ("<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
                    "Today Date: 26 Jul 2024\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n"
                    "List all airports in Malawi.<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n")
