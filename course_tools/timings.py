"""TIMINGS.md: how long each part of ``make test`` took, the one place where measured test times are written.

For maintainers and anyone who wants to know what ``make test`` costs on a machine. While ``make test`` runs, the
Makefile's ``timed`` appends one JSON line per suite to ``build/timings/suites.jsonl`` (``{"target": "test-unit",
"seconds": 550, "exit": 0}``; two suites may append at once, each line in one write), and test-unit writes its
JUnit report beside it. At the end, passed or not, ``make test`` runs this module, which turns them into
``TIMINGS.md`` at the repository root, in Chinese like the README, replacing the previous one. Standard library
only: it runs with the system's python3, also when setting up the environments failed.

    python3 -m course_tools.timings --started EPOCH --setup S --rest S --exit RC \\
        --suites "lint check-vllm-api ..." [--log FILE] [--junit FILE] [--out FILE]

``--commit``, ``--date``, ``--cores`` and ``--note`` replace what the module would find itself, for figures
transcribed from an earlier run's log (the note says so in the file).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent   # not course_utils.paths: importing the course would need its venv
SLOWEST = 20
GENERATED = ("**这是生成的文件，请不要手改。** `make test` 结束时（通过与否）运行 `python3 -m course_tools.timings`，"
             "把这一次各部分的时间写进来，整个替换上一次的；要更新它，就再跑一次 `make test`"
             "（CI 的入口 `bash .ci/run` 跑的也是它）。各部分做什么，见 README 的「测试」一节。")
SIDE_BY_SIDE = "有几部分同时跑（见 Makefile 的 `test` 目标），所以各行加起来比上面\u201c之后的各部分\u201d长。"
NOT_RUN = "（没有运行：前面失败了，或者被跳过了，比如没装 Chromium 时的浏览器检查；见 `make test` 的输出）。"
JUNIT = "取自 test-unit 的 JUnit 报告：每个测试的准备、运行与收尾之和。两个测试同时跑，所以各自的时间里有一部分是在等另一个。"
NO_JUNIT = "这一份没有 test-unit 的 JUnit 报告：test-unit 没有跑完，或者上面的数字不是 `make test` 自己写下的。"


def read_log(path: Path) -> list[dict]:
    """The suites' lines, in the order they ended; a line cut short (a suite killed mid-write) is left out."""
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and {"target", "seconds", "exit"} <= row.keys():
            rows.append(row)
    return rows


def slowest_tests(path: Path, n: int = SLOWEST) -> list[tuple[float, str]]:
    """The ``n`` slowest test cases of a JUnit report (seconds: setup, call and teardown), slowest first."""
    if not path.is_file():
        return []
    cases = []
    for case in ET.parse(path).getroot().iter("testcase"):
        parts = case.get("classname", "").split(".")
        # tests.test_x.TestClass -> test_x.py::TestClass (the module is the first part that is a test file)
        mod = next((i for i, p in enumerate(parts) if p.startswith("test_")), len(parts) - 1)
        where = "::".join([parts[mod] + ".py", *parts[mod + 1:], case.get("name", "?")])
        cases.append((float(case.get("time", 0)), where))
    return sorted(cases, key=lambda c: -c[0])[:n]


def duration(seconds: int) -> str:
    """1770 -> '1,770 秒（29 分 30 秒）'."""
    text = f"{seconds:,} 秒"
    return f"{text}（{seconds // 60} 分 {seconds % 60} 秒）" if seconds >= 60 else text


