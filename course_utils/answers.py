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
    "kb": "KB", "mb": "MB", "gb": "GB", "tb": "TB", "k": "KB", "m": "MB", "g": "GB",
    "%": "%", "％": "%", "percent": "%", "pct": "%", "百分之": "%",
    "x": "x", "×": "x", "倍": "x", "times": "x",
}
_NUMBER = re.compile(r"""^\s*(?:about|approx\.?|约|大约|~|≈)?\s*(?P<pct>百分之)?\s*[x×]?\s*
    (?P<num>[+-]?(?:\d{1,3}(?:[,_\u00a0 ']\d{3})+|\d+)(?:\.\d*)?(?:[eE][+-]?\d+)?|[+-]?\.\d+(?:[eE][+-]?\d+)?)
    (?:\s*/\s*(?P<den>\d+(?:\.\d+)?))?
    \s*(?P<unit>.*?)\s*[。.]?\s*$""", re.VERBOSE)


@dataclass(frozen=True)
class Number:
    value: float      # the number as written (a fraction a/b divided out)
    unit: str         # "" (none), "%", "x", a key of BYTE_UNITS, or the word written after the number


def number(answer) -> Number | None:
    """The number in ``answer`` and its unit; None if it holds no number (a bool is not a number)."""
    if isinstance(answer, bool) or answer is None:
        return None
    if isinstance(answer, numbers.Real):
        try:
            return Number(float(answer), "") if math.isfinite(answer) else None
        except OverflowError:                          # an int beyond any float: a number, just a wrong one
            return Number(math.inf if answer > 0 else -math.inf, "")
    if hasattr(answer, "item") and callable(answer.item) and getattr(answer, "size", 1) == 1:
        return number(answer.item())                 # a numpy or torch scalar
    if not isinstance(answer, str):
        return None
    text = answer.strip().strip("'\"`")
    han = re.fullmatch(r"([零一二两三四五六七八九十])\s*(个|.{0,6})", text)
    if han:
        return Number(float("零一二三四五六七八九十".index(han[1].replace("两", "二"))), han[2])
    m = _NUMBER.match(text)
    if not m:
        return None
    value = float(re.sub(r"[,_\u00a0 ']", "", m["num"]))
    if m["den"]:
        den = float(m["den"])
        if den == 0:
            return None
        value /= den
    raw = m["unit"].strip()
    first = re.split(r"[\s/(（,，]", raw, maxsplit=1)[0]
    unit = "%" if m["pct"] else _UNIT_SPELLINGS.get(raw.lower(), _UNIT_SPELLINGS.get(first.lower(), raw))
    return Number(value, unit)


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
    """A dict as given, or the JSON object a string holds (any whitespace; a Python dict literal is read too)."""
    if isinstance(answer, dict):
        return answer
    if isinstance(answer, (str, bytes)):
        try:
            value = json.loads(answer)
        except ValueError as e:
            value = literal(answer) if isinstance(answer, str) else None
            if isinstance(value, dict):
                return value
            raise AnswerError(f"这不是合法的 JSON（读到第 {e.pos + 1} 个字符时读不下去）：键和字符串都要用双引号，"
                              f"最后一项后面不加逗号。") from None
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
