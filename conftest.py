"""pytest configuration for the labs (nbval), so that plain ``pytest --nbval labs/`` works.

- Every cell's outputs are compared except stderr. vLLM and its libraries write
  environment noise to stderr that no setting removes entirely (a Triton
  notice, a C++ NUMA-binding warning with a timestamp); the labs print
  everything they teach to stdout or as rich output, which stays compared.
  This is nbval's documented hook.
- The sanitizer (``tests/sanitize.cfg``: timings and the banner's mode and
  hardware lines), the kernel of the running environment
  (``--nbval-current-env``) and a per-cell timeout are set here unless given on
  the command line, from whatever folder pytest is started in.
- nbval's kernels talk to pytest over Unix sockets (ZMQ's ipc transport), as
  course_tools/labrun.py's do: with TCP, a port picked for one kernel can be
  taken before it binds when several notebooks start at once (`make test` runs
  test-live two at a time beside test-replay).
"""

import atexit
import shutil
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def pytest_configure(config):
    opt = config.option
    if not hasattr(opt, "nbval_sanitize_with"):  # nbval is not installed
        return
    if not opt.nbval_sanitize_with and not getattr(opt, "sanitize_with", None):
        opt.nbval_sanitize_with = str(HERE / "tests" / "sanitize.cfg")
    if not opt.nbval_kernel_name:
        opt.nbval_current_env = True
    if opt.nbval_cell_timeout == 2000:  # nbval's default
        opt.nbval_cell_timeout = 900
    _kernels_over_unix_sockets()


def _kernels_over_unix_sockets():
    import nbval.kernel

    if getattr(nbval.kernel.KernelManager, "course_ipc", False):
        return
    sockets = tempfile.mkdtemp(prefix="nbval-")
    atexit.register(shutil.rmtree, sockets, True)

    class IpcKernelManager(nbval.kernel.KernelManager):
        course_ipc = True

        def __init__(self, **kwargs):
            super().__init__(transport="ipc", ip=str(Path(sockets) / "kernel"), **kwargs)

    nbval.kernel.KernelManager = IpcKernelManager


def pytest_collectstart(collector):
    if getattr(collector, "fspath", None) and collector.fspath.ext == ".ipynb":
        collector.skip_compare += ("stderr",)