def git_commit() -> str:
    """The short commit, and whether the tracked files differ from it (TIMINGS.md itself aside)."""
    def git(*args):
        return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True).stdout.strip()
    commit = git("rev-parse", "--short", "HEAD") or "（不是 git 仓库）"
    changed = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)TIMINGS.md")
    return commit + ("（工作区有未提交的改动）" if changed else "")


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name where Linux says it, else ''."""
    lines = cpuinfo.read_text().splitlines() if cpuinfo.is_file() else []
    return next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("model name")), "")


def cores() -> int:
    """The cores this process may run on (a container's share, not the host's)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def render(rows: list[dict], suites: list[str], slowest: list[tuple[float, str]], *, setup: int, rest: int,
           exit_code: int, date: str, commit: str, cores: int, cpu: str = "", note: str = "") -> str:
    failed = [r["target"] for r in rows if r["exit"] != 0]
    if exit_code == 0:
        result = "全部通过"
    else:
        result = f"未通过（退出码 {exit_code}" + (f"；失败的部分：{'、'.join(failed)}）" if failed else "）")
    ordered = sorted(rows, key=lambda r: suites.index(r["target"]) if r["target"] in suites else len(suites))
    missing = [s for s in suites if s not in {r["target"] for r in rows}]
    out = ["# `make test` 的实测时间", "", GENERATED, ""]
    if note:
        out += [note, ""]
    out += [
        f"- 结果：{result}",
        f"- 日期：{date}",
        f"- 提交：{commit}",
        f"- 机器：{cores} 个 CPU 核" + (f"（{cpu}）" if cpu else ""),
        f"- 建环境（`make setup`，两个环境同时建；环境已经在时为 0）：{duration(setup)}",
        f"- 之后的各部分：{duration(rest)}",
        f"- 合计：{duration(setup + rest)}",
        "",
        "## 各部分",
        "",
        SIDE_BY_SIDE,
        "",
        "| 部分 | 秒 | 结果 |",
        "| --- | ---: | --- |",
    ]
    for r in ordered:
        status = "通过" if r["exit"] == 0 else f"失败（退出码 {r['exit']}）"
        out.append(f"| `{r['target']}` | {r['seconds']:,} | {status} |")
    if missing:
        why = "（见上面的说明）。" if note else NOT_RUN
        out += ["", f"这一份没有时间的部分：{'、'.join(f'`{s}`' for s in missing)}{why}"]
    out += ["", f"## `make test-unit` 最慢的 {SLOWEST} 个测试", ""]
    if slowest:
        out += [JUNIT, "", "| 秒 | 测试 |", "| ---: | --- |"]
        out += [f"| {t:.1f} | `{where}` |" for t, where in slowest]
    else:
        out += [NO_JUNIT]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="write TIMINGS.md from the times make test recorded")
    ap.add_argument("--log", type=Path, default=REPO / "build" / "timings" / "suites.jsonl")
    ap.add_argument("--junit", type=Path, default=REPO / "build" / "timings" / "test-unit.xml")
    ap.add_argument("--out", type=Path, default=REPO / "TIMINGS.md")
    ap.add_argument("--suites", default="", help="make test's suites, in the order it starts them")
    ap.add_argument("--setup", type=int, required=True, help="seconds make setup took")
    ap.add_argument("--rest", type=int, required=True, help="seconds everything after make setup took")
    ap.add_argument("--exit", type=int, required=True, dest="exit_code", help="make test's exit status")
    ap.add_argument("--started", type=float, default=None, help="when make test started (seconds since the epoch)")
    ap.add_argument("--date", help="instead of --started: the date as text")
    ap.add_argument("--commit", help="instead of the checkout's commit")
    ap.add_argument("--cores", type=int, help="instead of this machine's core count")
    ap.add_argument("--note", default="", help="a paragraph under the heading: where the figures came from")
    args = ap.parse_args(argv)
    date = args.date or time.strftime("%Y-%m-%d %H:%M %z", time.localtime(args.started))
    text = render(read_log(args.log), args.suites.split(), slowest_tests(args.junit), setup=args.setup,
                  rest=args.rest, exit_code=args.exit_code, date=date, commit=args.commit or git_commit(),
                  cores=args.cores or cores(), cpu=cpu_model(), note=args.note)
    args.out.write_text(text, encoding="utf-8")
    print(f"make test: each part's time is in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
