"""Three fresh_process tests (a pass, a failure, a skip), copied as test_outcomes.py beside tests/conftest.py
by tests/test_fresh_process.py: each outcome must come back from the child pytest."""

import pytest

@pytest.mark.fresh_process
def test_passes():
    pass

@pytest.mark.fresh_process
def test_fails():
    assert 6 * 7 == 41

@pytest.mark.fresh_process
def test_skips():
    pytest.skip("nothing to do here")
