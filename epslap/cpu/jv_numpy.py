"""The small path's first calls in a fresh environment, before its kernel is compiled.

Compiling ``jv.solve_small`` takes about 15 s on the 2-core machine, once per environment
(Numba's disk cache serves every later process in well under a second). Until that compile
pays, a call is answered by :func:`solve_small`, the same shortest augmenting paths (a column
reduction for square problems, then one Dijkstra search per free row) written with NumPy's
vector operations: each step of a search is a few operations over the row's unscanned columns.
It has ``jv.solve_small``'s arguments and results, so the small path's callers take it as they
take a compiled entry.

The rule that decides between them is the ski rental's: the vector form is used while the time
it has spent stays below what the compile would cost (``COMPILE_S``), then the kernel is
compiled; a process that solves one problem never waits for a compile, and one that solves many
pays at most about twice the compile. The compile serves every later process (Numba's disk
cache), so the time spent is counted across processes too: a small file beside that cache
(``RENT_FILE``) carries it, so that short processes run again and again reach the compile as
one long one would. Where Numba's disk cache holds the kernel already, it is loaded at once
(``small._prepare``).
"""
from __future__ import annotations

import atexit
import os
import time

import numpy as np

from .._exact import CHECK_RTOL
from .._status import STATUS_INFEASIBLE, STATUS_OK, Status

#: what the first compile of ``jv.solve_small`` costs in a fresh environment, about (2-core
#: machine: 15-18 s); the vector form's calls stop once they have spent this much
COMPILE_S = 15.0
#: the vector form's time spent (ski rental: rent until it reaches COMPILE_S): this process's,
#: and what earlier processes left in RENT_FILE (read once, None until then)
_SPENT = [0.0]
_BEFORE: list = [None]
#: the file beside Numba's disk cache of the small path's kernel that carries the time spent
RENT_FILE = "epslap-first-calls.seconds"
#: ``jv.NEEDS_EPSILON``: float duals that miss ``verify``'s rule (the ε path solves then)
NEEDS_EPSILON = int(Status.NEEDS_EPSILON)
#: rows read per row after which either form of the small path hands the problem to the ε path
#: (``jv`` takes it from here; docs/algorithm.md §9)
ROW_BUDGET = 48
_INT_BIG = 2**62


def compile_from_now() -> None:
    """End the rental in this process: the small path's kernel is compiled at its next call
    (``epslap.precompile``; the benchmarks, which time the compiled kernel)."""
    global COMPILE_S
    COMPILE_S = 0.0


def rent_pays() -> bool:
    """Whether a call should take the vector form rather than compile the kernel now."""
    if _BEFORE[0] is None:
        _BEFORE[0] = _read_rent()
    return _BEFORE[0] + _SPENT[0] < COMPILE_S


_RENT_DIR: list = [None]


def keep_rent_beside(dispatcher) -> None:
    """Keep RENT_FILE in the directory of ``dispatcher``'s disk cache (the small path's kernel;
    ``jv`` says so once). Read through Numba's undocumented cache object: where that fails,
    this process's time alone counts."""
    try:
        _RENT_DIR[0] = dispatcher._cache._cache_path
    except Exception:  # noqa: BLE001 - Numba's internals changed
        _RENT_DIR[0] = None


def _rent_path():
    return None if _RENT_DIR[0] is None else os.path.join(_RENT_DIR[0], RENT_FILE)


#: rent not yet written to RENT_FILE; written once it reaches RENT_FLUSH_S, and at exit
_UNSAVED = [0.0]
RENT_FLUSH_S = 0.25


def _read_rent() -> float:
    """The seconds RENT_FILE holds: one line per write, appended (processes writing at once
    each add their own line; an append this short is written whole)."""
    path = _rent_path()
    try:
        with open(path, encoding="ascii") as fh:
            return max(0.0, sum(float(line) for line in fh if line.strip()))
    except (OSError, TypeError, ValueError):
        return 0.0


def _add_rent(seconds: float) -> None:
    """This call's time, in this process and, in batches of RENT_FLUSH_S, in RENT_FILE."""
    _SPENT[0] += seconds
    _UNSAVED[0] += seconds
    if _UNSAVED[0] >= RENT_FLUSH_S:
        _flush_rent()


def _flush_rent() -> None:
    seconds, _UNSAVED[0] = _UNSAVED[0], 0.0
    path = _rent_path()
    if path is None or seconds <= 0.0:
        return
    try:
        with open(path, "a", encoding="ascii") as fh:
            fh.write(f"{seconds:.6f}\n")
    except OSError:
        pass


atexit.register(_flush_rent)  # the rent of the last calls, when the process ends


def solve_small(c, maximize, xs, duals):
    """``jv.solve_small`` in NumPy (module docstring): the same arguments, results and statuses
    (the caller checked the values: no NaN, -inf, or costs beyond the range rules)."""
    t0 = time.perf_counter()
    try:
        return _solve_small(c, maximize, xs, duals)
    finally:
        _add_rent(time.perf_counter() - t0)


def _solve_small(c, maximize, xs, duals):
    integral = c.dtype.kind in "biu"
    work = np.int64 if integral else np.float64
    transposed = c.shape[0] > c.shape[1]
    m = (c.T if transposed else c).astype(work)  # a copy: negated in place below
    if maximize:
        np.negative(m, out=m)
    n1, n2 = m.shape
    status, x, y, v, reads, polish_rows = _certified(m, integral, _row_duals_hold)
    if status != STATUS_OK:
        return status, work(0), reads, polish_rows
    rows = np.arange(n1)
    if integral:
        u = m[rows, x] - v[x]
    else:
        with np.errstate(invalid="ignore"):
            u = (m - v).min(axis=1)
    total = work(0) + np.cumsum(m[rows, x])[-1]  # in row order from 0, as the kernel sums
    if transposed:
        cols = np.flatnonzero(y >= 0)
        xs[:n1], xs[n1:] = cols, y[cols]
        first, second = v, u
    else:
        xs[:n1], xs[n1:] = rows, x
        first, second = u, v
    if duals.shape[0]:
        k = first.shape[0]
        duals[:k] = -first if maximize else first
        duals[k:] = -second if maximize else second
    return STATUS_OK, (-total if maximize else total), reads, polish_rows


