"""The self-test's figures come from the recordings: checked on fake recordings of Labs 03 and 04."""

from __future__ import annotations

import json

import pytest

from course_utils import paths, recorded_figures
from course_utils.replay import session


def _trace(max_loras, adapters, steps):
    ids = [f"{i:02d}-{a or 'base'}" for i, a in enumerate(adapters)]
    return {"kind": "schedtrace", "args": {"engine": {"max_loras": max_loras}, "prompts": ["p"] * len(ids)},
            "result": {"request_ids": ids, "adapters": adapters, "steps": [[ids[i] for i in s] for s in steps]}}


def test_lab03_figures_count_steps_and_adapters_per_step():
    adapters = ["a", "b", None]
    rec = {"calls": [
        _trace(1, adapters, [[0, 2], [1]]),
        _trace(2, adapters, [[0, 1, 2]]),
        _trace(2, [None, None, None], [[0, 1, 2]]),  # a base-only run of the same size: not the mixed workload
    ]}
    f = recorded_figures.lab03_figures(rec)
    assert f["steps"] == {1: 2, 2: 1} and f["widest"] == {1: 1, 2: 2}
    assert (f["requests"], f["adapters"], f["base_rows"]) == (3, 2, 1)


def test_lab04_figures_read_the_refusals(tmp_path, monkeypatch):
    def answer(status, message):
        return {"request": {}, "response": {"status": {"code": status},
                                            "body": {"string": json.dumps({"error": {"message": message}})}}}

    import yaml

    (tmp_path / "04_server_lab.http-0123456789ab.yaml").write_text(yaml.safe_dump({"interactions": [
        {"request": {}, "response": {"status": {"code": 401}, "body": {"string": '{"error": "Unauthorized"}'}}},
        answer(500, "Worker failed with error 'LoRA rank 64 is greater than max_lora_rank 32.'"),
        answer(400, "The lora adapter 'sql' has already been loaded."),
    ]}))
    monkeypatch.setattr(recorded_figures, "recording_path", lambda profile, lab: tmp_path / f"{lab}.json")
    monkeypatch.setattr(session, "recording_path", lambda profile, lab: tmp_path / f"{lab}.json")
    f = recorded_figures.lab04_figures("fake")
    assert f["rank"]["status"] == 500 and "greater than max_lora_rank" in f["rank"]["message"]
    assert f["twice"]["status"] == 400


def test_lab04_figures_say_what_to_record(tmp_path, monkeypatch):
    monkeypatch.setattr(recorded_figures, "recording_path", lambda profile, lab: tmp_path / f"{lab}.json")
    monkeypatch.setattr(paths, "REPO", tmp_path)             # the message shows the path relative to the checkout
    with pytest.raises(session.RecordingError, match="make record PROFILE=fake"):
        recorded_figures.lab04_figures("fake")


def test_figures_name_the_labs_whose_recordings_lack_a_quoted_figure(monkeypatch):
    monkeypatch.setattr(recorded_figures, "load", lambda lab, profile="tiny": {"lab": lab})
    monkeypatch.setattr(recorded_figures, "lab01_figures", lambda rec: {"support_reused_id": "x", "sql_id1": "x",
                                                                 "support_right_id": "y", "single_request_adapter": "sql",
                                                                 "steps_max_loras_4": None, "steps_default": None})
    monkeypatch.setattr(recorded_figures, "lab03_figures", lambda rec: {"e2e": {"hidden": 1}})
    monkeypatch.setattr(recorded_figures, "lab04_figures", lambda profile: {"rank": {}, "twice": {}})
    monkeypatch.setattr(recorded_figures, "lab05_figures", lambda rec: {"ops_worst": 1e-6, "peft_worst": 0.0,  # exact: present
                                                                 "tolerance": 1e-4, "moved": []})
    monkeypatch.setattr(recorded_figures, "lab07_figures", lambda rec: {"warm": {"blind": {}, "hash": {}, "aware": {}}})
    monkeypatch.setattr(recorded_figures, "lab08_figures", lambda rec: {"base": {}, "adapter": {}, "refused": "x",
                                                                        "rank": None})
    with pytest.raises(session.RecordingError) as e:
        recorded_figures.figures("fake")
    said = str(e.value)
    assert "01_offline_multi_lora（steps_max_loras_4, steps_default）" in said and "05_source_tour（moved）" in said
    assert "03_rank" not in said and "peft_worst" not in said and "make record PROFILE=fake" in said
    assert "08_your_adapter（rank）" in said and "07_scale_out" not in said


