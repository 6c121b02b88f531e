"""Lab 05: the scaling folded into B, the grouped op (:mod:`.lab05_op`), the per-token slot indices, the disk of four
merged models."""

from __future__ import annotations

import math
import re

from .. import memory
from ..answers import BYTE_UNITS, AnswerError, close, kind, number, show
from .asked import LAB05_ADAPTER, MERGED_TOLERANCE, TOLERANCE
from .common import QWEN, fmt
from .lab05_op import judge_lora_linear


def _judge_scaling(answer):
    want, n = LAB05_ADAPTER["lora_alpha"] / LAB05_ADAPTER["r"], number(answer)
    if n is None or n.unit not in ("", "x"):
        return False, f"要的是一个数（例如 0.25，或写成分数 \"1/4\"）；这里是{kind(answer)} {show(answer)}。"
    got = n.value
    if close(got, want, TOLERANCE):
        return True, (f"对：alpha / r = {LAB05_ADAPTER['lora_alpha']} / {LAB05_ADAPTER['r']} = {want:g}；"
                      f"vLLM 在加载 adapter 时把它一次乘进 B。")
    if close(got, 1, TOLERANCE):
        return False, "1.0 是层里传的那个数：系数在加载时已经乘进 B 了。题目问的是乘进 B 的那个系数。"
    if close(got, 1 / want, TOLERANCE):
        return False, "这是 r / alpha；缩放系数是 alpha / r。"
    if got in (LAB05_ADAPTER["r"], LAB05_ADAPTER["lora_alpha"]):
        return False, "这是两个数中的一个；缩放系数是它们的比 alpha / r。"
    return False, "还不对：PEFT 把 B·A 乘上一个缩放系数再加到基座的输出上，这个系数来自 adapter_config.json 里的两个字段。"


# Lab 05's token-index exercise: rows of a batch as (adapter or None, tokens in this step), the slots
# the adapters sit in, and the LoRA ids they were registered with (ids are not slots).
LAB05_ROWS = [("sql", 3), (None, 2), ("json", 1), ("sql", 2)]
LAB05_SLOTS = {"sql": 0, "json": 1}
LAB05_IDS = {"sql": 1, "json": 4}


def indices_answer() -> list[int]:
    return [LAB05_SLOTS[a] if a else -1 for a, n in LAB05_ROWS for _ in range(n)]


def _int_list(answer) -> list[int]:
    """A list of integers from a list, a tuple, an array or tensor (``tolist``), or a string of integers."""
    if hasattr(answer, "tolist") and not isinstance(answer, (str, bytes)):
        answer = answer.tolist()
    if isinstance(answer, str):
        answer = re.sub(r"^\s*(?:torch\.|np\.|numpy\.)?(?:tensor|array)\s*", "", answer).replace("，", ",")
        if re.search(r"[^\s\d,\-\[\]()+]", answer):
            raise AnswerError(f"读不出整数列表：{show(answer)}。写成 [0, 0, -1, ...] 这样的列表。")
        found = [int(x) for x in re.findall(r"[+-]?\d+", answer)]
        if not found:
            raise AnswerError(f"读不出整数列表：{show(answer)}。写成 [0, 0, -1, ...] 这样的列表。")
        return found
    if not isinstance(answer, (list, tuple)):
        raise AnswerError(f"要的是一个整数列表，每个 token 一项；这里是{kind(answer)}。")
    if answer and all(isinstance(x, (list, tuple)) for x in answer):
        raise AnswerError("这是每行一个列表：把它们按行的顺序接成一个列表，每个 token 一项。")
    out = []
    for x in answer:
        n = number(x)
        if n is None or n.unit != "" or not math.isfinite(n.value) or n.value != int(n.value):
            raise AnswerError(f"列表里的 {show(x)} 不是整数：每一项是一个槽位下标（-1 表示不用 adapter）。")
        out.append(int(n.value))
    return out


