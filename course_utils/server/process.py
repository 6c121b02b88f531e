"""Start a real vLLM OpenAI-compatible server for a profile, and always stop it.

``with cu.server.serve(prof, lora_modules=[...]) as srv:`` starts the server
(its command line: :mod:`.command`) bound to 127.0.0.1 on a free port with a
generated API key, and waits for ``/health``.

- ``srv.command`` is the exact argv that ran; ``srv.display_command`` is the
  same line for the page, with ``<port>`` and ``<api-key>`` in place of the
  random values and paths relative to the repository.
- A server that fails to start raises :class:`~.diagnose.ServerError` with the
  last lines of its log and the likely cause (:mod:`.diagnose`).
- Every process of the server is stopped (:mod:`course_utils.processes`: its
  descendants, its process group and every process carrying its
  ``COURSE_PROC_TAG``, reparented ones included) when the ``with`` block ends,
  on ``srv.stop()``, and at interpreter exit or on SIGTERM
  (:func:`course_utils.processes.stop_at_exit`).
- Each server leaves a pid file under the user's runtime folder
  (:func:`course_utils.processes.start` writes it; :func:`.spawn.spawn` says why servers need one). Before a new
  start, servers left by an earlier, dead kernel of this course are stopped,
  after checking that the pid's command line is the one recorded (or, for the
  helpers of a server whose main process is gone, by its tag). Nothing is ever
  killed by name.

In read mode (replay) nothing starts and no port opens: ``start()`` returns
what the recorded start returned (or raises what it raised). Once a lab has
started a server, each cell's HTTP is recorded and replayed by the lab's session
(:meth:`course_utils.replay.session.Session.record_http`): lesson cells call
``requests`` or the openai client as they would anywhere.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..profiles import Profile
from ..replay import keys
from ..replay import session
from ..replay.record import recorded
from .command import Launch
from .diagnose import log_tail
from .http import openai_client

if TYPE_CHECKING:
    from ..processes import Started


def _processes():
    """The registry (:mod:`course_utils.processes`), imported when a server starts: a reader's kernel never needs it."""
    from .. import processes

    return processes

PIDFILE_PREFIX = "vllm-server-"
# How long a start may take before the server counts as failed. CPU profiles: the course's measured starts (the
# tiny model, about 25 s) with room to spare. GPU profiles: an estimate, not measured on a 4090 (review S6): a
# cold `vllm serve` of the 7B reads 15 GB of weights from the data disk, compiles for each LoRA config no earlier
# engine used (torch.compile), captures CUDA graphs twice (cudagraph_specialize_lora) and builds the
# batch-invariant Triton kernels. Past STILL_LOADING_AFTER seconds a GPU start says once that it is still loading.
CPU_READY_TIMEOUT, GPU_READY_TIMEOUT = 180.0, 600.0
STILL_LOADING_AFTER = 60.0


def default_ready_timeout(profile: Profile) -> float:
    return CPU_READY_TIMEOUT if profile.vllm_on_cpu else GPU_READY_TIMEOUT


# -- this kernel's servers: the course's one process registry (course_utils.processes) ------------
def cleanup_stale(verbose: bool = True) -> list[int]:
    """Stop servers left by earlier kernels of this course (their owner is gone), by their pid files
    (:func:`course_utils.processes.cleanup_stale`); returns their pids."""
    stopped = _processes().cleanup_stale(PIDFILE_PREFIX)
    if stopped and verbose:
        print(f"停掉了之前某个内核留下的 {len(stopped)} 个服务（pid {', '.join(map(str, stopped))}）。")
    return stopped


def running() -> list[Server]:
    """The servers this kernel started and has not stopped yet (the registry's: :func:`course_utils.processes.children`).
    A kernel that never imported the registry started nothing (read mode), so the answer is then empty without it."""
    registry = sys.modules.get("course_utils.processes")
    return [] if registry is None else [c.owner for c in registry.children() if isinstance(c.owner, Server)]


def stop_all() -> None:
    """Stop every server this kernel started."""
    for s in running():
        s.stop()


