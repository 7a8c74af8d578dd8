"""The public entry points: ``solve`` and the scipy drop-in ``linear_sum_assignment``."""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from ._validate import as_matrix, canonical_dense, check_options
from .solution import Solution


def solve(cost: Any, *, maximize: bool = False, epsilon: bool = True, backend: str = "cpu",
          memory: int | str | None = None, cache: str = "auto", threads: int | None = None,
          progress: bool = False, device: int = 0) -> Solution:
    r"""Solve the linear assignment problem exactly with ε-pricing successive shortest paths.

    Minimises :math:`\sum_i c_{i,\sigma(i)}` over injective maps :math:`\sigma` from the shorter
    side to the longer one (Guthe & Thuerck, "Algorithm 1015", ACM TOMS 47(2), 2021,
    doi:10.1145/3442348): an estimate of the column potentials, a few ε-scaled passes that refine
    them, and a final exact pass (ε = 0) whose result is optimal.

    Parameters
    ----------
    cost : array_like, shape (n1, n2), or a ``costfns.CostSource``
        Cost matrix: float64, float32 (solved exactly as given) or any integer dtype (exact integer
        arithmetic). ``+inf`` marks a forbidden pair (``-inf`` when ``maximize``). A cost source
        (point sets, a function, a file, the paper's classes) is evaluated row by row on demand.
    maximize : bool
        Maximise instead of minimise.
    epsilon : bool
        Use ε-pricing (default). ``False`` runs plain successive shortest paths (one exact pass).
    backend : {"cpu", "gpu", "hungarian-gpu"}
        Where to solve. ``"gpu"`` (needs CuPy: the ``gpu-cuda12``/``gpu-cuda13`` extras) accepts
        NumPy and CuPy matrices (a CuPy input never leaves the device) and cost sources with a
        device form, whose costs are computed inside the GPU kernels. ``"hungarian-gpu"`` is
        the comparison backend: the classical Hungarian algorithm on the GPU (Lopes et al.
        2019, doi:10.1016/j.jpdc.2019.03.014, with Kawtikwar et al.'s improvements) on a dense
        matrix held on the device; ``epsilon`` and ``memory`` do not apply to it.
    memory : int or str, optional
        Budget for cost rows of a cost source (bytes or e.g. ``"1GiB"``); default 2 GiB. When the
        whole matrix fits it is computed once as a table, else rows go through a row cache.
        It bounds the rows held (table or cache slots) and, with ``backend="gpu"``, the device
        memory. The process adds its own: the Python, NumPy and Numba runtime with the
        compiled kernels, and the solver's O(n) state (measured by ``benchmarks/memory.py``;
        the numbers are on the benchmark page). A table is held once (a maximisation of an
        array source negates it into a copy). For a matrix already in host memory on the CPU
        backend ``memory`` and ``cache`` have nothing to bound: they are validated and
        otherwise ignored.
        With ``backend="gpu"``: a budget of device memory (search state, an uploaded NumPy
        matrix, a device row cache), checked before anything is allocated; too small to hold
        the search state and one cached row is an error. A NumPy matrix larger than the budget
        (or the device) is streamed into a device row cache through pinned memory.
    cache : {"auto", "lfu", "slru"}
        Row cache policy; ``auto`` picks LFU when at least a quarter of the rows fit, else SLRU.
        With ``backend="gpu"`` the cache lives in device memory and holds rows that come from
        the host (a NumPy matrix that does not fit, a cost source without a device form), from a
        user's kernel (``costfns.RowKernel``), or — with "lfu"/"slru" given explicitly — the
        rows of a device cost (for expensive costs); ``stats`` then report its hits and misses.
    threads : int, optional
        CPU threads for the passes and, for a dense matrix, the estimate (``backend="cpu"``).
        Each thread owns a slice of the columns (its part of d, v, the free flags and, for a row
        cache, its own cache of those columns, computed in parallel) and the threads meet at one
        barrier per Dijkstra step; results are
        identical for every thread count. ``None`` (default): every core Numba may use
        (``numba.get_num_threads()``) when the problem has at least
        ``epslap.cpu.solver.AUTO_MIN_COLS_FLOAT`` (2000) columns for a float matrix in memory,
        ``AUTO_MIN_COLS`` (4000) for integer matrices and costs on demand, else 1 — below those
        measured crossovers the per-step barrier costs more than the split scan saves — and
        never more threads than cores not busy with other runnable tasks at the start of the
        solve (Linux ``/proc/loadavg``; lock-step threads stall when one of them waits for a core).
        ``1``: the serial kernel. An explicit count is capped at one thread per 8 columns and
        at the threads Numba may use (``numba.get_num_threads()``, with a warning): the threads
        meet once per Dijkstra step, so more threads than cores stall each other.
        For a matrix in memory the estimate's certificate sweep and stages A–E use the same
        threads (same results).
    progress : bool
        Draw a progress bar on stderr during the passes (CPU backend).
    device : int
        CUDA device for ``backend="gpu"`` and ``"hungarian-gpu"``.

    Returns
    -------
    Solution
        ``row_ind``, ``col_ind`` (scipy conventions), ``cost``, duals ``u``, ``v`` and ``stats``.

    Raises
    ------
    ValueError
        Not a matrix; NaN or -inf entries; no complete finite assignment (``InfeasibleError``);
        integer values that could overflow int64.
    TypeError
        A non-numeric array.
    """
    check_options(backend=backend, maximize=maximize, epsilon=epsilon, memory=memory,
                  cache=cache, threads=threads, progress=progress, device=device)
    t_start = time.perf_counter()
    if backend == "hungarian-gpu":
        from .gpu.hungarian import solve_hungarian
        return solve_hungarian(cost, maximize=maximize, device=device, t_start=t_start)
    if backend == "gpu":
        from .gpu.api import solve_gpu
        return solve_gpu(cost, maximize=maximize, epsilon=epsilon, device=device,
                         t_start=t_start, memory=memory, cache=cache)
    from costfns import CostSource
    if isinstance(cost, CostSource):
        from ._ondemand import solve_source
        return solve_source(cost, maximize=maximize, epsilon=epsilon, memory=memory, cache=cache,
                            threads=threads, progress=progress, t_start=t_start)
    from .cpu.solver import AUTO_MIN_COLS, AUTO_MIN_COLS_FLOAT, resolve_threads, solve_rows
    arr = as_matrix(cost)
    min_cols = AUTO_MIN_COLS if arr.dtype.kind in "biu" else AUTO_MIN_COLS_FLOAT
    nthreads = resolve_threads(threads, max(arr.shape), min_cols) if arr.size else 1
    # the estimate checks float values; integers are checked (and narrowed) on the threads
    canon = canonical_dense(arr, maximize, check_values=False, threads=nthreads)
    m = canon.matrix
    n1, n2 = m.shape
    if n1 == 0:
        row_to_col, v, assigned, stats = empty_solve(n2, canon.integral, backend)
    else:
        row_to_col, v, stats = solve_rows(m, n1, n2, m.dtype, integral=canon.integral,
                                          epsilon=epsilon, progress=progress, threads=nthreads)
        assigned = m[np.arange(n1), row_to_col].astype(v.dtype)
    return finish(m.shape, canon.transposed, canon.integral, row_to_col, v, assigned, stats,
                  maximize, t_start)


