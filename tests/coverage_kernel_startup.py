"""IPython startup file for ``make coverage-gpu``: save this kernel's coverage data after every cell.

nbval stops its kernels with ``shutdown_kernel(now=True)`` (SIGKILL), so coverage's own exit handler never runs in
them. The Makefile copies this file into ``$IPYTHONDIR/profile_default/startup/`` for the coverage run only.
"""

import coverage

_cov = coverage.Coverage.current()
if _cov is not None:
    get_ipython().events.register("post_run_cell", lambda *_: _cov.save())  # noqa: F821 - IPython's global
