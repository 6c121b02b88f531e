"""Lab 08: the base's score before training, a second training setting predicted against its learning curve (the
lab's measurement: :func:`course_utils.exercises.measured`), the body that loads the new adapter, rank and steps for a
harder variant, and what a too-small ``max_lora_rank`` does to the new adapter."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from ..answers import choice, in_percent, json_object, kind, literal, number, show, within, word
from . import measurement
from .asked import LAB08_SAME
from .common import whole_number
from .lab04 import LOAD_FIELDS

NAME = "stamp"                      # the lab's adapter, written to build/lab08/stamp
KNOBS = {"rank": 8, "steps": 200}   # the lab's knobs (labs/08_your_adapter.ipynb, section 3)
SERVER_MAX_LORA_RANK = 64           # the lab's server: --max-lora-rank 64 (the shelf's json adapter has rank 64)
BASE_AT_MOST = 5.0                  # percent: a prediction at or below the lab's own bound for the base is right


def _judge_base_score(answer):
    n = number(answer)
    pct = in_percent(n)          # "12%", "12 %" and 12 are all 12 percent
    if pct is None:
        return False, f"要的是一个百分数（例如 \"12%\" 或 12），这里是{kind(answer)} {show(answer)}。"
    if not 0 <= pct <= 100:
        return False, f"{show(answer)} 不在 0–100% 之间。"
    if within(n, 0, BASE_AT_MOST):         # "<5%" and "接近 0" too: every value they allow is at most 10%
        return True, (f"对（预测不超过 {BASE_AT_MOST:g}% 都算对）：请求里只说了 \"Archive stamp for <日期>\"，没说归档用哪种写法；"
                      "基座从没见过这种印戳，要整个回答恰好是 DD.MM.YYYY、每一位都对，很难碰巧写对。下面实测（录制用的是 tiny 基座）。")
    if pct >= 50:
        return False, ("基座看到的只有 \"Archive stamp for 2024-03-07\"：格式（日.月.年、用点分隔、补零）请求里一个字都没写，"
                       "它从没见过这个任务，没法知道归档要哪一种写法。")
    return False, (f"{pct:g}% 还是高了：打分要求输出和印戳一字不差（DD.MM.YYYY，补零），"
                   f"一个没见过这个格式的基座很难碰巧写出它。")


def _judge_load_request(answer):
    body = json_object(answer)
    if "name" in body or "path" in body or "model" in body:
        return False, "字段名是 lora_name 和 lora_path（name=path 是命令行 --lora-modules 的写法，model 是推理请求的字段）。"
    extra = [k for k in body if k not in LOAD_FIELDS]
    if extra:
        return False, (f"字段 {', '.join(map(repr, extra))} 不是加载端点认识的字段（它认 {', '.join(sorted(LOAD_FIELDS))}）："
                       f"vLLM 会悄悄丢掉它。")
    name, path = body.get("lora_name"), body.get("lora_path")
    if not isinstance(name, str) or not name.strip():
        return False, f"lora_name 要写 adapter 在服务上的名字，一个字符串（这里是 {show(name)}）。"
    if name != NAME:
        return False, f"lora_name 是 {show(name)}；这一课的 adapter 叫 \"{NAME}\"，客户端靠这个名字选它。"
    if not isinstance(path, str) or not path.strip():
        return False, "缺 lora_path：服务端要从这个目录读 adapter（训练写到了 build/lab08/stamp）。"
    p = PurePosixPath(path.strip().rstrip("/"))
    if p.name.endswith((".safetensors", ".json", ".bin")):
        return False, f"lora_path 指向的是文件 {p.name}；要写 adapter 所在的目录（里面有 adapter_config.json）。"
    trained = ("build", "lab08", NAME)
    p = PurePosixPath(re.sub(r"^(\./)+", "", str(p)))
    if p.parts != trained and not (p.is_absolute() and p.parts[-3:] == trained
                                   and p.parts[-4] not in ("data", "labs", "tiny", "build")):
        if p.parts[:2] == ("data", "tiny") or "data" in p.parts:
            return False, "data/ 里是课程发的 adapter；新 adapter 训练时写到了 build/lab08/stamp。"
        return False, f"lora_path 是 {show(path)}；训练把 adapter 写到了 build/lab08/{NAME}（相对仓库根目录，或它的绝对路径）。"
    return True, ("对：POST /v1/load_lora_adapter 带 {\"lora_name\", \"lora_path\"}（还要 Authorization 头）；加载之后 "
                  f"\"{NAME}\" 就是 /v1/models 里的一个模型，不用重启服务。lora_path 由服务进程去读：相对路径按服务的工作目录算"
                  "（本课的服务在仓库根目录启动），写绝对路径最稳妥，本课的格子就是这样做的。")


def _judge_harder(answer):
    answer = literal(answer)
    if isinstance(answer, str):          # "rank=16, steps=400", "rank 32, steps 1000", "秩 16，步数 800"
        pairs = re.findall(r"(rank|steps|秩|步数)\s*[=:：]?\s*(\d[^,，;；\s]*)", answer, flags=re.IGNORECASE)
        names = {"秩": "rank", "步数": "steps"}
        answer = {names.get(k, k.lower()): v for k, v in pairs} if len(pairs) == 2 else answer
    if not isinstance(answer, dict):
        return False, f"要的是一个 dict：{{\"rank\": ..., \"steps\": ...}}；这里是{kind(answer)}。"
    keys = {word(k): k for k in answer if isinstance(k, str)}
    missing = [k for k in ("rank", "steps") if k not in keys]
    extra = [k for k in answer if not (isinstance(k, str) and word(k) in ("rank", "steps", "targetmodules"))]
    if missing or extra:
        return False, f"要的是两个键 \"rank\" 和 \"steps\"（可以另带 \"target_modules\"），这里是 {show(list(answer))}。"
    rank = whole_number(answer[keys["rank"]], "秩")
    steps = whole_number(answer[keys["steps"]], "步数")
    if rank > SERVER_MAX_LORA_RANK:
        return False, (f"秩 {rank} 超过了服务的 --max-lora-rank {SERVER_MAX_LORA_RANK}：服务端会拒绝加载它"
                       f"（第 4 节的预检查也会）。")
    if rank < KNOBS["rank"]:
        return False, f"秩 {rank} 比本课默认的 {KNOBS['rank']} 还低：任务更难，按规则容量不减。"
    if steps < 2 * KNOBS["steps"]:
        return False, f"{steps} 步不到本课默认 {KNOBS['steps']} 步的两倍：要多学 12 个月份的名字，按规则至少 {2 * KNOBS['steps']} 步。"
    if steps > 10 * KNOBS["steps"]:
        return False, f"{steps} 步是本课默认的 {steps / KNOBS['steps']:.0f} 倍：超出规则的上限（10 倍），训练时间也跟着翻这么多。"
    return True, (f"对：秩 {rank} 在 {KNOBS['rank']} 与服务的上限 {SERVER_MAX_LORA_RANK} 之间，{steps} 步在 "
                  f"{2 * KNOBS['steps']}–{10 * KNOBS['steps']} 之间。这只是一条经验规则：真要知道够不够，训练完在留出集上打分。")


# 08.other's three predictions and the words that name each (read by answers.choice: the one named first is the pick)
OTHER_OPTIONS = {
    "higher": ("更高", "高", "更好", "提高", "上升", "higher", "better", "increase"),
    "lower": ("更低", "低", "更差", "差一些", "差很多", "下降", "降低", "不如", "lower", "worse", "decrease", "drop"),
    "same": ("差不多", "一样", "相同", "持平", "相近", "接近", "不变", "same", "similar", "equal", "about the same", "roughly"),
}
_SAID = {"higher": "更高", "lower": "更低", "same": "差不多"}


def _judge_other(answer):
    """The prediction against what the lab measured: the two learning curves' last points (Lab 08, 3.1)."""
    if isinstance(answer, dict):                  # {"prediction": "更低", "why": "..."}: the prediction is the pick
        answer = next((answer[k] for k in ("prediction", "answer", "pick", "choice", "预测", "答案") if k in answer), answer)
    got = choice(answer, OTHER_OPTIONS)
    if got is None:
        return False, f'{show(answer)} 读不出是哪一个：答 "更高"、"更低" 或 "差不多"，只选一个。'
    m = measurement("08.other")
    if m is None:
        return None, "先运行上面训练第二组、给检查点打分的那一格：这道题拿你的预测和那一格量到的比。"
    diff = m["other"] - m["knobs"]
    truth = "same" if abs(diff) <= LAB08_SAME + 1e-9 else ("higher" if diff > 0 else "lower")
    figures = (f"第二组（{m['other_setting']}）训练完答对 {m['other']:.0%}，KNOBS 那组（{m['knobs_setting']}）{m['knobs']:.0%}，"
               f"相差 {100 * abs(diff):.0f} 个百分点（不超过 {100 * LAB08_SAME:.0f} 个算差不多）")
    if got == truth:
        return True, f"对：{figures}。"
    return False, f"量到的是{_SAID[truth]}：{figures}；你预测的是{_SAID[got]}。看上面的曲线，想想差在哪里。"


JUDGES = {
    "08.other": _judge_other,
    "08.base_score": _judge_base_score,
    "08.load_request": _judge_load_request,
    "08.harder": _judge_harder,
}
