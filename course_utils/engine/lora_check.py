"""Lab 05's checks of a hand-written LoRA forward: against vLLM's PyTorch ops, against peft, and a merge.

Each check takes the student's ``lora_linear(x, W, bias, A, B, scaling, idx)`` (Lab 05's 练习 2) and runs it on
real tensors, beside vLLM's ops or peft and the formula; while its body is not written (it returns None) the
comparisons of vLLM's ops and peft with the formula are still made and shown. The lab prints these functions with ``inspect.getsource`` and calls them; torch, peft and
transformers are imported inside, so read mode (no torch) shows what the call returned when the lab
was recorded. The recording is keyed by the source of ``lora_linear``: an edited function has no
recorded answer, and read mode says so instead of showing the old result.

The peft comparison and the merge load the base on the host with transformers. On a quantized base
(``autodl/setup.sh --awq``: Qwen2.5-7B-Instruct-AWQ) they load nothing and return ``{"skipped": why}``
(:func:`skipped` reads it): transformers 5.x loads AWQ only with ``gptqmodel``
(transformers/quantizers/quantizer_awq.py), which the course does not install: on PyPI it is a source
package whose kernels compile on the machine, and gptqmodel 7.7.0 needs torch>=2.14.1 and
transformers>=5.20.2 while vLLM 0.26.0 pins torch 2.11.0. A returned result, not an
exception, so that a recording replays it like any other answer and the lab's cells print it and go on.
"""

from __future__ import annotations

import gc
import shutil
from pathlib import Path

from .. import memory
from ..arch import quantization
from ..replay.record import replayable

TOL = 1e-4   # float32, element-wise absolute; outputs are of order 10
NOT_WRITTEN = "还没写（它返回了 None）：写好练习 2 的函数体，再运行这一格"
NOT_RECORDED = ("读模式：录制时练习 2 还是空的，你写的 lora_linear 在这里没有录下的比对（比对要 torch 和 vLLM）。"
                "练习 2 的检查格已经在 numpy 数组上核对过它；想看它和 vLLM 的算子、peft 逐元素比，在能现场运行的环境里"
                "（make setup 之后）运行这一课。")


def skipped(result) -> str | None:
    """Why :func:`compare_with_peft` or :func:`merge_adapter` did not run (on a quantized base), or None."""
    return result.get("skipped") if isinstance(result, dict) else None


def _not_on_a_quantized_base(prof, what: str) -> dict:
    """The result of a host load that a quantized base rules out: what is skipped, why, and what to do."""
    quant = quantization(prof.base_model)
    method = str(quant.get("quant_method", "quantized"))
    library = "gptqmodel" if method.lower() in ("awq", "gptq") else f"{method} 的量化库"
    return {"skipped": (
        f"跳过{what}：这个基座是 {method.upper()} {quant.get('bits', '?')} 位量化的（{prof.base_model}）。"
        f"这一步要用 transformers 把基座读进主机内存，而 transformers 要装 {library} 才能读它；课程不装 {library}"
        f"（PyPI 上只有源码包，它的 kernel 要在本机编译，新版本还要求比 vLLM 0.26.0 锁定的 torch 2.11 更新的 torch）。"
        f"所以这一步什么也不读、不算、不写。本实验用 vLLM 的部分照常运行"
        f"（vLLM 自带 AWQ 的 kernel）。要做这一步，换 bf16 基座：在 24 GB 的卡上运行 `bash autodl/setup.sh`"
        f"（不加 --awq；用 --awq 时若在本机训练过 adapter，bf16 基座已经下载好，不会重下），再从头运行本实验。")}


