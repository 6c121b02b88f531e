"""The command line the LoRA benchmarks share: ``python -m course_tools.bench.<bench> [options] [--save]``.

Each benchmark (:mod:`.opbench`, :mod:`.widebench`, :mod:`.loadbench`) adds its own options, measures and
prints; ``--save`` then writes the recording Lab 03 shows, with the command that made it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from course_utils.paths import short_path


def command_line(module: str, argv=None) -> str:
    """The command that made a recording, for its provenance: ``python -m <module> <its arguments>``."""
    return " ".join(["python -m", module, *(sys.argv[1:] if argv is None else list(argv))])


def main(argv, *, doc: str, module: str, recorded: Path, what: str,
         options: Callable[[argparse.ArgumentParser], None], measure: Callable[[argparse.Namespace], Any],
         save: Callable[[Any, str], Path] | None = None,
         unsaved: Callable[[argparse.Namespace], str | None] = lambda a: None) -> int:
    """Parse ``options`` and ``--save``, ``measure`` (it prints), then with ``--save`` write the result to
    ``recorded`` with its provenance (:func:`.opbench.save_run`, or ``save(result, command)``), unless
    ``unsaved`` gives a reason not to (printed instead)."""
    p = argparse.ArgumentParser(description=doc.split("\n")[0])
    options(p)
    p.add_argument("--save", action="store_true", help=f"write the {what} Lab 03 shows ({recorded.name})")
    a = p.parse_args(argv)
    res = measure(a)
    why = unsaved(a) if a.save else None
    if why:
        print(f"not saved: {why}")
    elif a.save:
        from course_tools.bench.opbench import save_run

        command = command_line(module, argv)
        path = save(res, command) if save else save_run(res, command, recorded)
        print(f"saved {short_path(path)}")
    return 0
