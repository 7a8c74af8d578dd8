"""The ε-pricing successive-shortest-path loop on the CPU (ALGORITHM.md §1, §3, §4).

Guthe & Thuerck, "Algorithm 1015: A Fast Scalable Solver for the Dense Linear (Sum) Assignment
Problem", ACM TOMS 47(2), 2021, doi:10.1145/3442348, Algorithms 1–3.

Written once; Numba specialises it per cost source type (``get_row``) and per work dtype
(float64 or int64, the dtype of ``v``). Compiled code never raises: it returns a status.

Shapes: rows ``0 … n1-1`` are real (``get_row``), rows ``n1 … n2-1`` virtual (cost 0, never read);
``v`` (n2,) work dtype; ``row_to_col`` (n1,) int64 out; ``ctl`` (8,) int64 shared with the host:
ctl[0] stop request (host → kernel), ctl[1] pass index, ctl[2] rows augmented in the pass,
ctl[3] rows evaluated so far; ``eps_log`` (MAX_PASSES,) float64 out.
"""
import numpy as np
from numba import njit

from ._rows import get_row

STATUS_OK = 0
STATUS_INFEASIBLE = 1
STATUS_INTERRUPTED = 2
MAX_PASSES = 64


BLOCK = 256  # columns per block of the argmin: block minima narrow the index search
_KEY_MAX = np.int64(0x7FFFFFFFFFFFFFFF)
_KEY_MIN = np.int64(-0x7FFFFFFFFFFFFFFF - 1)
# Column masks (int64 so that every step below is a vectorisable integer max/min):
# open_mask[j] = _KEY_MIN while column j is open, _KEY_MAX once closed;
# free_mask[j] = _KEY_MIN while column j is unassigned, _KEY_MAX once assigned.


@njit(cache=True, nogil=True, inline="always")
def _relax(row, cij, v, vjmin, mn, d, pred, open_mask, i):
    """d[j] = min(d[j], reduced cost through row i) over open columns (branch-free: vectorises).

    ``+ 0`` turns -0.0 into +0.0 so that equal values have equal sort keys.
    """
    zero = v[0] - v[0]  # (v is always finite; d may hold +inf)
    for j in range(d.shape[0]):
        cand = ((row[j] - cij) - (v[j] - vjmin)) + mn + zero
        dj = d[j]
        upd = (cand < dj) & (open_mask[j] < 0)
        d[j] = cand if upd else dj
        pred[j] = i if upd else pred[j]


@njit(cache=True, nogil=True, inline="always")
def _sort_key(k, integral):
    """Order-preserving int64 key of a float's bits (identity for integers)."""
    if integral:
        return k
    return k ^ ((k >> 63) & _KEY_MAX)


@njit(cache=True, nogil=True, inline="always")
def _block_minima(dkey, open_mask, free_mask, integral):
    """(min key over open columns, min key over open unassigned columns) of one block."""
    m = _KEY_MAX
    mf = _KEY_MAX
    for j in range(dkey.shape[0]):
        k = _sort_key(dkey[j], integral)
        om = open_mask[j]
        k = k if k > om else om
        m = k if k < m else m
        fm = free_mask[j]
        kf = k if k > fm else fm
        mf = kf if kf < mf else mf
    return m, mf


@njit(cache=True, nogil=True, inline="always")
def _argmin_open(dkey, open_mask, free_mask, block_min, block_free, integral):
    """The tie rule over open columns: smallest d; among equals an unassigned column; then the
    lowest index. Returns the column, or -1 when no column is open.

    Floats are compared through an order-preserving int64 key of their bits (``dkey`` is ``d``
    viewed as int64), so each block's minimum is an integer max/min that the compiler vectorises;
    the index is then searched only inside the first block that holds the minimum.
    """
    n = dkey.shape[0]
    best = _KEY_MAX
    best_free = _KEY_MAX
    for b in range(block_min.shape[0]):
        lo = b * BLOCK
        hi = min(lo + BLOCK, n)
        m, mf = _block_minima(dkey[lo:hi], open_mask[lo:hi], free_mask[lo:hi], integral)
        block_min[b] = m
        block_free[b] = mf
        best = m if m < best else best
        best_free = mf if mf < best_free else best_free
    if best == _KEY_MAX:
        return -1
    want_free = best_free == best
    for b in range(block_min.shape[0]):
        if (block_free[b] if want_free else block_min[b]) != best:
            continue
        lo = b * BLOCK
        hi = min(lo + BLOCK, n)
        for j in range(lo, hi):
            if open_mask[j] > 0 or (want_free and free_mask[j] > 0):
                continue
            if _sort_key(dkey[j], integral) == best:
                return j
    return -1


