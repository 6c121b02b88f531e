"""Reading a notebook file: a cell's source text and a notebook's code cells (one place for the
staleness hash, the nbgrader build and the vLLM API check)."""

from __future__ import annotations

import json
from pathlib import Path


def cell_source(cell: dict) -> str:
    """A cell's source as one string (nbformat stores it as a list of lines or as a string)."""
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else src


def set_cell_source(cell: dict, text: str) -> None:
    """Store ``text`` as the cell's source, as a list of lines the way Jupyter writes it."""
    lines = text.split("\n")
    cell["source"] = [line + "\n" for line in lines[:-1]] + [lines[-1]]


def code_cells(notebook: Path) -> list[str]:
    """The source of each code cell of a notebook file, in order."""
    nb = json.loads(Path(notebook).read_text(encoding="utf-8"))
    return [cell_source(c) for c in nb["cells"] if c["cell_type"] == "code"]
