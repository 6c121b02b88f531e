"""A vLLM OpenAI-compatible server for the labs: started, diagnosed, and always stopped.

``from course_utils.server import Server`` is what the labs use.
"""

from .process import *  # noqa: F401,F403
from .process import _alive, _live_servers, _strip_log_prefix  # noqa: F401  (tests)
