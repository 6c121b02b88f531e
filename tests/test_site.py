"""The course site's staging (course_tools/site/build.py) without Sphinx: what each lab page is made from.

The rendered site is checked in headless Chromium by tests/browser/test_site.py (`make test-site`).
"""

import json

import nbformat
import pytest

from course_tools.site import build

LABS = build.labs()


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    src = tmp_path_factory.mktemp("site-src")
    names = build.stage(src, repo_url=None)
    return src, names


def test_every_lab_the_glossary_the_autodl_page_and_the_index_are_staged(staged):
    src, names = staged
    assert names == [p.stem for p in LABS] and len(names) >= 8
    for name in names:
        assert (src / "labs" / f"{name}.ipynb").is_file()
        # the download link points at the committed notebook, byte for byte
        assert (src / "_extra" / "notebooks" / f"{name}.ipynb").read_bytes() == (build.REPO / "labs" / f"{name}.ipynb").read_bytes()
    index = (src / "index.md").read_text(encoding="utf-8")
    assert all(f"labs/{name}" in index for name in names)
    assert "labs/glossary" in index and "autodl" in index
    assert (src / "labs" / "glossary.md").is_file() and (src / "autodl.md").is_file()


def test_the_readme_slices_the_index_includes_exist_in_the_readme(staged):
    """A renamed README heading would silently include nothing (or everything): each marker must be there."""
    src, _ = staged
    readme = (build.REPO / "README.md").read_text(encoding="utf-8")
    index = (src / "index.md").read_text(encoding="utf-8")
    markers = [line.split('"')[1] for line in index.splitlines() if line.startswith((":start-after:", ":end-before:"))]
    assert len(markers) == 4
    for marker in markers:
        assert readme.count(marker) == 1, f"README.md has {readme.count(marker)} copies of {marker!r}"


@pytest.mark.parametrize("lab", LABS, ids=lambda p: p.stem)
def test_a_lab_page_is_the_notebook_plus_its_site_notes(staged, lab):
    """One provenance note under the title, a tip after each exercise check, widgets as a note; nothing else changes."""
    src, _ = staged
    original = nbformat.read(lab, as_version=4)
    page = nbformat.read(src / "labs" / lab.name, as_version=4)
    notes = [c for c in page.cells if "course-provenance" in c.source]
    assert len(notes) == 1, "one provenance note per page"
    first_markdown = next(i for i, c in enumerate(original.cells) if c.cell_type == "markdown")
    assert page.cells.index(notes[0]) == first_markdown + 1, "the note sits right under the lab's title cell"
    recorded = json.loads(build.recording_path(build.SHIPPED_PROFILE, lab.stem).read_text())["provenance"]
    for field in ("profile", "hardware", "vllm_version", "date", "command"):
        assert str(recorded[field]) in notes[0].source
    assert f"../notebooks/{lab.name}" in notes[0].source
    tips = [c for c in page.cells if build.EXERCISE_NOTE in c.source]
    checks = [i for i, c in enumerate(original.cells) if "exercise-check" in c.metadata.get("tags", [])]
    assert len(tips) == len(checks), "a tip after every exercise check, and nowhere else"
    for tip in tips:
        before = page.cells[page.cells.index(tip) - 1]
        assert "exercise-check" in before.metadata.get("tags", [])
    rest = [c for c in page.cells if c is not notes[0] and c not in tips]
    assert [c.source for c in rest] == [build.join_cjk_lines(c.source) if c.cell_type == "markdown" else c.source
                                       for c in original.cells], "the lab's own cells are unchanged"
    assert "widgets" not in page.metadata
    for before, after in zip(original.cells, rest):
        if before.cell_type != "code":
            continue
        assert len(after.outputs) == len(before.outputs)
        for out_before, out_after in zip(before.outputs, after.outputs):
            if build.WIDGET_VIEW in out_before.get("data", {}):
                assert out_after.data == {"text/markdown": build.WIDGET_NOTE}
            else:
                assert out_after == out_before, "recorded outputs other than widgets reach the page unchanged"


def test_a_lab_that_runs_on_cpu_only_does_not_promise_a_4090_run(staged):
    src, _ = staged
    for lab in LABS:
        note = next(c.source for c in nbformat.read(src / "labs" / lab.name, as_version=4).cells
                    if "course-provenance" in c.source)
        if lab.stem == "07_scale_out":
            assert "只在 CPU 上现场运行" in note and "RTX 4090 实时" not in note
        else:
            assert "RTX 4090 实时" in note


def test_lab06s_answers_stay_folded_the_code_that_holds_them_is_not_on_the_page(staged):
    src, _ = staged
    page = nbformat.read(src / "labs" / "06_self_test.ipynb", as_version=4)
    asks = [c for c in page.cells if c.cell_type == "code" and "\nask(" in "\n" + c.source]
    assert len(asks) >= 13
    assert all("remove-input" in c.metadata.get("tags", []) for c in asks)
    assert all("<details" in str(c.outputs) for c in asks), "the question shows in the output, its answer folded"


def test_lines_are_joined_only_between_two_chinese_characters_and_never_in_code():
    text = "第一行的结尾\n第二行\nLatin 开头\n中文\n\n```bash\nmake run  # 中文\n注释\n```\n结束。\n下一句"
    assert build.join_cjk_lines(text) == (
        "第一行的结尾第二行\nLatin 开头中文\n\n```bash\nmake run  # 中文\n注释\n```\n结束。下一句")


def test_the_readme_the_site_shows_is_reworded_only_where_it_says_so():
    readme = (build.REPO / "README.md").read_text(encoding="utf-8")
    for before, after in build.README_ON_SITE.items():
        assert readme.count(before) == 1, f"README.md no longer says {before!r}: update build.README_ON_SITE"
        assert after in build.readme_for_site()


def test_the_repository_link_appears_when_the_site_knows_it(tmp_path):
    build.stage(tmp_path, "https://example.org/course")
    index = (tmp_path / "index.md").read_text(encoding="utf-8")
    lab = nbformat.read(tmp_path / "labs" / LABS[0].name, as_version=4)
    assert "[课程仓库](https://example.org/course)" in index
    assert any("[课程仓库](https://example.org/course)" in c.source for c in lab.cells)


def test_lab02s_explorer_keeps_its_static_figure_and_table_and_says_why_the_knobs_do_not_move(staged):
    src, _ = staged
    page = nbformat.read(src / "labs" / "02_memory_layout.ipynb", as_version=4)
    explorer = next(c for c in page.cells if c.cell_type == "code" and "figures.explorer()" in c.source)
    kinds = [next(iter(o.get("data", {"text": 1}))) for o in explorer.outputs]
    assert any("image/png" in o.get("data", {}) for o in explorer.outputs), kinds
    assert any(o.get("data", {}).get("text/markdown") == build.WIDGET_NOTE for o in explorer.outputs), kinds
