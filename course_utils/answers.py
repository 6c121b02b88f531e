"""Reading a student's answer for what it means, not how it is spelled.

An exercise (:mod:`course_utils.exercises`) asks for a number, a name, a curl command or a JSON
body; students write them the way people do: ``32,768``, ``"32 KiB"``, ``0.89%``, ``Round-Robin``,
``curl --json '...' 127.0.0.1:$PORT/...``. The readers here turn each into one value and leave the
judging to the exercise:

- :func:`number`: a number and its unit, from an int, a float or a string (thousands separators
  ``,``, ``_`` or a space between groups of three, a percent sign, ``a/b``, a unit after it: bytes,
  KiB/MiB/GiB, KB/MB/GB, ``%``, ``x``, or any word such as ``步``); never a bool;
- :func:`in_bytes`, :func:`in_percent`: a :class:`Number` in bytes or percent, None for another unit;
- :func:`word`: a name in any case, spacing, quotes and hyphenation (``Round-Robin`` -> ``roundrobin``);
- :func:`curl`: the method, URL, headers and body of a curl command in its common spellings;
- :func:`json_object`: a dict, or a string holding one JSON object.

Nothing here raises for a student's input except :func:`curl` and :func:`json_object`, whose
:class:`AnswerError` carries a Chinese message naming what could not be read.
"""

from __future__ import annotations

import ast
import json
import math
import numbers
import re
import shlex
import unicodedata
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from .errors import CourseError


class AnswerError(CourseError, ValueError):
    """An answer that cannot be read; the message (Chinese) says what to fix."""


# --- numbers with units ------------------------------------------------------------------------------

BYTE_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
              "KB": 10 ** 3, "MB": 10 ** 6, "GB": 10 ** 9, "TB": 10 ** 12}
_UNIT_SPELLINGS = {
    "b": "B", "byte": "B", "bytes": "B", "字节": "B", "个字节": "B",
    "kib": "KiB", "mib": "MiB", "gib": "GiB", "tib": "TiB",
    "kibibyte": "KiB", "kibibytes": "KiB", "mebibyte": "MiB", "mebibytes": "MiB", "gibibyte": "GiB",
    "gibibytes": "GiB", "kilobyte": "KB", "kilobytes": "KB", "megabyte": "MB", "megabytes": "MB",
    "gigabyte": "GB", "gigabytes": "GB",
    "kb": "KB", "mb": "MB", "gb": "GB", "tb": "TB", "k": "KB", "m": "MB", "g": "GB",
    "%": "%", "％": "%", "percent": "%", "pct": "%", "百分之": "%",
    "x": "x", "×": "x", "倍": "x", "times": "x",
}
_NUMBER = re.compile(r"""^\s*(?P<pct>百分之)?\s*[x×]?\s*
    (?P<num>[+-]?(?:\d{1,3}(?:[,_\u00a0 ']\d{3})+|\d+)(?:\.\d*)?(?:[eE][+-]?\d+)?|[+-]?\.\d+(?:[eE][+-]?\d+)?)
    (?:\s*/\s*(?P<den>\d+(?:\.\d+)?))?
    \s*(?P<unit>.*?)\s*[。.]?\s*$""", re.VERBOSE)

# Words that say how a number is meant (issue 54): "≈" an estimate, read as the number; the others a bound, which
# an exercise reads as the number only where its own question asks for that bound (:func:`exact`).
_BOUNDS = [
    ("≥", ("至少", "最少", "不少于", "不低于", "不小于", ">=", "≥", "at least", "no less than")),
    ("≤", ("至多", "最多", "不超过", "不多于", "不高于", "不大于", "<=", "≤", "at most", "no more than")),
    ("<", ("不到", "少于", "低于", "小于", "<", "under", "less than", "below")),
    (">", ("超过", "多于", "高于", "大于", ">", "more than", "over", "above")),
    ("≈", ("大约", "大概", "约莫", "约", "差不多", "几乎", "接近", "将近", "≈", "~", "about", "approximately",
           "approx.", "approx", "around", "roughly", "ca.")),
]
_BOUND_AFTER = [("≈", ("左右", "上下", "前后", "or so")), ("≥", ("以上", "或更多", "or more")),
                ("≤", ("以下", "以内", "或更少", "or less"))]
