"""Functions of the course's own code that no suite of ``make test`` executes (fully), and why.

Keys are ``path::qualified function name`` (``<module>`` for module level), as ``tests/coverage_gpu.py`` prints
them. Reasons say which hardware or target runs it; "GPU:" means only a real NVIDIA GPU can.
"""

ALLOWED: dict[str, str] = {
}
