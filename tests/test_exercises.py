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


def test_a_dict_left_with_blanks_is_not_judged():
    assert ex.judge("04.status", dict.fromkeys(ex.LAB04_STATUS, ...))[0] is None


def test_every_lab_01_to_05_has_at_least_three_exercises():
    for lab in LABS:
        if lab.name[:2] in ("01", "02", "03", "04", "05"):
            cells = json.loads(lab.read_text(encoding="utf-8"))["cells"]
            checked = {n for c in cells if "exercise-check" in c.get("metadata", {}).get("tags", [])
                       for n in re.findall(r"exercises\.check\(\"([^\"]+)\"", "".join(c["source"]))}
            assert len(checked) >= 3, f"{lab.name}: {sorted(checked)}"


def test_lab04_status_codes_are_the_recorded_ones():
    """The status codes exercise 04.status expects are what the recorded vLLM server answered."""
    import yaml

    from course_utils import selftest
    from course_utils.replay.session import http_cassettes

    refusals = selftest.lab04_figures("tiny")
    assert refusals["rank"]["status"] == ex.LAB04_STATUS["rank above --max-lora-rank"]
    assert refusals["twice"]["status"] == ex.LAB04_STATUS["same name loaded again"]
    seen = set()
    for path in http_cassettes("tiny", "04_server_lab"):
        for it in yaml.safe_load(path.read_text())["interactions"]:
            code, body = it["response"]["status"]["code"], it["response"]["body"]["string"]
            if code == 401:                      # no key, or a wrong one
                seen.add("no API key")
            if code == 404 and "medical" in body:
                seen.add("adapter unloaded")
    assert seen == {"no API key", "adapter unloaded"}


def test_lab_exercise_cells_are_blank_and_checked():
    for lab in LABS:
        cells = json.loads(lab.read_text(encoding="utf-8"))["cells"]
        for i, c in enumerate(cells):
            tags = c.get("metadata", {}).get("tags", [])
            src = "".join(c["source"])
            if "exercise" in tags:
                assert re.search(r"[=:]\s*\.\.\.", src), f"{lab.name} cell {i}: a committed exercise must be blank"
            if "exercise-check" in tags:
                names = re.findall(r"exercises\.check\(\"([^\"]+)\"", src)
                assert names and all(n in ex.EXERCISES for n in names), f"{lab.name} cell {i}: unknown check"


# --- nbgrader: metadata in the committed labs, the source version built from the references ---------

def test_exercise_cells_carry_nbgrader_metadata():
    from course_utils import grading

    for lab in LABS:
        nb = json.loads(lab.read_text(encoding="utf-8"))
        assert not grading.tag(nb), f"{lab.name}: run `python -m course_utils.grading tag {lab}`"
        for e in grading.exercises(nb):
            assert nb["cells"][e["exercise"]]["metadata"]["nbgrader"]["solution"] is True
            assert nb["cells"][e["check"]]["metadata"]["nbgrader"]["points"] == 1


def test_the_source_version_holds_each_reference_and_hidden_test():
    from course_utils import grading
    from tests.exercise_solutions import REFERENCE_SOURCE

    for lab in LABS:
        nb = json.loads(lab.read_text(encoding="utf-8"))
        src = grading.source_version(nb, REFERENCE_SOURCE)
        for e in grading.exercises(nb):
            blank, check = ("".join(src["cells"][e[k]]["source"]) for k in ("exercise", "check"))
            assert f"### BEGIN SOLUTION\n{e['var']} = {REFERENCE_SOURCE[e['name']]}\n### END SOLUTION" in blank
            assert "### BEGIN HIDDEN TESTS" in check and f"judge({e['name']!r}, {e['var']})" in check
        assert all(c.get("outputs", []) == [] for c in src["cells"])


def test_reference_source_evaluates_to_the_reference():
    """The source text nbgrader puts in the labs is the same answer the checks are proven with."""
    from tests.exercise_solutions import REFERENCE, REFERENCE_SOURCE, jsonfmt, sql

    for name, text in REFERENCE_SOURCE.items():
        assert eval(text, {"sql": sql, "jsonfmt": jsonfmt}) == REFERENCE[name], name