_ARITH = re.compile(r"^\s*(?P<expr>\(?\s*[+-]?[\d.]+(?:\s*(?:\*\*|[-+*/×÷^xX])\s*\(?\s*[\d.]+\s*\)?)+)"
                    r"\s*(?P<unit>.*?)\s*[。.]?\s*$")


@dataclass(frozen=True)
class Number:
    value: float      # the number as written (a fraction a/b divided out, an arithmetic expression worked out)
    unit: str         # "" (none), "%", "x", a key of BYTE_UNITS, or the word written after the number
    bound: str = ""   # "" as written, "≈" an estimate, or a bound: "≥", "≤", "<", ">" (至少, 最多, 不到, 超过, ...)
    per: str = ""     # what the number is per, when the answer says so ("32 KiB per token", "每层 2 GiB" -> "token", "层")


def _chinese_numerals(text: str) -> str:
    """Chinese numerals in ``text`` as digits (cn2an: 六十四 -> 64, 两千 -> 2000, 百分之零点八九 -> 0.89%)."""
    import warnings

    import cn2an

    text = re.sub(r"百分之\s*([\d.]+)", r"\1%", text)
    text = re.sub(r"两(?=[倍个份张块层步次副条]|\s|$)", "二", text)   # cn2an leaves 两 before a measure word
    if not re.search("[零〇一二两三四五六七八九十百千万亿]", text):
        return text
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")            # cn2an warns about a character it leaves as it is
        try:
            return cn2an.transform(text, "cn2an")
        except (ValueError, KeyError, IndexError, TypeError):
            return text


def _arith(expr: str) -> float | None:
    """The value of a small arithmetic expression (``2**15``, ``4 × 15.2``, ``2^10``); None if it is not one."""
    import operator

    ops = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.Pow: operator.pow, ast.USub: operator.neg, ast.UAdd: operator.pos}
    src = re.sub(r"[xX×]", "*", expr.replace("÷", "/").replace("^", "**"))

    def ev(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            left, right = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Pow) and abs(right) > 64:
                raise ValueError("too large")
            return ops[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp) and type(node.op) in ops:
            return ops[type(node.op)](ev(node.operand))
        raise ValueError("not arithmetic")
    try:
        value = float(ev(ast.parse(src.strip(), mode="eval").body))
    except (SyntaxError, ValueError, TypeError, ZeroDivisionError, OverflowError, RecursionError):
        return None
    return value if math.isfinite(value) else None


def _bound(text: str) -> tuple[str, str]:
    """(bound, the rest): a hedge or bound word before or after the number taken off (see :data:`_BOUNDS`)."""
    low = text.lower()
    for bound, words in _BOUNDS:
        for w in words:
            if low.startswith(w):
                return bound, text[len(w):].strip()
    end = text.rstrip("。. ")
    for bound, words in _BOUND_AFTER:
        for w in words:
            if end.lower().endswith(w):
                return bound, end[: -len(w)].strip()
    return "", text


def _unit(raw: str) -> str:
    raw = raw.strip().strip(")]】.,;。，；")
    first = re.split(r"[\s/(（,，]", raw, maxsplit=1)[0]
    return _UNIT_SPELLINGS.get(raw.lower(), _UNIT_SPELLINGS.get(first.lower(), raw))


_NUMERAL = re.compile(r"(?<![\w.])[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][+-]?\d+)?")


def _the_one_number(text: str, bound: str) -> tuple[str, str]:
    """A sentence holding exactly one number (``"只能放 1 个"``): that number and what follows it, and a bound
    word said before it (``"集群最多能装 4 个"``); the text unchanged otherwise."""
    found = _NUMERAL.findall(text)
    if len(found) != 1:
        return text, bound
    m = _NUMERAL.search(text)
    before = text[: m.start()].lower()
    said = next((b for b, words in _BOUNDS if any(w in before for w in words)), "")
    return text[m.start():], bound or said