def test_the_self_test_questions_live_in_its_notebook():
    """Lab 06's cells hold the question templates; recorded_figures.py holds no question text."""
    import re
    from pathlib import Path

    from course_tools.notebooks import code_cells

    src = Path(recorded_figures.__file__).read_text(encoding="utf-8")
    asks = [c for c in code_cells(Path(__file__).resolve().parents[1] / "labs" / "06_self_test.ipynb")
            if re.search(r"^ask\(\d+, ", c, re.MULTILINE)]
    assert len(asks) == 15 and "def questions" not in src and "会怎样" not in src


def test_a_profile_without_recordings_quotes_the_shipped_tiny_ones(capsys, monkeypatch, tmp_path):
    # Lab 06 on a 4090 before `make record PROFILE=qwen7b`: only tiny's recordings ship
    assert recorded_figures.recorded_profile("tiny") == "tiny" and capsys.readouterr().out == ""
    monkeypatch.setenv("COURSE_RECORDINGS_DIR", str(tmp_path))
    assert recorded_figures.recorded_profile("qwen7b") == "tiny"
    said = capsys.readouterr().out
    assert "配置 'qwen7b' 还没有 01_offline_multi_lora" in said and "make record PROFILE=qwen7b" in said
    for lab in recorded_figures.QUOTED_LABS:       # once it has its own, it quotes them
        (tmp_path / "qwen7b").mkdir(exist_ok=True)
        (tmp_path / "qwen7b" / f"{lab}.json").write_text("{}")
    assert recorded_figures.recorded_profile("qwen7b") == "qwen7b"


def test_lab01s_batch_is_the_lab_batch_not_the_pages_two_row_program():
    """Lab 01 section 2 runs the page's two-row program (one adapter and the base) before the lab's batch: the
    self-test quotes the lab's batch, every row of which was compared with its run alone."""
    f = recorded_figures.lab01_figures(recorded_figures.load("01_offline_multi_lora", "tiny"))
    assert f["batch_adapters"] >= 4 and f["batch_base_rows"] >= 1
    assert f["compared"] == f["batch_rows"] and f["same"] == f["compared"]


def _run(policy, loads, requests):
    return {"kind": "call", "args": {"function": "run"},
            "result": {"policy": policy, "client": {"requests": sum(requests)},
                       "replicas": {f"replica {i}": {"loads": n, "requests": r}
                                    for i, (n, r) in enumerate(zip(loads, requests))}}}


def test_lab07_figures_leave_out_the_cold_pass():
    """Pass 1 starts from empty caches: each policy's figures are its later pass (aware's is pass 4)."""
    rec = {"calls": [{"kind": "call", "args": {"function": "up"},
                      "result": {"adapters in the bucket": list("abcdefgh"), "replicas": 2, "adapters per replica": 2}},
                     _run("aware", (30, 40), (50, 50)), _run("blind", (40, 45), (50, 50)),
                     _run("hash", (20, 5), (80, 20)), _run("aware", (10, 12), (45, 55))]}
    f = recorded_figures.lab07_figures(rec)
    assert [p["loads"] for p in f["passes"]] == [70, 85, 25, 22]
    assert f["warm"]["aware"]["pass"] == 4 and f["warm"]["hash"]["split"] == "80 / 20"
    assert (f["most"], f["fewest"], f["adapters"], f["k"]) == ("blind", "aware", 8, 2)


def test_lab08_figures_score_the_recorded_answers():
    """The self-test's Lab 08 figures are Lab 08's own scores of its recorded answers (base, then the adapter)."""
    from course_utils.newadapter import task

    f = recorded_figures.lab08_figures(recorded_figures.load("08_your_adapter", "tiny"))
    assert f["base"]["n"] == f["adapter"]["n"] == len(task.held_out())
    assert f["adapter"]["right"] > f["base"]["right"]
    from course_utils.exercises import lab08

    assert f["rank"] == lab08.KNOBS["rank"] and "max_lora_rank=1" in f["refused"]
