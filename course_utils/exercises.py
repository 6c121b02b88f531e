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


EXERCISES = {e.name: e for e in [
    Exercise("01.requests", "a list of LoRARequest / None, one per prompt of the batch above", _judge_requests),
    Exercise("01.max_loras", "the smallest max_loras that runs the batch above in one step (an integer)",
             _judge_max_loras),
    Exercise("01.more_steps", 'your prediction: "max_loras=1", "max_loras=4" or "same"', _judge_steps),
    Exercise("02.kv_page", "bytes of one 16-token KV block of one layer, Qwen2.5-7B, bf16 (an integer)", _judge_kv_page),
    Exercise("02.lora_buffer", "vLLM's LoRA buffer bytes, Qwen2.5-7B, max_loras=3, max_lora_rank=32, bf16 "
             "(the adapters are rank 16)", _judge_lora_buffer),
    Exercise("02.max_lora_rank", f"the max_lora_rank for the shelf {SHELF}", _judge_rank),
]}


def judge(name: str, answer) -> tuple[bool | None, str]:
    """(right?, why) for ``answer``; (None, what to do) while it is blank (``...`` or None)."""
    ex = EXERCISES[name]
    if answer is ... or answer is None:
        return None, f"not answered yet: replace ... with {ex.task}, then run this cell again."
    return ex.judge(answer)


def check(name: str, answer) -> bool | None:
    """Print whether ``answer`` is right and why (never raises for a blank or wrong answer)."""
    ok, why = judge(name, answer)
    mark = "…" if ok is None else ("✓" if ok else "✗")
    print(f"{mark} {name}: {why}")
    return ok
