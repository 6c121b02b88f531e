"""Lab 05, 练习 2: the student's grouped LoRA op ``lora_linear``, run on small batches and compared with the formula.

The judge calls the student's function on four batches (no bias, with base rows and an unused slot; a bias; the low
slots unused; only base rows) and compares each output with the formula, row by row, in float64:

    y[i] = W x[i] + bias + (B[a] A[a] x[i]) * scaling[a],   a = idx[i];   idx[i] = -1: no LoRA term

The arguments are what the lab passes at that point: torch tensors where torch is installed (live, as the
comparisons with vLLM's ops and peft that follow it), numpy arrays in read mode (no torch). A wrong output is
matched against the typical mistakes (no scaling, a slot index off by one, base rows given the last slot because
-1 indexes the last element, no bias, ...) and otherwise told which rows differ, by slot.
"""

from __future__ import annotations

import numpy as np

OP_TOL = 1e-4        # element-wise absolute, as Lab 05's comparisons (lora_check.TOL); outputs are of order 1-10
_K, _D = 12, 8
_RANKS = [2, 4, 3, 4]                   # slot 3 is never used by a row: a -1 read as "the last slot" shows
_SCALING = [2.0, 0.5, 4.0, 3.0]         # alpha / r per slot, none of them 1
_CASES = [                              # (idx, with a bias?)
    ([2, 2, -1, 0, 0, 2, -1, 1, 0, 2], False),
    ([0, -1, 1, 1, 2, -1, 2, 0], True),
    ([3, -1, 1, 3, 1, -1], True),       # slots 0 and 2 unused: a slot is idx's value, not a place among those used
    ([-1, -1, -1], True),
]
_NAMES = ("x", "W", "bias", "A", "B", "scaling", "idx")


def _inputs(idx, with_bias, seed):
    g = np.random.default_rng(seed)
    n, r_max, T = len(_RANKS), max(_RANKS), len(idx)
    A, B = np.zeros((n, r_max, _K), np.float32), np.zeros((n, _D, r_max), np.float32)
    for a, r in enumerate(_RANKS):           # zero-padded to r_max, as the lab's docstring says
        A[a, :r] = g.standard_normal((r, _K)) / np.sqrt(_K)
        B[a, :, :r] = g.standard_normal((_D, r))
    return {"x": g.standard_normal((T, _K)).astype(np.float32),
            "W": (g.standard_normal((_D, _K)) / np.sqrt(_K)).astype(np.float32),
            "bias": g.standard_normal(_D).astype(np.float32) if with_bias else None,
            "A": A, "B": B, "scaling": np.array(_SCALING, np.float32), "idx": np.array(idx, np.int64)}


def formula(x, W, bias, A, B, scaling, idx, *, slot=lambda a: a if a >= 0 else None, scale=lambda s: s,
            bias_times=1):
    """The formula row by row in float64; the keywords give the typical mistakes (a slot map, a scaling map)."""
    x, W, A, B = (np.asarray(t, np.float64) for t in (x, W, A, B))
    y = x @ W.T + (0 if bias is None else bias_times * np.asarray(bias, np.float64))
    for i, a in enumerate(np.asarray(idx).tolist()):
        s = slot(a)
        if s is not None:
            y[i] += (B[s] @ (A[s] @ x[i])) * scale(float(scaling[s]))
    return y


def _mistakes(n: int, with_bias: bool) -> list[tuple[dict, str]]:
    base_rows = "不用 adapter 的行（idx = -1）"
    out = [
        ({"slot": lambda a: None}, "只算了基座：输出里没有 LoRA 增量。每个 adapter 组要 shrink（x A^T）再 expand（v B^T），加回 y。"),
        ({"scale": lambda s: 1.0}, "没有乘 α/r：每组的增量要乘这个槽位的 scaling[a]（vLLM 在加载时把它乘进了 B，这里由你来乘）。"),
        ({"scale": lambda s: 1 / s}, "缩放反了：增量要乘 scaling[a]（就是 α/r），不是除以它。"),
        ({"scale": lambda s: s * s}, "α/r 乘了两次：shrink 和 expand 两步里只能乘一次。"),
        ({"slot": lambda a: n - 1 if a < 0 else a},
         (f"{base_rows}被加上了最后一个槽位的增量：在 torch 和 numpy 里，-1 当下标就是\"最后一个\"。这些行只算基座，"
          "要先把它们挑出去（vLLM 的 CPU 算子也有这个问题，课程的补丁见 Lab 01 第 6 节）。")),
        ({"slot": lambda a: 0 if a < 0 else a}, f"{base_rows}被加上了槽位 0 的增量：这些行只算基座，不属于任何一组。"),
        ({"slot": lambda a: a + 1 if a >= 0 else None},
         "槽位下标错了：idx 里的值就是槽位下标，第 a 组要用 A[a] 和 B[a]，不要再加 1。"),
        ({"slot": lambda a: a - 1 if a >= 0 else None},
         "槽位下标错了：idx 里的值就是槽位下标（从 0 开始），第 a 组要用 A[a] 和 B[a]，不要再减 1。"),
    ]
    if with_bias:
        out += [({"bias_times": 0}, "漏了偏置：bias 不是 None 时，每一行都要加上它。"),
                ({"bias_times": 2}, "偏置加了两次：它只属于基座那一项，每行加一次。")]
    return out


