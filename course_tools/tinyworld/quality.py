"""Quality of the tiny world, measured through real vLLM and cross-checked with transformers+peft.

``python -m course_tools.tinyworld.quality`` (``make eval``) runs held-out prompts of
every task through one heterogeneous vLLM batch (each prompt once with its
task's adapter and once with ``None``, the bare base), checks each output's
*format* with :mod:`course_utils.tinyworld.tasks` and whether it is *right* (the
answer the request asks for) with :mod:`course_utils.tinyworld.checkers`, and reruns
the same rows greedily in transformers+peft to show that both engines compute the same LoRA.

Three kinds of prompt, all with held-out entities: the trained phrasings
(``phrasing="trained"``: the sentence shapes of :mod:`.tasks`, which the adapters train on
beside the composed requests of :mod:`.grammar`) and the two families of held-out phrasings of
:mod:`course_tools.tinyworld.phrasings` (``phrasing="reworded"`` and ``"reworded2"``: wordings
training never uses; adapter rows only, in the same batch). :func:`gate` holds the table to the
floors the shipped world earned.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from dataclasses import dataclass

from course_utils.tinyworld import checkers, tasks
from course_tools.tinyworld import phrasings
from course_utils.profiles import Profile, apply_env, get_profile
from course_utils.chat import chat_prompt

MAX_TOKENS = 64


@dataclass
class Row:
    task: str
    adapter: str | None  # None: the bare base
    prompt: str
    fields: dict
    vllm: str = ""
    hf: str = ""
    phrasing: str = "trained"  # "trained": tasks.py's shapes; "reworded"/"reworded2": held-out families 1/2

    @property
    def passes(self) -> bool:
        """The vLLM output has the task's format."""
        return tasks.format_ok(self.task, self.vllm, self.fields)

    @property
    def verdict(self) -> checkers.Verdict:
        """Is the vLLM output the right answer (and if not, why)?"""
        return checkers.check(self.task, self.vllm, self.fields)

    @property
    def right(self) -> bool:
        return self.verdict.right


def heldout_rows(n_per_task: int, seed: int = 7) -> list[Row]:
    """Held-out entities in the trained phrasings, each prompt with its adapter and with the bare base."""
    rows = []
    for task in tasks.TASKS:
        for ex in tasks.make_examples(task, n_per_task, "heldout", seed):
            fields = checkers.fields_of(ex)
            rows.append(Row(task, task, ex.prompt, fields))
            rows.append(Row(task, None, ex.prompt, fields))
    return rows


# phrasing label of a Row -> family of held-out phrasings (phrasings.FAMILIES)
REWORDED = {"reworded": 1, "reworded2": 2}


def reworded_rows(n_per_task: int, seed: int = 7) -> list[Row]:
    """Held-out entities in both families of held-out phrasings (:mod:`.phrasings`), each with its adapter."""
    return [Row(task, task, ex.prompt, ex.fields, phrasing=label)
            for label, family in REWORDED.items() for task in tasks.TASKS
            for ex in phrasings.make_reworded(task, n_per_task, seed, family=family)]


def generate_mixed(profile: Profile, batch: list[tuple[str | None, str]]) -> tuple[list[str], float]:
    """One heterogeneous batch through real vLLM: ``batch`` holds (adapter name or None for the bare
    base, user text) pairs, all sent in ONE greedy ``llm.generate`` call, each with its own LoRARequest.
    Returns the outputs (stripped, in order) and the seconds the generate call took."""
    apply_env(profile)
    from vllm import LLM, SamplingParams
    from vllm.lora.request import LoRARequest

    llm = LLM(model=profile.base_model, enable_lora=True, max_lora_rank=profile.max_lora_rank,
              max_loras=profile.max_loras, **profile.engine_kwargs())
    ids = {name: i + 1 for i, name in enumerate(profile.adapters)}
    requests = [LoRARequest(a, ids[a], profile.adapter(a)) if a else None for a, _ in batch]
    sp = SamplingParams(temperature=0.0, max_tokens=MAX_TOKENS)
    t0 = time.perf_counter()
    outs = llm.generate([chat_prompt(profile, text) for _, text in batch], sp, lora_request=requests,
                        use_tqdm=False)
    dt = time.perf_counter() - t0
    del llm
    return [o.outputs[0].text.strip() for o in outs], dt


