"""course_utils.engine.bench (setting checks, workloads, table rows and ratios) and the `make bench` command line
(course_tools.bench.engine); no vLLM needed."""

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from course_tools.bench import engine as bench_cli
from course_utils.engine import bench
from course_utils.tinyworld.tasks import make_examples
from course_utils.engine.bench import BenchError
from course_utils.profiles import get_profile

SANITIZE = Path(__file__).parent / "sanitize.cfg"


def sanitizer_patterns():
    lines = SANITIZE.read_text().splitlines()
    return [ln.split(": ", 1)[1] for ln in lines if ln.startswith("regex:")]


def test_check_engine_accepts_exactly_the_ranks_vllm_accepts():
    accepted, hints = [], {}
    for rank in range(0, 600):
        try:
            bench.check_engine(4, rank, max_cpu_loras=4)
            accepted.append(rank)
        except BenchError as e:
            hints[rank] = str(e)
    # vLLM's LoRAConfig.max_lora_rank: Literal[1, 8, 16, 32, 64, 128, 256, 320, 512] (vllm/config/lora.py)
    assert accepted == [1, 8, 16, 32, 64, 128, 256, 320, 512]
    assert hints[2].endswith("装得下秩 2 的最小允许值是 8。")
    assert hints[257].endswith("装得下秩 257 的最小允许值是 320。")
    assert hints[0].endswith("装得下秩 0 的最小允许值是 1。")
    assert hints[513].endswith("320, 512 之一）。")  # above 512 nothing fits: no hint


def test_check_engine_max_loras_range():
    ok = [ml for ml in range(-2, 40) if not _refused(bench.check_engine, ml, 16)]
    assert ok == list(range(1, 40))
    assert _refused(bench.check_engine, True, 16)  # a bool is not a slot count
    assert [c for c in (None, 3, 4, 5) if not _refused(bench.check_engine, 4, 16, c)] == [None, 4, 5]


def _refused(fn, *args) -> bool:
    try:
        fn(*args)
    except BenchError:
        return True
    return False


@pytest.mark.parametrize("kwargs, message", [
    ({"max_loras": 0, "max_lora_rank": 16}, r"max_loras=0：vLLM 要一个 >= 1 的整数"),
    ({"max_loras": -2, "max_lora_rank": 16}, r"max_loras=-2"),
    ({"max_loras": 2.5, "max_lora_rank": 16}, r"max_loras=2.5"),
    ({"max_loras": 4, "max_lora_rank": 48},
     (r"max_lora_rank=48 不是 vLLM 接受的取值.*1, 8, 16, 32, 64, 128, 256, 320, 512 之一）"
      r".*装得下秩 48 的最小允许值是 64")),
    ({"max_loras": 4, "max_lora_rank": 1024}, r"max_lora_rank=1024 不是 vLLM 接受的取值.*512 之一）。$"),
    ({"max_loras": 4, "max_lora_rank": 16, "max_cpu_loras": 2}, r"max_cpu_loras（2）必须 >= max_loras（4）"),
])
def test_check_engine_refuses_with_a_clear_message(kwargs, message):
    with pytest.raises(BenchError, match=message):
        bench.check_engine(**kwargs)


def test_pick_adapters():
    prof = get_profile("tiny")
    assert bench.pick_adapters(prof) == ["sql", "support", "medical", "json"]
    assert bench.pick_adapters(prof, 2) == ["sql", "support"]
    with pytest.raises(BenchError, match=r"实验要 5 个不同的 adapter，而配置 'tiny' 只有 4 个"
                                         r"（sql, support, medical, json）。最多用 4 个"):
        bench.pick_adapters(prof, 5)
    with pytest.raises(BenchError, match="0 到 4 之间的整数"):
        bench.pick_adapters(prof, -1)


def test_workload_interleaves_and_is_deterministic():
    rows = bench.workload(["sql", "support", "medical", "json"], per_adapter=4, base_rows=4)
    assert len(rows) == 20 and rows == bench.workload(["sql", "support", "medical", "json"], 4, 4)
    assert [a for a, _ in rows[:5]] == ["sql", "support", "medical", "json", None]
    assert sum(a is None for a, _ in rows) == 4
    sql = {e.prompt for e in make_examples("sql", 4, "heldout", 0)}
    assert rows[0][1] in sql and rows[1][1] in {e.prompt for e in make_examples("support", 4, "heldout", 0)}
    # copies named like sql_3 get their family's prompts
    assert bench.workload(["sql_3"], 1)[0][1] in sql
    assert len(bench.workload([], 0, base_rows=3)) == 3
    with pytest.raises(BenchError):
        bench.workload(["sql"], -1)