_ENGLISH = {w: n for n, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve thirteen "
                                        "fourteen fifteen sixteen seventeen eighteen nineteen twenty".split())}
_ENGLISH_WORD = re.compile(r"(?i)\b(" + "|".join(_ENGLISH) + r")\b")
# where a remark starts after an answer: a Chinese comma or semicolon, or an ASCII one not inside a number (1,024)
_REMARK_START = r"[，；;]|,(?!\d{3})"
_REMARK = re.compile(rf"\s*(?:{_REMARK_START})\s*")


_ALTERNATIVE = re.compile(r"(?i)\b(?:or|maybe|perhaps|possibly)\b|或|还是|可能|也许")


def _remark_off(text: str) -> str:
    """The answer without a remark after it: ``"1 个（两个放不下）"`` -> ``"1 个"``, ``"~0.89 (=32/3584)"`` ->
    ``"~0.89"``, ``"1个, 两个放不下"`` -> ``"1个"``; a bracket that holds only a unit stays (``"0.89（%）"``).
    The remark is taken off only when what is left reads as one number with at most a unit or a short word."""
    lead, bracket, inner = text.partition("(")
    start = re.search(rf"\(|{_REMARK_START}", text)      # a bracket or where a remark starts
    rest = text[start.start():] if start else ""
    if re.search(r"\d", rest) and _ALTERNATIVE.search(rest):
        return text                                # "1 (or 2)", "2 个，也可能 3 个": two answers, not one and a remark
    depth, close = 1, len(inner)                   # the bracket's end, nested brackets included
    for i, ch in enumerate(inner):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0:
            close = i
            break
    inner, after = inner[:close], inner[close + 1:]
    if bracket and re.search(r"\d", lead) and not after.strip(" 。.!！"):   # a bracket that ends the answer
        inner = inner.strip()
        if inner and _unit(inner) in ("%", "x", *BYTE_UNITS):
            return f"{lead.strip()} {inner}"
        if _plain(lead):
            return lead.strip()
    m = re.match(r"^\s*([+-]?\d[\d.]*)\s+([\u4e00-\u9fff].*)$", text)   # "3 同时最多3个": a number, a remark in words
    if m and re.search(r"\d", m[2]) and not _ALTERNATIVE.search(m[2]) and _unit(m[2][:1]) == m[2][:1] \
            and m[2][:1] not in "个倍字块层":
        return m[1]
    parts = _REMARK.split(text, maxsplit=1)        # "3, 4" is two answers, not an answer and its remark
    if len(parts) == 2 and re.search(r"\d", parts[0]) and "(" not in parts[0] and _plain(parts[0]) \
            and not re.fullmatch(r"[+-]?[\d.]+\s*\S{0,3}", parts[1].strip()):
        return parts[0]
    return text


def _plain(text: str) -> bool:
    """Whether ``text`` reads as one number with at most a unit or one short word after it."""
    n = number(text, remarks=False)
    return n is not None and (n.unit in ("", "%", "x", *BYTE_UNITS) or re.fullmatch(r"[^\d\s=]{1,6}", n.unit) is not None)


