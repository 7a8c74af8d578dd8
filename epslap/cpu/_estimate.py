"""Estimation of the column potentials v and of the ε bounds (ALGORITHM.md §2).

Guthe & Thuerck, "Algorithm 1015", ACM TOMS 47(2), 2021, doi:10.1145/3442348, §3.2–3.3.
All statistics are computed in float64; for integral costs v is rounded back to int64 at the end
(the estimate is a heuristic: any finite v leaves the final exact pass correct).

Arrays: ``src`` gives rows of length ``n2``; ``v_out`` is (n2,) of the work dtype; ``perm_out`` is
(n1,) int64. Rows ``n1 … n2-1`` are virtual (cost 0) and never read.
"""
import math

import numpy as np
from numba import njit

from ._rows import get_row

STATUS_OK = 0
STATUS_INFEASIBLE = 1
STATUS_INVALID = 3  # NaN or -inf in a row (only possible for on-demand sources)


@njit(cache=True, nogil=True)
def _shift_to_max_zero(vf):
    """v -= max(v) over finite entries (keeps c - v well conditioned)."""
    m = -np.inf
    for j in range(vf.shape[0]):
        if vf[j] > m:
            m = vf[j]
    if math.isfinite(m):
        for j in range(vf.shape[0]):
            vf[j] -= m


@njit(cache=True, nogil=True)
def _greedy_bounds(src, buf, n1, n2, perm, vf, pick_out):
    """Stages C/E: greedy over ``perm`` against reduced costs c - v.

    Each row picks the lowest-index minimiser of c[r][j] - v[j] among free columns.
    Returns (UB, LB): UB = Σ c[r][q], LB = Σ (min_j (c[r][j] - v[j]) + v[q]).
    """
    taken = np.zeros(n2, np.bool_)
    ub = 0.0
    lb = 0.0
    for k in range(n1):
        r = perm[k]
        row = get_row(src, r, buf)
        best_all = np.inf
        best_free = np.inf
        q = -1
        for j in range(n2):
            t = np.float64(row[j]) - vf[j]
            if t < best_all:
                best_all = t
            if not taken[j] and (t < best_free or q < 0):
                best_free = t
                q = j
        taken[q] = True
        pick_out[r] = q
        ub += np.float64(row[q])
        lb += best_all + vf[q]
    return ub, lb


@njit(cache=True, nogil=True)
def _assigned_costs(src, buf, row_to_col, out):
    """out[i] = c[i][row_to_col[i]] (one more read of each row, for on-demand sources)."""
    for i in range(row_to_col.shape[0]):
        row = get_row(src, i, buf)
        out[i] = row[row_to_col[i]]


