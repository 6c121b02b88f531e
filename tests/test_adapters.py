import json
import struct

import pytest

from course_utils import get_profile
from course_utils.adapters import AdapterError, check_adapter, read_adapter, smallest_rank_that_fits

TINY = get_profile("tiny")


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


def fake_adapter(tmp_path, r=8, hidden=256, layers=1, **cfg):
    d = tmp_path / "adapter"
    d.mkdir()
    conf = {"peft_type": "LORA", "r": r, "lora_alpha": 16, "target_modules": ["q_proj"],
            "base_model_name_or_path": "other-base", **cfg}
    (d / "adapter_config.json").write_text(json.dumps(conf))
    tensors = {}
    for i in range(layers):
        p = f"base_model.model.model.layers.{i}.self_attn.q_proj"
        tensors[f"{p}.lora_A.weight"] = (r, hidden)
        tensors[f"{p}.lora_B.weight"] = (hidden, r)
    write_safetensors(d / "adapter_model.safetensors", tensors)
    return d


@pytest.mark.parametrize("name", ["sql", "support", "medical", "json"])
def test_shipped_adapters_fit_the_tiny_base(name):
    info = check_adapter(TINY.adapter(name), TINY.base_model, TINY.max_lora_rank)
    assert info.rank in (8, 16, 32, 64)
    assert info.weight_bytes > 0


def test_ranks_cover_8_to_64_and_one_adapts_the_mlp():
    infos = [read_adapter(TINY.adapter(n)) for n in TINY.adapters]
    assert sorted(i.rank for i in infos) == [8, 16, 32, 64]
    assert any("down_proj" in i.target_modules for i in infos)


def test_rank_above_max_names_the_fix():
    with pytest.raises(AdapterError, match=r"rank 16, above max_lora_rank=8.*max_lora_rank=16"):
        check_adapter(TINY.adapter("sql"), max_lora_rank=8)
    assert smallest_rank_that_fits(20, (8, 16, 32)) == 32


def test_adapter_for_another_base_names_the_mismatch(tmp_path):
    d = fake_adapter(tmp_path, hidden=512)
    with pytest.raises(AdapterError, match=r"made for another base: its q_proj lora_A expects input size 512, "
                                           r"but this base's q_proj has 256"):
        check_adapter(d, TINY.base_model)


def test_too_many_layers(tmp_path):
    d = fake_adapter(tmp_path, layers=9)
    with pytest.raises(AdapterError, match="weights for layer 4, but the base model .* has 4 layers"):
        check_adapter(d, TINY.base_model)


def test_missing_folder_and_config(tmp_path):
    with pytest.raises(AdapterError, match="does not exist"):
        read_adapter(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(AdapterError, match="no adapter_config.json"):
        read_adapter(tmp_path / "empty")


@pytest.mark.parametrize("cfg,msg", [({"use_dora": True}, "DoRA"), ({"modules_to_save": ["lm_head"]}, "modules_to_save")])
def test_what_vllm_refuses(tmp_path, cfg, msg):
    with pytest.raises(AdapterError, match=msg):
        read_adapter(fake_adapter(tmp_path, **cfg))


def test_truncated_weights(tmp_path):
    d = fake_adapter(tmp_path)
    f = d / "adapter_model.safetensors"
    f.write_bytes(f.read_bytes()[:-100])
    with pytest.raises(AdapterError, match="truncated"):
        read_adapter(d)
