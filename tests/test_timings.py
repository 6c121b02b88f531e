"""TIMINGS.md (course_tools/timings.py) and how `make test` feeds it: the Makefile's `timed` and `test` on stub suites."""

import json
import os
import shutil
import subprocess
import sys

from course_tools import timings

REPO = timings.REPO
SUITES = ["lint", "test-unit", "test-live", "test-browser"]
JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.test_server" name="test_live_server_starts" time="28.8"/>
<testcase classname="tests.test_tiny_world" name="test_gate[sql]" time="71.9"/>
<testcase classname="tests.test_labrun.TestRecord" name="test_jobs" time="5.1"/>
</testsuite></testsuites>"""


def test_the_file_says_it_is_generated_and_lists_each_suite_in_make_tests_order(tmp_path):
    log = tmp_path / "suites.jsonl"
    log.write_text('{"target": "test-live", "seconds": 623, "exit": 2}\n'
                   '{"target": "lint", "seconds": 1, "exit": 0}\n'
                   '{"target": "test-unit", "seconds": 550, "exit": 0}\n'
                   '{"target": "test-unit", "sec')          # a line cut short is left out
    (tmp_path / "unit.xml").write_text(JUNIT)
    rows = timings.read_log(log)
    assert [r["target"] for r in rows] == ["test-live", "lint", "test-unit"]
    slowest = timings.slowest_tests(tmp_path / "unit.xml", n=2)
    assert slowest == [(71.9, "test_tiny_world.py::test_gate[sql]"), (28.8, "test_server.py::test_live_server_starts")]
    assert timings.slowest_tests(tmp_path / "unit.xml")[-1] == (5.1, "test_labrun.py::TestRecord::test_jobs")
    text = timings.render(rows, SUITES, slowest, setup=181, rest=1770, exit_code=2, date="2026-12-06",
                          commit="a77d72a", cores=2, cpu="Some CPU")
    assert "生成的文件，请不要手改" in text and "python3 -m course_tools.timings" in text
    assert "未通过（退出码 2；失败的部分：test-live）" in text
    assert "- 之后的各部分：1,770 秒（29 分 30 秒）" in text and "- 合计：1,951 秒（32 分 31 秒）" in text
    assert "- 机器：2 个 CPU 核（Some CPU）" in text and "- 提交：a77d72a" in text
    table = [line for line in text.splitlines() if line.startswith("| `")]
    assert table == ["| `lint` | 1 | 通过 |", "| `test-unit` | 550 | 通过 |", "| `test-live` | 623 | 失败（退出码 2） |"]
    assert "这一份没有时间的部分：`test-browser`" in text
    assert "| 71.9 | `test_tiny_world.py::test_gate[sql]` |" in text


def test_without_a_log_or_a_junit_report_the_file_says_what_it_lacks(tmp_path):
    assert timings.read_log(tmp_path / "none.jsonl") == [] and timings.slowest_tests(tmp_path / "none.xml") == []
    text = timings.render([], SUITES, [], setup=0, rest=42, exit_code=0, date="d", commit="c", cores=2,
                          note="这些数字抄自日志。")
    assert "- 结果：全部通过" in text and "这些数字抄自日志。" in text and "- 合计：42 秒\n" in text
    assert "`test-browser`（见上面的说明）。" in text
    assert "没有 test-unit 的 JUnit 报告" in text
    assert timings.cpu_model(tmp_path / "cpuinfo") == ""
    (tmp_path / "cpuinfo").write_text("processor\t: 0\nmodel name\t: Some CPU @ 2.0GHz\n")
    assert timings.cpu_model(tmp_path / "cpuinfo") == "Some CPU @ 2.0GHz"


def test_the_command_line_finds_the_commit_date_and_cores_itself(tmp_path):
    out = tmp_path / "TIMINGS.md"
    assert timings.main(["--setup", "1", "--rest", "2", "--exit", "0", "--started", "0", "--out", str(out),
                         "--log", str(tmp_path / "none"), "--junit", str(tmp_path / "none")]) == 0
    text = out.read_text(encoding="utf-8")
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    assert f"- 提交：{head.stdout.strip()}" in text and f"- 机器：{timings.cores()} 个 CPU 核" in text
    assert "- 日期：1970-01-01" in text or "- 日期：1969-12-31" in text


def _sandbox(tmp_path):
    """A copy of the Makefile whose suites are stubs (one fails when FAIL=false), its venvs' stamps up to date."""
    shutil.copy(REPO / "Makefile", tmp_path / "Makefile")
    stubs = ["", "setup:", "\t@true",
             "lint check-vllm-api test-unit test-stale test-rehearsal test-replay test-exercises site test-site test-nbgrader:",
             "\t$(call timed,true)", "test-live:", "\t$(call timed,$(FAIL))", "test-browser:",
             "\t$(call timed,true)", ""]
    with open(tmp_path / "Makefile", "a") as f:
        f.write("\n".join(stubs))
    (tmp_path / "pyproject.toml").touch()
    os.utime(tmp_path / "pyproject.toml", (1000, 1000))
    for stamp, t in ((".venv/.installed", 2000), (".venv-read/.installed", 2000), (".venv/.instructor", 3000),
                     (".venv-read/.site", 3000)):
        (tmp_path / stamp).parent.mkdir(exist_ok=True)
        (tmp_path / stamp).touch()
        os.utime(tmp_path / stamp, (t, t))


def _make(tmp_path, *args):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("COURSE_TIMINGS", None)
    env.pop("MAKEFLAGS", None)
    return subprocess.run(["make", "--no-print-directory", *args, f"PYTHON={sys.executable}"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)


def test_make_test_records_a_failed_suite_writes_timings_md_and_still_fails(tmp_path):
    _sandbox(tmp_path)
    run = _make(tmp_path, "test", "FAIL=false")
    assert run.returncode != 0, run.stdout + run.stderr
    rows = [json.loads(line) for line in (tmp_path / "build" / "timings" / "suites.jsonl").read_text().splitlines()]
    assert {r["target"]: r["exit"] for r in rows} == {
        "lint": 0, "check-vllm-api": 0, "test-unit": 0, "test-stale": 0, "test-live": 1,
        "test-replay": 0, "test-exercises": 0, "site": 0, "test-site": 0, "test-nbgrader": 0}     # test-rehearsal, test-browser never ran
    assert all(isinstance(r["seconds"], int) and r["seconds"] >= 0 for r in rows)
    text = (tmp_path / "TIMINGS.md").read_text(encoding="utf-8")
    assert "未通过" in text and "失败的部分：test-live" in text
    assert "这一份没有时间的部分：`test-rehearsal`、`test-browser`" in text
    assert "all green" not in run.stdout

    run = _make(tmp_path, "test", "FAIL=true")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "make test: all green" in run.stdout and "each part's time is in TIMINGS.md" in run.stdout
    text = (tmp_path / "TIMINGS.md").read_text(encoding="utf-8")
    assert "- 结果：全部通过" in text and "没有时间的部分" not in text      # the previous run's lines are gone


def test_a_suite_run_by_hand_records_nothing(tmp_path):
    _sandbox(tmp_path)
    assert _make(tmp_path, "lint").returncode == 0
    assert not (tmp_path / "build").exists()
