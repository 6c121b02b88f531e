"""Lab 07: a cluster's adapter capacity, which routing loads most often, replicas per 4090."""

from __future__ import annotations

from .. import memory
from ..answers import choice, show, word
from .common import QWEN, judge_choice, whole_number

LAB07_CLUSTER = {"replicas": 2, "max_num_adapters_per_replica": 2, "adapters on the shelf": 8}
# Words that name each policy (compared after :func:`word`): "轮询（blind）" and "blind (round robin)" name one.
POLICIES = {"blind": ("blind", "roundrobin", "轮询", "轮转", "轮流"),
            "aware": ("aware", "raydefault", "ray默认", "默认", "按adapter路由", "adapteraware", "powoftwo"),
            "hash": ("hash", "哈希")}


def _policy(answer) -> str | None:
    if isinstance(answer, str) and word(answer) == "rr":
        return "blind"
    return choice(answer, POLICIES)


def _judge_most_loads(answer):
    return judge_choice(_policy(answer), "blind", {
        "blind": ("对：轮询把请求轮流送到每个副本，每个副本都会见到全部 8 个 adapter，却只能留 2 个，"
                  "热门 adapter 也会被挤出去再装回来，所以装载最多。"),
        "aware": "Ray 默认优先选已经装着这个 adapter 的副本：省下装载靠的就是它。",
        "hash": "哈希把每个 adapter 固定在一个副本上，每个副本只面对一部分 adapter：装载少，代价是负载不均。",
    }, f'{show(answer)} 读不出是哪一种路由：答 "aware"（Ray 默认）、"blind"（轮询）或 "hash"（哈希），只选一个。')


def _judge_capacity(answer):
    c = LAB07_CLUSTER
    want, got = c["replicas"] * c["max_num_adapters_per_replica"], whole_number(answer, "adapter 的个数", asks="≤")
    if got == want:
        return True, (f"对：{c['replicas']} 个副本 × 每个 {c['max_num_adapters_per_replica']} 个 = {want}；此刻货架上另外 "
                      f"{c['adapters on the shelf'] - want} 个不在任何副本上，要用时得先装载。")
    if got == c["max_num_adapters_per_replica"]:
        return False, "这是一个副本的：每个副本各自留自己的 adapter。"
    if got == c["adapters on the shelf"]:
        return False, "货架上有 8 个，但每个副本同一时刻最多留 2 个。"
    return False, "还不对：每个副本各自留着自己的一组 adapter，互不共享。"


def replicas_per_4090_answer() -> int:
    """bf16 Qwen2.5-7B-Instruct replicas whose weights alone fit in the memory CUDA reports for a 4090."""
    return memory.RTX_4090_BYTES // memory.weight_bytes(memory.load_config(QWEN), "bfloat16").total


def _judge_replicas_per_4090(answer):
    want, got = replicas_per_4090_answer(), whole_number(answer, "副本的个数")
    weights = memory.weight_bytes(memory.load_config(QWEN), "bfloat16").total / memory.GiB
    card = memory.RTX_4090_BYTES / memory.GiB
    if got == want:
        return True, (f"对：光权重就是 {weights:.2f} GiB，卡上一共 {card:.2f} GiB，副本还要 KV 缓存："
                      f"一张卡一个副本。")
    if got == 2:
        return False, f"两份 {weights:.2f} GiB 的权重是 {2 * weights:.2f} GiB，比卡的 {card:.2f} GiB 还多。"
    if got == 0:
        return False, "一个副本是放得下的：qwen7b 配置就在一张 4090 上跑一个（Lab 02 算过它的显存）。"
    return False, "还不对：每个副本都要一份完整的 bf16 基座权重；先算一份有多大，再和卡的显存比。"


JUDGES = {
    "07.capacity": _judge_capacity,
    "07.most_loads": _judge_most_loads,
    "07.replicas_per_4090": _judge_replicas_per_4090,
}