@njit(cache=True, nogil=True)
def _estimate(src, buf, n1, n2, v_out, perm_out, integral):
    """Stages A–E. Returns (status, eps_upper, eps_lower) as floats; fills v_out and perm_out."""
    # ---- A: forward sweep ------------------------------------------------------------------
    best1 = np.full(n2, np.inf)
    best2 = np.full(n2, np.inf)
    picked = np.zeros(n2, np.bool_)
    lb_a = 0.0
    ub_id = 0.0
    g_a = 0.0
    for i in range(n1):
        row = get_row(src, i, buf)
        rmin = np.inf
        pmin = np.inf
        p = -1
        for j in range(n2):
            c = np.float64(row[j])
            if c != c or c == -np.inf:
                return STATUS_INVALID, 0.0, 0.0
            if c < rmin:
                rmin = c
            if not picked[j] and (c < pmin or p < 0):
                pmin = c
                p = j
        if not math.isfinite(rmin):
            return STATUS_INFEASIBLE, 0.0, 0.0
        picked[p] = True
        lb_a += rmin
        ub_id += np.float64(row[i])
        g_a += pmin
        for j in range(n2):
            r = np.float64(row[j]) - rmin
            if r < best1[j]:
                best2[j] = best1[j]
                best1[j] = r
            elif r < best2[j]:
                best2[j] = r
    vf = np.empty(n2)
    for j in range(n2):
        x = best2[j]
        if not math.isfinite(x):
            x = best1[j]
        if not math.isfinite(x):
            x = 0.0
        vf[j] = x
    _shift_to_max_zero(vf)
    g_a = min(g_a, ub_id)
    gap_i = ub_id - lb_a
    g0 = g_a - lb_a

    for k in range(n1):
        perm_out[k] = k

    # ---- B: reverse sweep on t = c - v -----------------------------------------------------
    regret = np.empty(n1)
    picked[:] = False
    lb_b = 0.0
    ub_b = 0.0
    for i in range(n1 - 1, -1, -1):
        row = get_row(src, i, buf)
        m = np.inf
        s = np.inf
        qv = np.inf
        q = -1
        for j in range(n2):
            t = np.float64(row[j]) - vf[j]
            if t < m:
                s = m
                m = t
            elif t < s:
                s = t
            if not picked[j] and (t < qv or q < 0):
                qv = t
                q = j
        picked[q] = True
        regret[i] = s - m
        lb_b += m + vf[q]
        ub_b += np.float64(row[q])
    ub = min(ub_b, g_a)
    gap = ub - lb_b

    if gap_i < 4.0 * gap:
        # ---- C: regret order, greedy bounds ------------------------------------------------
        v_old = vf.copy()
        order = np.argsort(regret, kind="mergesort")  # ascending, ties by index ascending
        for k in range(n1):
            perm_out[k] = order[n1 - 1 - k]  # descending regret, ties: larger index first
        pick = np.empty(n1, np.int64)
        ub_c, lb_c = _greedy_bounds(src, buf, n1, n2, perm_out, vf, pick)
        # ---- D: walk perm backwards, make held columns tie with the row's pick -------------
        held = np.zeros(n2, np.bool_)
        for k in range(n1):
            held[pick[perm_out[k]]] = True
        for k in range(n1 - 1, -1, -1):
            r = perm_out[k]
            q = pick[r]
            row = get_row(src, r, buf)
            ref = np.float64(row[q]) - vf[q]
            held[q] = False
            if not math.isfinite(ref):
                continue
            for j in range(n2):
                if held[j]:
                    t = np.float64(row[j]) - vf[j]
                    if t < ref:
                        vf[j] = np.float64(row[j]) - ref
        _shift_to_max_zero(vf)
        # ---- E: bounds again, blend towards the old v by the remaining gap ratio -----------
        ub_e, lb_e = _greedy_bounds(src, buf, n1, n2, perm_out, vf, pick)
        ub = min(ub_e, ub_c)
        lb = max(lb_e, lb_c)
        gap = ub - lb
        if g0 > 0.0 and math.isfinite(gap):
            rho = gap / g0
            if rho > 1e-9:
                for j in range(n2):
                    vf[j] = rho * v_old[j] + (1.0 - rho) * vf[j]

    for j in range(n2):
        if integral:
            v_out[j] = np.round(vf[j])
        else:
            v_out[j] = vf[j]

    eps_upper, eps_lower = _eps_bounds(gap_i, gap, n1, n2, integral)
    return STATUS_OK, eps_upper, eps_lower


@njit(cache=True, nogil=True)
def _eps_bounds(gap_i, gap, n1, n2, integral):
    """ε_upper (eq. 17) and ε_lower (eq. 16) from the initial gap I and the estimate's gap g."""
    if not (math.isfinite(gap_i) and math.isfinite(gap)) or gap_i <= 0.0:
        return 0.0, 0.0
    gp = min(gap, gap_i / 4.0)
    n2f = np.float64(n2)
    if gp < 1e-6 * gap_i:
        eps_upper = 0.0
    else:
        eps_upper = n1 * gp * math.sqrt(gp / gap_i) / (n2f * n2f)
    eps_lower = gap_i / (16.0 * n2f * n2f)
    if integral:
        eps_upper = math.floor(eps_upper)
        eps_lower = max(1.0, math.floor(eps_lower))
    if eps_upper < eps_lower:
        eps_upper = 0.0
        eps_lower = 0.0
    return eps_upper, eps_lower
