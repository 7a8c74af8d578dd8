"""The small-problem path: dense Jonker–Volgenant in one compiled call (docs/algorithm.md §9);
its entry from Python (which problems take it, the call, the result): :mod:`epslap.cpu.small`.

Below a few hundred columns the ε-passes cannot pay for their estimate and their schedule; the
classical shortest augmenting path method with Jonker & Volgenant's initialisation (Computing 38,
1987) does less work there. One compiled call (``solve_small``) takes the caller's matrix, orients
and negates it into the canonical problem (n1 <= n2, minimised), solves it and writes the result
back in the caller's terms (for a tiny problem the calls around the work cost more than the work):

1. *Column reduction* (square problems only): v_j = min_i c_ij; each column goes to the row of
   its minimum when that row has no column yet (columns from the last to the first). The same
   sweep checks the values (NaN, -inf, +inf, the integer range).
2. *Reduction transfer*: a row that got exactly one column lowers that column's price by the
   row's second smallest reduced cost, so the other rows see it as dearer.
3. *Augmenting row reduction*, one round: a free row takes the column of its smallest reduced
   cost, lowering that price to its second smallest (or takes the second column on a tie); the
   row it displaces is processed next, within a budget of row scans.
4. *Augmentation*: each row still free gets a shortest augmenting path (Dijkstra on the dense
   reduced costs, no heap, one vectorised sweep per closed column); the prices of the columns it
   closed move by their distance. A row whose least reduced cost lies at a free column takes it
   without the search's set-up (the search would close that column first and end there): most
   rows of a rectangular problem with many spare columns (10 x 100: 0.78x the time per call).

Steps 1–3 only choose a better start: any start with feasible prices leaves step 4 exact. A
rectangular problem skips them: its prices start at 0 and only fall on assigned columns, so the
columns left unassigned keep the largest price (their dual is 0 after the shift), the condition
the certificate of a rectangular problem needs. They are skipped too where a cost is +inf (a
price of +inf would poison the arithmetic); step 4 then finds the infeasible row.

Float duals: ``solve_small`` reports each row's dual as the smallest reduced cost of its row
(``_row_duals``), which meets ``verify``'s per-entry rule on every entry of the row by
construction, and checks the assigned pairs' slack against that rule; where it misses, one exact
pass from the final prices (``polish``) recomputes the prices, and where even that misses, the ε
path solves. The batches (``solve_share``) do the same per problem.

Reduced costs are c_ij - v_j; ``rows_evaluated`` counts every row read after the validation
sweep (each step reads whole rows), comparable with the ε-passes'.
"""
from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import overload

from .._status import STATUS_INFEASIBLE, STATUS_INVALID, STATUS_OK, STATUS_OUT_OF_RANGE
from .._validate import FLOAT_BIG
from ..certificate import CHECK_RTOL
from . import jv_numpy
from .arrays import bits_float, flip_path, float_bits
from .kinds import is_integral

#: a problem whose duals missed ``verify``'s rule even after ``polish``: the ε path solves it
#: (one value for both forms of the small path: ``jv_numpy`` owns it)
NEEDS_EPSILON = jv_numpy.NEEDS_EPSILON

#: rows a problem's augmentations may read, per row, before the ε path takes it over
#: (``jv_numpy.ROW_BUDGET``, 48, for both forms). Random, geometric, sanity and integer costs
#: read 5–15 per row up to n = 384 (disjoint 34, rank 8 28 at n = 200); rank-1 costs read
#: 250–500 (plain successive shortest paths, docs/algorithm.md §5), where the ε-passes are
#: 7–20x faster. Cutting there costs such a problem 2–4x the ε path.
ROW_BUDGET = jv_numpy.ROW_BUDGET
#: a cost beyond the range rule (``_validate.int_cost_limit``, ``float_cost_limit``): the caller
#: raises
OUT_OF_RANGE = STATUS_OUT_OF_RANGE

#: row scans the augmenting row reduction may spend, per row of the problem; past it the rows
#: still free go to the augmentation (long displacement chains on near ties cost more there)
_ARR_SCANS = 2

#: the decorator of the helpers that run once or a few times per solve: Numba inlines them into
#: their caller, so that the arrays they take are not reference-counted at each call (an atomic
#: increment and decrement per array argument, which took a third of a 5 x 5 solve's time)
_inlined = njit(cache=True, nogil=True, inline="always")

