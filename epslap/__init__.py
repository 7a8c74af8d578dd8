"""epslap: exact, fast, larger-than-memory linear assignment by ε-pricing shortest paths.

Public API: :func:`solve`, :func:`linear_sum_assignment` (a scipy drop-in), :func:`verify`,
:class:`Solution`, batches (:func:`solve_batch`, :func:`linear_sum_assignment_batch`,
:class:`BatchSolution`), many large solves locally or on Dask (:func:`solve_many`, :class:`Deferred`,
:class:`ManyResult`), :func:`precompile`, image EMD: :func:`emd`, :func:`emd_matrix`, and exact transport between equal-size point
clouds: :func:`emd2` (POT's ``emd2`` for uniform weights).
"""
from ._api import linear_sum_assignment, solve
from .batch import BatchSolution, linear_sum_assignment_batch, solve_batch
from .certificate import verify
from .emd import EMDResult, emd, emd_matrix
from .errors import CheckpointError, GPUUnavailableError, InfeasibleError
from .many import Deferred, ManyResult, solve_many
from .points import emd2
from .solution import Solution

try:  # the installed distribution's version (pyproject.toml is its one source)
    from importlib.metadata import PackageNotFoundError as _NotInstalled
    from importlib.metadata import version as _version
    __version__ = _version("epslap")
except _NotInstalled:  # a source tree on sys.path without an install
    __version__ = "0+unknown"

Source = Deferred  # the former name of Deferred (still accepted)

__all__ = ["solve", "linear_sum_assignment", "solve_batch", "linear_sum_assignment_batch",
           "BatchSolution", "verify", "Solution", "InfeasibleError", "emd",
           "emd_matrix", "EMDResult", "emd2", "solve_many", "Deferred", "ManyResult",
           "GPUUnavailableError", "CheckpointError", "precompile", "__version__"]


def precompile(functions: bool = True, sources: bool = True, candidates: bool = True,
               gpu: bool = False) -> float:
    """Compile (or load from Numba's disk cache) the CPU kernels; return the seconds spent.

    Covers matrices in memory of every dtype (float64, float32, int64, int32) on both CPU
    paths (the small path and the ε-passes); with ``functions`` the kernels that serve a
    user's cost function (``costfns.from_function``, float64: jitted element and row forms
    and plain Python functions, all served by the kernels of the built-in classes of their
    dtype) through a row cache of either policy — the kernels are shared by every such
    function, so later processes load them instead of compiling; with ``sources`` the kernels of the
    built-in classes, point sets, matrices streamed through a cache and jitted element functions
    (``costfns.Random``, ``Geometric``, ``SqEuclidean``, images, ``Dense``, ``OnDisk``, …; one
    set of kernels per cost dtype serves them all: float64, int64, float32, int32), as a
    table and through a row cache of either policy, on any number of threads (each class's
    own two small trampolines compile on its first use, well under a second; a maximisation
    reuses the same kernels). Maximisations of other sources, user-defined state classes and
    ``specialize=True`` functions compile on their first solve. With ``candidates`` the
    kernels of the candidates method (``solve(..., candidates=...)``, what ``"auto"`` takes for
    large problems): the sparse solve and its CSR builders for float and integer costs, and
    the two streaming passes over float64 and int64 matrices, the built-in classes and (with
    ``functions``) a user's cost function, jitted or plain Python. With ``gpu`` first (CuPy
    and a device needed: ``GPUUnavailableError`` otherwise) every module of the GPU batch
    kernel, which batches and single problems whose sides are at most 1024 run on
    ``backend="gpu"``: one per kind of launch (width up to 4096 columns, dtype, a single
    problem's staging), about two seconds each the first time on a machine, loaded from
    CuPy's kernel cache afterwards in every process (``epslap.gpu.precompile``).
    """
    import time

    import numpy as np
    from numba import njit

    import costfns

    from .cpu import jv_numpy
    t0 = time.perf_counter()
    if gpu:  # first: a machine without a GPU says so before the CPU kernels' compile
        from .gpu.precompile import precompile_batch_kernels
        precompile_batch_kernels()
    jv_numpy.compile_from_now()  # the small path's kernels, not its first calls' vector form
    rng = np.random.default_rng(0)
    for dtype in (np.float64, np.float32, np.int64, np.int32):
        solve(np.arange(9, dtype=dtype).reshape(3, 3))  # the small path
        # nearly square, beyond the small path: the estimate (with its certificate sweep for
        # floats) and the passes; epsilon=False would only validate the rows
        nearly_square = (rng.random((520, 530)) * 1000).astype(dtype)
        solve(nearly_square)
        solve(nearly_square, epsilon=False)  # the sweep that only validates the rows
    if functions:
        @njit
        def entry(i, j):
            return float((i * 7 + j * 3) % 5)

        @njit
        def row(i, out):
            for j in range(out.shape[0]):
                out[j] = (i * 7 + j * 3) % 5

        for fn, kind in ((entry, "element"), (row, "row")):
            src = costfns.from_function(fn, (8, 8), kind=kind)
            for cache in ("lfu", "slru"):
                solve(src, memory=8 * 8, cache=cache, threads=1)
    small = rng.random((40, 40)) * 100  # more rows than the certificate's sample
    if sources:  # its sweep compiles too; matrices of the other two dtypes through a cache
        for src in (costfns.Random(40), costfns.RandomInt(40, 20),
                    costfns.Dense(small.astype(np.float32)), costfns.Dense(small.astype(np.int32))):
            solve(src, threads=1)  # a table
            for cache in ("lfu", "slru"):
                solve(src, memory=40 * 8 * 4, cache=cache, threads=1)
    if candidates:
        from .candidates import compile_sparse_kernels
        for integral in (False, True):
            compile_sparse_kernels(integral, progress=False)
        passes = [small, small.astype(np.int64), costfns.Random(40), costfns.RandomInt(40, 20)]
        if functions:
            passes += [costfns.from_function(entry, (40, 40), kind="element"),
                       costfns.from_function(row, (40, 40), kind="row")]
        for cost in passes:
            solve(cost, candidates=8, threads=1)
    return time.perf_counter() - t0
