"""How long each lab takes end to end, live and in read mode (a benchmark that prints, not a timed test).

    python -m course_tools.labtime labs/01_offline_multi_lora.ipynb ...   (make bench-labs)

Each lab is executed by :mod:`course_tools.labrun` in a fresh kernel: live with the live
environment (.venv), replay with the read-mode one (.venv-read, no vLLM).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from course_utils.paths import REPO


def run_once(notebook: Path, mode: str, venv: Path) -> float:
    env = {**os.environ, "COURSE_MODE": mode, "COURSE_PROFILE": "tiny"}
    env.pop("COURSE_RECORD", None)
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        subprocess.run([str(venv / "bin" / "python"), "-m", "course_tools.labrun", "run", "--output-dir", out,
                        str(notebook)], check=True, env=env, capture_output=True)
        return time.perf_counter() - t0


def main(argv=None):
    labs = [Path(a) for a in (argv if argv is not None else sys.argv[1:])]
    print(f"{'lab':<32}{'live (s)':>10}{'replay (s)':>12}")
    for lab in labs:
        live = run_once(lab, "live", REPO / ".venv")
        replay = run_once(lab, "replay", REPO / ".venv-read")
        print(f"{lab.stem:<32}{live:>10.1f}{replay:>12.1f}")


if __name__ == "__main__":
    main()
