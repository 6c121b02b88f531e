"""A vLLM OpenAI-compatible server for the labs: started, diagnosed, and always stopped.

``from course_utils.server import Server`` is what the labs use. Where things are:

- :mod:`.process`: the process manager (:class:`Server`, :func:`serve`, :func:`cleanup_stale`,
  :func:`stop_all`, :func:`running`);
- :mod:`.command`: the command line and environment (:class:`~.command.Launch`, :func:`pretty_command`);
- :mod:`.diagnose`: why a start failed (:class:`ServerError`, :func:`diagnose`, :data:`CAUSES`);
- :mod:`.load`: load generation and /metrics (:func:`run_load`, :func:`burst`, :func:`queue_sample`,
  :func:`lora_info_samples`, :func:`percentile`);
- :mod:`.http`: the openai client's transport, recorded shell calls (:func:`shell`, :func:`short_path`).

Starting, waiting for, finding and stopping processes (the registry of running children, pid files, exit and
signal hooks included) is :mod:`course_utils.processes`; the loopback address and free ports are :mod:`course_utils.loopback`.
"""

from ..loopback import free_port
from .command import Launch, pretty_command
from .diagnose import CAUSES, ServerError, diagnose
from .http import RequestsTransport, shell, short_path
from .load import burst, lora_info_samples, percentile, queue_sample, run_load
from .process import (
    PIDFILE_PREFIX,
    Server,
    cleanup_stale,
    running,
    serve,
    stop_all,
)

__all__ = [
    "CAUSES", "PIDFILE_PREFIX", "Launch", "RequestsTransport", "Server", "ServerError", "burst",
    "cleanup_stale", "diagnose", "free_port", "lora_info_samples", "percentile", "pretty_command", "queue_sample",
    "run_load", "running", "serve", "shell", "short_path", "stop_all",
]
