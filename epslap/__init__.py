"""epslap: exact, fast, larger-than-memory linear assignment by ε-pricing shortest paths.

Public API: :func:`solve`, :func:`linear_sum_assignment` (a scipy drop-in), :func:`verify`,
:class:`Solution`, batches (:func:`solve_batch`, :func:`linear_sum_assignment_batch`,
:class:`BatchSolution`), :func:`precompile`, and image EMD: :func:`emd`, :func:`emd_matrix`.
"""
from ._api import linear_sum_assignment, solve
from .batch import BatchSolution, linear_sum_assignment_batch, solve_batch
from .certificate import verify
from .emd import EMDResult, emd, emd_matrix
from .errors import GPUUnavailableError, InfeasibleError
from .solution import Solution

try:  # the installed distribution's version (pyproject.toml is its one source)
    from importlib.metadata import PackageNotFoundError as _NotInstalled
    from importlib.metadata import version as _version
    __version__ = _version("epslap")
except _NotInstalled:  # a source tree on sys.path without an install
    __version__ = "0+unknown"

__all__ = ["solve", "linear_sum_assignment", "solve_batch", "linear_sum_assignment_batch",
           "BatchSolution", "verify", "Solution", "InfeasibleError", "emd",
           "emd_matrix", "EMDResult",
           "GPUUnavailableError", "precompile", "__version__"]


def precompile() -> float:
    """Compile (or load from Numba's disk cache) the CPU kernels for every dtype; return seconds."""
    import time

    import numpy as np
    t0 = time.perf_counter()
    for dtype in (np.float64, np.float32, np.int64, np.int32):
        m = np.arange(9, dtype=dtype).reshape(3, 3)
        solve(m)                 # the small path
        solve(m, epsilon=False)  # the estimate and the passes
    return time.perf_counter() - t0
