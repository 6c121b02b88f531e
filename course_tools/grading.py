"""Grading the labs' exercises with nbgrader: the committed lab is the student version.

Each exercise is a pair of cells: the exercise cell (tag ``exercise``) leaves a blank,
``kv_page_answer = ...``, and its check cell (tag ``exercise-check``) calls
``cu.exercises.check("02.kv_page", kv_page_answer)``. Both carry nbgrader's cell metadata
(:func:`tag` writes it; ``tests/test_grading.py`` checks it is there): the exercise cell is an
nbgrader *solution* cell, the check cell an autograded *test* cell worth one point.

The reference answers are kept apart from the labs (``tests/exercise_solutions.py``), so the
labs never hold them. :func:`source_version` builds nbgrader's *source* notebook of a lab from
the committed one: each blank gets the reference answer between ``### BEGIN SOLUTION`` /
``### END SOLUTION``, and each check cell gets a hidden test between ``### BEGIN HIDDEN TESTS``
/ ``### END HIDDEN TESTS`` that fails unless :func:`course_utils.exercises.judge` accepts the
answer. ``nbgrader generate_assignment`` removes both again (with ``ClearSolutions.code_stub``
set to nothing), which gives back the committed lab; ``nbgrader autograde`` puts the hidden
tests back and runs the lab (read mode needs no engine).

``python -m course_tools.grading tag labs/*.ipynb`` writes the metadata;
``python -m course_tools.grading course DIR`` builds an nbgrader course folder
(``make nbgrader-course``), and ``make test-nbgrader`` releases and autogrades it.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import re
import sys
from pathlib import Path

from nbformat import NotebookNode

from course_tools.notebooks import read, write

CHECK = re.compile(r'exercises\.check\("(?P<name>[^"]+)",\s*(?P<var>\w+)\)')
# A blank is `answer = ...` (or a dict of `...`), or a function the student writes: `def lora_linear(...):` with only
# its docstring (Lab 05's 练习 2). A function's reference and answers are whole `def` sources (see :func:`is_def`).
BLANK = re.compile(r"^(?:(?P<var>\w+)\s*=\s*(\.\.\.|\{)|def (?P<fn>\w+)\()", re.MULTILINE)
SCHEMA = 3


def _tags(cell) -> list[str]:
    return cell.metadata.get("tags", [])


def grade_id(kind: str, name: str) -> str:
    return f"{kind}_{name.replace('.', '_')}"


def exercises(nb: NotebookNode) -> list[dict]:
    """The lab's exercises in order: name, answer variable, and the indices of the two cells."""
    cells, out = nb.cells, []
    for i, c in enumerate(cells):
        if "exercise-check" not in _tags(c):
            continue
        m = CHECK.search(c.source)
        if not m:
            raise ValueError(f"cell {i} is tagged exercise-check but does not call cu.exercises.check(name, var)")
        blank = [j for j, e in enumerate(cells[:i]) if "exercise" in _tags(e)
                 and any((b.group("var") or b.group("fn")) == m["var"] for b in BLANK.finditer(e.source))]
        if not blank:
            raise ValueError(f"cell {i} checks {m['var']!r}, but no earlier cell tagged exercise assigns it")
        out.append({"name": m["name"], "var": m["var"], "exercise": blank[-1], "check": i})
    return out


def nbgrader_metadata(kind: str, name: str) -> dict:
    """nbgrader's cell metadata for an exercise cell (a solution) or a check cell (a test worth 1 point)."""
    if kind == "exercise":
        return {"grade": False, "grade_id": grade_id("answer", name), "locked": False, "schema_version": SCHEMA,
                "solution": True, "task": False}
    return {"grade": True, "grade_id": grade_id("check", name), "locked": True, "points": 1,
            "schema_version": SCHEMA, "solution": False, "task": False}


def tag(nb: NotebookNode) -> bool:
    """Give every exercise and check cell its nbgrader metadata; True if anything changed."""
    changed = False
    for ex in exercises(nb):
        for kind in ("exercise", "check"):
            meta = nb.cells[ex[kind]].metadata
            want = nbgrader_metadata(kind, ex["name"])
            if meta.get("nbgrader") != want:
                meta["nbgrader"], changed = want, True
    return changed


def hidden_test(name: str, var: str) -> str:
    return (f"ok, why = cu.exercises.judge({name!r}, {var})\n"
            f"assert ok is True, f\"{name}: {{why}}\"")