_INT_BIG = 2**62  # above every integer distance and price (the range rule keeps them below)


def _big(v):
    """+inf of the work dtype of ``v``: inf for floats, 2**62 for int64 (above every integer
    distance and price the range rule allows)."""
    return np.int64(_INT_BIG) if v.dtype.kind == "i" else np.inf


@overload(_big)
def _big_typed(v):
    """:func:`_big` resolved at compile time (Numba cannot compare dtypes at run time)."""
    if isinstance(v.dtype, types.Integer):
        return lambda v: np.int64(_INT_BIG)
    return lambda v: np.float64(np.inf)


def _work_empty(c, n):
    """An empty vector of ``n`` prices in the work dtype of ``c`` (int64 for integers, else
    float64)."""
    return np.empty(n, np.int64 if c.dtype.kind in "biu" else np.float64)


@overload(_work_empty)
def _work_empty_typed(c, n):
    """:func:`_work_empty` resolved at compile time."""
    if isinstance(c.dtype, types.Integer):
        return lambda c, n: np.empty(n, np.int64)
    return lambda c, n: np.empty(n, np.float64)


_MAGNITUDE = np.int64(2**63 - 1)


def _ordered(x):
    """An int64 ordered as ``x`` for every finite or infinite float (the magnitude bits of a
    negative float flipped; -0.0 just below +0.0), ``x`` itself for an integer."""
    if isinstance(x, (int, np.integer)):
        return np.int64(x)
    b = int(np.array([x], np.float64).view(np.int64)[0])
    return np.int64(b ^ _MAGNITUDE if b < 0 else b)


@overload(_ordered)
def _ordered_typed(x):
    """:func:`_ordered` resolved at compile time."""
    if isinstance(x, types.Integer):
        return lambda x: np.int64(x)

    def ordered(x):
        b = float_bits(np.float64(x))
        return b ^ ((b >> 63) & _MAGNITUDE)
    return ordered


def _unordered(k, like):
    """The value of the key ``k`` of :func:`_ordered`, in the dtype of the scalar ``like``."""
    if isinstance(like, (int, np.integer)):
        return np.int64(k)
    b = np.int64(k ^ _MAGNITUDE if k < 0 else k)
    return np.array([b], np.int64).view(np.float64)[0]


@overload(_unordered)
def _unordered_typed(k, like):
    """:func:`_unordered` resolved at compile time."""
    if isinstance(like, types.Integer):
        return lambda k, like: np.int64(k)
    return lambda k, like: bits_float(k ^ ((k >> 63) & _MAGNITUDE))


def _key(x):
    """An int64 ordered as the distance ``x`` (>= 0, or int64): min over keys is min over
    distances, and integer minima compile to vector code where float minima do not. A float's
    bits order as the float for values >= 0 (the distances of ``_shortest_path``)."""
    if isinstance(x, (int, np.integer)):
        return np.int64(x)
    return np.array([x], np.float64).view(np.int64)[0]


@overload(_key)
def _key_typed(x):
    """:func:`_key` resolved at compile time: a bitcast for floats, the value for integers."""
    if isinstance(x, types.Integer):
        return lambda x: np.int64(x)
    return lambda x: float_bits(np.float64(x))


@njit(cache=True, nogil=True)
def _classify(m):
    """(status, has_inf) of a float matrix known to hold a non-finite value (OUT_OF_RANGE where
    a finite entry is beyond :func:`_float_limit`)."""
    has_inf = False
    big = 0.0
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            x = np.float64(m[i, j])
            if x != x or x == -np.inf:
                return STATUS_INVALID, False
            if x == np.inf:
                has_inf = True
            else:
                big = max(big, abs(x))
    if big > _float_limit(m):
        return OUT_OF_RANGE, has_inf
    return STATUS_OK, has_inf


@njit(cache=True, nogil=True, inline="always")
def _float_limit(m):
    """``_validate.float_cost_limit`` of ``m``'s shape (prices and path lengths stay finite)."""
    return FLOAT_BIG / (4.0 * max(m.shape[0], m.shape[1]) + 8.0)


@njit(cache=True, nogil=True, inline="always")
def _overflow_scale(m):
    """A factor that takes every |cost| beyond about ``_float_limit`` to inf: the value sweep
    (``x*s - x*s``, NaN for non-finite) then flags NaN, ±inf and too-large costs with one
    multiply per entry, and :func:`_classify` tells which (its exact comparison decides)."""
    return 2.0 * (2.0**1023 / _float_limit(m))


