"""The self-test's figures come from the recordings: checked on fake recordings of Labs 03 and 04."""

from __future__ import annotations

import json

import pytest

from course_utils import selftest
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
    f = selftest.lab03_figures(rec)
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
    monkeypatch.setattr(selftest, "recording_path", lambda profile, lab: tmp_path / f"{lab}.json")
    monkeypatch.setattr(session, "recording_path", lambda profile, lab: tmp_path / f"{lab}.json")
    f = selftest.lab04_figures("fake")
    assert f["rank"]["status"] == 500 and "greater than max_lora_rank" in f["rank"]["message"]
    assert f["twice"]["status"] == 400
    q = next(q for q in selftest.questions(*_minimal_figures(), f04=f) if q.question.startswith("（Lab 04）"))
    assert "HTTP 500" in q.answer and "而不是 400" in q.answer


def test_lab04_figures_say_what_to_record(tmp_path, monkeypatch):
    monkeypatch.setattr(selftest, "recording_path", lambda profile, lab: tmp_path / f"{lab}.json")
    monkeypatch.setattr(selftest, "REPO", tmp_path)
    with pytest.raises(session.RecordingError, match="make record PROFILE=fake"):
        selftest.lab04_figures("fake")


def _minimal_figures():
    f01 = {"steps": [], "batch_rows": 1, "batch_adapters": 1, "batch_base_rows": 0, "same": 1, "compared": 1,
           "max_loras_default": 1, "max_lora_rank_default": 16, "max_cpu_loras_default": 1, "recorded": "-",
           "vllm": "-", "support_reused_id": None, "sql_id1": None, "support_right_id": None, "single_request": None,
           "engine_max_loras": 4}
    f05 = {"merged_adapters": [], "pairs": 0, "same": 0, "moved": []}
    return f01, f05, selftest.model_figures()


def test_a_profile_without_recordings_quotes_the_shipped_tiny_ones(capsys, monkeypatch, tmp_path):
    # Lab 06 on a 4090 before `make record PROFILE=qwen7b`: only tiny's recordings ship
    assert selftest.recorded_profile("tiny") == "tiny" and capsys.readouterr().out == ""
    monkeypatch.setenv("COURSE_RECORDINGS_DIR", str(tmp_path))
    assert selftest.recorded_profile("qwen7b") == "tiny"
    said = capsys.readouterr().out
    assert "配置 'qwen7b' 还没有 01_offline_multi_lora" in said and "make record PROFILE=qwen7b" in said
    for lab in selftest.QUOTED_LABS:       # once it has its own, it quotes them
        (tmp_path / "qwen7b").mkdir(exist_ok=True)
        (tmp_path / "qwen7b" / f"{lab}.json").write_text("{}")
    assert selftest.recorded_profile("qwen7b") == "qwen7b"