def _judge_indices(answer):
    want, got = indices_answer(), _int_list(answer)
    if got == want:
        return True, "对：每个 token 一个槽位下标（基座行是 -1）；shrink 和 expand 算子按它分组。"
    if got == [LAB05_SLOTS[a] if a else -1 for a, _ in LAB05_ROWS]:
        return False, f"这是每行一项；算子要的是每个 token 一项（一共 {sum(n for _, n in LAB05_ROWS)} 个 token）。"
    if got == [LAB05_IDS[a] if a else -1 for a, n in LAB05_ROWS for _ in range(n)]:
        return False, "这些是 LoRA id；算子按槽位下标去取堆叠的缓冲区。"
    if got == [LAB05_SLOTS[a] if a else 0 for a, n in LAB05_ROWS for _ in range(n)]:
        return False, "槽位 0 是 sql 的：基座的 token 要写 -1（没有槽位），否则它会被加上 sql 的增量。"
    if got == [x + 1 for x in want]:
        return False, "槽位从 0 开始编号（sql 在槽位 0），不用 adapter 的 token 写 -1。"
    if len(got) != len(want):
        return False, f"{len(got)} 项对 {len(want)} 个 token：每个 token 一项，按行的顺序。"
    return False, "还不对：这个索引给批里的每一个 token 标上它要用的 LoRA 槽位，不用 adapter 的 token 另有标记。"


def merged_disk_answer(n: int = 4) -> float:
    """GB on disk for n merged Qwen2.5-7B-Instruct models (bf16): one full checkpoint per adapter."""
    return memory.full_finetunes_vs_adapters(QWEN, n=n, rank=16)["full_copies"] / 1e9


def _judge_merged_disk(answer):
    cost = memory.full_finetunes_vs_adapters(QWEN, n=4, rank=16)
    want, n = merged_disk_answer(4), number(answer)
    if n is None:
        return False, f"要的是一个数（GB），例如 12.5 或 \"12.5 GB\"；这里是{kind(answer)} {show(answer)}。"
    if n.unit not in BYTE_UNITS and n.unit != "":
        return False, f"单位 {show(n.unit)} 不是磁盘大小的单位：答多少 GB。"
    unit = n.unit or ("B" if n.value > 1e6 else "GB")       # a bare number is GB, a bare byte count is bytes
    got = n.value * BYTE_UNITS[unit] / 1e9
    tol = f"（±{MERGED_TOLERANCE:.0%} 以内都算对）"
    if close(got, want, MERGED_TOLERANCE):
        return True, (f"对：约 {want:.0f} GB，四份 {cost['base'] / 1e9:.1f} GB 的完整模型{tol}；运行时 LoRA "
                      f"只要一份基座加四个 adapter，{cost['base_plus_adapters'] / 1e9:.1f} GB。")
    params = memory.parameter_count(memory.load_config(QWEN))
    if close(got, 4 * 2 * 7e9 / 1e9, 0.005):
        return False, (f"按 70 亿参数算的？Qwen2.5-7B-Instruct 实际有 {params / 1e9:.2f} B 个参数（按 config.json 数出来的），"
                       f"每份 bf16 检查点 {cost['base'] / 1e9:.1f} GB。")
    if n.unit == "" and close(got, want * 1e9 / memory.GiB, MERGED_TOLERANCE / 2):
        return False, f"{fmt(n.value)} 是按 GiB 算的吧？题目问 GB（文件大小按 10⁹ 字节算）：写成 \"{fmt(n.value)} GiB\"，或换算成 GB。"
    slips = {cost["base"] / 1e9: "这是一个模型的：合并后的模型只带一个 adapter，四个 adapter 就是四个模型。",
             cost["base"] / memory.GiB: "这是一份模型的权重，还是按 GiB 算的：合并后四个 adapter 就是四份模型，题目问 GB。",
             2 * want: "这是按 float32（每个权重 4 字节）算的；检查点是 bf16，每个权重 2 字节。",
             cost["base_plus_adapters"] / 1e9: "这是运行时 LoRA 的（一份基座 + 四个 adapter）；合并意味着每个 adapter 一整份模型。"}
    nearest = min(slips, key=lambda v: abs(got - v) / v)
    if close(got, nearest, MERGED_TOLERANCE):
        return False, slips[nearest]
    return False, f"还不对：合并之后，每个 adapter 都各自变成一份完整的模型权重；题目问的是这些文件一共多大{tol}。"


JUDGES = {
    "05.scaling": _judge_scaling,
    "05.lora_linear": judge_lora_linear,
    "05.indices": _judge_indices,
    "05.merged_disk": _judge_merged_disk,
}
