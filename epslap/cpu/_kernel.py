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


@njit(cache=True, nogil=True, inline="always")
def _better(dj, best, j_free, best_free):
    """The tie rule: smaller value; on equal values an unassigned column beats an assigned one.

    Scanning runs in increasing column index, so among equals of one kind the lowest index stays.
    """
    return dj < best or (dj == best and j_free and not best_free)


@njit(cache=True, nogil=True)
def _augment(src, buf, zero_row, f, n1, n2, v, eps, inf_val, d, pred, closed, closed_list,
             owner, row_col, acc):
    """Augment row ``f`` along a shortest path (Dijkstra on a dense graph, no heap).

    ``row_col`` (n2,) int64 is the column of every row, virtual ones included.
    ``acc`` (3,) float64 accumulates [rows evaluated, Σ(mn - d_j), Σ ε]. Returns a status.
    Reduced costs use the difference form (c[i][j] - c[i][jmin]) - (v[j] - v[jmin]) + mn.
    """
    zero = v[0] - v[0]
    # a virtual row (f or an owner >= n1) costs 0 everywhere: it reads ``zero_row``, no cost row
    if f < n1:
        row = get_row(src, f, buf)
        acc[0] += 1.0
    else:
        row = zero_row
    best = inf_val
    jmin = -1
    best_free = False
    for j in range(n2):
        dj = row[j] - v[j]
        d[j] = dj
        pred[j] = f
        if dj <= best:
            jf = owner[j] < 0
            if _better(dj, best, jf, best_free):
                best = dj
                jmin = j
                best_free = jf
    if jmin < 0 or not best < inf_val:
        return STATUS_INFEASIBLE
    mn = best
    n_closed = 1
    closed_list[0] = jmin
    closed[jmin] = True
    while owner[jmin] >= 0:
        i = owner[jmin]
        if i < n1:
            row = get_row(src, i, buf)
            acc[0] += 1.0
        else:
            row = zero_row
        vjmin = v[jmin]
        cij = row[jmin] + zero
        best = inf_val
        jnext = -1
        best_free = False
        for j in range(n2):
            if closed[j]:
                continue
            cand = ((row[j] - cij) - (v[j] - vjmin)) + mn
            dj = d[j]
            if cand < dj:
                d[j] = cand
                pred[j] = i
                dj = cand
            if dj <= best:
                jf = owner[j] < 0
                if _better(dj, best, jf, best_free):
                    best = dj
                    jnext = j
                    best_free = jf
        if jnext < 0 or not best < inf_val:
            for k in range(n_closed):
                closed[closed_list[k]] = False
            return STATUS_INFEASIBLE
        jmin = jnext
        if best > mn:
            mn = best
        closed[jmin] = True
        closed_list[n_closed] = jmin
        n_closed += 1
    # price update of every closed column (ε-scaled), statistics for the ε schedule
    for k in range(n_closed):
        j = closed_list[k]
        delta = mn - d[j]
        v[j] -= delta + eps
        acc[1] += delta
        acc[2] += eps
        closed[j] = False
    # flip the alternating path back to f
    j = jmin
    while True:
        i = pred[j]
        owner[j] = i
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
    closed = np.zeros(n2, np.bool_)
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
        row_col[:] = -1
        acc[:] = 0.0
        for k in range(n2):
            if k < n1:
                f = perm[n1 - 1 - k] if reverse else perm[k]
            else:
                f = k
            st = _augment(src, buf, zero_row, f, n1, n2, v, eps_w, inf_val, d, pred, closed,
                          closed_list, owner, row_col, acc)
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