@replayable
def compare_with_vllm_ops(lora_linear, seed=0):
    """``lora_linear`` vs vLLM's bgmv/sgmv torch ops and a float64 loop, on a random mixed-rank batch."""
    import torch
    from vllm.lora.ops.torch_ops import bgmv_expand, bgmv_shrink, sgmv_expand, sgmv_shrink

    g = torch.Generator().manual_seed(seed)
    k, d, ranks, alphas = 256, 512, [8, 16, 32, 64], [16, 16, 64, 32]
    n, r_max = len(ranks), max(ranks)
    A, B = torch.zeros(n, r_max, k), torch.zeros(n, d, r_max)
    for a, r in enumerate(ranks):                 # mixed ranks, zero-padded to r_max
        A[a, :r] = torch.randn(r, k, generator=g) / k ** 0.5
        B[a, :, :r] = torch.randn(d, r, generator=g) / r ** 0.5
    scaling = torch.tensor([al / r for al, r in zip(alphas, ranks)])
    seq_lens, seq_adapters = [3, 5, 2, 4, 1, 6], [2, -1, 0, 3, 1, -1]
    idx = torch.repeat_interleave(torch.tensor(seq_adapters), torch.tensor(seq_lens))
    T = int(idx.numel())
    x, W = torch.randn(T, k, generator=g), torch.randn(d, k, generator=g) / k ** 0.5

    mine = lora_linear(x, W, None, A, B, scaling, idx)     # None until the student writes its body

    # vLLM's layout: (slots, 1, r_max, k) and (slots, 1, d, r_max), alpha/r folded into B, one zero slot
    a_stacked, b_stacked = torch.zeros(n + 1, 1, r_max, k), torch.zeros(n + 1, 1, d, r_max)
    a_stacked[:n, 0], b_stacked[:n, 0] = A, B * scaling[:, None, None]

    def slot(t):                                  # base rows (-1) -> the extra zero slot n
        return torch.where(t < 0, torch.full_like(t, n), t)

    buf = torch.zeros(T, r_max)                   # decode style: one adapter index per token
    y_bgmv = x @ W.T
    bgmv_shrink(x, a_stacked, buf, slot(idx), 1.0)
    bgmv_expand(buf, b_stacked, y_bgmv, slot(idx), add_inputs=True)

    lens = torch.tensor(seq_lens)                 # prefill style: one adapter index per sequence
    starts = torch.cumsum(lens, 0) - lens
    meta = (starts, lens, slot(torch.tensor(seq_adapters)), len(seq_lens), max(seq_lens), T)
    buf = torch.zeros(T, r_max)
    y_sgmv = x @ W.T
    sgmv_shrink(x, a_stacked, buf, *meta, 1.0)
    sgmv_expand(buf, b_stacked, y_sgmv, *meta, add_inputs=True)

    xd = x.double()                               # the naive per-row loop, in float64
    loop = torch.stack([W.double() @ xd[i] + (B[a].double() @ (A[a].double() @ xd[i])) * float(scaling[a])
                        if a >= 0 else W.double() @ xd[i] for i, a in enumerate(idx.tolist())])

    def diff(u, v):
        return float((u.double() - v.double()).abs().max())
    out = {"token 数": T, "各 adapter 的秩": ranks, "max_lora_rank": r_max, "容差": TOL,
           "|y| 的最大值": round(float(loop.abs().max()), 2),           # 2 decimals: the same on every CPU
           "|LoRA 增量| 的最大值": round(diff(loop, x @ W.T), 2),
           "|bgmv - float64 逐行循环| 的最大值": diff(y_bgmv, loop), "|sgmv - float64 逐行循环| 的最大值": diff(y_sgmv, loop)}
    if mine is None:
        return {**out, "lora_linear": NOT_WRITTEN}
    return {**out, "|lora_linear - bgmv| 的最大值": diff(mine, y_bgmv), "|lora_linear - sgmv| 的最大值": diff(mine, y_sgmv),
            "|lora_linear - float64 逐行循环| 的最大值": diff(mine, loop)}