@njit(cache=True, nogil=True)
def _int_status(lo, hi, limit):
    """OUT_OF_RANGE where an integer cost exceeds ``limit`` in magnitude, else STATUS_OK."""
    if lo < -limit or hi > limit:
        return OUT_OF_RANGE
    return STATUS_OK


@_inlined
def _check_values(m, v, imin, integral, limit, minima, sweep):
    """(status, has_inf): NaN/-inf are STATUS_INVALID, integers beyond ``limit`` OUT_OF_RANGE.
    One branch-free sweep (x - x is NaN exactly for NaN and ±inf, summed per column in
    ``sweep``, n2 float64 of scratch, so that the sweep compiles to vector code); the rare
    non-finite matrix is classified by a second one. With ``minima`` (a square problem) the
    same sweep also sets v = column minima and imin = their rows (the first on ties)."""
    n1, n2 = m.shape
    wt = v.dtype.type
    if minima:
        for j in range(n2):
            v[j] = wt(m[0, j])
            imin[j] = 0
    if integral:
        lo = np.int64(0)
        hi = np.int64(0)
        for i in range(n1):
            row = m[i]
            for j in range(n2):
                x = wt(row[j])
                lo = min(lo, np.int64(x))
                hi = max(hi, np.int64(x))
                if minima:
                    lower = x < v[j]
                    v[j] = x if lower else v[j]
                    imin[j] = i if lower else imin[j]
        return _int_status(lo, hi, limit), False
    sweep[:] = 0.0
    s = _overflow_scale(m)
    for i in range(n1):
        row = m[i]
        for j in range(n2):
            x = wt(row[j])
            y = np.float64(x) * s
            sweep[j] += y - y
            if minima:
                lower = x < v[j]
                v[j] = x if lower else v[j]
                imin[j] = i if lower else imin[j]
    if sweep.sum() == 0.0:
        return STATUS_OK, False
    return _classify(m)


@_inlined
def _assign_minima(v, imin, x, y, matches):
    """Step 1's assignment: column j to the row of its minimum when that row is still free,
    columns from the last to the first; ``matches`` counts the columns each row was offered."""
    for j in range(v.shape[0] - 1, -1, -1):
        i = imin[j]
        if matches[i] == 0:
            x[i] = j
            y[j] = i
        matches[i] += 1


@_inlined
def _shift_to_max_zero(v):
    """v -= max(v): every price at most 0, the largest exactly 0 (work dtype, all finite)."""
    top = v.max()
    for j in range(v.shape[0]):
        v[j] -= top


@njit(cache=True, nogil=True)
def _min_reduced(row, v, skip, big):
    """min over j != skip of row_j - v_j (in the dtype of ``v``; ``big`` if there is none), as
    a minimum of :func:`_ordered` keys: integer minima compile to vector code, float minima to
    one comparison after another."""
    wt = v.dtype.type
    kbig = _ordered(big)
    best = kbig
    for j in range(v.shape[0]):
        k = _ordered(wt(row[j]) - v[j])
        k = kbig if j == skip else k
        best = k if k < best else best
    return _unordered(best, big)


@_inlined
def _reduction_transfer(c, v, x, matches, free):
    """Step 2; returns the number of free rows, listed in ``free``. Rows read: one per row
    assigned once."""
    n1, n2 = c.shape
    wt = v.dtype.type
    big = _big(v)
    n_free = 0
    reads = 0
    for i in range(n1):
        if matches[i] == 0:
            free[n_free] = i
            n_free += 1
        elif matches[i] == 1 and n2 > 1:
            j1 = x[i]
            row = c[i]
            mu = _min_reduced(row, v, j1, big)
            reads += 1
            v[j1] -= mu - (wt(row[j1]) - v[j1])
    return n_free, reads


#: rows from this many columns find their two smallest reduced costs in two vector passes, a
#: shorter row in one scan with branches: per row scan the passes took 0.3-0.6x the scan's time
#: at 1000 columns but 1-2x at 10-50, and whole small-path solves of 100-200 columns were
#: 1.0-1.15x slower with them, of 300-1000 columns 0.74-1.0x
_TWO_PASSES_FROM = 256


