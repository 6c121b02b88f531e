"""``@pytest.mark.fresh_process`` (tests/conftest.py): the test runs in a pytest of its own, and its outcome,
a pass, a skip or a failure with the child's traceback, is this pytest's."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).with_name("programs")


@pytest.mark.fresh_process(COURSE_PROBE="from the marker")
def test_the_body_runs_in_a_child_with_the_markers_environment():
    assert os.environ["COURSE_FRESH_PROCESS"] == "1"
    assert os.environ["COURSE_PROBE"] == "from the marker"
    assert os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"      # vLLM's quiet in-process default


def test_a_pass_a_failure_and_a_skip_come_back(tmp_path):
    shutil.copy(Path(__file__).with_name("conftest.py"), tmp_path / "conftest.py")
    shutil.copy(PROGRAMS / "fresh_outcomes.py", tmp_path / "test_outcomes.py")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:nbval",
                        str(tmp_path)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert "1 failed, 1 passed, 1 skipped" in r.stdout, r.stdout + r.stderr
    assert "assert (6 * 7) == 41" in r.stdout and "test_outcomes.py:" in r.stdout   # the child's traceback
    assert "nothing to do here" in r.stdout
