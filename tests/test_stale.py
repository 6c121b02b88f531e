"""The stale check: the shipped labs, and other profiles' recordings beside them (labs/recorded/<profile>/)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from course_tools import notebooks
from course_utils.replay import session
from course_tools import stale

REPO = Path(__file__).resolve().parents[1]
LAB = REPO / "labs" / "02_memory_layout.ipynb"


@pytest.fixture
def world(tmp_path, monkeypatch):
    """A scratch repository: labs/, data/recordings/, with a qwen7b recording of Lab 02 beside the lab."""
    labs, recs = tmp_path / "labs", tmp_path / "data" / "recordings"
    (labs / "recorded" / "qwen7b").mkdir(parents=True)
    shutil.copy(LAB, labs / LAB.name)
    shutil.copy(LAB, labs / "recorded" / "qwen7b" / LAB.name)          # as `make record PROFILE=qwen7b` writes it
    for prof in ("tiny", "qwen7b"):
        (recs / prof).mkdir(parents=True)
        shutil.copy(REPO / "data" / "recordings" / "tiny" / f"{LAB.stem}.json", recs / prof / f"{LAB.stem}.json")
    (recs / "cpu").mkdir()
    (recs / "cpu" / "lora_ops.json").write_text('{"provenance": {}}')    # a bench recording, not a lab's
    for mod in (session, stale):
        monkeypatch.setattr(mod, "RECORDINGS", recs, raising=False)
    monkeypatch.setattr(stale, "REPO", tmp_path)
    monkeypatch.setattr(stale, "RECORDED", labs / "recorded")
    stale.stamp(labs / "recorded" / "qwen7b" / LAB.name, "qwen7b")
    return labs


def edit_code(nb: Path):
    data = notebooks.read(nb)
    next(c for c in data.cells if c.cell_type == "code").source += "\n# edited"
    notebooks.write(data, nb)


def test_a_4090_recording_beside_the_labs_keeps_the_check_green(world):
    assert stale.other_profiles() == ["qwen7b"]
    assert stale.main(["--profile", "tiny", "--other-profiles", str(world / LAB.name)]) == 0
    assert [(c.name, s) for c, _, s in stale.recorded_copies("qwen7b", world)] == [(LAB.name, "current")]


def test_a_lab_changed_since_the_4090_recording_is_reported_not_failed(world, capsys):
    edit_code(world / LAB.name)
    failures, notes = stale.other_profile_report()
    assert failures == [] and len(notes) == 1 and "out of date" in notes[0] and "make record PROFILE=qwen7b" in notes[0]
    assert stale.other_profile_report(strict=True)[0]
    stale.main(["--current-recorded"])
    assert capsys.readouterr().out == ""                     # read mode skips the out-of-date copy


def test_hand_edited_outputs_of_a_recorded_copy_fail(world):
    copy = world / "recorded" / "qwen7b" / LAB.name
    data = notebooks.read(copy)
    next(c for c in data.cells if c.cell_type == "code" and c.outputs).outputs = []
    notebooks.write(data, copy)
    failures, _ = stale.other_profile_report()
    assert failures and "outputs are not those of the recording run" in failures[0]
