"""Running a lab end to end in a fresh kernel, the one way ``make run``, ``make record`` and ``make bench-labs``
do it (what ``jupyter nbconvert --to notebook --execute`` did, with nbclient underneath as there).

    python -m course_tools.labrun run --output-dir build labs/*.ipynb                    # make run
    python -m course_tools.labrun record --profile tiny [--output-dir DIR] labs/*.ipynb  # make record

The kernel is the ``python3`` kernel of the Python that runs this module (its venv), started in the
notebook's folder; each cell may take up to 15 minutes. The executed notebook is written with nbformat, as
nbconvert wrote it (cell timing metadata, widget state, the same JSON). A cell that raises stops the run and
nothing is written.

``record`` runs each lab live with ``COURSE_RECORD=1``, which makes the lab write its recording
(``data/recordings/<profile>/<lab>.json``; ``COURSE_RECORDINGS_DIR`` moves the root), then stamps the
recording with the executed notebook's hashes (:func:`course_tools.stale.stamp`). The executed copy
replaces the lab unless ``--output-dir`` puts it elsewhere. A lab that does not run live on the profile
(Lab 07 on a GPU, every lab on llama3b) says so and records nothing: it is skipped, its copy not kept.

``record --jobs N`` records N labs at a time, each in a child ``record`` of its own (one kernel each; servers
take free ports, and a kernel stops only its own servers), printing each lab's output when it ends. A lab that
quotes the others' recordings (:data:`QUOTES_OTHER_LABS`) starts after every other lab has ended. The first lab
that fails stops the others.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from nbclient import NotebookClient
from traitlets.config import Config

from course_utils import processes
from course_tools import notebooks
from course_tools import stale
from course_utils.replay.session import recording_path

TIMEOUT = 900         # seconds one cell may take (starting a vLLM server or a Ray Serve application takes minutes)
KERNEL = "python3"    # this Python's own kernel, whatever kernel name the notebook's metadata gives
QUOTES_OTHER_LABS = ("06_self_test",)   # reads the recordings the other labs make (course_utils/recorded_figures.py)


def execute(notebook: Path, out: Path, env: dict[str, str] | None = None) -> Path:
    """Run every cell of ``notebook`` in a new kernel (``env`` added to its environment) and write the
    executed notebook to ``out``."""
    notebook = Path(notebook)
    nb = notebooks.read(notebook)
    # The kernel talks to this process over Unix sockets (ZMQ's ipc transport), not TCP ports on 127.0.0.1: with
    # TCP, a port picked for one kernel can be taken before it binds when labs start side by side (--jobs).
    with tempfile.TemporaryDirectory(prefix="labrun-") as sockets:
        config = Config()
        config.KernelManager.transport = "ipc"
        config.KernelManager.ip = str(Path(sockets) / "kernel")
        client = NotebookClient(nb, timeout=TIMEOUT, kernel_name=KERNEL, config=config,
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


def record_parallel(labs: list[Path], profile: str, output_dir: Path | None, jobs: int) -> None:
    """:func:`record` of each lab in a child process, ``jobs`` at a time; labs in QUOTES_OTHER_LABS last."""
    labs = [Path(lab) for lab in labs]
    out_args = ["--output-dir", str(output_dir)] if output_dir else []
    for wave in ([lab for lab in labs if lab.stem not in QUOTES_OTHER_LABS],
                 [lab for lab in labs if lab.stem in QUOTES_OTHER_LABS]):
        running = {}
        try:
            for lab in wave:
                if len(running) == jobs:
                    _collect(running)
                log = tempfile.TemporaryFile(mode="w+")
                running[lab] = (processes.start([sys.executable, "-m", "course_tools.labrun", "record",
                                                 "--profile", profile, *out_args, str(lab)],
                                                stdout=log, text=True, die_with_parent=True), log)
                print(f"== started {lab.stem} ({len(running)} running)", flush=True)
            while running:
                _collect(running)
        finally:
            for child, log in running.values():
                child.stop()
                log.close()


def _collect(running: dict) -> None:
    """Wait for one of the ``running`` children to end, print its output, and fail if it failed."""
    ended = processes.wait_until(lambda: [lab for lab, (child, _) in running.items() if not child.running],
                                 float("inf"), interval=0.5)
    for lab in ended:
        child, log = running.pop(lab)
        log.seek(0)
        sys.stdout.write(log.read())
        sys.stdout.flush()
        log.close()
        child.exited()           # reaped, off the registry
        if child.proc.returncode != 0:
            raise SystemExit(f"recording {lab} failed (exit {child.proc.returncode}): "
                             f"stopping the {len(running)} lab(s) still running")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m course_tools.labrun", description="Execute labs in a fresh kernel each.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="execute each lab into a folder")
    r.add_argument("--output-dir", type=Path, required=True)
    c = sub.add_parser("record", help="execute each lab live, recording for read mode, and stamp its recording")
    c.add_argument("--profile", required=True)
    c.add_argument("--output-dir", type=Path, help="where the executed labs go (default: over the labs themselves)")
    c.add_argument("--jobs", type=int, default=1, help="labs recorded at a time, each in a child process (default 1)")
    for p in (r, c):
        p.add_argument("labs", nargs="+", type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "record":
        if args.jobs > 1 and len(args.labs) > 1:
            record_parallel(args.labs, args.profile, args.output_dir, args.jobs)
        else:
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