def number(answer, remarks: bool = True) -> Number | None:
    """The number in ``answer``, its unit and how it is meant; None if it holds no number (a bool is not a number).

    A string is read the way people write one: Chinese numerals (``"六十四"``, cn2an), a computation whose result
    follows the last ``=`` (``"2×2=4"``, ``"α/r = 32/16 = 2"``), a value after its name (``"alpha/r = 2"``,
    ``"一个 block 是 32 KiB"``), arithmetic (``"2**15"``, ``"4 × 15.2 GB"``), a hedge (``"约 2000"``,
    ``"0.9% 左右"``: bound ``"≈"``) or a bound (``"至少 64"``, ``"<5%"``: :func:`exact`, :func:`within`),
    English number words (``"four"``), and an answer with a remark after it (``"1 个（两个放不下）"``,
    :func:`_remark_off`; not when the remark offers a second answer, ``"1 (or 2)"``).
    """
    if isinstance(answer, bool) or answer is None:
        return None
    if isinstance(answer, numbers.Real):
        try:
            return Number(float(answer), "") if math.isfinite(answer) else None
        except OverflowError:                          # an int beyond any float: a number, just a wrong one
            return Number(math.inf if answer > 0 else -math.inf, "")
    if hasattr(answer, "item") and callable(answer.item) and getattr(answer, "size", 1) == 1:
        return number(answer.item(), remarks)                 # a numpy or torch scalar
    if not isinstance(answer, str):
        return None
    text = unicodedata.normalize("NFKC", answer).strip().strip("'\"`“”‘’").strip()
    text = _chinese_numerals(text)
    text = _ENGLISH_WORD.sub(lambda m: str(_ENGLISH[m[1].lower()]), text) if _ENGLISH_WORD.fullmatch(text.strip(" .")) \
        or re.match(r"(?i)^\s*(?:about\s+|~\s*)?(" + "|".join(_ENGLISH) + r")\b", text) else text
    text = _remark_off(text) if remarks else text
    # an answer, then its reason ("1，因为两份放不下"): the answer
    lead = re.split(r"\s*[,;，；]?\s*(?:因为|由于|because|since)", text, maxsplit=1)[0]
    if lead != text and re.search(r"\d", lead):
        text = lead.rstrip(" ,;，；")
    # the value after the last "=", "是", "为", colon or "一共": a result, or a value after its name
    parts = re.split(r"\s*(?:==?|(?<![还或要可])是|(?<![因作成认以])为|:|->|→|一共|总共|合计|共|所以|即)\s*", text)
    said_before, _ = _bound(text)                    # "几乎为 0", "大约是 2": the hedge before the name's verb
    if len(parts) > 1 and re.match(r"^[^\d]{0,12}?[+-]?\.?\d", parts[-1]):
        text = _remark_off(parts[-1]) if remarks else parts[-1]
    bound, text = _bound(text)
    bound = bound or (said_before if said_before == "≈" else "")
    per = re.search(r"(?:\bper\s+|/\s*|每(?:一|个)?\s*)([A-Za-z]+|[\u4e00-\u9fff])", text)
    per = per[1].lower() if per and not re.match(r"^\s*[\d.]+\s*/\s*[\d.]", text) else ""
    if not (_ARITH.match(text) or _NUMBER.match(text)):
        text, bound = _the_one_number(text, bound)
    m = _ARITH.match(text)
    if m and not re.fullmatch(r"[\d.]+\s*/\s*[\d.]+", m["expr"].strip()):
        value = _arith(m["expr"])
        if value is not None:
            return Number(value, _unit(m["unit"]), bound, per)
    m = _NUMBER.match(text)
    if not m:
        return None
    value = float(re.sub(r"[,_\u00a0 ']", "", m["num"]))
    if m["den"]:
        den = float(m["den"])
        if den == 0:
            return None
        value /= den
    return Number(value, "%" if m["pct"] else _unit(m["unit"]), bound, per)


def fmt_number(x: float) -> str:
    return f"{x:,.0f}" if x == int(x) else f"{x:,.4g}"


_SAID = {"≥": "至少", "≤": "至多", "<": "不到", ">": "超过"}


def exact(n: Number, what: str, asks: str = "") -> Number:
    """``n`` when it names one value: as written, an estimate, or the very bound the question asks for (``asks``:
    "≥" when it asks "at least how many", "≤" for "at most how many"); else AnswerError: a range where one value
    was asked."""
    if n.bound in ("", "≈", asks):
        return n
    raise AnswerError(f"“{_SAID[n.bound]} {fmt_number(n.value)}”说的是一个范围：题目要的是{what}，写出那一个数。")


def within(n: Number, lo: float, hi: float, floor: float = 0.0) -> bool:
    """Whether what ``n`` says lies in [lo, hi]: its value, or for a bound every value it allows (``"<5%"`` allows
    [``floor``, 5%)), so that a bound is right only when all it allows is right."""
    if n.bound in ("", "≈"):
        return lo <= n.value <= hi
    if n.bound in ("<", "≤"):
        return floor >= lo and n.value <= hi
    return math.isinf(hi) and n.value >= lo


