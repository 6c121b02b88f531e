"""Lab 08's helpers: the date-stamp task and its checks, the training job per profile (the GPU branch too), the
child process, the pre-check, and an edited input in read mode."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from course_tools import budget
from course_utils import newadapter, profiles
from course_utils.newadapter import child
from course_utils.newadapter import launch, task, training
from course_utils.newadapter.task import ExampleError
from course_utils.replay import session
from course_utils.replay.record import as_recorded
from course_utils.replay.session import Session

REPO = Path(__file__).resolve().parents[1]
LAB = REPO / "labs" / "08_your_adapter.ipynb"


def test_the_stamp_rule_and_the_checker():
    assert task.stamp("2024-03-07") == "07.03.2024"
    assert task.check(" 07.03.2024\n", "2024-03-07").right
    assert task.check("7.3.2024", "2024-03-07").why == "不是 DD.MM.YYYY 格式的印戳"
    assert task.check("03.07.2024", "2024-03-07").why == "数字不对（应为 07.03.2024）"
    s = task.score(["07.03.2024", "nonsense"], ["2024-03-07", "1999-12-31"])
    assert (s["right"], s["n"], s["share"]) == (1, 2, 0.5) and s["rows"][1]["原因"] == "不是 DD.MM.YYYY 格式的印戳"
    said = task.score(["The stamp is 07.03.2024.", "no"], ["2024-03-07", "1999-12-31"])
    assert (said["right"], said["contains"]) == (0, 1)      # a sentence around the stamp is not the stamp
    with pytest.raises(ValueError):
        task.stamp("2023-02-30")


def test_the_held_out_set_is_fixed_and_apart_from_the_starter_examples():
    held = task.held_out()
    assert held == task.held_out() and len(set(held)) == 50
    assert all(task.parse_iso(d) and task.FIRST_YEAR <= int(d[:4]) <= task.LAST_YEAR for d in held)
    starter = task.starter_examples()
    assert not {iso for iso, _ in starter} & set(held)
    assert task.validate(starter) == starter


def test_the_labs_examples_are_valid_and_the_shipped_ones():
    """The examples cell of the committed lab passes the checks (a student starts from a working cell)."""
    import ast

    from course_tools import notebooks

    src = next(s for s in notebooks.code_cells(LAB) if s.lstrip().startswith("EXAMPLES = ["))
    examples = ast.literal_eval(src.split("=", 1)[1].strip())
    assert task.validate(examples) == task.starter_examples()


def test_bad_examples_are_named_one_by_one_in_chinese():
    good = task.starter_examples()
    held = task.held_out()
    bad = good[:20] + [("2023-02-30", "30.02.2023"), ("1999-12-31", "31/12/1999"), good[0], (held[0], task.stamp(held[0])),
                       ("", "01.01.2000"), "2024-01-01 -> 01.01.2024", ("2024-01-01",)]
    with pytest.raises(ExampleError) as e:
        task.validate(bad)
    msg = str(e.value)
    assert "有 7 条不能用" in msg
    for fragment in ("第 21 条", "不是 YYYY-MM-DD 写法的真实日期", "应当是 '31.12.1999'", "和第 1 条重复", "在留出集里",
                     "有一边是空的", "第 26 条", "不是 (日期, 印戳) 两个字符串", "第 27 条"):
        assert fragment in msg, fragment
    with pytest.raises(ExampleError, match="至少要 16 条"):
        task.validate(good[:5])
    with pytest.raises(ExampleError, match="应当是一个列表"):
        task.validate("2024-01-01")


def test_training_pairs_mark_the_copied_digits():
    [(prompt, answer, copied)] = task.training_pairs([("2024-03-07", "07.03.2024")])
    assert prompt == "Archive stamp for 2024-03-07" and answer == "07.03.2024" and copied == ("2024", "03", "07")


# --- the training job, per profile --------------------------------------------------------------------------

EXAMPLES = task.starter_examples()
KNOBS = {"rank": 8, "steps": 200, "target_modules": ["q_proj", "v_proj"]}


def test_the_job_on_cpu_is_the_tiny_worlds():
    job = training.job(profiles.get_profile("tiny"), "stamp", EXAMPLES, **KNOBS)
    assert (job["device"], job["dtype"], job["gradient_checkpointing"]) == ("cpu", "float32", False)
    assert child.settings(job) == {**training.CPU_TRAIN, "batch_size": 16}
    assert child.base_name(job) == "course-tiny-qwen2"
    assert job["out"] == str(REPO / "build" / "lab08" / "stamp") and job["alpha"] == 16


def test_the_job_on_a_gpu_is_the_course_adapters_on_cuda(monkeypatch, tmp_path):
    """The qwen7b branch (only a real 4090 runs it): CUDA, bf16, gradient checkpointing, the GPU learning rate."""
    from course_tools.gpu.train_adapters import BASE_NAME, GPU_TRAIN

    monkeypatch.setenv("COURSE_MODELS_DIR", str(tmp_path))
    qwen = profiles.get_profile("qwen7b")
    job = training.job(qwen, "stamp", EXAMPLES[:6] + EXAMPLES[6:], **KNOBS)
    assert (job["device"], job["dtype"], job["gradient_checkpointing"]) == ("cuda", "bfloat16", True)
    assert child.settings(job) == {k: GPU_TRAIN[k] for k in ("adapter_lr", "batch_size", "threads")}
    assert job["steps"] == KNOBS["steps"]       # the lab's knob, not the course adapters' step count
    assert child.base_name(job) == BASE_NAME and job["base"] == qwen.base_model
    rehearsal = training.job(profiles.get_profile("rehearsal"), "stamp", EXAMPLES, **KNOBS)
    assert (rehearsal["device"], rehearsal["gradient_checkpointing"]) == ("cpu", True)   # the GPU branch, on CPU
    assert child.settings(rehearsal)["threads"] == training.CPU_TRAIN["threads"]


def test_the_child_on_cuda_refuses_a_machine_without_one(tmp_path):
    """The child's GPU branch: on a machine without CUDA, check_gpu says so before anything loads."""
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    job = {**training.job(profiles.get_profile("tiny"), "stamp", EXAMPLES, **KNOBS), "device": "cuda",
           "dtype": "bfloat16", "out": str(tmp_path / "out")}
    (tmp_path / "job.json").write_text(json.dumps(job))
    with pytest.raises(training.TrainingError, match="看不到 CUDA GPU"):
        child.main(str(tmp_path / "job.json"))


