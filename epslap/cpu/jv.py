"""The small-problem path: dense Jonker–Volgenant in one compiled call (docs/algorithm.md §9).

Below a few hundred columns the ε-passes cannot pay for their estimate and their schedule; the
classical shortest augmenting path method with Jonker & Volgenant's initialisation (Computing 38,
1987) does less work there. One call solves the canonical problem (n1 <= n2, minimised):

1. *Column reduction* (square problems only): v_j = min_i c_ij; each column goes to the row of
   its minimum when that row has no column yet (columns from the last to the first).
2. *Reduction transfer*: a row that got exactly one column lowers that column's price by the
   row's second smallest reduced cost, so the other rows see it as dearer.
3. *Augmenting row reduction*, two rounds: a free row takes the column of its smallest reduced
   cost, lowering that price to its second smallest (or takes the second column on a tie); the
   row it displaces is processed next.
4. *Augmentation*: each row still free gets a shortest augmenting path (Dijkstra on the dense
   reduced costs, no heap); the prices of the columns it closed move by their distance.

Steps 1–3 only choose a better start: any start with feasible prices leaves step 4 exact. A
rectangular problem skips them: its prices start at 0 and only fall on assigned columns, so the
columns left unassigned keep the largest price (their dual is 0 after ``finish``'s shift), the
condition the certificate of a rectangular problem needs. They are skipped too where a cost is
+inf (a price of +inf would poison the arithmetic); step 4 then finds the infeasible row. Float
duals are checked against ``verify``'s per-entry rule and, where they miss it, recomputed by one
exact pass from the final prices (``polish``).

Reduced costs are c_ij - v_j; u_i follows from the assigned pair. ``rows_evaluated`` counts every
row read after the validation sweep (each step reads whole rows), comparable with the ε-passes'.
"""
import time

import numba
import numpy as np
from numba import njit

from .._status import STATUS_INVALID, STATUS_OK, raise_for_status
from ..certificate import RTOL
from .passes import augment_rows

_ARR_ROUNDS = 2


@njit(cache=True, nogil=True)
def _validate(c, integral):
    """STATUS_INVALID for NaN or -inf; STATUS_OK else. Second value: whether any +inf occurs."""
    has_inf = False
    if integral:
        return STATUS_OK, has_inf
    n1, n2 = c.shape
    for i in range(n1):
        for j in range(n2):
            x = np.float64(c[i, j])
            if x != x or x == -np.inf:
                return STATUS_INVALID, has_inf
            if x == np.inf:
                has_inf = True
    return STATUS_OK, has_inf


@njit(cache=True, nogil=True)
def _column_reduction(c, v, x, y, matches):
    """Step 1: v = column minima, each column to the row of its minimum if that row is free."""
    n1, n2 = c.shape
    imin = np.zeros(n2, np.int64)
    for j in range(n2):
        v[j] = c[0, j]
    for i in range(1, n1):
        for j in range(n2):
            cij = v.dtype.type(c[i, j])
            if cij < v[j]:
                v[j] = cij
                imin[j] = i
    for j in range(n2 - 1, -1, -1):
        i = imin[j]
        if matches[i] == 0:
            x[i] = j
            y[j] = i
        matches[i] += 1


@njit(cache=True, nogil=True)
def _reduction_transfer(c, v, x, matches, free):
    """Step 2; returns the number of free rows, listed in ``free``. Rows read: one per row
    assigned once."""
    n1, n2 = c.shape
    n_free = 0
    reads = 0
    for i in range(n1):
        if matches[i] == 0:
            free[n_free] = i
            n_free += 1
        elif matches[i] == 1:
            j1 = x[i]
            mu = v[j1]  # a placeholder of the work dtype until ``seen``
            seen = False
            for j in range(n2):
                if j != j1:
                    r = c[i, j] - v[j]
                    if not seen or r < mu:
                        mu = r
                        seen = True
            reads += 1
            if seen:
                v[j1] -= mu - (c[i, j1] - v[j1])
    return n_free, reads


