"""Why a server did not start: the likely cause, from its log and how its process ended."""

from __future__ import annotations

import re
import signal
from pathlib import Path


class ServerError(RuntimeError):
    """The server did not come up; the message gives the likely cause and the end of its log."""

    def __init__(self, message: str, cause: str = "", log_tail: str = ""):
        super().__init__(message)
        self.cause, self.log_tail = cause, log_tail


CAUSES = [
    (re.compile(r"address already in use|errno 98", re.IGNORECASE),
     "port in use: another process listens on this port; let the course pick a free port (port=None)."),
    (re.compile(r"greater than max_lora_rank|max_lora_rank", re.IGNORECASE),
     "adapter rank too high: an adapter's rank is above --max-lora-rank; raise --max-lora-rank to the "
     "smallest allowed value >= that rank."),
    (re.compile(r"size of tensor|shape mismatch|must match the size|does not match the base|"
                r"target_modules.*not.*found|unexpected.*lora", re.IGNORECASE),
     "adapter made for another base: its weight shapes do not fit this base model; use an adapter "
     "trained on this base (course_utils.check_adapter tells before starting)."),
    (re.compile(r"out of memory|OutOfMemory|less than desired|Available memory on node|"
                r"No available memory for the cache blocks|not enough memory", re.IGNORECASE),
     "out of memory: lower --max-model-len, --max-num-seqs, --max-loras/--max-lora-rank or "
     "gpu_memory_utilization (VLLM_CPU_KVCACHE_SPACE on CPU), or free the device."),
    (re.compile(r"No adapter found|adapter_config\.json|does not exist|No such file|not a valid|"
                r"Loading lora .* failed|cannot find", re.IGNORECASE),
     "bad adapter path: a --lora-modules path does not exist or is not a peft LoRA folder "
     "(it needs adapter_config.json and adapter_model.safetensors)."),
]


def diagnose(log: str, returncode: int | None = None) -> str:
    """The likely cause of a failed start, from the server log (and how the process ended)."""
    for pattern, cause in CAUSES:
        if pattern.search(log):
            return cause
    if returncode is not None and returncode < 0:
        return f"killed: the server process was ended by signal {signal.Signals(-returncode).name} during start."
    if returncode is None:
        return "timeout: the server did not answer /health in time (still loading? see the log)."
    return f"the server exited with code {returncode}; see the log lines above."


def log_tail(path: Path | None, n: int = 25) -> str:
    """The last ``n`` lines of a log file ("" when there is none)."""
    if not path or not Path(path).is_file():
        return ""
    return "\n".join(Path(path).read_text(errors="replace").splitlines()[-n:])


def start_failure(label: str, returncode: int | None, log_path: Path | None, ready_timeout: float) -> ServerError:
    """The error for a start that failed: what happened, the likely cause, the end of the log."""
    tail = log_tail(log_path, 25)
    cause = diagnose(log_tail(log_path, 400), returncode)
    if returncode is None:
        what = f"did not answer /health within {ready_timeout:.0f} s"
    elif returncode < 0:
        what = f"was killed by {signal.Signals(-returncode).name} during start"
    else:
        what = f"exited with code {returncode} during start"
    return ServerError(f"vLLM server ({label}) {what}.\nLikely cause: {cause}\n"
                       f"Last lines of its log ({log_path}):\n{tail}", cause=cause, log_tail=tail)