@pytest.mark.live
def test_training_in_a_child_writes_an_adapter_and_reports_every_step(monkeypatch, tmp_path):
    pytest.importorskip("peft")
    monkeypatch.setattr(training, "OUT", tmp_path)
    seen = []
    run = training.train(profiles.get_profile("tiny"), "stamp", EXAMPLES, rank=2, steps=3,
                         target_modules=["q_proj"], show=lambda step, loss: seen.append(step))
    assert seen == [1, 2, 3] and len(run["losses"]) == 3 and run["stats"]["steps"] == 3
    folder = Path(run["path"])
    assert folder == tmp_path / "stamp" and {p.name for p in folder.iterdir()} >= {
        "adapter_config.json", "adapter_model.safetensors", "base_fingerprint.json"}
    assert not list(tmp_path.glob(".*partial*"))
    info = training_precheck(folder)
    assert info["rank"] == 2 and info["base_check"].startswith("同一个基座: ")


@pytest.mark.live
def test_checkpoints_are_servable_adapters_of_their_own(monkeypatch, tmp_path):
    """Lab 08, 3.1: the adapter as it stood after each checkpoint step, each a folder the pre-check passes."""
    pytest.importorskip("peft")
    monkeypatch.setattr(training, "OUT", tmp_path)
    run = training.train(profiles.get_profile("tiny"), "stamp", EXAMPLES, rank=2, steps=4,
                         target_modules=["q_proj"], checkpoints=(2, 4))
    assert run["checkpoints"] == {"2": str(tmp_path / "stamp.steps" / "step-2"),
                                  "4": str(tmp_path / "stamp.steps" / "step-4")}
    for path in run["checkpoints"].values():
        assert training_precheck(Path(path))["rank"] == 2
    same = (Path(run["checkpoints"]["4"]) / "adapter_model.safetensors").read_bytes()
    assert same == (Path(run["path"]) / "adapter_model.safetensors").read_bytes(), "the last checkpoint is the adapter"
    assert not list(tmp_path.glob(".*partial*"))


def training_precheck(folder: Path) -> dict:
    from course_utils.newadapter import precheck

    return precheck(profiles.get_profile("tiny"), str(folder), 64)


@pytest.mark.slow
def test_a_failed_child_says_where_its_log_is(monkeypatch, tmp_path):
    monkeypatch.setattr(training, "OUT", tmp_path)
    broken = replace(profiles.get_profile("tiny"), base_model=str(tmp_path / "no-such-base"))
    with pytest.raises(training.TrainingError, match="训练子进程失败") as e:
        training.train(broken, "stamp", EXAMPLES, rank=2, steps=1, target_modules=["q_proj"])
    assert "stamp.train.log" in str(e.value)


