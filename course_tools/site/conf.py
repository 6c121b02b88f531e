# Sphinx configuration of the course site (course_tools/site/build.py passes this folder with -c).
# Sphinx + MyST-NB: it renders notebooks with the outputs they carry, without a kernel (nb_execution_mode
# "off"), from pip alone (no Node toolchain, which Jupyter Book 2 needs), and it is what Jupyter Book 1 is made of.
project = "Multi-LoRA Serving 实验课"
language = "zh_CN"
extensions = ["myst_nb"]
nb_execution_mode = "off"               # the pages show the recorded outputs; nothing runs at build time
nb_merge_streams = True
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3
exclude_patterns = ["_include", "_extra", "_doctrees"]
suppress_warnings = ["misc.highlighting_failure"]
html_theme = "sphinx_book_theme"
html_title = "Multi-LoRA Serving 实验课"
html_static_path = ["_static"]
html_css_files = ["course.css"]
html_theme_options = {
    "footer_content_items": [],         # no "author" line: the course has no single author
    "show_toc_level": 2,
    "use_download_button": False,       # each lab links its own .ipynb under its provenance note
    "use_fullscreen_button": False,
}
html_last_updated_fmt = None
html_copy_source = False
# Chinese search: Sphinx's zh splitter indexes Chinese words only with jieba (in the `site` extra); without it the
# search box finds English and code names only.
html_search_language = "zh"
try:
    import logging

    import jieba
    jieba.setLogLevel(logging.WARNING)  # its "Building prefix dict ..." lines are not the build's business
except ImportError:
    pass
