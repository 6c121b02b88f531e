"""The course site: the labs with their recorded outputs as static HTML (``make site``, ``build/site/``).

``build.py`` stages the committed notebooks and pages and runs Sphinx with MyST-NB; ``conf.py`` is
the Sphinx configuration. Nothing is executed at build time: the pages show what the labs recorded.
"""
