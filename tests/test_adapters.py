"""course_utils.adapters: the pre-check names each way an adapter folder can be wrong.

Every bad adapter here is a small fake folder written by the test: adapter_config.json plus an
adapter_model.safetensors whose header is built with struct + json (zeros for data; no torch).
"""

import json
import struct
from pathlib import Path

import pytest

from course_utils import get_profile
from course_utils.adapters import (AdapterError, check_adapter, module_rank, read_adapter, read_safetensors_header,
                                   smallest_rank_that_fits, targets_module)
from course_utils.arch import arch

TINY = get_profile("tiny")
Q = "base_model.model.model.layers.{}.self_attn.q_proj"
V = "base_model.model.model.layers.{}.self_attn.v_proj"


def write_safetensors(path, tensors):
    """A valid safetensors file of zeros: {name: shape} in float32."""
    header, offset = {}, 0
    for name, shape in tensors.items():
        n = 4
        for d in shape:
            n *= d
        header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * offset)


def lora_pair(module, rank, d_in=256, d_out=256, rank_b=None):
    """The two tensors peft saves for one module: lora_A (rank, d_in), lora_B (d_out, rank)."""
    return {f"{module}.lora_A.weight": (rank, d_in), f"{module}.lora_B.weight": (d_out, rank_b or rank)}


def write_adapter(tmp_path, tensors, **cfg):
    d = tmp_path / "adapter"
    d.mkdir()
    conf = {"peft_type": "LORA", "r": 8, "lora_alpha": 16, "target_modules": ["q_proj"],
            "base_model_name_or_path": "other-base", **cfg}
    (d / "adapter_config.json").write_text(json.dumps(conf))
    write_safetensors(d / "adapter_model.safetensors", tensors)
    return d


def fake_adapter(tmp_path, r=8, hidden=256, layers=1, **cfg):
    """r on q_proj of ``layers`` layers, as peft saves it for a base of width ``hidden``."""
    tensors = {}
    for i in range(layers):
        tensors.update(lora_pair(Q.format(i), r, hidden, hidden))
    return write_adapter(tmp_path, tensors, r=r, **cfg)


# ---------------------------------------------------------------- the shipped adapters

@pytest.mark.parametrize("name", ["sql", "support", "medical", "json"])
def test_shipped_adapters_fit_the_tiny_base(name):
    info = check_adapter(TINY.adapter(name), TINY.base_model, TINY.max_lora_rank)
    assert info.rank in (8, 16, 32, 64)
    assert info.weight_bytes > 0


def test_ranks_cover_8_to_64_and_one_adapts_the_mlp():
    infos = {n: read_adapter(TINY.adapter(n)) for n in TINY.adapters}
    assert {n: i.rank for n, i in infos.items()} == {"sql": 16, "support": 8, "medical": 32, "json": 64}
    assert infos["support"].target_modules == ["q_proj", "v_proj"]
    layers = arch(TINY.base_model).layers
    assert len(infos["support"].modules) == 2 * layers  # q_proj and v_proj of every layer
    assert any("down_proj" in i.target_modules for i in infos.values())


def test_rank_above_max_names_the_fix():
    with pytest.raises(AdapterError, match=r"秩是 16，超过了 max_lora_rank=8.*max_lora_rank=16"):
        check_adapter(TINY.adapter("sql"), max_lora_rank=8)
    assert [smallest_rank_that_fits(r) for r in (1, 2, 16, 20, 257, 321, 512, 513)] == [1, 8, 16, 32, 320, 512, 512,
                                                                                          None]


def test_rank_above_every_allowed_value(tmp_path):
    d = fake_adapter(tmp_path, r=600)
    with pytest.raises(AdapterError, match=r"秩是 600，超过了 max_lora_rank=512。vLLM 接受的 max_lora_rank 最大是 "
                                           r"512；用更低的秩重新训练这个 adapter"):
        check_adapter(d, max_lora_rank=512)


