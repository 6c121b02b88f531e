"""Lab 02: a KV block, the LoRA buffer, max_lora_rank for a shelf."""

from __future__ import annotations

from .. import memory
from ..arch import MAX_LORA_RANKS, smallest_rank_that_fits
from .asked import SHELF_02 as SHELF
from .common import QWEN, judge_byte_count, whole_number


def kv_page_answer() -> int:
    """Bytes of one 16-token KV block of one layer of Qwen2.5-7B in bf16."""
    return memory.kv_page_bytes(QWEN, 16, "bfloat16")


def _judge_kv_page(answer):
    want, a = kv_page_answer(), memory.arch(memory.load_config(QWEN))
    return judge_byte_count(
        answer, "一个 KV block 的字节数", want,
        right=(f"对：2（K 和 V）× 16 个 token × {a.kv_heads} 个 KV 头 × {a.head_dim}（head_dim）× 2 字节 = "
               f"{want:,} 字节（{want // memory.KiB} KiB）。"),
        slips=[(want / 2, "这只是 K 或 V 其中一个：一个 block 两个都存，再乘 2。"),
               (2 * 16 * a.heads * a.head_dim * 2, (f"这是按全部 {a.heads} 个注意力头算的；Qwen2.5-7B 用分组查询注意力"
                                                    f"（GQA），只有 {a.kv_heads} 个 KV 头，缓存里只存这些。")),
               (want * a.layers, f"这是一个 block 在全部 {a.layers} 层上的总和；题目问的是一层。"),
               (want * 2, "这是按 float32（每个数 4 字节）算的；bf16 每个数 2 字节。"),
               (want / 16, "这是一个 token 的；一个 block 装 16 个 token，再乘 16。")],
        otherwise="还不对：一个 block 存这一层里 16 个 token 的 K 和 V。想想一个 token 在一层里存哪些向量、各有多长（GQA 之下），每个数占几个字节。",
        per=("block", "块", "page", "页", "layer", "层"))


def lora_buffer_answer() -> int:
    """vLLM's LoRA buffer bytes for Qwen2.5-7B, max_loras=3, max_lora_rank=32, bf16 (adapters of rank 16)."""
    return memory.lora_buffer_bytes(QWEN, 3, 32, "bfloat16")


def _judge_lora_buffer(answer):
    want = lora_buffer_answer()
    layers = memory.arch(memory.load_config(QWEN)).layers
    return judge_byte_count(
        answer, "LoRA 缓冲区的字节数", want,
        right=(f"对：{want:,} 字节（{want / memory.GiB:.2f} GiB）。槽位按 max_loras × max_lora_rank 预留，"
               f"与 adapter 的实际秩无关。"),
        slips=[(want / 3, "这是一个槽位的：vLLM 启动时就把 max_loras=3 个槽位全部预留好。"),
               (want / 2, ("只有一半：槽位按 max_lora_rank（32）预留，不按 adapter 的秩（16）；"
                           "另外检查一下每个 bf16 数是不是算了 2 字节。")),
               (want * 2, "多了一倍：每个 bf16 数 2 字节（不是 float32 的 4 字节），秩按 max_lora_rank=32 算。"),
               (want / layers, f"这是一层的；Qwen2.5-7B 有 {layers} 层，每层都有自己的槽位，再乘 {layers}。"),
               (_fused_as_one(want), ("这是把融合层当成一个投影算的：qkv_proj 里 q、k、v 三个切片各有一块 A（少算了两块），"
                                      "gate_up_proj 里 gate、up 各有一块 A（少算了一块）。第 4 节：按切片算。"))],
        otherwise=("还不对：vLLM 为每一层、每个被包装的投影预留 A 和 B 两块缓冲，槽位的个数和形状由启动参数决定，"
                   "与 adapter 的实际秩无关；融合层按切片算（第 4 节）。可以先只算一层里的一个投影。"))


def _fused_as_one(want: int) -> float:
    """The LoRA buffer with qkv_proj and gate_up_proj counted as one projection each (one A for the fused input)."""
    s = memory.projection_shapes(memory.load_config(QWEN))
    per_slice = sum(s[p].d_in + s[p].d_out for p in s)
    fused = (s["q_proj"].d_in + s["q_proj"].d_out + s["k_proj"].d_out + s["v_proj"].d_out
             + s["o_proj"].d_in + s["o_proj"].d_out + s["gate_proj"].d_in + s["gate_proj"].d_out + s["up_proj"].d_out
             + s["down_proj"].d_in + s["down_proj"].d_out)
    return want * fused / per_slice



def _judge_rank(answer):
    largest, want = max(SHELF.values()), smallest_rank_that_fits(max(SHELF.values()))
    got = whole_number(answer, "max_lora_rank 的取值")
    allowed = ", ".join(map(str, MAX_LORA_RANKS))
    if got == want:
        return True, f"对：货架上最大的秩是 {largest}，{want} 是能装下它的最小允许值。"
    if got == largest:
        return False, f"{got} 不是 vLLM 接受的取值；允许的是 {allowed}。"
    if got < largest:
        return False, f"太小：medical（秩 {largest}）会被拒绝。"
    if got in MAX_LORA_RANKS:
        return False, (f"装得下，但每个槽位都按 {got} 预留：显存是 {want} 的 {got / want:g} 倍，"
                       f"多出来的从 KV 缓存里扣。")
    return False, f"{got} 不是 vLLM 接受的取值：从 {allowed} 里选能装下秩 {largest} 的最小那个。"


JUDGES = {
    "02.kv_page": _judge_kv_page,
    "02.lora_buffer": _judge_lora_buffer,
    "02.max_lora_rank": _judge_rank,
}
