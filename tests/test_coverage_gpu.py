"""The coverage checker behind ``make coverage-gpu``: how it attributes lines to functions and compares them with
the allowlist, and that every allowlist entry names a function that exists and gives a reason (the run itself
takes the whole suite again, so it is not part of ``make test``)."""

import ast
import json

from tests import coverage_gpu as cg
from tests.coverage_allowlist import ALLOWED

from course_utils.paths import REPO


def _qualnames(path) -> set:
    names = {"<module>"}

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(prefix + child.name)
                walk(child, prefix + child.name + ".")
            else:
                walk(child, prefix)
    walk(ast.parse(path.read_text(encoding="utf-8")), "")
    return names


def test_every_allowlist_entry_names_an_existing_function_and_says_why():
    for key, reason in ALLOWED.items():
        rel, _, qualname = key.partition("::")
        path = REPO / rel
        assert path.is_file(), f"{key}: no file {rel}"
        assert qualname in _qualnames(path), f"{key}: no function {qualname} in {rel}"
        assert len(reason.split()) >= 3, f"{key}: the reason should say what runs it, not {reason!r}"


def test_unexecuted_lines_are_reported_by_the_innermost_function(tmp_path):
    src = tmp_path / "mod.py"
    src.write_text("X = 1\n\nclass A:\n    def f(self):\n        return 1\n\ndef g():\n    if X:\n        return 2\n")
    owner = cg.functions_by_line(src)
    assert owner[5] == "A.f" and owner[9] == "g" and 1 not in owner
    report = {"files": {str(src): {"missing_lines": [5, 9]}}, "totals": {}}
    cg.REPO = tmp_path
    try:
        missing = cg.unexecuted(report)
    finally:
        cg.REPO = REPO
    assert missing == {"mod.py::A.f": [5], "mod.py::g": [9]}


def test_a_function_missing_from_the_allowlist_fails_and_a_stale_entry_is_reported(tmp_path, capsys, monkeypatch):
    assert cg.compare({"a.py::f": [3], "a.py::g": [7]}, {"a.py::g": "GPU: x y", "a.py::h": "gone now"}) == (
        ["a.py::f"], ["a.py::h"])
    monkeypatch.setattr(cg, "ALLOWED", {})
    report = tmp_path / "coverage.json"
    report.write_text(json.dumps({"files": {}, "totals": {"covered_lines": 10, "num_statements": 10}}))
    assert cg.main([str(report)]) == 0
    assert "10 of 10 lines" in capsys.readouterr().out
