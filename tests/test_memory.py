"""The memory model (course_utils.memory): unit tests (fast, no torch/vLLM) and one live
check against in-process vLLM engines on the tiny model (``-m live``; skipped without vLLM).

Run: ``. .venv/bin/activate && python -m pytest tests/test_memory.py -q``
(unit tests only: add ``-m "not live"``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from course_utils import memory as mm
from course_tools import notebooks
from course_utils.arch import ConfigError
from course_utils.memory import GiB, MemoryModelError
from course_utils.paths import CONFIGS

REPO = Path(__file__).resolve().parent.parent
QWEN = "qwen2.5-7b-instruct"
QWEN_AWQ = "qwen2.5-7b-instruct-awq"
LLAMA = "llama-3.2-3b-instruct"

# The 2-layer tiny Qwen2 of the course notes (vllm-on-cpu.md), whose LoRA buffers were walked
# in a live engine: 524,288 bytes at max_loras=1 and 2,097,152 at max_loras=4 (rank 16, fp32).
# (The course's own tiny base, data/tiny/base, is the same shape with 4 layers and a 768 vocabulary.)
TINY2 = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 256,
         "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
         "intermediate_size": 512, "vocab_size": 1024, "tie_word_embeddings": True,
         "max_position_embeddings": 256, "torch_dtype": "float32"}


def tiny_base() -> Path | None:
    """The course's tiny base (profiles: tiny), else the smoke build, else None."""
    from course_utils.profiles import get_profile

    p = Path(get_profile("tiny").base_model)
    if (p / "config.json").is_file():
        return p
    p = Path("/tmp/tw-smoke/base")
    return p if (p / "config.json").is_file() else None


def tiny_adapters() -> list[Path]:
    base = tiny_base()
    if base is None:
        return []
    root = base.parent / "adapters"
    if not root.is_dir():
        return []
    return sorted(d for d in root.iterdir()
                  if (d / "adapter_config.json").is_file() and (d / "adapter_model.safetensors").is_file())


# ---------------------------------------------------------------- shipped configs

@pytest.mark.parametrize("name,layers,hidden,inter,heads,kv,head_dim,vocab,tied", [
    (QWEN, 28, 3584, 18944, 28, 4, 128, 152064, False),
    (QWEN_AWQ, 28, 3584, 18944, 28, 4, 128, 152064, False),
    (LLAMA, 28, 3072, 8192, 24, 8, 128, 128256, True),
])
def test_shipped_configs_match_the_facts_table(name, layers, hidden, inter, heads, kv, head_dim, vocab, tied):
    a = mm.arch(name)
    assert (a.layers, a.hidden, a.intermediate, a.heads, a.kv_heads, a.head_dim, a.vocab, a.tied) == \
        (layers, hidden, inter, heads, kv, head_dim, vocab, tied)
    assert name in mm.shipped_configs()