@replayable
def compare_with_peft(lora_linear, prof, layer=0, projections=("q_proj", "down_proj"), seed=0):
    """``lora_linear`` vs peft's mixed-batch LoRA forward, on real layers of the profile's base and adapters."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging
    hf_logging.disable_progress_bar()             # no loading bars in the notebook

    if quantization(prof.base_model):             # an AWQ int4 base: transformers cannot load it here
        return _not_on_a_quantized_base(prof, "与 peft 的比对")
    torch.manual_seed(seed)
    names = list(prof.adapters)
    base = AutoModelForCausalLM.from_pretrained(prof.base_model, dtype=getattr(torch, prof.host_dtype))
    try:
        model = PeftModel.from_pretrained(base, prof.adapter(names[0]), adapter_name=names[0])
        for name in names[1:]:
            model.load_adapter(prof.adapter(name), adapter_name=name)
        decoder = model.base_model.model.model.layers[layer]
        rows = []
        for proj in projections:
            mod = getattr(decoder.self_attn if hasattr(decoder.self_attn, proj) else decoder.mlp, proj).float()
            here = [name for name in names if name in mod.lora_A]      # adapters that target this projection
            ranks = [mod.lora_A[name].weight.shape[0] for name in here]
            k, d, r_max = mod.base_layer.in_features, mod.base_layer.out_features, max(ranks)
            A, B = torch.zeros(len(here), r_max, k), torch.zeros(len(here), d, r_max)
            for a, name in enumerate(here):
                A[a, :ranks[a]] = mod.lora_A[name].weight
                B[a, :, :ranks[a]] = mod.lora_B[name].weight
            scaling = torch.tensor([mod.scaling[name] for name in here])
            idx = torch.tensor(list(range(-1, len(here))) * 3)           # every adapter and the base, 3 rows each
            x = torch.randn(len(idx), k)
            with torch.no_grad():
                ref = mod(x, adapter_names=[here[a] if a >= 0 else "__base__" for a in idx.tolist()])
                mine = lora_linear(x, mod.base_layer.weight, mod.base_layer.bias, A, B, scaling, idx)
                plain = mod.base_layer(x)
                xd = x.double()                   # the formula row by row, in float64
                formula = torch.stack([plain[i].double() + (B[a].double() @ (A[a].double() @ xd[i])) * float(scaling[a])
                                       if a >= 0 else plain[i].double() for i, a in enumerate(idx.tolist())])
            rows.append({"层": f"layers.{layer}.{proj}", "形状 (d, k)": f"({d}, {k})",
                         "adapter（秩）": ", ".join(f"{n} ({r})" for n, r in zip(here, ranks)), "行数": len(idx),
                         "|LoRA 增量| 的最大值": round(float((ref - plain).abs().max()), 2),
                         "|peft - float64 公式| 的最大值": float((ref.double() - formula).abs().max()),
                         "|lora_linear - peft| 的最大值": None if mine is None else float((mine - ref).abs().max())})
        return rows
    finally:   # free the base now (a bf16 7B: ~15 GB of host RAM), also when lora_linear raised: a notebook keeps
        base = model = decoder = mod = None       # the traceback, and with it this function's variables
        gc.collect()


@replayable
def merge_adapter(prof, name, out_dir):
    """Merge adapter ``name`` into the base with peft (W + (alpha/r) B A); save a plain model in ``out_dir``."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()

    if quantization(prof.base_model):             # an AWQ int4 base: transformers cannot load it here
        return _not_on_a_quantized_base(prof, f"合并 {name}")
    out = Path(out_dir) / name
    size = memory.weight_bytes(memory.load_config(prof.base_model), prof.host_dtype).total   # one full copy
    require_free_disk(out_dir, size, f"合并后的模型 {name!r}")      # a clear error, not a half-written copy
    base = AutoModelForCausalLM.from_pretrained(prof.base_model, dtype=getattr(torch, prof.host_dtype))
    try:
        merged = PeftModel.from_pretrained(base, prof.adapter(name)).merge_and_unload()   # W + (alpha/r) B A
        merged.save_pretrained(out, safe_serialization=True)
    finally:   # free it now, also when the save failed (the traceback would keep it): the lab's next cell
        base = merged = None                      # starts vLLM engines
        gc.collect()
    for f in ["tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "generation_config.json"]:
        if (Path(prof.base_model) / f).is_file():
            shutil.copy(Path(prof.base_model) / f, out / f)
    return {"adapter": name, "合并后的模型": str(out), "文件": sorted(p.name for p in out.iterdir()),
            "权重（MB）": round(sum(f.stat().st_size for f in out.glob("*.safetensors")) / 1e6, 2)}


@replayable
def remove_merged(out_dir) -> list[str]:
    """Delete ``out_dir`` with the merged models in it (a 7B copy is 15 GB); returns the names it held.

    In read mode :func:`merge_adapter` wrote nothing, and this call is answered from the recording too: a
    read-mode run never deletes the folder that a live run of the same lab, in another kernel, is still using.
    """
    out = Path(out_dir)
    names = sorted(p.name for p in out.iterdir()) if out.is_dir() else []
    shutil.rmtree(out, ignore_errors=True)
    return names


# What the merge leaves free beside its copy (AutoDL's setup plans the data disk with the same margin:
# course_tools/gpu/checks.py, MARGIN_BYTES).
DISK_MARGIN_BYTES = 10**9


def require_free_disk(path, need_bytes: int, what: str) -> None:
    """Raise a clear error (how much, where, what to do) unless ``path``'s disk has ``need_bytes`` free."""
    path = Path(path)
    probe = next(p for p in [path, *path.parents] if p.exists())
    free = shutil.disk_usage(probe).free
    if free < need_bytes + DISK_MARGIN_BYTES:
        raise RuntimeError(
            f"{what} 需要 {probe} 所在的磁盘上有 {need_bytes / 2**30:.1f} GiB（另留 {DISK_MARGIN_BYTES / 2**30:.0f} GiB 余量），"
            f"但那里只剩 {free / 2**30:.1f} GiB。先在那里腾出空间（旧模型、`pip cache purge`、build/），"
            f"或者在 AutoDL 控制台扩容数据盘，再重新运行这个单元格。")
