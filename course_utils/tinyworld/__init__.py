"""The tiny world the labs use: its synthetic tasks (prompts, reference answers, the codebook) and the checkers
that judge an answer. The trainer and its grammar are the maintainers' (``course_tools.tinyworld``)."""