def in_bytes(n: Number | None) -> float | None:
    """``n`` in bytes (a bare number is taken as bytes); None for another unit."""
    if n is None:
        return None
    if n.unit == "":
        return n.value
    return n.value * BYTE_UNITS[n.unit] if n.unit in BYTE_UNITS else None


def in_percent(n: Number | None) -> float | None:
    """``n`` in percent (``0.89`` and ``0.89%`` are both 0.89); None for another unit."""
    return n.value if n is not None and n.unit in ("", "%") else None


def is_count(n: Number | None) -> bool:
    """A whole number with no unit, or a word after it (``2``, ``"2"``, ``"2 个"``, ``"128 steps"``)."""
    return (n is not None and math.isfinite(n.value) and n.value == int(n.value) and n.unit not in BYTE_UNITS and n.unit not in ("%", "x")
            and not any(c.isdigit() for c in n.unit))


def close(got: float | None, want: float, rel: float = 0.02) -> bool:
    """``got`` within ``rel`` (relative) of ``want``."""
    return got is not None and abs(got - want) <= rel * abs(want)


def kind(answer) -> str:
    """What sort of value ``answer`` is, in the words a hint uses."""
    names = {str: "字符串", int: "整数", float: "小数", bool: "布尔值（True/False）", list: "列表", tuple: "元组",
             dict: " dict", set: "集合", bytes: " bytes"}
    return names.get(type(answer), f"一个 {type(answer).__name__} 对象")


def show(answer, limit: int = 60) -> str:
    """``repr(answer)``, cut to ``limit`` characters for a hint."""
    text = repr(answer)
    return text if len(text) <= limit else text[:limit - 1] + "…"


# --- names ---------------------------------------------------------------------------------------------

def word(answer) -> str | None:
    """A name with case, spaces, quotes, hyphens and underscores taken out; None for a non-string."""
    if not isinstance(answer, str):
        return None
    text = re.sub(r"[-_](?!\d)", "", answer)            # a hyphen before a digit is a minus sign: kept
    return re.sub(r"[\s'\"`“”‘’.,，。]", "", text).lower()


# --- JSON --------------------------------------------------------------------------------------------

def literal(answer):
    """A dict or list written as text (JSON, or a Python literal such as ``"{1: 128, 2: 64}"``) as the value;
    any other answer unchanged."""
    if isinstance(answer, str) and answer.strip()[:1] in ("{", "["):
        try:
            return json.loads(answer)
        except ValueError:
            try:
                return ast.literal_eval(answer.strip())
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                return answer
    return answer


def json_object(answer) -> dict:
    """A dict as given, or the JSON object a string holds, read as the server reads it: by a JSON parser, so a
    Python literal (single quotes, ``True``, ``None``) or a trailing comma is an AnswerError that says so."""
    if isinstance(answer, dict):
        return answer
    if isinstance(answer, (str, bytes)):
        try:
            value = json.loads(answer)
        except ValueError as e:
            python = isinstance(answer, str) and isinstance(literal(answer), dict)
            raise AnswerError(f"这不是合法的 JSON（读到第 {e.pos + 1} 个字符时读不下去）"
                              f"{'：这是 Python 的写法，服务端按 JSON 解析会失败' if python else ''}。"
                              f"JSON 的键和字符串都用双引号，最后一项后面不加逗号，true/false/null 小写。") from None
        if isinstance(value, dict):
            return value
        raise AnswerError(f"要的是一个 JSON 对象（{{...}}），这里的 JSON 是{kind(value)}。")
    raise AnswerError(f"要的是一个 JSON 对象（Python 里写成 dict，{{...}}），这里是{kind(answer)}。")


# --- curl ----------------------------------------------------------------------------------------------

