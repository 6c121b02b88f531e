"""The exercise judges measured as a classifier (issue 54): on the readers' answers in ``tests/exercise_answers``.

    .venv/bin/python -m course_tools.exercise_score            # counts per lab; the tuning half's misses
    .venv/bin/python -m course_tools.exercise_score --json F   # ... and the counts as JSON

An answer's ``source`` is what the reader typed after ``answer =``, or, for a function the student writes (Lab 05's
``lora_linear``), the whole cell: it is run in the lab's namespace and the function it defines is judged.
Each lab runs in read mode in its own kernel
(the Python that runs this module: ``.venv``, where torch is installed, so that Lab 05's function is judged on
torch tensors as a live student's is); right after each exercise's check cell, one more cell evaluates
every reader's answer to that exercise in the lab's namespace (readers write ``[sql, None, ...]`` with the lab's
``sql``) and hands it to :func:`course_utils.exercises.judge`. An answer that raises counts as not accepted.
A right answer counts when the judge accepts it, a wrong one when the judge rejects it. The held-out half is printed as counts only: the judge is tuned on the
tuning half, never on what the held-out half rejects (``tests/exercise_answers/README.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import defaultdict

import nbformat
from nbclient import NotebookClient

from course_utils.paths import REPO

ANSWERS = REPO / "tests" / "exercise_answers"


def load() -> tuple[dict[str, dict], dict]:
    """``{name: {"exercise", "source", "right", "why"}}`` for every reader's answer, and the committed split."""
    split = json.loads((ANSWERS / "split.json").read_text(encoding="utf-8"))
    items = {}
    for reader in split["readers"]:
        data = json.loads((ANSWERS / f"reader_{reader}.json").read_text(encoding="utf-8"))
        for exercise, entry in data["exercises"].items():
            for n, answer in enumerate(entry["answers"]):
                items[f"{reader}/{exercise}/{n}"] = {"exercise": exercise, **answer}
    return items, split


MARK = "@@exercise-verdicts@@"
JUDGE_CELL = """
import json as _j
from course_tools.grading import is_def as _is_def
from course_utils.exercises import judge as _judge
_said = {{}}
for _name, _src in _j.loads({answers!r}).items():
    try:
        if _is_def(_src):    # a function the student writes (Lab 05's lora_linear): run its cell, take the function
            _ns = dict(globals())
            exec(compile(_src, "<answer>", "exec"), _ns)
            _answer = _ns[{var!r}]
        else:
            _answer = eval(compile(_src, "<answer>", "eval"))
        _said[_name] = _judge({exercise!r}, _answer)[0]
    except Exception as _e:  # the student's cell would raise: not accepted
        _said[_name] = type(_e).__name__
print({mark!r} + _j.dumps(_said))
"""


def verdicts(items: dict) -> dict[str, object]:
    """``{name: True | False | None | "<exception class>"}``: each answer judged in its lab's namespace."""
    by_exercise: dict = defaultdict(dict)
    for name, item in items.items():
        by_exercise[item["exercise"]][name] = item["source"]
    said: dict = {}
    env = {"COURSE_MODE": "replay", "COURSE_PROFILE": "tiny"}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        for path in sorted((REPO / "labs").glob("[0-9]*.ipynb")):
            nb = nbformat.read(path, as_version=4)
            cells = []
            for cell in nb.cells:
                cells.append(cell)
                m = re.search(r'exercises\.check\("([0-9]{2}\.[a-z_0-9]+)",\s*(\w+)', cell.source) \
                    if cell.cell_type == "code" else None
                if m and m.group(1) in by_exercise:
                    cells.append(nbformat.v4.new_code_cell(JUDGE_CELL.format(
                        answers=json.dumps(by_exercise[m.group(1)], ensure_ascii=False), exercise=m.group(1),
                        var=m.group(2), mark=MARK)))
            if len(cells) == len(nb.cells):
                continue
            nb.cells = cells
            NotebookClient(nb, timeout=900, resources={"metadata": {"path": str(path.parent)}}).execute()
            for cell in nb.cells:
                for out in cell.get("outputs", []):
                    if MARK in out.get("text", ""):
                        said.update(json.loads(out["text"].split(MARK, 1)[1]))
    finally:
        for k, v in old.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    missing = set(items) - set(said)
    if missing:
        raise RuntimeError(f"no verdict for {len(missing)} answers (their exercise's check cell was not found): "
                           f"{sorted(missing)[:5]}")
    return said


def score(names: list[str], items: dict, said: dict) -> dict:
    """Per lab: right answers accepted / right, wrong answers rejected / wrong, and the misses."""
    per: dict = defaultdict(lambda: {"right": 0, "accepted": 0, "wrong": 0, "rejected": 0, "misses": []})
    for name in names:
        item = items[name]
        lab = per[item["exercise"][:2]]
        accepted = said[name] is True
        if item["right"]:
            lab["right"] += 1
            lab["accepted"] += accepted
            if not accepted:
                lab["misses"].append(name)
        else:
            lab["wrong"] += 1
            lab["rejected"] += not accepted
            if accepted:
                lab["misses"].append(name)
    return dict(sorted(per.items()))


def _pct(a: int, b: int) -> str:
    return f"{a}/{b} ({100 * a / b:.0f}%)" if b else "-"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="also write the counts here")
    ap.add_argument("--gate", action="store_true",
                    help="exit 1 unless the tuning half is judged without a miss (the held-out half is only printed)")
    args = ap.parse_args(argv)
    items, split = load()
    said = verdicts(items)
    result = {}
    batches = split.get("batches", {"1": split["readers"]})
    halves = {"tuning": split["tuning"], "heldout": split["heldout"]}
    for b, readers in batches.items():          # each batch's held-out half on its own as well (README)
        halves[f"heldout, batch {b} ({'/'.join(readers)})"] = [n for n in split["heldout"] if n.split("/")[0] in readers]
    for half, names in halves.items():
        per = score(names, items, said)
        result[half] = {lab: {k: v for k, v in c.items() if k != "misses" or half == "tuning"} for lab, c in per.items()}
        print(f"== {half}: lab  right accepted  wrong rejected")
        for lab, c in per.items():
            print(f"   {lab}   {_pct(c['accepted'], c['right']):>16}  {_pct(c['rejected'], c['wrong']):>14}")
        if half == "tuning":
            for c in per.values():
                for name in c["misses"]:
                    it = items[name]
                    print(f"   miss {name}: {'right' if it['right'] else 'wrong'} {it['source']}  -> {said[name]}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1, ensure_ascii=False)
    missed = sum(len(c.get("misses", [])) for c in result["tuning"].values())
    if args.gate and missed:
        print(f"exercise-score: {missed} tuning answers judged wrongly (listed above); the held-out half is not gated")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
