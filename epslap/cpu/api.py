"""The CPU backend's dense method (see :func:`epslap.solve`): a matrix in memory (the small
path, or the ε-passes), and a cost source — computed once as a table and solved as a matrix
where it fits the memory budget, else oriented and streamed through row caches; both end in the
one compiled solver (``solver.solve_rows``)."""
from __future__ import annotations

import sys

import numpy as np

from costfns.functions import FunctionSource
from costfns.rows import has_part_form

from .._sources import (DEFAULT_MEMORY, NegatedState, int_row_limit, negated, negates_inside,
                        raise_out_of_range, raise_pending)
from .._validate import canonical_dense, check_before_compile, parse_memory
from ..cache import join_caches, make_cache, serve_rows
from ..big_m import one_row_magnitude
from ..checkpoint import canonical_hint, hint_misled, hint_scale, writing
from ..solution import Solution, empty_solve, finish
from . import small
from .passes import col_range
from .cores import AUTO_MIN_COLS, AUTO_MIN_COLS_FLOAT, resolve_threads
from .duals import assigned_costs
from .host import rows_served
from .solver import solve_rows

_ROW_DTYPES = (np.float64, np.float32, np.int64, np.int32)
#: the float dtypes whose ε-passes this process has run (compiled): a matrix of another, of at
#: most PRECHECK_MAX entries, is checked in NumPy first (``check_before_compile``: under 0.1 s
#: at that size on the 2-core machine; a larger matrix's solve outweighs its compile anyway)
_SOLVED_DTYPES: set = set()
PRECHECK_MAX = 2**24


def _hit_rate_text(state):
    """Live cache hit rate for the progress bar (the kernel updates ``state.policy.hits`` in
    place)."""
    policy = getattr(state, "policy", None)
    if policy is None:
        return None
    hits = policy.hits

    def text() -> str:
        h, m = int(hits[0]), int(hits[1])
        return f"cache hits {h / (h + m):.1%}" if h + m else "cache hits -"
    return text


def solve_cpu(arr: np.ndarray, *, maximize: bool, epsilon: bool, threads, progress: bool,
              t_start: float, init=None, checkpoint=None, small_tried: bool = False) -> Solution:
    """Solve the matrix ``arr`` (2-D, numeric: ``_validate.problem_of``) on the CPU. A small
    matrix takes the small path in one compiled call (``small.small_solution``: a tiny problem's
    time is mostly this call's overhead); what that path cannot certify, and larger matrices,
    the ε-passes. ``init`` (a warm start) and ``checkpoint``
    (``epslap.checkpoint.Checkpointing``) go to the ε-passes, whatever the size.
    ``small_tried``: the caller ran the small path on this matrix already and it handed the
    problem over (a second try would repeat its work)."""
    # the small path runs on the calling thread; threads > 1 asks for the parallel ε-passes,
    # except for a rectangular matrix with many spare columns, which the passes would pad
    if not small_tried and epsilon and checkpoint is None and small.takes(*arr.shape, threads):
        sol = small.small_solution(arr, maximize, t_start)
        if sol is not None:
            if progress:  # one call, too short for phases: say what ran
                sys.stderr.write(f"solved in {sol.stats['time_total_s']:.3f} s by the small path "
                                 f"(docs/algorithm.md §9): {sol.stats['rows_evaluated']:,} rows "
                                 f"evaluated\n")
            return sol
    min_cols = AUTO_MIN_COLS if arr.dtype.kind in "biu" else AUTO_MIN_COLS_FLOAT
    nthreads = resolve_threads(threads, max(arr.shape), min_cols) if arr.size else 1
    # the solvers check float values; integers are checked (and narrowed) on the threads
    canon = canonical_dense(arr, maximize, check_values=False, threads=nthreads)
    m = canon.matrix
    n1, n2 = m.shape
    if m.dtype.kind == "f" and m.dtype not in _SOLVED_DTYPES and m.size <= PRECHECK_MAX:
        check_before_compile(m, False)  # the passes' first compile waits on no input error
    init_v = None if init is None else canonical_hint(
        init, n_rows=arr.shape[0], n_cols=arr.shape[1], transposed=canon.transposed,
        maximize=maximize, integral=canon.integral,
        scale=None if canon.integral else hint_scale(m))
    if n1 == 0:
        row_to_col, v, assigned, stats = empty_solve(n2, canon.integral, "cpu")
    else:
        row_to_col, v, stats = solve_rows(m, n1, n2, m.dtype, integral=canon.integral,
                                          epsilon=epsilon, progress=progress, threads=nthreads,
                                          checkpoint=checkpoint, init_v=init_v,
                                          hand_over=threads is None)
        _SOLVED_DTYPES.add(m.dtype)
        assigned = m[np.arange(n1), row_to_col].astype(v.dtype)
        if init_v is not None and not canon.integral and hint_misled(
                v[row_to_col], assigned, n1 + n2, one_row_magnitude(m)):
            sol = solve_cpu(arr, maximize=maximize, epsilon=epsilon, threads=threads,
                            progress=progress, t_start=t_start, checkpoint=writing(checkpoint))
            sol.stats["warm_start"] = "rejected"
            return sol
    return finish(m.shape, canon.transposed, canon.integral, row_to_col, v, assigned, stats,
                  maximize, t_start)


def _row_dtype(source) -> np.dtype:
    dtype = np.dtype(source.dtype)
    if dtype not in _ROW_DTYPES:
        raise ValueError(f"cost source dtype must be float64, float32, int64 or int32, got {dtype}")
    return dtype