def test_the_training_child_runs_with_deterministic_cublas(monkeypatch, tmp_path):
    """Review S8: the trainer turns on torch's deterministic algorithms; on CUDA, cuBLAS is deterministic only with
    CUBLAS_WORKSPACE_CONFIG set before it starts (else a warning at every matmul in the training log). The child
    sets it before the trainer imports torch, as course_tools/gpu/train_adapters.py's training does."""
    from course_tools.tinyworld import trainer

    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    seen = {}

    def train_adapter(*args, **kwargs):          # stands where torch would start cuBLAS
        seen["env"] = os.environ.get("CUBLAS_WORKSPACE_CONFIG")
        return {"steps": 0}

    monkeypatch.setattr(trainer, "train_adapter", train_adapter)
    job = {**training.job(profiles.get_profile("tiny"), "stamp", EXAMPLES, **KNOBS), "out": str(tmp_path / "out")}
    (tmp_path / "job.json").write_text(json.dumps(job))
    assert child.main(str(tmp_path / "job.json")) == 0
    assert seen["env"] == ":4096:8", "the training child trains without deterministic cuBLAS"
    assert trainer.DETERMINISTIC_CUBLAS == {"CUBLAS_WORKSPACE_CONFIG": ":4096:8"}  # one setting, train_adapters uses it


def test_nothing_is_loaded_where_no_server_runs():
    assert launch.loaded_by(REPO / "build" / "lab08" / "stamp") == []


# --- read mode -----------------------------------------------------------------------------------------------

def test_an_edited_input_in_read_mode_gives_the_recorded_one_and_says_so(recordings, capsys):
    session.set_current(Session("lab", "tiny", "live", recording=True))
    assert as_recorded("KNOBS", {"rank": 8, "targets": ("q_proj",)}) == {"rank": 8, "targets": ("q_proj",)}
    session.set_current(Session("lab", "tiny", "replay"))
    assert as_recorded("KNOBS", {"rank": 8, "targets": ("q_proj",)}) == {"rank": 8, "targets": ("q_proj",)}
    assert capsys.readouterr().out == ""                       # unchanged (a tuple is the recorded list)
    assert as_recorded("KNOBS", {"rank": 4, "targets": ["q_proj"]}) == {"rank": 8, "targets": ["q_proj"]}
    out = capsys.readouterr().out
    assert "KNOBS 改过了" in out and "not recorded" in out and "COURSE_MODE=live" in out
    session.set_current(None)
    assert as_recorded("KNOBS", 1) == 1                        # outside a lab: just the value


def test_the_progress_bar_is_off_in_read_mode(recordings):
    pytest.importorskip("tqdm")
    session.set_current(Session("lab", "tiny", "live", recording=True))
    show = training.progress_bar(2)
    show(1, 0.5)
    show(2, 0.25)
    session.set_current(Session("lab", "tiny", "replay"))
    assert training.progress_bar(2) is None
    session.set_current(None)


def test_the_budget_counts_lab08s_training(tmp_path):
    rec = {"format": 2, "provenance": {}, "facts": {}, "calls": [
        {"key": "k", "kind": "call", "cell": None, "args": {"function": "train_adapter", "args": [],
                                                           "kwargs": {"steps": 200}}, "result": {}}]}
    (tmp_path / "08_your_adapter.json").write_text(json.dumps(rec))
    work = budget.lab_work(LAB, tmp_path)
    assert (work.train_steps, work.train_loads) == (200, 1)
    assert work.seconds() == budget.TRAIN_LOAD_S + 200 * budget.TRAIN_STEP_S
    est = newadapter.loop_estimate(200)
    assert est["训练"] == budget.TRAIN_LOAD_S + 200 * budget.TRAIN_STEP_S and set(est) == {
        "训练", "服务启动", "预检查", "load_lora_adapter", "第一个回答"}


def test_a_quantized_base_is_refused_before_the_child_starts(monkeypatch, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"quantization_config": {"quant_method": "awq"}}))
    monkeypatch.setattr(training, "OUT", tmp_path / "out")
    awq = replace(profiles.get_profile("tiny"), base_model=str(tmp_path))
    with pytest.raises(training.TrainingError, match="量化过的（awq）"):
        training.train(awq, "stamp", EXAMPLES, rank=2, steps=1, target_modules=["q_proj"])
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_on_a_gpu_a_running_server_is_named_before_training(monkeypatch, tmp_path):
    from course_utils import server

    class Running:
        label = "lab08"

    monkeypatch.setattr(training, "OUT", tmp_path)
    monkeypatch.setattr(server, "running", lambda: [Running()])
    monkeypatch.setattr(launch, "loaded_by", lambda path: [])
    with pytest.raises(training.TrainingError, match="服务 'lab08' 还在运行"):
        training.train(profiles.get_profile("rehearsal"), "stamp", EXAMPLES, rank=2, steps=1, target_modules=["q_proj"])