def _certified(m, integral: bool, duals_hold):
    """Solve and bring float duals within ``verify``'s rule as the kernel does: prices at max
    0, checked by ``duals_hold(m, v, x)``; where they miss, one more solve of every row from
    those prices (``jv.polish``), checked again, else NEEDS_EPSILON. Returns ``(status, x, y,
    v, rows evaluated, polish rows)``."""
    status, x, y, v, reads = _shortest_paths(m, integral)
    polish_rows = 0
    if status == STATUS_OK:
        v -= v.max()  # the reported position: the largest price 0 (every free column's)
        if not integral and not duals_hold(m, v, x):
            status, x, y, v, polish_rows = _shortest_paths(m, integral, v)
            reads += polish_rows
            if status == STATUS_OK:
                v -= v.max()
                if not (_free_at_top(v, y) and duals_hold(m, v, x)):
                    status = NEEDS_EPSILON
    return status, x, y, v, reads, polish_rows


def _free_at_top(v, y) -> bool:
    """``jv.free_at_top``: every column no row holds (``y < 0``) at the top price 0."""
    return not (v[y < 0] != 0).any()


def _row_duals_hold(m, v, x) -> bool:
    """``jv._row_duals``'s test: with u the rows' least reduced costs, every assigned pair's
    slack within the rule."""
    rows = np.arange(m.shape[0])
    with np.errstate(invalid="ignore"):
        u = (m - v).min(axis=1)
    cx = m[rows, x]
    slack = (cx - u) - v[x]
    return not (np.abs(slack) > CHECK_RTOL * ((np.abs(cx) + np.abs(u)) + np.abs(v[x]))).any()


def _shortest_paths(m, integral: bool, v=None):
    """Assign every row of the canonical ``m`` (n1 <= n2, minimised; +inf forbidden) by
    shortest augmenting paths; a square problem without start prices ``v`` starts from its
    column minima (each taken by its row where free, last column first, as the kernel does).
    Returns ``(status, x, y, v, rows evaluated)``; NEEDS_EPSILON past ROW_BUDGET rows a row,
    as the kernel (long paths: the ε path's case).

    As in the kernel, a search measures a row reached through its column ``jp`` at distance
    ``low`` as ``((c_i - c_ij_p) - (v - v_jp)) + low``, clamped at ``low``, so rounding cannot
    make a reduced cost negative. Each step works on whole rows: ``key`` holds the open
    columns' distances (closed ones at ``big``, so that argmin skips them), ``bound`` the same
    with closed ones at ``-big`` (so that no relaxation reaches them)."""
    n1, n2 = m.shape
    big = _INT_BIG if integral else np.inf
    x = np.full(n1, -1, np.int64)
    y = np.full(n2, -1, np.int64)
    reads = 0
    budget = ROW_BUDGET * n1 + 64
    if v is not None:
        v = v.copy()
    elif n1 == n2:  # column reduction: each column's minimum, taken by its row where free
        v = m.min(axis=0)
        reads = n1
        if not integral and not np.isfinite(v).all():
            v = np.where(np.isfinite(v), v, 0.0)
        else:
            first = m.argmin(axis=0)
            for j in range(n2 - 1, -1, -1):
                i = first[j]
                if x[i] < 0:
                    x[i], y[j] = j, i
    else:
        v = np.zeros(n2, m.dtype)
    for f in range(n1):
        if x[f] >= 0:
            continue
        key = np.full(n2, big, m.dtype)
        bound = key.copy()
        pred = np.full(n2, -1, np.int64)
        closed, at = [], []  # columns closed in order, their distances
        i, jp, low = f, -1, m.dtype.type(0)
        while True:
            reads += 1
            if reads > budget:
                return NEEDS_EPSILON, x, y, v, reads
            with np.errstate(invalid="ignore"):
                if jp < 0:  # the free row: its reduced costs less their least
                    red = m[f] - v
                    least = red.min()
                    if not least < big:
                        return STATUS_INFEASIBLE, x, y, v, reads
                    r = red - least
                else:
                    r = np.maximum(((m[i] - m[i, jp]) - (v - v[jp])) + low, low)
            better = r < bound
            key[better] = r[better]
            bound[better] = r[better]
            pred[better] = i
            j = int(np.argmin(key))
            low = key[j]
            if not low < big:
                return STATUS_INFEASIBLE, x, y, v, reads
            if y[j] >= 0:  # a tie with a free column ends the search there
                ties = np.flatnonzero(key == low)
                free = ties[y[ties] < 0]
                j = int(free[0]) if free.size else j
            closed.append(j)
            at.append(low)
            key[j] = big
            bound[j] = -big
            if y[j] < 0:
                break
            i, jp = int(y[j]), j
        cols = np.array(closed)
        # prices: the closed columns fall by what their path saved on the final distance
        v[cols] -= low - np.array(at, dtype=m.dtype)
        while True:  # flip the path back to f
            i = int(pred[j])
            y[j] = i
            j, x[i] = x[i], j
            if i == f:
                break
    return STATUS_OK, x, y, v, reads
