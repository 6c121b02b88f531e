"""The adapter-load benchmark: its random adapters are real peft adapters of the stated size; the fit is a line."""

from pathlib import Path

import pytest

from course_tools.bench import loadbench as measure
from course_utils.engine import loadbench


def test_a_random_adapter_passes_the_pre_check_at_its_rank_and_size(tmp_path):
    pytest.importorskip("torch")
    from course_utils import get_profile
    from course_utils.adapters import check_adapter

    tiny = get_profile("tiny")
    path = measure.make_random_adapter(tmp_path / "r32", Path(tiny.base_model), 32)
    info = check_adapter(path, tiny.base_model, max_lora_rank=32)
    assert info.rank == 32 and len(info.modules) == 7 * 2                       # 7 projections x 2 layers
    # r (d_in + d_out) per projection, float32: q 512, k 384, v 384, o 512, gate 768, up 768, down 768
    assert info.weight_bytes == 2 * 32 * (512 + 384 + 384 + 512 + 3 * 768) * 4
    assert measure.size_mb(path) == pytest.approx(info.weight_bytes / 1e6, abs=0.01)


def test_fit_and_table_from_a_recording():
    res = {"repeats": 3, "bases": {"tiny": {"model": "m", "engine start s": 2.0, "server start s": 30.0, "rows": [
        {"rank": 8, "MB": 1.0, "add_lora ms": 12.0, "load endpoint ms": 20.0},
        {"rank": 16, "MB": 2.0, "add_lora ms": 14.0, "load endpoint ms": 22.0},
        {"rank": 32, "MB": 4.0, "add_lora ms": 18.0, "load endpoint ms": 26.0}]}}}
    a, b = loadbench.fit(res["bases"]["tiny"]["rows"], "add_lora ms")
    assert (a, b) == pytest.approx((10.0, 2.0))
    t = loadbench.table(res)
    assert list(t["add_lora 用时（ms）"]) == [12.0, 14.0, 18.0]
    assert list(t["/v1/load_lora_adapter 用时（ms）"]) == [20.0, 22.0, 26.0]
    assert loadbench.starts(res).loc["tiny"].tolist() == [2.0, 30.0]
    res["bases"]["wide"] = res["bases"]["tiny"]
    _, (a, b) = loadbench.plot(res, extrapolate_to=("7B", 80.0))
    assert (a, b) == pytest.approx((10.0, 2.0))
    import matplotlib.pyplot as plt
    plt.close("all")
