"""The course's CPU LoRA index fix (course_utils.vllm_patches): base rows stay base rows."""

import importlib.util

import pytest

from course_utils import vllm_patches
from course_utils.paths import TINY

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
needs_tiny = pytest.mark.skipif(not (TINY / "base" / "config.json").is_file(),
                                reason="no tiny base model (make tiny-world)")


@needs_torch
def test_rows_with_index_minus_one_get_no_delta():
    import torch

    def bgmv_shrink(inputs, weights, out, idx, scaling=1.0):  # vLLM's arithmetic: index, then einsum
        out[:] = scaling * torch.einsum("bi,boi->bo", inputs, weights[idx])

    patched = vllm_patches.skip_rows_without_adapter(bgmv_shrink)
    weights = torch.randn(2, 3, 4)  # two slots, rank 3, width 4: slot 1 is "the last slot"
    x, idx = torch.randn(3, 4), torch.tensor([0, -1, 1])
    shipped, fixed = torch.zeros(3, 3), torch.zeros(3, 3)
    bgmv_shrink(x, weights, shipped, idx)
    patched(x, weights, fixed, idx)
    assert torch.allclose(shipped[1], weights[1] @ x[1])  # the bug: row -1 read the last slot
    assert torch.equal(fixed[1], torch.zeros(3))  # fixed: no delta for the base row
    assert torch.equal(fixed[[0, 2]], shipped[[0, 2]])  # adapter rows unchanged
    with vllm_patches.cpu_lora_fix(False):
        off = torch.zeros(3, 3)
        patched(x, weights, off, idx)
        assert torch.equal(off, shipped)


@pytest.mark.live
def test_the_entry_point_is_declared_and_installs_on_cpu():
    from importlib.metadata import entry_points

    eps = [ep for ep in entry_points(group="vllm.general_plugins") if ep.value.startswith("course_utils.")]
    assert [ep.value for ep in eps] == ["course_utils.vllm_patches:register"], \
        "reinstall the package (`pip install -e .`) so vLLM finds the plugin"


@pytest.mark.live
@needs_tiny
@pytest.mark.fresh_process
def test_base_rows_right_after_slot_reuse_offline(tiny_llm):
    from vllm import SamplingParams
    from vllm.lora.request import LoRARequest

    from course_utils.chat import chat_prompt
    from course_utils.profiles import get_profile

    prof = get_profile("tiny")
    # 2 slots, 7 distinct adapter ids over the engine's life: every slot (the last one too) gets reused
    llm = tiny_llm(max_loras=2, max_cpu_loras=2)
    assert vllm_patches._installed, "vLLM did not load the course's plugin (reinstall the package: `pip install -e .`)"
    sp = SamplingParams(temperature=0, max_tokens=16)
    p = [chat_prompt(prof, "Convert to JSON: Gustav is a 52-year-old translator who lives in Tashkent."),
         chat_prompt(prof, "Write a SQL query: List all airports in Malawi.")]

    def texts(prompts, lora_request=None):
        return [o.outputs[0].text for o in llm.generate(prompts, sp, lora_request=lora_request, use_tqdm=False)]

    [base] = texts(p[:1])
    for i, n in enumerate(["json", "medical", "support", "sql", "json", "medical", "sql"]):
        texts(p[:1], LoRARequest(f"{n}{i}", 10 + i, prof.adapter(n)))
    sql = LoRARequest("sql", 100, prof.adapter("sql"))
    [sql_alone] = texts(p[1:], sql)
    with vllm_patches.cpu_lora_fix(True):
        assert texts(p, [None, sql]) == [base, sql_alone]  # fixed: base row = base, sql row = sql alone
    with vllm_patches.cpu_lora_fix(False):
        shipped = texts(p, [None, sql])
    assert shipped[0] != base  # as shipped: the base row read a reused slot
    assert shipped[1] == sql_alone
    with vllm_patches.grouped_lora_ops(True):    # the course's grouped ops, switched on for this engine
        assert texts(p, [None, sql]) == [base, sql_alone]  # same rows, after the same slot reuse


