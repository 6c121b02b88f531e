"""A lab's claim about vLLM: asserted where the course has run it, reported where it has not.

The labs check what they demonstrate: batching and scheduling do not change a greedy answer (Labs 01, 03, 08), and
the long tail's extra steps cost less each (Lab 03). The course has shown these only where vLLM runs on the CPU, in
float32 (profiles tiny and rehearsal, :attr:`~course_utils.profiles.Profile.vllm_on_cpu`): the recordings and tests
assert them there. On a GPU profile they rest on reading vLLM 0.26.0's source, not on a run (review 2026-12-06, S1
and S2): ``VLLM_BATCH_INVARIANT=1`` pins the LoRA shrink's ``split_k`` but not its ``block_k``, which switches from
256 to 32 at 128 tokens (``vllm/lora/ops/triton_ops/utils.py``), and prefix caching makes a reference run compute
fewer tokens than the batch; a memory-bound 4090 pays about as much for a step of 2 rows as for one of 32. There
the cell says what it saw, in Chinese, that the claim has not been run on a 4090 yet, and goes on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .profiles import Profile

NOT_RUN = "这一点还没有在 4090 上运行过（依据是读 vLLM 0.26.0 的源码），所以 {name} 配置上这里只报告、不断言"


def expect(prof: Profile, ok: bool, claim: str, seen: str = "") -> None:
    """Assert ``claim`` where vLLM runs on the CPU; on a GPU profile print whether it held this time (``seen``:
    the figures it rests on). Returns nothing: it is a cell's last line, and a returned value would show as
    ``True`` under it."""
    _held(prof, ok, claim, seen)


def _held(prof: Profile, ok: bool, claim: str, seen: str = "") -> bool:
    ok = bool(ok)
    if prof.vllm_on_cpu:
        if not ok:
            raise AssertionError(f"{claim}：不成立（{seen}）" if seen else f"{claim}：不成立")
        return True
    print(f"{claim}：这次{'成立' if ok else '不成立'}" + (f"（{seen}）" if seen else "") + "。"
          + NOT_RUN.format(name=prof.name) + "。")
    return ok


def expect_rows(prof: Profile, same: Iterable[bool] | Mapping[str, Iterable[bool]], claim: str) -> None:
    """:func:`expect` for a row-by-row comparison: ``same`` holds one bool per row (a pandas Series will do), or
    ``{run: bools}`` for several runs; the claim holds when every row is the same."""
    runs = {k: [bool(x) for x in v] for k, v in same.items()} if isinstance(same, Mapping) else {
        "": [bool(x) for x in same]}
    rows = [x for v in runs.values() for x in v]
    differ = [k for k, v in runs.items() if k and not all(v)]
    seen = f"{len(rows)} 行中 {sum(rows)} 行相同" + (f"；有不同行的运行：{', '.join(differ)}" if differ else "")
    ok = _held(prof, all(rows), claim, seen)
    if not ok and not prof.vllm_on_cpu:
        mode = ("打开了批次不变模式，但 0.26.0 只固定了 LoRA shrink 的 split_k，没有固定 block_k"
                if prof.batch_invariant else "没有打开批次不变模式")
        print(f"{prof.name} 配置{mode}：不同的行多半是 {prof.engine.get('dtype')} 的舍入随批次组成变化，"
              f"不是 adapter 串了行（Lab 01 第 4 节）。")
