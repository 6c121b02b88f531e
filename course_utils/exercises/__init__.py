"""Exercises: the student writes an answer in a cell, the next cell checks it and says why (in Chinese).

A lab's exercise cell (tagged ``exercise``) leaves a blank for the student (``answer = ...``); its
check cell (tagged ``exercise-check``) calls :func:`check`, which prints what is right or wrong
and why. A blank answer prints what to do and never fails the notebook, so a lab runs top to bottom
before anyone has answered; every check works in read mode (it needs no engine).

A check judges what an answer means, not how it is spelled: :mod:`course_utils.answers` reads
``32,768``, ``"32 KiB"``, ``"0.89%"``, ``"Round-Robin"`` or a curl command in its usual spellings,
and a number is right within a stated tolerance (:data:`TOLERANCE`, ±2% unless the exercise says
otherwise). A close miss gets a hint that names the mistake; an answer of the wrong kind (a string
for a list, a dict with extra keys, ``True``) gets a hint too, never a traceback.

The right answers are computed here from the same models the lessons use (the memory model, the
configs, vLLM's allowed ranks), never typed in; ``tests/exercise_solutions.py`` keeps the reference
answers, their other spellings and the typical wrong ones apart from the student's view and proves
each check with them.

What each exercise asks lives in :mod:`.asked`; how its answers are judged in ``labNN.py``, imported the
first time an answer of that lab is judged (a blank answer needs only the task).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .asked import TASKS, TOLERANCE

__all__ = ["CHAT_FIELDS", "EXERCISES", "LAB04_STATUS", "LOAD_FIELDS", "TASKS", "TOLERANCE", "Exercise", "check",
           "indices_answer", "judge", "kv_page_answer", "lora_buffer_answer", "lora_share_answer", "measured",
           "measurement", "merged_disk_answer", "replicas_per_4090_answer", "steps_answer"]

# Names this package offers from a lab's judges, imported when first used: {name: lab}.
_FROM_LAB = {"kv_page_answer": "02", "lora_buffer_answer": "02", "steps_answer": "03", "lora_share_answer": "03",
             "CHAT_FIELDS": "04", "LAB04_STATUS": "04", "LOAD_FIELDS": "04", "indices_answer": "05",
             "merged_disk_answer": "05", "replicas_per_4090_answer": "07"}


@dataclass(frozen=True)
class Exercise:
    name: str
    task: str                                     # what to answer, in one line (shown while blank)
    judge: Callable[[Any], tuple[bool, str]]      # answer -> (right?, why)


def _judges(lab: str):
    return importlib.import_module(f".lab{lab}", __name__)


def exercise(name: str) -> Exercise:
    """The exercise ``name`` ("03.steps"), with its judge (this imports the lab's judges)."""
    return Exercise(name, TASKS[name], _judges(name[:2]).JUDGES[name])


def __getattr__(attr: str):
    if attr == "EXERCISES":
        return {name: exercise(name) for name in TASKS}
    if attr in _FROM_LAB:
        return getattr(_judges(_FROM_LAB[attr]), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")


# What a lab measured for a prediction it checks (Lab 08's 练习 2: the two learning curves' last points), by exercise.
_MEASURED: dict[str, dict] = {}


def measured(name: str, **values) -> None:
    """Called by the cell that runs what exercise ``name`` predicts: its check compares the prediction with these."""
    _MEASURED[name] = {k: (float(v) if hasattr(v, "__float__") and not isinstance(v, (str, int)) else v)
                       for k, v in values.items()}


def measurement(name: str) -> dict | None:
    """What :func:`measured` last kept for ``name`` in this kernel, or None when that cell has not run."""
    return _MEASURED.get(name)


def _unwritten(*args, **kwargs):
    """A function the student has not written yet: its docstring only (Lab 05's lora_linear as committed)."""


def _blank(answer) -> bool:
    if answer is ... or answer is None or (isinstance(answer, str) and not answer.strip()):
        return True
    if callable(answer) and getattr(answer, "__code__", None) is not None \
            and answer.__code__.co_code == _unwritten.__code__.co_code:
        return True                               # nothing to run: no judge (nor the answer reader) is loaded
    if isinstance(answer, dict) and answer and all(v is ... for v in answer.values()):
        return True
    return isinstance(answer, (list, tuple)) and answer and all(v is ... for v in answer)


def judge(name: str, answer) -> tuple[bool | None, str]:
    """(right?, why) for ``answer``; (None, what to do) while it is blank (``...``, None, ``""``, a dict of ``...``).

    Never raises for an answer: one that cannot be read is wrong, with a hint saying what was expected.
    """
    task = TASKS[name]
    if _blank(answer):
        if callable(answer):
            return None, f"还没作答：函数体还是空的。{task}，再运行这一格。"
        gap = " " if task[:1].isascii() else ""
        return None, f"还没作答：把 ... 换成{gap}{task}，再运行这一格。"
    from ..answers import AnswerError
    try:
        return exercise(name).judge(answer)
    except AnswerError as e:
        return False, str(e)
    except Exception as e:  # noqa: BLE001 -- an answer of a kind no hint foresaw is still only a wrong answer
        return False, f"这个答案读不懂（{type(e).__name__}）。要的是：{task}。"


def check(name: str, answer) -> bool | None:
    """Print whether ``answer`` is right and why (never raises for a blank or wrong answer)."""
    ok, why = judge(name, answer)
    mark = "…" if ok is None else ("✓" if ok else "✗")
    print(f"{mark} {name} {why}")
    return ok