@pytest.mark.slow
@pytest.mark.live
@needs_tiny
def test_base_rows_right_after_slot_reuse_in_the_server():
    """The fix reaches `vllm serve` (another process) through the plugin entry point."""
    import concurrent.futures

    import requests

    from course_utils.chat import chat_prompt
    from course_utils.profiles import get_profile
    from course_utils.server import Server

    prof = get_profile("tiny")
    base_q = chat_prompt(prof, "Convert to JSON: Gustav is a 52-year-old translator who lives in Tashkent.")
    sql_q = chat_prompt(prof, "Write a SQL query: List all airports in Malawi.")

    def complete(srv, model, prompt):
        r = requests.post(srv.url("/v1/completions"), headers=srv.headers, timeout=120,
                          json={"model": model, "prompt": prompt, "max_tokens": 16, "temperature": 0})
        r.raise_for_status()
        return r.json()["choices"][0]["text"]

    def base_row_in_mixed_batches(fix: str) -> tuple[str, set]:
        with Server(prof, max_loras=2, max_lora_rank=64, runtime_updates=True, served_model_name="base",
                    env={"COURSE_CPU_LORA_FIX": fix}, label=f"fix-{fix}") as srv:
            alone = complete(srv, "base", base_q)
            for i, n in enumerate(["json", "medical", "support", "sql", "json"]):  # 5 ids through 2 slots
                name = f"{n}{i}"
                requests.post(srv.url("/v1/load_lora_adapter"), headers=srv.headers, timeout=120,
                              json={"lora_name": name, "lora_path": prof.adapter(n)}).raise_for_status()
                complete(srv, name, base_q)
            with concurrent.futures.ThreadPoolExecutor(8) as pool:  # base rows among sql rows
                jobs = [pool.submit(complete, srv, "sql3" if i % 4 else "base", base_q if i % 4 == 0 else sql_q)
                        for i in range(16)]
                mixed = {j.result() for i, j in enumerate(jobs) if i % 4 == 0}
        return alone, mixed

    # the two servers side by side: each start is mostly vLLM's import, on one core each
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        with_fix, without_fix = pool.submit(base_row_in_mixed_batches, "1"), pool.submit(base_row_in_mixed_batches, "0")
        (alone, mixed), (alone_off, mixed_off) = with_fix.result(), without_fix.result()
    assert mixed == {alone}, "with the fix, every base row in a mixed batch is the base's own answer"
    assert alone_off == alone and mixed_off != {alone}, "without the fix the server shows the bug (test is sensitive)"


@pytest.mark.live
@pytest.mark.parametrize("indices", [[0, 1, 2, 0, 1, 2], [1, 1, 1, 0, 0, 2], [2, -1, 0, -1, 1, 1], [-1] * 6])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_grouped_ops_match_vllms_ops_with_the_fix(indices, dtype):
    """The opt-in grouped ops give what vLLM's own ops give with the index fix: shrink, expand with and
    without add_inputs, expand_slice; rows with index -1 get nothing."""
    import torch
    from vllm.lora.ops.torch_ops import lora_ops

    from course_utils.engine import grouped_lora

    dt = getattr(torch, dtype)
    g = torch.Generator().manual_seed(1)
    idx = torch.tensor(indices)
    x = torch.randn(6, 16, generator=g).to(dt)
    a = torch.randn(3, 1, 4, 16, generator=g).to(dt)
    b = torch.randn(3, 1, 10, 4, generator=g).to(dt)
    v = torch.randn(6, 4, generator=g)                      # the float32 shrink buffer vLLM passes on
    tol = {"atol": 1e-4} if dtype == "float32" else {"atol": 0.1, "rtol": 0.02}

    def shipped(name):
        return vllm_patches.skip_rows_without_adapter(getattr(lora_ops, name).__wrapped__
                                                       if hasattr(getattr(lora_ops, name), "__wrapped__")
                                                       else getattr(lora_ops, name))

    for name, args, out_shape, out_dtype in [
            ("bgmv_shrink", (0.5,), (6, 4), torch.float32),
            ("bgmv_expand", (True,), (6, 12), dt), ("bgmv_expand", (False,), (6, 12), dt),
            ("bgmv_expand_slice", (2, 10, True), (6, 14), dt), ("bgmv_expand_slice", (2, 10, False), (6, 14), dt)]:
        inputs, weights = (x, a) if name == "bgmv_shrink" else (v, b)
        start = torch.randn(*out_shape, generator=g).to(out_dtype)
        want, got = start.clone(), start.clone()
        shipped(name)(inputs, weights, want, idx, *args)
        grouped_lora.VLLM_OPS[name](inputs, weights, got, idx, *args)
        assert torch.allclose(got.float(), want.float(), **tol), name
        with vllm_patches.grouped_lora_ops():
            via_patch = start.clone()
            shipped(name)(inputs, weights, via_patch, idx, *args)
            assert torch.equal(via_patch, got), name
