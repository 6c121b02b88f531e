"""Every exercise check accepts its reference answer, rejects the typical wrong ones with a reason,
and leaves a blank answer unjudged without raising; every lab's exercise cells call a known check."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from course_utils import exercises as ex
from tests.exercise_solutions import REFERENCE, WRONG

LABS = sorted((Path(__file__).resolve().parents[1] / "labs").glob("[0-9]*.ipynb"))


def test_every_exercise_has_a_reference_and_wrong_answers():
    assert set(REFERENCE) == set(ex.EXERCISES) == set(WRONG)
    assert all(len(v) >= 2 for v in WRONG.values())


@pytest.mark.parametrize("name", sorted(ex.EXERCISES))
def test_the_reference_is_accepted(name):
    ok, why = ex.judge(name, REFERENCE[name])
    assert ok is True and why.startswith("right")


@pytest.mark.parametrize("name,answer", [(n, a) for n, answers in sorted(WRONG.items()) for a in answers])
def test_wrong_answers_are_rejected_with_a_reason(name, answer):
    ok, why = ex.judge(name, answer)
    assert ok is False and len(why) > 20 and not why.startswith("right")


@pytest.mark.parametrize("name", sorted(ex.EXERCISES))
def test_a_blank_answer_is_not_judged_and_does_not_raise(name, capsys):
    assert ex.check(name, ...) is None
    assert "not answered yet" in capsys.readouterr().out


def test_lab_exercise_cells_are_blank_and_checked():
    for lab in LABS:
        cells = json.loads(lab.read_text(encoding="utf-8"))["cells"]
        for i, c in enumerate(cells):
            tags = c.get("metadata", {}).get("tags", [])
            src = "".join(c["source"])
            if "exercise" in tags:
                assert re.search(r"=\s*\.\.\.", src), f"{lab.name} cell {i}: a committed exercise must be blank"
            if "exercise-check" in tags:
                names = re.findall(r"exercises\.check\(\"([^\"]+)\"", src)
                assert names and all(n in ex.EXERCISES for n in names), f"{lab.name} cell {i}: unknown check"
