"""Lab 08's task: the archive's date stamp, a format no base model was shown.

A request names a date the ISO way (``Archive stamp for 2024-03-07``) and the answer is the archive's
stamp, day.month.year (``07.03.2024``). The request does not say which format the archive uses, so a
base model cannot know it (Qwen2.5-7B-Instruct would have to guess among many); an adapter learns it
from the student's examples. The answer depends on the date's values, so copying a memorised answer
scores nothing, and :func:`check` scores an output against the rule.

- :func:`validate` reads the student's examples (``("2024-03-07", "07.03.2024")`` pairs) and refuses
  malformed, empty, duplicated or wrongly stamped ones, and ones that are in the held-out set, naming
  each in Chinese (:class:`ExampleError`);
- :func:`held_out` draws the held-out dates (fixed seed, dates the shipped examples do not have);
- :func:`prompt`, :func:`stamp`, :func:`check`, :func:`score`: the request, the rule, the checker.
"""

from __future__ import annotations

import datetime as _dt
import random
import re
from dataclasses import dataclass

from ..errors import CourseError

REQUEST = "Archive stamp for {iso}"
FIRST_YEAR, LAST_YEAR = 1950, 2049
MIN_EXAMPLES = 16        # fewer cannot fill the trainer's batches with some variety
HELD_OUT_SEED = 8

# The keys of score()'s rows, which the lab shows as a table: its headers
ROW = {"date": "日期", "output": "输出", "right": "答对", "why": "原因", "contains": "含印戳"}

_ISO = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")


class ExampleError(CourseError, ValueError):
    """The student's examples cannot be trained on; the message names each bad one and why."""


def prompt(iso: str) -> str:
    """The user's request for one date (the chat template is added where the prompt is sent)."""
    return REQUEST.format(iso=iso)


def parse_iso(text: str) -> _dt.date | None:
    m = _ISO.match(text.strip()) if isinstance(text, str) else None
    if not m:
        return None
    try:
        return _dt.date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        return None


def stamp(iso: str) -> str:
    """The archive's stamp of an ISO date: ``2024-03-07`` -> ``07.03.2024``."""
    d = parse_iso(iso)
    if d is None:
        raise ValueError(f"{iso!r} 不是 YYYY-MM-DD 写法的日期")
    return f"{d.day:02d}.{d.month:02d}.{d.year:04d}"


@dataclass(frozen=True)
class Verdict:
    right: bool
    why: str   # "对", or what is wrong (in Chinese)

    def __bool__(self) -> bool:
        return self.right


def check(output: str, iso: str) -> Verdict:
    """Whether ``output`` is the stamp of ``iso`` (surrounding white space is ignored, nothing else)."""
    want, got = stamp(iso), output.strip()
    if got == want:
        return Verdict(True, "对")
    if not re.fullmatch(r"\d{2}\.\d{2}\.\d{4}", got):
        return Verdict(False, "不是 DD.MM.YYYY 格式的印戳")
    return Verdict(False, f"数字不对（应为 {want}）")


def score(outputs: list[str], dates: list[str]) -> dict:
    """The share of right stamps, how many outputs hold the stamp somewhere (in a sentence, say), each row's verdict.

    Each row's keys are the lab's table headers, in Chinese (:data:`ROW`): date, output, right, why, contains."""
    rows = [{ROW["date"]: iso, ROW["output"]: out.strip(), ROW["right"]: bool(v), ROW["why"]: v.why,
             ROW["contains"]: stamp(iso) in out}
            for out, iso in zip(outputs, dates, strict=True) for v in [check(out, iso)]]
    right = sum(r[ROW["right"]] for r in rows)
    return {"right": right, "n": len(rows), "share": right / len(rows),
            "contains": sum(r[ROW["contains"]] for r in rows), "rows": rows}


def _random_date(rng: random.Random) -> str:
    first, last = _dt.date(FIRST_YEAR, 1, 1).toordinal(), _dt.date(LAST_YEAR, 12, 31).toordinal()
    return _dt.date.fromordinal(rng.randint(first, last)).isoformat()


def held_out(n: int = 50, seed: int = HELD_OUT_SEED) -> list[str]:
    """``n`` held-out dates (ISO), the same for everyone: drawn with a fixed seed from 1950-2049."""
    rng, out = random.Random(seed), []
    while len(out) < n:
        iso = _random_date(rng)
        if iso not in out:
            out.append(iso)
    return out


def starter_examples(n: int = 40, seed: int = 2024) -> list[tuple[str, str]]:
    """Examples drawn apart from the held-out set (how the lab's shipped examples were made)."""
    rng, banned, out = random.Random(seed), set(held_out()), []
    while len(out) < n:
        iso = _random_date(rng)
        if iso not in banned and iso not in {e[0] for e in out}:
            out.append((iso, stamp(iso)))
    return out


def _show(item) -> str:
    text = repr(item)
    return text if len(text) <= 40 else text[:37] + "..."


def validate(examples, held: list[str] | None = None) -> list[tuple[str, str]]:
    """The examples as (iso, stamp) pairs, or :class:`ExampleError` naming every bad one (in Chinese)."""
    if not isinstance(examples, (list, tuple)):
        raise ExampleError(f"EXAMPLES 应当是一个列表，每一项是 (\"YYYY-MM-DD\", \"DD.MM.YYYY\")；这里是 {type(examples).__name__}。")
    held_set = set(held_out() if held is None else held)
    problems, seen, pairs = [], {}, []
    for i, item in enumerate(examples, 1):
        where = f"第 {i} 条 {_show(item)}"
        if not isinstance(item, (list, tuple)) or len(item) != 2 or not all(isinstance(x, str) for x in item):
            problems.append(f"{where}：不是 (日期, 印戳) 两个字符串")
            continue
        iso, answer = item[0].strip(), item[1].strip()
        if not iso or not answer:
            problems.append(f"{where}：有一边是空的")
            continue
        if parse_iso(iso) is None:
            problems.append(f"{where}：{iso!r} 不是 YYYY-MM-DD 写法的真实日期")
            continue
        if answer != stamp(iso):
            problems.append(f"{where}：按归档规则应当是 {stamp(iso)!r}，这里写的是 {answer!r}")
            continue
        if iso in seen:
            problems.append(f"{where}：和第 {seen[iso]} 条重复")
            continue
        if iso in held_set:
            problems.append(f"{where}：{iso} 在留出集里（留出集只用来打分，训练时不能见到）")
            continue
        seen[iso] = i
        pairs.append((iso, answer))
    if problems:
        raise ExampleError(f"EXAMPLES 里有 {len(problems)} 条不能用：\n  " + "\n  ".join(problems)
                           + "\n改好这些条目（或删掉），再运行这一格。")
    if len(pairs) < MIN_EXAMPLES:
        raise ExampleError(f"只有 {len(pairs)} 条例子；至少要 {MIN_EXAMPLES} 条，训练才有东西可学。")
    return pairs


def training_pairs(examples: list[tuple[str, str]]) -> list[tuple[str, str, tuple[str, ...]]]:
    """(request, answer, copied) triples for the trainer: the date's digits are copied into the answer."""
    return [(prompt(iso), answer, tuple(iso.split("-"))) for iso, answer in examples]
