"""The maintainers' tools: what builds, checks and measures the course. No lab kernel imports this package.

Lab cells import only ``course_utils``; these run from the Makefile, ``autodl/setup.sh`` and CI, or as a child
process a lab starts (Lab 08's trainer). They may import ``course_utils``; ``course_utils`` never imports them
(``tests/test_packages.py`` checks both, and ``python -m course_tools.lab_modules`` counts what the labs load).

- running and timing the labs: :mod:`.labrun`, :mod:`.labtime`, :mod:`.report`, :mod:`.notebooks`;
- the measured times of ``make test``, written into ``TIMINGS.md``: :mod:`.timings`;
- recordings up to date with the code: :mod:`.stale`; the count of what read mode loads: :mod:`.lab_modules`;
- the tiny world's trainer, grammar and quality gate: :mod:`.tinyworld`;
- the AutoDL GPU instance (checks, model download, adapter training): :mod:`.gpu`;
- benchmarks that write the recorded results the labs read (``data/recordings/cpu/``): :mod:`.bench`;
- the course's GPU budget: :mod:`.budget`; the vLLM-API check: :mod:`.vllm_api`; the site: :mod:`.site`;
  nbgrader: :mod:`.grading`.
"""
