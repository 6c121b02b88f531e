"""Reference answers, the same answers in other spellings, and typical wrong answers with the reason each
must be given, for the labs' exercises (kept apart from the labs).

``test_exercises.py`` proves each check with them: the reference and every other spelling are accepted,
every wrong answer is rejected with its reason, and a blank or malformed answer gets a hint and never
raises. ``tests/grading/test_nbgrader_course.py`` autogrades a submission of the references, one of
the other spellings (:data:`OTHER_SPELLINGS_SOURCE`), a blank one and a wrong one.
"""

import numpy as np

from course_tools import grading
from course_utils import exercises as ex
from course_utils.replay.standin import (
    LoRARequest,  # the same fields as vllm.lora.request.LoRARequest
)

sql = LoRARequest("sql", 1, "data/tiny/adapters/sql")
support = LoRARequest("support", 2, "data/tiny/adapters/support")
medical = LoRARequest("medical", 3, "data/tiny/adapters/medical")
jsonfmt = LoRARequest("json", 4, "data/tiny/adapters/json")

CURL = """curl -s -X POST http://127.0.0.1:$PORT/v1/load_lora_adapter \\
  -H "Authorization: Bearer $VLLM_API_KEY" -H "Content-Type: application/json" \\
  -d '{"lora_name": "json", "lora_path": "data/tiny/adapters/json"}'"""
KEY = '-H "Authorization: Bearer $VLLM_API_KEY"'
JSON_BODY = """'{"lora_name": "json", "lora_path": "data/tiny/adapters/json"}'"""
ASK = [{"role": "user", "content": "Where is my order?"}]

# Lab 05's 练习 2: the student writes a function. Its reference, other right ones and typical wrong ones are whole `def`
# sources (course_tools.grading.is_def): nbgrader puts the reference's body into the lab's skeleton, and a submission's
# cell gets the whole definition. The reference uses only what numpy arrays and torch tensors share (read mode
# checks it on numpy arrays).
LORA_LINEAR = """\
def lora_linear(x, W, bias, A, B, scaling, idx):
    y = x @ W.T                                   # the shared base GEMM, once for the whole batch
    if bias is not None:
        y = y + bias
    for a in sorted(set(idx.tolist())):           # one group per adapter slot in this batch
        if a < 0:                                 # -1: these rows use no adapter
            continue
        rows = idx == a
        v = (x[rows] @ A[a].T) * scaling[a]       # shrink: (rows, r_max), scaled by alpha/r
        y[rows] = y[rows] + v @ B[a].T            # expand: added back to the base output
    return y
"""


def defined(source: str, name: str = "lora_linear"):
    """The function a `def` source defines (run in a fresh namespace)."""
    ns: dict = {}
    exec(compile(source, "<answer>", "exec"), ns)
    return ns[name]


def answer_value(source: str, ns: dict):
    """What an answer's source gives in a lab's namespace: an expression's value, or the function a `def` defines."""
    if grading.is_def(source):
        scope = dict(ns)
        exec(compile(source, "<answer>", "exec"), scope)
        return scope["lora_linear"]
    return eval(source, ns)