# ---------------------------------------------------------------- the weights against the config

def test_config_rank_differs_from_the_weights(tmp_path):
    # the old message blamed the base ("expects input size 256, but this base's k_proj has 256")
    d = fake_adapter(tmp_path, r=16, layers=2)
    cfg = json.loads((d / "adapter_config.json").read_text())
    (d / "adapter_config.json").write_text(json.dumps(dict(cfg, r=8)))
    with pytest.raises(AdapterError) as e:
        check_adapter(d, TINY.base_model)
    msg = str(e.value)
    assert "adapter_config.json 写的是 r=8，但权重不一致：每一对 LoRA 矩阵的秩都是 16" in msg
    assert "另一个基座" not in msg and '把秩设成 16' in msg


def test_one_module_of_another_rank(tmp_path):
    d = write_adapter(tmp_path, {**lora_pair(Q.format(0), 8), **lora_pair(V.format(0), 16, d_out=128)},
                      target_modules=["q_proj", "v_proj"])
    with pytest.raises(AdapterError, match=r"写的是 r=8，但权重不一致：model\.layers\.0\.self_attn\.v_proj "
                                           r"的秩是 16（lora_A \[16, 256\], lora_B \[128, 16\]）"):
        read_adapter(d)


def test_lora_a_and_b_disagree(tmp_path):
    d = write_adapter(tmp_path, lora_pair(Q.format(0), 8, rank_b=16))
    with pytest.raises(AdapterError, match=r"q_proj 的 lora_A 秩是 8，lora_B 秩却是 16（lora_A \[8, 256\], "
                                           r"lora_B \[256, 16\]）；一对 LoRA 矩阵的秩必须相同"):
        read_adapter(d)


def test_rank_pattern_is_accepted_when_the_weights_follow_it(tmp_path):
    tensors = {**lora_pair(Q.format(0), 8), **lora_pair(V.format(0), 16, d_out=128)}
    d = write_adapter(tmp_path, tensors, target_modules=["q_proj", "v_proj"], rank_pattern={"v_proj": 16},
                      alpha_pattern={"v_proj": 32})
    info = check_adapter(d, TINY.base_model, max_lora_rank=16)
    assert info.rank == 8 and module_rank(info.config, "model.layers.0.self_attn.v_proj") == 16
    # vLLM compares the largest rank, rank_pattern's included, with max_lora_rank
    with pytest.raises(AdapterError, match=r"的秩是 16，超过了 max_lora_rank=8.*max_lora_rank=16"):
        check_adapter(d, max_lora_rank=8)


def test_rank_pattern_the_weights_contradict(tmp_path):
    tensors = {**lora_pair(Q.format(0), 8), **lora_pair(V.format(0), 16, d_out=128)}
    d = write_adapter(tmp_path, tensors, target_modules=["q_proj", "v_proj"], rank_pattern={"v_proj": 4})
    with pytest.raises(AdapterError, match=r"adapter_config.json 给 model\.layers\.0\.self_attn\.v_proj 的秩是 4"
                                           r"（rank_pattern 'v_proj'），但权重不一致：.*的秩是 16"):
        read_adapter(d)


@pytest.mark.parametrize("cfg,msg", [
    ({"rank_pattern": {"q_proj": 0}}, (r'adapter_config.json 里的 rank_pattern 必须把模块名映射到正整数的秩，'
                                       r'而不是 \{"q_proj": 0\}')),
    ({"alpha_pattern": {"q_proj": "high"}}, (r'alpha_pattern 必须把模块名映射到数，'
                                             r'而不是 \{"q_proj": "high"\}')),
])
def test_bad_patterns(tmp_path, cfg, msg):
    with pytest.raises(AdapterError, match=msg):
        read_adapter(fake_adapter(tmp_path, **cfg))


