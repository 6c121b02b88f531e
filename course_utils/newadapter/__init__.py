"""Lab 08: a new task, its adapter trained from the student's examples, checked and served beside the others.

- :mod:`.task`: the task (the archive's date stamp), its held-out set, the checker, the examples' validation;
- :mod:`.training`: training in a child process (the course's peft trainer), with progress and the loss curve;
  :mod:`.launch` starts that process and reads it (live only), :mod:`.child` is the process (the kernel never
  imports it);
- :mod:`.check`: the pre-check of the new folder (rank against ``--max-lora-rank``, the base's fingerprint);
- :mod:`.estimate`: the loop's time on a 4090 with the 7B base (estimates, from ``data/configs``).
"""

from . import task
from .check import precheck
from .estimate import loop_estimate
from .task import ExampleError
from .training import OUT, TrainingError, progress_bar, train

__all__ = ["ExampleError", "OUT", "TrainingError", "loop_estimate", "precheck", "progress_bar", "task", "train"]
