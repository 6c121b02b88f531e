"""Lab 03: engine steps per max_loras, disk reads of a host cache of max_cpu_loras adapters (against the lab's
measurement), a config for a shelf and its traffic, LoRA's share of q_proj's FLOPs."""

from __future__ import annotations

import re
import unicodedata

from .. import memory
from ..answers import (
    AnswerError,
    close,
    in_percent,
    is_count,
    kind,
    literal,
    number,
    show,
    word,
)
from ..arch import MAX_LORA_RANKS, smallest_rank_that_fits
from .asked import LAB03_IN_FLIGHT, LAB03_SHELF, TOLERANCE
from . import measurement
from .common import QWEN, whole_number

# Lab 03's mixed batch: 4 adapters x 4 requests + 4 base requests, each generating exactly 32 tokens.
LAB03_ADAPTERS, LAB03_TOKENS = 4, 32


def steps_answer() -> dict:
    """Engine steps of Lab 03's batch for max_loras=1 and 2: the adapters run in ceil(4 / max_loras) waves."""
    return {k: -(-LAB03_ADAPTERS // k) * LAB03_TOKENS for k in (1, 2)}


def _setting_key(key) -> int | None:
    """1 for ``1``, ``"1"``, ``"max_loras=1"``, ``"max-loras 1"``; None otherwise."""
    text = word(key) if isinstance(key, str) else key
    if isinstance(text, str):
        text = re.sub(r"^(maxloras)?=?", "", text)
    n = number(text)
    return int(n.value) if is_count(n) and n.unit == "" else None


def _judge_steps_03(answer):
    want, answer = steps_answer(), literal(answer)
    if isinstance(answer, (list, tuple)) and len(answer) == len(want):
        answer = dict(zip(want, answer))            # [steps at 1, steps at 2], in the order asked
    if not isinstance(answer, dict):
        return False, f"要的是一个 dict，每种设置一项：{{1: max_loras=1 的步数, 2: max_loras=2 的步数}}；这里是{kind(answer)}。"
    keys = {k: _setting_key(k) for k in answer}
    given = {4: -(-LAB03_ADAPTERS // 4) * LAB03_TOKENS}      # the question gives max_loras=4's steps
    restated = [k for k, v in keys.items() if v in given and whole_number(answer[k], "步数") == given[v]]
    answer = {k: v for k, v in answer.items() if k not in restated}
    keys = {k: v for k, v in keys.items() if k not in restated}
    extra = [k for k, v in keys.items() if v not in want]
    if extra:
        return False, f"多了键 {', '.join(map(repr, extra))}：只要 1 和 2 两项（max_loras=4 的 32 步题目已经给了）。"
    missing = [k for k in want if k not in keys.values()]
    if missing:
        return False, f"缺了 max_loras={missing[0]} 那一项：dict 里要有 1 和 2 两个键。"
    blank = [keys[k] for k, v in answer.items() if v is ...]
    if blank:
        return False, f"max_loras={blank[0]} 那一项还没填。"
    got = {keys[k]: whole_number(v, f"max_loras={keys[k]} 的步数") for k, v in answer.items()}
    if got == want:
        return True, (f"对：{LAB03_ADAPTERS} 个 adapter 按 max_loras 分波轮流，每一波 {LAB03_TOKENS} 步"
                      f"（每一步每个请求前进一个 token）；基座行每一波都跟着跑。")
    if all(v == LAB03_TOKENS for v in got.values()):
        return False, "调度器不会凭空多出槽位：槽位比 adapter 少时，其余 adapter 的行要等，整批要走更多步。"
    if got == {k: (v // LAB03_TOKENS + 1) * LAB03_TOKENS for k, v in want.items()}:
        return False, "基座行不占槽位：它们不单独成一波，每一步都跟着正在跑的 adapter 一起前进。"
    if got == {1: LAB03_ADAPTERS * 4 * LAB03_TOKENS, 2: LAB03_ADAPTERS * 2 * LAB03_TOKENS}:
        return False, "一步让每个正在跑的请求各前进一个 token，不是只跑一个请求：占着槽位的 adapter 的行一起前进。"
    if got == {1: want[2], 2: want[1]}:
        return False, "两项对调了：槽位少的 max_loras=1 要的步数更多。"
    return False, ("还不对：每一步里同时在跑的 adapter 不超过 max_loras 个，其余的行排队；想想这批 adapter 要轮几波，"
                   "每一波要走多少步。")


CONFIG_KEYS = {"maxlorarank": "max_lora_rank", "maxloras": "max_loras", "maxcpuloras": "max_cpu_loras"}


def _config(answer) -> dict:
    """{"max_lora_rank": ..., ...} from a dict, or from "max_lora_rank=64, max_loras=3" / "--max-lora-rank 64 ..."."""
    answer = literal(answer)
    if isinstance(answer, str):
        answer = answer.translate(str.maketrans("，；：＝", ",;:="))
        pairs = re.findall(r"(-*[A-Za-z_\-]+)\s*[=:\s]\s*([^\s,;]+)", answer)
        if not pairs:
            raise AnswerError(f'读不出设置：写成 dict {{"max_lora_rank": ..., "max_loras": ...}}，这里是 {show(answer)}。')
        answer = dict(pairs)
    if not isinstance(answer, dict):
        raise AnswerError(f'要的是一个 dict：{{"max_lora_rank": ..., "max_loras": ...}}；这里是{kind(answer)}。')
    out, extra = {}, []
    for k, v in answer.items():
        key = CONFIG_KEYS.get(word(k)) if isinstance(k, str) else None
        if isinstance(k, str) and word(k) == "enablelora":      # right, and beside the question
            continue
        if key is None:
            extra.append(k)
        else:
            out[key] = v
    if extra:
        raise AnswerError(f"多了键 {', '.join(map(repr, extra))}：这题只问 max_lora_rank 和 max_loras（也可以加上 max_cpu_loras）。")
    missing = [k for k in ("max_lora_rank", "max_loras") if k not in out or out[k] is ...]
    if missing:
        raise AnswerError(f"还缺 {missing[0]}：dict 里要有 max_lora_rank 和 max_loras 两项。")
    return out


def _judge_config(answer):
    rank_want = smallest_rank_that_fits(max(LAB03_SHELF.values()))
    c = _config(answer)
    rank, slots = whole_number(c["max_lora_rank"], "max_lora_rank 的取值"), whole_number(c["max_loras"], "max_loras 的取值")
    cpu = whole_number(c["max_cpu_loras"], "max_cpu_loras 的取值") if "max_cpu_loras" in c else None
    if rank not in MAX_LORA_RANKS:
        return False, f"max_lora_rank={rank} 不是 vLLM 接受的取值（{', '.join(map(str, MAX_LORA_RANKS))}）。"
    if rank < rank_want:
        return False, f"codegen 的秩是 {max(LAB03_SHELF.values())}：max_lora_rank={rank} 会拒绝它。"
    if rank > rank_want:
        return False, (f"每个槽位都按 max_lora_rank 预留：{rank} 要 {rank_want} 的 {rank // rank_want} 倍显存，"
                       f"从 KV 缓存里扣，却没有哪个 adapter 用得上。")
    if slots < 1:
        return False, "max_loras 至少是 1：vLLM 拒绝 0 或负数（第 0 节的实验计划检查）。"
    if cpu is not None and cpu < slots:
        return False, f"max_cpu_loras（{cpu}）不能小于 max_loras（{slots}）：GPU 槽位里的 adapter 都从主机缓存里来，vLLM 会拒绝启动。"
    if slots == LAB03_IN_FLIGHT:
        shelf, held = len(LAB03_SHELF), cpu or slots
        setting = f"max_cpu_loras={cpu}" if cpu else f"max_cpu_loras 不设时等于 max_loras（{slots}）"
        host = (f"另外 {shelf - slots} 个 adapter 用到时才换进槽位；你把 max_cpu_loras 设成了 {cpu}，整个货架都留在主机内存里，"
                f"换进槽位时不用读盘。" if held >= shelf else
                f"另外 {shelf - slots} 个 adapter 用到时才换进槽位；{setting}，主机内存里只留 {held} 个，"
                f"其余 {shelf - held} 个用到时要从磁盘重读。想让整个货架留在主机内存里，把 max_cpu_loras 设成 {shelf}。")
        return True, (f"对：max_lora_rank={rank_want} 装得下最大的 codegen，max_loras={LAB03_IN_FLIGHT} 覆盖同一时刻"
                      f"在跑的 adapter。{host}")
    if slots == len(LAB03_SHELF):
        return False, (f"货架上每个 adapter 一个槽位：同一时刻最多 {LAB03_IN_FLIGHT} 个在跑，任意时刻总有 "
                       f"{len(LAB03_SHELF) - LAB03_IN_FLIGHT} 个槽位空着，白占显存。槽位跟着流量定，货架放在主机缓存里"
                       f"（max_cpu_loras）。")
    if slots < LAB03_IN_FLIGHT:
        return False, (f"只有 {slots} 个槽位时，同时在跑的 {LAB03_IN_FLIGHT} 个 adapter 里有 {LAB03_IN_FLIGHT - slots} 个"
                       f"要等槽位空出来：不报错，只是步数变多（Lab 03 第 3 节）。")
    return False, f"max_loras={slots}：同一时刻最多有几个不同的 adapter 在跑？"


def lora_share_answer() -> float:
    """LoRA's extra FLOPs on Qwen2.5-7B's q_proj at rank 16, in percent of the projection's own."""
    a = memory.arch(memory.load_config(QWEN))
    d_in, d_out, r = a.hidden, a.heads * a.head_dim, 16
    return 100 * r * (d_in + d_out) / (d_in * d_out)


def _judge_lora_share(answer):
    want, n = lora_share_answer(), number(answer)
    if n is None:
        return False, f"要的是一个百分数，例如 1.5 或 \"1.5%\"；这里是{kind(answer)} {show(answer)}。"
    got = in_percent(n)
    if got is None:
        return False, f"单位 {show(n.unit)} 不是百分比：答一个百分数，例如 1.5 或 \"1.5%\"。"
    if close(got, want, TOLERANCE):
        return True, (f"对：r·(d_in + d_out) / (d_in·d_out) = {want:.2f}%：shrink（r·d_in）加 expand（r·d_out），"
                      f"对比投影本身的 d_in·d_out。")
    if n.unit == "" and close(got, want / 100, TOLERANCE):
        return False, f"这是比例（{got:g}）；题目要百分数，乘以 100：{got * 100:.2f}。"
    if close(got, want / 2, TOLERANCE):
        return False, "这只算了 shrink 或 expand 其中一个：LoRA 两个都加，A（r × d_in）和 B（d_out × r）。"
    if close(got, want * 2, TOLERANCE):
        return False, "多了一倍：检查秩是不是用了 16（不是 32），以及 shrink 和 expand 有没有各算了两次。"
    from ..engine import flops

    whole = 100 * flops.overhead(memory.load_config(QWEN), 16)["fraction"]
    if close(got, whole, TOLERANCE):
        return False, f"{whole:.2f}% 是一层里 7 个投影合起来的比例（Lab 05 的表）；题目只问 q_proj（3584 → 3584）。"
    return False, "还不对：LoRA 换掉的是一个全量矩阵的更新，它自己只有两块窄矩阵 A 和 B；比的是这两块和那个全量矩阵的参数个数。"


def _fifo_reads(order: list[str], capacity: int) -> int:
    """Disk reads a host cache of ``capacity`` adapters would make if it evicted first in, first out (a wrong LRU)."""
    cache: list[str] = []
    reads = 0
    for name in order:
        if name in cache:
            continue
        reads += 1
        if len(cache) == capacity:
            cache.pop(0)
        cache.append(name)
    return reads


_MISS = r"(?:disk\s*reads?|reads?|misses|miss|loads?|从磁盘读|读盘|读|未命中|没命中|缺失)"
_HIT = {"hit", "hits", "命中", "cached", "在缓存"}


def _reads_said(answer):
    """The count of disk reads an answer states, where it says more than the count: the reads among hits and reads
    ("1 hit, 4 misses", "读盘 4 次、命中 1 次", {"disk_reads": 4, "hits": 1}), the part of the whole ("5 次里 4 次",
    "4 of 5"), each request's outcome (["miss", "miss", "hit", ...]), the count before a colon that lists them
    ("共 4 次：sql、support、…"). Anything else is read as it is."""
    if isinstance(answer, dict):
        keys = [k for k in answer if re.search(_MISS, str(k), re.I)]
        return answer[keys[0]] if len(keys) == 1 else answer
    if isinstance(answer, (list, tuple)) and answer and all(isinstance(x, str) for x in answer):
        words = [x.strip().lower() for x in answer]
        if all(w in _HIT or re.fullmatch(_MISS, w) for w in words):
            return sum(w not in _HIT for w in words)
        return answer
    if not isinstance(answer, str):
        return answer
    text = unicodedata.normalize("NFKC", answer)
    words = [w.strip().lower() for w in re.split(r"[,，、/\s]+", text.strip(" []()'\"")) if w.strip()]
    if len(words) > 1 and all(w in _HIT or re.fullmatch(_MISS, w) for w in words):
        return sum(w not in _HIT for w in words)
    part = re.search(r"(\d+|[一二两三四五六七八九十]+)\s*次\s*(?:里|中|当中|之中)(?:有)?\s*(\d+|[一二两三四五六七八九十]+)\s*次", text) \
        or re.search(r"(?i)(\d+)\s+(?:out\s+)?of\s+(\d+)", text)
    if part:
        return part[2] if "次" in part[0] else part[1]
    said = re.findall(rf"(?i)(\d+|[一二两三四五]+)\s*次?\s*{_MISS}|{_MISS}\s*[:=：]?\s*(\d+|[一二两三四五]+)\s*次?", text)
    if len(said) == 1 and re.search(r"(?i)hit|命中", text):
        return said[0][0] or said[0][1]
    lead = re.split(r"[:：]", text, maxsplit=1)[0]   # the count, then which requests it counts
    if lead != text and re.search(r"\d|[一二两三四五六七八九十]", lead):
        return re.sub(r"^\s*(?:一共|总共|合计|共)\s*", "", lead)
    return answer


def _judge_cache_reads(answer):
    """The prediction against what the lab measured: how many of its requests read their adapter from disk."""
    got = whole_number(_reads_said(answer), "从磁盘读的次数")
    m = measurement("03.cache_reads")
    if m is None:
        return None, "先运行上面起引擎、依次请求 adapter 的那一格：这道题拿你的预测和那一格量到的比。"
    reads, k, order = m["reads"], m["max_cpu_loras"], m["order"]
    steps = "，".join(f"{name} {'命中' if hit else '读盘'}" for name, hit in zip(order, m["held"]))
    said = f"max_cpu_loras={k} 时，{len(order)} 次请求里 {reads} 次从磁盘读（{steps}）"
    if got == reads:
        return True, f"对：{said}。"
    fifo = _fifo_reads(order, k)
    if got == fifo != reads:
        return False, (f"{got} 次是按先进先出算的：LRU 换出的是最久没被用过的那个，刚用过的 adapter 会排到最后。"
                       f"量到的是：{said}。")
    if got == len(set(order)) != reads:
        return False, f"{got} 是不同 adapter 的个数：缓存满了要换出，换出去的再被请求，还得再读一次盘。量到的是：{said}。"
    return False, f"量到的是：{said}。对着上面的表，按 LRU 一次一次推。"


JUDGES = {
    "03.cache_reads": _judge_cache_reads,
    "03.steps": _judge_steps_03,
    "03.config": _judge_config,
    "03.lora_share": _judge_lora_share,
}