# curl's options that take an argument (the common ones); every other option is a flag.
_DATA = {"-d", "--data", "--data-raw", "--data-binary", "--data-ascii", "--data-urlencode", "--json"}
_WITH_ARG = _DATA | {"-X", "--request", "-H", "--header", "-o", "--output", "-u", "--user", "-m", "--max-time",
                     "--connect-timeout", "-w", "--write-out", "-A", "--user-agent", "-e", "--referer", "-b",
                     "--cookie", "-c", "--cookie-jar", "--url", "-F", "--form", "-T", "--upload-file", "--retry",
                     "--cacert", "-K", "--config", "-x", "--proxy", "-r", "--range", "--oauth2-bearer"}
_SHORT_WITH_ARG = {o[1] for o in _WITH_ARG if len(o) == 2}


@dataclass
class Curl:
    method: str                                  # what curl sends: -X, else POST with a body, else GET
    url: str                                     # as written ("" if none)
    scheme: str
    host: str
    path: str
    port: str                                    # as written after the host ("$PORT", "8000"; "" if none)
    headers: dict = field(default_factory=dict)  # lower-case name -> value
    data: list = field(default_factory=list)     # every -d/--data*/--json argument, in order
    options: list = field(default_factory=list)  # every option, as written
    unexpanded: list = field(default_factory=list)   # $NAMEs inside single quotes (the shell leaves them as text)


def _options(words: list[str]):
    """(option, argument or None) and (None, positional) pairs, short clusters (-sX POST, -XPOST) split."""
    it = iter(words)
    for w in it:
        if w.startswith("--"):
            yield (w, next(it, "")) if w in _WITH_ARG else (w, None)
        elif w.startswith("-") and len(w) > 1:
            for i, ch in enumerate(w[1:], start=1):
                if ch in _SHORT_WITH_ARG:
                    rest = w[i + 1:]
                    yield f"-{ch}", rest if rest else next(it, "")
                    break
                yield f"-{ch}", None
        else:
            yield None, w


def _shell_scan(text: str) -> tuple[str, list[str]]:
    """The command up to its first shell operator (``|``, ``;``, ``&``, ``<``, ``>`` outside quotes: a pipe into
    jq is not part of the request), and the ``$NAME``s written inside single quotes."""
    quote, unexpanded, i = None, [], 0
    while i < len(text):
        ch = text[i]
        if quote is None:
            if ch in "'\"":
                quote = ch
            elif ch == "\\":
                i += 1
            elif ch in "|;&<>":
                return text[:i].rstrip(), unexpanded
        elif ch == quote:
            quote = None
        elif quote == "'" and ch == "$":
            m = re.match(r"\$\{?(\w+)", text[i:])
            if m:
                unexpanded.append(m[1])
        elif quote == '"' and ch == "\\":
            i += 1
        i += 1
    return text, unexpanded


def curl(answer) -> Curl:
    """The parts of a curl command (a string starting with ``curl``, ``!curl`` or ``$ curl``)."""
    if not isinstance(answer, str):
        raise AnswerError(f"要的是一条 curl 命令（一个字符串），这里是{kind(answer)}。")
    text = re.sub(r"\\\s*\n", " ", answer.strip())
    text = re.sub(r"^(?:!|\$\s+|%%bash\s+)", "", text).strip()
    text, unexpanded = _shell_scan(text)
    try:
        words = shlex.split(text)
    except ValueError as e:
        raise AnswerError(f"shell 拆不开这条命令（{e}）：检查引号是否成对（外面单引号，JSON 里面双引号）。") from None
    if not words or words[0] != "curl":
        raise AnswerError("命令要以 curl 开头。")
    method, urls, headers, data, options = None, [], {}, [], []
    for opt, arg in _options(words[1:]):
        if opt is None:
            urls.append(arg)
            continue
        options.append(opt)
        if opt in ("-X", "--request"):
            method = arg.upper()
        elif opt in ("-H", "--header"):
            k, _, v = arg.partition(":")
            headers[k.strip().lower()] = v.strip()
        elif opt in _DATA:
            data.append(arg)
            if opt == "--json":
                headers.setdefault("content-type", "application/json")
                headers.setdefault("accept", "application/json")
        elif opt == "--url":
            urls.append(arg)
        elif opt == "--oauth2-bearer":
            headers["authorization"] = f"Bearer {arg}"
    if len(urls) > 1 and any(d.lstrip().startswith("{") for d in data):
        raise AnswerError("JSON body 没有用单引号整个括起来：shell 把它拆成了好几段。写成 -d '{\"lora_name\": ..., ...}'。")
    if len(urls) != 1:
        raise AnswerError("这条命令里没有 URL。" if not urls else f"这条命令里有 {len(urls)} 个 URL（{', '.join(urls)}）：只写一个。")
    url = urls[0]
    parts = urlsplit(url if "://" in url else f"http://{url}")   # curl assumes http:// when none is written
    if method is None and ({"-I", "--head"} & set(options)):
        method = "HEAD"
    if method is None and ({"-G", "--get"} & set(options)):
        method = "GET"                             # -G sends the -d data in the URL of a GET
    method = method or ("POST" if data else "GET")
    host = parts.hostname or ""
    port = parts.netloc.rpartition("@")[2].rsplit("]", 1)[-1].partition(":")[2]   # "$PORT", "8000" or ""
    return Curl(method, url, parts.scheme, host, parts.path, port, headers, data, options, unexpanded)


