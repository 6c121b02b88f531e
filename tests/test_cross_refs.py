"""Every cross-reference in lab prose resolves: "Lab NN 第 N 节" names a lab and a section it has, "第 N 节" alone
a section of the same lab, and a repository path in backticks (``course_utils/...``, ``data/...``) exists.

References to the course page (讲义第 N 节, 自测第 N 题) and to vLLM's source tree (``vllm/...``) are not
checked here: the page is outside the repository, and vLLM paths are read against 0.26.0 by ``make
check-vllm-api``'s source tree.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from course_tools import notebooks

REPO = Path(__file__).resolve().parents[1]
LABS = sorted((REPO / "labs").glob("[0-9][0-9]_*.ipynb"))

HEADING = re.compile(r"^## (\d+) ·", re.MULTILINE)
LAB_SECTION = re.compile(r"Lab (\d\d)(?: 的)? ?第 ?(\d+)(?:、(\d+))? ?节")
OWN_SECTION = re.compile(r"(?<![讲义自测b\d] )(?<![讲义自测])(?<!Lab \d\d )(?<!Lab \d\d)(?<!\d、)第 ?(\d+)(?:、(\d+))? ?节")
LAB = re.compile(r"\bLab (\d\d)\b")
OLD_STYLE = re.compile(r"第 ?\d+ ?课")
PATH = re.compile(r"`((?:course_utils|data|labs|tests|autodl)/[^`\s<>*{}]+?)`")


SELF_TEST = "06"      # its answers are cell outputs (templates in its code cells): their references count too


def _markdown(path: Path) -> str:
    nb = notebooks.read(path)
    parts = [c.source for c in nb.cells if c.cell_type == "markdown"]
    if path.name.startswith(SELF_TEST):
        parts += [o.get("data", {}).get("text/plain", "") for c in nb.cells for o in c.get("outputs", [])]
    return "\n".join(parts)


def _sections(path: Path) -> set[int]:
    return {int(n) for n in HEADING.findall(_markdown(path))}


def _labs() -> dict[str, Path]:
    return {p.name[:2]: p for p in LABS}


def references():
    """(lab, kind, target, text) for every cross-reference in the labs' markdown."""
    labs = _labs()
    for path in LABS:
        lab, text = path.name[:2], _markdown(path)
        for m in LAB_SECTION.finditer(text):
            for n in filter(None, m.groups()[1:]):
                yield lab, "section", (m.group(1), int(n)), m.group(0)
        for m in OWN_SECTION.finditer(text):
            before = text[max(0, m.start() - 8):m.start()]
            if re.search(r"讲义|自测|Lab \d\d\s*$|Lab \d\d 的\s*$", before):
                continue
            for n in filter(None, m.groups()):
                yield lab, "section", (lab, int(n)), m.group(0)
        for m in LAB.finditer(text):
            yield lab, "lab", m.group(1), m.group(0)
        for m in OLD_STYLE.finditer(text):
            yield lab, "style", None, m.group(0)
        for m in PATH.finditer(text):
            yield lab, "path", m.group(1).rstrip("/.,;:"), m.group(0)
    assert labs


def _problem(lab, kind, target, text) -> str | None:
    labs = _labs()
    if kind == "lab":
        return None if target in labs else f"Lab {lab}: {text!r} names no lab"
    if kind == "section":
        other, n = target
        if other not in labs:
            return f"Lab {lab}: {text!r} names no lab"
        return None if n in _sections(labs[other]) else (
            f"Lab {lab}: {text!r}: Lab {other} has sections {sorted(_sections(labs[other]))}")
    if kind == "style":
        return f"Lab {lab}: {text!r}: say 'Lab NN' (the labs are not numbered as 课)"
    return None if (REPO / target).exists() else f"Lab {lab}: {text!r} does not exist in the repository"


def test_every_cross_reference_resolves():
    problems = [p for ref in references() if (p := _problem(*ref))]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("text,problem", [
    ("见 Lab 03 第 9 节。", "Lab 03 has sections"),
    ("见 Lab 42。", "names no lab"),
    ("见第 3 课。", "say 'Lab NN'"),
    ("见 `course_utils/nowhere.py`。", "does not exist"),
])
def test_a_broken_reference_is_reported(text, problem):
    found = []
    lab = "01"
    for m in LAB_SECTION.finditer(text):
        found.append(_problem(lab, "section", (m.group(1), int(m.group(2))), m.group(0)))
    for m in LAB.finditer(text):
        found.append(_problem(lab, "lab", m.group(1), m.group(0)))
    for m in OLD_STYLE.finditer(text):
        found.append(_problem(lab, "style", None, m.group(0)))
    for m in PATH.finditer(text):
        found.append(_problem(lab, "path", m.group(1), m.group(0)))
    assert any(p and problem in p for p in found), found
