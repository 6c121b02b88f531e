"""Start a stubborn grandchild (it ignores SIGTERM, as multiprocessing's resource tracker does), print its pid,
and exit, so that it is reparented (tests/test_processes.py). ``--own-session``: the grandchild leads a new
session and process group."""

import subprocess
import sys

STUBBORN = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"

g = subprocess.Popen([sys.executable, "-c", STUBBORN], start_new_session="--own-session" in sys.argv)
print(g.pid, flush=True)
