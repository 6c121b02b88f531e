"""Read mode's stand-in for vLLM answers exactly what the live run recorded, keyed the same way."""

import pytest

from course_utils.replay import session as record, vllm_calls as vr
from course_utils.replay.session import ReplayMiss, Session


@pytest.fixture
def session(tmp_path, monkeypatch):
    monkeypatch.setattr(record, "RECORDINGS", tmp_path)
    monkeypatch.setattr(record, "REPO", tmp_path.parent)
    live = record.set_current(Session("lab", "tiny", "live", recording=True))
    live.facts = {"SamplingParams.defaults": {f: None for f in vr.SP_FIELDS} | {"temperature": 1.0, "max_tokens": 16},
                  "LoRAConfig.defaults": {"max_loras": 1, "max_lora_rank": 16}, "vllm.__version__": "0.32.0"}
    kwargs = {"model": "/m", "enable_lora": True}
    live.run("LLM", kwargs, lambda: None)
    sp = vr.ReplaySamplingParams.__new__(vr.ReplaySamplingParams)
    for f in vr.SP_FIELDS:
        setattr(sp, f, {"temperature": 0, "max_tokens": 8}.get(f, live.facts["SamplingParams.defaults"][f]))
    req = vr.ReplayLoRARequest("sql", 1, "/a/sql")
    outs = [vr.RequestOutput("0", "p0", [1, 2], [vr.CompletionOutput(0, "SELECT 1", [5], "stop")], lora_request=req),
            vr.RequestOutput("1", "p1", [3], [vr.CompletionOutput(0, "hello", [6], "stop")])]
    live.run("generate", vr.generate_key(kwargs, ["p0", "p1"], sp, [req, None]), lambda: outs,
             encode=vr.encode_outputs)
    try:
        live.run("add_lora", [kwargs, vr.lora_key(vr.ReplayLoRARequest("wide", 9, "/x"))],
                 lambda: (_ for _ in ()).throw(ValueError("size mismatch")))
    except ValueError:
        pass
    live._save()
    return record.set_current(Session("lab", "tiny", "replay"))


def test_generate_replays_outputs(session):
    llm = vr.ReplayLLM(model="/m", enable_lora=True)
    sp = vr.ReplaySamplingParams(temperature=0, max_tokens=8)
    outs = llm.generate(["p0", "p1"], sp, lora_request=[vr.ReplayLoRARequest("sql", 1, "/a/sql"), None])
    assert [o.outputs[0].text for o in outs] == ["SELECT 1", "hello"]
    assert outs[0].lora_request.lora_name == "sql" and outs[1].lora_request is None


def test_edited_prompt_is_a_miss(session):
    llm = vr.ReplayLLM(model="/m", enable_lora=True)
    with pytest.raises(ReplayMiss, match="first prompt 'p0 edited'"):
        llm.generate(["p0 edited", "p1"], vr.ReplaySamplingParams(temperature=0, max_tokens=8))


def test_other_engine_settings_are_a_miss(session):
    with pytest.raises(ReplayMiss, match="engine settings"):
        vr.ReplayLLM(model="/m", enable_lora=True, max_loras=2)


def test_errors_replay_with_their_type(session):
    llm = vr.ReplayLLM(model="/m", enable_lora=True)
    with pytest.raises(record.ReplayedError) as e:
        llm.llm_engine.add_lora(vr.ReplayLoRARequest("wide", 9, "/x"))
    assert type(e.value).__name__ == "ValueError" and str(e.value) == "size mismatch"


def test_lora_request_checks_like_vllm(session):
    with pytest.raises(ValueError, match="id must be > 0, got 0"):
        vr.ReplayLoRARequest("sql", 0, "/a")
    assert vr.ReplayLoRARequest("a", 1, "/x") == vr.ReplayLoRARequest("a", 2, "/y")
