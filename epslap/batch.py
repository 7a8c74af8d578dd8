"""Many independent problems in one call: :func:`solve_batch` and
:func:`linear_sum_assignment_batch` (CPU; ``backend="gpu"``: ``gpu/batch.py``).

The problems are spread over threads, a contiguous share of them per thread and no barrier: each
thread runs the small path's compiled solver (``cpu/jv.py``) over its share without returning to
Python. A 3-D array (B, n1, n2) is solved in place of B calls; a list of matrices of different
shapes or dtypes is grouped by (shape, dtype) into such stacks. Problems that the small path
does not take (square ones above ``small.MAX_SQUARE`` columns) are solved one after the other by
:func:`epslap.solve`, each on every thread.
"""
from __future__ import annotations

import threading
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._status import STATUS_OK, raise_for_status
from ._sync import usable_cores
from ._validate import (Problem, check_cost_limit, check_float_range, check_int_range,
                        check_options, float_kind)
from .cpu import jv, small
from .big_m import solve_apart
from .cpu.api import solve_cpu
from .errors import member_error, solved_groups
from .limit import solve_batch_with_limit
from .solution import Solution, orient_duals


@dataclass(frozen=True)
class BatchSolution:
    """The optimal assignments of a batch, problem ``k`` at index ``k`` of every field.

    For a 3-D input the fields are arrays: ``row_ind``, ``col_ind`` (B, min(n1, n2)) int64,
    ``cost`` (B,), ``u`` (B, n1), ``v`` (B, n2); for a list input, lists of arrays (``cost``
    stays an array: int64 when every problem is an integer matrix, else float64). Each
    problem's duals certify it as :class:`Solution`'s do.
    ``solution(k)`` builds problem k's :class:`Solution`.
    """

    row_ind: Any
    col_ind: Any
    cost: np.ndarray
    u: Any
    v: Any
    stats: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.cost)

    def __iter__(self):
        """Unpack like :func:`linear_sum_assignment_batch`: ``r, k = solve_batch(c)``."""
        return iter((self.row_ind, self.col_ind))

    def solution(self, k: int) -> Solution:
        cost = self.cost[k]
        return Solution(row_ind=self.row_ind[k], col_ind=self.col_ind[k],
                        cost=int(cost) if self.cost.dtype.kind == "i" else float(cost),
                        u=self.u[k], v=self.v[k],
                        stats={"backend": self.stats.get("backend", "cpu"), "batch_index": k})


def solve_batch(costs: Any, *, maximize: bool = False, backend: str = "cpu",
                threads: int | None = None, device: int = 0,
                cost_limit: float | None = None) -> BatchSolution:
    """Solve every problem of ``costs`` exactly.

    Parameters
    ----------
    costs : array_like (B, n1, n2), or a sequence of matrices
        Every dtype :func:`epslap.solve` takes; +inf marks a forbidden pair (-inf when
        maximising); rectangular both ways; shapes and dtypes may differ in a sequence.
    maximize : bool
        Maximise instead of minimise, every problem.
    backend : {"cpu", "gpu"}
        Where the batch runs. ``"gpu"`` (CuPy) solves a stack in one kernel launch, one team of
        threads per problem (``epslap/gpu/batch.py``); a CuPy input stays on the device and its
        results are CuPy arrays (a sequence: each matrix's results where it was), NumPy input
        gives NumPy results.
    threads : int, optional
        CPU: threads that share the problems (default: every thread Numba may use, at most one
        per problem). Validated and unused on the GPU.
    device : int
        The CUDA device of ``backend="gpu"``.
    cost_limit : float, optional
        As :func:`epslap.solve`'s, for every problem: rows and columns may stay unmatched at
        ``cost_limit / 2`` each. ``row_ind``/``col_ind`` are then lists (each problem matches
        its own number of pairs); ``stats`` holds ``matched``, ``unmatched_rows`` and
        ``unmatched_cols`` per problem.

    Raises
    ------
    ValueError, InfeasibleError, TypeError
        As :func:`epslap.solve`, for the first bad problem, with its index in the message.
    """
    t_start = time.perf_counter()
    check_options(backend=backend, maximize=maximize, epsilon=True, memory=None, cache="auto",
                  threads=threads, progress=False, device=device)
    limit = check_cost_limit(cost_limit, maximize)
    if limit is not None:
        return BatchSolution(*solve_batch_with_limit(costs, limit, lambda e: solve_batch(
            e, maximize=maximize, backend=backend, threads=threads, device=device), maximize))
    if backend == "gpu":
        from .gpu.batch import solve_batch_gpu
        try:
            *fields, stats = solve_batch_gpu(costs, maximize=bool(maximize), device=int(device))
        except ValueError as exc:
            if not str(exc).startswith("problem "):  # a range check of a whole stack: name
                _name_the_member(costs, bool(maximize))  # the member beyond the rule
            raise
        stats["time_total_s"] = time.perf_counter() - t_start
        return BatchSolution(*fields, stats)
    if backend != "cpu":
        raise ValueError(f"solve_batch runs on backend='cpu' or 'gpu'; backend={backend!r} is "
                         "not available for batches")
    maximize = bool(maximize)
    nthreads = _batch_threads(threads)
    if isinstance(costs, np.ndarray) and costs.ndim == 3 or (
            not isinstance(costs, (list, tuple)) and np.ndim(costs) == 3):
        stack = _as_stack(np.asarray(costs), 0)
        out = _solve_stack(stack, maximize, nthreads, np.arange(stack.shape[0]), threads)
        out.stats["time_total_s"] = time.perf_counter() - t_start
        return out
    if not isinstance(costs, (list, tuple)):
        raise ValueError(f"costs must be a 3-D array (B, n1, n2) or a sequence of matrices, got "
                         f"{np.ndim(costs)} dimensions")
    mats = [_as_matrix(c, k) for k, c in enumerate(costs)]
    groups: dict = {}
    for k, m in enumerate(mats):
        groups.setdefault((m.shape, m.dtype.str), []).append(k)
    n = len(mats)
    row_ind, col_ind, u, v = [None] * n, [None] * n, [None] * n, [None] * n
    integral = any(m.dtype.kind in "biu" for m in mats) and all(m.dtype.kind in "biu"
                                                                for m in mats)
    cost = np.zeros(n, np.int64 if integral else np.float64)
    rows = np.zeros(n, np.int64)
    def solve_group(_, idx):
        return _solve_stack(np.stack([mats[k] for k in idx]), maximize, nthreads,
                            np.asarray(idx), threads)
    for _, idx, part in solved_groups(groups, solve_group):
        for t, k in enumerate(idx):
            row_ind[k], col_ind[k] = part.row_ind[t], part.col_ind[t]
            u[k], v[k] = part.u[t], part.v[t]
            cost[k] = part.cost[t]
            rows[k] = part.stats["rows_evaluated"][t]
    stats = {"backend": "cpu", "threads": nthreads, "rows_evaluated": rows,
             "time_total_s": time.perf_counter() - t_start}
    return BatchSolution(row_ind, col_ind, cost, u, v, stats)


