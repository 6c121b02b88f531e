"""A lab session's life in one kernel: vllm imported before ``cu.start()``, two labs one after the other,
``cu.start()`` run twice, an edited cell, and the live patches undone when the session closes."""

from __future__ import annotations

import sys

import pytest

from course_utils import lab
from course_utils.replay import keys, vllm_calls
from course_utils.replay import session
from course_utils.replay.keys import Key
from course_utils.replay.record import recorded
from course_utils.replay.session import Session


@recorded(lambda n: Key("plus_one", {"n": n}))
def plus_one(n):
    return n + 1


def _recording(lab_name: str, version: str, max_loras: int) -> None:
    """A recording of ``lab_name`` whose vLLM had ``version`` and LoRAConfig().max_loras == max_loras."""
    s = Session(lab_name, "tiny", "live", recording=True)
    s.fact(keys.FACT_VLLM_VERSION, lambda: version)
    s.fact(keys.FACT_LORA_CONFIG_DEFAULTS, lambda: {"max_loras": max_loras, "max_lora_rank": 16})
    session.set_current(s)
    plus_one(max_loras)
    session.set_current(None)


@pytest.mark.slow
@pytest.mark.fresh_process
def test_vllm_imported_before_start_and_two_labs_in_one_kernel(recordings, monkeypatch):
    """Read mode's vllm reads its facts when used: importing it first works, and the second lab shows its own."""
    from course_utils.mode import REPLAY_SITE

    _recording("lab_a", "0.1.0", 3)
    _recording("lab_b", "0.2.0", 5)
    for name, value in {"COURSE_MODE": "replay", "COURSE_PROFILE": "tiny", "COURSE_RECORDINGS_DIR": recordings}.items():
        monkeypatch.setenv(name, str(value))
    assert "vllm" not in sys.modules
    monkeypatch.syspath_prepend(REPLAY_SITE)
    import vllm  # before any lab is open
    from vllm.config.lora import LoRAConfig

    import course_utils as cu

    seen = []
    for name in ("lab_a", "lab_b"):
        cu.start(name, quiet=True)
        seen.append((vllm.__version__, LoRAConfig().max_loras))
    assert seen == [("0.1.0", 3), ("0.2.0", 5)]


def test_a_stand_in_outside_a_lab_says_to_start_one(recordings):
    from course_utils.replay.standin import LLM, LoRAConfig

    with pytest.raises(RuntimeError, match="course_utils.start"):
        LoRAConfig()
    with pytest.raises(RuntimeError, match="course_utils.start"):
        LLM(model="x")


@pytest.fixture
def live_start(recordings, monkeypatch):
    """``lab.start`` as live with COURSE_RECORD=1, without vLLM: instrument() only counts its wraps and undos."""
    log = []
    monkeypatch.setenv("COURSE_RECORD", "1")
    monkeypatch.setattr(lab, "detect_mode", lambda: "live")
    monkeypatch.setattr(lab, "apply_env", lambda prof: None)
    monkeypatch.setattr(lab, "quiet_libraries", lambda: None)
    monkeypatch.setattr("course_utils.gpu.free.ensure_room_for", lambda *a, **k: None)
    monkeypatch.setattr(vllm_calls, "instrument", lambda: log.append("wrap") or (lambda: log.append("undo")))
    monkeypatch.setattr(vllm_calls, "record_facts", lambda session: None)
    return log


def test_start_twice_neither_wraps_twice_nor_loses_the_recording(live_start, recordings):
    lab.start("lab_a", quiet=True)
    first = session.active()
    assert plus_one(1) == 2
    lab.start("lab_a", quiet=True)                      # the student runs the first cell again
    assert session.active() is first and live_start == ["wrap"]
    assert plus_one(2) == 3
    replay = Session("lab_a", "tiny", "replay")
    assert [c["result"] for c in replay.calls] == [2, 3]    # both calls kept


def test_opening_another_lab_or_closing_undoes_the_patches(live_start, recordings):
    lab.start("lab_a", quiet=True)
    lab.start("lab_b", quiet=True)
    assert live_start == ["wrap", "undo", "wrap"]
    session.set_current(None)
    assert live_start == ["wrap", "undo", "wrap", "undo"]


@pytest.mark.live
def test_the_real_vllm_is_wrapped_while_recording_and_restored_after():
    import vllm
    from vllm.v1.engine.llm_engine import LLMEngine

    before = {name: getattr(vllm.LLM, name) for name in ("__init__", "generate")}
    before |= {name: getattr(LLMEngine, name) for name in ("add_lora", "list_loras", "remove_lora")}
    undo = vllm_calls.instrument()
    try:
        assert vllm.LLM.generate is not before["generate"] and vllm.LLM.generate.__course_recorded__
    finally:
        undo()
    after = {name: getattr(vllm.LLM, name) for name in ("__init__", "generate")}
    after |= {name: getattr(LLMEngine, name) for name in ("add_lora", "list_loras", "remove_lora")}
    assert after == before


@pytest.fixture
def shell(recordings):
    """An IPython shell in this process, its cell hooks removed again afterwards."""
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.user_ns.update(plus_one=plus_one, session=session, Session=Session)
    yield ip
    session.set_current(None)
    for event, hook in (("pre_run_cell", session._on_pre_run_cell), ("post_run_cell", session._on_post_run_cell)):
        if hook in ip.events.callbacks.get(event, []):
            ip.events.unregister(event, hook)
    InteractiveShell.clear_instance()


def test_the_running_cell_comes_from_ipythons_event_and_an_edited_cell_still_replays(shell):
    shell.run_cell('session.set_current(Session("lab", "tiny", "live", recording=True))')
    shell.run_cell("x = plus_one(1)")
    entry = session.active().calls[0]
    assert entry["cell"] == session.cell_id("x = plus_one(1)") and entry["result"] == 2
    shell.run_cell('session.set_current(Session("lab", "tiny", "replay"))')
    result = shell.run_cell("x = plus_one(1)  # edited by the reader")
    assert result.success and shell.user_ns["x"] == 2                 # one recorded answer: a fact
    result = shell.run_cell("y = plus_one(7)")
    assert not result.success and type(result.error_in_exec).__name__ == "ReplayMiss"
