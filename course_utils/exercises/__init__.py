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
"""

from __future__ import annotations

from ..answers import AnswerError
from . import lab01, lab02, lab03, lab04, lab05, lab07, lab08
from .common import TOLERANCE, Exercise
from .lab02 import kv_page_answer, lora_buffer_answer
from .lab03 import lora_share_answer, steps_answer
from .lab04 import CHAT_FIELDS, LAB04_STATUS, LOAD_FIELDS
from .lab05 import indices_answer, merged_disk_answer
from .lab07 import replicas_per_4090_answer

__all__ = ["CHAT_FIELDS", "EXERCISES", "LAB04_STATUS", "LOAD_FIELDS", "TOLERANCE", "Exercise", "check", "indices_answer",
           "judge", "kv_page_answer", "lora_buffer_answer", "lora_share_answer", "merged_disk_answer",
           "replicas_per_4090_answer", "steps_answer"]

EXERCISES = {e.name: e for lab in (lab01, lab02, lab03, lab04, lab05, lab07, lab08) for e in lab.EXERCISES}


def _blank(answer) -> bool:
    if answer is ... or answer is None or (isinstance(answer, str) and not answer.strip()):
        return True
    if isinstance(answer, dict) and answer and all(v is ... for v in answer.values()):
        return True
    return isinstance(answer, (list, tuple)) and answer and all(v is ... for v in answer)


def judge(name: str, answer) -> tuple[bool | None, str]:
    """(right?, why) for ``answer``; (None, what to do) while it is blank (``...``, None, ``""``, a dict of ``...``).

    Never raises for an answer: one that cannot be read is wrong, with a hint saying what was expected.
    """
    ex = EXERCISES[name]
    if _blank(answer):
        gap = " " if ex.task[:1].isascii() else ""
        return None, f"还没作答：把 ... 换成{gap}{ex.task}，再运行这一格。"
    try:
        return ex.judge(answer)
    except AnswerError as e:
        return False, str(e)
    except Exception as e:  # noqa: BLE001 -- an answer of a kind no hint foresaw is still only a wrong answer
        return False, f"这个答案读不懂（{type(e).__name__}）。要的是：{ex.task}。"


def check(name: str, answer) -> bool | None:
    """Print whether ``answer`` is right and why (never raises for a blank or wrong answer)."""
    ok, why = judge(name, answer)
    mark = "…" if ok is None else ("✓" if ok else "✗")
    print(f"{mark} {name} {why}")
    return ok
