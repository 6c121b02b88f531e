"""Timing a step of a lab: measured live, the recorded figure in read mode."""

from __future__ import annotations

import time

from .replay import keys
from .replay.record import recorded


@recorded(lambda label, seconds: keys.timing(label))
def _took(label: str, seconds: float) -> float:
    return round(seconds, 4)


class timer:
    """``with timer("generate") as t: ...`` then ``t.seconds``: measured live, the recorded figure in read mode."""

    def __init__(self, label: str):
        self.label = label
        self.seconds: float | None = None

    def __enter__(self):
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            return False
        self.seconds = _took(self.label, time.perf_counter() - self._t0)
        return False


def fmt_seconds(s: float) -> str:
    """Timings are printed as '<number> s' so the nbval sanitizer can mask them (tests/sanitize.cfg)."""
    return f"{s:.2f} s"
