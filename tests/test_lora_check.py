"""Lab 05's checks record themselves, keyed by the source of the student's function."""

import pytest

from course_utils.arch import quantization
from course_utils.engine import lora_check
from course_utils.replay.record import replayable
from course_utils.replay import session
from course_utils.replay.session import ReplayMiss, Session


def test_a_check_replays_for_the_same_function_and_refuses_an_edited_one(recordings, monkeypatch):
    runs = []

    @replayable
    def check(fn, prof, seed=0):
        runs.append(seed)
        return {"value": fn(seed)}

    class Prof:
        name, base_model, adapters = "tiny", "base", {"sql": "a", "json": "b"}

    def student(x):
        return x + 1

    def edited(x):
        return x + 2

    assert check(student, Prof()) == {"value": 1} and runs == [0]       # outside a lab: it just runs
    session.set_current(Session("05_source_tour", "tiny", "live", recording=True))
    assert check(student, Prof(), seed=2) == {"value": 3} and runs == [0, 2]
    session.set_current(Session("05_source_tour", "tiny", "replay"))
    try:
        assert check(student, Prof(), seed=2) == {"value": 3} and runs == [0, 2]   # replayed, not run
        with pytest.raises(ReplayMiss, match="not recorded"):
            check(edited, Prof(), seed=2)
        Prof.adapters = {"sql": "a"}                                     # another shelf: another key
        with pytest.raises(ReplayMiss, match="not recorded"):
            check(student, Prof(), seed=2)
    finally:
        session.set_current(None)


def test_the_printed_checks_show_their_body():
    import inspect

    for fn in (lora_check.compare_with_vllm_ops, lora_check.compare_with_peft, lora_check.merge_adapter):
        text = inspect.getsource(fn)
        assert text.startswith("@replayable\ndef ") and "import torch" in text
    assert "bgmv_shrink(" in inspect.getsource(lora_check.compare_with_vllm_ops)
    assert "merge_and_unload()" in inspect.getsource(lora_check.merge_adapter)


def test_remove_merged_deletes_live_and_never_in_read_mode(tmp_path, monkeypatch):
    """Live it deletes the folder; read mode answers from the shipped recording and deletes nothing, so a
    read-mode Lab 05 beside a live one (``make test`` runs them side by side) cannot pull the merged model
    from under the live lab's engine."""
    from course_utils.paths import REPO

    (tmp_path / "merged" / "medical").mkdir(parents=True)
    assert lora_check.remove_merged(tmp_path / "merged") == ["medical"]            # outside a lab: it runs
    assert not (tmp_path / "merged").exists()

    def refuse(*args, **kwargs):
        raise AssertionError("read mode deleted a folder")

    monkeypatch.setattr(lora_check.shutil, "rmtree", refuse)
    session.set_current(Session("05_source_tour", "tiny", "replay"))
    try:
        assert lora_check.remove_merged(REPO / "build" / "05_merged") == ["medical"]   # what the recording holds
    finally:
        session.set_current(None)



# ---------------------------------------------------------------------------
# Lab 05's host loads: an AWQ base (C1) and the host RAM a loaded base holds (S7)
# ---------------------------------------------------------------------------

AWQ_QUANTIZATION = {"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemm", "zero_point": True}


def awq_shaped_base(tmp_path):
    """The tiny base as Qwen2.5-7B-Instruct-AWQ's folder presents itself: its config.json gains the AWQ
    ``quantization_config``; the other files are links to the tiny base's."""
    import json

    from course_utils.paths import TINY

    base = tmp_path / "Qwen2.5-7B-Instruct-AWQ"
    base.mkdir()
    for f in (TINY / "base").iterdir():
        if f.name != "config.json":
            (base / f.name).symlink_to(f)
    cfg = json.loads((TINY / "base" / "config.json").read_text())
    (base / "config.json").write_text(json.dumps({**cfg, "quantization_config": AWQ_QUANTIZATION}, indent=2))
    return base


def reference_lora_linear(x, W, bias, A, B, scaling, idx):
    """A plain per-row LoRA linear (the lab's exercise, written the slow way)."""
    y = x @ W.T + (0 if bias is None else bias)
    for i, a in enumerate(idx.tolist()):
        if a >= 0:
            y[i] = y[i] + (B[a] @ (A[a] @ x[i])) * scaling[a]
    return y


@pytest.fixture
def host_loads(monkeypatch):
    """A weak reference to every model transformers' AutoModelForCausalLM.from_pretrained loads (the real
    loader runs; the list only watches it)."""
    import weakref

    pytest.importorskip("peft")
    transformers = pytest.importorskip("transformers")
    loaded = []
    real = transformers.AutoModelForCausalLM.from_pretrained.__func__

    def watched(cls, *args, **kwargs):
        model = real(cls, *args, **kwargs)
        loaded.append(weakref.ref(model))
        return model

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", classmethod(watched))
    return loaded


