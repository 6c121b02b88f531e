"""The benchmarks' shared command line (course_tools.bench.cli): options, --save and its provenance."""

from __future__ import annotations

import json

import pytest

from course_tools.bench import cli as benchcli, loadbench, widebench
from course_utils import paths
from course_utils.paths import REPO


def _options(p):
    p.add_argument("--n", type=int, default=1)


def test_save_writes_what_was_measured_with_the_command(capsys):
    saved = []

    def save(res, command):
        saved.append((res, command))
        return REPO / "build" / "x.json"

    rc = benchcli.main(["--n", "3", "--save"], doc="A bench.\n\nMore.", module="course_utils.engine.x",
                       recorded=REPO / "x.json", what="figures", options=_options,
                       measure=lambda a: {"n": a.n}, save=save)
    assert rc == 0 and saved == [({"n": 3}, "python -m course_utils.engine.x --n 3 --save")]
    assert capsys.readouterr().out == "saved build/x.json\n"
    assert benchcli.main(["--n", "2"], doc="A bench.", module="m", recorded=REPO / "x.json", what="figures",
                         options=_options, measure=lambda a: {"n": a.n}, save=save) == 0
    assert len(saved) == 1 and capsys.readouterr().out == ""                  # no --save: nothing written


def test_a_reason_not_to_save_is_printed_instead(capsys):
    rc = benchcli.main(["--save"], doc="A bench.", module="m", recorded=REPO / "x.json", what="sweep",
                       options=_options, measure=lambda a: 1, save=lambda res, command: pytest.fail("saved"),
                       unsaved=lambda a: "a subset")
    assert rc == 0 and capsys.readouterr().out == "not saved: a subset\n"


def test_by_default_the_recording_gets_its_provenance(tmp_path, monkeypatch, capsys):
    pytest.importorskip("torch")                                  # the provenance names torch's threads
    monkeypatch.setattr(paths, "REPO", tmp_path)
    benchcli.main(["--save"], doc="A bench.", module="course_utils.engine.x", recorded=tmp_path / "cpu" / "x.json",
                  what="figures", options=_options, measure=lambda a: {"median": {"base": 2.0}})
    rec = json.loads((tmp_path / "cpu" / "x.json").read_text())
    assert rec["median"] == {"base": 2.0} and rec["provenance"]["command"] == "python -m course_utils.engine.x --save"
    assert "torch threads" in rec["provenance"]["hardware"] and "config" not in rec["provenance"]
    assert capsys.readouterr().out == "saved cpu/x.json\n"


@pytest.mark.parametrize("bench, options", [(widebench, ["--prompts", "--tokens", "--rounds"]),
                                             (loadbench, ["--repeats", "--no-server"])])
def test_each_bench_offers_its_options_and_save(bench, options, capsys):
    with pytest.raises(SystemExit) as e:
        bench.main(["--help"])
    out = capsys.readouterr().out
    assert e.value.code == 0 and bench.__doc__.split("\n")[0][:40] in out
    assert all(o in out for o in options) and f"write the figures Lab 03 shows ({bench.RECORDED.name})" in out


def test_opbench_quick_measures_and_is_not_saved(monkeypatch, capsys):
    pytest.importorskip("torch")
    from course_tools.bench import opbench

    sweep = opbench.sweep
    tiny = {"hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2,
            "intermediate_size": 96, "vocab_size": 100, "model_type": "qwen2"}
    seen = []

    def fake_sweep(ranks, tokens, adapters, dtypes, progress):
        seen.append((ranks, tokens, adapters, dtypes))
        return sweep(ranks, tokens, adapters, dtypes, config=tiny, progress=progress,
                     timer=lambda fns: {name: 1e-3 for name in fns})

    monkeypatch.setattr(opbench, "sweep", fake_sweep)
    monkeypatch.setattr(opbench, "save", lambda *a: pytest.fail("a --quick sweep was saved"))
    assert opbench.main(["--quick", "--save"]) == 0
    assert seen == [((16,), (32,), (1, 4), ("float32",))]
    out, err = capsys.readouterr()
    assert out.endswith("not saved: --quick is a subset; lora_ops.json keeps the full sweep\n")
    assert err.splitlines()[0] == ("   float32 r=16  tokens=32   adapters=1 q/o      base     1.00 ms  "
                                   "vllm-cpu     1.00 ms  grouped   1.000 ms")
