"""course_utils.arch: the shapes, dtypes and allowed ranks every other module takes from one place;
and the layout rule that no module under course_utils/ passes 600 lines."""

import json
from pathlib import Path

import pytest

from course_utils import arch as A

REPO = Path(__file__).resolve().parent.parent
QWEN = "qwen2.5-7b-instruct"
MAX_MODULE_LINES = 600


# ---------------------------------------------------------------- max_lora_rank

def test_smallest_rank_that_fits():
    assert A.MAX_LORA_RANKS == (1, 8, 16, 32, 64, 128, 256, 320, 512)
    assert {r: A.smallest_rank_that_fits(r) for r in (1, 2, 8, 9, 64, 65, 300, 320, 321, 512, 513)} == {
        1: 1, 2: 8, 8: 8, 9: 16, 64: 64, 65: 128, 300: 320, 320: 320, 321: 512, 512: 512, 513: None}


@pytest.mark.live
def test_max_lora_ranks_are_the_installed_vllms():
    import typing

    from vllm.config.lora import MaxLoRARanks

    assert A.MAX_LORA_RANKS == typing.get_args(MaxLoRARanks)


# ---------------------------------------------------------------- dtypes

@pytest.mark.parametrize("spelling,name,size", [
    ("bfloat16", "bfloat16", 2), ("bf16", "bfloat16", 2), ("BF16", "bfloat16", 2), ("torch.bfloat16", "bfloat16", 2),
    ("float16", "float16", 2), ("half", "float16", 2), ("F16", "float16", 2),
    ("float32", "float32", 4), ("fp32", "float32", 4), ("F32", "float32", 4), ("float", "float32", 4),
    ("fp8", "float8_e4m3fn", 1), ("F8_E5M2", "float8_e5m2", 1), ("F64", "float64", 8), ("I64", "int64", 8),
])
def test_one_dtype_table_reads_torch_short_and_safetensors_names(spelling, name, size):
    assert (A.dtype_name(spelling), A.dtype_bytes(spelling)) == (name, size)


def test_unknown_dtype_says_what_to_use():
    with pytest.raises(A.ConfigError, match=r"不认识的 dtype 'float13'；用 bfloat16、float16、float32 之一"):
        A.dtype_bytes("float13")
    assert A.dtype_bytes(3) == 3  # a byte count passes through


def test_dtype_sizes_are_torchs():
    torch = pytest.importorskip("torch")
    assert {n: getattr(torch, n).itemsize for n in A.DTYPES} == {n: b for n, (b, _) in A.DTYPES.items()}
    types = getattr(pytest.importorskip("safetensors.torch"), "_TYPES", None)
    if types is not None:  # safetensors' own name -> torch dtype table
        assert {st: types[st] for _, st in A.DTYPES.values()} == {st: getattr(torch, n) for n, (_, st) in
                                                                   A.DTYPES.items()}


# ---------------------------------------------------------------- configs and shapes

def test_qwen_projection_shapes_are_d_in_d_out():
    # Qwen2.5-7B-Instruct: hidden 3584, 28 query heads / 4 kv heads of 128, intermediate 18944
    shapes = A.projection_shapes(QWEN)
    assert list(shapes) == list(A.PROJECTIONS)
    assert shapes == {"q_proj": (3584, 3584), "k_proj": (3584, 512), "v_proj": (3584, 512), "o_proj": (3584, 3584),
                      "gate_proj": (3584, 18944), "up_proj": (3584, 18944), "down_proj": (18944, 3584)}
    assert shapes["down_proj"].d_in == 18944 and shapes["k_proj"].d_out == 512
    assert sum(map(sum, shapes.values())) == 90_112  # LoRA parameters per rank and layer


def test_the_tiny_base():
    a = A.arch(REPO / "data" / "tiny" / "base")
    assert (a.layers, a.hidden, a.heads, a.kv_heads, a.head_dim, a.intermediate, a.vocab, a.tied) == \
        (2, 256, 4, 2, 64, 512, 1024, True)
    assert A.arch(a) is a
    assert A.module_path(3, "q_proj") == "model.layers.3.self_attn.q_proj"
    assert A.module_path(0, "down_proj") == "model.layers.0.mlp.down_proj"
    assert {s for packed in A.PACKED.values() for s in packed} == set(A.PROJECTIONS)


def test_config_errors(tmp_path):
    (tmp_path / "config.json").write_text('{"hidden_size": 256,')
    with pytest.raises(A.ConfigError, match=r"config.json 不是合法的 JSON（.*）；请恢复模型自己的 config.json"):
        A.load_config(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps([1, 2]))
    with pytest.raises(A.ConfigError, match="里是一个 JSON list，不是对象"):
        A.load_config(tmp_path)
    odd = {"hidden_size": 250, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 512,
           "vocab_size": 10}
    with pytest.raises(A.ConfigError, match="不能被 num_attention_heads 4 整除；配置里要明确写出 head_dim"):
        A.arch(odd)
    assert A.arch(dict(odd, head_dim=64)).q_out == 256
    assert A.arch({"text_config": dict(odd, head_dim=64)}).layers == 2


def test_module_imports_without_torch_or_vllm():
    import subprocess
    import sys

    code = ("import sys, course_utils.arch, course_utils.adapters, course_utils.memory; "
            "bad = [x for x in ('torch', 'vllm') if x in sys.modules]; print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], check=False, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


# ---------------------------------------------------------------- layout

def test_no_module_passes_600_lines():
    long = {str(p.relative_to(REPO)): n for p in sorted((REPO / "course_utils").rglob("*.py"))
            if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert long == {}, (f"modules over {MAX_MODULE_LINES} lines: {long}; split them by concern "
                        f"(as course_utils/memory/ is: model, measure, figures)")
