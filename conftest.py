"""pytest configuration for the labs (nbval).

nbval: compare every cell's outputs except stderr.

vLLM and its libraries write environment noise to stderr that no setting
removes entirely (a Triton notice, a C++ NUMA-binding warning with a timestamp,
weight-loading progress). The labs print everything they teach to stdout or
as rich output, which stays compared; this is nbval's documented hook.
"""


def pytest_collectstart(collector):
    if getattr(collector, "fspath", None) and collector.fspath.ext == ".ipynb":
        collector.skip_compare += ("stderr",)