@njit(cache=True, nogil=True)
def _two_smallest(c, v, i):
    """(u1, j1, u2, j2): the smallest and second smallest reduced cost of row i, j1 the first
    column at u1. j2 is -1 where there is no second (one column, or every other reduced cost
    at least ``_big``), the next column at u1 where the second ties the first (u2 == u1), and
    otherwise a column >= 0 (the augmenting row reduction needs no more of it).

    Two passes over the row's :func:`_ordered` keys, each a minimum that compiles to vector
    code: the least key, then its first column, how many columns hold it and the least key
    above it (rows shorter than ``_TWO_PASSES_FROM`` take :func:`_two_smallest_scan`)."""
    n2 = c.shape[1]
    wt = v.dtype.type
    zero = wt(0)  # (+ 0 turns -0.0 into +0.0: keys order values, not signs of zero)
    row = c[i]
    big = _big(v)
    kbig = _ordered(big)
    least = kbig
    for j in range(n2):
        k = _ordered((wt(row[j]) - v[j]) + zero)
        least = k if k < least else least
    first = n2
    ties = 0
    above = kbig
    for j in range(n2):
        k = _ordered((wt(row[j]) - v[j]) + zero)
        at = k == least
        first = min(first, j if at else n2)
        ties += 1 if at else 0
        above = min(above, k if k > least else kbig)
    u1 = _unordered(least, big)
    if first == n2:  # every reduced cost at least _big (first column, as one scan has it)
        return wt(row[0]) - v[0], 0, big, -1
    if ties > 1:
        for j in range(first + 1, n2):
            if _ordered((wt(row[j]) - v[j]) + zero) == least:
                return u1, first, u1, j
    if above == kbig:
        return u1, first, big, -1
    return u1, first, _unordered(above, big), n2


@njit(cache=True, nogil=True)
def _two_smallest_scan(c, v, i):
    """:func:`_two_smallest` in one scan that keeps both by branches (j2: the second's first
    column)."""
    n2 = c.shape[1]
    wt = v.dtype.type
    row = c[i]
    u1 = wt(row[0]) - v[0]
    j1 = 0
    u2 = _big(v)
    j2 = -1
    for j in range(1, n2):
        h = wt(row[j]) - v[j]
        if h < u2:
            if h >= u1:
                u2 = h
                j2 = j
            else:
                u2 = u1
                j2 = j1
                u1 = h
                j1 = j
    return u1, j1, u2, j2


@_inlined
def _augmenting_row_reduction(c, v, x, y, free, n_free):
    """Step 3: one round over the free rows, at most ``_ARR_SCANS`` row scans per row of the
    problem; returns (free rows left, listed in ``free``, rows read)."""
    n1 = c.shape[0]
    budget = _ARR_SCANS * n1
    k = 0
    todo = n_free
    n_left = 0
    reads = 0
    while k < todo:
        i = free[k]
        k += 1
        if reads >= budget:  # ties can make chains long: leave the rest to step 4
            free[n_left] = i
            n_left += 1
            continue
        if c.shape[1] < _TWO_PASSES_FROM:
            u1, j1, u2, j2 = _two_smallest_scan(c, v, i)
        else:
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
            if j2 >= 0 and u1 < u2:  # the displaced row goes next
                k -= 1
                free[k] = i0
            else:
                free[n_left] = i0
                n_left += 1
    return n_left, reads


@njit(cache=True, nogil=True)
def _least_and_free(row, v, y, big):
    """(u_f, j): u_f = min_j c_fj - v_j (``big`` if there is none) and j the first free column
    whose reduced cost equals u_f, or -1 if no free column does. Where j >= 0 the search from
    row f would close j first and end there (its distance 0 and the tie rule's free column
    first), so :func:`_shortest_path` assigns it without the search's set-up. One sweep of
    ordered keys (vector code); the scan for j runs only where a free column holds the least
    key (a free column whose value equals u_f but not its key, -0.0 against 0.0, goes to the
    search, which decides the same)."""
    wt = v.dtype.type
    kbig = _ordered(big)
    best = kbig
    best_free = kbig
    for j in range(v.shape[0]):
        k = _ordered(wt(row[j]) - v[j])
        best = k if k < best else best
        kf = k if y[j] < 0 else kbig
        best_free = kf if kf < best_free else best_free
    uf = _unordered(best, big)
    if best_free != best or not best < kbig:
        return uf, -1
    for j in range(v.shape[0]):
        if y[j] < 0 and wt(row[j]) - v[j] == uf:
            return uf, j
    return uf, -1


