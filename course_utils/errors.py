"""The course's errors: every exception the course raises on purpose derives from :class:`CourseError`.

One class per meaning, each defined once, next to the code that raises it (``ServerError`` in
``server/diagnose.py``, ``AdapterError`` in ``adapters.py``, ...); one that two modules raise is here
(:class:`TrainingError`).
Each class also keeps the builtin base it always had (``class AdapterError(CourseError, ValueError)``), so code
that catches ``ValueError`` still catches it.

Read mode raises the recorded course error as an instance of its real class (see
:mod:`course_utils.replay.session`), so a lesson cell catches what it means: ``except cu.AdapterError``, never
``except Exception``. A course class can therefore be built from its message alone (:meth:`CourseError.replayed`).
"""

from __future__ import annotations


class CourseError(Exception):
    """Base of the course's own errors; the message (Chinese for students) says what is wrong and what to do."""

    @classmethod
    def replayed(cls, message: str) -> CourseError:
        """An instance carrying a recorded message, whatever this class's ``__init__`` takes (read mode)."""
        exc = cls.__new__(cls, message)
        exc.args = (message,)
        return exc


class TrainingError(CourseError, RuntimeError):
    """Training an adapter cannot start or did not finish (Lab 08's child, the course's GPU adapters); the
    message says why, where the log is and what to do."""


def course_error_classes() -> dict[str, type[CourseError]]:
    """Every course error class loaded so far, by class name (names are unique: a test checks)."""
    found: dict[str, type[CourseError]] = {}
    todo = [CourseError]
    while todo:
        cls = todo.pop()
        found.setdefault(cls.__name__, cls)
        todo.extend(cls.__subclasses__())
    return found