@njit(cache=True, nogil=True)
def _two_smallest(c, v, i):
    """(u1, j1, u2, j2): the smallest and second smallest reduced cost of row i (first index on
    ties); j2 = -1 when the row has one column."""
    n2 = c.shape[1]
    u1 = c[i, 0] - v[0]
    j1 = 0
    u2 = u1
    j2 = -1
    for j in range(1, n2):
        h = c[i, j] - v[j]
        if j2 < 0 or h < u2:
            if h >= u1:
                u2 = h
                j2 = j
            else:
                u2 = u1
                j2 = j1
                u1 = h
                j1 = j
    return u1, j1, u2, j2


@njit(cache=True, nogil=True)
def _augmenting_row_reduction(c, v, x, y, free, n_free):
    """Step 3 (two rounds); returns (free rows left, listed in ``free``, rows read)."""
    n1 = c.shape[0]
    reads = 0
    for _ in range(_ARR_ROUNDS):
        k = 0
        todo = n_free
        n_free = 0
        steps = 0
        while k < todo:
            i = free[k]
            k += 1
            steps += 1
            if steps > 8 * n1:  # ties can make a round long: leave the rest to step 4
                free[n_free] = i
                n_free += 1
                continue
            u1, j1, u2, j2 = _two_smallest(c, v, i)
            reads += 1
            i0 = y[j1]
            if j2 >= 0 and u1 < u2:
                v[j1] -= u2 - u1
            elif i0 >= 0 and j2 >= 0:  # a tie with an assigned column: take the other one
                j1 = j2
                i0 = y[j1]
            x[i] = j1
            y[j1] = i
            if i0 >= 0:
                x[i0] = -1
                if u1 < u2:  # the displaced row goes next
                    k -= 1
                    free[k] = i0
                else:
                    free[n_free] = i0
                    n_free += 1
    return n_free, reads


@njit(cache=True, nogil=True)
def _shift_to_max_zero(v):
    """v -= max(v): every price at most 0, the largest exactly 0 (work dtype, all finite)."""
    top = v.max()
    for j in range(v.shape[0]):
        v[j] -= top


@njit(cache=True, nogil=True)
def solve_dense(c, integral, v, row_to_col):
    """Solve the canonical dense problem ``c`` (n1 <= n2): fills ``v`` (work dtype) and
    ``row_to_col``. Returns (status, rows evaluated)."""
    n1, n2 = c.shape
    status, has_inf = _validate(c, integral)
    if status != STATUS_OK:
        return status, 0
    x = row_to_col
    y = np.full(n2, -1, np.int64)
    free = np.empty(n1, np.int64)
    v[:] = 0
    x[:] = -1
    reads = 0
    if n1 == n2 and n2 > 1 and not has_inf:
        matches = np.zeros(n1, np.int64)
        _column_reduction(c, v, x, y, matches)
        reads += n1
        # prices at most 0 from here on: reduced costs are computed at the magnitude of the
        # duals reported (finish shifts them so anyway)
        _shift_to_max_zero(v)
        n_free, r = _reduction_transfer(c, v, x, matches, free)
        reads += r
        n_free, r = _augmenting_row_reduction(c, v, x, y, free, n_free)
        reads += r
    else:
        for i in range(n1):
            free[i] = i
        n_free = n1
    status, r = augment_rows(c, n1, n2, v, x, y, free[:n_free], integral)
    return status, reads + r


@njit(cache=True, nogil=True)
def polish(c, v, x):
    """One more exact pass from the final prices shifted to max 0: every row augmented again
    (mostly along one edge). Prices lowered uniformly while the rows were assigned (a
    maximisation, a rank-one matrix) held reduced costs at a magnitude far above the duals
    reported; this pass recomputes them at the duals' own magnitude. Returns (status, rows)."""
    n1, n2 = c.shape
    _shift_to_max_zero(v)
    x[:] = -1
    return augment_rows(c, n1, n2, v, x, np.full(n2, -1, np.int64), np.arange(n1), False)


@njit(cache=True, nogil=True)
def duals_hold(c, v, x):
    """Whether the float duals that ``finish`` reports from ``v`` (shifted to max 0, u from the
    assigned pairs) meet ``epslap.verify``'s per-entry rule: u_i + v_j - c_ij <= RTOL·(|c_ij| +
    |u_i| + |v_j|) on every finite entry."""
    n1, n2 = c.shape
    top = v.max()
    for i in range(n1):
        ui = np.float64(c[i, x[i]]) - (v[x[i]] - top)
        for j in range(n2):
            cij = np.float64(c[i, j])
            if cij < np.inf:
                vj = v[j] - top
                if (ui + vj) - cij > RTOL * ((abs(cij) + abs(ui)) + abs(vj)):
                    return False
    return True