@njit(cache=True, nogil=True)
def _start_row(row, uf, v, d, pred, f, is_open, y, big):
    """d_j = (c_fj - v_j) - u_f for the free row f, with u_f = min_j c_fj - v_j
    (:func:`_least_and_free`'s): every distance starts >= 0 (exactly: a rounded difference of
    x >= u_f is >= 0), as ``_key`` needs. Returns the keys of (smallest d_j, smallest over the
    free columns), those of ``big`` for a row without a finite cost."""
    wt = v.dtype.type
    kbig = _key(big)
    if not uf < big:
        return kbig, kbig
    best = kbig
    best_free = kbig
    for j in range(d.shape[0]):
        h = (wt(row[j]) - v[j]) - uf
        d[j] = h
        pred[j] = f
        is_open[j] = 1
        k = _key(h)
        best = k if k < best else best
        kf = k if y[j] < 0 else kbig
        best_free = kf if kf < best_free else best_free
    return best, best_free


@njit(cache=True, nogil=True)
def _relax(row, a, b, mn, i, v, d, pred, is_open, y, big):
    """d_j = min(d_j, (c_ij - c_ij*) - (v_j - v_j*) + mn) over the open columns, pred_j = i where
    that lowers d_j: the difference form of docs/algorithm.md §4, clamped at mn (below it only
    by rounding, and ``_key`` needs d >= 0). Returns the keys of (smallest d_j, smallest over the
    free columns) of the open columns. Selects and integer minima only: one sweep of vector
    code per closed column."""
    wt = v.dtype.type
    kbig = _key(big)
    best = kbig
    best_free = kbig
    for j in range(d.shape[0]):
        h = ((wt(row[j]) - a) - (v[j] - b)) + mn
        h = h if h > mn else mn
        h = h if is_open[j] else big
        dj = d[j]
        lower = h < dj
        dj = h if lower else dj
        d[j] = dj
        pred[j] = i if lower else pred[j]
        k = _key(dj) if is_open[j] else kbig
        best = k if k < best else best
        kf = k if y[j] < 0 else kbig
        best_free = kf if kf < best_free else best_free
    return best, best_free


@njit(cache=True, nogil=True)
def _next_column(d, y, best, free_ties):
    """The open column to close, of key ``best``, under the tie rule of docs/algorithm.md §4: a
    free column when one ties (``free_ties``), then the lowest index (closed columns hold the
    key of ``big``, above ``best``)."""
    for j in range(d.shape[0]):
        if _key(d[j]) == best and (y[j] < 0 or not free_ties):
            return j
    return -1


@njit(cache=True, nogil=True)
def _shortest_path(c, f, v, x, y, d, pred, is_open, closed, dist):
    """Augment free row f along a shortest path (docs/algorithm.md §4 with ε = 0) and move the
    prices of the columns it closed. Closed columns hold d = big (``dist`` keeps their
    distances); each step is one sweep that relaxes the open columns from the row just reached
    and finds the smallest distances, and a short scan for the column. Ties prefer a free
    column, so equal-cost columns are never rescanned. Returns (status, rows read)."""
    wt = v.dtype.type
    big = _big(v)
    kbig = _key(big)
    uf, jf = _least_and_free(c[f], v, y, big)
    if jf >= 0:  # the row's least reduced cost at a free column: the path is that one edge
        x[f] = jf
        y[jf] = f
        return STATUS_OK, 1
    best, best_free = _start_row(c[f], uf, v, d, pred, f, is_open, y, big)
    reads = 1
    nc = 0
    mn = wt(0)
    while True:
        if not best < kbig:
            return STATUS_INFEASIBLE, reads
        jb = _next_column(d, y, best, best_free == best)
        dmin = d[jb]
        if dmin > mn:
            mn = dmin
        closed[nc] = jb
        dist[nc] = dmin
        nc += 1
        d[jb] = big
        is_open[jb] = 0
        i = y[jb]
        if i < 0:
            break
        row = c[i]
        reads += 1
        best, best_free = _relax(row, wt(row[jb]), v[jb], mn, i, v, d, pred, is_open, y, big)
    for k in range(nc):
        v[closed[k]] -= mn - dist[k]
    j = closed[nc - 1]
    while True:  # the path's columns take their new rows, then its rows their new columns
        i = pred[j]
        y[j] = i
        if i == f:
            break
        j = x[i]
    flip_path(pred, x, f, closed[nc - 1])
    return STATUS_OK, reads


