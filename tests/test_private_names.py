"""Tests use the course's public names. A private one (``module._name``) is read only where no public name does the
job, each listed below with why; a new reach fails here until it gets a public name or a reason."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
PACKAGES = ("course_utils", "course_tools")

ALLOWED = {
    ("test_replay_lifecycle.py", "session._on_pre_run_cell"):
        "IPython's pre_run_cell handler: the test fires the event by hand, as IPython would",
    ("test_replay_lifecycle.py", "session._on_post_run_cell"):
        "IPython's post_run_cell handler: the test fires the event by hand, as IPython would",
    ("test_server.py", "setattr(session, '_current')"):
        "no session for the duration of one test, restored by monkeypatch; set_current() would close a real one",
    ("test_scale.py", "control._live"):
        "the driver the kernel holds: after a driver that dies at start, nothing must be left held",
    ("test_vllm_patches.py", "vllm_patches._installed"):
        "whether the plugin installed itself in this process: what vLLM's entry point is meant to cause",
    ("test_one_per_card.py", "setattr(one_per_card, '_engines')"):
        "the engines the kernel built: one stuck stand-in for one test (monkeypatch restores them)",
}


def private_reaches(path: Path) -> set[tuple[str, str]]:
    """(file, what) for each private name of the course a test file reads: ``from course_utils.x import _y``,
    ``module._y`` (or deeper) and ``monkeypatch.setattr(module, "_y", ...)``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules, found = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in PACKAGES:
            for a in node.names:
                modules.add(a.asname or a.name)
                if a.name.startswith("_"):
                    found.add((path.name, f"from {node.module} import {a.name}"))
        elif isinstance(node, ast.Import):
            modules.update((a.asname or a.name).split(".")[0] for a in node.names if a.name.split(".")[0] in PACKAGES)

    def root(node):
        while isinstance(node, ast.Attribute):
            node = node.value
        return node.id if isinstance(node, ast.Name) else None

    private = lambda name: name.startswith("_") and not name.startswith("__")   # noqa: E731
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and private(node.attr) and root(node.value) in modules:
            found.add((path.name, f"{ast.unparse(node.value)}.{node.attr}"))
        if (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "setattr" and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant) and private(str(node.args[1].value))
                and root(node.args[0]) in modules):
            found.add((path.name, f"setattr({ast.unparse(node.args[0])}, {node.args[1].value!r})"))
    return found


def test_tests_read_no_private_name_without_a_reason():
    found = set().union(*(private_reaches(p) for p in sorted(TESTS.rglob("test_*.py"))))
    assert not found - set(ALLOWED), f"private names read without a listed reason: {sorted(found - set(ALLOWED))}"
    assert not set(ALLOWED) - found, f"listed but no longer read (drop them): {sorted(set(ALLOWED) - found)}"


def test_the_scan_sees_each_way_of_reaching_in(tmp_path):
    f = tmp_path / "test_x.py"
    f.write_text("from course_utils import lab\nfrom course_utils.adapters import _hidden\n"
                 "def test(monkeypatch):\n    lab._thing()\n    monkeypatch.setattr(lab, '_other', 1)\n    lab.start()\n")
    assert private_reaches(f) == {("test_x.py", "from course_utils.adapters import _hidden"),
                                  ("test_x.py", "lab._thing"), ("test_x.py", "setattr(lab, '_other')")}