@pytest.mark.slow
def test_peft_check_and_merge_skip_an_awq_base_before_loading_it(tmp_path, host_loads):
    """C1: on the AWQ base, transformers 5.x asks for gptqmodel (quantizers/quantizer_awq.py), which the course
    does not install. Lab 05's peft comparison and merge must not try: they say, in Chinese, what they skip and
    why, before anything is loaded, and write nothing."""
    import importlib.util
    from dataclasses import replace

    from course_utils.profiles import get_profile

    if importlib.util.find_spec("gptqmodel") is not None:
        pytest.skip("gptqmodel is installed here: transformers could load the AWQ base")
    prof = replace(get_profile("tiny"), base_model=str(awq_shaped_base(tmp_path)))

    vs_peft = lora_check.compare_with_peft(reference_lora_linear, prof)
    merged = lora_check.merge_adapter(prof, "medical", tmp_path / "merged")

    for result in (vs_peft, merged):
        why = lora_check.skipped(result)
        assert why and "AWQ" in why and "gptqmodel" in why and "跳过" in why, result
        assert "--awq" in why and "vLLM" in why          # how to run it (a bf16 base), and what still runs
    assert host_loads == [] and not (tmp_path / "merged").exists()
    assert lora_check.skipped([{"层": "layers.0.q_proj"}]) is None     # a check that ran
    assert quantization(prof.base_model) == AWQ_QUANTIZATION and quantization(tmp_path / "merged") is None


@pytest.mark.slow
def test_peft_check_and_merge_free_the_base_they_loaded(tmp_path, host_loads):
    """S7: each call loads the whole base on the host (a bf16 7B: about 15 GB). After the call, returned or
    raised, no model it loaded may survive, even with Python's automatic collection off. A raised call is the
    case that bites: the notebook keeps the traceback (``sys.last_traceback``), and with it the function's
    variables, so a student who fixes ``lora_linear`` and runs the cell again would hold two copies."""
    import gc

    from course_utils.profiles import get_profile

    def broken_lora_linear(x, W, bias, A, B, scaling, idx):
        return x @ A                                     # a typical first attempt: the wrong shapes

    prof = get_profile("tiny")
    (tmp_path / "in_the_way").mkdir()
    (tmp_path / "in_the_way" / "medical").write_text("a file where the merged model's folder goes")
    gc.collect()
    gc.disable()
    try:
        rows = lora_check.compare_with_peft(reference_lora_linear, prof)
        returned = [ref() is None for ref in host_loads]
        with pytest.raises(RuntimeError) as raised:      # kept, as a notebook keeps it
            lora_check.compare_with_peft(broken_lora_linear, prof)
        after_raise = [ref() is None for ref in host_loads]
        merged = lora_check.merge_adapter(prof, "medical", tmp_path / "merged")
        with pytest.raises(OSError) as failed_save:      # cannot write the merged model (on a 4090: disk full)
            lora_check.merge_adapter(prof, "medical", tmp_path / "in_the_way")
        after_merges = [ref() is None for ref in host_loads]
    finally:
        gc.enable()
    assert all(row["|lora_linear - peft| 的最大值"] <= lora_check.TOL for row in rows) and merged["adapter"] == "medical"
    assert raised.traceback and failed_save.traceback
    assert returned == [True] and after_raise == [True, True], "a base lora_check loaded is still in memory"
    assert after_merges == [True, True, True, True], "a base merge_adapter loaded is still in memory"


def blank_lora_linear(x, W, bias, A, B, scaling, idx):
    """The committed lab's 练习 2: only the docstring, so it returns None."""


@pytest.mark.slow
def test_vllm_ops_agree_with_the_loop_and_a_written_function_is_compared_with_all_three():
    pytest.importorskip("vllm")
    blank = lora_check.compare_with_vllm_ops(blank_lora_linear, seed=0)
    assert blank["lora_linear"] == lora_check.NOT_WRITTEN
    assert blank["|bgmv - float64 逐行循环| 的最大值"] <= lora_check.TOL
    assert blank["|sgmv - float64 逐行循环| 的最大值"] <= lora_check.TOL
    written = lora_check.compare_with_vllm_ops(reference_lora_linear, seed=0)
    diffs = {k: v for k, v in written.items() if " - " in k}
    assert len(diffs) == 5 and all(v <= lora_check.TOL for v in diffs.values()), diffs

    def no_scaling(x, W, bias, A, B, scaling, idx):
        return reference_lora_linear(x, W, bias, A, B, scaling * 0 + 1, idx)
    wrong = lora_check.compare_with_vllm_ops(no_scaling, seed=0)
    assert wrong["|lora_linear - bgmv| 的最大值"] > 100 * lora_check.TOL


@pytest.mark.slow
def test_peft_agrees_with_the_formula_before_the_function_is_written():
    pytest.importorskip("peft")
    from course_utils.profiles import get_profile

    rows = lora_check.compare_with_peft(blank_lora_linear, get_profile("tiny"))
    assert rows and all(r["|lora_linear - peft| 的最大值"] is None for r in rows)
    assert all(r["|peft - float64 公式| 的最大值"] <= lora_check.TOL for r in rows)
