"""Turn a user message into the prompt string the base model expects, with the model's own chat template.

``llm.generate`` takes raw prompt strings; an instruct model answers best when
the prompt is wrapped in its chat template. This renders the template shipped
with the model (``chat_template.jinja`` or ``tokenizer_config.json``) with
jinja2, as transformers does, so it also works in read mode without torch.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from .profiles import Profile


@lru_cache(maxsize=None)
def _template(folder: str):
    import jinja2

    folder_path = Path(folder)
    jinja_file = folder_path / "chat_template.jinja"
    if jinja_file.is_file():
        source = jinja_file.read_text()
    else:
        cfg_file = folder_path / "tokenizer_config.json"
        source = json.loads(cfg_file.read_text()).get("chat_template") if cfg_file.is_file() else None
    if not source:
        raise FileNotFoundError(f"no chat template in {folder} (chat_template.jinja or tokenizer_config.json)")
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    return env.from_string(source)


def chat_prompt(profile: Profile, user: str, system: str | None = None) -> str:
    """The prompt string for one user turn, ready for ``llm.generate``."""
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]
    return _template(profile.config_dir).render(messages=messages, add_generation_prompt=True)
