"""The chat format, in one place: from a user message to the prompt string a model expects.

``llm.generate`` takes raw prompt strings; an instruct model answers best when
the prompt is wrapped in its chat template. :func:`chat_prompt` renders the
template shipped with the profile's model (``chat_template.jinja`` or
``tokenizer_config.json``) with jinja2, as transformers does, so it also works
in read mode without torch.

- :data:`CHATML_TEMPLATE` is the tiny world's template (ChatML, as Qwen uses,
  without a system prompt). The trainer writes it into the tiny tokenizer,
  which is how it reaches ``data/tiny/base/chat_template.jinja``.
- :func:`user_text` gives back the user message a prompt was rendered from in
  this process: the record layer stores it beside each recorded prompt, so the
  self-test quotes the user's words without parsing a template back.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

# prompt string -> the user message it was rendered from (filled by render()).
_USER_OF: dict[str, str] = {}


@lru_cache(maxsize=None)
def _compiled(source: str):
    import jinja2

    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    return env.from_string(source)


def template_of(folder: str | Path) -> str:
    """The chat template shipped in a model folder (``chat_template.jinja``, else ``tokenizer_config.json``)."""
    folder = Path(folder)
    jinja_file = folder / "chat_template.jinja"
    if jinja_file.is_file():
        return jinja_file.read_text()
    cfg_file = folder / "tokenizer_config.json"
    source = json.loads(cfg_file.read_text()).get("chat_template") if cfg_file.is_file() else None
    if not source:
        raise FileNotFoundError(f"no chat template in {folder} (chat_template.jinja or tokenizer_config.json)")
    return source


def render(template: str, user: str, system: str | None = None) -> str:
    """One user turn (and an optional system message) rendered with ``template``, ready for generation."""
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]
    prompt = _compiled(template).render(messages=messages, add_generation_prompt=True)
    _USER_OF[prompt] = user
    return prompt


def chat_prompt(profile, user: str, system: str | None = None) -> str:
    """The prompt string for one user turn with the profile's own chat template, ready for ``llm.generate``."""
    return render(template_of(profile.config_dir), user, system)


def user_text(prompt: str) -> str | None:
    """The user message ``prompt`` was rendered from in this process (None if it was not rendered here)."""
    return _USER_OF.get(prompt)