# Other right ways to write it: a row loop, a loop over every slot, and (torch only: tests/test_exercises.py) the whole
# batch gathered at once with the base rows masked.
LORA_LINEAR_LOOP = """\
def lora_linear(x, W, bias, A, B, scaling, idx):
    y = x @ W.T
    if bias is not None:
        y = y + bias
    for i, a in enumerate(idx.tolist()):
        if a >= 0:
            y[i] = y[i] + (B[a] @ (A[a] @ x[i])) * scaling[a]
    return y
"""
LORA_LINEAR_SLOTS = """\
def lora_linear(x, W, bias, A, B, scaling, idx):
    y = x @ W.T + (0 if bias is None else bias)
    for a in range(len(A)):
        rows = idx == a
        if rows.any():
            y[rows] += (x[rows] @ A[a].T) @ B[a].T * scaling[a]
    return y
"""
LORA_LINEAR_GATHER = """\
import torch

def lora_linear(x, W, bias, A, B, scaling, idx):
    y = torch.nn.functional.linear(x, W, bias)
    use = idx >= 0
    slot = idx.clamp(min=0)
    v = torch.einsum("tk,trk->tr", x, A[slot]) * scaling[slot][:, None]
    return y + torch.einsum("tr,tdr->td", v, B[slot]) * use[:, None]
"""
# Typical mistakes, each as a change of the reference, with (a fragment of) the reason the check must give.
LORA_LINEAR_WRONG = [
    (LORA_LINEAR.replace("v = (x[rows] @ A[a].T) * scaling[a]", "v = x[rows] @ A[a].T"), "没有乘 α/r"),
    (LORA_LINEAR.replace("rows = idx == a", "rows = idx == a\n        a = a + 1"), "槽位下标错了"),
    (LORA_LINEAR.replace("        if a < 0:                                 # -1: these rows use no adapter\n"
                         "            continue\n", ""), "最后一个槽位的增量"),
    (LORA_LINEAR.replace("    if bias is not None:\n        y = y + bias\n", ""), "漏了偏置"),
    (LORA_LINEAR.replace("return y", "return y.T"), "像是转置了"),
    (LORA_LINEAR.replace("        y[rows] = y[rows] + v @ B[a].T", "        pass"), "只算了基座"),
    (LORA_LINEAR.replace("return y", "return None if len(y) < 5 else y"), "返回了 None"),
]

REFERENCE = {
    "01.requests": [sql, None, jsonfmt, sql],
    "01.max_loras": 2,
    "01.more_steps": "max_loras=1",
    "07.capacity": 4,
    "07.most_loads": "blind",
    "07.replicas_per_4090": 1,
    "02.kv_page": ex.kv_page_answer(),
    "02.lora_buffer": ex.lora_buffer_answer(),
    "02.max_lora_rank": 64,
    "03.steps": {1: 128, 2: 64},
    "03.cache_reads": 4,
    "03.config": {"max_lora_rank": 64, "max_loras": 3},
    "03.lora_share": 0.89,
    "04.request_body": {"model": "support", "messages": ASK},
    "04.curl_load": CURL,
    "04.status": {"no API key": 401, "adapter unloaded": 404, "same name loaded again": 400,
                  "rank above --max-lora-rank": 500},
    "05.scaling": 2.0,
    "05.lora_linear": defined(LORA_LINEAR),
    "05.indices": [0, 0, 0, -1, -1, 1, 0, 0],
    "05.merged_disk": 61,
    "08.base_score": "0%",
    "08.other": "更低",
    "08.load_request": {"lora_name": "stamp", "lora_path": "build/lab08/stamp"},
    "08.harder": {"rank": 16, "steps": 400},
}

