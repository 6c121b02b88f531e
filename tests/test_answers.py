"""Reading answers for their meaning: numbers with separators and units, names, curl commands, JSON."""

from __future__ import annotations

import math

import pytest

from course_utils.answers import (
    AnswerError,
    Number,
    curl,
    in_bytes,
    in_percent,
    is_count,
    json_object,
    number,
    word,
)


@pytest.mark.parametrize("text,value,unit", [
    ("32768", 32768, ""), ("32,768", 32768, ""), ("32 768", 32768, ""), ("32_768", 32768, ""), ("1,234,567.5", 1234567.5, ""),
    ("32 KiB", 32, "KiB"), ("32KiB", 32, "KiB"), ("0.45 gib", 0.45, "GiB"), ("61 GB", 61, "GB"), ("32768 字节", 32768, "B"),
    ("0.89%", 0.89, "%"), ("0.89 ％", 0.89, "%"), ("百分之0.89", 0.89, "%"), ("2x", 2, "x"), ("×2", 2, ""),
    ("32/16", 2, ""), ("1e3", 1000, ""), ("-1", -1, ""), (".5", 0.5, ""), ("~61", 61, ""), ("约 61 GB", 61, "GB"),
    ("'4'", 4, ""), ("2 个", 2, "个"), ("128 steps", 128, "steps"), ("61.", 61, ""), (3, 3, ""), (2.5, 2.5, ""),
])
def test_numbers_are_read_with_their_unit(text, value, unit):
    n = number(text)
    assert (n.value, n.unit) == (value, unit)


@pytest.mark.parametrize("text", [True, False, None, "abc", "", float("nan"), float("inf"), [1], {"a": 1}, "1/0",
                                  "eins", object()])
def test_what_is_not_a_number_reads_as_none(text):
    assert number(text) is None


def test_a_huge_int_is_a_number_and_never_raises():
    n = number(10 ** 400)
    assert n is not None and math.isinf(n.value) and not is_count(n)


def test_units_convert():
    assert in_bytes(number("32 KiB")) == 32768 and in_bytes(number("32 KB")) == 32000
    assert in_bytes(number("32768")) == 32768 and in_bytes(number("2 steps")) is None
    assert in_percent(number("0.89%")) == in_percent(number(0.89)) == 0.89 and in_percent(number("1 GB")) is None
    assert is_count(number("2 个")) and not is_count(number("2 GiB")) and not is_count(number(2.5))
    assert not is_count(number("128 64"))                 # two numbers are not one count


@pytest.mark.parametrize("a,b", [("Round-Robin", "round robin"), ("round_robin", "ROUNDROBIN"), ('"blind"', "Blind"),
                                 ("max-loras=1", "MAX_LORAS = 1")])
def test_names_compare_whatever_the_spelling(a, b):
    assert word(a) == word(b)


def test_a_minus_sign_is_not_a_hyphen():
    assert word("-1") == "-1" and word("max_loras=-1") == "maxloras=-1"


def test_curl_in_its_common_spellings():
    body = '\'{"lora_name": "json", "lora_path": "p/json"}\''
    for command in [f"curl -X POST http://127.0.0.1:$PORT/v1/load_lora_adapter -d {body}",
                    f"curl --data-binary {body} 127.0.0.1:$PORT/v1/load_lora_adapter",
                    f"curl -sXPOST --url http://127.0.0.1:$PORT/v1/load_lora_adapter --data {body}",
                    f"!curl -sS 127.0.0.1:${{PORT}}/v1/load_lora_adapter \\\n  --json {body}"]:
        c = curl(command)
        assert (c.method, c.host, c.path, c.scheme) == ("POST", "127.0.0.1", "/v1/load_lora_adapter", "http"), command
        assert c.port in ("$PORT", "${PORT}") and json_object(c.data[0])["lora_name"] == "json"
    assert curl(f"curl --json {body} localhost:8000/x").headers["content-type"] == "application/json"
    assert curl("curl http://127.0.0.1:8000/v1/models").method == "GET"


@pytest.mark.parametrize("command,message", [(3, "一个字符串"), ("wget x", "curl 开头"), ("curl -d '{", "引号"),
                                             ("curl -s", "没有 URL"), ("curl a b", "2 个 URL")])
def test_curl_that_cannot_be_read_says_why(command, message):
    with pytest.raises(AnswerError, match=message):
        curl(command)


def test_json_objects_in_any_whitespace_and_what_is_not_one():
    """Read as the server reads a body: a JSON parser, so Python's quotes and a trailing comma are not JSON."""
    assert json_object('{ "a" :\n 1 }') == {"a": 1} == json_object({"a": 1})
    for bad, message in [('{"a": 1', "读不下去"), ("[1]", "JSON 是列表"), (3, "JSON 对象"), ("{'a': 1}", "Python 的写法"),
                         ('{"a": 1,}', "不加逗号")]:
        with pytest.raises(AnswerError, match=message):
            json_object(bad)