def empty_solve(n2: int, integral: bool, backend: str):
    """``(row_to_col, v, assigned, stats)`` of a problem with no rows, for every backend."""
    work = np.int64 if integral else np.float64
    stats = {"backend": backend, "rows_evaluated": 0, "passes": 0, "epsilons": [],
             "time_estimate_s": 0.0, "time_solve_s": 0.0, "compile_s": 0.0}
    return np.zeros(0, np.int64), np.zeros(n2, work), np.zeros(0, work), stats


def finish(shape, transposed, integral, row_to_col, v, assigned, stats, maximize,
           t_start) -> Solution:
    """Map the canonical solution back: transpose, sign, duals, and the objective value.

    ``assigned[i]`` is the canonical cost of row i's assigned pair (work dtype).
    """
    n1, n2 = shape
    rows = np.arange(n1, dtype=np.int64)
    work = v.dtype
    if n2:  # unassigned columns tie at max v: after the shift their dual is exactly 0
        v = v - v.max()
    # u from the shifted v: one rounding relative to u itself, so that every reduced cost is
    # exact to a few units in the last place of its own terms (see ``epslap.verify``)
    u = assigned - v[row_to_col] if n1 else np.zeros(0, work)
    if maximize:
        u, v = -u, -v
    if transposed:
        order = np.argsort(row_to_col, kind="stable")
        row_ind, col_ind = row_to_col[order], rows[order]
        u, v = v, u
    else:
        row_ind, col_ind = rows, row_to_col
    total = assigned.sum(dtype=work) if n1 else work.type(0)
    if maximize:
        total = -total
    stats = dict(stats)
    stats.update(n_rows=int(n2 if transposed else n1), n_cols=int(n1 if transposed else n2),
                 transposed=transposed, maximize=maximize,
                 time_total_s=time.perf_counter() - t_start)
    cost_value = int(total) if integral else float(total)
    return Solution(row_ind=row_ind, col_ind=col_ind, cost=cost_value, u=u, v=v, stats=stats)


def linear_sum_assignment(cost_matrix: Any, maximize: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Drop-in for :func:`scipy.optimize.linear_sum_assignment`: same results and errors.

    Returns ``(row_ind, col_ind)`` as int64 arrays, ``row_ind`` sorted; the optimal assignment
    is ``cost_matrix[row_ind, col_ind]``.
    """
    sol = solve(cost_matrix, maximize=bool(maximize))
    return sol.row_ind, sol.col_ind
