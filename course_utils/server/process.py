"""Start a real vLLM OpenAI-compatible server for a profile, and always stop it.

``with cu.server.serve(prof, lora_modules=[...]) as srv:`` starts
``vllm serve <base> --enable-lora ...`` (on the CPU build, whose ``vllm``
console script is broken, ``python -m vllm.entrypoints.openai.api_server
--model <base>`` with the same flags), bound to 127.0.0.1 on a free port with
a generated API key, and waits for ``/health``.

- ``srv.command`` is the exact argv that ran; ``srv.display_command`` is the
  same line for the page, with ``<port>`` and ``<api-key>`` in place of the
  random values and paths relative to the repository.
- A server that fails to start raises :class:`ServerError` with the last
  lines of its log and the likely cause (port in use, rank too high, out of
  memory, bad adapter path, adapter for another base, killed).
- The whole process group is stopped when the ``with`` block ends, on
  ``srv.stop()``, at interpreter exit (atexit) and on SIGTERM (and SIGINT
  outside a Jupyter kernel, where Ctrl-C/interrupt must stay a cell
  interrupt). The previous signal handlers are chained.
- Each server writes a pid file under the user's runtime folder. Before a new
  start, servers left by an earlier, dead kernel of this course are stopped,
  after checking that the pid's command line is the one recorded. Nothing is
  ever killed by name.

In read mode (replay) nothing starts and no port opens: ``start()`` returns
what the recorded start returned (or raises what it raised), and HTTP goes
through :meth:`course_utils.replay.session.Session.cassette`.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..replay import session as record
from ..paths import REPO
from ..profiles import Profile

# Profile settings meant for the notebook's own LLM(...) engines, never for a server: the in-process
# engine switch, and the permission to send functions to an engine process (llm.apply_model).
OFFLINE_ONLY_ENV = ("VLLM_ENABLE_V1_MULTIPROCESSING", "VLLM_ALLOW_INSECURE_SERIALIZATION")

CPU_ENTRYPOINT = "vllm.entrypoints.openai.api_server"
PIDFILE_PREFIX = "vllm-server-"
# Engine settings of a profile that map to server flags (the LoRA knobs are explicit arguments).
ENGINE_FLAGS = ("dtype", "max_model_len", "max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization", "seed")


class ServerError(RuntimeError):
    """The server did not come up; the message gives the likely cause and the end of its log."""

    def __init__(self, message: str, cause: str = "", log_tail: str = ""):
        super().__init__(message)
        self.cause, self.log_tail = cause, log_tail


# -- where pid files live -------------------------------------------------------
def runtime_dir() -> Path:
    """``$XDG_RUNTIME_DIR/multi-lora-course`` when that exists, else ``~/.cache/multi-lora-course/run``."""
    override = os.environ.get("COURSE_RUN_DIR")
    if override:
        d = Path(override)
    elif os.environ.get("XDG_RUNTIME_DIR") and Path(os.environ["XDG_RUNTIME_DIR"]).is_dir():
        d = Path(os.environ["XDG_RUNTIME_DIR"]) / "multi-lora-course"
    else:
        d = Path.home() / ".cache" / "multi-lora-course" / "run"
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    return d


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _cmdline(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        try:
            import psutil

            return psutil.Process(pid).cmdline()
        except Exception:
            return None
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a] or None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is not alive
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def _descendants(pid: int) -> list[int]:
    try:
        import psutil

        return [c.pid for c in psutil.Process(pid).children(recursive=True)]
    except Exception:
        return []


def _kill_tree(pid: int, pgid: int | None, grace: float = 10.0) -> None:
    """SIGTERM the process group (and any descendant that left it), then SIGKILL what is left."""
    kids = _descendants(pid)
    targets = [pid, *kids]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if pgid is not None:
            try:
                os.killpg(pgid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        for p in targets:
            try:
                os.kill(p, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + (grace if sig == signal.SIGTERM else 5.0)
        while time.monotonic() < deadline:
            _reap(targets)
            if not any(_alive(p) for p in targets):
                return
            time.sleep(0.1)


def _reap(pids: Iterable[int]) -> None:
    for p in pids:
        try:
            os.waitpid(p, os.WNOHANG)
        except (ChildProcessError, OSError):
            pass


def cleanup_stale(verbose: bool = True) -> list[int]:
    """Stop servers left by earlier kernels of this course (their owner is gone); returns their pids.

    A pid file names the server's pid, its process group, the exact command
    line and the kernel that started it. Only a pid whose command line is still
    exactly that one is stopped; a reused pid is left alone.
    """
    stopped = []
    for f in sorted(runtime_dir().glob(PIDFILE_PREFIX + "*.json")):
        try:
            info = json.loads(f.read_text())
            pid, owner = int(info["pid"]), int(info["owner"])
        except (OSError, ValueError, KeyError, TypeError):
            f.unlink(missing_ok=True)
            continue
        if owner != os.getpid() and _alive(owner) and _cmdline(owner) == info.get("owner_cmdline"):
            continue  # another running kernel's server: not ours to stop
        if owner == os.getpid() and any(s.pid == pid for s in list(_live_servers)):
            continue  # one of this kernel's own running servers
        if _alive(pid) and _cmdline(pid) == info["cmdline"]:
            if verbose:
                print(f"stopping a server left by an earlier kernel (pid {pid})")
            _kill_tree(pid, info.get("pgid"))
            stopped.append(pid)
        f.unlink(missing_ok=True)
    return stopped


# -- shutdown hooks ---------------------------------------------------------------
_live_servers: list[Server] = []
_hooks_installed = False
_previous_handlers: dict[int, Any] = {}


def stop_all() -> None:
    for s in _live_servers:
        try:
            s.stop()
        except Exception:  # pragma: no cover - best effort at exit
            pass


def _in_jupyter_kernel() -> bool:
    if "IPython" not in sys.modules:
        return False
    try:
        from IPython import get_ipython

        return getattr(get_ipython(), "kernel", None) is not None
    except Exception:
        return False


def _on_signal(signum, frame):
    stop_all()
    prev = _previous_handlers.get(signum)
    if callable(prev):
        prev(signum, frame)
    elif prev == signal.SIG_DFL or prev is None:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def _install_hooks() -> None:
    global _hooks_installed
    if _hooks_installed:
        return
    _hooks_installed = True
    atexit.register(stop_all)
    if threading.current_thread() is not threading.main_thread():
        return
    sigs = [signal.SIGTERM] + ([] if _in_jupyter_kernel() else [signal.SIGINT])
    for sig in sigs:
        try:
            prev = signal.getsignal(sig)
            if prev is signal.SIG_IGN:
                continue
            _previous_handlers[sig] = prev
            signal.signal(sig, _on_signal)
        except (ValueError, OSError):  # pragma: no cover
            pass


# -- diagnosis ----------------------------------------------------------------------
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


def _strip_log_prefix(line: str) -> str:
    """'(APIServer pid=12) ERROR 11-30 02:40:00 [x.py:12] message' -> 'message' (no pids or clocks)."""
    line = re.sub(r"\x1b\[[0-9;]*m", "", line)
    return re.sub(r"^.*?\b(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+\[[^\]]*\]\s*",
                  "", line).rstrip()


# -- the server ---------------------------------------------------------------------
def _lora_module_arg(spec) -> str:
    if isinstance(spec, dict):
        return json.dumps(spec)
    if isinstance(spec, (tuple, list)) and len(spec) == 2:
        return f"{spec[0]}={spec[1]}"
    return str(spec)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


class Server:
    """One vLLM OpenAI-compatible server process (see the module docstring)."""

    def __init__(self, profile: Profile, lora_modules: Iterable = (), *, max_loras: int | None = None,
                 max_lora_rank: int | None = None, runtime_updates: bool = False, extra_args: Iterable[str] = (),
                 env: dict | None = None, port: int | None = None, api_key: str | None = None,
                 served_model_name: str | None = None, ready_timeout: float = 180.0, label: str = "server",
                 host: str = "127.0.0.1", use_cli: bool | None = None):
        self.profile = profile
        self.lora_modules = list(lora_modules)
        self.max_loras = max_loras if max_loras is not None else profile.max_loras
        self.max_lora_rank = max_lora_rank if max_lora_rank is not None else profile.max_lora_rank
        self.runtime_updates = runtime_updates
        self.extra_args = list(extra_args)
        self.extra_env = dict(env or {})
        self.host = host
        self.port = port
        self.api_key = api_key or ("sk-course-" + secrets.token_hex(12))
        self.served_model_name = served_model_name or Path(profile.base_model).name
        self.ready_timeout = ready_timeout
        self.label = label
        self.use_cli = use_cli if use_cli is not None else (profile.hardware == "cuda" and _cli_works())
        self.proc: subprocess.Popen | None = None
        self.pid: int | None = None
        self.pgid: int | None = None
        self.log_path: Path | None = None
        self.pidfile: Path | None = None
        self.ready_seconds: float | None = None
        self.shown_command: str = ""  # what the page prints: this run's line, or the recorded one in read mode
        self.replay = False
        self._logf = None
        self.command = self._build_command(self.port or 0)

    # -- command line ---------------------------------------------------
    def _build_command(self, port: int) -> list[str]:
        base = self.profile.base_model
        if self.use_cli:
            cmd = ["vllm", "serve", base]
        else:
            cmd = [sys.executable, "-m", CPU_ENTRYPOINT, "--model", base]
        cmd += ["--host", self.host, "--port", str(port), "--api-key", self.api_key,
                "--served-model-name", self.served_model_name,
                "--enable-lora", "--max-lora-rank", str(self.max_lora_rank), "--max-loras", str(self.max_loras)]
        for k in ENGINE_FLAGS:
            if k in self.profile.engine:
                cmd += [_flag(k), str(self.profile.engine[k])]
        if self.lora_modules:
            cmd += ["--lora-modules", *[_lora_module_arg(s) for s in self.lora_modules]]
        cmd += self.extra_args
        return cmd

    @property
    def display_command(self) -> str:
        """The command line for the page: no random port or key, paths relative to the repository."""
        shown = []
        for i, a in enumerate(self.command):
            prev = self.command[i - 1] if i else ""
            if prev == "--port":
                a = "<port>"
            elif prev == "--api-key":
                a = "<api-key>"
            elif i == 0 and a == sys.executable:
                a = "python"
            a = a.replace(str(REPO) + "/", "")
            shown.append(a)
        env = self.server_env_changes()
        prefix = " ".join(f"{k}={v}" for k, v in env.items() if k in ("VLLM_ALLOW_RUNTIME_LORA_UPDATING",))
        line = shlex.join(shown)
        return (prefix + " " + line) if prefix else line

    def server_env_changes(self) -> dict:
        env = {k: v for k, v in self.profile.env.items() if k not in OFFLINE_ONLY_ENV}
        env.setdefault("VLLM_LOGGING_LEVEL", "INFO")
        if self.profile.hardware == "cpu":
            env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
        if self.runtime_updates:
            env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] = "True"
        env.update(self.extra_env)
        return env

    def server_env(self) -> dict:
        env = dict(os.environ)
        # The kernel's offline-only settings (OFFLINE_ONLY_ENV) and runtime updating are not inherited.
        for k in (*OFFLINE_ONLY_ENV, "VLLM_ALLOW_RUNTIME_LORA_UPDATING"):
            env.pop(k, None)
        env.update(self.server_env_changes())
        return env

    # -- URLs and clients -------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port or 0}"

    def url(self, path: str) -> str:
        return self.base_url + path

    @property
    def headers(self) -> dict:
        return {"Authorization": f"Bearer {self.api_key}"}

    def client(self, **kw):
        """An ``openai.OpenAI`` client for this server (no retries, so every answer is the server's own)."""
        import httpx2
        import openai

        kw.setdefault("max_retries", 0)
        kw.setdefault("timeout", 120)
        kw.setdefault("http_client", httpx2.Client(transport=RequestsTransport()))
        return openai.OpenAI(base_url=self.url("/v1"), api_key=self.api_key, **kw)

    # -- life cycle ---------------------------------------------------------
    def start(self) -> Server:
        session = record._current
        key = [self.label, record.portable(self.display_command)]
        if session is not None and session.mode == "replay":
            self.replay = True
            self.port = self.port or 8000
            info = session.run("server_start", key, None, describe=self.label)
            self.ready_seconds, self.shown_command = info.get("ready_seconds"), info.get("command", "")
            return self
        if session is not None:
            info = session.run("server_start", key, self._start_live, describe=self.label)
        else:
            info = self._start_live()
        self.ready_seconds, self.shown_command = info["ready_seconds"], info["command"]
        return self

    def _start_live(self) -> dict:
        _install_hooks()
        cleanup_stale(verbose=True)
        if self.port is None:
            self.port = free_port(self.host)
        self.command = self._build_command(self.port)
        fd, log = tempfile.mkstemp(prefix=f"vllm-{self.label}-", suffix=".log", dir=runtime_dir())
        self.log_path = Path(log)
        self._logf = os.fdopen(fd, "wb")
        t0 = time.monotonic()
        self.proc = subprocess.Popen(self.command, stdout=self._logf, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=self.server_env(), start_new_session=True,
                                     cwd=str(REPO))
        self.pid = self.proc.pid
        self.pgid = self.pid  # start_new_session: the server leads its own process group
        _live_servers.append(self)
        self._write_pidfile()
        try:
            self._wait_ready(t0)
        except BaseException:
            self.stop()
            raise
        self.ready_seconds = round(time.monotonic() - t0, 2)
        return {"command": self.display_command, "ready_seconds": self.ready_seconds}

    def _write_pidfile(self):
        self.pidfile = runtime_dir() / f"{PIDFILE_PREFIX}{self.pid}.json"
        self.pidfile.write_text(json.dumps({
            "pid": self.pid, "pgid": self.pgid, "cmdline": _cmdline(self.pid) or self.command,
            "owner": os.getpid(), "owner_cmdline": _cmdline(os.getpid()), "port": self.port,
            "log": str(self.log_path), "started": time.time()}))

    def _wait_ready(self, t0: float):
        import requests

        deadline = t0 + self.ready_timeout
        while True:
            rc = self.proc.poll()
            if rc is not None:
                self._fail(rc)
            try:
                r = requests.get(self.url("/health"), timeout=2)
                if r.status_code == 200 and self._owns_port():
                    return
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                self._fail(None)
            time.sleep(0.5)

    def _owns_port(self) -> bool:
        """Whether the answer came from this server's processes (not another server on a reused port)."""
        try:
            import psutil
        except ImportError:
            return True
        try:
            procs = [psutil.Process(self.pid)] + psutil.Process(self.pid).children(recursive=True)
        except psutil.Error:
            return False
        for p in procs:
            try:
                conns = (getattr(p, "net_connections", None) or p.connections)(kind="tcp")
            except psutil.Error:
                continue
            if any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == self.port for c in conns):
                return True
        return False

    def _fail(self, rc: int | None):
        time.sleep(0.2)
        tail = self.log_tail(25)
        cause = diagnose(self.log_tail(400), rc)
        if rc is None:
            what = f"did not answer /health within {self.ready_timeout:.0f} s"
        elif rc < 0:
            what = f"was killed by {signal.Signals(-rc).name} during start"
        else:
            what = f"exited with code {rc} during start"
        raise ServerError(
            f"vLLM server ({self.label}) {what}.\nLikely cause: {cause}\n"
            f"Last lines of its log ({self.log_path}):\n{tail}", cause=cause, log_tail=tail)

    def log_tail(self, n: int = 25) -> str:
        if self._logf is not None:
            try:
                self._logf.flush()
            except (OSError, ValueError):
                pass
        if not self.log_path or not self.log_path.is_file():
            return ""
        lines = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(lines[-n:])

    def log_lines_matching(self, pattern: str) -> list[str]:
        """Log lines that match ``pattern``, without the pid/clock prefix (for a page that stays comparable)."""
        if not self.log_path or not self.log_path.is_file():
            return []
        return [_strip_log_prefix(ln) for ln in self.log_path.read_text(errors="replace").splitlines()
                if re.search(pattern, ln)]

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.replay or self.proc is None:
            return
        if self.proc.poll() is None or _descendants(self.pid):
            _kill_tree(self.pid, self.pgid)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover
            pass
        if self._logf is not None:
            try:
                self._logf.close()
            except OSError:
                pass
        if self in _live_servers:
            _live_servers.remove(self)
        if self.pidfile is not None:
            self.pidfile.unlink(missing_ok=True)
        if self.ready_seconds is not None and self.log_path is not None:
            self.log_path.unlink(missing_ok=True)  # a server that started fine: its log is not needed; a failed one's stays

    def __enter__(self):
        if self.proc is None and not self.replay:
            self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


