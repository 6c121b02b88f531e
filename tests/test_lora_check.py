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


def test_remove_merged_deletes_live_and_never_in_read_mode(tmp_path, monkeypatch):
    """Live it deletes the folder; read mode answers from the shipped recording and deletes nothing, so a
    read-mode Lab 05 beside a live one (``make test`` runs them side by side) cannot pull the merged model
    from under the live lab's engine."""
    from course_utils.paths import REPO

    (tmp_path / "merged" / "medical").mkdir(parents=True)
    assert lora_check.remove_merged(tmp_path / "merged") == ["medical"]            # outside a lab: it runs
    assert not (tmp_path / "merged").exists()

    def refuse(*args, **kwargs):
        raise AssertionError("read mode deleted a folder")

    monkeypatch.setattr(lora_check.shutil, "rmtree", refuse)
    record.set_current(Session("05_source_tour", "tiny", "replay"))
    try:
        assert lora_check.remove_merged(REPO / "build" / "05_merged") == ["medical"]   # what the recording holds
    finally:
        record.set_current(None)
