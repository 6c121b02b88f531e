"""The readers' answers (tests/exercise_answers, issue 54): enough of them for every exercise, and the split into
tuning and held-out halves is the committed one (made once; an answer never moves between halves)."""

import ast
import importlib.util
import json
import re

from course_tools import grading
from course_utils.paths import REPO

HERE = REPO / "tests" / "exercise_answers"


def answers() -> dict[str, list[dict]]:
    """Every reader's answers, per exercise (read by the scorer's own loader)."""
    from course_tools.exercise_score import load

    per: dict[str, list[dict]] = {}
    for item in load()[0].values():
        per.setdefault(item["exercise"], []).append(item)
    return per


def test_every_exercise_has_fifteen_right_and_ten_wrong_answers_that_parse():
    in_labs = {m for nb in (REPO / "labs").glob("*.ipynb")
               for m in re.findall(r'exercises\.check\(\\"([0-9]{2}\.[a-z_0-9]+)\\"', nb.read_text(encoding="utf-8"))}
    per = answers()
    assert set(per) == in_labs
    for exercise, items in per.items():
        assert sum(a["right"] for a in items) >= 15 and sum(not a["right"] for a in items) >= 10, exercise
        for a in items:               # a value, or a whole cell that defines the function (Lab 05's lora_linear)
            ast.parse(a["source"], mode="exec" if grading.is_def(a["source"]) else "eval")
            assert a["right"] or a.get("why"), (exercise, a["source"])


def test_the_split_is_the_committed_one(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("split", HERE / "split.py")
    split = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(split)
    for path in HERE.glob("reader_*.json"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    monkeypatch.setattr(split, "HERE", tmp_path)
    split.main()
    made = json.loads((tmp_path / "split.json").read_text(encoding="utf-8"))
    assert made == json.loads((HERE / "split.json").read_text(encoding="utf-8"))
    assert not set(made["tuning"]) & set(made["heldout"])
    assert len(made["tuning"]) + len(made["heldout"]) == sum(len(v) for v in answers().values())


def test_the_score_counts_right_accepted_and_wrong_rejected_per_lab():
    from course_tools.exercise_score import score

    items = {"r/01.x/0": {"exercise": "01.x", "right": True}, "r/01.x/1": {"exercise": "01.x", "right": True},
             "r/01.x/2": {"exercise": "01.x", "right": False}, "r/02.y/0": {"exercise": "02.y", "right": False}}
    said = {"r/01.x/0": True, "r/01.x/1": "NameError", "r/01.x/2": False, "r/02.y/0": True}
    per = score(sorted(items), items, said)
    assert per["01"] == {"right": 2, "accepted": 1, "wrong": 1, "rejected": 1, "misses": ["r/01.x/1"]}
    assert per["02"] == {"right": 0, "accepted": 0, "wrong": 1, "rejected": 0, "misses": ["r/02.y/0"]}
