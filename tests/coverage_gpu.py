"""What no suite executes of the course's own code, against the allowlist (``make coverage-gpu``).

``make coverage-gpu`` runs the suites of ``make test`` with coverage in every process they start (pytest,
notebook kernels, vLLM servers and engine processes: a ``.pth`` file calls ``coverage.process_startup()``
while ``COVERAGE_PROCESS_START`` is set), combines the data and runs this script. Each line of
``course_utils/`` and ``labs/*.py`` that no process executed is reported by the function it is in. A function
with such lines must be in :data:`tests.coverage_allowlist.ALLOWED` with its reason; what is not fails the
target, and an allowlist entry whose function is now fully executed (or gone) is reported so that it can go.

    python tests/coverage_gpu.py build/coverage/coverage.json
"""

from __future__ import annotations

import ast
import json
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from coverage_allowlist import ALLOWED  # noqa: E402


def functions_by_line(path: Path) -> dict[int, str]:
    """Line -> qualified name of the innermost function or class around it (``<module>`` outside any)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    owner: dict[int, str] = {}

    def walk(node, prefix: str):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                for line in range(child.lineno, (child.end_lineno or child.lineno) + 1):
                    owner[line] = name
                walk(child, name + ".")
            else:
                walk(child, prefix)
    walk(tree, "")
    return owner


def unexecuted(report: dict) -> dict[str, list[int]]:
    """``path::function`` -> the lines of it that no process executed (from ``coverage json``)."""
    out: dict[str, list[int]] = defaultdict(list)
    for name, info in report["files"].items():
        path = Path(name) if Path(name).is_absolute() else REPO / name
        rel = path.resolve().relative_to(REPO).as_posix()
        if not info["missing_lines"]:
            continue
        owner = functions_by_line(path)
        for line in info["missing_lines"]:
            out[f"{rel}::{owner.get(line, '<module>')}"].append(line)
    return dict(out)


def compare(missing: dict[str, list[int]], allowed: dict[str, str]) -> tuple[list[str], list[str]]:
    """(functions with unexecuted lines that the allowlist lacks, allowlist entries with nothing unexecuted)."""
    not_allowed = sorted(k for k in missing if k not in allowed)
    stale = sorted(k for k in allowed if k not in missing)
    return not_allowed, stale


def main(argv=None) -> int:
    report = json.loads(Path((argv or sys.argv[1:])[0]).read_text())
    missing = unexecuted(report)
    not_allowed, stale = compare(missing, ALLOWED)
    totals = report["totals"]
    print(f"course code executed by the suites: {totals['covered_lines']} of {totals['num_statements']} lines; "
          f"{sum(map(len, missing.values()))} lines in {len(missing)} functions not executed, "
          f"{len(missing) - len(not_allowed)} of them allowlisted ({len(ALLOWED)} entries)")
    for k in not_allowed:
        print(f"NOT EXECUTED and not allowlisted: {k} lines {missing[k]}")
    for k in stale:
        print(f"allowlist entry with nothing unexecuted (remove it): {k}")
    return 1 if not_allowed or stale else 0


if __name__ == "__main__":
    sys.exit(main())
