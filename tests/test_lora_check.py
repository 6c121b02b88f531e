"""Lab 05's checks record themselves, keyed by the source of the student's function."""

import pytest

from course_utils.engine import lora_check
from course_utils.replay.record import replayable
from course_utils.replay import session as record
from course_utils.replay.session import ReplayMiss, Session


def test_a_check_replays_for_the_same_function_and_refuses_an_edited_one(recordings, monkeypatch):
    runs = []

    @replayable
    def check(fn, prof, seed=0):
        runs.append(seed)
        return {"value": fn(seed)}

    class Prof:
        name, base_model, adapters = "tiny", "base", {"sql": "a", "json": "b"}

    def student(x):
        return x + 1

    def edited(x):
        return x + 2

    assert check(student, Prof()) == {"value": 1} and runs == [0]       # outside a lab: it just runs
    record.set_current(Session("05_source_tour", "tiny", "live", recording=True))
    assert check(student, Prof(), seed=2) == {"value": 3} and runs == [0, 2]
    record.set_current(Session("05_source_tour", "tiny", "replay"))
    try:
        assert check(student, Prof(), seed=2) == {"value": 3} and runs == [0, 2]   # replayed, not run
        with pytest.raises(ReplayMiss, match="not recorded"):
            check(edited, Prof(), seed=2)
        Prof.adapters = {"sql": "a"}                                     # another shelf: another key
        with pytest.raises(ReplayMiss, match="not recorded"):
            check(student, Prof(), seed=2)
    finally:
        record.set_current(None)


def test_the_printed_checks_show_their_body():
    import inspect

    for fn in (lora_check.compare_with_vllm_ops, lora_check.compare_with_peft, lora_check.merge_adapter):
        text = inspect.getsource(fn)
        assert text.startswith("@replayable\ndef ") and "import torch" in text
    assert "bgmv_shrink(" in inspect.getsource(lora_check.compare_with_vllm_ops)
    assert "merge_and_unload()" in inspect.getsource(lora_check.merge_adapter)
