"""The course site's staging (course_utils/site/build.py) without Sphinx: what each lab page is made from.

The rendered site is checked in headless Chromium by tests/browser/test_site.py (`make test-site`).
"""

import json

import nbformat
import pytest

from course_utils.site import build

LABS = build.labs()


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    src = tmp_path_factory.mktemp("site-src")
    names = build.stage(src)
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
def test_a_lab_page_is_the_notebook_plus_one_provenance_note_and_no_widget_state(staged, lab):
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
    rest = [c for c in page.cells if c is not notes[0]]
    assert [c.source for c in rest] == [c.source for c in original.cells], "the lab's own cells are unchanged"
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


def test_lab02s_explorer_keeps_its_static_figure_and_table_and_says_why_the_knobs_do_not_move(staged):
    src, _ = staged
    page = nbformat.read(src / "labs" / "02_memory_layout.ipynb", as_version=4)
    explorer = next(c for c in page.cells if c.cell_type == "code" and "figures.explorer()" in c.source)
    kinds = [next(iter(o.get("data", {"text": 1}))) for o in explorer.outputs]
    assert any("image/png" in o.get("data", {}) for o in explorer.outputs), kinds
    assert any(o.get("data", {}).get("text/markdown") == build.WIDGET_NOTE for o in explorer.outputs), kinds
