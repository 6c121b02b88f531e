"""Exercises: the student writes an answer in a cell, the next cell checks it and says why.

A lab's exercise cell (tagged ``exercise``) leaves a blank for the student (``answer = ...``); its
check cell (tagged ``exercise-check``) calls :func:`check`, which prints what is right or wrong
and why. A blank answer prints what to do and never fails the notebook, so a lab runs top to bottom
before anyone has answered; every check works in read mode (it needs no engine).

The right answers are computed here from the same models the lessons use (the memory model, the
configs, vLLM's allowed ranks), never typed in; ``tests/exercise_solutions.py`` keeps the reference
answers and the typical wrong ones apart from the student's view and proves each check with them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from . import memory
from .arch import MAX_LORA_RANKS, smallest_rank_that_fits

QWEN = "qwen2.5-7b-instruct"


@dataclass(frozen=True)
class Exercise:
    name: str
    task: str                                     # what to answer, in one line (shown when blank)
    judge: Callable[[Any], tuple[bool, str]]      # answer -> (right?, why)


def _number(answer) -> float | None:
    try:
        return float(answer)
    except (TypeError, ValueError):
        return None


# --- Lab 01 --------------------------------------------------------------------------------------

# The batch of exercise 01.requests: (adapter name or None, user text); Lab 01 registers the adapters
# as LoRARequest("sql", 1, ...), ("support", 2, ...), ("medical", 3, ...), ("json", 4, ...).
LAB01_IDS = {"sql": 1, "support": 2, "medical": 3, "json": 4}
LAB01_BATCH = ["sql", None, "json", "sql"]


def _req(r):
    """(name, id) of a LoRARequest (the real one or read mode's stand-in), None for None."""
    return None if r is None else (getattr(r, "lora_name", None), getattr(r, "lora_int_id", None))


def _judge_requests(answer):
    want = [None if a is None else (a, LAB01_IDS[a]) for a in LAB01_BATCH]
    if not isinstance(answer, (list, tuple)):
        return False, ("a single LoRARequest is applied to every prompt (pitfall 2): pass a list with one entry "
                       "per prompt, None where a row uses no adapter.")
    if len(answer) != len(want):
        return False, f"{len(answer)} entries for {len(want)} prompts: one entry per prompt, in order."
    got = [_req(r) for r in answer]
    for i, (g, w) in enumerate(zip(got, want)):
        if g == w:
            continue
        if w is None:
            return False, f"row {i} asks the base: its entry is None, not an adapter."
        if g is not None and g[1] == w[1] and g[0] != w[0]:
            return False, f"row {i}: id {g[1]} belongs to {w[0]!r}; the same id under another name still loads {w[0]!r}."
        if g is not None and g[0] == w[0]:
            return False, (f"row {i}: {w[0]!r} is registered with id {w[1]}, not {g[1]}: one adapter, one id, "
                           f"everywhere (pitfall 1).")
        return False, f"row {i} should use {w[0] if w else None!r}, got {g[0] if g else None!r}."
    return True, "right: one entry per prompt, the same LoRARequest object for both sql rows, None for the base row."


LAB01_MAX_LORAS_BATCH = ["sql", "sql", "sql", None, "medical"]


def _judge_max_loras(answer):
    batch = LAB01_MAX_LORAS_BATCH
    got, want = _number(answer), len({a for a in batch if a})
    if got == want:
        return True, f"right: {want} distinct adapters (the base row needs no slot), so max_loras={want} runs them in one step."
    if got == want + 1:
        return False, "the base row (None) needs no LoRA slot: count distinct adapters only."
    if got == sum(a is not None for a in batch):
        return False, "sql fills three rows but is one adapter in one slot: count distinct adapters, not rows."
    if got is not None and 0 < got < want:
        return False, (f"it would not fail, but the batch would be split over steps (at most {int(got)} adapter(s) per "
                       f"step): the answers stay the same and the engine takes more steps.")
    return False, f"not {answer}: count the distinct adapters in the batch."


def _judge_steps(answer):
    text = str(answer).replace(" ", "").lower()
    if text in ("max_loras=1", "1"):
        return True, ("right: with one slot the scheduler lets one adapter's rows run per step and queues the "
                      "others, so the same batch needs more steps; the answers do not change.")
    if text in ("max_loras=4", "4"):
        return False, "more slots let several adapters share a step, so max_loras=4 needs fewer steps, not more."
    if text in ("same", "equal", "相同", "一样"):
        return False, "the answers are the same, but the number of steps is not: one slot serializes the adapters."
    return False, 'answer "max_loras=1", "max_loras=4" or "same".'


# --- Lab 02 --------------------------------------------------------------------------------------

def kv_page_answer() -> int:
    """Bytes of one 16-token KV block of one layer of Qwen2.5-7B in bf16."""
    return memory.kv_page_bytes(QWEN, 16, "bfloat16")


def _judge_kv_page(answer):
    want, a = kv_page_answer(), memory.arch(memory.load_config(QWEN))
    got = _number(answer)
    if got == want:
        return True, f"right: 2 (K and V) x 16 tokens x {a.kv_heads} KV heads x {a.head_dim} x 2 bytes = {want:,}."
    if got == want / 2:
        return False, "that is K or V alone: a block stores both, so multiply by 2."
    if got == 2 * 16 * a.heads * a.head_dim * 2:
        return False, (f"that counts all {a.heads} attention heads; Qwen2.5-7B uses grouped-query attention "
                       f"with {a.kv_heads} KV heads, and only those are cached.")
    if got == want * a.layers:
        return False, f"that is one block over all {a.layers} layers; the question asks for one layer."
    return False, f"not {answer}: count 2 (K and V) x block size x KV heads x head_dim x bytes per bf16 value."


def lora_buffer_answer() -> int:
    """vLLM's LoRA buffer bytes for Qwen2.5-7B, max_loras=3, max_lora_rank=32, bf16 (adapters of rank 16)."""
    return memory.lora_buffer_bytes(QWEN, 3, 32, "bfloat16")


def _judge_lora_buffer(answer):
    want, got = lora_buffer_answer(), _number(answer)
    if got == want:
        return True, (f"right: {want:,} bytes ({want / memory.GiB:.2f} GiB). The slots are reserved for "
                      f"max_loras x max_lora_rank, whatever the adapters' real ranks are.")
    if got == want / 3:
        return False, "that is one slot: vLLM reserves all max_loras=3 of them at start."
    if got == want / 2:
        return False, ("that is half: the slots are sized by max_lora_rank (32), not by the adapters' rank (16), "
                       "and a bf16 value takes 2 bytes.")
    return False, (f"not {answer}: sum over the wrapped layers of max_loras x max_lora_rank x (d_in + d_out) "
                   f"x 2 bytes (memory.lora_buffer_bytes does exactly this; try it on a smaller case first).")


SHELF = {"sql": 16, "support": 8, "medical": 48}


def _judge_rank(answer):
    want, got = smallest_rank_that_fits(max(SHELF.values())), _number(answer)
    if got == want:
        return True, f"right: the largest rank on the shelf is {max(SHELF.values())}, and {want} is the smallest allowed value that holds it."
    if got == max(SHELF.values()):
        return False, f"{int(got)} is not a value vLLM accepts; it allows {', '.join(map(str, MAX_LORA_RANKS))}."
    if got is not None and got < max(SHELF.values()):
        return False, f"too small: the medical adapter (rank {max(SHELF.values())}) would be refused."
    if got is not None and got > want:
        return False, f"it fits, but every slot reserves {int(got)} ranks: {int(got) // want}x the memory of {want}, taken from the KV cache."
    return False, f"not {answer}: pick from {', '.join(map(str, MAX_LORA_RANKS))}."


# --- Lab 03 --------------------------------------------------------------------------------------

# Lab 03's mixed batch: 4 adapters x 4 requests + 4 base requests, each generating exactly 32 tokens.
LAB03_ADAPTERS, LAB03_TOKENS = 4, 32


def steps_answer() -> dict:
    """Engine steps of Lab 03's batch for max_loras=1 and 2: the adapters run in ceil(4 / max_loras) waves."""
    return {k: -(-LAB03_ADAPTERS // k) * LAB03_TOKENS for k in (1, 2)}


def _judge_steps_03(answer):
    want = steps_answer()
    if not isinstance(answer, dict) or set(answer) != set(want):
        return False, ("answer a dict with one entry per setting: "
                       "{1: steps with max_loras=1, 2: steps with max_loras=2}.")
    got = {k: _number(v) for k, v in answer.items()}
    if got == want:
        return True, (f"right: {LAB03_ADAPTERS} adapters in waves of max_loras, each wave {LAB03_TOKENS} steps "
                      f"(one token per request per step); the base rows ride along in every wave.")
    if all(v == LAB03_TOKENS for v in got.values()):
        return False, ("the scheduler does not add slots: with fewer slots than adapters the other adapters' rows "
                       "wait, so the batch takes more steps.")
    if got == {k: (v // LAB03_TOKENS + 1) * LAB03_TOKENS for k, v in want.items()}:
        return False, "the base rows need no slot: they run in every step with whichever adapter is running."
    if got == {1: LAB03_ADAPTERS * 4 * LAB03_TOKENS, 2: LAB03_ADAPTERS * 2 * LAB03_TOKENS}:
        return False, ("one step advances every running request by one token, not one request: the rows of the "
                       "adapters that hold a slot all run together.")
    return False, (f"not {answer}: count the waves (adapters / max_loras, rounded up) and multiply by the "
                   f"{LAB03_TOKENS} tokens each request generates.")


LAB03_SHELF = {"faq": 8, "sql": 16, "contracts": 32, "triage": 16, "codegen": 64}
LAB03_IN_FLIGHT = 3   # at most this many different adapters have requests in flight at the same moment


def _judge_config(answer):
    rank_want = smallest_rank_that_fits(max(LAB03_SHELF.values()))
    if not isinstance(answer, dict) or not {"max_lora_rank", "max_loras"} <= set(answer):
        return False, 'answer a dict: {"max_lora_rank": ..., "max_loras": ...}.'
    rank, slots = _number(answer["max_lora_rank"]), _number(answer["max_loras"])
    if rank is None or rank not in MAX_LORA_RANKS:
        return False, f"max_lora_rank={answer['max_lora_rank']!r} is not a value vLLM accepts ({MAX_LORA_RANKS})."
    if rank < rank_want:
        return False, f"codegen has rank {max(LAB03_SHELF.values())}: max_lora_rank={int(rank)} refuses it."
    if rank > rank_want:
        return False, (f"every slot is reserved at max_lora_rank: {int(rank)} takes {int(rank) // rank_want}x the "
                       f"memory of {rank_want}, paid from the KV cache, for no adapter that needs it.")
    if slots == LAB03_IN_FLIGHT:
        return True, (f"right: max_lora_rank={rank_want} holds the largest adapter, and max_loras={LAB03_IN_FLIGHT} "
                      f"covers the adapters in flight at once; the others wait on the host (max_cpu_loras) "
                      f"until they are asked for.")
    if slots == len(LAB03_SHELF):
        return False, (f"a slot per shelf adapter reserves memory for {len(LAB03_SHELF) - LAB03_IN_FLIGHT} adapters "
                       f"that are never in flight at the same time; slots follow the traffic, the host cache "
                       f"(max_cpu_loras) holds the shelf.")
    if slots is not None and slots < LAB03_IN_FLIGHT:
        return False, (f"with {int(slots)} slot(s), the third adapter's requests wait for a free slot: no error, "
                       f"just more steps (Lab 03 section 3).")
    return False, f"max_loras={answer['max_loras']!r}: how many different adapters are in flight at once?"


def lora_share_answer() -> float:
    """LoRA's extra FLOPs on Qwen2.5-7B's q_proj at rank 16, in percent of the projection's own."""
    a = memory.arch(memory.load_config(QWEN))
    d_in, d_out, r = a.hidden, a.heads * a.head_dim, 16
    return 100 * r * (d_in + d_out) / (d_in * d_out)


def _close(got, want, rel=0.02) -> bool:
    return got is not None and abs(got - want) <= rel * abs(want)


def _judge_lora_share(answer):
    want, got = lora_share_answer(), _number(answer)
    if _close(got, want):
        return True, (f"right: r·(d_in + d_out) / (d_in·d_out) = {want:.2f}%: the shrink (r·d_in) and the "
                      f"expand (r·d_out) next to the d_in·d_out of the projection.")
    if _close(got, want / 2):
        return False, "that counts the shrink or the expand alone: LoRA adds both A (r x d_in) and B (d_out x r)."
    if _close(got, want / 100):
        return False, "that is the fraction; the question asks for percent (multiply by 100)."
    return False, f"not {answer}: compare r·(d_in + d_out) with d_in·d_out for q_proj (3584 -> 3584)."


# --- Lab 04 --------------------------------------------------------------------------------------

def _judge_request_body(answer):
    if not isinstance(answer, dict):
        return False, "answer the JSON body as a Python dict, e.g. {\"model\": ..., \"messages\": [...]}."
    model, msgs = answer.get("model"), answer.get("messages")
    if model is None:
        return False, "no \"model\" field: the server picks the adapter (or the base) by it, and it is required."
    if model != "support":
        extra = [k for k in answer if k not in ("model", "messages", "max_tokens", "temperature")]
        hint = (f" (the field {extra[0]!r} is not how vLLM picks an adapter)" if extra else "")
        return False, (f"\"model\": {model!r} asks for that model; a served adapter is a model of its own: write "
                       f"its name, \"support\", in \"model\"{hint}.")
    if "prompt" in answer and msgs is None:
        return False, "/v1/chat/completions takes \"messages\"; \"prompt\" is /v1/completions' raw text."
    if (not isinstance(msgs, list) or not msgs or not all(isinstance(m, dict) for m in msgs)
            or msgs[-1].get("role") != "user" or not str(msgs[-1].get("content", "")).strip()):
        return False, 'messages: a list of {"role": ..., "content": ...}, the last one {"role": "user", ...}.'
    return True, ("right: the adapter's name goes in \"model\"; the server applies the chat template to the "
                  "messages and runs the request with the support adapter.")


def _curl_parts(command: str) -> dict:
    import shlex

    words = shlex.split(command.replace("\\\n", " "))
    parts = {"method": None, "headers": {}, "data": None, "url": None}
    it = iter(words[1:] if words and words[0] == "curl" else words)
    for w in it:
        if w in ("-X", "--request"):
            parts["method"] = next(it, "").upper()
        elif w in ("-H", "--header"):
            k, _, v = next(it, "").partition(":")
            parts["headers"][k.strip().lower()] = v.strip()
        elif w in ("-d", "--data", "--data-raw", "--json"):
            parts["data"] = next(it, "")
            if w == "--json":
                parts["headers"].setdefault("content-type", "application/json")
        elif w.startswith("http"):
            parts["url"] = w
    parts["method"] = parts["method"] or ("POST" if parts["data"] is not None else "GET")
    return parts


def _judge_curl_load(answer):
    import json
    from urllib.parse import urlparse

    if not isinstance(answer, str) or "curl" not in answer:
        return False, "answer the curl command as a string (start it with curl)."
    try:
        c = _curl_parts(answer)
    except ValueError as e:
        return False, f"the shell cannot split this command ({e}): check the quotes."
    url = urlparse(c["url"] or "")
    if url.path.rstrip("/") != "/v1/load_lora_adapter":
        return False, f"the URL's path is {url.path or 'missing'}; runtime loading is POST /v1/load_lora_adapter."
    if url.hostname not in ("127.0.0.1", "localhost"):
        return False, "the lab's server listens on 127.0.0.1 only: http://127.0.0.1:$PORT/..."
    if c["method"] != "POST":
        return False, f"{c['method']} is refused: the load endpoint takes POST with a JSON body (-d '...')."
    if not c["headers"].get("authorization", "").startswith("Bearer "):
        return False, "no Authorization: Bearer $VLLM_API_KEY header: the server answers 401 without the key."
    if "json" not in c["headers"].get("content-type", ""):
        return False, "add -H \"Content-Type: application/json\": without it curl sends form data, not JSON."
    try:
        body = json.loads(c["data"] or "")
    except ValueError:
        return False, "the -d body is not valid JSON (mind the quotes: single quotes around, double inside)."
    if "name" in body or "path" in body:
        return False, "the fields are lora_name and lora_path (name/path are the CLI's name=path form)."
    if body.get("lora_name") != "json":
        return False, f"lora_name is {body.get('lora_name')!r}; the adapter to load is \"json\"."
    if not str(body.get("lora_path", "")).strip():
        return False, "lora_path is missing: the server loads the adapter from that folder."
    return True, ("right: POST /v1/load_lora_adapter with the key and {\"lora_name\", \"lora_path\"}; afterwards "
                  "\"json\" is a model of its own in /v1/models.")


# What vLLM 0.26.0 answers (the lab's recording shows the same; tests/test_exercises.py checks it
# against the recorded exchanges): the key check (401) is FastAPI middleware; an unknown model is
# 404 (entrypoints/openai/models/serving.py); a name loaded twice is a 400 from the same handler; a rank
# above --max-lora-rank is raised in the worker and surfaces as 500.
LAB04_STATUS = {"no API key": 401, "adapter unloaded": 404, "same name loaded again": 400,
                "rank above --max-lora-rank": 500}


def _judge_status(answer):
    if not isinstance(answer, dict) or set(answer) != set(LAB04_STATUS):
        return False, f"answer a dict with the four cases as keys: {list(LAB04_STATUS)}."
    wrong = {k: v for k, v in answer.items() if _number(v) != LAB04_STATUS[k]}
    if not wrong:
        return True, ("right: 401 (no key), 404 (no such model), 400 (the request itself is wrong), and 500 for the "
                      "rank, because that check fails inside the worker: read the message, not only the code.")
    why = {"no API key": "without the key the server answers 401 Unauthorized before it looks at the request",
           "adapter unloaded": "an unloaded adapter is no longer a model: 404, like any unknown model name",
           "same name loaded again": "a duplicate name is the client's mistake, and the handler says so with 400",
           "rank above --max-lora-rank": "the rank check fails in the worker and comes back as 500, not 400"}
    return False, "; ".join(why[k] for k in wrong) + "."


# --- Lab 05 --------------------------------------------------------------------------------------

LAB05_ADAPTER = {"r": 16, "lora_alpha": 32}


def _judge_scaling(answer):
    want, got = LAB05_ADAPTER["lora_alpha"] / LAB05_ADAPTER["r"], _number(answer)
    if got == want:
        return True, (f"right: alpha / r = {LAB05_ADAPTER['lora_alpha']} / {LAB05_ADAPTER['r']} = {want:g}; "
                      f"vLLM multiplies B by it once, when the adapter is loaded.")
    if got == 1:
        return False, "1.0 is what the layer passes, because the factor was already folded into B at load time."
    if got == 1 / want:
        return False, "that is r / alpha; the scaling is alpha / r."
    if got in (LAB05_ADAPTER["r"], LAB05_ADAPTER["lora_alpha"]):
        return False, "one of the two alone; the scaling is the ratio alpha / r."
    return False, f"not {answer}: divide lora_alpha by r."


# Lab 05's token-index exercise: rows of a batch as (adapter or None, tokens in this step), the slots
# the adapters sit in, and the LoRA ids they were registered with (ids are not slots).
LAB05_ROWS = [("sql", 3), (None, 2), ("json", 1), ("sql", 2)]
LAB05_SLOTS = {"sql": 0, "json": 1}
LAB05_IDS = {"sql": 1, "json": 4}


def indices_answer() -> list[int]:
    return [LAB05_SLOTS[a] if a else -1 for a, n in LAB05_ROWS for _ in range(n)]


def _judge_indices(answer):
    want = indices_answer()
    if not isinstance(answer, (list, tuple)):
        return False, "answer a list of integers, one per token."
    got = [_number(x) for x in answer]
    if got == want:
        return True, ("right: one slot index per token (-1 for the base rows); the shrink and expand kernels "
                      "group by it.")
    if got == [LAB05_SLOTS[a] if a else -1 for a, _ in LAB05_ROWS]:
        return False, f"one entry per row; the kernels need one per token ({sum(n for _, n in LAB05_ROWS)} tokens)."
    if got == [LAB05_IDS[a] if a else -1 for a, n in LAB05_ROWS for _ in range(n)]:
        return False, "those are the LoRA ids; the kernels index the stacked buffers by slot."
    if got == [LAB05_SLOTS[a] if a else 0 for a, n in LAB05_ROWS for _ in range(n)]:
        return False, "slot 0 belongs to sql: a base token must point at no slot (-1), or it gets sql's delta."
    if len(got) != len(want):
        return False, f"{len(got)} entries for {len(want)} tokens: one entry per token, rows in order."
    return False, f"not {answer}: for each row, repeat its adapter's slot (-1 for none) once per token."


def merged_disk_answer(n: int = 4) -> float:
    """GB on disk for n merged Qwen2.5-7B-Instruct models (bf16): one full checkpoint per adapter."""
    return memory.full_finetunes_vs_adapters(QWEN, n=n, rank=16)["full_copies"] / 1e9


def _judge_merged_disk(answer):
    cost = memory.full_finetunes_vs_adapters(QWEN, n=4, rank=16)
    want, got = cost["full_copies"] / 1e9, _number(answer)
    if _close(got, want, 0.05):
        return True, (f"right: about {want:.0f} GB, four full checkpoints of {cost['base'] / 1e9:.1f} GB; runtime LoRA "
                      f"keeps one base plus four adapters, {cost['base_plus_adapters'] / 1e9:.1f} GB.")
    if _close(got, cost["base"] / 1e9, 0.05):
        return False, "that is one model: a merged model knows one adapter, so four adapters are four models."
    if _close(got, 2 * want, 0.05):
        return False, "that is float32 (4 bytes per weight); the checkpoints are bf16, 2 bytes."
    if _close(got, cost["base_plus_adapters"] / 1e9, 0.05):
        return False, "that is runtime LoRA (one base + four adapters); merged means one full model per adapter."
    return False, f"not {answer}: weights of Qwen2.5-7B-Instruct in bf16 (7.6 B parameters x 2 bytes), four times."


# --- Lab 07 --------------------------------------------------------------------------------------

LAB07_CLUSTER = {"replicas": 2, "max_num_adapters_per_replica": 2, "adapters on the shelf": 8}


def _judge_most_loads(answer):
    text = str(answer).strip().lower().replace(" ", "").replace("_", "")
    if text in ("blind", "roundrobin", "轮询", "policy=blind"):
        return True, ("right: round robin sends every adapter to every replica in turn, so each replica meets all "
                      "8 adapters with room for 2 and its cache changes on nearly every request.")
    if text in ("aware", "ray", "default", "ray默认"):
        return False, "Ray's default prefers a replica that already holds the adapter: that is what saves loads."
    if text in ("hash", "statichash", "哈希"):
        return False, ("the hash pins each adapter to one replica, so a replica meets only about half of the "
                       "adapters: fewer loads, at the price of uneven load.")
    return False, 'answer "aware", "blind" or "hash".'


def _judge_capacity(answer):
    c = LAB07_CLUSTER
    want, got = c["replicas"] * c["max_num_adapters_per_replica"], _number(answer)
    if got == want:
        return True, (f"right: {c['replicas']} replicas x {c['max_num_adapters_per_replica']} = {want}; the other "
                      f"{c['adapters on the shelf'] - want} adapters of the shelf are loaded only when asked for.")
    if got == c["max_num_adapters_per_replica"]:
        return False, "that is one replica; every replica keeps its own adapters."
    if got == c["adapters on the shelf"]:
        return False, "the shelf has 8, but each replica keeps at most 2 at a time."
    return False, f"not {answer}: multiply the replicas by max_num_adapters_per_replica."


def replicas_per_4090_answer() -> int:
    """bf16 Qwen2.5-7B-Instruct replicas whose weights alone fit in the memory CUDA reports for a 4090."""
    return memory.RTX_4090_BYTES // memory.weight_bytes(memory.load_config(QWEN), "bfloat16").total


def _judge_replicas_per_4090(answer):
    want, got = replicas_per_4090_answer(), _number(answer)
    weights = memory.weight_bytes(memory.load_config(QWEN), "bfloat16").total / 1e9
    if got == want:
        return True, (f"right: the weights alone are {weights:.1f} GB of the card's {memory.RTX_4090_BYTES / 1e9:.1f} "
                      f"GB, and a replica needs a KV cache besides: one replica per card.")
    if got == 2:
        return False, f"two copies of {weights:.1f} GB of weights are more than the card's {memory.RTX_4090_BYTES / 1e9:.1f} GB."
    if got == 0:
        return False, "one replica does fit: the course runs one on a 4090 in Labs 01-05."
    return False, f"not {answer}: divide the card's memory by the bf16 weights of the 7B model, and round down."


EXERCISES = {e.name: e for e in [
    Exercise("01.requests", "a list of LoRARequest / None, one per prompt of the batch above", _judge_requests),
    Exercise("01.max_loras", "the smallest max_loras that runs the batch above in one step (an integer)",
             _judge_max_loras),
    Exercise("01.more_steps", 'your prediction: "max_loras=1", "max_loras=4" or "same"', _judge_steps),
    Exercise("02.kv_page", "bytes of one 16-token KV block of one layer, Qwen2.5-7B, bf16 (an integer)", _judge_kv_page),
    Exercise("02.lora_buffer", "vLLM's LoRA buffer bytes, Qwen2.5-7B, max_loras=3, max_lora_rank=32, bf16 "
             "(the adapters are rank 16)", _judge_lora_buffer),
    Exercise("02.max_lora_rank", f"the max_lora_rank for the shelf {SHELF}", _judge_rank),
    Exercise("03.steps", "your prediction, a dict {1: steps with max_loras=1, 2: steps with max_loras=2}",
             _judge_steps_03),
    Exercise("03.config", f'a dict {{"max_lora_rank": ..., "max_loras": ...}} for the shelf {LAB03_SHELF}, '
             f"with at most {LAB03_IN_FLIGHT} adapters in flight at once", _judge_config),
    Exercise("03.lora_share", "LoRA's extra FLOPs on Qwen2.5-7B's q_proj at rank 16, in percent (a number)",
             _judge_lora_share),
    Exercise("04.request_body", "the JSON body (a dict) of a /v1/chat/completions request for the support adapter",
             _judge_request_body),
    Exercise("04.curl_load", "a curl command (a string) that loads the json adapter at runtime", _judge_curl_load),
    Exercise("04.status", f"your predictions, a dict of status codes for {list(LAB04_STATUS)}", _judge_status),
    Exercise("05.scaling", f"the factor vLLM folds into B for an adapter with {LAB05_ADAPTER} (a number)",
             _judge_scaling),
    Exercise("05.indices", "the per-token slot index list for the batch above (a list of integers)", _judge_indices),
    Exercise("05.merged_disk", "GB on disk for four merged Qwen2.5-7B-Instruct models in bf16 (a number)",
             _judge_merged_disk),
    Exercise("07.capacity", "how many different adapters the two replicas above can hold at once (an integer)",
             _judge_capacity),
    Exercise("07.most_loads", 'your prediction: which policy loads adapters most often, "aware", "blind" or "hash"',
             _judge_most_loads),
    Exercise("07.replicas_per_4090", "bf16 Qwen2.5-7B replicas whose weights fit on one 4090 (an integer)",
             _judge_replicas_per_4090),
]}


def judge(name: str, answer) -> tuple[bool | None, str]:
    """(right?, why) for ``answer``; (None, what to do) while it is blank (``...``, None, or a dict of ``...``)."""
    ex = EXERCISES[name]
    if answer is ... or answer is None or (isinstance(answer, dict) and all(v is ... for v in answer.values())):
        return None, f"not answered yet: replace ... with {ex.task}, then run this cell again."
    return ex.judge(answer)


def check(name: str, answer) -> bool | None:
    """Print whether ``answer`` is right and why (never raises for a blank or wrong answer)."""
    ok, why = judge(name, answer)
    mark = "…" if ok is None else ("✓" if ok else "✗")
    print(f"{mark} {name}: {why}")
    return ok
