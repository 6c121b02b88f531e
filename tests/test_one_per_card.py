"""One engine per card (course_utils.engine.one_per_card): a re-run LLM(...) cell first releases the engine
an earlier run built, stops an EngineCore that outlives vLLM's shutdown, and checks free memory first."""

import pytest

from course_utils.engine import one_per_card
from course_utils.paths import TINY

needs_tiny = pytest.mark.skipif(not (TINY / "base" / "config.json").is_file(),
                                reason="no tiny base model (make tiny-world)")


@pytest.mark.live
@needs_tiny
@pytest.mark.fresh_process
def test_one_engine_per_card_releases_the_engine_an_earlier_llm_built(capsys):
    """The hook behind L4 (tests/test_engine_rerun.py runs it in a kernel, multiprocess): ``llm = LLM(...)`` run
    again first shuts down the engine the first run built; the old object then says why it cannot be used."""
    from vllm import LLM, SamplingParams

    from course_utils.chat import chat_prompt
    from course_utils.profiles import get_profile

    prof = get_profile("tiny")
    card = get_profile("rehearsal")                       # hardware "cuda": one engine per card
    assert one_per_card.one_engine_per_card(card) and not one_per_card.one_engine_per_card(card)   # once
    sp = SamplingParams(temperature=0, max_tokens=2)
    llm = LLM(model=prof.base_model, **prof.engine_kwargs())
    first = llm
    assert "已关掉" not in capsys.readouterr().out        # nothing to release for the first engine
    llm = LLM(model=prof.base_model, **prof.engine_kwargs())      # the cell, run again
    said = capsys.readouterr().out
    assert "这个内核里先前建的引擎还在，已关掉它：rehearsal 配置一张卡只放一个引擎" in said
    assert isinstance(first.llm_engine, one_per_card.ReleasedEngine)
    with pytest.raises(RuntimeError, match="这个 LLM 对象的引擎已经关掉了"):
        first.generate([chat_prompt(prof, "Hello")], sp, use_tqdm=False)
    assert len(llm.generate([chat_prompt(prof, "Hello")], sp, use_tqdm=False)[0].outputs[0].token_ids) == 2
    del first, llm
    import gc

    gc.collect()
    llm = LLM(model=prof.base_model, **prof.engine_kwargs())      # after `del llm; gc.collect()`: nothing to say
    assert "已关掉" not in capsys.readouterr().out
    llm.llm_engine.engine_core.shutdown()


def test_an_engine_process_that_outlives_vllms_shutdown_is_stopped(monkeypatch, capsys):
    # vLLM's shutdown returned but its EngineCore still runs (here: a real process that ignores the shutdown):
    # the course stops it itself before the new engine starts.
    import sys
    import types

    from course_utils import processes
    from course_utils.profiles import get_profile

    stuck = processes.start([sys.executable, "-c", "import time; time.sleep(60)"])
    core = types.SimpleNamespace(shutdown=lambda: None, resources=types.SimpleNamespace(
        engine_manager=types.SimpleNamespace(processes=[types.SimpleNamespace(pid=stuck.pid)])))
    old = types.SimpleNamespace(llm_engine=types.SimpleNamespace(engine_core=core))
    monkeypatch.setattr(one_per_card, "_engines", [lambda: old])
    monkeypatch.setattr(one_per_card, "RELEASE_WAIT", 0.3)
    try:
        assert one_per_card.release_earlier_engines(get_profile("qwen7b")) == 1
        assert not stuck.running and isinstance(old.llm_engine, one_per_card.ReleasedEngine)
    finally:
        stuck.stop()
    assert f"EngineCore 进程 {stuck.pid} 已退出" in capsys.readouterr().out


def test_the_free_memory_check_runs_before_each_new_engine_on_a_card(monkeypatch):
    # Another kernel's engine holds the card (the stand-in nvidia-smi, FAKE_GPU=busy): the course says who, in
    # Chinese, before vLLM's own error.
    from course_utils.gpu.free import GpuBusy
    from course_utils.paths import REPO
    from course_utils.profiles import get_profile

    monkeypatch.setenv("PATH", f"{REPO / 'tests' / 'fakes'}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_GPU", "busy")
    with pytest.raises(GpuBusy, match="这个引擎（qwen7b 配置）"):
        one_per_card.room_for_new_engine(get_profile("qwen7b"), released=False)
    monkeypatch.setenv("FAKE_GPU", "idle")
    one_per_card.room_for_new_engine(get_profile("qwen7b"), released=True)