def _cli_works() -> bool:
    """Whether a working ``vllm`` console script is on PATH (the CPU build's is broken)."""
    exe = shutil.which("vllm") or (str(Path(sys.executable).with_name("vllm"))
                                   if Path(sys.executable).with_name("vllm").exists() else None)
    if not exe:
        return False
    try:
        from importlib.metadata import version

        version("vllm")
        return True
    except Exception:
        return False


def serve(profile: Profile, lora_modules: Iterable = (), **kw) -> Server:
    """Start a server for ``profile`` (see :class:`Server` for the options) and return it once ready."""
    return Server(profile, lora_modules, **kw).start()


# -- metrics and load ---------------------------------------------------------------
_LORA_INFO = re.compile(r'^vllm:lora_requests_info\{([^}]*)\}\s+(\S+)', re.MULTILINE)
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def lora_info_samples(metrics_text: str) -> list[dict]:
    """The ``vllm:lora_requests_info`` series of a /metrics page: running/waiting adapter sets per label set."""
    out = []
    for labels, value in _LORA_INFO.findall(metrics_text):
        lab = dict(_LABEL.findall(labels))
        out.append({"running": sorted(a for a in lab.get("running_lora_adapters", "").split(",") if a),
                    "waiting": sorted(a for a in lab.get("waiting_lora_adapters", "").split(",") if a),
                    "max_lora": lab.get("max_lora"), "time": float(value)})
    return out


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    v = sorted(values)
    k = (len(v) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def run_load(srv: Server, models: list[str], *, n_requests: int = 240, concurrency: int = 6,
             max_requests: int | None = None, max_seconds: float = 120.0, prompt: str = "Hello",
             max_tokens: int = 8, during=None) -> list[dict]:
    """A bounded load generator: a steady stream of completions, round-robin over ``models``.

    Loopback only, at most ``concurrency`` requests in flight. It sends at least
    ``n_requests``; if ``during`` is given it keeps sending until ``during``
    has returned too, but never more than ``max_requests`` (3 x n_requests by
    default) and never after ``max_seconds``. ``during(state)`` runs in this
    thread while the workers send: ``state["sent"]`` is the number sent so far,
    and whatever it puts in ``state["phase"]`` labels the requests sent from then
    on (it starts as "before"). One row per request: model, start and latency
    (s since the load began), status, ok, phase.
    """
    import requests

    if srv.host not in ("127.0.0.1", "localhost", "::1"):
        raise ValueError("run_load only targets a server on loopback")
    max_requests = max_requests or 3 * n_requests
    rows: list[dict] = []
    lock = threading.Lock()
    state = {"sent": 0, "phase": "before"}
    done = threading.Event()
    if during is None:
        done.set()
    t0 = time.monotonic()

    def worker():
        s = requests.Session()
        while True:
            with lock:
                i = state["sent"]
                if (i >= n_requests and done.is_set()) or i >= max_requests or time.monotonic() - t0 > max_seconds:
                    return
                state["sent"] = i + 1
                ph = state["phase"]
            model = models[i % len(models)]
            t = time.monotonic()
            try:
                r = s.post(srv.url("/v1/completions"), headers=srv.headers, timeout=60,
                           json={"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0})
                status, ok = r.status_code, r.status_code == 200
            except requests.RequestException as e:
                status, ok = type(e).__name__, False
            with lock:
                rows.append({"i": i, "model": model, "start": round(t - t0, 4),
                             "latency": round(time.monotonic() - t, 4), "status": status, "ok": ok, "phase": ph})

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(concurrency)]
    for th in threads:
        th.start()
    if during is not None:
        try:
            during(state)
        finally:
            with lock:
                state["phase"] = "after"
            done.set()
    for th in threads:
        th.join(timeout=max_seconds + 60)
    return sorted(rows, key=lambda r: r["i"])


_GAUGE = re.compile(r'^(vllm:num_requests_running|vllm:num_requests_waiting)\{[^}]*\}\s+(\S+)', re.MULTILINE)


def queue_sample(metrics_text: str) -> dict:
    """Running and waiting request counts from a /metrics page (summed over engines)."""
    out = {"running": 0.0, "waiting": 0.0}
    for name, value in _GAUGE.findall(metrics_text):
        out[name.rsplit("_", 1)[1]] += float(value)
    return out


def burst(srv: Server, models: list[str], *, per_model: int = 8, prompt: str = "Hello", max_tokens: int = 32,
          scrape_every: float = 0.2) -> dict:
    """Send ``per_model`` requests to each model at once and scrape /metrics while they run.

    Returns the wall time of the burst, each request's model/latency/status, the
    running/waiting counts seen in /metrics, and the ``vllm:lora_requests_info``
    label sets updated during the burst.
    """
    import requests

    if srv.host not in ("127.0.0.1", "localhost", "::1"):
        raise ValueError("burst only targets a server on loopback")
    jobs = [m for m in models for _ in range(per_model)]
    results: list[dict] = [None] * len(jobs)  # type: ignore[list-item]
    samples: list[dict] = []
    t_wall = time.time()
    t0 = time.monotonic()

    def one(i, model):
        t = time.monotonic()
        r = requests.post(srv.url("/v1/completions"), headers=srv.headers, timeout=120,
                          json={"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
                                "ignore_eos": True})
        results[i] = {"model": model, "start": round(t - t0, 4), "end": round(time.monotonic() - t0, 4),
                      "status": r.status_code}

    threads = [threading.Thread(target=one, args=(i, m), daemon=True) for i, m in enumerate(jobs)]
    for th in threads:
        th.start()
    while any(th.is_alive() for th in threads):
        try:
            text = requests.get(srv.url("/metrics"), headers=srv.headers, timeout=5).text
            samples.append({"t": round(time.monotonic() - t0, 3), **queue_sample(text)})
        except requests.RequestException:
            pass
        time.sleep(scrape_every)
    for th in threads:
        th.join()
    wall = round(time.monotonic() - t0, 3)
    text = requests.get(srv.url("/metrics"), headers=srv.headers, timeout=5).text
    lora_sets = sorted({",".join(s["running"]) for s in lora_info_samples(text) if s["time"] >= t_wall - 1})
    return {"wall_seconds": wall, "requests": results, "samples": samples, "lora_running_label_sets": lora_sets,
            "max_running": max((s["running"] for s in samples), default=0),
            "max_waiting": max((s["waiting"] for s in samples), default=0)}


class RequestsTransport:
    """An ``httpx2`` transport that sends through ``requests``, so vcrpy cassettes see the openai client's calls.

    The openai client speaks ``httpx2``, which vcrpy does not patch; ``requests``
    it does. ``srv.client()`` plugs this in: live it is an ordinary HTTP call,
    in read mode the cassette answers and no socket opens.
    """

    def __init__(self):
        import requests

        self._session = requests.Session()

    def handle_request(self, request):
        import httpx2

        body = request.read()
        timeout = (request.extensions or {}).get("timeout", {}) or {}
        r = self._session.request(request.method, str(request.url), headers=dict(request.headers), data=body or None,
                                  timeout=timeout.get("read") or 120)
        headers = [(k, v) for k, v in r.headers.items()
                   if k.lower() not in ("content-encoding", "transfer-encoding", "content-length")]
        return httpx2.Response(r.status_code, headers=headers, content=r.content, request=request)

    def close(self):
        self._session.close()


def shell(command: str, srv: Server, label: str = "shell") -> str:
    """Run a shell command (e.g. curl) with ``$PORT`` and ``$VLLM_API_KEY`` set for ``srv``; its stdout.

    The command shown on the page is the one that runs: the port and key come
    from the environment, not pasted in. Recorded live, replayed in read mode.
    """
    def live():
        env = {**os.environ, "PORT": str(srv.port), "VLLM_API_KEY": srv.api_key}
        out = subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            raise RuntimeError(f"exit {out.returncode}: {out.stderr.strip()}")
        return out.stdout

    return record.current().run("shell", [label, command], live, describe=label)


def cassette(name: str):
    """The current lab session's HTTP cassette ``name`` (recorded live, replayed in read mode)."""
    return record.current().cassette(name)


def short_path(p: str) -> str:
    """A path for the page: relative to the repository (the same wherever the course is checked out)."""
    p = str(p).replace(str(REPO) + "/", "")
    m = re.search(r"(?:^|/)(data/tiny/.*)$", p)
    return m.group(1) if m else p


def pretty_command(line: str) -> str:
    """A long command line, one flag per line (as it would be typed in a shell)."""
    return line.replace(" --", " \\\n    --")
