"""What the judges share: reading a whole number or a byte count, and judging
a byte count or a choice among a few."""

from __future__ import annotations

import math
import re

from ..answers import (
    BYTE_UNITS,
    AnswerError,
    Number,
    close,
    exact,
    fmt_number,
    in_bytes,
    is_count,
    kind,
    number,
    show,
)
from .asked import TOLERANCE

QWEN = "qwen2.5-7b-instruct"


def whole_number(answer, what: str, asks: str = "") -> int:
    """A whole number (``2``, ``"2"``, ``"2 个"``, ``"max_loras=2"``, ``"六十四"``), or AnswerError naming what was
    expected. ``asks`` is the bound the question itself asks for ("≥": at least how many; "≤": at most how many):
    ``"至少 2"`` answers the first; a bound the question does not ask for is a range, not an answer."""
    if isinstance(answer, str):
        answer = re.sub(r"^\s*-{0,2}[A-Za-z][\w\-]*\s*[=:：]?\s*(?=[\d.+-])", "", answer)
    n = number(answer)
    if n is not None:
        n = exact(n, what, asks)
    if not is_count(n):
        if n is not None and not math.isfinite(n.value):
            raise AnswerError(f"{what}是一个不大的整数，{show(answer)} 大得没有意义。")
        if n is not None and n.value != int(n.value):
            raise AnswerError(f"{what}是一个整数，{show(answer)} 不是整数。")
        raise AnswerError(f"要的是一个整数（{what}），这里是{kind(answer)} {show(answer)}。")
    return int(n.value)


fmt = fmt_number          # a number as a hint writes it (answers.py has the one definition)


def byte_count(answer, what: str, per: tuple[str, ...] = ()) -> tuple[float, Number]:
    """A byte count (a bare number is bytes; KiB, MB, ... are converted), or AnswerError. An answer that says what
    it is per ("32 KiB per token") must say one of ``per`` (the question's own: "block"), else it is another
    quantity than the one asked."""
    n = number(answer)
    if n is not None and n.per and n.per not in per:
        raise AnswerError(f"你写的是每 {n.per} 的量；题目问的是{what}。")
    if n is None:
        raise AnswerError(f"要的是{what}：一个数，例如 12345、\"12,345\"，或带单位 \"12 KiB\"；这里是{kind(answer)} {show(answer)}。")
    n = exact(n, what)
    b = in_bytes(n)
    if b is None:
        raise AnswerError(f"单位 {show(n.unit)} 不是字节的单位：按字节答，或写 KiB、MiB、GiB（也认 KB、MB、GB）。")
    return b, n


def unit_slip(n: Number, want: float) -> str | None:
    """A hint when the number is right in another unit than the one written (or none written)."""
    if n.unit == "":
        for unit in ("KiB", "MiB", "GiB"):
            if close(n.value * BYTE_UNITS[unit], want, TOLERANCE):
                return f"{fmt(n.value)} 是按 {unit} 算的吧？不写单位就按字节算：把单位写上。"
    if close(n.value, want * 8, TOLERANCE) and n.unit in ("", "B"):
        return "这是比特数：一个 bf16 的数是 16 比特、2 字节，题目问的是字节。"
    return None


def judge_byte_count(answer, what: str, want: float, right: str, slips: list[tuple[float, str]],
                     otherwise: str, per: tuple[str, ...] = ()) -> tuple[bool, str]:
    """A byte count within ±TOLERANCE of ``want`` is right (``right`` says why); else the hint of a unit slip,
    or of the first ``(value, hint)`` in ``slips`` that it is close to (a typical mistake), or ``otherwise``."""
    got, n = byte_count(answer, what, per)
    if close(got, want, TOLERANCE):
        return True, right
    binary = {"KB": "KiB", "MB": "MiB", "GB": "GiB"}.get(n.unit)
    if binary and close(n.value * BYTE_UNITS[binary], want, TOLERANCE):   # the usual KB for KiB: right, said once
        return True, (f"{right}（{fmt(n.value)} {n.unit} 按 {fmt(n.value)} {binary} 读了：严格说 1 {n.unit} = "
                      f"{BYTE_UNITS[n.unit]:,} 字节，1 {binary} = {BYTE_UNITS[binary]:,} 字节。）")
    hint = unit_slip(n, want) or next((h for value, h in slips if close(got, value, TOLERANCE)), None)
    return False, hint or otherwise


def judge_choice(choice: str | None, right: str, said: dict[str, str], unreadable: str) -> tuple[bool, str]:
    """An answer read as one of a few choices (None: it names none or several): right when it is ``right``;
    ``said`` holds what to say to each choice, ``unreadable`` what to say when there is none."""
    if choice in said:
        return choice == right, said[choice]
    return False, unreadable