def linear_sum_assignment_batch(costs: Any, maximize: bool = False, *, backend: str = "cpu",
                                device: int = 0, cost_limit: float | None = None):
    """:func:`solve_batch`'s ``(row_ind, col_ind)``: arrays (B, k) for a 3-D input, lists of
    arrays for a sequence (scipy's convention per problem: ``row_ind[k]`` sorted).
    ``backend``, ``device`` and ``cost_limit`` are :func:`solve_batch`'s (its threads: the
    default, every core this process may use)."""
    sol = solve_batch(costs, maximize=bool(maximize), backend=backend, device=device,
                      cost_limit=cost_limit)
    return sol.row_ind, sol.col_ind


def _as_matrix(c, k: int) -> np.ndarray:
    try:
        a = np.asarray(c)
    except (ValueError, TypeError) as exc:  # ragged rows, say
        raise type(exc)(f"problem {k}: {exc}") from None
    if a.ndim != 2:
        raise ValueError(f"problem {k}: expected a matrix (2-D array), got a {a.ndim}-D array")
    return _as_stack(a[None], k)[0]


def _as_stack(a: np.ndarray, first: int) -> np.ndarray:
    """Check a (B, n1, n2) stack's dtype like ``solve`` does (``first``: the index of its first
    problem, for the messages)."""
    if hasattr(a, "__cuda_array_interface__") and not isinstance(a, np.ndarray):
        raise TypeError("a GPU array was given to the CPU batch: copy it to the host first")
    if a.ndim != 3:
        raise ValueError(f"costs must be a 3-D array (B, n1, n2), got {a.ndim} dimensions")
    if a.dtype.kind not in "biuf" or (a.dtype.kind == "f" and float_kind(a.dtype) is None):
        raise TypeError(f"problem {first}: cannot cast array data from {a.dtype!r} to "
                        "dtype('float64') according to the rule 'safe'")
    return a


def _canonical(stack: np.ndarray, maximize: bool, index):
    """(C-contiguous canonical stack: n1 <= n2 and minimised, transposed, integral); ``index``:
    each problem's index in the caller's batch, for the messages."""
    integral = stack.dtype.kind in "biu"
    if integral:
        if stack.size:
            lo, hi = int(stack.min()), int(stack.max())
            if maximize:
                lo, hi = -hi, -lo
            try:
                check_int_range(lo, hi, stack.shape[1:])
            except ValueError:  # the stack's range: the first member beyond the rule says its own
                _name_the_member(stack, maximize, index)
                raise
        stack = stack.astype(np.int64)
    else:
        stack = stack.astype(float_kind(stack.dtype), copy=False)
    if maximize:
        stack = -stack
    transposed = stack.shape[1] > stack.shape[2]
    if transposed:
        stack = stack.transpose(0, 2, 1)
    return np.ascontiguousarray(stack), transposed, integral