def _rows_by_slot(idx, bad) -> str:
    """Which rows differ, grouped by slot: '槽位 0 的行（第 3、4 行）不对；不用 adapter 的行都对'."""
    parts = []
    for a in sorted(set(idx), key=lambda a: (a < 0, a)):
        rows = [i for i, v in enumerate(idx) if v == a]
        who = "不用 adapter 的行（idx = -1）" if a < 0 else f"槽位 {a} 的行"
        wrong = [i for i in rows if bad[i]]
        parts.append(f"{who}都对" if not wrong else
                     f"{who}（第 {'、'.join(map(str, wrong))} 行）不对" if len(wrong) < len(rows) else f"{who}都不对")
    return "；".join(parts)


def _arrays(kind: str | None):
    """How the lab passes the arguments here: torch tensors where torch is installed, else numpy arrays."""
    if kind != "numpy":
        try:
            import torch
        except ImportError:
            if kind == "torch":
                raise
        else:
            return "torch", lambda v: torch.from_numpy(v.copy())
    return "numpy", lambda v: v.copy()


def _as_numpy(result):
    if hasattr(result, "detach"):
        result = result.detach().cpu().numpy()
    return np.asarray(result, dtype=np.float64)


def judge_lora_linear(fn, arrays: str | None = None):
    """(right?, why) for the student's ``lora_linear``; (None, what to do) while its body is empty.

    ``arrays``: "torch" or "numpy"; by default torch tensors where torch is installed, numpy arrays where not.
    """
    if not callable(fn):
        return False, "要的是一个函数：在上一格写好 def lora_linear(...) 的函数体，这一格把 lora_linear 交给检查。"
    kind, to_arg = _arrays(arrays)
    n = len(_RANKS)
    for case, (idx, with_bias) in enumerate(_CASES):
        given = _inputs(idx, with_bias, seed=case)
        passed = [None if v is None else to_arg(v) for v in given.values()]
        try:
            got = fn(*passed)
        except ModuleNotFoundError as e:
            return None, (f"读模式没有 {e.name}，检查用 numpy 数组调用你的函数，而它要 import {e.name}。改用 @、.T、下标和"
                          f"布尔掩码写（torch 张量和 numpy 数组都能跑），或在能现场运行的环境里（make setup 之后）运行这一课。")
        except Exception as e:  # noqa: BLE001 -- the student's code raised: say what and where to look
            hint = ("（读模式用 numpy 数组调用它：numpy 没有的 torch 写法，例如 new_zeros、index_add_，在这里会出错；"
                    "只用 @、.T、下标和布尔掩码写，两种数组都能跑）" if kind == "numpy" else "")
            return False, f"调用它出错：{type(e).__name__}: {e}{hint}"
        if got is None:
            if case == 0:
                return None, "还没写：lora_linear 什么也没返回（返回了 None）。写好函数体并 return 输出，再运行这一格。"
            return False, "这一次它返回了 None：每条路径最后都要 return 输出（包括整批都不用 adapter 的时候）。"
        try:
            got = _as_numpy(got)
        except (TypeError, ValueError) as e:
            return False, f"返回值不是一个数组（{type(got).__name__}）：要返回 (T, d) 的张量或数组（{e}）。"
        changed = [name for name, v, p in zip(_NAMES, given.values(), passed)
                   if v is not None and not np.array_equal(_as_numpy(p), v.astype(np.float64))]
        if changed:
            return False, (f"你的函数改了传进来的 {'、'.join(changed)}（原地修改，例如 *=、+= 或写进它的切片）。调用的人还要用它们："
                           f"vLLM 的 B 是整个引擎共用的，本课后面的比对也复用同一组张量。先复制一份，或只写进新建的输出。")
        T = len(idx)
        if got.shape != (T, _D):
            if got.shape == (_D, T):
                return False, f"形状是 (d, T) = {got.shape}：像是转置了，要返回 (T, d) = {(T, _D)}，每个 token 一行。"
            return False, f"形状不对：要返回 (T, d) = {(T, _D)}，每个 token 一行；你的是 {tuple(got.shape)}。"
        want = formula(**given)
        if np.allclose(got, want, rtol=0, atol=OP_TOL):
            continue
        for change, why in _mistakes(n, with_bias):
            try:
                mistaken = formula(**given, **change)
            except IndexError:                    # a slot off by one past the last: not this mistake here
                continue
            if np.allclose(got, mistaken, rtol=0, atol=OP_TOL):
                return False, f"{why}逐行看：{_rows_by_slot(idx, np.abs(got - want).max(axis=1) > OP_TOL)}。"
        bad = ~np.isfinite(got).all(axis=1) | (np.abs(got - want).max(axis=1) > OP_TOL)
        return False, (f"还不对：和逐行公式 y[i] = W x[i] + bias + (B[a] A[a] x[i])·scaling[a] 比，"
                       f"{_rows_by_slot(idx, bad)}（batch 的 idx = {idx}，{'带' if with_bias else '不带'}偏置）。")
    return True, ("对：四组 batch（夹着不用 adapter 的行、有的槽位没人用；带偏置；整批都不用 adapter）的输出都和逐行公式一致"
                  f"（差不超过 {OP_TOL:.0e}），传进去的张量也没被改动。下面两节拿它和 vLLM 的算子、peft 比。")