def fits_table(source, memory) -> bool:
    """Whether the whole matrix of ``source`` fits the ``memory`` budget (``solve``'s option):
    then it is computed once, as a table, and solved as a matrix."""
    n1, n2 = source.shape
    budget = parse_memory(DEFAULT_MEMORY if memory is None else memory)
    return n1 * n2 * _row_dtype(source).itemsize <= budget


def table_of(source) -> np.ndarray:
    """The whole matrix of ``source``, computed once (the user function's error raised)."""
    matrix = source.dense()
    raise_pending(source)
    return matrix


def table_stats(source) -> dict:
    """The cache statistics of a solve from a table: every row held, nothing missed."""
    return {"cache_policy": "table", "cache_rows": min(source.shape), "cache_hits": 0,
            "cache_misses": 0}


def solve_source(source, *, maximize, epsilon, memory, cache, progress, t_start, threads=None,
                 init=None, checkpoint=None):
    """Solve a ``costfns.CostSource`` on the CPU: where the whole matrix fits ``memory`` it is
    computed once and solved as a matrix (:func:`solve_cpu`), else its rows go through row
    caches under the budget."""
    n1, n2 = source.shape
    dtype = _row_dtype(source)
    # a warm start is checked before any cost is computed
    init_v = None if init is None else canonical_hint(
        init, n_rows=n1, n_cols=n2, transposed=n1 > n2, maximize=maximize,
        integral=dtype.kind == "i")
    budget = parse_memory(DEFAULT_MEMORY if memory is None else memory)
    if fits_table(source, memory):
        matrix = table_of(source)
        sol = solve_cpu(matrix, maximize=maximize, epsilon=epsilon, threads=threads,
                        progress=progress, t_start=t_start, init=init, checkpoint=checkpoint)
        sol.stats.update(table_stats(source))
        return sol
    transposed = n1 > n2
    if transposed:
        source = source.transpose()
        n1, n2 = n2, n1
    integral = dtype.kind == "i"
    if init is not None and not integral:  # the hint's prices within the costs' scale
        init_v = canonical_hint(init, n_rows=n2 if transposed else n1,
                                n_cols=n1 if transposed else n2, transposed=transposed,
                                maximize=maximize, integral=False, scale=hint_scale(source))
    raw = source.state()
    # a maximisation of a built-in class or a Python function negates inside its state (the
    # kernels compiled for it serve both); any other source gets the negation's wrapper around
    # its caches
    negate_inside = maximize and negates_inside(raw)
    if negate_inside:
        raw = negated(raw)
    if threads is None and (not has_part_form(type(raw)) or isinstance(source, FunctionSource)):
        # no partial rows: every thread would compute whole rows (no gain); a user's function
        # stays on the calling thread unless threads= asks (its errors are caught there)
        threads = 1
    nthreads = resolve_threads(threads, n2)
    row_bytes = n2 * dtype.itemsize
    capacity = budget // max(row_bytes, 1)
    if capacity < 1:
        raise ValueError(f"memory budget of {budget} bytes is smaller than one cost row "
                         f"({row_bytes} bytes for {n2} columns of {dtype}); raise memory")
    policy = cache if cache != "auto" else ("lfu" if 4 * capacity >= n1 else "slru")
    limit = int_row_limit((n1, n2), dtype, maximize) if integral else 0
    # one cache per solver thread, each of its own columns (the same rows, the same budget
    # in total): a miss is computed in parallel, every thread its part of the row
    bounds = [col_range(n2, nthreads, t) for t in range(nthreads)]
    caches = [make_cache(raw, n1, hi - lo, capacity, policy, dtype, limit) for lo, hi in bounds]
    first = caches[0]
    # the estimate and the read-outs take whole rows from the caches joined (of any thread
    # count, one included: one kernel type), the passes each thread's cache
    inner = joined = join_caches(caches, [b[0] for b in bounds] + [n2])
    thread_srcs = caches
    if maximize and not negate_inside:
        inner = NegatedState(inner)
        thread_srcs = [NegatedState(c) for c in thread_srcs]

    def check_rows():
        """Errors that compiled code could only record: the user function's exception, an
        integer row beyond the range rule. Called after the estimate and at the end."""
        raise_pending(source)
        raise_out_of_range(source, caches, (n1, n2), maximize)

    served = None if nthreads == 1 else (lambda: serve_rows(joined))  # helper threads' rows
    gathered: dict = {}  # (an empty problem is a table)
    try:
        row_to_col, v, stats = solve_rows(
            inner, n1, n2, dtype, integral=integral, epsilon=epsilon, progress=progress,
            progress_extra=_hit_rate_text(first), threads=nthreads, thread_srcs=thread_srcs,
            estimate_context=served, check_rows=check_rows, checkpoint=checkpoint,
            init_v=init_v, gathered=gathered, hand_over=threads is None)
    finally:
        check_rows()
    assigned = gathered.get("assigned")  # read by the check of the float duals
    if assigned is None:
        with rows_served(served):
            assigned = assigned_costs(inner, n2, dtype, row_to_col, v.dtype)
    check_rows()
    if init_v is not None and not integral and hint_misled(v[row_to_col], assigned, n1 + n2,
                                                           one_row_magnitude(source)):
        sol = solve_source(source.transpose() if transposed else source, maximize=maximize,
                           epsilon=epsilon, memory=memory, cache=cache, progress=progress,
                           t_start=t_start, threads=threads, checkpoint=writing(checkpoint))
        sol.stats["warm_start"] = "rejected"
        return sol
    # every thread's cache saw the same accesses: report the first one's
    stats.update(cache_policy=policy, cache_rows=int(first.slots.shape[0]),
                 cache_hits=int(first.policy.hits[0]), cache_misses=int(first.policy.hits[1]))
    return finish((n1, n2), transposed, integral, row_to_col, v, assigned, stats, maximize,
                  t_start)