def is_def(source: str) -> bool:
    """Whether an answer's source is a whole function definition (the answer to a function the student writes)."""
    return source.lstrip().startswith(("def ", "import ", "from "))


def _solution(var: str, source: str) -> str:
    """The solution region for ``var``: ``var = <source>``, or a function's body (its ``def`` line dropped), indented."""
    if not is_def(source):
        return f"### BEGIN SOLUTION\n{var} = {source}\n### END SOLUTION"
    lines = source.strip("\n").splitlines()
    body = lines[next(i for i, line in enumerate(lines) if line.startswith(f"def {var}(")) + 1:]
    return "\n".join(["    ### BEGIN SOLUTION", *body, "    ### END SOLUTION"])


def source_version(nb: NotebookNode, reference: dict[str, str]) -> NotebookNode:
    """nbgrader's source notebook: reference answers as solutions, the judge as hidden tests.

    ``reference`` maps an exercise name to the Python source of its answer, evaluated in the lab.
    """
    nb = copy.deepcopy(nb)
    for ex in exercises(nb):
        if ex["name"] not in reference:
            raise KeyError(f"no reference answer for exercise {ex['name']!r}")
        blank, check = nb.cells[ex["exercise"]], nb.cells[ex["check"]]
        blank.source = f"{blank.source.rstrip()}\n{_solution(ex['var'], reference[ex['name']])}"
        check.source += f"\n### BEGIN HIDDEN TESTS\n{hidden_test(ex['name'], ex['var'])}\n### END HIDDEN TESTS"
    for c in nb.cells:
        if c.cell_type == "code":
            c.outputs, c.execution_count = [], None
    return nb


def answered(nb: NotebookNode, answers: dict[str, str]) -> NotebookNode:
    """A student's submission: the released notebook with ``answers`` (name -> source) after each blank."""
    nb = copy.deepcopy(nb)
    for ex in exercises(nb):
        if ex["name"] in answers:
            cell = nb.cells[ex["exercise"]]
            answer = answers[ex["name"]]
            typed = answer if is_def(answer) else f"{ex['var']} = {answer}"
            cell.source = f"{cell.source.rstrip()}\n{typed}"
    return nb


NBGRADER_CONFIG = '''\
c = get_config()  # noqa: F821
c.CourseDirectory.course_id = "multi-lora-course"
c.CourseDirectory.root = {root!r}
c.CourseDirectory.db_url = "sqlite:///" + {db!r}
# The committed lab is the student version: a solution region is removed, not replaced by a stub.
c.ClearSolutions.code_stub = {{"python": ""}}
c.ClearSolutions.text_stub = ""
c.ExecutePreprocessor.timeout = 600
'''


def assignment_name(lab: Path) -> str:
    return f"lab{lab.name[:2]}"


def course(root: Path, labs: list[Path], reference: dict[str, str]) -> list[str]:
    """An nbgrader course folder: its config and one source assignment per lab that has exercises."""
    root = root.resolve()
    root.mkdir(parents=True, exist_ok=True)
    (root / "nbgrader_config.py").write_text(NBGRADER_CONFIG.format(root=str(root), db=str(root / "gradebook.db")))
    made = []
    for lab in labs:
        nb = read(lab)
        if not exercises(nb):
            continue
        write(source_version(nb, reference), root / "source" / assignment_name(lab) / lab.name)
        made.append(assignment_name(lab))
    return made


def _load_solutions(path: Path):
    spec = importlib.util.spec_from_file_location("exercise_solutions", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m course_tools.grading", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tag", help="write nbgrader's metadata into the labs' exercise and check cells")
    t.add_argument("labs", nargs="+", type=Path)
    c = sub.add_parser("course", help="build an nbgrader course folder (source assignments with the references)")
    c.add_argument("root", type=Path)
    c.add_argument("labs", nargs="+", type=Path)
    c.add_argument("--solutions", type=Path, default=Path("tests/exercise_solutions.py"))
    args = ap.parse_args(argv)
    if args.cmd == "tag":
        for lab in args.labs:
            nb = read(lab)
            if tag(nb):
                write(nb, lab)
                print(f"tagged {lab}")
        return 0
    sol = _load_solutions(args.solutions)
    made = course(args.root, args.labs, sol.REFERENCE_SOURCE)
    print(f"nbgrader course in {args.root}: source assignments {', '.join(made)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