def run_vllm(profile: Profile, rows: list[Row]) -> float:
    """All rows in ONE llm.generate call, each with its own LoRARequest (or None). Returns seconds."""
    texts, dt = generate_mixed(profile, [(r.adapter, r.prompt) for r in rows])
    for r, text in zip(rows, texts):
        r.vllm = text
    return dt


def run_hf(profile: Profile, rows: list[Row], batch_size: int = 64) -> float:
    """The same rows greedily through transformers + peft (one PeftModel, adapters switched by name)."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    t0 = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(profile.base_model, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(profile.base_model, dtype=torch.float32)
    names = list(profile.adapters)
    model = PeftModel.from_pretrained(model, profile.adapter(names[0]), adapter_name=names[0])
    for name in names[1:]:
        model.load_adapter(profile.adapter(name), adapter_name=name)
    model.eval()
    groups: dict = {}
    for r in rows:
        groups.setdefault(r.adapter, []).append(r)
    for adapter, group in groups.items():
        for i in range(0, len(group), batch_size):
            chunk = group[i:i + batch_size]
            enc = tok([chat_prompt(profile, r.prompt) for r in chunk], return_tensors="pt", padding=True,
                      add_special_tokens=False)
            if adapter is not None:
                model.set_adapter(adapter)
            with torch.no_grad(), (model.disable_adapter() if adapter is None else contextlib.nullcontext()):
                out = model.generate(**enc, max_new_tokens=MAX_TOKENS, do_sample=False)
            for r, seq in zip(chunk, out[:, enc["input_ids"].shape[1]:]):
                r.hf = tok.decode(seq, skip_special_tokens=True).strip()
    return time.perf_counter() - t0


def _share(rows: list[Row], attr: str) -> float | None:
    return sum(getattr(r, attr) for r in rows) / len(rows) if rows else None


def summarise(rows: list[Row]) -> dict:
    """Per task: format and right of the adapter (trained and held-out phrasings) and of the base,
    and how often vLLM and transformers+peft agree word for word (all of the task's rows)."""
    table = {}
    for task in [t for t in tasks.TASKS if any(r.task == t for r in rows)]:
        mine = [r for r in rows if r.task == task]
        ad = [r for r in mine if r.adapter and r.phrasing == "trained"]
        base = [r for r in mine if not r.adapter and r.phrasing == "trained"]
        table[task] = {"rows": len(ad), "adapter_format": _share(ad, "passes"), "adapter_right": _share(ad, "right")}
        for label in REWORDED:
            rew = [r for r in mine if r.adapter and r.phrasing == label]
            table[task] |= {f"{label}_rows": len(rew), f"{label}_format": _share(rew, "passes"),
                            f"{label}_right": _share(rew, "right")}
        table[task] |= {
            "base_format": _share(base, "passes"),
            "base_right": _share(base, "right"),
            "vllm_equals_hf": sum(r.vllm == r.hf for r in mine) / len(mine),
        }
        if task == "sql":
            table[task]["value_exact"] = sum(tasks.sql_value_exact(r.vllm, r.fields) for r in ad) / len(ad)
    return table


# The quality gate (tests/test_tiny_world.py, `make eval`). TARGETS are issue 53's; a world that
# misses one is still shipped if the gap is written down (EXPERIMENTS.md). The floors are what the
# shipped world scored, in right answers of ROWS per task (`make eval`, EXPERIMENTS.md section 6),
# less MARGIN_ROWS: another CPU's float rounding can change a few greedy tokens, a worse world
# loses more. Held-out phrasings keep a floor of 1 where the world got one right (the bare base never does).
TARGETS = {"adapter_format": 0.98, "adapter_right": 0.90, "reworded_right": 0.75, "reworded2_right": 0.60,
           "base_right_max": 0.05, "vllm_equals_hf": 0.95}
ROWS = 50
MEASURED = {  # make eval on 2026-12-07 (issue 53's world: T1 + B2 in EXPERIMENTS.md section 7)
    "adapter_format": {"sql": 50, "support": 50, "medical": 50, "json": 47},
    "adapter_right": {"sql": 46, "support": 47, "medical": 47, "json": 39},
    "reworded_right": {"sql": 35, "support": 36, "medical": 20, "json": 15},
    "reworded2_right": {"sql": 26, "support": 4, "medical": 10, "json": 2},
}
MARGIN_ROWS = 4


def floor(measure: str, task: str) -> int:
    """The fewest right answers (of ROWS) the gate accepts for ``measure`` on ``task``."""
    measured = MEASURED[measure][task]
    if measure == "adapter_format":          # format's floor: the target, or what the world earned if below it
        return min(measured, round(TARGETS["adapter_format"] * ROWS))
    return measured - MARGIN_ROWS if measure == "adapter_right" else max(measured - MARGIN_ROWS, min(measured, 1))


def gate(table: dict) -> list[str]:
    """What ``table`` (:func:`summarise`, ROWS rows per task and kind) fails: one line per miss, empty if none.
    Format on trained phrasings must meet its target, or (json since issue 53: 47 of 50, target 49) not fall below
    what the shipped world earned; right must reach the floors; the bare base must not answer (format <= 10%,
    right <= 5%). A target the world misses is :func:`missed_targets`' to report, not the gate's."""
    misses = []
    for task, t in table.items():
        for measure in MEASURED:
            got = round(t[measure] * ROWS)
            if got < floor(measure, task):
                misses.append(f"{task}: {measure} {got}/{ROWS} < floor {floor(measure, task)}/{ROWS}")
        if t["base_format"] > 0.10 or t["base_right"] > TARGETS["base_right_max"]:
            misses.append(f"{task}: the bare base answers (format {percent(t['base_format'])}, "
                          f"right {percent(t['base_right'])})")
    return misses


def missed_targets(table: dict) -> list[str]:
    """Each TARGET a task misses, and by how much (the gate's floors are what the world earned; these are the aims)."""
    out = []
    for task, t in table.items():
        for key, aim in TARGETS.items():
            got = t["base_right"] if key == "base_right_max" else t[key]
            if (got > aim) if key == "base_right_max" else (got < aim):
                out.append(f"{task}: {key} {percent(got)}, target {percent(aim)} ({(got - aim) * 100:+.0f} points)")
    return out


def percent(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


def format_table(table: dict) -> str:
    """Format = the task's shape (tasks.format_ok); right = the answer the request asks for (checkers).
    All prompts name held-out entities; "trained phrasings" word them like the training data."""
    groups = (f"{'adapter, trained phrasings':>26}  {'held-out phrasings 1':>27}  {'held-out phrasings 2':>27}  "
              f"{'base (no adapter)':>19}")
    rew = f"  {'rows':>7}{'format':>10}{'right':>10}"
    lines = [f"{'':<9}{groups}",
             f"{'task':<9}{'rows':>6}{'format':>10}{'right':>10}{rew * 2}  {'format':>9}{'right':>10}{'vLLM == HF':>12}"]
    for task, t in table.items():
        cells = "".join(f"  {t.get(f'{label}_rows', 0):>7}{percent(t.get(f'{label}_format')):>10}"
                        f"{percent(t.get(f'{label}_right')):>10}" for label in REWORDED)
        lines.append(f"{task:<9}{t['rows']:>6}{percent(t['adapter_format']):>10}{percent(t.get('adapter_right')):>10}"
                     f"{cells}  {percent(t['base_format']):>9}{percent(t.get('base_right')):>10}"
                     f"{percent(t['vllm_equals_hf']):>12}")
    if "value_exact" in table.get("sql", {}):
        lines.append(f"sql rows whose condition value is the prompt's entity spelled exactly: "
                     f"{table['sql']['value_exact']:.1%} (held-out names the tiny model never saw)")
    return "\n".join(lines)


def wrong_examples(rows: list[Row], per_task: int = 2) -> str:
    """A few adapter outputs that have the format but are not right, per task and phrasing, with the reason."""
    lines = []
    for task in tasks.TASKS:
        for phrasing in ("trained", *REWORDED):
            bad = [r for r in rows if r.task == task and r.adapter and r.phrasing == phrasing and not r.right]
            bad.sort(key=lambda r: not r.passes)  # well-formed but wrong first: the interesting ones
            for r in bad[:per_task]:
                lines.append(f"[{task} / {phrasing}] {r.prompt}\n    -> {r.vllm!r}\n    wrong: {r.verdict.why}")
    return "\n".join(lines)


def evaluate(profile: Profile | None = None, n_per_task: int = 50, hf: bool = True,
             only: tuple[str, ...] = tasks.TASKS) -> tuple[dict, list[Row]]:
    """The quality table of ``profile``'s adapters (``only`` these tasks) and its rows."""
    profile = (profile or get_profile("tiny")).require_runnable()
    rows = [r for r in heldout_rows(n_per_task) + reworded_rows(n_per_task) if r.task in only]
    run_vllm(profile, rows)
    if hf:
        run_hf(profile, rows)
    return summarise(rows), rows


def base_copy(profile: Profile | None = None, n_per_task: int = 50, seed: int = 11) -> dict[str, float]:
    """How well the bare base copies unseen entities, before any adapter: for each task, the share of
    terse skill instructions with held-out entities ("Query table airports where country is Tanzania")
    answered exactly (transformers, greedy). The measure EXPERIMENTS.md tracks."""
    profile = (profile or get_profile("tiny")).require_runnable()
    exs = [ex for task in tasks.TASKS for ex in tasks.make_examples(task, n_per_task, "heldout", seed)]
    rows = [Row(ex.task, None, ex.skill, ex.fields) for ex in exs]
    run_hf(profile, rows)
    return {task: sum(r.hf == ex.answer for r, ex in zip(rows, exs) if ex.task == task) / n_per_task
            for task in tasks.TASKS}


def main(argv=None):
    ap = argparse.ArgumentParser(description="Held-out quality of the tiny world through vLLM (+ HF cross-check).")
    ap.add_argument("-n", type=int, default=50, help="held-out prompts per task")
    ap.add_argument("--json", help="also write the table to this file")
    ap.add_argument("--show", type=int, default=0, help="print this many rows per task")
    ap.add_argument("--wrong", type=int, default=2, help="print this many wrong answers per task and phrasing")
    args = ap.parse_args(argv)
    table, rows = evaluate(n_per_task=args.n)
    print(format_table(table))
    misses = gate(table) if args.n == ROWS else ["(the gate needs -n 50)"]
    print("quality gate: " + ("passed" if not misses else "FAILED\n  " + "\n  ".join(misses)))
    missed = missed_targets(table)
    print("targets: " + ("all met" if not missed else "missed\n  " + "\n  ".join(missed)))
    copy = base_copy(n_per_task=args.n)
    print("base alone, held-out entities in terse skill instructions, exact answer: "
          + ", ".join(f"{task} {percent(v)}" for task, v in copy.items()))
    if args.wrong:
        print(f"\nWrong answers (up to {args.wrong} per task and phrasing):")
        print(wrong_examples(rows, args.wrong))
    for task in tasks.TASKS:
        for r in [r for r in rows if r.task == task][: args.show]:
            print(f"--- {task} / {r.adapter or 'base'} / {r.phrasing} | {r.prompt}\n"
                  f"  vLLM: {r.vllm!r}\n  HF:   {r.hf!r}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(table, f, indent=2)


if __name__ == "__main__":
    main()