def test_weights_for_a_module_the_config_does_not_target(tmp_path):
    d = write_adapter(tmp_path, {**lora_pair(Q.format(0), 8), **lora_pair(V.format(0), 8, d_out=128),
                                 **lora_pair(V.format(1), 8, d_out=128)}, target_modules=["q_proj"])
    with pytest.raises(AdapterError) as e:
        read_adapter(d)
    msg = str(e.value)
    assert ("有 model.layers.0.self_attn.v_proj（还有另外 1 个模块）的权重，adapter_config.json 却不以它为目标"
            '（target_modules ["q_proj"]）') in msg
    assert "vLLM 按张量名字匹配 LoRA 权重、不看这张列表" in msg
    assert "就把 'v_proj' 加进 target_modules" in msg


def test_weights_for_a_layer_outside_layers_to_transform(tmp_path):
    d = fake_adapter(tmp_path, layers=3, layers_to_transform=[0, 1])
    with pytest.raises(AdapterError, match=r"有 model\.layers\.2\.self_attn\.q_proj.*的权重，adapter_config"
                                           r"\.json 却不以它为目标（target_modules \[\"q_proj\"\], "
                                           r"layers_to_transform \[0, 1\]）"):
        read_adapter(d)


def test_regex_and_all_linear_targets():
    assert targets_module({"target_modules": r".*\.(q|v)_proj"}, "model.layers.3.self_attn.v_proj")
    assert not targets_module({"target_modules": r".*\.(q|v)_proj"}, "model.layers.3.self_attn.k_proj")
    assert targets_module({"target_modules": "all-linear"}, "model.layers.0.mlp.down_proj")
    assert not targets_module({"target_modules": "all-linear"}, "lm_head")
    assert not targets_module({"target_modules": ["q_proj"], "exclude_modules": ["q_proj"]},
                              "model.layers.0.self_attn.q_proj")


def test_no_lora_tensors(tmp_path):
    d = write_adapter(tmp_path, {"model.embed_tokens.weight": (768, 256), "model.norm.weight": (256,)})
    with pytest.raises(AdapterError, match=r"里没有 LoRA 权重.*它有 2 个张量，例如 'model\.embed_tokens\."
                                           r"weight', 'model\.norm\.weight'）。它不是 peft 保存的 LoRA"):
        read_adapter(d)


def test_half_a_pair(tmp_path):
    d = write_adapter(tmp_path, {f"{Q.format(0)}.lora_A.weight": (8, 256)})
    with pytest.raises(AdapterError, match=r"q_proj 有 lora_A 却没有 lora_B；文件不完整"):
        read_adapter(d)


# ---------------------------------------------------------------- the weights against the base

def test_adapter_for_another_base_names_the_mismatch(tmp_path):
    d = fake_adapter(tmp_path, hidden=512)
    with pytest.raises(AdapterError, match=r"是为另一个基座做的：它的 q_proj lora_A 要的输入维度是 512，"
                                           r"而这个基座的 q_proj 是 256（hidden_size 256）"):
        check_adapter(d, TINY.base_model)


def test_output_side_of_another_base(tmp_path):
    d = write_adapter(tmp_path, {**lora_pair(Q.format(0), 8), **lora_pair(V.format(0), 8, d_out=256)},
                      target_modules=["q_proj", "v_proj"])
    with pytest.raises(AdapterError, match=r"它的 v_proj lora_B 要的输出维度是 256，而这个基座的 v_proj "
                                           r"是 128"):
        check_adapter(d, TINY.base_model)


def test_too_many_layers(tmp_path):
    d = fake_adapter(tmp_path, layers=9)
    n = arch(TINY.base_model).layers
    with pytest.raises(AdapterError, match=f"它有第 {n} 层的权重，而基座（.*）只有 {n} 层"):
        check_adapter(d, TINY.base_model)


def test_base_without_config(tmp_path):
    with pytest.raises(AdapterError, match=r"基座目录 .* 里没有 config.json；请传入要服务这个 adapter 的基座目录"):
        check_adapter(TINY.adapter("sql"), tmp_path)


