"""Issue 51: what a lab kernel imports (``course_utils``) apart from what maintainers run (``course_tools``).

Everything a lab kernel loads comes from a lab's code cells or from ``course_utils``, so these two static checks
together keep every maintainer module out of a reader's kernel: no lab cell imports ``course_tools``, and no
``course_utils`` module does, except inside the functions that run in a child process the kernel starts (Lab 08's
trainer may use the tools). ``make lab-modules`` runs the labs in read mode and lists what they do load.
"""

from __future__ import annotations

import ast

from course_tools import notebooks
from course_tools.lab_modules import code_lines, is_course_module
from course_utils.paths import REPO

# course_utils functions that run only in a child process, where the maintainers' tools may be used.
CHILD_SIDE = {"course_utils/newadapter/child.py": {"settings", "base_name", "main"}}


def _tools_imports(tree: ast.AST):
    """(enclosing top-level function or None, line) of each import of course_tools."""
    for top in tree.body:
        where = top.name if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
        for node in ast.walk(top):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            if any(n == "course_tools" or n.startswith("course_tools.") for n in names):
                yield where, node.lineno


def test_no_course_utils_module_imports_the_maintainers_tools():
    found = []
    for path in sorted((REPO / "course_utils").rglob("*.py")):
        rel = str(path.relative_to(REPO))
        for where, line in _tools_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if where not in CHILD_SIDE.get(rel, ()):
                found.append(f"{rel}:{line} (in {where or 'the module'})")
    assert not found, "course_utils imports course_tools (a lab kernel would load it): " + ", ".join(found)


def test_no_lab_cell_imports_the_maintainers_tools():
    found = []
    for nb in sorted((REPO / "labs").glob("[0-9]*.ipynb")):
        for i, src in enumerate(notebooks.code_cells(nb)):
            code = "\n".join(line for line in src.splitlines() if not line.lstrip().startswith(("!", "%")))
            if any(True for _ in _tools_imports(ast.parse(code))):
                found.append(f"{nb.name} code cell {i}")
    assert not found, "lab cells import course_tools: " + ", ".join(found)


def test_the_count_takes_the_checkouts_packages_and_lines_that_hold_code(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / ".venv-read" / "lib").mkdir(parents=True)
    src = tmp_path / "pkg" / "m.py"
    src.write_text('"""Doc\nstring."""\n\n# a comment\nX = (1,\n     2)  # trailing\n\n')
    assert code_lines(src) == 4
    assert is_course_module(tmp_path, src)
    assert not is_course_module(tmp_path, tmp_path / ".venv-read" / "lib" / "x.py")
    assert not is_course_module(tmp_path, tmp_path / "labs" / "multi_lora_offline.py")
