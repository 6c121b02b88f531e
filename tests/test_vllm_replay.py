"""Read mode's stand-in for vLLM answers exactly what the live run recorded, keyed the same way."""

import json

import pytest

from course_utils.paths import TINY
from course_utils.replay import keys, standin, vllm_calls
from course_utils.replay import session
from course_utils.replay.session import ReplayMiss, Session


@pytest.fixture
def lab_session(recordings):
    live = session.set_current(Session("lab", "tiny", "live", recording=True))
    live.facts = {keys.FACT_SAMPLING_DEFAULTS: {f: None for f in keys.SAMPLING_FIELDS} | {"temperature": 1.0,
                                                                                          "max_tokens": 16},
                  keys.FACT_LORA_CONFIG_DEFAULTS: {"max_loras": 1, "max_lora_rank": 16},
                  keys.FACT_VLLM_VERSION: "0.32.0"}
    engine = {"model": "/m", "enable_lora": True}
    live.run(keys.llm_start(engine), lambda: None)
    sp = standin.SamplingParams(temperature=0, max_tokens=8)
    req = standin.LoRARequest("sql", 1, "/a/sql")
    outs = [standin.RequestOutput("0", "p0", [1, 2], [standin.CompletionOutput(0, "SELECT 1", [5], "stop")],
                                  lora_request=req),
            standin.RequestOutput("1", "p1", [3], [standin.CompletionOutput(0, "hello", [6], "stop")])]
    live.run(keys.generate(engine, ["p0", "p1"], sp, [req, None]), lambda: outs, encode=vllm_calls.encode_outputs)
    try:
        live.run(keys.add_lora(engine, standin.LoRARequest("wide", 9, "/x")),
                 lambda: (_ for _ in ()).throw(ValueError("size mismatch")))
    except ValueError:
        pass
    live._save()
    yield session.set_current(Session("lab", "tiny", "replay"))
    session.set_current(None)


def test_generate_replays_outputs(lab_session):
    llm = standin.LLM(model="/m", enable_lora=True)
    sp = standin.SamplingParams(temperature=0, max_tokens=8)
    outs = llm.generate(["p0", "p1"], sp, lora_request=[standin.LoRARequest("sql", 1, "/a/sql"), None])
    assert [o.outputs[0].text for o in outs] == ["SELECT 1", "hello"]
    assert outs[0].lora_request.lora_name == "sql" and outs[1].lora_request is None


def test_edited_prompt_is_a_miss(lab_session):
    llm = standin.LLM(model="/m", enable_lora=True)
    with pytest.raises(ReplayMiss, match="first prompt 'p0 edited'"):
        llm.generate(["p0 edited", "p1"], standin.SamplingParams(temperature=0, max_tokens=8))


def test_other_engine_settings_are_a_miss(lab_session):
    with pytest.raises(ReplayMiss, match="engine settings"):
        standin.LLM(model="/m", enable_lora=True, max_loras=2)


def test_errors_replay_with_their_type(lab_session):
    llm = standin.LLM(model="/m", enable_lora=True)
    with pytest.raises(session.ReplayedError) as e:
        llm.llm_engine.add_lora(standin.LoRARequest("wide", 9, "/x"))
    assert type(e.value).__name__ == "ValueError" and str(e.value) == "size mismatch"


def test_lora_request_checks_like_vllm(lab_session):
    with pytest.raises(ValueError, match="id must be > 0, got 0"):
        standin.LoRARequest("sql", 0, "/a")
    with pytest.raises(ValueError, match="lora_path cannot be empty"):
        standin.LoRARequest("sql", 1, "")
    assert standin.LoRARequest("a", 1, "/x") == standin.LoRARequest("a", 2, "/y")


# ---------------------------------------------------------------------------- live: real vLLM keys
@pytest.mark.live
@pytest.mark.skipif(not (TINY / "base" / "config.json").is_file(), reason="no tiny base model (make tiny-world)")
@pytest.mark.fresh_process
def test_keys_recorded_from_real_vllm_are_found_by_the_stand_ins(recordings, tiny_llm):
    """The same lab code, once against real vLLM (recording) and once against the stand-ins (replay)."""
    from course_utils.chat import chat_prompt
    from course_utils.profiles import get_profile

    prof = get_profile("tiny")
    prompts = [chat_prompt(prof, "Write a SQL query: List all airports in Malawi."), chat_prompt(prof, "Hi.")]

    s = session.set_current(Session("keys", "tiny", "live", recording=True))
    s.on_close(vllm_calls.instrument())
    vllm_calls.record_facts(s)
    from vllm import SamplingParams
    from vllm.lora.request import LoRARequest

    llm = tiny_llm(max_loras=2)
    sql = LoRARequest("sql", 1, prof.adapter("sql"))
    llm.llm_engine.add_lora(sql)
    llm.generate(prompts, SamplingParams(temperature=0, max_tokens=8), lora_request=[sql, None], use_tqdm=False)
    llm.generate(prompts[:1], SamplingParams(temperature=0, max_tokens=8), lora_request=sql, use_tqdm=False)
    assert sorted(llm.llm_engine.list_loras()) == [1]
    assert llm.llm_engine.remove_lora(1) is True
    assert sorted(llm.llm_engine.list_loras()) == []
    del llm
    data = json.loads((recordings / "tiny" / "keys.json").read_text())
    assert [c["kind"] for c in data["calls"]] == ["LLM", "add_lora", "generate", "generate"] + ["engine_call"] * 3
    assert data["calls"][2]["users"] == ["Write a SQL query: List all airports in Malawi.", "Hi."]

    session.set_current(Session("keys", "tiny", "replay"))    # closes the recording: vLLM is unwrapped
    llm = standin.LLM(model=prof.base_model, enable_lora=True, max_lora_rank=64, max_loras=2, **prof.engine_kwargs())
    sql = standin.LoRARequest("sql", 1, prof.adapter("sql"))
    assert llm.llm_engine.add_lora(sql) is True
    outs = llm.generate(prompts, standin.SamplingParams(temperature=0, max_tokens=8), lora_request=[sql, None],
                        use_tqdm=False)
    assert len(outs) == 2 and outs[0].lora_request == sql
    one = llm.generate(prompts[:1], standin.SamplingParams(temperature=0, max_tokens=8), lora_request=sql,
                       use_tqdm=False)
    assert one[0].outputs[0].token_ids == outs[0].outputs[0].token_ids  # batching changed nothing
    assert llm.llm_engine.list_loras() == {1} and llm.llm_engine.remove_lora(1) is True
    assert llm.llm_engine.list_loras() == set()                     # the second call, as recorded