def test_row_masks_only_timings():
    tr = SimpleNamespace(request_ids=["a", "b"], n_steps=12, output_tokens=64, seconds=0.5, tokens_per_second=128.0,
                         max_adapters_in_a_step=lambda: 2)
    r = bench.row("mixed", tr, 4)
    assert r == {"设置": "mixed", "max_loras": 4, "请求数": 2, "引擎步数": 12, "一步里最多几个 adapter": 2,
                 "输出 token 数": 64, "墙钟时间": "0.50 s", "吞吐": "128 tok/s"}
    text = " | ".join(map(str, r.values()))
    for pattern in sanitizer_patterns()[:2]:
        text = re.sub(pattern, "<masked>", text)
    assert text == "mixed | 4 | 2 | 12 | 2 | 64 | <masked> | <masked>"
    assert re.fullmatch(sanitizer_patterns()[1], bench.rate(12345.6)) and bench.rate(12345.6) == "12,346 tok/s"


def test_spread_and_ratios():
    s = bench.Spread.of([3, 1, 2])
    assert (s.median, s.low, s.high) == (2, 1, 3)
    assert bench.ratios([4, 6], [2, 2]).as_ratio() == "2.50x（2.00-3.00）"
    assert bench.ratio_lines({"a": [10.0], "b": [4.0]}, [("a", "b")]) == ["a / b 的吞吐之比：2.50x（只跑了一次）"]
    with pytest.raises(BenchError):
        bench.ratios([1.0], [])


def test_report_formats_the_three_settings():
    n = 4
    res = {"adapters": ["sql", "support", "medical", "json"], "n_prompts": 32, "tokens": 64, "reps": 3,
           "max_lora_rank": 64, "mixed_outputs_identical": True,
           "steps": {bench.BASE_ONLY: 64, bench_cli.mixed(n, n): 64, bench_cli.mixed(n, 1): 256},
           "rates": {bench.BASE_ONLY: [9000.0, 9500.0, 9200.0], bench_cli.mixed(n, n): [4500.0, 4700.0, 4600.0],
                     bench_cli.mixed(n, 1): [1900.0, 2000.0, 1950.0]}}
    res.update(interleaved=True, first_step={bench_cli.mixed(n, n): [4.2, 4.0, 4.1]},
               median_step={bench_cli.mixed(n, n): [0.061, 0.075, 0.064]})
    text = bench_cli.report(res)
    assert "interleaved (both engines alive)" in text
    assert "  4 adapters mixed, max_loras=4   first step   4,100 ms, median step   64.0 ms" in text
    assert "4 adapters mixed, max_loras=1" + " " * 9 + "256   1,950 tok/s（1,900-2,000）" in text
    assert "4 adapters mixed, max_loras=4 / 4 adapters mixed, max_loras=1 的吞吐之比：2.36x（2.35-2.37）" in text
    assert "4 adapters mixed, max_loras=4 / 只走基座 的吞吐之比：0.50x" in text


def test_cli_refuses_bad_settings_before_any_engine(capsys):
    assert bench_cli.main(["--profile", "tiny", "--adapters", "5"]) == 2
    assert "只有 4 个（sql, support, medical, json）" in capsys.readouterr().err
    assert bench_cli.main(["--profile", "tiny", "--max-lora-rank", "48"]) == 2
    assert "max_lora_rank=48 不是 vLLM 接受的取值" in capsys.readouterr().err


def test_wall_breakdown_splits_the_first_step_from_the_rest():
    """Lab 03 sections 3-4: a run's wall time, its first step (the prefill it admitted) against the other steps."""
    tr = SimpleNamespace(step_seconds=[4.186, 0.07, 0.0754, 0.08], n_steps=4, seconds=4.5)
    [row] = bench.wall_breakdown({"max_loras=4": tr})
    assert row == {"设置": "max_loras=4", "引擎步数": 4, "第一步 (ms)": 4186, "其余各步合计 (ms)": 225,
                   "其余步的中位数 (ms)": 75.4, "墙钟 (s)": 4.5, "第一步占墙钟": "93%"}
