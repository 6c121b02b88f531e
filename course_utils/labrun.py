"""Running a lab end to end in a fresh kernel, the one way ``make run``, ``make record`` and ``make bench-labs``
do it (what ``jupyter nbconvert --to notebook --execute`` did, with nbclient underneath as there).

    python -m course_utils.labrun run --output-dir build labs/*.ipynb                    # make run
    python -m course_utils.labrun record --profile tiny [--output-dir DIR] labs/*.ipynb  # make record

The kernel is the ``python3`` kernel of the Python that runs this module (its venv), started in the
notebook's folder; each cell may take up to 15 minutes. The executed notebook is written with nbformat, as
nbconvert wrote it (cell timing metadata, widget state, the same JSON). A cell that raises stops the run and
nothing is written.

``record`` runs each lab live with ``COURSE_RECORD=1``, which makes the lab write its recording
(``data/recordings/<profile>/<lab>.json``; ``COURSE_RECORDINGS_DIR`` moves the root), then stamps the
recording with the executed notebook's hashes (:func:`course_utils.replay.stale.stamp`). The executed copy
replaces the lab unless ``--output-dir`` puts it elsewhere. A lab that does not run live on the profile
(Lab 07 on a GPU, every lab on llama3b) says so and records nothing: it is skipped, its copy not kept.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from nbclient import NotebookClient

from . import notebooks
from .replay import stale
from .replay.session import recording_path

TIMEOUT = 900         # seconds one cell may take (starting a vLLM server or a Ray Serve application takes minutes)
KERNEL = "python3"    # this Python's own kernel, whatever kernel name the notebook's metadata gives


def execute(notebook: Path, out: Path, env: dict[str, str] | None = None) -> Path:
    """Run every cell of ``notebook`` in a new kernel (``env`` added to its environment) and write the
    executed notebook to ``out``."""
    notebook = Path(notebook)
    nb = notebooks.read(notebook)
    client = NotebookClient(nb, timeout=TIMEOUT, kernel_name=KERNEL,
                            resources={"metadata": {"path": str(notebook.parent)}})
    client.execute(env={**os.environ, **(env or {})})
    notebooks.write(nb, out)
    return Path(out)


def record(labs: list[Path], profile: str, output_dir: Path | None = None) -> None:
    """``make record``: each lab live and recording, its recording stamped; labs that record nothing skipped."""
    env = {"COURSE_PROFILE": profile, "COURSE_MODE": "live", "COURSE_RECORD": "1"}
    for lab in map(Path, labs):
        print(f"== recording {lab} ({profile})", flush=True)
        out = Path(output_dir or lab.parent) / lab.name
        rec = recording_path(profile, lab.stem)
        rec.unlink(missing_ok=True)
        t0 = time.monotonic()
        execute(lab, out, env)
        print(f"   {lab.stem}: {time.monotonic() - t0:.0f} s", flush=True)
        if not rec.is_file():
            print(f"   skipped: {lab} does not run live on profile {profile} (the lab says why)", flush=True)
            if out != lab:
                out.unlink()
            continue
        stale.main(["--stamp", "--profile", profile, str(out)])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m course_utils.labrun", description="Execute labs in a fresh kernel each.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="execute each lab into a folder")
    r.add_argument("--output-dir", type=Path, required=True)
    c = sub.add_parser("record", help="execute each lab live, recording for read mode, and stamp its recording")
    c.add_argument("--profile", required=True)
    c.add_argument("--output-dir", type=Path, help="where the executed labs go (default: over the labs themselves)")
    for p in (r, c):
        p.add_argument("labs", nargs="+", type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "record":
        record(args.labs, args.profile, args.output_dir)
        return 0
    for lab in args.labs:
        print(f"== {lab}", flush=True)
        t0 = time.monotonic()
        execute(lab, args.output_dir / lab.name)
        print(f"   {lab.stem}: {time.monotonic() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
