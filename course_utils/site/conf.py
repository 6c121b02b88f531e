# Sphinx configuration of the course site (course_utils/site/build.py passes this folder with -c).
# Sphinx + MyST-NB: it renders notebooks with the outputs they carry, without a kernel (nb_execution_mode
# "off"), from pip alone (no Node toolchain, which Jupyter Book 2 needs), and it is what Jupyter Book 1 is made of.
project = "Multi-LoRA Serving 实验课"
author = "multi-lora-course"
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
    "show_toc_level": 2,
    "use_download_button": False,       # each lab links its own .ipynb under its provenance note
    "use_fullscreen_button": False,
}
html_last_updated_fmt = None
html_copy_source = False