# ---------------------------------------------------------------- the folder and its files

def test_missing_folder_and_config(tmp_path):
    with pytest.raises(AdapterError, match="不存在"):
        read_adapter(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(AdapterError, match="里没有 adapter_config.json"):
        read_adapter(tmp_path / "empty")


def test_bad_json(tmp_path):
    d = fake_adapter(tmp_path)
    (d / "adapter_config.json").write_text('{"r": 8, "target_modules": ["q_proj"]')
    with pytest.raises(AdapterError, match=r"adapter_config.json 不是合法的 JSON（.*）。请恢复"):
        read_adapter(d)


@pytest.mark.parametrize("r,msg", [(None, r'没有 "r"；LoRA 的秩必须是正整数'),
                                   (0, r'写的是 "r": 0；LoRA 的秩必须是正整数'),
                                   ("8", r'写的是 "r": "8"；LoRA 的秩')])
def test_missing_or_bad_r(tmp_path, r, msg):
    d = fake_adapter(tmp_path)
    cfg = json.loads((d / "adapter_config.json").read_text())
    cfg.pop("r") if r is None else cfg.update(r=r)
    (d / "adapter_config.json").write_text(json.dumps(cfg))
    with pytest.raises(AdapterError, match=msg):
        read_adapter(d)


@pytest.mark.parametrize("drop,msg", [("lora_alpha", r"里没有 lora_alpha，vLLM 需要它们"),
                                      ("target_modules", r"里没有 target_modules，vLLM 需要它们")])
def test_fields_vllm_requires(tmp_path, drop, msg):
    d = fake_adapter(tmp_path)
    cfg = json.loads((d / "adapter_config.json").read_text())
    del cfg[drop]
    (d / "adapter_config.json").write_text(json.dumps(cfg))
    with pytest.raises(AdapterError, match=msg):
        read_adapter(d)


@pytest.mark.parametrize("cfg,msg", [({"use_dora": True}, "DoRA"),
                                     ({"modules_to_save": ["lm_head"]}, "modules_to_save")])
def test_what_vllm_refuses(tmp_path, cfg, msg):
    with pytest.raises(AdapterError, match=msg):
        read_adapter(fake_adapter(tmp_path, **cfg))


def test_truncated_weights(tmp_path):
    d = fake_adapter(tmp_path)
    f = d / "adapter_model.safetensors"
    f.write_bytes(f.read_bytes()[:-100])
    with pytest.raises(AdapterError, match="被截断了"):
        read_adapter(d)


def test_damaged_header(tmp_path):
    f = tmp_path / "w.safetensors"
    raw = b'{"x": {"dtype": "F32"'
    f.write_bytes(struct.pack("<Q", len(raw)) + raw)
    with pytest.raises(AdapterError, match="safetensors 文件头损坏"):
        read_safetensors_header(f)


def test_read_mode_shows_an_adapter_that_is_not_on_this_machine(recordings, tmp_path):
    """A 4090 profile's adapters are not on a reader's machine: the recording keeps what was read."""
    from course_utils import adapters, profiles
    from course_utils.replay import session

    sql = profiles.get_profile("tiny").adapter("sql")
    session.set_current(session.Session("lab", "qwen7b", "live", recording=True))
    live = adapters.read_adapter(sql)
    session.set_current(session.Session("lab", "qwen7b", "replay"))
    elsewhere = adapters.read_adapter(tmp_path / "autodl-tmp" / "adapters" / "sql")   # no such folder here
    assert (elsewhere.rank, elsewhere.target_modules, elsewhere.weight_bytes) == \
           (live.rank, live.target_modules, live.weight_bytes)
    with pytest.raises(adapters.AdapterError):       # outside a lab a missing folder is still an error
        session.set_current(None)
        adapters.read_adapter(tmp_path / "nope" / "sql")


def test_a_gpu_model_folder_that_is_not_here_reads_the_shipped_config():
    from course_utils.arch import load_config

    cfg = load_config("/root/autodl-tmp/models/Qwen2.5-7B-Instruct")
    assert cfg["hidden_size"] == 3584


# --------------------------------------------------------------------------
# Same shapes, another base: only the recorded fingerprint tells
# --------------------------------------------------------------------------

def test_shipped_adapters_record_the_fingerprint_of_the_shipped_base():
    from course_utils.adapters import BASE_IDENTITY_FILE, base_fingerprint

    here = base_fingerprint(TINY.base_model)
    for name in TINY.adapters:
        identity = json.loads((Path(TINY.adapter(name)) / BASE_IDENTITY_FILE).read_text())
        assert identity["base_fingerprint"] == here, name
        assert check_adapter(TINY.adapter(name), TINY.base_model).base_check.startswith("同一个基座: ")


def test_the_sibling_adapter_fits_every_shape_and_is_refused_by_its_fingerprint():
    from course_utils.paths import TINY as TINY_DIR

    sibling = TINY_DIR / "foreign" / "sibling-sql"
    info = read_adapter(sibling)
    assert info.rank == read_adapter(TINY.adapter("sql")).rank           # the same recipe, the same shapes
    with pytest.raises(AdapterError, match="在另一个基座上训练的.*course-tiny-qwen2-sibling.*形状都对得上"):
        check_adapter(sibling, TINY.base_model, max_lora_rank=64)


def test_fingerprint_changes_with_any_tensor_and_an_unrecorded_base_is_not_checked(tmp_path):
    from course_utils.adapters import base_fingerprint, write_base_identity

    base = tmp_path / "base"
    base.mkdir()
    write_safetensors(base / "model.safetensors", {"model.embed_tokens.weight": (4, 8)})
    (base / "config.json").write_text(json.dumps({"dtype": "float32"}))          # stored like the tiny base
    before = base_fingerprint(base)
    raw = bytearray((base / "model.safetensors").read_bytes())
    raw[-1] = 1                                                                 # one byte of one weight
    (base / "model.safetensors").write_bytes(bytes(raw))
    assert base_fingerprint(base) != before
    adapter = fake_adapter(tmp_path)
    info = check_adapter(adapter, TINY.base_model)
    assert info.base_check.startswith("没查: ") and "base_model_name_or_path" in info.base_check
    write_base_identity(adapter, base, "other")
    with pytest.raises(AdapterError, match="在另一个基座上训练的：它记录的基座是 'other'"):
        check_adapter(adapter, TINY.base_model)
    with pytest.raises(AdapterError, match="没有可以算指纹的 \\*.safetensors"):
        base_fingerprint(tmp_path / "adapter" / "nothing")


def test_a_sharded_base_is_read_through_its_index(tmp_path):
    """The 7B bases are sharded (model-0000N-of-0000M.safetensors + model.safetensors.index.json): the index
    names the shards, each once however many tensors it holds; a stray file beside them is not part of the model.
    The fingerprint is that of the same tensors in one file."""
    from course_utils.adapters import weight_files, base_fingerprint

    tensors = {"model.embed_tokens.weight": (4, 8), "model.layers.0.mlp.up_proj.weight": (8, 4),
               "model.norm.weight": (8,)}
    single, sharded = tmp_path / "single", tmp_path / "sharded"
    single.mkdir()
    sharded.mkdir()
    write_safetensors(single / "model.safetensors", tensors)
    names = list(tensors)
    shards = {"model-00001-of-00002.safetensors": names[:2], "model-00002-of-00002.safetensors": names[2:]}
    for file, held in shards.items():
        write_safetensors(sharded / file, {n: tensors[n] for n in held})
    (sharded / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": 0}, "weight_map": {n: f for f, held in shards.items() for n in held}}))
    write_safetensors(sharded / "consolidated.safetensors", {"stray": (2, 2)})   # not in the index

    assert weight_files(sharded) == [sharded / f for f in sorted(shards)]
    assert base_fingerprint(sharded) == base_fingerprint(single)


def test_a_base_stored_another_way_is_not_checked_rather_than_refused(tmp_path):
    """An adapter trained on the bf16 base and served on its AWQ copy: the files differ by design."""
    from course_utils.adapters import check_same_base, write_base_identity

    trained_on = tmp_path / "bf16"
    trained_on.mkdir()
    (trained_on / "config.json").write_text(json.dumps({"torch_dtype": "bfloat16"}))
    write_safetensors(trained_on / "model.safetensors", {"w": (2, 2)})
    served = tmp_path / "awq"
    served.mkdir()
    (served / "config.json").write_text(json.dumps({"torch_dtype": "float16",
                                                    "quantization_config": {"quant_method": "awq"}}))
    write_safetensors(served / "model.safetensors", {"w": (2, 3)})
    adapter = fake_adapter(tmp_path)
    write_base_identity(adapter, trained_on, "qwen-bf16")
    said = check_same_base(read_adapter(adapter), served)
    assert said.startswith("没查: ") and "'quantization': 'awq'" in said and "qwen-bf16" in said


# -- Lab 01, pitfall 3: what vLLM 0.26.0 does with an adapter for another width -------------------------------
def _vllm_0_26_set_lora(slot_a, slot_b, lora_a, lora_b):
    """The copy of vLLM 0.26.0's ``set_lora`` (lora/layers/base_linear.py; column_parallel_linear.py per slice):
    each tensor goes into the ``[:rows, :cols]`` corner of the slot preallocated at the base's shapes."""
    slot_a[: lora_a.shape[0], : lora_a.shape[1]].copy_(lora_a)
    slot_b[: lora_b.shape[0], : lora_b.shape[1]].copy_(lora_b)


@pytest.mark.parametrize("base", ["tiny", "qwen2.5-7b-instruct"])
def test_the_wide_adapter_is_refused_by_vllm_and_the_pre_check_on_every_course_base(base):
    """Lab 01's pitfall 3 shows the same lesson on both profiles: the shipped 'wide' adapter (hidden 4096) is
    wider than the tiny base and than Qwen2.5-7B, so vLLM's slot copy fails (a refusal), and the pre-check
    names the mismatch first. A *narrower* adapter would be copied into the corner without a word on the 7B."""
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file

    from course_utils.paths import CONFIGS, TINY as TINY_WORLD

    folder = TINY_WORLD / "base" if base == "tiny" else CONFIGS / base
    hidden = json.loads((folder / "config.json").read_text())["hidden_size"]
    wide = TINY_WORLD / "foreign" / "wide-qwen2-lora"
    with pytest.raises(AdapterError, match=f"要的输入维度是 4096，而这个基座的 q_proj 是 {hidden}"):
        check_adapter(wide, folder, max_lora_rank=64)
    w = load_file(str(wide / "adapter_model.safetensors"))
    a = w["base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"]
    b = w["base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight"]
    slot_a, slot_b = torch.zeros(64, hidden, dtype=a.dtype), torch.zeros(hidden, 64, dtype=a.dtype)  # q slice
    with pytest.raises(RuntimeError, match=f"size of tensor a \\({hidden}\\) must match the size of tensor b \\(4096\\)"):
        _vllm_0_26_set_lora(slot_a, slot_b, a, b)
    narrow_a, narrow_b = torch.ones(8, 512, dtype=a.dtype), torch.ones(512, 8, dtype=a.dtype)   # hidden 512
    if hidden > 512:
        _vllm_0_26_set_lora(slot_a, slot_b, narrow_a, narrow_b)    # no error: the silent load of a wrong adapter
        assert slot_a.sum().item() == 8 * 512