class Server:
    """One vLLM OpenAI-compatible server process (see the module docstring).

    ``options`` are those of :class:`~.command.Launch`: ``max_loras``,
    ``max_lora_rank``, ``runtime_updates``, ``extra_args``, ``api_key``,
    ``served_model_name``, ``use_cli``; ``env`` adds to the server's environment. ``ready_timeout``: seconds
    the start may take (by default :func:`default_ready_timeout`: 180 on CPU profiles, 600 on GPU ones).
    """

    launch_class = Launch  # what builds the command line (a test swaps in a stand-in server)

    def __init__(self, profile: Profile, lora_modules: Iterable = (), *, port: int | None = None,
                 ready_timeout: float | None = None, label: str = "server", env: dict | None = None, **options):
        self.profile, self.port, self.label = profile, port, label
        self.ready_timeout = default_ready_timeout(profile) if ready_timeout is None else ready_timeout
        self.launch = self.launch_class(profile, list(lora_modules), extra_env=dict(env or {}), **options)
        self._tag: str | None = None
        self.command = self.launch.argv(self.port or 0)
        self.started: Started | None = None
        self.log_path = None
        self.ready_seconds: float | None = None
        self.shown_command = ""  # what the page prints: this run's line, or the recorded one in read mode
        self.replay = False

    api_key = property(lambda self: self.launch.api_key)
    host = property(lambda self: self.launch.host)
    max_loras = property(lambda self: self.launch.max_loras, doc="--max-loras of this server")
    max_lora_rank = property(lambda self: self.launch.max_lora_rank, doc="--max-lora-rank of this server")
    display_command = property(lambda self: self.launch.display(self.command),
                               doc="The command line for the page: no random port or key, relative paths.")

    def server_env_changes(self) -> dict:
        return self.launch.env_changes()

    @property
    def tag(self) -> str:
        """The mark in the environment of every process of this server (:func:`course_utils.processes.new_tag`)."""
        if self._tag is None:
            self._tag = _processes().new_tag()
        return self._tag

    def server_env(self) -> dict:
        return _processes().with_tag(self.launch.env(), self.tag)

    proc = property(lambda self: self.started.proc if self.started else None, doc="The server's subprocess.Popen.")
    pid = property(lambda self: self.started.pid if self.started else None)
    pgid = property(lambda self: self.started.pgid if self.started else None, doc="It leads its process group.")
    pidfile = property(lambda self: self.started.pidfile if self.started else None)

    # -- URLs and clients -------------------------------------------------
    base_url = property(lambda self: f"http://{self.host}:{self.port or 0}")
    headers = property(lambda self: {"Authorization": f"Bearer {self.api_key}"})

    def url(self, path: str) -> str:
        return self.base_url + path

    def client(self, **kw):
        """An ``openai.OpenAI`` client for this server (no retries, so every answer is the server's own)."""
        return openai_client(self, **kw)

    # -- life cycle ---------------------------------------------------------
    def start(self) -> Server:
        sess = session.active()
        if sess is not None:
            sess.record_http()
        if sess is not None and sess.mode == "replay":
            self.replay = True
            self.port = self.port or 8000
        info = self._started()
        self.ready_seconds, self.shown_command = info.get("ready_seconds"), info.get("command", "")
        return self

    @recorded(lambda self: keys.server_start(self.label, self.display_command))
    def _started(self) -> dict:
        """The server's start: live, it starts (recorded); read mode returns what the recorded start said."""
        return self._start_live()

    def _start_live(self) -> dict:
        from .spawn import start

        return start(self)

    def processes(self) -> list:
        """The server's running processes (``psutil.Process``), wherever they were reparented."""
        return self.started.processes() if self.started else []

    def sockets(self) -> list:
        """The inet sockets of the server's processes (where they listen and what they talk to)."""
        return _processes().sockets(self.processes())

    def log_tail(self, n: int = 25) -> str:
        return log_tail(self.log_path, n)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        """Stop every process of the server (SIGTERM, then SIGKILL for what is left) and forget it."""
        if self.replay or self.started is None:
            return
        self.started.stop()  # off the registry, its pid file too
        _processes().forget(self.stop)
        if self.ready_seconds is not None and self.log_path is not None:
            self.log_path.unlink(missing_ok=True)  # a server that started fine: its log is not needed; a failed one's stays

    def __enter__(self):
        if self.proc is None and not self.replay:
            self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


def serve(profile: Profile, lora_modules: Iterable = (), **kw) -> Server:
    """Start a server for ``profile`` (see :class:`Server` for the options) and return it once ready."""
    return Server(profile, lora_modules, **kw).start()