@njit(cache=True, nogil=True)
def _augment(src, buf, zero_row, f, n1, n2, v, eps, inf_val, integral, d, dkey, pred, open_mask,
             free_mask, closed_list, owner, row_col, block_min, block_free, acc):
    """Augment row ``f`` along a shortest path (Dijkstra on a dense graph, no heap).

    ``row_col`` (n2,) int64 is the column of every row, virtual ones included; every column is
    open (``open_mask``) on entry and on exit; ``free_mask`` follows ``owner``. ``acc`` (3,) float64 accumulates
    [rows evaluated, Σ(mn - d_j), Σ ε]. Returns a status.
    Reduced costs use the difference form (c[i][j] - c[i][jmin]) - (v[j] - v[jmin]) + mn.
    """
    zero = v[0] - v[0]
    # a virtual row (f or an owner >= n1) costs 0 everywhere: it reads ``zero_row``, no cost row
    if f < n1:
        row = get_row(src, f, buf)
        acc[0] += 1.0
    else:
        row = zero_row
    for j in range(n2):
        d[j] = (row[j] - v[j]) + zero
        pred[j] = f
    jmin = _argmin_open(dkey, open_mask, free_mask, block_min, block_free, integral)
    if jmin < 0 or not d[jmin] < inf_val:
        return STATUS_INFEASIBLE
    mn = d[jmin]
    n_closed = 1
    closed_list[0] = jmin
    open_mask[jmin] = _KEY_MAX
    while owner[jmin] >= 0:
        i = owner[jmin]
        if i < n1:
            row = get_row(src, i, buf)
            acc[0] += 1.0
        else:
            row = zero_row
        _relax(row, row[jmin] + zero, v, v[jmin], mn, d, pred, open_mask, i)
        jnext = _argmin_open(dkey, open_mask, free_mask, block_min, block_free, integral)
        if jnext < 0 or not d[jnext] < inf_val:
            for k in range(n_closed):
                open_mask[closed_list[k]] = _KEY_MIN
            return STATUS_INFEASIBLE
        jmin = jnext
        if d[jmin] > mn:
            mn = d[jmin]
        open_mask[jmin] = _KEY_MAX
        closed_list[n_closed] = jmin
        n_closed += 1
    # price update of every closed column (ε-scaled), statistics for the ε schedule
    for k in range(n_closed):
        j = closed_list[k]
        delta = mn - d[j]
        v[j] -= delta + eps
        acc[1] += delta
        open_mask[j] = _KEY_MIN
    acc[2] += np.float64(eps) * n_closed
    # flip the alternating path back to f
    j = jmin
    while True:
        i = pred[j]
        owner[j] = i
        free_mask[j] = _KEY_MAX
        prev = row_col[i]
        row_col[i] = j
        if i == f:
            break
        j = prev
    return STATUS_OK


@njit(cache=True, nogil=True)
def _next_eps(eps, eps_lower, total_d, total_eps, first, second, n2, integral):
    """ε schedule called before every pass (ALGORITHM.md §3, paper eq. 18)."""
    if eps > 0.0 and not first:
        if integral and eps == eps_lower:
            return 0.0
        if not second and total_d > total_eps:
            eps = 0.0
        else:
            eps = min(eps / 4.0, total_eps / (8.0 * n2))
            if integral:
                eps = np.floor(eps)
        if eps < eps_lower:
            eps = eps_lower if integral else 0.0
    return eps


@njit(cache=True, nogil=True)
def _solve_passes(src, buf, n1, n2, v, perm, eps_upper, eps_lower, integral, inf_val,
                  row_to_col, ctl, eps_log):
    """All passes: ε-passes shape v, the final exact pass (ε = 0) gives the optimum.

    Returns (status, number of passes, rows evaluated).
    """
    d = np.empty(n2, v.dtype)
    pred = np.empty(n2, np.int64)
    open_mask = np.full(n2, _KEY_MIN)
    free_mask = np.empty(n2, np.int64)
    dkey = d.view(np.int64)
    n_blocks = (n2 + BLOCK - 1) // BLOCK
    block_min = np.empty(n_blocks, np.int64)
    block_free = np.empty(n_blocks, np.int64)
    closed_list = np.empty(n2, np.int64)
    owner = np.empty(n2, np.int64)
    row_col = np.empty(n2, np.int64)
    zero_row = np.zeros(n2, buf.dtype)
    eps_cast = np.empty(1, v.dtype)
    acc = np.zeros(3)
    rows_evaluated = 0.0
    eps = eps_upper
    first = True
    second = False
    reverse = eps == 0.0
    n_pass = 0
    while eps >= 0.0:
        eps = _next_eps(eps, eps_lower, acc[1], acc[2], first, second, n2, integral)
        if eps == 0.0:
            eps = -1.0
        if n_pass < eps_log.shape[0]:
            eps_log[n_pass] = max(eps, 0.0)
        ctl[1] = n_pass
        eps_cast[0] = max(eps, 0.0)
        eps_w = eps_cast[0]
        owner[:] = -1
        free_mask[:] = _KEY_MIN
        row_col[:] = -1
        acc[:] = 0.0
        for k in range(n2):
            if k < n1:
                f = perm[n1 - 1 - k] if reverse else perm[k]
            else:
                f = k
            st = _augment(src, buf, zero_row, f, n1, n2, v, eps_w, inf_val, integral, d, dkey,
                          pred, open_mask, free_mask, closed_list, owner, row_col, block_min,
                          block_free, acc)
            if st != STATUS_OK:
                return st, n_pass + 1, rows_evaluated + acc[0]
            ctl[2] = k + 1
            ctl[3] = np.int64(rows_evaluated + acc[0])
            if ctl[0] != 0:
                return STATUS_INTERRUPTED, n_pass + 1, rows_evaluated + acc[0]
        rows_evaluated += acc[0]
        if eps > 0.0:
            vmax = v[0]
            for j in range(n2):
                if v[j] > vmax:
                    vmax = v[j]
            for j in range(n2):
                v[j] -= vmax
        second = first
        first = False
        reverse = not reverse
        n_pass += 1
    row_to_col[:] = row_col[:n1]
    return STATUS_OK, n_pass, rows_evaluated