# Right answers as people write them: every one must be accepted.
SPELLINGS = {
    "01.requests": [(sql, None, jsonfmt, sql),
                    [LoRARequest("sql", 1, "data/tiny/adapters/sql"), None, LoRARequest("json", 4, "x/json"),
                     LoRARequest("sql", 1, "data/tiny/adapters/sql")]],
    "01.max_loras": ["至少 2", "至少两个", "2，因为基座行不占槽位", "2", " 2 ", 2.0, "2 个", np.int64(2), "max_loras=2", "两个"],
    "01.more_steps": ["max_loras=1 走的步更多", "max_loras 设为 1 的那个", "MAX_LORAS = 1", "max-loras=1", 1, "1", "default", "默认", "max_loras=1 (default)",
                      "max_loras=1 更多", "默认 max_loras=1", "max_loras=1 的引擎", "max_loras=1，默认那个"],
    "02.kv_page": ["32 KB", "32 kibibytes", "2**15", "一层一个 block 是 32 KiB", "32 KiB（即 32768 字节）", "32768",
                   "32,768", "32 768", "32_768", "32 KiB", "32KiB", "32768 bytes", "32768 B", "32768 字节",
                   "0.03125 MiB", 32768.0, np.int64(32768), 2 * 16 * 4 * 128 * 2, "32 KiB per layer", "32KiB/层",
                   "32768 B (32 KiB)"],
    "02.lora_buffer": ["0.45 GB", "484,442,112", "462 MiB", "0.45 GiB", "0.4512GiB", "484.4 MB", 4.844e8],
    "02.max_lora_rank": ["64", 64.0, " 64 ", "max_lora_rank=64", "--max-lora-rank 64"],
    "03.steps": [{"1": 128, "2": 64}, {"max_loras=1": 128, "max_loras=2": 64}, {1: "128", 2: "64 步"},
                 [128, 64], (128, 64), {2: 64, 1: 128}, "{1: 128, 2: 64}"],
    "03.cache_reads": ["4 次", "四次", "4", 4.0, "读盘 4 次"],
    "03.config": [{"max_loras": "3", "max_lora_rank": "64"}, "max_lora_rank=64, max_loras=3",
                  "--max-lora-rank 64 --max-loras 3", {"max-lora-rank": 64, "max-loras": 3},
                  {"max_lora_rank": 64, "max_loras": 3, "max_cpu_loras": 5}, '{"max_lora_rank": 64, "max_loras": 3}',
                  "max_lora_rank=64，max_loras=3", {"max_lora_rank": 64, "max_loras": 3, "enable_lora": True}],
    "03.lora_share": ["0.89%", "0.893", 0.8929, "0.9 %", "百分之0.89", 100 * 16 * (3584 + 3584) / (3584 * 3584)],
    "04.request_body": ['{"model":"support",\n  "messages": [ {"role": "user", "content": "Where is my order?"} ] }',
                        {"model": "support", "messages": ASK, "max_tokens": 64, "temperature": 0},
                        {"model": "support", "messages": [{"role": "system", "content": "You are helpful."}] + ASK},
                        {"model": "support", "messages": [{"role": "user", "content": "我的订单在哪里？"}]}],
    "04.curl_load": [
        CURL.replace("-d '", "--data-binary '"),
        CURL.replace("-d '", "--data '"),
        f"curl --json {JSON_BODY} {KEY} http://127.0.0.1:$PORT/v1/load_lora_adapter",
        f"curl 127.0.0.1:$PORT/v1/load_lora_adapter {KEY} -H 'content-type: application/json' -d {JSON_BODY}",
        (f"curl -sXPOST localhost:${{PORT}}/v1/load_lora_adapter -H \"Authorization: bearer ${{VLLM_API_KEY}}\" "
         f"-H 'Content-Type: application/json' -d {JSON_BODY}"),
        (f"!curl -X POST http://127.0.0.1:$PORT/v1/load_lora_adapter {KEY} -H 'Content-Type: application/json' "
         """-d '{ "lora_name" : "json",\n  "lora_path": "/root/multi-lora-course/data/tiny/adapters/json/" }'"""),
        (f"curl http://127.0.0.1:$PORT/v1/load_lora_adapter {KEY} --json "
         """'{"lora_name": "json", "lora_path": "data/adapters/qwen7b/json", "load_inplace": false}'"""),
        CURL + " | jq .",
        CURL + "; echo"],
    "04.status": [{"no API key": "401", "adapter unloaded": "404 Not Found", "same name loaded again": 400.0,
                   "rank above --max-lora-rank": "HTTP 500"},
                  {"No API Key": 401, "Adapter Unloaded": 404, "same-name loaded again": 400,
                   "rank above max_lora_rank": 500}],
    "05.scaling": [2, "2", "2.0", "32/16", "2x", "×2"],
    "05.lora_linear": [defined(LORA_LINEAR_LOOP), defined(LORA_LINEAR_SLOTS)],
    "05.indices": [(0, 0, 0, -1, -1, 1, 0, 0), "0 0 0 -1 -1 1 0 0", "[0, 0, 0, -1, -1, 1, 0, 0]",
                   np.array([0, 0, 0, -1, -1, 1, 0, 0]), "[0，0，0，-1，-1，1，0，0]", "tensor([0, 0, 0, -1, -1, 1, 0, 0])"],
    "05.merged_disk": [60.9, "61 GB", "60.9GB", "56.7 GiB", "60,900 MB", "≈60", "0.061 TB", 60924932096, "6.09e10"],
    "07.capacity": ["4", "4 个", 4.0, "四个"],
    "07.most_loads": ["Blind", "round robin", "round-robin", "Round_Robin", "轮询", "policy=blind", " BLIND ",
                      "轮询（blind）", "blind（轮询）", "轮询路由"],
    "07.replicas_per_4090": ["1", "1 个", 1.0, "一个"],
    "08.base_score": [0, "0", "2%", 0.02, "5 %", "百分之3", "0/50"],
    "08.other": ["lower", "会更低，因为样例少了", "更低一些", "Lower!", "低很多"],
    "08.load_request": ['{"lora_name": "stamp", "lora_path": "build/lab08/stamp/"}',
                        {"lora_name": "stamp", "lora_path": "/root/multi-lora-course/build/lab08/stamp"},
                        {"lora_name": "stamp", "lora_path": "./build/lab08/stamp", "load_inplace": True}],
    "08.harder": [{"rank": 8, "steps": 400}, {"rank": "16", "steps": "800 步"}, {"Rank": 64, "Steps": 2000},
                  {"rank": 16, "steps": 400, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"]},
                  '{"rank": 32, "steps": 1000}', "rank=16, steps=400"],
}

# One other spelling per exercise as Python source, for the nbgrader submission that must score full marks
# (evaluated in the lab's namespace: Lab 01 registers sql, support, medical and jsonfmt).
OTHER_SPELLINGS_SOURCE = {
    "01.requests": "(sql, None, jsonfmt, sql)",
    "01.max_loras": '"2"',
    "01.more_steps": '"MAX_LORAS = 1"',
    "02.kv_page": '"32,768"',
    "02.lora_buffer": '"462 MiB"',
    "02.max_lora_rank": '"64"',
    "03.steps": '{"max_loras=1": 128, "max_loras=2": "64 步"}',
    "03.config": '"--max-lora-rank 64 --max-loras 3"',
    "03.lora_share": '"0.89%"',
    "03.cache_reads": '"4 次"',
    "04.request_body": repr(SPELLINGS["04.request_body"][0]),
    "04.curl_load": repr(SPELLINGS["04.curl_load"][2]),
    "04.status": repr(SPELLINGS["04.status"][0]),
    "05.scaling": '"32/16"',
    "05.lora_linear": LORA_LINEAR_LOOP,
    "05.indices": '"0 0 0 -1 -1 1 0 0"',
    "05.merged_disk": '"56.7 GiB"',
    "07.capacity": '"4 个"',
    "07.most_loads": '"round-robin"',
    "07.replicas_per_4090": "1.0",
    "08.base_score": '"2%"',
    "08.other": '"lower"',
    "08.load_request": repr(SPELLINGS["08.load_request"][0]),
    "08.harder": '{"rank": "16", "steps": "800 步"}',
}

# The same references as Python source, for the nbgrader source version of a lab (tests/nbgrader_build.py):
# evaluated in the lab's own namespace (Lab 01's cell 3 registers sql, support, medical and jsonfmt).
REFERENCE_SOURCE = {name: repr(value) for name, value in REFERENCE.items()}
REFERENCE_SOURCE["01.requests"] = "[sql, None, jsonfmt, sql]"
REFERENCE_SOURCE["05.lora_linear"] = LORA_LINEAR
# the first wrong answer of each exercise, as source (repr otherwise)
WRONG_SOURCE = {"01.requests": "sql", "05.lora_linear": LORA_LINEAR_WRONG[0][0]}

# Typical wrong answers, each with (a fragment of) the reason the check must give.
WRONG = {
    "01.requests": [(sql, "单个 LoRARequest"),
                    ([sql, None, jsonfmt], "3 项对 4 个 prompt"),
                    ([sql, sql, jsonfmt, sql], "给裸基座的普通问题"),
                    ([sql, None, LoRARequest("json", 1, "p/j"), sql], "登记时的 id 是 4"),
                    ([sql, None, LoRARequest("sql", 4, "p/s"), sql], "id 4 已经登记给 'json'"),
                    ([sql, None, support, sql], "应该用 'json'"),
                    ([sql, None, None, sql], "None 会让它由裸基座回答"),
                    (["sql", None, "json", "sql"], "字符串 'sql'"),
                    ([sql, "None", jsonfmt, sql], "Python 的 None"),
                    ("sql", "字符串 'sql' 不是 LoRARequest"),
                    ([sql, None, 4, sql], "既不是 LoRARequest 也不是 None"),
                    ([sql, "base", jsonfmt, sql], "Python 的 None"),
                    ([sql, None, "jsonfmt", sql], "那个对象 jsonfmt")],
    "01.max_loras": [(3, "基座行"), (4, "sql 占了三行"), (1, "拆开跑"), (5, "白占显存"), ("2 GiB", "要的是一个整数"),
                     (2.5, "不是整数"), (0, "至少是 1")],
    "01.more_steps": [("max_loras=4", "步数更少"), ("same", "步数变了"), ("no idea", "读不出是哪一个"),
                      ("max_loras=1 或 max_loras=4", "只选一个")],
    "02.kv_page": [("32 KiB per token", "每 token"), ("至少 32 KiB", "范围"), (16_384, "K 或 V"), (2 * 16 * 28 * 128 * 2, "全部 28 个注意力头"), (32_768 * 28, "全部 28 层"),
                   (65_536, "float32"), (32, "按 KiB 算的吧"), (262_144, "比特"),
                   (2_048, "一个 token"), ("a lot", "要的是一个 KV block 的字节数"), ("32 steps", "不是字节的单位")],
    "02.lora_buffer": [(ex.lora_buffer_answer() // 3, "一个槽位"), (ex.lora_buffer_answer() // 2, "只有一半"),
                       (ex.lora_buffer_answer() * 2, "多了一倍"), (ex.lora_buffer_answer() // 28, "这是一层的"),
                       (0, "还不对"), (426_639_360, "融合层")],
    "02.max_lora_rank": [(48, "不是 vLLM 接受的取值；允许的是"), (32, "太小"), (16, "太小"), (256, "装得下"),
                         (100, "从 1, 8, 16")],
    "03.steps": [({1: 32, 2: 32}, "凭空多出槽位"), ({1: 160, 2: 96}, "基座行不占槽位"), ({1: 512, 2: 256}, "一步让每个"),
                 ({1: 64, 2: 128}, "两项对调"), ({1: 128, 2: 64, 4: 16}, "多了键 4"), ({1: 128}, "缺了 max_loras=2"),
                 ("128, 64", "要的是一个 dict"), ({1: 128, 2: ...}, "max_loras=2 那一项还没填"),
                 ({1: 100, 2: 50}, "要轮几波")],
    "03.cache_reads": [(3, "先进先出"), (5, "按 LRU 一次一次推"), ("很多次", "要的是一个整数"), (4.5, "不是整数")],
    "03.config": [({"max_lora_rank": 32, "max_loras": 3}, "会拒绝它"),
                  ({"max_lora_rank": 256, "max_loras": 3}, "4 倍显存"),
                  ({"max_lora_rank": 64, "max_loras": 5}, "每个 adapter 一个槽位"),
                  ({"max_lora_rank": 64, "max_loras": 1}, "要等槽位空出来"),
                  ({"max_lora_rank": 48, "max_loras": 3}, "不是 vLLM 接受的取值"),
                  ({"max_lora_rank": 64, "max_loras": 3, "max_cpu_loras": 2}, "不能小于"),
                  ({"rank": 64, "max_loras": 3}, "多了键 'rank'"),
                  ({"max_lora_rank": 64}, "还缺 max_loras"),
                  ({"max_lora_rank": 64, "max_loras": 0}, "至少是 1"),
                  ({"max_lora_rank": 64, "max_loras": 1}, "有 2 个要等"),
                  ({"max_lora_rank": 64, "max_loras": 4}, "同一时刻最多有几个")],
    "03.lora_share": [(0.45, "shrink 或 expand"), (0.0089, "这是比例"), (1.79, "多了一倍"), (25, "两块窄矩阵"),
                      ("0.89 GB", "不是百分比"), (0.62, "7 个投影")],
    "04.request_body": [({"model": "tiny-qwen2", "lora": "support", "messages": ASK}, "'lora' 不是 chat completions"),
                        ("{'model': 'support', 'messages': [{'role': 'user', 'content': 'Where is my order?'}]}",
                         "Python 的写法"),
                        ('{"model": "support", "messages": [{"role": "user", "content": "Where is my order?"}],}',
                         "不加逗号"),
                        ({"model": "support", "messages": [{"role": "user", "content": "Cancel my order."}]},
                         "Where is my order?"),
                        ({"model": "support", "prompt": "Where is my order?"}, "\"prompt\" 是 /v1/completions"),
                        ({"messages": ASK}, "没有 \"model\""),
                        ("support", "合法的 JSON"),
                        ({"model": "Support", "messages": ASK}, "区分大小写"),
                        ({"model": "support", "messages": ASK, "adapter": "support"}, "'adapter' 不是"),
                        ({"model": "support", "messages": [{"role": "human", "content": "Where?"}]}, "不是聊天消息的角色"),
                        ({"model": "support", "messages": "Where is my order?"}, "messages 是一个列表"),
                        ({"model": "support", "messages": [{"role": "user", "content": "hello"}]}, "题目里用户的问题"),
                        ({"model": "support", "messages": [{"role": "user", "content": {"x": 1}}]}, "content 是一段文字"),
                        ({"model": "support", "messages": ASK, "temperature": "hot"}, "temperature="),
                        ({"model": "support", "messages": ASK, "max_tokens": -5}, "max_tokens="),
                        ({"model": "support", "messages": [{"role": ["user"], "content": "Where?"}]}, "不是聊天消息的角色"),
                        ('[{"model": "support"}]', "JSON 是列表"),
                        ({"model": ["support"], "messages": ASK}, "\"model\" 是一个字符串")],
    "04.curl_load": [
        (f"curl http://127.0.0.1:$PORT/v1/load_lora_adapter {KEY}", "GET 会被拒绝"),
        (("curl -X POST http://127.0.0.1:$PORT/v1/load_lora_adapter -H 'Content-Type: application/json' "
          f"-d {JSON_BODY}"), "服务端回 401"),
        ((f"curl -X POST http://127.0.0.1:$PORT/v1/load_lora_adapter {KEY} -H 'Content-Type: application/json' "
          """-d '{"name": "json", "path": "data/tiny/adapters/json"}'"""), "lora_name 和 lora_path"),
        (f"curl -X POST http://127.0.0.1:$PORT/v1/models {KEY} -H 'Content-Type: application/json' -d {JSON_BODY}",
         "路径是 /v1/models"),
        (f"curl -X POST http://127.0.0.1:$PORT/v1/load_lora_adapter {KEY} -d {JSON_BODY}", "Content-Type"),
        (f"curl --json {JSON_BODY} {KEY} http://127.0.0.1:$PORT/v1/load_lora_adapter/", "末尾多了一个 /"),
        ((f"curl --json '{{\"lora_name\": \"json\", \"lora_path\": \"data/tiny/adapters/sql\"}}' {KEY} "
          "http://127.0.0.1:$PORT/v1/load_lora_adapter"), "是 sql adapter 的目录"),
        ((f"curl --json '{{\"lora_name\": \"json\", \"lora_path\": \"data/tiny/adapters/json\", \"rank\": 64}}' {KEY} "
          "http://127.0.0.1:$PORT/v1/load_lora_adapter"), "'rank' 不是加载端点认识的字段"),
        (f"curl --json {JSON_BODY} {KEY} http://127.0.0.1/v1/load_lora_adapter", "没有端口"),
        (f"curl --json {JSON_BODY} {KEY} http://0.0.0.0:$PORT/v1/load_lora_adapter", "只监听 127.0.0.1"),
        (f"curl --json {JSON_BODY} {KEY} https://127.0.0.1:$PORT/v1/load_lora_adapter", "TLS"),
        (f"curl --json '{{\"lora_name\": \"json\"' {KEY} http://127.0.0.1:$PORT/v1/load_lora_adapter", "读不成 JSON"),
        ((f"curl --json '{{\"lora_name\": \"json\", \"lora_path\": \"data/tiny/adapters/json/adapter_model.safetensors\"}}' "
          f"{KEY} http://127.0.0.1:$PORT/v1/load_lora_adapter"), "指向的是文件"),
        ((f"curl --json '{{\"lora_name\": \"sql\", \"lora_path\": \"data/tiny/adapters/json\"}}' {KEY} "
          "http://127.0.0.1:$PORT/v1/load_lora_adapter"), "lora_name 是 'sql'"),
        (f"curl --json {JSON_BODY[:-3]} {KEY} http://127.0.0.1:$PORT/v1/load_lora_adapter", "引号"),
        ("wget http://127.0.0.1:$PORT/v1/load_lora_adapter", "以 curl 开头"),
        (f"curl -X POST {KEY} -H 'Content-Type: application/json' http://127.0.0.1:$PORT/v1/load_lora_adapter",
         "没有 body"),
        (CURL.replace('"Authorization: Bearer $VLLM_API_KEY"', "'Authorization: Bearer $VLLM_API_KEY'"), "不会被 shell 展开"),
        (CURL.replace("http://127.0.0.1:$PORT/v1/load_lora_adapter", "'http://127.0.0.1:$PORT/v1/load_lora_adapter'"),
         "不会被 shell 展开"),
        (CURL.replace(":$PORT", ":PORT"), "前面少了 $"), (CURL.replace(":$PORT", ":8000"), "端口写成了 8000"),
        (CURL.replace("Bearer $VLLM_API_KEY", "Bearer VLLM_API_KEY"), "前面少了 $"),
        (CURL.replace("Bearer $VLLM_API_KEY", "Bearer sk-123"), "key 写成了 'sk-123'"),
        (CURL.replace('"data/tiny/adapters/json"', '["data/tiny/adapters/json"]'), "lora_path 是一个字符串"),
        (CURL.replace("data/tiny/adapters/json", "/etc/jsonfmt"), "最后一级是 'jsonfmt'"),
        (CURL.replace("data/tiny/adapters/json", "data/tiny/adapters/json_old_sql"), "是 sql adapter 的目录"),
        (CURL.replace("application/json", "text/plain; note=json"), "Content-Type"),
        (CURL.replace("-X POST", "-I"), "HEAD 会被拒绝"), (CURL.replace("-X POST", "-G"), "GET 会被拒绝"),
        (CURL.replace("-d '", "-d ").replace("}'", "}"), "没有用单引号"),
        (CURL + " -d '{}'", "有好几个 -d"), (CURL.split("-d '")[0] + "-d @body.json", "从文件读"),
        (CURL.replace("-d '", "--data-urlencode '"), "URL 编码"),
        (CURL.replace('"lora_path": "data/tiny/adapters/json"', '"lora_path": ""'), "缺 lora_path")],
    "04.status": [({"no API key": 401, "adapter unloaded": 404, "same name loaded again": 400,
                    "rank above --max-lora-rank": 400}, "以 500 返回"),
                  ({"no API key": 403, "adapter unloaded": 404, "same name loaded again": 400,
                    "rank above --max-lora-rank": 500}, "401 Unauthorized"),
                  ({"no API key": 401, "adapter unloaded": 400}, "还有 2 项没填"),
                  ({**REFERENCE["04.status"], "wrong key": 401}, "多了键 'wrong key'"),
                  ({**REFERENCE["04.status"], "no API key": "unauthorized"}, "读不出一个状态码"),
                  ({**REFERENCE["04.status"], "no API key": "401 or 403"}, "只写一个"),
                  ({**REFERENCE["04.status"], "no API key": 401.5}, "只写一个"),
                  ({**REFERENCE["04.status"], "rank above --max-lora-rank": 422}, "你写的是 422")],
    "05.scaling": [(1.0, "层里传的"), (0.5, "r / alpha"), (32, "两个数中的一个"), ("2 GB", "要的是一个数"),
                   (3, "缩放系数")],
    "05.lora_linear": [(defined(src), why) for src, why in LORA_LINEAR_WRONG],
    "05.indices": [([0, -1, 1, 0], "每行一项"), ([1, 1, 1, -1, -1, 4, 1, 1], "LoRA id"),
                   ([0, 0, 0, 0, 0, 1, 0, 0], "槽位 0 是 sql"), ([0, 0, 0, -1, 1, 0], "6 项对 8 个 token"),
                   ([0, 0, 0, -1, -1, 1, 0, 0.5], "不是整数"), ("zero zero", "读不出整数列表"),
                   ([0, 0, 0, -1, -1, 1, 1, 1], "每一个 token"), ([1, 1, 1, 0, 0, 2, 1, 1], "从 0 开始编号"),
                   ([[0, 0, 0], [-1, -1], [1], [0, 0]], "接成一个列表"),
                   ([0, 0, 0, -1, -1, 1, 0, 10 ** 400], "不是整数")],
    "05.merged_disk": [(15.2, "一个模型"), (122, "float32"), (15.55, "运行时 LoRA"), ("big", "要的是一个数"),
                       ("61 steps", "不是磁盘大小的单位"), (30, "完整的模型权重"), (56, "70 亿参数"), (56.7, "按 GiB 算的吧"),
                       (14.2, "按 GiB 算的")],
    "07.capacity": [(2, "一个副本"), (8, "货架上有 8 个"), (16, "互不共享")],
    "07.most_loads": [("aware", "Ray 默认优先"), ("hash", "负载不均"), ("all the same", "读不出是哪一种路由"),
                      ("轮询或哈希", "只选一个")],
    "07.replicas_per_4090": [(2, "两份"), (0, "qwen7b 配置"), (3, "再和卡的显存比"), (True, "要的是一个整数")],
    "08.base_score": [("80%", "格式"), (50, "格式"), ("20%", "还是高了"), (10, "还是高了"), (150, "不在 0–100%"),
                      ("很低", "要的是一个百分数")],
    "08.other": [("更高", "量到的是更低"), ("差不多", "量到的是更低"), ("高还是低说不准", "读不出"), (0.16, "读不出")],
    "08.load_request": [({"name": "stamp", "path": "build/lab08/stamp"}, "lora_name 和 lora_path"),
                        ({"lora_name": "stamp", "lora_path": "data/build/lab08/stamp"}, "build/lab08/stamp"),
                        ({"lora_name": "stamp", "lora_path": "../build/lab08/stamp"}, "build/lab08/stamp"),
                        ("{'lora_name': 'stamp', 'lora_path': 'build/lab08/stamp'}", "Python 的写法"),
                        ({"lora_name": "stamp", "lora_path": "data/tiny/adapters/stamp"}, "build/lab08/stamp"),
                        ({"lora_name": "json", "lora_path": "build/lab08/stamp"}, "叫 \"stamp\""),
                        ({"lora_name": "stamp", "lora_path": "build/lab08/stamp/adapter_model.safetensors"}, "指向的是文件"),
                        ({"lora_name": "stamp"}, "缺 lora_path"),
                        ({"lora_name": "stamp", "lora_path": "lab08/stamp"}, "训练把 adapter 写到了 build/lab08"),
                        ({"lora_name": "stamp", "lora_path": "build/lab08/stamp", "rank": 8}, "不是加载端点认识的字段")],
    "08.harder": [({"rank": 128, "steps": 400}, "超过了服务的 --max-lora-rank"), ({"rank": 4, "steps": 400}, "还低"),
                  ({"rank": 16, "steps": 300}, "不到"), ({"rank": 16, "steps": 5000}, "上限"),
                  ({"rank": 16}, "两个键"), ({"rank": 16, "steps": 400, "lr": 1e-3}, "两个键"), ([16, 400], "要的是一个 dict"),
                  ({"rank": 16.5, "steps": 400}, "不是整数")],
}

# 08.other is judged against what Lab 08 measured (its two learning curves' last points, registered by the lab's
# cell with cu.exercises.measured); tests stand in for that cell with the recorded outcome: 40 examples 60%,
# 10 examples 16% (data/recordings/tiny/08_your_adapter.json, 2026-12-07).
# 03.cache_reads likewise: Lab 03's recorded host cache (max_cpu_loras=2) read 4 of its 5 requests from disk.
LAB03_MEASURED = {"reads": 4, "max_cpu_loras": 2, "order": ["sql", "support", "sql", "medical", "support"],
                  "held": [False, False, True, False, False]}
LAB08_MEASURED = {"knobs": 0.60, "other": 0.16, "other_setting": "10 个样例，秩 8", "knobs_setting": "40 个样例，秩 8"}

# Answers of the wrong kind: every exercise gives a hint (in Chinese) and never raises.
MALFORMED = [True, False, object(), {"unexpected": 1}, ["a", {"b": 2}], float("nan"), float("inf"), b"bytes",
             {1, 2}, -1, "🙂", 1e308, [None], {"a": ...}, lambda: 1, "[", "{", "curl", "1/0", 10 ** 400]
BLANKS = [..., None, "", "   ", {"a": ..., "b": ...}, [..., ...]]
