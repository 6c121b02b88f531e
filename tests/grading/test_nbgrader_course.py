"""nbgrader releases and autogrades the labs (read mode, no engine): `make test-nbgrader`.

For every lab with exercises: the source version (references as solutions, the judge as hidden
tests) is built by ``course_tools.grading``; ``nbgrader generate_assignment`` must give back the
committed lab's code; ``nbgrader autograde`` must give the reference answers full marks, the same answers in other
spellings (``"32,768"``, ``"round-robin"``, curl with ``--json``: ``OTHER_SPELLINGS_SOURCE``) full marks too,
and a blank and a wrong submission (the first typical wrong answer of each exercise) less. Two students answer
from the held-out half of the readers' corpus (tests/exercise_answers, issue 54), one answer per exercise drawn with
a fixed seed: its wrong answers must get 0; its right answers' marks are printed (issue 54 asks for full marks; they
are not gated, since the held-out half is never tuned to).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from course_tools import grading, notebooks
from tests import exercise_solutions as sol

REPO = Path(__file__).resolve().parents[2]
LABS = [lab for lab in sorted((REPO / "labs").glob("[0-9]*.ipynb"))
        if grading.exercises(notebooks.read(lab))]
BIN = Path(sys.executable).parent        # nbgrader runs `alembic` from PATH: this venv's bin first

pytest.importorskip("nbgrader", reason="nbgrader is the instructor extra: pip install -e '.[instructor]'")


def nbgrader(course: Path, *args: str) -> str:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "COURSE_MODE": "replay", "COURSE_PROFILE": "tiny"}
    out = subprocess.run([str(BIN / "nbgrader"), *args], check=False, cwd=course, env=env, capture_output=True,
                         text=True, timeout=900)
    assert out.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out.stdout + out.stderr


def code(nb) -> list[str]:
    return [c.source.rstrip() for c in nb.cells if c.cell_type == "code"]


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = tmp_path_factory.mktemp("nbgrader-course")
    made = grading.course(root, LABS, sol.REFERENCE_SOURCE)
    assert made == [grading.assignment_name(lab) for lab in LABS]
    return root


def heldout(right: bool, seed: int = 54) -> dict[str, str]:
    """One held-out answer per exercise (right or wrong), drawn with a fixed seed: exercise -> source."""
    from course_tools.exercise_score import load

    items, split = load()
    per: dict[str, list[str]] = {}
    for name in sorted(split["heldout"]):
        if items[name]["right"] == right:
            per.setdefault(items[name]["exercise"], []).append(items[name]["source"])
    rng = random.Random(seed)
    return {exercise: rng.choice(sources) for exercise, sources in sorted(per.items())}


@pytest.mark.parametrize("lab", LABS, ids=lambda p: p.stem)
def test_release_is_the_committed_lab_and_autograde_scores_it(course, lab):
    name = grading.assignment_name(lab)
    nbgrader(course, "generate_assignment", name, "--force")
    released = notebooks.read(course / "release" / name / lab.name)
    committed = notebooks.read(lab)
    assert code(released) == code(committed), "the released student version differs from the committed lab"
    assert not any("BEGIN SOLUTION" in s or "HIDDEN TESTS" in s for s in code(released))

    wrong = {n: sol.WRONG_SOURCE.get(n, repr(v[0][0])) for n, v in sol.WRONG.items()}
    students = {"reference": sol.REFERENCE_SOURCE, "spellings": sol.OTHER_SPELLINGS_SOURCE, "blank": {}, "wrong": wrong,
                "heldout-right": heldout(True), "heldout-wrong": heldout(False)}
    for student, answers in students.items():
        notebooks.write(grading.answered(released, answers), course / "submitted" / student / name / lab.name)
    nbgrader(course, "autograde", name, "--create", "--force")

    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        scores = {s: gb.find_submission(name, s).score for s in students}
        best = gb.find_submission(name, "reference").max_score
    n = len(grading.exercises(committed))
    print(f"{name}: {n} exercises, scores {scores} of {best}")
    assert best == n and scores["reference"] == n and scores["spellings"] == n
    assert scores["blank"] == 0 and scores["wrong"] < n
    # the held-out half is measured, never tuned to: its right answers' marks are printed above, not gated (a gate
    # would have the judge fixed to pass them); every wrong one must score 0
    assert scores["heldout-wrong"] == 0