def _name_the_member(costs, maximize: bool, index=None) -> None:
    """Raise the range error of the first member of ``costs`` (a stack or a sequence; NumPy or
    CuPy) beyond the integer or float range rule of its own shape, naming its index in the
    caller's batch (``index[t]`` for member t; default t); return if none is (the caller
    re-raises its own error). Called where a check of a whole stack failed: the stack's range
    is not the member's, and the message must say which problem it is."""
    for t in range(len(costs)):
        m = costs[t]
        if not hasattr(m, "__cuda_array_interface__"):
            try:
                m = np.asarray(m)
            except (ValueError, TypeError):
                continue  # not a matrix: the member checks name it
        if m.ndim != 2 or not m.size or m.dtype.kind not in "biuf":
            continue
        try:
            if m.dtype.kind in "biu":
                lo, hi = int(m.min()), int(m.max())
                check_int_range(*((-hi, -lo) if maximize else (lo, hi)), m.shape)
            else:
                check_float_range(m, m.shape)
        except ValueError as exc:
            raise member_error(exc, t if index is None else int(index[t])) from None


def _solve_stack(stack: np.ndarray, maximize: bool, nthreads: int, index,
                 threads: int | None) -> BatchSolution:
    """Solve a (B, n1, n2) stack on ``nthreads``; ``index``: each problem's index in the caller's
    batch. A problem left to the ε path is solved on the caller's ``threads``: ``None`` lets
    :func:`epslap.solve` choose (one thread below its size rule, fewer on a loaded machine)
    instead of lock-stepping as many threads as the batch shares its problems over."""
    c, transposed, integral = _canonical(stack, maximize, index)
    b, n1, n2 = c.shape
    work = np.int64 if integral else np.float64
    x = np.zeros((b, n1), np.int64)
    v = np.zeros((b, n2), work)
    u = np.zeros((b, n1), work)
    total = np.zeros(b, work)
    row_ind = np.empty((b, n1), np.int64)
    status = np.zeros(b, np.int64)
    rows = np.zeros(b, np.int64)
    if b and n1:
        if small.applies(n1, n2):
            _run_threads((c, integral, x, v, status, rows, u, total, row_ind),
                         max(1, min(nthreads, b)))
        else:
            status[:] = jv.NEEDS_EPSILON
            row_ind[:] = np.arange(n1)
    for k in np.flatnonzero(status != STATUS_OK).tolist():  # errors name the first bad
        if status[k] == jv.NEEDS_EPSILON:                   # problem; rare leftovers: ε path
            try:
                sol = solve_apart(Problem(c[k], "matrix", False), lambda p: solve_cpu(
                    p.cost, maximize=False, epsilon=True, threads=threads, progress=False,
                    t_start=time.perf_counter(), small_tried=True))  # (big costs: big_m.py)
            except (ValueError, ArithmeticError) as exc:
                raise member_error(exc, int(index[k])) from None
            x[k], v[k], u[k] = sol.col_ind, sol.v, sol.u  # canonical: n1 <= n2, minimised
            total[k] = sol.cost
            rows[k] = sol.stats["rows_evaluated"]
        elif status[k] != STATUS_OK:
            try:
                if status[k] == jv.OUT_OF_RANGE:  # float costs beyond the range rule
                    check_float_range(c[k], c[k].shape)
                raise_for_status(int(status[k]), "cpu")
            except (ValueError, ArithmeticError) as exc:
                raise member_error(exc, int(index[k])) from None
    row_ind, col_ind, u, v, total = orient_duals(x, u, v, total, maximize, transposed,
                                                 rows=row_ind)
    stats = {"backend": "cpu", "threads": nthreads, "rows_evaluated": rows}
    return BatchSolution(row_ind, col_ind, total, u, v, stats)


def _batch_threads(threads) -> int:
    """Threads for a batch: the cores this process may run on (at most the threads Numba may
    use) by default; an explicit count up to those cores (above them, capped with a warning,
    as ``cpu.cores.resolve_threads`` caps a single solve's)."""
    cap = usable_cores()
    if threads is None:
        return cap
    if int(threads) > cap:
        warnings.warn(f"threads={threads} is more than the {cap} cores this process may use; "
                      f"using {cap}", RuntimeWarning, stacklevel=3)
        return cap
    return int(threads)


def _run_threads(args: tuple, nthreads: int) -> None:
    """``jv.solve_share`` over contiguous shares of the problems, one share per thread."""
    b = args[0].shape[0]
    bounds = [(b * t) // nthreads for t in range(nthreads + 1)]
    if nthreads == 1:
        jv.solve_share(args[0], args[1], 0, b, *args[2:])
        return
    workers = [threading.Thread(target=jv.solve_share,
                                args=(args[0], args[1], bounds[t], bounds[t + 1], *args[2:]),
                                name="epslap-batch", daemon=True) for t in range(nthreads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