def _scratch(n2: int) -> int:
    """int64 scratch of step 4 for n2 columns: pred, open flags, the closed columns."""
    return 3 * n2


@overload(_scratch)
def _scratch_typed(n2):
    """:func:`_scratch` in compiled code."""
    return lambda n2: 3 * n2


@_inlined
def _augment(c, v, x, y, free, n_free, iw, fw):
    """Step 4 for the rows ``free[:n_free]``; ``iw`` (``_scratch(n2)`` int64) and ``fw`` (2·n2,
    work dtype) are its scratch space. Returns (status, rows read)."""
    n2 = c.shape[1]
    pred, is_open, closed = iw[:n2], iw[n2:2 * n2], iw[2 * n2:3 * n2]
    d, dist = fw[:n2], fw[n2:2 * n2]
    reads = 0
    budget = ROW_BUDGET * c.shape[0] + 64
    for k in range(n_free):
        status, r = _shortest_path(c, free[k], v, x, y, d, pred, is_open, closed, dist)
        reads += r
        if status != STATUS_OK:
            return status, reads
        if reads > budget:  # long paths (low-rank, disjoint costs): the ε-passes do better
            return NEEDS_EPSILON, reads
    return STATUS_OK, reads


@_inlined
def _solve_canonical(c, integral, limit, v, x, y, iw, fw, sweep):
    """Steps 1–4 on the canonical matrix ``c``, with the value checks: fills ``v`` (work dtype),
    ``x`` (row -> column) and ``y`` (column -> row); ``iw`` (n1 + ``_scratch(n2)`` int64) and
    ``fw`` (2·n2, work dtype) are scratch space, one allocation each for the whole solve (a tiny
    problem's time goes to allocations otherwise), ``sweep`` (n2 float64) the value sweep's
    per-column flags (made once per solve or per batch share, apart from ``v``). Returns
    (status, rows evaluated)."""
    n1, n2 = c.shape
    free = iw[:n1]
    x[:] = -1
    y[:] = -1
    reads = 0
    square = n1 == n2 and n2 > 1
    imin = iw[n1:n1 + n2]
    status, has_inf = _check_values(c, v, imin, integral, limit, square, sweep)
    if status != STATUS_OK:
        return status, 0
    if square and not has_inf:
        matches = iw[n1 + n2:2 * n1 + n2]
        matches[:] = 0
        _assign_minima(v, imin, x, y, matches)
        reads += n1
        # prices at most 0 from here on: reduced costs are computed at the magnitude of the
        # duals reported (which are shifted so anyway)
        _shift_to_max_zero(v)
        n_free, r = _reduction_transfer(c, v, x, matches, free)
        reads += r
        n_free, r = _augmenting_row_reduction(c, v, x, y, free, n_free)
        reads += r
    else:
        v[:] = 0
        for i in range(n1):
            free[i] = i
        n_free = n1
    status, r = _augment(c, v, x, y, free, n_free, iw[n1:], fw)
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
    y = np.full(n2, -1, np.int64)
    iw = np.empty(_scratch(n2), np.int64)
    fw = np.empty(2 * n2, v.dtype)
    return _augment(c, v, x, y, np.arange(n1), n1, iw, fw)


@njit(cache=True, nogil=True)
def solve_plain(c, v, x):
    """Every row again as the first calls' vector form solves them: a square problem from its
    column minima (each taken by its row where free, last column first), then shortest
    augmenting paths, without the reduction transfer and the augmenting row reduction. Those
    reductions can lower a price by a cost far larger than the row's own (the gap to its
    second-cheapest column): the row's duals are then rounded at that scale, and a polish from
    those prices keeps the rounding. Returns (status, rows)."""
    n1, n2 = c.shape
    wt = v.dtype.type
    x[:] = -1
    y = np.full(n2, -1, np.int64)
    reads = 0
    if n1 == n2:
        imin = np.empty(n2, np.int64)  # the column minima (the values were checked before)
        _check_values(c, v, imin, is_integral(c), np.int64(2**63 - 1), True,
                      np.empty(n2, np.float64))
        reads = n1
        finite = True
        for j in range(n2):
            finite = finite and (v[j] - v[j]) == 0
        if finite:
            _assign_minima(v, imin, x, y, np.zeros(n1, np.int64))
        else:  # +inf columns: every row from the finite minima
            for j in range(n2):
                v[j] = v[j] if (v[j] - v[j]) == 0 else wt(0)
    else:
        v[:] = 0
    free = np.empty(n1, np.int64)
    n_free = 0
    for i in range(n1):
        if x[i] < 0:
            free[n_free] = i
            n_free += 1
    iw = np.empty(_scratch(n2), np.int64)
    fw = np.empty(2 * n2, v.dtype)
    status, r = _augment(c, v, x, y, free, n_free, iw, fw)
    return status, reads + r


