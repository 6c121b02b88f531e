"""Notebook files through nbformat: read as version 4 (a cell's ``source``, an output's text: one string each),
written as Jupyter writes them, and the two views several places share (a notebook's code cells, the text an
output shows)."""

from __future__ import annotations

from pathlib import Path

import nbformat

SHOWN_KINDS = ("text/plain", "text/html", "text/markdown")


def read(path: Path) -> nbformat.NotebookNode:
    """A notebook file as nbformat version 4."""
    return nbformat.read(path, as_version=4)


def write(nb: nbformat.NotebookNode, path: Path) -> None:
    """Write ``nb`` to ``path`` (its folder made if missing), byte for byte as Jupyter and nbconvert do."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


def code_cells(notebook: Path) -> list[str]:
    """The source of each code cell of a notebook file, in order."""
    return [c.source for c in read(notebook).cells if c.cell_type == "code"]


def output_text(output, kinds=SHOWN_KINDS) -> str:
    """The text an output shows: a stream's text, and the ``kinds`` of a result's or display's data."""
    parts = [output.get("text", "")] + [output.get("data", {}).get(kind, "") for kind in kinds]
    return "\n".join(p for p in parts if p)
