"""Start a sleeping child with course_utils.processes.start (``die_with_parent`` when asked), print its pid, and
wait to be killed (tests/test_processes.py: Linux must end the child when this process dies)."""

import sys
import time

from course_utils import processes

child = processes.start([sys.executable, "-c", "import time; time.sleep(60)"],
                        die_with_parent="--die-with-parent" in sys.argv)
print(child.pid, flush=True)
time.sleep(60)