@pytest.mark.parametrize("text,value,unit,bound", [
    ("六十四", 64, "", ""), ("两千步", 2000, "步", ""), ("百分之零点八九", 0.89, "%", ""), ("大概百分之0.89", 0.89, "%", "≈"),
    ("2×2=4", 4, "", ""), ("α/r = 32/16 = 2", 2, "", ""), ("alpha/r = 2", 2, "", ""), ("2**15", 32768, "", ""),
    ("4 × 15.2 GB", 60.8, "GB", ""), ("一层一个 block 是 32 KiB", 32, "KiB", ""), ("0.9% 左右", 0.9, "%", "≈"),
    ("至少 2", 2, "", "≥"), ("最多 4 个不同的 adapter", 4, "个不同的 adapter", "≤"), ("<5%", 5, "%", "<"),
    ("只能放 1 个", 1, "个", ""), ("1，因为两份放不下", 1, "", ""), ("两个副本各 2 个，共 4 个", 4, "个", ""),
    ("32 kibibytes", 32, "KiB", ""),
])
def test_numbers_as_people_write_them(text, value, unit, bound):
    """Issue 54's reader: Chinese numerals (cn2an), results after "=", arithmetic, hedges and bounds, one number
    in a sentence, an answer before its reason."""
    n = number(text)
    assert (n.value, n.unit, n.bound) == (pytest.approx(value), unit, bound)


def test_a_bound_is_an_answer_only_where_the_question_asks_for_it():
    from course_utils.answers import exact, within

    assert exact(number("至少 2"), "槽位个数", asks="≥").value == 2
    with pytest.raises(AnswerError, match="范围"):
        exact(number("至少 2"), "槽位个数")
    assert within(number("<5%"), 0, 10) and not within(number("<15%"), 0, 10) and not within(number("> 3"), 0, 10)


def test_a_choice_is_what_the_answer_leads_with():
    from course_utils.answers import choice

    opts = {"one": ("max_loras=1", "默认"), "four": ("max_loras=4",)}
    assert choice("max_loras=1，比 max_loras=4 多", opts) == "one" == choice("max_loras 设为 1", opts)
    assert choice("不是 max_loras=4，是 max_loras=1", opts) == "one"
    assert choice("max_loras=1 或 max_loras=4", opts) is None and choice("neither", opts) is None
    letters = {"a": "one", "b": "four"}
    assert choice("选 A", opts, letters) == "one" == choice("A，因为它会被拒绝", opts, letters)
    assert choice("答案是B", opts, letters) == "four" and choice("aware", {"x": ("blind",)}, {"a": "x"}) is None


def test_scalars_and_what_has_no_unit():
    import numpy as np

    assert number(np.array(2.5)) == Number(2.5, "") and number(np.array([1, 2])) is None
    assert in_bytes(None) is None and word(3) is None


def test_curl_quoting_escapes_and_a_bearer_option():
    c = curl('curl -X POST "http://127.0.0.1:$PORT/v1/x" -H "X-Note: a \\"quoted\\" word" --oauth2-bearer "$KEY" '
             "-d {\\\"a\\\":1}")
    assert c.headers["authorization"] == "Bearer $KEY" and c.unexpanded == [] and c.path == "/v1/x"
    assert curl("curl 'http://127.0.0.1:$PORT/v1/x'").unexpanded == ["PORT"]


@pytest.mark.parametrize("text,value,unit,bound", [
    ("1 个（两个要 28.4 GiB，放不下）", 1, "个", ""),             # an answer, then a remark in brackets
    ("~0.89 (=32/3584)", 0.89, "", "≈"),                         # the remark's own "=" is not the result
    ("462.0MiB (3 slots × r=32 × Σ(d_in+d_out)=90112 × 28 layers × 2 B)", 462, "MiB", ""),   # nested brackets
    ("≈0.893（%）", 0.893, "%", "≈"),                             # a bracket holding only the unit
    ("1个, 两个放不下", 1, "个", ""),                               # a remark after a comma
    ("3 同时最多3个", 3, "", ""),                                  # a remark in words that repeats the answer
    ("scaling = 2 (folded into lora_b)", 2, "", ""),
    ("two", 2, "", ""), ("four", 4, "", ""),                      # English number words
    ("两倍", 2, "x", ""), ("两个", 2, "个", ""),                    # 两 before a measure word (cn2an leaves it)
    ("几乎为 0，基座没见过这个格式", 0, "", "≈"), ("几乎0%", 0, "%", "≈"),
    ("a block = 2 (K and V) × 16 × 4 × 128 × 2 = 32768", 32768, "", ""),   # a bracket inside a computation stays
])
def test_an_answer_is_read_without_the_remark_after_it(text, value, unit, bound):
    n = number(text)
    assert (n.value, n.unit, n.bound) == (pytest.approx(value), unit, bound)


@pytest.mark.parametrize("text", ["3, 4", "1 (or 2)", "2 (maybe 3)", "2 个, 也可能 3 个", "3 或 4", "3 还是 4", "two or three"])
def test_two_answers_are_not_one_answer_and_a_remark(text):
    assert not is_count(number(text))