def test_awq_config_and_chat_template():
    q = mm.load_config(QWEN_AWQ)["quantization_config"]
    assert (q["quant_method"], q["bits"], q["group_size"], q["zero_point"]) == ("awq", 4, 128, True)
    assert mm.load_config(QWEN_AWQ)["torch_dtype"] == "float16"
    tok = json.loads((CONFIGS / QWEN / "tokenizer_config.json").read_text())
    assert tok["eos_token"] == "<|im_end|>" and tok["tokenizer_class"] == "Qwen2Tokenizer"
    jinja2 = pytest.importorskip("jinja2")
    env = jinja2.Environment(extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = lambda x, **kw: json.dumps(x)
    text = env.from_string(tok["chat_template"]).render(
        messages=[{"role": "user", "content": "Hi"}], add_generation_prompt=True)
    assert text == ("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant."
                    "<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    assert (CONFIGS / "README.md").is_file()


@pytest.mark.fresh_process
def test_module_imports_without_torch_or_vllm():
    mm.plan(QWEN, max_loras=4, max_lora_rank=64)
    assert [x for x in ("torch", "vllm", "transformers") if x in sys.modules] == []


# ---------------------------------------------------------------- base weights

def test_qwen7b_parameters_and_bf16_weights():
    # Hugging Face's safetensors index of Qwen/Qwen2.5-7B-Instruct: 7,615,616,512 parameters, 15.23 GB in bf16
    assert mm.parameter_count(QWEN) == 7_615_616_512
    w = mm.weight_bytes(QWEN, "bfloat16")
    assert w.parameter_bytes == 15_231_233_024
    assert w.rope_cache == 8_388_608  # vLLM's cos/sin cache: 32,768 positions x 128 x bf16, one shared buffer
    assert w.total == 15_239_621_632
    assert round(w.parameter_bytes / GiB, 1) == 14.2
    assert w.embed == w.lm_head == 1_089_994_752  # 152,064 x 3,584 in bf16, not tied
    assert w.biases == 258_048  # Qwen2's q/k/v biases: 28 layers x (3,584 + 512 + 512) x 2 bytes
    assert mm.weight_bytes(QWEN, "float32").parameter_bytes == 30_462_466_048


def test_awq_bytes():
    # gate_proj of Qwen2.5-7B-Instruct-AWQ: qweight int32 [3584, 2368], scales fp16 [28, 18944], qzeros int32 [28, 2368]
    t = mm.awq_linear_bytes(3584, 18944)
    assert t == {"qweight": 33_947_648, "scales": 1_060_864, "qzeros": 265_216}
    w = mm.weight_bytes(QWEN_AWQ)  # follows the config's quantization_config
    assert w.quant == "awq" and w.dtype == "float16"
    assert w.quantized_detail == {"qweight": 3_262_644_224, "scales": 101_957_632, "qzeros": 25_489_408}
    assert w.embed == w.lm_head == 1_089_994_752  # unquantized fp16
    assert w.attention + w.mlp == 3_390_091_264
    # vllm-project/vllm#13882: "Loading model weights took 5.2032 GB" for this checkpoint
    assert abs(w.total / GiB - 5.2032) / 5.2032 < 0.01
    assert mm.weight_bytes(QWEN, quant="awq").total == w.total  # 'what if AWQ' on the bf16 config
    assert mm.weight_bytes(QWEN_AWQ, quant="none").dtype == "bfloat16"


def test_llama_3b_parameters_tied():
    a = mm.weight_bytes(LLAMA)
    assert mm.parameter_count(LLAMA) == 3_212_749_824
    assert a.lm_head == 0 and a.biases == 0


def test_missing_fields_error():
    with pytest.raises(ConfigError, match="intermediate_size"):
        mm.arch({"hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 10})
    with pytest.raises(ConfigError, match="没有 config.json"):
        mm.load_config("/nonexistent/model")
    with pytest.raises(MemoryModelError, match="里没有 'r'"):
        mm.adapter_params({"target_modules": ["q_proj"]}, QWEN)


# ---------------------------------------------------------------- LoRA buffers

def test_lora_buffer_shapes_follow_vllm_layers():
    bufs = {b.cls: b for b in mm.lora_buffers(QWEN, max_loras=4, max_lora_rank=16)}
    qkv = bufs["MergedQKVParallelLinearWithLoRA"]
    assert qkv.a_shapes == [(4, 1, 16, 3584)] * 3
    assert qkv.b_shapes == [(4, 1, 3584, 16), (4, 1, 512, 16), (4, 1, 512, 16)]
    gu = bufs["MergedColumnParallelLinearWithLoRA"]
    assert gu.a_shapes == [(4, 1, 16, 3584)] * 2 and gu.b_shapes == [(4, 1, 18944, 16)] * 2
    assert "VocabParallelEmbeddingWithLoRA" not in bufs  # Qwen2ForCausalLM has no embedding_modules
    assert all(b.count == 28 for b in bufs.values())


def test_lora_buffer_bytes():
    # Qwen2.5-7B, 4 slots, bf16, max_lora_rank 16: 322,961,408 bytes (qkv_proj, o_proj, gate_up_proj and
    # down_proj of 28 layers; A = (4, 1, 16, d_in), B = (4, 1, d_out, 16))
    assert mm.lora_buffer_bytes(QWEN, 4, 16, "bfloat16") == 322_961_408
    assert mm.lora_buffer_bytes(QWEN, 4, 64, "bfloat16") == 1_291_845_632  # 4 x the rank: 4 x the bytes
    assert mm.lora_buffer_bytes(QWEN, 4, 256, "bfloat16") == 5_167_382_528
    assert mm.lora_buffer_bytes(QWEN, 1, 8, "bfloat16") == 40_370_176
    # the notes' live walk of the 2-layer tiny model (fp32, rank 16)
    assert mm.lora_buffer_bytes(TINY2, 1, 16, "float32") == 524_288
    assert mm.lora_buffer_bytes(TINY2, 4, 16, "float32") == 2_097_152
    # the course's tiny base has the same 2 layers (the live test below checks it against vLLM)
    assert mm.arch(REPO / "data" / "tiny" / "base").layers == 2
    assert mm.lora_buffer_bytes(REPO / "data" / "tiny" / "base", 1, 16, "float32") == 524_288
    assert mm.lora_buffer_bytes(REPO / "data" / "tiny" / "base", 4, 16, "float32") == 2_097_152


def test_llama_wraps_embeddings_and_lm_head():
    cfg = dict(TINY2, architectures=["LlamaForCausalLM"], model_type="llama")
    # measured on a 2-layer tiny Llama (max_loras=2, rank 16, fp32): 1,376,256 bytes
    assert mm.lora_buffer_bytes(cfg, 2, 16, "float32") == 1_376_256
    names = [b.cls for b in mm.lora_buffers(LLAMA, 2, 16)]
    assert "VocabParallelEmbeddingWithLoRA" in names and "LogitsProcessorWithLoRA" in names
    assert mm.lora_buffer_bytes(cfg, 2, 16, "float32", lora_embeddings=False) == 1_048_576  # = TINY2's
    mistral = dict(cfg, architectures=["MistralForCausalLM"])
    assert mm.lora_buffer_bytes(mistral, 2, 16, "float32") == 1_048_576


def test_target_modules_restriction():
    assert mm.lora_buffer_bytes(QWEN, 1, 16) == 80_740_352
    # q or v alone still wraps the whole fused qkv_proj (all three slices): 16 x 28 x 2 x (3 x 3584 + 4608)
    assert mm.lora_buffer_bytes(QWEN, 1, 16, target_modules=["q_proj", "v_proj"]) == 13_762_560
    assert [b.cls for b in mm.lora_buffers(QWEN, 1, 16, target_modules=["down_proj"])] == ["RowParallelLinearWithLoRA"]


def test_punica_metadata():
    assert mm.punica_metadata_bytes(4096, 256, 2, platform="cpu") == 137_216  # measured, tiny engine
    small, big = (mm.punica_metadata_bytes(8192, 256, L) for L in (1, 30))
    assert big - small == 696  # only the three (max_loras+1/+1/+2) int32 vectors of two metas grow
    assert big < 1 * 2 ** 20


def test_max_lora_rank_and_cpu_loras_errors():
    with pytest.raises(MemoryModelError, match="max_lora_rank=48 .*往上最近的允许值是 64"):
        mm.plan(QWEN, max_lora_rank=48)
    with pytest.raises(MemoryModelError, match="max_cpu_loras（2）必须 >= max_loras（4）"):
        mm.plan(QWEN, max_loras=4, max_cpu_loras=2)
    with pytest.raises(MemoryModelError, match="秩 32.*max_lora_rank=32"):
        mm.plan(QWEN, adapters=[("big", {"r": 32, "target_modules": ["q_proj"]})], max_lora_rank=16)


# ---------------------------------------------------------------- adapters

def test_adapter_params_peft_rules():
    # peft's print_trainable_parameters for Qwen2.5-7B-Instruct, r=16 on all seven projections:
    # "trainable params: 40,370,176 || all params: 7,655,986,688"
    every = {"r": 16, "target_modules": list(mm.PROJECTIONS)}
    assert mm.adapter_params(every, QWEN) == 40_370_176
    assert mm.adapter_params(every, QWEN) + mm.parameter_count(QWEN) == 7_655_986_688
    assert mm.adapter_bytes(every, QWEN, "bfloat16") == 80_740_352  # 80.7 MB in bf16
    assert mm.adapter_params({"r": 16, "target_modules": "all-linear"}, QWEN) == 40_370_176
    # r=16 on q_proj (3584 -> 3584) and v_proj (3584 -> 512): 16 x 28 x (7168 + 4096)
    base = {"r": 16, "target_modules": ["q_proj", "v_proj"]}
    assert mm.adapter_params(base, QWEN) == 5_046_272
    assert mm.adapter_params(dict(base, layers_to_transform=[0, 1]), QWEN) == 360_448
    assert mm.adapter_params(dict(base, rank_pattern={"v_proj": 4}), QWEN) == 3_670_016
    assert mm.adapter_params(dict(base, exclude_modules=["v_proj"]), QWEN) == 3_211_264
    assert mm.adapter_params({"r": 4, "target_modules": r".*\.(q|k)_proj"}, QWEN) == 1_261_568


@pytest.mark.skipif(not tiny_adapters(), reason="no tiny adapters built yet (data/tiny or /tmp/tw-smoke)")
def test_adapter_sizes_match_safetensors():
    base = tiny_base()
    for path in tiny_adapters():
        size = mm.verify_adapter_size(path, base)
        assert size.matches and size.model_bytes == size.file_bytes > 0
    # the same adapter measured against a base twice as wide does not match its file
    wide = dict(mm.load_config(base), hidden_size=2 * mm.load_config(base)["hidden_size"])
    with pytest.raises(MemoryModelError, match="adapter_model.safetensors 里有"):
        mm.verify_adapter_size(tiny_adapters()[0], wide)


def test_host_cache_holds_the_largest_adapters():
    ads = [(f"r{r}", {"r": r, "target_modules": ["q_proj"]}) for r in (8, 16, 64)]
    p = mm.plan(QWEN, adapters=ads, max_loras=1, max_lora_rank=64, max_cpu_loras=2)
    # q_proj only, bf16: 28 x r x 7168 x 2 bytes = 25,690,112 (r=64) + 6,422,528 (r=16)
    assert p.host_adapter_cache == 32_112_640
    assert [a[0] for a in p.adapters] == ["r8", "r16", "r64"]


# ---------------------------------------------------------------- KV cache and the card

def test_kv_geometry():
    # Qwen2.5-7B in bf16: 28 layers x K and V x 4 kv heads x 128 x 2 bytes = 56 KiB per token
    assert mm.kv_bytes_per_token(QWEN) == 57_344
    assert mm.kv_page_bytes(QWEN, 16) == 32_768  # one 16-token block of one layer
    kv = mm.kv_cache(QWEN, 4 * GiB, block_size=16, context_len=4096)
    assert (kv.num_blocks, kv.max_tokens, kv.blocks_per_seq, kv.concurrent_seqs) == (4681, 74_896, 256, 18)
    odd = mm.kv_cache(QWEN, 4 * GiB, block_size=16, context_len=4097)  # 257 blocks per sequence
    assert (odd.blocks_per_seq, odd.concurrent_seqs) == (257, 18)
    assert mm.kv_cache(QWEN, 4 * GiB, block_size=16, context_len=16 * 4681).concurrent_seqs == 1
    assert mm.kv_cache(QWEN, 4 * GiB, block_size=16, context_len=16 * 4682).concurrent_seqs == 0
    # tiny model on CPU: 1 GiB, block 128, fp32, 4 layers x 2 kv heads x 64 -> 2,048 blocks
    tiny4 = dict(TINY2, num_hidden_layers=4)
    assert mm.kv_cache(tiny4, GiB, block_size=128, kv_dtype="float32").num_blocks == 2048


def test_plan_parts_add_up():
    p = mm.plan(QWEN, gpu_bytes=mm.RTX_4090_BYTES, max_loras=4, max_lora_rank=16)
    assert p.requested == 22_847_717_376  # 25,386,352,640 B (what CUDA reports for a 4090) x 0.9, rounded up
    assert (p.weights, p.lora_buffers, p.punica) == (15_239_621_632, 322_961_408, 399_488)
    assert (p.activation, p.non_torch, p.cudagraph) == (2 * GiB, GiB // 2, GiB // 2)
    assert p.kv_cache == 4_063_509_376 and p.kv.num_blocks == 4428  # 4,428 x 917,504-byte blocks
    assert "KV 缓存" in p.table() and "4,428" in p.table()
    assert p.gib("weights") == pytest.approx(14.19, abs=0.01)
    # activation peak is an input: lowering it gives the KV cache exactly that much
    q = mm.plan(QWEN, gpu_bytes=mm.RTX_4090_BYTES, max_loras=4, max_lora_rank=16, activation_gb=1.0)
    assert q.kv_cache - p.kv_cache == GiB


def test_no_room_error_names_the_shortfall_and_the_biggest_knob():
    with pytest.raises(MemoryModelError) as e:
        mm.plan(QWEN, gpu_bytes=mm.RTX_4090_BYTES, max_loras=4, max_lora_rank=256)
    msg = str(e.value)
    assert "KV 缓存没有位置了" in msg and "还差 0.95 GiB" in msg and "超出 0.73 GiB" in msg
    assert msg.index("AWQ") < msg.index("max_loras × max_lora_rank")  # quantizing frees the most
    assert "gpu_memory_utilization" in msg and "max_num_batched_tokens" in msg


# ---------------------------------------------------------------- what the labs and modules call

def _lab_code() -> str:
    cells = []
    for nb in sorted((REPO / "labs").glob("*.ipynb")):
        cells += notebooks.code_cells(nb)
    return "\n".join(cells)


def test_every_memory_name_the_labs_and_modules_use_exists():
    import re

    from course_utils.memory import figures

    modules = [p.read_text() for p in (REPO / "course_utils").rglob("*.py")]
    code = _lab_code() + "".join(m for m in modules if re.search(r"import memory\b", m))
    used = set(re.findall(r"\bmemory\.([A-Za-z_]\w*)", code)) - {"model", "measure", "figures"}
    assert {"plan", "measure_kv", "measure_lora_buffer_bytes", "verify_adapter_size"} <= used
    assert [n for n in sorted(used) if not hasattr(mm, n)] == []
    drawn = set(re.findall(r"\bfigures\.([A-Za-z_]\w*)", _lab_code()))
    assert drawn >= {"layout_for", "draw", "summary_rows", "explorer"}
    assert [n for n in sorted(drawn) if not hasattr(figures, n)] == []


# ---------------------------------------------------------------- the course's 4090 figures

def test_rtx4090_figures():
    f = mm.rtx4090_figures()
    assert f["weights_bf16"] / GiB == pytest.approx(14.19, abs=0.01)
    assert f["weights_awq"] / GiB == pytest.approx(5.20, abs=0.01)
    r16, r256 = f["plans"][16], f["plans"][256]
    assert r16.lora_buffers / GiB == pytest.approx(0.30, abs=0.01)
    assert r256.lora_buffers / GiB == pytest.approx(4.81, abs=0.01)
    assert r256.lora_buffers == 16 * r16.lora_buffers
    assert r16.kv.num_blocks == 4428 and r16.kv.max_tokens == 70_848 and r16.kv.concurrent_seqs == 17
    assert r256.kv_cache < 0 and r256.kv.num_blocks == 0  # rank 256 x 4 slots leaves no KV cache in bf16
    awq256 = f["plans_awq"][256]
    assert awq256.kv.concurrent_seqs == 37  # ...but fits once the base is AWQ
    t = f["three_full_vs_adapters"]
    assert round(t["full_copies"] / 1e9, 1) == 45.7 and round(t["base_plus_adapters"] / 1e9, 2) == 15.47
    h = f["thirty_adapters"]
    assert h["host_cache_bytes"] == 2_422_210_560  # 30 x 80,740,352
    assert h["slots"].kv.concurrent_seqs == 17 and h["all_slots"].kv.concurrent_seqs == 8
    m = f["lora_vs_full_4096"]
    assert (m["full"], m["lora"], m["ratio"]) == (16_777_216, 131_072, 128.0)
    assert "少 128 倍" in mm.format_rtx4090_figures(f)


# The qwen7b profile (bf16, max_model_len 4096, max_num_seqs 64, utilization 0.90, rank 64, 4 slots)
# on a 24 GB RTX 4090 (25,386,352,640 bytes as CUDA reports it): the model gives 3,372 blocks = 53,952
# tokens = 13 sequences of 4,096 tokens (with the documented 2.0 / 0.5 / 0.5 GiB activation / non-torch /
# CUDA-graph defaults). N = 13.
QWEN7B_MIN_4K_SEQS = 13


def test_qwen7b_profile_fits_a_4090():
    from course_utils.profiles import get_profile

    eng = get_profile("qwen7b").engine
    assert (eng["dtype"], eng["max_model_len"], eng["max_num_seqs"], eng["gpu_memory_utilization"],
            eng["max_lora_rank"], eng["max_loras"]) == ("bfloat16", 4096, 64, 0.90, 64, 4)
    p = mm.check_profile("qwen7b")
    assert p.kv.context_len == 4096 and p.max_lora_rank == 64 and p.max_loras == 4
    assert p.kv.concurrent_seqs >= QWEN7B_MIN_4K_SEQS
    assert p.kv.concurrent_seqs >= eng["max_num_seqs"] // 16  # at least 4


# ---------------------------------------------------------------- live: vLLM on the tiny model

LIVE_PAIRS = [(1, 8), (2, 16), (4, 64)]
# max_loras x max_lora_rank x 4 layers x 4,096 (sum of d_in + d_out per layer) x 4 bytes (fp32)
LIVE_LORA_BYTES = {(1, 8): 262_144, (2, 16): 1_048_576, (4, 64): 8_388_608}  # the 2-layer tiny base
needs_tiny = pytest.mark.skipif(tiny_base() is None, reason="no tiny base model (make tiny-world)")


def tiny_engine(max_loras: int, max_lora_rank: int):
    from vllm import LLM

    return LLM(model=str(tiny_base()), enable_lora=True, max_lora_rank=max_lora_rank, max_loras=max_loras,
               dtype="float32", max_model_len=256)


@pytest.mark.live
@needs_tiny
@pytest.mark.fresh_process
def test_live_lora_buffers_and_kv_blocks_match_vllm():
    cfg = mm.load_config(tiny_base())
    for L, R in LIVE_PAIRS:  # one engine at a time, in one process (vLLM is imported once)
        llm = tiny_engine(L, R)
        sched = llm.llm_engine.vllm_config.scheduler_config
        lora, kv, punica = mm.measure_lora_buffer_bytes(llm), mm.measure_kv(llm), mm.measure_punica_bytes(llm)
        # LoRA buffers: exact
        assert lora == mm.lora_buffer_bytes(cfg, L, R, "float32") == LIVE_LORA_BYTES[(L, R)], (L, R, lora)
        # 4 wrapped per layer
        assert len(mm.measure_lora_buffers(llm)) == sum(b.count for b in mm.lora_buffers(cfg, L, R))
        # KV blocks for the same KV memory (VLLM_CPU_KVCACHE_SPACE=1 -> 1 GiB), CPU block size
        assert kv["kv_cache_memory_bytes"] == GiB
        model = mm.kv_cache(cfg, kv["kv_cache_memory_bytes"], block_size=kv["block_size"], kv_dtype="float32")
        assert abs(kv["num_blocks"] - model.num_blocks) <= 0.01 * model.num_blocks, (kv, model)
        # Punica metadata, exact. (Weights are not compared here: on CPU vLLM repacks each linear
        # weight for oneDNN and leaves an empty Parameter behind, so parameters() undercounts.)
        assert punica == mm.punica_metadata_bytes(sched.max_num_batched_tokens, sched.max_num_seqs, L, platform="cpu")
        print(f"live ({L}, {R}): LoRA {lora:,} B, KV blocks {kv['num_blocks']:,} "
              f"(model {model.num_blocks:,}, block {kv['block_size']}), punica {punica:,} B")
        del llm


@pytest.mark.live
@needs_tiny
@pytest.mark.fresh_process(VLLM_ENABLE_V1_MULTIPROCESSING="1", VLLM_ALLOW_INSECURE_SERIALIZATION="1")
def test_live_measure_reaches_a_multiprocess_engine(monkeypatch):
    """GPU profiles keep vLLM's engine process (vLLM's default, set here); the measurements go there through
    llm.apply_model."""
    llm = tiny_engine(2, 16)
    try:
        assert mm.measure_lora_buffer_bytes(llm) == mm.lora_buffer_bytes(mm.load_config(tiny_base()), 2, 16,
                                                                         "float32")
        assert mm.measure_punica_bytes(llm) > 0
        monkeypatch.setenv("VLLM_ALLOW_INSECURE_SERIALIZATION", "0")
        with pytest.raises(mm.EngineInAnotherProcess) as refused:
            mm.measure_lora_buffer_bytes(llm)
        assert "VLLM_ENABLE_V1_MULTIPROCESSING=0" in str(refused.value) and "apply_model" in str(refused.value)
    finally:
        llm.llm_engine.engine_core.shutdown()  # the engine core's process, before the leak check looks


def test_gpu_profiles_allow_apply_model_but_servers_never_get_it():
    from course_utils.profiles import get_profile
    from course_utils.server import Server

    for name in ("qwen7b", "llama3b"):
        prof = get_profile(name)
        assert prof.env["VLLM_ALLOW_INSECURE_SERIALIZATION"] == "1"
        assert "VLLM_ALLOW_INSECURE_SERIALIZATION" not in Server(prof).server_env_changes()


def test_an_over_budget_setting_says_it_does_not_fit():
    from course_utils.memory import figures

    over = figures.layout_for(max_loras=4, max_lora_rank=256)
    assert not over.fits
    text = over.table()
    assert "放不下" in text and "vLLM 会拒绝启动" in text and "超出预算" in text
    assert "-0." not in text and " -" not in text.replace(" - ", "")  # no negative GiB shown
    fine = figures.layout_for(max_loras=4, max_lora_rank=16)
    assert fine.fits and "放不下" not in fine.table() and fine.misfit() == ""


def test_kv_budget_on_a_gpu_has_no_cpu_env_and_no_reported_bytes():
    """The GPU branch of Lab 02's KV check: vLLM leaves kv_cache_memory_bytes None, the qwen7b profile
    has no VLLM_CPU_KVCACHE_SPACE; the budget then comes from vLLM's block count (no KeyError)."""
    from course_utils import memory
    from course_utils.profiles import get_profile

    cfg = memory.load_config("qwen2.5-7b-instruct")
    gpu = get_profile("qwen7b")
    assert "VLLM_CPU_KVCACHE_SPACE" not in gpu.env
    kv = {"num_blocks": 4792, "block_size": 16, "kv_cache_memory_bytes": None}
    got, source = memory.kv_budget(kv, gpu.env, cfg, "bfloat16")
    assert got == 4792 * memory.kv_page_bytes(cfg, 16, "bfloat16") * 28 and "block 数" in source
    assert memory.kv_cache(cfg, got, 16, "bfloat16").num_blocks == 4792
    # on CPU: what vLLM reports wins, else the profile's setting
    assert memory.kv_budget({**kv, "kv_cache_memory_bytes": 123}, {}, cfg, "bfloat16") == (123, "vLLM 报告的（kv_cache_memory_bytes）")
    assert memory.kv_budget(kv, {"VLLM_CPU_KVCACHE_SPACE": "1"}, cfg, "bfloat16")[0] == memory.GiB


def test_a_bar_that_does_not_fit_ends_at_the_card_and_says_so_in_its_label():
    import matplotlib

    matplotlib.use("Agg")
    from course_utils.memory import figures

    layouts = {"r16": figures.layout_for(max_loras=4, max_lora_rank=16),
               "r256": figures.layout_for(max_loras=4, max_lora_rank=256)}
    ax = figures.draw(layouts)
    total = layouts["r256"].gpu_total / GiB
    ends = {}
    for patch in ax.patches:
        row = round(patch.get_y() + patch.get_height() / 2)
        ends[row] = max(ends.get(row, 0.0), patch.get_x() + patch.get_width())
    assert max(ends.values()) <= total + 1e-6
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[0] == "r16" and labels[1].startswith("r256\nover budget by the memory model")
