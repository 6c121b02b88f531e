"""The benchmarks that write the recorded results Labs 03 and 06 read (``data/recordings/cpu/``): their command
lines (:mod:`.cli`), what each measures and saves. What the labs read, show and run live stays in
``course_utils.engine`` (the same module names)."""