#: a batch member whose duals missed ``verify``'s rule even after ``polish``: the ε path solves it
NEEDS_EPSILON = -1


@njit(cache=True, nogil=True)
def solve_many(c, integral, lo, hi, x, v, status, rows):
    """Problems ``lo … hi-1`` of the canonical stack ``c`` (B, n1, n2), as :func:`solve_jv`
    solves one: fills ``x`` (B, n1), ``v`` (B, n2), ``status`` and ``rows`` (rows evaluated)."""
    for b in range(lo, hi):
        st, r = solve_dense(c[b], integral, v[b], x[b])
        if st == STATUS_OK and not integral and not duals_hold(c[b], v[b], x[b]):
            st, r2 = polish(c[b], v[b], x[b])
            r += r2
            if st == STATUS_OK and not duals_hold(c[b], v[b], x[b]):
                st = NEEDS_EPSILON
        status[b] = st
        rows[b] = r


#: square problems up to this many columns take this path (above it the ε-passes are faster on
#: geometric costs: one thread, 2 vCPU, 0.3 ms against 3.3 ms at n = 300 but 12.6 ms against
#: 6.5 ms at n = 500; random and integer costs cross over later, near n = 1000)
MAX_SQUARE = 384


def applies(n1: int, n2: int) -> bool:
    """Whether a dense canonical problem (n1 <= n2) takes this path: small square ones, and
    rectangular ones with at least n2/16 more columns than rows, which the ε-passes would pad
    with that many virtual rows. Nearly square ones stay with the ε-passes (2 vCPU, 2000 rows,
    geometric costs: 2050 columns 0.27 s here against 0.08 s there, 2200 columns 0.045 s against
    0.070 s, 3000 columns 0.023 s against 2.0 s)."""
    return n2 <= MAX_SQUARE or (n1 < n2 and 16 * (n2 - n1) >= n2)


_COMPILED: set = set()


def solve_jv(m: np.ndarray, integral: bool):
    """``(row_to_col, v, stats)`` of the canonical matrix ``m``. Float duals are checked against
    ``verify``'s per-entry rule (``duals_hold``); where they miss it, one exact pass from the
    final prices (``polish``) recomputes them; None, for the ε path, where even that fails.
    Raises for NaN/-inf or an infeasible matrix."""
    n1, n2 = m.shape
    work = np.int64 if integral else np.float64
    v = np.empty(n2, work)
    row_to_col = np.empty(n1, np.int64)
    compile_s = 0.0
    key = (m.dtype.num, integral)  # m is C-contiguous (canonical_dense)
    if key not in _COMPILED:
        t0 = time.perf_counter()
        solve_dense.compile((numba.typeof(m), numba.typeof(integral), numba.typeof(v),
                             numba.typeof(row_to_col)))
        compile_s = time.perf_counter() - t0
        _COMPILED.add(key)
    t0 = time.perf_counter()
    status, reads = solve_dense(m, integral, v, row_to_col)
    elapsed = time.perf_counter() - t0
    raise_for_status(status, "cpu")
    polish_rows = 0
    if not integral and not duals_hold(m, v, row_to_col):
        t1 = time.perf_counter()
        status, polish_rows = polish(m, v, row_to_col)
        elapsed += time.perf_counter() - t1
        raise_for_status(status, "cpu")
        reads += polish_rows
        if not duals_hold(m, v, row_to_col):
            return None
    stats = {"backend": "cpu", "method": "jv", "rows_evaluated": int(reads), "passes": 1,
             "epsilons": [0.0], "eps_upper": 0.0, "eps_lower": 0.0, "time_estimate_s": 0.0,
             "time_solve_s": elapsed, "compile_s": compile_s, "threads": 1,
             "certified_by_estimate": False, "polish_rows": int(polish_rows)}
    return row_to_col, v, stats