# --- choices -------------------------------------------------------------------------------------------

_LEAD_IN = re.compile(r"^(?:我的?预测是?|预测|我选择?|选择?|答案是|答案|答|应该是|应选|是|my prediction is|prediction|"
                      r"i pick|i choose|i'd pick|the answer is|answer is|answer|option|choice)\s*[:：,，]?\s*", re.I)
_NEGATED = re.compile(r"(?:不是|并非|不会|不选|而非|not|isn't|never)\s*$")


def choice(answer, options: dict[str, tuple[str, ...]], letters: dict[str, str] | None = None) -> str | None:
    """The option an answer picks, or None when it names none.

    ``options`` maps each option to the words that name it (compared after :func:`word`, so case, spaces, quotes
    and hyphens do not matter); ``letters`` maps a letter ("a") to its option. The pick is what the answer
    leads with: a letter alone or followed by its reason (``"A"``, ``"选 A"``, ``"A，因为…"``), else the option
    named first, so that an explanation after it may name the others (``"max_loras=1，比 max_loras=4 多"``).
    A name right after a negation (``"不是 hash，是轮询"``) is not a pick.
    """
    if isinstance(answer, bool) or not isinstance(answer, (str, int)):
        return None
    text = unicodedata.normalize("NFKC", str(answer)).strip().strip("'\"`“”‘’").strip()
    for _ in range(2):
        text = _LEAD_IN.sub("", text, count=1)
    if letters:
        if re.match(r"^\(?[a-zA-Z]\)?\s*(?:或者?|还是|or|/|\|)\s*\(?[a-zA-Z](?![a-zA-Z])", text):
            return None                              # "A or B": two letters, none chosen
        m = re.match(r"^\(?([a-zA-Z])\)?(?![a-zA-Z0-9_])", text)
        if m and m[1].lower() in letters:
            return letters[m[1].lower()]
    text = re.sub(r"([A-Za-z_][\w\-]*)\s*(?:=|:|：|设为|设成|设置为|为|是|取)\s*(\d+)", r"\1=\2", text)
    w = word(text) or ""
    named: list[tuple[int, int, str]] = []           # (start, end, option) of each option's first mention
    for option, names in options.items():
        spots = []
        for name in names:
            key = word(name) or ""
            start = w.find(key) if key else -1
            while start >= 0 and _NEGATED.search(w[:start]):
                start = w.find(key, start + 1)
            if start >= 0:
                spots.append((start, start + len(key), option))
        if spots:
            named.append(min(spots))
    named.sort()
    if not named:
        return None
    if len(named) > 1 and re.search(r"^(?:或者?|还是|or|/|\|)", w[named[0][1]:named[1][0]]):
        return None                                  # "A or B", "轮询或哈希": two picks, none chosen
    return named[0][2]
