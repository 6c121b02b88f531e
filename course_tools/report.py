"""After `make run`: say where the executed labs are and what each one ran in."""

from __future__ import annotations

import sys
from pathlib import Path

from course_tools.notebooks import read


def main(argv=None):
    argv = argv if argv is not None else sys.argv[1:]
    out_dir, labs = Path(argv[0]), [Path(a) for a in argv[1:]]
    print(f"\nExecuted labs are in {out_dir.resolve()}/ (open them in `make jupyter` or any notebook viewer):")
    for lab in labs:
        nb = read(out_dir / lab.name)
        first = "".join(o.text for c in nb.cells[:3] if c.cell_type == "code"
                        for o in c.outputs if o.output_type == "stream")
        mode = next((ln.split("：", 1)[1].strip() for ln in first.splitlines() if ln.startswith("模式：")), "?")
        cells = sum(c.cell_type == "code" for c in nb.cells)
        print(f"  {out_dir / lab.name}  （{cells} 个代码格，模式：{mode}）")


if __name__ == "__main__":
    main()
