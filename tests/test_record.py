import json

import pytest

from course_utils.replay import session as record
from course_utils.replay.session import RecordingError, ReplayMiss, Session


@pytest.fixture
def recordings(tmp_path, monkeypatch):
    monkeypatch.setattr(record, "RECORDINGS", tmp_path)
    monkeypatch.setattr(record, "REPO", tmp_path.parent)
    return tmp_path


def test_record_then_replay(recordings):
    live = Session("lab", "tiny", "live", recording=True)
    assert live.run("add", [1, 2], lambda: 3) == 3
    assert live.run("add", [1, 2], lambda: 4) == 4  # the same call a second time: its own entry
    with pytest.raises(KeyError):
        live.run("boom", [], lambda: {}["x"])
    replay = Session("lab", "tiny", "replay")
    assert replay.provenance["profile"] == "tiny" and replay.provenance["lab"] == "lab"
    assert replay.run("add", [1, 2], None) == 3
    assert replay.run("add", [1, 2], None) == 4
    assert replay.run("add", [1, 2], None) == 4  # a rerun of the cell gets the last answer again
    with pytest.raises(Exception) as e:
        replay.run("boom", [], None)
    assert type(e.value).__name__ == "KeyError" and isinstance(e.value, record.ReplayedError)


def test_unrecorded_input_says_how_to_run_live(recordings):
    Session("lab", "tiny", "live", recording=True).run("generate", ["hello"], lambda: "hi")
    replay = Session("lab", "tiny", "replay")
    with pytest.raises(ReplayMiss, match="was not recorded.*COURSE_MODE=live"):
        replay.run("generate", ["hello, edited"], None)


def test_missing_recording_names_the_command(recordings):
    with pytest.raises(RecordingError, match="no recordings for profile 'qwen7b'.*make record PROFILE=qwen7b"):
        Session("lab", "qwen7b", "replay")
    Session("other", "tiny", "live", recording=True)
    with pytest.raises(RecordingError, match="has recordings for: other"):
        Session("lab", "tiny", "replay")


def test_corrupt_recording(recordings):
    (recordings / "tiny").mkdir()
    (recordings / "tiny" / "lab.json").write_text("{not json")
    with pytest.raises(RecordingError, match="corrupt.*git checkout"):
        Session("lab", "tiny", "replay")


def test_paths_are_portable(recordings):
    s = Session("lab", "tiny", "live", recording=True)
    s.run("load", [str(record.REPO / "data" / "x")], lambda: str(record.REPO / "y"))
    data = json.loads((recordings / "tiny" / "lab.json").read_text())
    assert data["calls"][0]["args"] == ["$REPO/data/x"] and data["calls"][0]["result"] == "$REPO/y"
    assert Session("lab", "tiny", "replay").run("load", [str(record.REPO / "data" / "x")], None) == str(record.REPO / "y")


def test_live_without_recording_writes_nothing(recordings):
    Session("lab", "tiny", "live").run("x", [], lambda: 1)
    assert not (recordings / "tiny" / "lab.json").exists()
