"""Why a server did not start: the likely cause, from its log and how its process ended."""

from __future__ import annotations

import re
import signal
from pathlib import Path

from ..errors import CourseError
from ..loopback import LOOPBACK_HOSTS, proxies


class ServerError(CourseError, RuntimeError):
    """The server did not come up; the message gives the likely cause and the end of its log."""

    def __init__(self, message: str, cause: str = "", log_tail: str = ""):
        super().__init__(message)
        self.cause, self.log_tail = cause, log_tail


CAUSES = [
    (re.compile(r"address already in use|errno 98", re.IGNORECASE),
     "端口被占用：另一个进程在监听这个端口；让课程自己挑一个空闲端口（port=None）。"),
    (re.compile(r"greater than max_lora_rank|max_lora_rank", re.IGNORECASE),
     ("adapter 的秩太高：有个 adapter 的秩超过了 --max-lora-rank；把 --max-lora-rank "
      "提到不小于那个秩的最小允许值。")),
    (re.compile(r"size of tensor|shape mismatch|must match the size|does not match the base|"
                r"target_modules.*not.*found|unexpected.*lora", re.IGNORECASE),
     ("adapter 是为另一个基座做的：它的权重形状对不上这个基座；用在这个基座上"
      "训练的 adapter（启动前 course_utils.check_adapter 就能查出来）。")),
    (re.compile(r"out of memory|OutOfMemory|less than desired|Available memory on node|"
                r"No available memory for the cache blocks|not enough memory", re.IGNORECASE),
     ("内存不够：调低 --max-model-len、--max-num-seqs、--max-loras/--max-lora-rank 或 "
      "gpu_memory_utilization（CPU 上是 VLLM_CPU_KVCACHE_SPACE），或者先腾出设备。")),
    (re.compile(r"No adapter found|adapter_config\.json|does not exist|No such file|not a valid|"
                r"Loading lora .* failed|cannot find", re.IGNORECASE),
     ("adapter 路径不对：--lora-modules 里有个路径不存在，或不是 peft 的 LoRA 目录"
      "（要有 adapter_config.json 和 adapter_model.safetensors）。")),
]


def diagnose(log: str, returncode: int | None = None) -> str:
    """The likely cause of a failed start, from the server log (and how the process ended)."""
    for pattern, cause in CAUSES:
        if pattern.search(log):
            return cause
    if returncode is not None and returncode < 0:
        return f"被杀掉了：服务进程在启动时被信号 {signal.Signals(-returncode).name} 结束。"
    if returncode is None:
        return "超时：服务没有按时回应 /health（还在加载？看日志）。"
    return f"服务以退出码 {returncode} 结束；看上面的日志。"


def proxy_note() -> str:
    """When a proxy is set in this kernel's environment: that it may stand between the kernel and 127.0.0.1."""
    found = proxies()
    if not found:
        return ""
    shown = "、".join(found)                        # names only: a proxy URL may carry a password
    return (f"\n另外：这个内核的环境里设了代理（{shown}，比如 AutoDL 的学术加速）。发往 127.0.0.1 的请求如果走了"
            f"代理，就永远等不到 /health。课程已把 {','.join(LOOPBACK_HOSTS)} 加进 NO_PROXY 和 no_proxy；"
            f"如果它们后来被改掉了，或者服务其实已经起来了（日志里有 Application startup complete），"
            f"在启动 JupyterLab 的终端里先 unset http_proxy https_proxy（或把 127.0.0.1 加进 no_proxy），"
            f"再重启 JupyterLab 和这个内核。")


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
        what = f"在 {ready_timeout:.0f} 秒内没有回应 /health"
        cause += proxy_note()
    elif returncode < 0:
        what = f"启动时被 {signal.Signals(-returncode).name} 杀掉了"
    else:
        what = f"启动时以退出码 {returncode} 结束"
    return ServerError(f"vLLM 服务（{label}）{what}。\n可能的原因：{cause}\n"
                       f"它的日志最后几行（{log_path}）：\n{tail}", cause=cause, log_tail=tail)
