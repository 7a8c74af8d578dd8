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

from ._kernel import _KEY_MAX, _KEY_MIN, BLOCK, _argmin_open
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
    tmp = np.empty(n2)
    tk = tmp.view(np.int64)
    taken = np.full(n2, _KEY_MIN)
    no_pref = np.full(n2, _KEY_MAX)
    n_blocks = (n2 + BLOCK - 1) // BLOCK
    bmin = np.empty(n_blocks, np.int64)
    bpref = np.empty(n_blocks, np.int64)
    scratch = np.empty(1, np.int64)
    ub = 0.0
    lb = 0.0
    for k in range(n1):
        r = perm[k]
        row = get_row(src, r, buf)
        for j in range(n2):
            tmp[j] = (np.float64(row[j]) - vf[j]) + 0.0
        best_all = _from_key(_min_key(tk), scratch)
        q = _argmin_open(tk, taken, no_pref, bmin, bpref, False)
        taken[q] = _KEY_MAX
        pick_out[r] = q
        ub += np.float64(row[q])
        lb += best_all + vf[q]
    return ub, lb


@njit(cache=True, nogil=True, inline="always")
def _key(b):
    """Order-preserving int64 key of a float64's bits; the map is its own inverse."""
    return b ^ ((b >> 63) & _KEY_MAX)


@njit(cache=True, nogil=True, inline="always")
def _from_key(k, scratch):
    """The float64 whose key is ``k`` (``scratch``: int64[1] viewed as float64)."""
    scratch[0] = _key(k)
    return scratch.view(np.float64)[0]


@njit(cache=True, nogil=True)
def _load_row(row, tmp):
    """tmp[j] = float64(row[j]) (+0.0 so -0.0 keys like 0.0); False if NaN or -inf is seen."""
    bad = False
    for j in range(tmp.shape[0]):
        c = np.float64(row[j]) + 0.0
        tmp[j] = c
        bad = bad | (c != c) | (c == -np.inf)
    return not bad


@njit(cache=True, nogil=True)
def _min_key(tk):
    m = _KEY_MAX
    for j in range(tk.shape[0]):
        k = _key(tk[j])
        m = k if k < m else m
    return m


@njit(cache=True, nogil=True)
def _count_and_second(tk, mk):
    """(#entries with key mk, smallest key above mk)."""
    cnt = 0
    s2 = _KEY_MAX
    for j in range(tk.shape[0]):
        k = _key(tk[j])
        cnt += k == mk
        k2 = k if k != mk else _KEY_MAX
        s2 = k2 if k2 < s2 else s2
    return cnt, s2


@njit(cache=True, nogil=True)
def _update_two_smallest(tmp, rmin, best1, best2):
    """Per column: keep the two smallest row-reduced costs c - rmin (branch-free, vectorises)."""
    for j in range(tmp.shape[0]):
        r = tmp[j] - rmin
        b1 = best1[j]
        b2 = best2[j]
        lt = r < b1
        best2[j] = b1 if lt else (r if r < b2 else b2)
        best1[j] = r if lt else b1


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
    # Row minima and picks are found through int64 sort keys of the float64 values (vectorised
    # integer min) and the blocked argmin of the solver; ties resolve to the lowest index.
    best1 = np.full(n2, np.inf)
    best2 = np.full(n2, np.inf)
    tmp = np.empty(n2)
    tk = tmp.view(np.int64)
    pmask = np.full(n2, _KEY_MIN)      # _KEY_MIN: not picked yet, _KEY_MAX: picked
    no_pref = np.full(n2, _KEY_MAX)    # no preference among equal values but the index
    n_blocks = (n2 + BLOCK - 1) // BLOCK
    bmin = np.empty(n_blocks, np.int64)
    bpref = np.empty(n_blocks, np.int64)
    scratch = np.empty(1, np.int64)
    lb_a = 0.0
    ub_id = 0.0
    g_a = 0.0
    for i in range(n1):
        row = get_row(src, i, buf)
        if not _load_row(row, tmp):
            return STATUS_INVALID, 0.0, 0.0
        rmin = _from_key(_min_key(tk), scratch)
        if not math.isfinite(rmin):
            return STATUS_INFEASIBLE, 0.0, 0.0
        p = _argmin_open(tk, pmask, no_pref, bmin, bpref, False)
        pmask[p] = _KEY_MAX
        lb_a += rmin
        ub_id += tmp[i]
        g_a += tmp[p]
        _update_two_smallest(tmp, rmin, best1, best2)
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
    pmask[:] = _KEY_MIN
    lb_b = 0.0
    ub_b = 0.0
    for i in range(n1 - 1, -1, -1):
        row = get_row(src, i, buf)
        for j in range(n2):
            tmp[j] = (np.float64(row[j]) - vf[j]) + 0.0
        mk = _min_key(tk)
        cnt, s2 = _count_and_second(tk, mk)
        m = _from_key(mk, scratch)
        if cnt >= 2:
            s_val = m  # the second order statistic counts duplicates
        elif s2 == _KEY_MAX:
            s_val = np.inf
        else:
            s_val = _from_key(s2, scratch)
        q = _argmin_open(tk, pmask, no_pref, bmin, bpref, False)
        pmask[q] = _KEY_MAX
        regret[i] = s_val - m
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
            for j in range(n2):  # branch-free: vectorises
                c = np.float64(row[j])
                lower = held[j] & ((c - vf[j]) < ref)
                vf[j] = (c - ref) if lower else vf[j]
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
