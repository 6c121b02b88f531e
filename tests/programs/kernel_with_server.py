"""A "kernel" that starts the stand-in server (tests/test_server.py), prints its pid, then:

- ``die``: leaves at once without exit handlers (``os._exit``), so the server is left behind;
- ``wait MARKER``: waits, with a SIGTERM handler of its own that writes MARKER: the course's handler must
  stop the server and then call this one.
"""

import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))   # tests/
from test_server import TINY, FakeServer  # noqa: E402

if sys.argv[1] == "wait":
    marker = Path(sys.argv[2])

    def previous(sig, frame):
        marker.write_text("yes")
        sys.exit(0)

    signal.signal(signal.SIGTERM, previous)
s = FakeServer(TINY, ready_timeout=20).start()
print(s.pid, flush=True)
if sys.argv[1] == "die":
    os._exit(0)
time.sleep(60)
