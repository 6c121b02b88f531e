"""Lab 01: the lora_request list, max_loras for a batch, which engine takes more steps."""

from __future__ import annotations


from ..answers import choice, kind, show
from .common import judge_choice, whole_number

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
    for i, r in enumerate(answer):
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
    got, want = whole_number(answer, "槽位个数", asks="≥"), len({a for a in batch if a})
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


SAME = ("same", "equal", "相同", "一样", "一样多", "同样多", "差不多", "不变")
# The words that name each choice of 01.more_steps (read by answers.choice: the one named first is the pick).
STEPS_OPTIONS = {"max_loras=1": ("max_loras=1", "max_loras1", "默认", "default", "一个槽位", "1个槽位"),
                 "max_loras=4": ("max_loras=4", "max_loras4", "四个槽位", "4个槽位"),
                 "same": SAME}


def _more_steps_choice(answer) -> str | None:
    """"max_loras=1", "1", "默认的 max_loras=1 要多走很多步", "max_loras=4", "same"; None when it names none."""
    bare = str(answer).strip() if isinstance(answer, (int, str)) and not isinstance(answer, bool) else ""
    return f"max_loras={bare}" if bare in ("1", "4") else choice(answer, STEPS_OPTIONS)


def _judge_steps(answer):
    return judge_choice(_more_steps_choice(answer), "max_loras=1", {
        "max_loras=1": ("对：只有一个槽位时，调度器每一步只放行一个 adapter 的行，其余排队，同一批请求要走更多步；"
                        "每一行的答案不变。"),
        "max_loras=4": "槽位多了，几个 adapter 能在同一步里一起跑，所以 max_loras=4 要的步数更少，不是更多。",
        "same": "每一行的答案确实不变，但步数变了：只有一个槽位时，adapter 要排队轮流。",
    }, f'{show(answer)} 读不出是哪一个：答 "max_loras=1"、"max_loras=4" 或 "same"（一样多），只选一个。')


JUDGES = {
    "01.requests": _judge_requests,
    "01.max_loras": _judge_max_loras,
    "01.more_steps": _judge_steps,
}
