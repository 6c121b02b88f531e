"""Talking with a child process the course starts: the one protocol (Lab 07's Ray driver, Lab 08's trainer).

The child writes each message as one line on its stdout, ``@@course {"kind": ..., ...}`` (:func:`tell`), among
whatever else it prints (a library's log, a progress bar); the parent picks the messages out with :func:`heard`
and keeps the other lines as the child's log. A parent that gives commands (Lab 07) writes one JSON object per
line on the child's stdin (:func:`send`), which the child reads with ``json.loads``. Starting, waiting for and
stopping the child is :mod:`course_utils.processes`' job.
"""

from __future__ import annotations

import json
from typing import IO

MARK = "@@course "


def tell(out: IO[str], kind: str, **fields) -> None:
    """In the child: one message to the parent."""
    out.write(MARK + json.dumps({"kind": kind, **fields}) + "\n")
    out.flush()


def heard(line: str) -> dict | None:
    """In the parent: the message on this line of the child's stdout, or None for any other line."""
    return json.loads(line[len(MARK):]) if line.startswith(MARK) else None


def send(to: IO[str], **command) -> None:
    """In the parent: one command to a child that reads its stdin."""
    to.write(json.dumps(command) + "\n")
    to.flush()