@njit(cache=True, nogil=True)
def _row_duals(c, vs, x, u):
    """u_i = the smallest reduced cost c_ij - vs_j of row i (``vs``: the reported prices).
    Every entry of the row then meets ``verify``'s rule up to the rounding of one subtraction,
    however large the assigned cost (a big-M entry on an assigned pair makes c_ij - vs_j there
    useless at the magnitude of the row's other entries). Returns whether every assigned pair's
    slack (c - u) - v meets the rule too."""
    ok = True
    for i in range(c.shape[0]):
        row = c[i]
        ui = _min_reduced(row, vs, -1, np.inf)
        u[i] = ui
        cx = np.float64(row[x[i]])
        slack = (cx - ui) - vs[x[i]]
        if abs(slack) > CHECK_RTOL * ((abs(cx) + abs(ui)) + abs(vs[x[i]])):
            ok = False
    return ok


@njit(cache=True, nogil=True)
def free_at_top(v, x):
    """Whether every column that no row holds has the top price 0 (``v`` shifted to a maximum
    of 0): the certificate's condition on a rectangular problem's unassigned columns. A solve
    from v = 0 keeps it (a free column's price never moves); a polish does not: it frees every
    column at the unequal prices of the solve before, and a search that ends at a column whose
    price is low pays that price back in the cost, not in its distance, so it can leave a cheap
    column unassigned at a price below 0 (a wrong assignment whose rows meet the rule)."""
    n2 = v.shape[0]
    if x.shape[0] == n2:
        return True
    held = np.zeros(n2, np.bool_)
    for i in range(x.shape[0]):
        held[x[i]] = True
    for j in range(n2):
        if not held[j] and v[j] != 0:
            return False
    return True


@_inlined
def _canonical(c, maximize):
    """(matrix with n1 <= n2, minimised, transposed?): ``c`` itself or one copy."""
    n1, n2 = c.shape
    transposed = n1 > n2
    if not transposed and not maximize:
        return c, False
    if transposed:
        m = np.empty((n2, n1), c.dtype)
        for i in range(n1):
            for j in range(n2):
                m[j, i] = -c[i, j] if maximize else c[i, j]
        return m, True
    m = np.empty((n1, n2), c.dtype)
    for i in range(n1):
        for j in range(n2):
            m[i, j] = -c[i, j]
    return m, False


@_inlined
def _finish_duals(m, integral, v, x, u):
    """Shift v to max 0 (unassigned columns get dual 0) and fill u; returns (status, polish
    rows): float duals are certified by :func:`_row_duals`, else polished once, else solved
    again as the vector form solves (:func:`solve_plain`) and polished, else NEEDS_EPSILON."""
    _shift_to_max_zero(v)
    if integral:
        for i in range(m.shape[0]):
            u[i] = m[i, x[i]] - v[x[i]]
        return STATUS_OK, 0
    if _row_duals(m, v, x, u):
        return STATUS_OK, 0
    rows = 0
    for again in range(3):  # a polish; the vector form's solve; its polish
        status, r = solve_plain(m, v, x) if again == 1 else polish(m, v, x)
        rows += r
        if status != STATUS_OK:
            return status, rows
        _shift_to_max_zero(v)
        if (again == 1 or free_at_top(v, x)) and _row_duals(m, v, x, u):
            return STATUS_OK, rows
    return NEEDS_EPSILON, rows


