"""What the committed labs show is the lesson: no stray stderr, no paths of the machine that recorded them.

A cell may keep stderr only when it shows a warning on purpose: tag it ``shows-warning`` in its
metadata, and say in the prose what the warning teaches.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from course_tools import notebooks

REPO = Path(__file__).resolve().parents[1]
LABS = sorted((REPO / "labs").glob("[0-9]*.ipynb"))
MACHINE_PATH = re.compile(r"(?<![\w.])(/work/|/root/|/home/|/tmp/|/Users/|/private/var/|[A-Z]:\\\\Users\\\\)")


def _outputs(cell):
    for out in cell.get("outputs", []):
        yield out, notebooks.output_text(out)


@pytest.mark.parametrize("lab", LABS, ids=lambda p: p.stem)
def test_no_stderr_but_taught_warnings(lab):
    stray = [f"cell {i}: {text.strip()[:120]}" for i, cell in enumerate(notebooks.read(lab).cells)
             if "shows-warning" not in cell.metadata.get("tags", [])
             for out, text in _outputs(cell) if out.get("name") == "stderr"]
    assert not stray, (f"{lab.name} has stderr in its committed outputs; silence it where the lab starts "
                       f"(course_utils.quiet.quiet_libraries) and re-record:\n" + "\n".join(stray))


@pytest.mark.parametrize("lab", LABS, ids=lambda p: p.stem)
def test_no_machine_paths(lab):
    found = [f"cell {i}: {m.group(0)}..." for i, cell in enumerate(notebooks.read(lab).cells)
             for _, text in _outputs(cell) for m in MACHINE_PATH.finditer(text)]
    assert not found, f"{lab.name} shows paths of the recording machine:\n" + "\n".join(found)


def test_the_path_scanner_catches_machine_paths_only():
    assert MACHINE_PATH.search("loaded /root/.cache/x") and MACHINE_PATH.search("see /work/main/labs")
    assert not MACHINE_PATH.search("data/tiny/adapters/sql and vllm/lora/ops/torch_ops/lora_ops.py")


def test_quiet_libraries_silences_the_cpp_warnings(monkeypatch):
    from course_utils import quiet

    monkeypatch.delenv("TORCH_CPP_LOG_LEVEL", raising=False)
    quiet.quiet_libraries()
    assert os.environ["TORCH_CPP_LOG_LEVEL"] == "ERROR"


PLUMBING = re.compile(r"cassette|\brecord\.|\bcurrent\(\)|replayable|\._live_servers|\.fact\(|\bcu\.\w+\._\w+")


@pytest.mark.parametrize("lab", LABS, ids=lambda p: p.stem)
def test_lesson_cells_carry_no_record_replay_plumbing(lab):
    """Recording and replay happen inside the helpers; a lesson cell shows only the lesson's code."""
    found = [f"cell {i}: {sorted(set(PLUMBING.findall(cell.source)))}"
             for i, cell in enumerate(notebooks.read(lab).cells)
             if cell.cell_type == "code" and PLUMBING.search(cell.source)]
    assert not found, (f"{lab.name}: code cells touch record/replay objects or private names; move that "
                       f"into a course_utils helper that records itself:\n" + "\n".join(found))


PROGRAMMING_ERROR = re.compile(r"\b(AttributeError|NameError|UnboundLocalError|has no attribute|is not defined)\b")


@pytest.mark.parametrize("lab", LABS, ids=lambda p: p.stem)
def test_no_programming_error_in_outputs(lab):
    """A cell that catches exceptions to show a refusal must show the refusal, not a bug in the lab's own
    code (Lab 04's port-clash cell once printed "'Server' object has no attribute 'max_loras'")."""
    found = [f"cell {i}: {m.group(0)}" for i, cell in enumerate(notebooks.read(lab).cells)
             for _, text in _outputs(cell) for m in [PROGRAMMING_ERROR.search(text)] if m]
    assert not found, f"{lab.name} shows a programming error in its outputs:\n" + "\n".join(found)
