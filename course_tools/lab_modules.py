"""How much course code a reader's kernel loads: run Labs 01-08 in read mode and count it (issue 51).

Each lab runs in its own kernel, in read mode (``COURSE_MODE=replay``, the shipped profile), with the
Python that runs this script (``.venv-read``: no vLLM, no torch). After the lab's last cell, one more cell
lists the modules the kernel has loaded from the checkout. The report is their union over the labs:
each module's non-blank, non-comment lines (a docstring counts as code), and any module of the
maintainer package ``course_tools``, which no lab may load.

    .venv-read/bin/python -m course_tools.lab_modules            # this checkout
    PYTHONPATH=/tmp/old .venv-read/bin/python course_tools/lab_modules.py --repo /tmp/old   # another commit

It imports nothing from the course, so it runs against an older commit's checkout as it is.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tokenize
from pathlib import Path

import nbformat
from nbclient import NotebookClient

MARK = "@@course-modules@@"
LIST_CELL = f"""
import json as _j, sys as _s
print({MARK!r} + _j.dumps(sorted({{getattr(m, '__file__', None) or '' for m in list(_s.modules.values())}} - {{''}})))
"""
MAINTAINER_PACKAGES = ("course_tools",)


def code_lines(path: Path) -> int:
    """Lines that hold a token other than a comment (a docstring's lines count)."""
    lines: set[int] = set()
    text = path.read_text(encoding="utf-8")
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                        tokenize.ENDMARKER):
            continue
        lines.update(range(tok.start[0], tok.end[0] + 1))
    return len(lines)


def is_course_module(repo: Path, path: Path) -> bool:
    """A ``.py`` file of the checkout's own packages: not the labs, the tests, build output or a virtual environment
    (``.venv-read`` sits inside the checkout)."""
    path = path.resolve()
    if path.suffix != ".py" or not path.is_relative_to(repo):
        return False
    top = path.relative_to(repo).parts[0]
    return not top.startswith(".") and top not in ("labs", "tests", "build")


def loaded_modules(repo: Path, notebook: Path, profile: str) -> set[Path]:
    nb = nbformat.read(notebook, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(LIST_CELL))
    env = {"COURSE_MODE": "replay", "COURSE_PROFILE": profile}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        NotebookClient(nb, timeout=900, resources={"metadata": {"path": str(notebook.parent)}}).execute()
    finally:
        for k, v in old.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    for out in nb.cells[-1].outputs:
        text = out.get("text", "")
        if MARK in text:
            files = json.loads(text.split(MARK, 1)[1])
            return {p for p in map(Path, files) if is_course_module(repo, p)}
    raise RuntimeError(f"{notebook.name}: the listing cell printed nothing")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[1])
    ap.add_argument("--profile", default="tiny")
    ap.add_argument("--json", type=Path, help="also write the per-module figures here")
    args = ap.parse_args(argv)
    repo = args.repo.resolve()
    per_lab: dict[str, set[Path]] = {}
    for nb in sorted((repo / "labs").glob("[0-9]*.ipynb")):
        per_lab[nb.stem] = loaded_modules(repo, nb, args.profile)
        print(f"{nb.stem}: {len(per_lab[nb.stem])} course modules", flush=True)
    union = set().union(*per_lab.values())
    sizes = {str(p.relative_to(repo)): code_lines(p) for p in sorted(union)}
    maint = [m for m in sizes if m.split("/", 1)[0] in MAINTAINER_PACKAGES]
    try:
        import subprocess
        commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
    except OSError:
        commit = "?"
    for m, n in sorted(sizes.items(), key=lambda kv: -kv[1]):
        print(f"{n:6d}  {m}")
    print(f"commit {commit}: labs 01-08 in read mode load {len(sizes)} course modules, "
          f"{sum(sizes.values())} non-blank non-comment lines; maintainer modules loaded: {len(maint)} {maint}")
    if args.json:
        args.json.write_text(json.dumps({"commit": commit, "modules": sizes, "total": sum(sizes.values()),
                                         "maintainer_modules": maint,
                                         "by_lab": {lab: sorted(str(p.relative_to(repo)) for p in mods)
                                                    for lab, mods in per_lab.items()}}, indent=1))
    return 1 if maint else 0


if __name__ == "__main__":
    sys.exit(main())
