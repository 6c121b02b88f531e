"""A test module that leaves a process behind, copied into a temporary folder as test_leaky.py by
tests/test_processes.py: the session-wide leak check of tests/conftest.py must fail that run and kill it."""

import subprocess
import sys


def test_leaves_an_orphan():
    # as the stand-in server did: its child outlives it, reparented to init
    subprocess.run([sys.executable, "-c", ("import subprocess, sys; "
                                           "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])")],
                   check=True)