@_inlined
def _user_result(m, transposed, maximize, x, y, u, v, xs, duals):
    """Fill ``xs`` = (row_ind, col_ind) and ``duals`` = (row duals, column duals) in the
    caller's orientation and sign, row_ind sorted (scipy's convention); returns the total."""
    n1, n2 = m.shape
    total = v.dtype.type(0)
    for i in range(n1):
        total += v.dtype.type(m[i, x[i]])
    if transposed:
        t = 0
        for j in range(n2):
            if y[j] >= 0:
                xs[t] = j
                xs[n1 + t] = y[j]
                t += 1
        first, second = v, u
    else:
        for i in range(n1):
            xs[i] = i
            xs[n1 + i] = x[i]
        first, second = u, v
    if duals.shape[0]:  # none asked for: the assignment alone (linear_sum_assignment)
        k = first.shape[0]
        for t in range(k):
            duals[t] = -first[t] if maximize else first[t]
        for t in range(second.shape[0]):
            duals[k + t] = -second[t] if maximize else second[t]
    return -total if maximize else total


@njit(cache=True, nogil=True)
def solve_small(c, maximize, xs, duals):
    """The whole small path for a C-contiguous float64/float32/int64/int32 matrix in the
    caller's orientation: orientation, sign, value checks, solve, certified duals and the
    result, in one compiled call (its dispatch is most of a tiny problem's cost). Fills ``xs``
    (row_ind then col_ind, 2·min(n1, n2)) and ``duals`` (u then v, n1 + n2; work dtype), which
    the caller allocates (cheaper than returning arrays). Returns (status, total, rows
    evaluated, polish rows); status OK, INVALID, INFEASIBLE, OUT_OF_RANGE or NEEDS_EPSILON."""
    integral = is_integral(c)
    m, transposed = _canonical(c, maximize)
    n1, n2 = m.shape
    limit = np.int64((_INT_BIG - 1) // (4 * n2 + 8))
    iw = np.empty(2 * n1 + n2 + _scratch(n2), np.int64)
    fw = _work_empty(c, n1 + 3 * n2)
    x, y = iw[:n1], iw[n1:n1 + n2]
    v, u = fw[:n2], fw[n2:n2 + n1]
    sweep = np.empty(0 if integral else n2)  # the float value sweep's flags
    status, reads = _solve_canonical(m, integral, limit, v, x, y, iw[n1 + n2:],
                                     fw[n1 + n2:], sweep)
    polish_rows = 0
    if status == STATUS_OK:
        status, polish_rows = _finish_duals(m, integral, v, x, u)
    if status != STATUS_OK:
        return status, v.dtype.type(0), reads, polish_rows
    if polish_rows:
        for j in range(n2):
            y[j] = -1
        for i in range(n1):
            y[x[i]] = i
    total = _user_result(m, transposed, maximize, x, y, u, v, xs, duals)
    return status, total, reads + polish_rows, polish_rows


jv_numpy.keep_rent_beside(solve_small)  # the first calls' time, beside this kernel's cache


@njit(cache=True, nogil=True)
def solve_share(c, integral, lo, hi, x, v, status, rows, u, total, row_ind):
    """Problems ``lo … hi-1`` of the canonical stack ``c`` (B, n1, n2), each by the small
    path's exact search and its duals (``_finish_duals``, as ``solve_small`` has them): fills
    ``x`` (B, n1), ``v`` (B, n2), ``status`` and ``rows`` (rows evaluated), and for each solved
    problem its result as ``solution.orient`` takes it: v shifted to a maximum of 0, ``u`` (B,
    n1), ``total`` (B,) the sum of the pairs' costs, ``row_ind`` (B, n1) the row numbers 0 …
    n1-1 (filled here, on the batch's threads, instead of by NumPy after them)."""
    n1, n2 = c.shape[1], c.shape[2]
    y = np.empty(n2, np.int64)  # one scratch space for the whole share
    iw = np.empty(n1 + _scratch(n2), np.int64)
    fw = np.empty(2 * n2, v.dtype)
    sweep = np.empty(n2)  # the float value sweep's flags
    unlimited = np.int64(2**63 - 1)  # integer ranges are the caller's check
    wt = v.dtype.type
    for b in range(lo, hi):
        for i in range(n1):
            row_ind[b, i] = i
        st, r = _solve_canonical(c[b], integral, unlimited, v[b], x[b], y, iw, fw, sweep)
        if st == STATUS_OK:
            st, r2 = _finish_duals(c[b], integral, v[b], x[b], u[b])
            r += r2
        status[b] = st
        rows[b] = r
        if st == STATUS_OK:
            acc = wt(0)
            for i in range(n1):
                acc += wt(c[b, i, x[b, i]])
            total[b] = acc
