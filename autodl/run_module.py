"""Run a course_utils module with a bare Python, without the package's ``__init__``.

    python3 autodl/run_module.py course_tools.gpu.checks gpu --profile qwen7b --smi "..."

``setup.sh`` runs its checks and plans (``course_tools.gpu.checks``, ``download --dry-run``,
``train_adapters --dry-run``: standard library only) with the instance's own python3, before step 3
installs the course's dependencies. ``python3 -m course_tools.gpu.checks`` would first run
``course_utils/__init__.py``, which imports the whole package (psutil and the rest). Here
``course_utils`` is registered as a package whose ``__init__`` is not run, so only the named module and
what it imports load. A module that is missing all the same is named, with exit status MISSING_MODULE,
so that setup.sh does not mistake it for the check's own verdict.
"""

from __future__ import annotations

import importlib.machinery
import runpy
import sys
import types
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("course_utils", "course_tools")
MISSING_MODULE = 3


def bare_package(name: str) -> types.ModuleType:
    """Register ``name`` (the repository's folder) as a package without running its ``__init__``."""
    spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
    spec.submodule_search_locations = [str(REPO / name)]
    package = types.ModuleType(name)
    package.__spec__, package.__path__ = spec, spec.submodule_search_locations
    sys.modules[name] = package
    return package


def main(argv: list[str]) -> int:
    if not argv or not argv[0].startswith(tuple(p + "." for p in PACKAGES)):
        print(f"用法：{sys.argv[0]} course_tools.<模块> [参数]（或 course_utils.<模块>）", file=sys.stderr)
        return 2
    module, args = argv[0], argv[1:]
    sys.path.insert(0, str(REPO))
    for name in PACKAGES:
        bare_package(name)
    sys.argv = [module, *args]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except ModuleNotFoundError as e:
        print(f"错误：{sys.executable} 里没有 Python 模块 '{e.name}'，而 {module} 要导入它"
              f"（{type(e).__name__}: {e}）。", file=sys.stderr)
        return MISSING_MODULE
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
