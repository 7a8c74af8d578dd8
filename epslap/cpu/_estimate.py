"""Estimation of the column potentials v and of the ε bounds (docs/algorithm.md §2).

Guthe & Thuerck, "Algorithm 1015", ACM TOMS 47(2), 2021, doi:10.1145/3442348, §3.2–3.4.
All statistics are computed in float64; for integral costs v is rounded back to int64 at the end
(the estimate is a heuristic: any finite v leaves the final exact pass correct).

Arrays: ``src`` gives rows of length ``n2``; ``v_out`` is (n2,) of the work dtype; ``perm_out`` is
(n1,) int64; ``pick_out`` is (n1,) int64 (stage B's greedy assignment, see below). Rows
``n1 … n2-1`` are virtual (cost 0) and never read.

Each stage is one sweep over the cost rows (A and B always; C, D, E only when the gap test asks
for them). Inside a stage every row is read once from memory: the conversion to float64, the
reduced costs, the NaN/-inf check and the row minimum are one fused, vectorised loop (int64 sort
keys of the float64 bits); the remaining per-row work runs on that row while it is in cache.

**Certificate (the paper's "u⁰, v⁰ represent the correct dual variables, immediately solving the
LAP").** When stage B's greedy picks every row's column at a minimum of that row's reduced costs
``c[i][j] - v[j]`` (ties allowed), the picks form a complete assignment on zero reduced costs with
the feasible dual ``u_i = min_j (c[i][j] - v[j])``: it is optimal. If moreover ε_upper = 0, stages
C–E did not run (perm is the identity) and every unpicked column holds the largest v, then the
exact pass (rows back to front = stage B's order) would do exactly stage B's work: each row's
argmin is its lowest-index free minimiser, every path is one edge long, n1 rows are evaluated and
v does not change. ``estimate`` then returns ``STATUS_CERTIFIED`` with the assignment in
``pick_out``, and the caller may skip the pass and report its result (n1 rows evaluated).
"""
import math

import numpy as np
from numba import njit, types
from numba.extending import overload

from costfns.rows import get_row

from .._schedule import eps_bounds
from .._status import (STATUS_CERTIFIED, STATUS_INFEASIBLE, STATUS_INTERRUPTED, STATUS_INVALID,
                       STATUS_OK)
from .._sync import (_arrive, _await_or_stop, _barrier, aborted, new_sync, reset_sync,
                     run_workers)
from ._kernel import _KEY_MAX, _KEY_MIN, BLOCK, _bits, _col_range

#: keys of -inf and +inf (see ``_key``): a row holds NaN or -inf iff its smallest key is at most
#: _KEY_NEG_INF or its largest key exceeds _KEY_POS_INF
_KEY_NEG_INF = np.int64(-0x7FF0000000000001)
_KEY_POS_INF = np.int64(0x7FF0000000000000)
#: integral costs whose magnitude stays below this are exact in float64 sums of three terms
_EXACT_INT = 2.0**50


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
def _v_before_shift(best1, best2, vf):
    """Stage A's v before its shift: per column the second-smallest row-reduced cost (the
    smallest when there is no second, 0 when neither is finite)."""
    for j in range(vf.shape[0]):
        x = best2[j]
        if not math.isfinite(x):
            x = best1[j]
        if not math.isfinite(x):
            x = 0.0
        vf[j] = x


@njit(cache=True, nogil=True)
def _v_from_two_smallest(best1, best2, vf):
    """Stage A's v (``_v_before_shift``), shifted so that max v = 0."""
    _v_before_shift(best1, best2, vf)
    _shift_to_max_zero(vf)


# ---- fused per-row loops ------------------------------------------------------------------------
# ``taken`` masks columns out of the greedy pick: _KEY_MIN = free, _KEY_MAX = taken. A masked key
# is max(key, taken[j]); the pick is the lowest index holding the smallest masked key.

@njit(cache=True, nogil=True)
def _load_keys(row, taken, bkey, bmask):
    """Stage A's read of a row: per block b, bkey[b] = min key of float64(row[j]) + 0.0 and
    bmask[b] = min masked key. Returns (min key, max key, min masked key). One vectorised pass."""
    n = row.shape[0]
    mk = _KEY_MAX
    xk = _KEY_MIN
    mm = _KEY_MAX
    for b in range(bkey.shape[0]):
        lo = b * BLOCK
        hi = min(lo + BLOCK, n)
        m = _KEY_MAX
        mb = _KEY_MAX
        for j in range(lo, hi):
            k = _key(_bits(np.float64(row[j]) + 0.0))
            m = k if k < m else m
            xk = k if k > xk else xk
            t = taken[j]
            km = k if k > t else t
            mb = km if km < mb else mb
        bkey[b] = m
        bmask[b] = mb
        mk = m if m < mk else mk
        mm = mb if mb < mm else mm
    return mk, xk, mm


@njit(cache=True, nogil=True)
def _first_in_row(row, taken, bmask, k0):
    """Lowest j with max(key(float64(row[j]) + 0.0), taken[j]) == k0; -1 if none."""
    n = row.shape[0]
    for b in range(bmask.shape[0]):
        if bmask[b] != k0:
            continue
        lo = b * BLOCK
        hi = min(lo + BLOCK, n)
        for j in range(lo, hi):
            k = _key(_bits(np.float64(row[j]) + 0.0))
            t = taken[j]
            if (k if k > t else t) == k0:
                return j
    return -1


@njit(cache=True, nogil=True, inline="always")
def _load_reduced_min_max(row, vf, tmp, bkey):
    """tmp[j] = (float64(row[j]) - vf[j]) + 0.0; bkey[b] = min key of block b; returns the min and
    the max key (NaN or -inf in the row show in the max). One read of the row, vectorised."""
    n = tmp.shape[0]
    mk = _KEY_MAX
    xk = _KEY_MIN
    for b in range(bkey.shape[0]):
        lo = b * BLOCK
        hi = min(lo + BLOCK, n)
        m = _KEY_MAX
        for j in range(lo, hi):
            x = (np.float64(row[j]) - vf[j]) + 0.0
            tmp[j] = x
            k = _key(_bits(x))
            m = k if k < m else m
            xk = k if k > xk else xk
        bkey[b] = m
        mk = m if m < mk else mk
    return mk, xk


@njit(cache=True, nogil=True)
def _load_reduced_keys(row, vf, tmp, bkey):
    """``_load_reduced_min_max`` without the max (inlined here: the compiler drops its
    computation).

    No mask here: the greedy pick usually is the row's first minimiser (``_greedy_pick`` falls
    back to a masked pass over tmp when it is not).
    """
    mk, _ = _load_reduced_min_max(row, vf, tmp, bkey)
    return mk


@njit(cache=True, nogil=True)
def _masked_block_minima(tk, taken, bmask):
    """bmask[b] = min over block b of max(key(tk[j]), taken[j]); returns the overall minimum."""
    n = tk.shape[0]
    mm = _KEY_MAX
    for b in range(bmask.shape[0]):
        lo = b * BLOCK
        hi = min(lo + BLOCK, n)
        m = _KEY_MAX
        for j in range(lo, hi):
            k = _key(tk[j])
            t = taken[j]
            km = k if k > t else t
            m = km if km < m else m
        bmask[b] = m
        mm = m if m < mm else mm
    return mm


@njit(cache=True, nogil=True)
def _first_with_key(tk, taken, bkey, k0):
    """Lowest index j with max(key(tk[j]), taken[j]) == k0 (``bkey``: the block minima of those
    masked keys; pass taken = all _KEY_MIN for plain keys). -1 if there is none."""
    n = tk.shape[0]
    for b in range(bkey.shape[0]):
        if bkey[b] != k0:
            continue
        lo = b * BLOCK
        hi = min(lo + BLOCK, n)
        for j in range(lo, hi):
            k = _key(tk[j])
            t = taken[j]
            if (k if k > t else t) == k0:
                return j
    return -1


@njit(cache=True, nogil=True)
def _first_plain(tk, bkey, k0):
    """Lowest index j with key(tk[j]) == k0 (``bkey``: block minima of the keys); -1 if none."""
    n = tk.shape[0]
    for b in range(bkey.shape[0]):
        if bkey[b] != k0:
            continue
        lo = b * BLOCK
        hi = min(lo + BLOCK, n)
        for j in range(lo, hi):
            if _key(tk[j]) == k0:
                return j
    return -1


@njit(cache=True, nogil=True)
def _greedy_pick(tk, bkey, mk, taken, bmask):
    """(pick, j0): the lowest-index minimiser of tk among columns not taken, and the lowest-index
    minimiser overall. Fast path: j0 itself when it is free; else one masked pass over tk."""
    j0 = _first_plain(tk, bkey, mk)
    if taken[j0] == _KEY_MIN:
        return j0, j0
    mm = _masked_block_minima(tk, taken, bmask)
    return _first_with_key(tk, taken, bmask, mm), j0


@njit(cache=True, nogil=True)
def _min_key_except(tk, bkey, j0):
    """Smallest key over all j != j0 (_KEY_MAX when there is none): the second order statistic,
    duplicates counted. Reads the block minima and one block only."""
    n = tk.shape[0]
    b0 = j0 // BLOCK
    m = _KEY_MAX
    for b in range(bkey.shape[0]):
        x = bkey[b]
        m = x if (b != b0 and x < m) else m
    lo = b0 * BLOCK
    hi = min(lo + BLOCK, n)
    for j in range(lo, hi):
        k = _key(tk[j])
        m = k if (j != j0 and k < m) else m
    return m


@njit(cache=True, nogil=True)
def _update_two_smallest(row, rmin, best1, best2):
    """Per column: keep the two smallest row-reduced costs c - rmin (branch-free, vectorises)."""
    for j in range(row.shape[0]):
        r = (np.float64(row[j]) + 0.0) - rmin
        b1 = best1[j]
        b2 = best2[j]
        lt = r < b1
        best2[j] = b1 if lt else (r if r < b2 else b2)
        best1[j] = r if lt else b1



@njit(cache=True, nogil=True, inline="always")
def _two_smallest_step(r, b1, b2):
    lt = r < b1
    return (r if lt else b1), (b1 if lt else (r if r < b2 else b2))


@njit(cache=True, nogil=True)
def _update_two_smallest4(r0, r1, r2, r3, m0, m1, m2, m3, best1, best2):
    """``_update_two_smallest`` for four rows in one pass over best1/best2 (same result: the two
    smallest of a multiset do not depend on the order of insertion). At large n the two column
    arrays live in L3, not L2: one read and write of them per four rows instead of per row."""
    for j in range(best1.shape[0]):
        b1 = best1[j]
        b2 = best2[j]
        b1, b2 = _two_smallest_step((np.float64(r0[j]) + 0.0) - m0, b1, b2)
        b1, b2 = _two_smallest_step((np.float64(r1[j]) + 0.0) - m1, b1, b2)
        b1, b2 = _two_smallest_step((np.float64(r2[j]) + 0.0) - m2, b1, b2)
        b1, b2 = _two_smallest_step((np.float64(r3[j]) + 0.0) - m3, b1, b2)
        best1[j] = b1
        best2[j] = b2


def _rows_are_views(src):  # pragma: no cover - only called from compiled code
    """True (at compile time) when ``get_row`` returns views that stay valid: a 2-D array."""
    raise NotImplementedError


@overload(_rows_are_views, jit_options={"cache": True, "nogil": True})
def _rows_are_views_overload(src):
    if isinstance(src, types.Array) and src.ndim == 2:
        return lambda src: True
    return lambda src: False  # computed rows share ``buf``; a cache may evict a returned slot


# ---- stages: one worker per slice of the columns -----------------------------------------------

# Every row step of every stage is a reduction over the columns (row minima, the greedy pick,
# stage D's reference cost) followed by column-local updates, so T threads each take a slice
# [lo, hi) of the columns and meet once per row (one barrier, slots double-buffered by parity),
# as the pass kernel does. With T = 1 this is the sequential estimate. Slot t holds the slice's
# part of the row's reduction (each stage lists its fields); a slot is 128 bytes, as the pass
# kernel's, so that no two threads write the same cache line.
_EST_SLOT = 16


@njit(cache=True, nogil=True, inline="always")
def _own_slot(gen, nthreads, tid):
    """Offset of thread ``tid``'s slot for the row that its ``gen + 1``-th barrier ends (slots
    are double-buffered by the barrier's parity)."""
    return (gen & 1) * nthreads * _EST_SLOT + tid * _EST_SLOT


@njit(cache=True, nogil=True)
def _slots_min(slots, base, nthreads, f):
    """The smallest field ``f`` over the threads' slots of one row."""
    m = _KEY_MAX
    for t in range(nthreads):
        m = min(m, slots[base + t * _EST_SLOT + f])
    return m


@njit(cache=True, nogil=True)
def _flagged_float(slots, base, nthreads, flag_f, value_f):
    """Field ``value_f`` (float64 bits) of the one slot of a row whose field ``flag_f`` is
    nonzero: the value that only the thread holding a given column could publish."""
    x = 0.0
    for t in range(nthreads):
        if slots[base + t * _EST_SLOT + flag_f] != 0:
            x = slots.view(np.float64)[base + t * _EST_SLOT + value_f]
    return x


@njit(cache=True, nogil=True)
def _first_smallest(slots, base, nthreads, key_f, col_f):
    """Offset of the slot with the smallest key (field ``key_f``) among those that hold a column
    (field ``col_f`` >= 0), the first such in thread order: slices are in column order, so its
    column is the lowest-index holder of the smallest key. -1 if no slot holds a column."""
    best = -1
    for t in range(nthreads):
        o = base + t * _EST_SLOT
        if slots[o + col_f] >= 0 and (best < 0 or slots[o + key_f] < slots[best + key_f]):
            best = o
    return best


@njit(cache=True, nogil=True)
def _shift_slices_to_max_zero(tid, nthreads, vl, sync, slots, gen):
    """``_shift_to_max_zero`` over the threads' slices ``vl`` of v: every slice's max, one
    barrier, then each thread subtracts the overall one (and a barrier: v is final for all).
    Returns (gen, ok)."""
    base = (gen & 1) * nthreads * _EST_SLOT
    mx = -np.inf
    for j in range(vl.shape[0]):
        if vl[j] > mx:
            mx = vl[j]
    slots.view(np.float64)[base + tid * _EST_SLOT] = mx
    gen += 1
    if not _barrier(sync, nthreads, gen):
        return gen, False
    mx = -np.inf
    for t in range(nthreads):
        x = slots.view(np.float64)[base + t * _EST_SLOT]
        if x > mx:
            mx = x
    if math.isfinite(mx):
        for j in range(vl.shape[0]):
            vl[j] -= mx
    gen += 1
    return gen, _barrier(sync, nthreads, gen)


@njit(cache=True, nogil=True)
def _read_keys_a(row, taken, bkey, bmask):
    """Stage A's read of a row slice (``_load_keys``) and its candidate: returns (min key, max
    key, min masked key mm, the first column holding mm or -1). (A slice whose columns are all
    picked has none; another slice has one: n1 <= n2.)"""
    mk, xk, mm = _load_keys(row, taken, bkey, bmask)
    return mk, xk, mm, _first_in_row(row, taken, bmask, mm) if mm < _KEY_MAX else -1


@njit(cache=True, nogil=True)
def _remask_block(row, taken, bmask, b, scratch_key, scratch_mask):
    """Recompute bmask[b] (``_load_keys`` on block b alone; ``scratch_*``: int64[1]) after a
    column of block b was taken; returns the new minimum over all blocks."""
    lo = b * BLOCK
    hi = min(lo + BLOCK, row.shape[0])
    _, _, bmask[b] = _load_keys(row[lo:hi], taken[lo:hi], scratch_key, scratch_mask)
    mm = _KEY_MAX
    for x in bmask:
        mm = x if x < mm else mm
    return mm


@njit(cache=True, nogil=True)
def _publish_a(row, lo, hi, i, p, mk, xk, mm, slots, off):
    """Row step of stage A once the pick's candidate is current: ``mm`` the min key over this
    slice's unpicked columns, ``p`` the first (local) column holding it (-1: none). Slot fields:
    min key, max key, mm, lo + p (-1: none), c[i][i] as float64 bits and whether this slice
    holds column i, the cost at the candidate."""
    if hi == lo:
        slots[off] = _KEY_MAX
        slots[off + 1] = _KEY_MIN
        slots[off + 2] = _KEY_MAX
        slots[off + 3] = -1
        slots[off + 5] = 0
        return
    slots[off] = mk
    slots[off + 1] = xk
    slots[off + 2] = mm
    slots[off + 3] = lo + p if p >= 0 else -1
    if p >= 0:
        slots[off + 6] = _bits(np.float64(row[lo + p]))
    mine = lo <= i < hi
    slots[off + 5] = 1 if mine else 0
    if mine:
        slots[off + 4] = _bits(np.float64(row[i]))


@njit(cache=True, nogil=True)
def _stage_a_cols(tid, nthreads, src, buf, n1, lo, hi, vf, sync, slots, gen):
    """Stage A (forward sweep) over this thread's columns ``[lo, hi)``; fills vf[lo:hi].
    Returns (status, LB_A, UB_id, G_A, max |finite c|, gen, ok).

    Stage A reads every entry: it is also the validation of the input (STATUS_INVALID for NaN or
    -inf anywhere, checked before STATUS_INFEASIBLE for a row without a finite cost, as scipy).
    Per row each slice publishes its part (``_publish_a``); after the barrier every thread merges
    them in column order, so every thread takes the same decisions.

    For a matrix in memory the sweep is pipelined as ``_greedy_cols``: the next row's keys and
    its candidate pick are taken between arriving at a row's barrier and waiting at it, before
    that row's pick is known. Only when that pick is this slice's candidate does the candidate
    change; then the pick's block is re-masked (``_remask_block``) and the candidate found again.
    Computed rows share ``buf``, so there each row is read after the previous row's decision
    (its column statistics need that row and its minimum).
    """
    m = hi - lo
    best1 = np.full(m, np.inf)
    best2 = np.full(m, np.inf)
    pmask = np.full(m, _KEY_MIN)      # _KEY_MIN: not picked yet, _KEY_MAX: picked
    n_blocks = (m + BLOCK - 1) // BLOCK
    bkey = np.empty(n_blocks, np.int64)
    bmask = np.empty(n_blocks, np.int64)
    scratch = np.empty(1, np.int64)
    block_key = np.empty(1, np.int64)  # _remask_block's scratch
    block_mask = np.empty(1, np.int64)
    lb_a = 0.0
    ub_id = 0.0
    g_a = 0.0
    cmax = 0.0
    infeasible = False
    ahead = _rows_are_views(src)
    pend = np.empty(4, np.int64)
    prmin = np.empty(4)
    n_pend = 0
    if n1 == 0:
        return STATUS_OK, lb_a, ub_id, g_a, cmax, gen, True
    row = get_row(src, 0, buf)
    mk, xk, mm, cand = _read_keys_a(row[lo:hi], pmask, bkey, bmask)
    _publish_a(row, lo, hi, 0, cand, mk, xk, mm, slots,
               _own_slot(gen, nthreads, tid))
    for i in range(n1):
        base = (gen & 1) * nthreads * _EST_SLOT
        gen += 1
        _arrive(sync, nthreads, gen)
        if ahead and i + 1 < n1:  # with the mask before row i's pick
            row_next = get_row(src, i + 1, buf)
            mk, xk, mm, cand = _read_keys_a(row_next[lo:hi], pmask, bkey, bmask)
        if not _await_or_stop(sync, nthreads, gen):
            return STATUS_OK, 0.0, 0.0, 0.0, 0.0, gen, False
        rmk = _slots_min(slots, base, nthreads, 0)
        rxk = _KEY_MIN
        for t in range(nthreads):
            rxk = max(rxk, slots[base + t * _EST_SLOT + 1])
        if rmk <= _KEY_NEG_INF or rxk > _KEY_POS_INF:
            return STATUS_INVALID, 0.0, 0.0, 0.0, 0.0, gen, True
        p = -1
        if rmk >= _KEY_POS_INF:
            infeasible = True  # a row without a finite cost; keep validating the other rows
        else:
            rmin = _from_key(rmk, scratch)
            rmax = _from_key(rxk, scratch)
            cmax = max(cmax, abs(rmin), abs(rmax) if math.isfinite(rmax) else 0.0)
            w = _first_smallest(slots, base, nthreads, 2, 3)  # first unpicked minimiser
            p = slots[w + 3]
            if lo <= p < hi:
                pmask[p - lo] = _KEY_MAX
            lb_a += rmin
            ub_id += _flagged_float(slots, base, nthreads, 5, 4)  # c[i][i]
            g_a += slots.view(np.float64)[w + 6]
            if ahead:  # dense matrix: update the column statistics four rows at a time
                pend[n_pend] = i
                prmin[n_pend] = rmin
                n_pend += 1
                if n_pend == 4:
                    _update_two_smallest4(get_row(src, pend[0], buf)[lo:hi],
                                          get_row(src, pend[1], buf)[lo:hi],
                                          get_row(src, pend[2], buf)[lo:hi],
                                          get_row(src, pend[3], buf)[lo:hi],
                                          prmin[0], prmin[1], prmin[2], prmin[3], best1, best2)
                    n_pend = 0
            else:
                _update_two_smallest(row[lo:hi], rmin, best1, best2)
        if i + 1 < n1:
            if ahead:
                row = row_next
                if lo <= p < hi and p - lo == cand:  # row i took this slice's candidate
                    mm = _remask_block(row[lo:hi], pmask, bmask, cand // BLOCK, block_key,
                                       block_mask)
                    cand = _first_in_row(row[lo:hi], pmask, bmask, mm) if mm < _KEY_MAX else -1
            else:
                row = get_row(src, i + 1, buf)
                mk, xk, mm, cand = _read_keys_a(row[lo:hi], pmask, bkey, bmask)
            _publish_a(row, lo, hi, i + 1, cand, mk, xk, mm, slots,
                       _own_slot(gen, nthreads, tid))
    for k in range(n_pend):
        _update_two_smallest(get_row(src, pend[k], buf)[lo:hi], prmin[k], best1, best2)
    if infeasible:
        return STATUS_INFEASIBLE, 0.0, 0.0, 0.0, 0.0, gen, True
    _v_before_shift(best1, best2, vf[lo:hi])
    gen, ok = _shift_slices_to_max_zero(tid, nthreads, vf[lo:hi], sync, slots, gen)
    return STATUS_OK, lb_a, ub_id, g_a, cmax, gen, ok


@njit(cache=True, nogil=True)
def _publish_b(tk, bkey, mk, pmask, bmask, row, lo, slots, off):
    """Row step of stage B after the previous row's pick is known. Slot fields: min key, its
    first column, the min key over the slice's other columns, the min key over free columns, the
    first free column holding it, that column's cost as float64 bits."""
    if tk.shape[0] == 0:
        slots[off] = _KEY_MAX
        slots[off + 1] = -1
        slots[off + 2] = _KEY_MAX
        slots[off + 3] = _KEY_MAX
        slots[off + 4] = -1
        return
    q, j0 = _greedy_pick(tk, bkey, mk, pmask, bmask)
    slots[off] = mk
    slots[off + 1] = lo + j0
    slots[off + 2] = _min_key_except(tk, bkey, j0)
    kq = _key(tk[q])
    kq = kq if kq > pmask[q] else pmask[q]  # _KEY_MAX: every column here is picked
    slots[off + 3] = kq
    slots[off + 4] = lo + q if kq < _KEY_MAX else -1
    slots[off + 5] = _bits(np.float64(row[lo + q]))


@njit(cache=True, nogil=True)
def _stage_b_cols(tid, nthreads, src, buf, n1, lo, hi, vf, regret, pick, sync, slots, gen):
    """Stage B (reverse sweep on t = c - v) over this thread's columns. Thread 0 writes regret
    and pick. Returns (LB_B, UB_B, certified, gen, ok).

    ``certified``: every row's pick is at a minimum of its row of t (see the module docstring).
    Per row each slice publishes its part (``_publish_b``): the row's minimum, its lowest-index
    minimiser j0, the second order statistic (the minimum over all columns but j0, duplicates
    counted) and the greedy pick follow in column order. Pipelined as ``_greedy_cols``: the next
    row is read between arriving at a row's barrier and waiting at it.
    """
    m = hi - lo
    n_blocks = (m + BLOCK - 1) // BLOCK
    tmp = np.empty(m)
    tk = tmp.view(np.int64)
    bkey = np.empty(n_blocks, np.int64)
    pmask = np.full(m, _KEY_MIN)
    bmask = np.empty(n_blocks, np.int64)
    scratch = np.empty(1, np.int64)
    vl = vf[lo:hi]
    lb_b = 0.0
    ub_b = 0.0
    certified = True
    if n1 == 0:
        return lb_b, ub_b, certified, gen, True
    row = get_row(src, n1 - 1, buf)
    mk = _load_reduced_keys(row[lo:hi], vl, tmp, bkey)
    _publish_b(tk, bkey, mk, pmask, bmask, row, lo, slots,
               _own_slot(gen, nthreads, tid))
    for i in range(n1 - 1, -1, -1):
        base = (gen & 1) * nthreads * _EST_SLOT
        gen += 1
        _arrive(sync, nthreads, gen)
        if i > 0:  # row i's own part was published: tmp and bkey are free
            row = get_row(src, i - 1, buf)
            mk_next = _load_reduced_keys(row[lo:hi], vl, tmp, bkey)
        if not _await_or_stop(sync, nthreads, gen):
            return 0.0, 0.0, False, gen, False
        mk = _slots_min(slots, base, nthreads, 0)
        s2 = _KEY_MAX
        seen_j0 = False
        for t in range(nthreads):  # slices in column order
            o = base + t * _EST_SLOT
            if slots[o + 1] < 0:
                continue
            if not seen_j0 and slots[o] == mk:  # the slice holding j0: its other columns
                seen_j0 = True
                s2 = min(s2, slots[o + 2])
            else:
                s2 = min(s2, slots[o])
        best = _first_smallest(slots, base, nthreads, 3, 4)
        q = slots[best + 4]
        mval = _from_key(mk, scratch)
        certified = certified and slots[best + 3] == mk  # the pick is at the row minimum
        s_val = np.inf if s2 == _KEY_MAX else _from_key(s2, scratch)
        if lo <= q < hi:
            pmask[q - lo] = _KEY_MAX
        if tid == 0:
            pick[i] = q
            regret[i] = s_val - mval
        lb_b += mval + vf[q]
        ub_b += slots.view(np.float64)[best + 5]
        if i > 0:
            _publish_b(tk, bkey, mk_next, pmask, bmask, row, lo, slots,
                       _own_slot(gen, nthreads, tid))
    gen += 1  # thread 0 wrote the last pick after the last barrier: publish it
    return lb_b, ub_b, certified, gen, _barrier(sync, nthreads, gen)


@njit(cache=True, nogil=True)
def _ab_worker(tid, nthreads, src, buf, n1, n2, vf, regret, pick, sync, slots, out):
    """Stages A and B for thread ``tid`` of ``nthreads`` (its slice of the columns). Thread 0
    writes out = [status, gap_i, gap, g0, cmax, certified] (see ``_ab_result``). Returns False
    if aborted."""
    lo, hi = _col_range(n2, nthreads, tid)
    status, lb_a, ub_id, g_a, cmax, gen, ok = _stage_a_cols(tid, nthreads, src, buf, n1, lo, hi,
                                                            vf, sync, slots, 0)
    if not ok:
        return False
    if status != STATUS_OK:
        if tid == 0:
            out[0] = status
        return True
    g_a = min(g_a, ub_id)
    lb_b, ub_b, certified, gen, ok = _stage_b_cols(tid, nthreads, src, buf, n1, lo, hi, vf,
                                                   regret, pick, sync, slots, gen)
    if tid == 0:
        out[0] = STATUS_OK
        out[1] = ub_id - lb_a
        out[2] = min(ub_b, g_a) - lb_b
        out[3] = g_a - lb_a
        out[4] = cmax
        out[5] = 1.0 if certified else 0.0
    return ok


@njit(cache=True, nogil=True)
def _publish_greedy(tk, bkey, mk, taken, bmask, row, lo, slots, off):
    """Row step of stages C/E after the previous row's pick is known: this slice's greedy pick
    (slot fields: min key, masked key of the pick, the pick, the pick's cost as float64 bits)."""
    if tk.shape[0] == 0:
        slots[off] = _KEY_MAX
        slots[off + 1] = _KEY_MAX
        slots[off + 2] = -1
        return
    q, _ = _greedy_pick(tk, bkey, mk, taken, bmask)
    kq = _key(tk[q])
    slots[off] = mk
    slots[off + 1] = kq if kq > taken[q] else taken[q]
    slots[off + 2] = lo + q
    slots[off + 3] = _bits(np.float64(row[lo + q]))


@njit(cache=True, nogil=True)
def _greedy_cols(tid, nthreads, src, buf, n1, lo, hi, perm, vf, pick_out, sync, slots, gen):
    """Stages C/E over this thread's columns: greedy over ``perm`` against reduced costs c - v;
    each row picks the lowest-index minimiser of c[r][j] - v[j] among free columns (merged over
    the slices in column order, see ``_publish_greedy``).
    Returns (UB, LB, gen, ok): UB = Σ c[r][q], LB = Σ (min_j (c[r][j] - v[j]) + v[q]).

    Software-pipelined over the rows with a split barrier: a thread arrives at row k's barrier,
    then reads row k+1 from memory (its reduced costs and their block minima do not depend on row
    k's pick) and only then waits for the others; the pick of row k+1 follows row k's decision.
    A thread that is early spends its wait on the next row's memory traffic instead of spinning.
    The row's buffer then already holds the next row, so the pick's cost travels in the slot.
    """
    m = hi - lo
    n_blocks = (m + BLOCK - 1) // BLOCK
    tmp = np.empty(m)
    tk = tmp.view(np.int64)
    bkey = np.empty(n_blocks, np.int64)
    taken = np.full(m, _KEY_MIN)
    bmask = np.empty(n_blocks, np.int64)
    scratch = np.empty(1, np.int64)
    vl = vf[lo:hi]
    ub = 0.0
    lb = 0.0
    if n1 == 0:
        return ub, lb, gen, True
    row = get_row(src, perm[0], buf)
    mk = _load_reduced_keys(row[lo:hi], vl, tmp, bkey)
    _publish_greedy(tk, bkey, mk, taken, bmask, row, lo, slots,
                    _own_slot(gen, nthreads, tid))
    for k in range(n1):
        base = (gen & 1) * nthreads * _EST_SLOT
        gen += 1
        _arrive(sync, nthreads, gen)
        if k + 1 < n1:  # row k's own part was published: tmp and bkey are free
            row = get_row(src, perm[k + 1], buf)
            mk_next = _load_reduced_keys(row[lo:hi], vl, tmp, bkey)
        if not _await_or_stop(sync, nthreads, gen):
            return ub, lb, gen, False
        mk = _slots_min(slots, base, nthreads, 0)
        w = _first_smallest(slots, base, nthreads, 1, 2)
        q = slots[w + 2]
        if lo <= q < hi:
            taken[q - lo] = _KEY_MAX
        if tid == 0:
            pick_out[perm[k]] = q
        ub += slots.view(np.float64)[w + 3]
        lb += _from_key(mk, scratch) + vf[q]
        if k + 1 < n1:
            _publish_greedy(tk, bkey, mk_next, taken, bmask, row, lo, slots,
                            _own_slot(gen, nthreads, tid))
    gen += 1  # thread 0 wrote the last pick after the last barrier: publish it
    return ub, lb, gen, _barrier(sync, nthreads, gen)


@njit(cache=True, nogil=True)
def _stage_d_cols(tid, nthreads, src, buf, n1, lo, hi, perm, pick, vf, sync, slots, gen):
    """Stage D over this thread's columns: walk perm backwards; lower v of columns held by
    earlier rows to tie the pick; then v -= max(v) (``_shift_to_max_zero``). Returns (gen, ok).

    Row r's reference cost c[r][q] - v[q] (q = pick[r]) needs v[q] after the previous row's
    update, which only q's thread has: it publishes the reference in its slot. Pipelined as the
    greedy stages: after arriving, a thread copies the next row's slice (as float64) into an
    L2-resident buffer before it waits for the reference; the update then reads that buffer.
    """
    m = hi - lo
    held = np.zeros(m, np.bool_)
    for k in range(n1):
        q = pick[perm[k]]
        if lo <= q < hi:
            held[q - lo] = True
    vl = vf[lo:hi]
    if n1 == 0:
        return _shift_slices_to_max_zero(tid, nthreads, vl, sync, slots, gen)
    cl = np.empty((2, m))
    _copy_slice(get_row(src, perm[n1 - 1], buf), lo, cl[(n1 - 1) & 1])
    for k in range(n1 - 1, -1, -1):
        cur = cl[k & 1]
        q = pick[perm[k]]
        base = (gen & 1) * nthreads * _EST_SLOT
        off = _own_slot(gen, nthreads, tid)
        if lo <= q < hi:  # v[q] is final: the previous row's update of this slice is done
            slots.view(np.float64)[off] = cur[q - lo] - vl[q - lo]
            slots[off + 1] = 1
            held[q - lo] = False
        else:
            slots[off + 1] = 0
        gen += 1
        _arrive(sync, nthreads, gen)
        if k > 0:
            _copy_slice(get_row(src, perm[k - 1], buf), lo, cl[(k - 1) & 1])
        if not _await_or_stop(sync, nthreads, gen):
            return gen, False
        ref = _flagged_float(slots, base, nthreads, 1, 0)
        if math.isfinite(ref):
            for j in range(m):  # branch-free: vectorises
                c = cur[j]
                lower = held[j] & ((c - vl[j]) < ref)
                vl[j] = (c - ref) if lower else vl[j]
    return _shift_slices_to_max_zero(tid, nthreads, vl, sync, slots, gen)


@njit(cache=True, nogil=True)
def _copy_slice(row, lo, out):
    """out[j] = float64(row[lo + j])."""
    for j in range(out.shape[0]):
        out[j] = np.float64(row[lo + j])


@njit(cache=True, nogil=True)
def _cde_worker(tid, nthreads, src, buf, n1, n2, perm, vf, pick, sync, slots, bounds):
    """Stages C, D and E for thread ``tid`` of ``nthreads`` (its slice of the columns).
    Thread 0 writes pick and bounds = [UB_C, LB_C, UB_E, LB_E]. Returns False if aborted."""
    lo, hi = _col_range(n2, nthreads, tid)
    ub_c, lb_c, gen, ok = _greedy_cols(tid, nthreads, src, buf, n1, lo, hi, perm, vf, pick,
                                       sync, slots, 0)
    if ok:
        gen, ok = _stage_d_cols(tid, nthreads, src, buf, n1, lo, hi, perm, pick, vf, sync,
                                slots, gen)
    if ok:
        ub_e, lb_e, gen, ok = _greedy_cols(tid, nthreads, src, buf, n1, lo, hi, perm, vf, pick,
                                           sync, slots, gen)
        if tid == 0:
            bounds[0] = ub_c
            bounds[1] = lb_c
            bounds[2] = ub_e
            bounds[3] = lb_e
    return ok


@njit(cache=True, nogil=True)
def _regret_order(regret, perm_out):
    """Stage C's row order: descending regret, ties: larger index first."""
    n1 = regret.shape[0]
    order = np.argsort(regret, kind="mergesort")  # ascending, ties by index ascending
    for k in range(n1):
        perm_out[k] = order[n1 - 1 - k]


@njit(cache=True, nogil=True)
def _blend(vf, v_old, bounds, g0):
    """The gap g of stages C/E, and v blended back towards stage B's v by g / g0. Returns g."""
    ub = min(bounds[2], bounds[0])
    lb = max(bounds[3], bounds[1])
    gap = ub - lb
    if g0 > 0.0 and math.isfinite(gap):
        rho = gap / g0
        if rho > 1e-9:
            for j in range(vf.shape[0]):
                vf[j] = rho * v_old[j] + (1.0 - rho) * vf[j]
    return gap


@njit(cache=True, nogil=True)
def _ab_result(out, perm_out):
    """(status, gap_i, gap, g0, cmax, certified) from ``_ab_worker``'s out; perm_out = identity."""
    for k in range(perm_out.shape[0]):
        perm_out[k] = k
    return np.int64(out[0]), out[1], out[2], out[3], out[4], out[5] != 0.0


@njit(cache=True, nogil=True)
def _finish(vf, v_out, perm_out, pick_out, n1, n2, integral, gap_i, gap, cmax, certified,
            ran_cde):
    """v in the work dtype, the ε bounds and the certificate. Returns (status, ε_upper, ε_lower)."""
    for j in range(n2):
        if integral:
            v_out[j] = np.round(vf[j])
        else:
            v_out[j] = vf[j]

    eps_upper, eps_lower = eps_bounds(gap_i, gap, n1, n2, integral)
    if eps_upper > 0.0:
        # The regret order of stage C only serves a solve that starts with the exact pass; the
        # ε-passes take the rows in their natural order (alternating direction), as the authors'
        # published implementation does (it resets perm to the identity whenever ε_0 > 0).
        for k in range(n1):
            perm_out[k] = k
    if certified and not ran_cde and eps_upper == 0.0 and _certificate_holds(
            v_out, vf, pick_out, n1, integral, cmax):
        return STATUS_CERTIFIED, eps_upper, eps_lower
    return STATUS_OK, eps_upper, eps_lower


def estimate(src, bufs, n1, n2, v_out, perm_out, integral, pick_out, sync=None):
    """Stages A–E on ``len(bufs)`` threads (``bufs``: one scratch row per thread; one buffer runs
    everything on the calling thread). Stages A–B and C–E each give every thread a slice of the
    columns, with one barrier per row; the result does not depend on the number of threads.
    Returns (status, eps_upper, eps_lower); fills v_out, perm_out and pick_out.

    For float costs the caller runs the speculative sweep of ``_certify`` first: when it proves
    the exact pass trivial, the solve is done after one sweep over the matrix (sanity class);
    otherwise stages A–E run as always (their results do not depend on it).

    ``perm_out`` is the row order of the passes: stage C's regret order when ε_upper = 0 (the
    exact pass runs it back to front), else the identity.

    Status STATUS_CERTIFIED: as STATUS_OK, and ``pick_out`` is the optimal assignment that the
    exact pass would return with this v and perm (module docstring). ``sync``: the barrier
    state (``_sync.new_sync``) through which the caller may stop the run
    (``_sync.request_abort``: every stage ends at its next row; STATUS_INTERRUPTED).
    """
    vf = np.empty(n2)
    regret = np.empty(n1)
    nthreads = len(bufs)
    sync = new_sync() if sync is None else sync
    reset_sync(sync)
    slots = np.zeros(2 * nthreads * _EST_SLOT, np.int64)
    out = np.zeros(6)
    run_workers(_ab_worker,
                lambda t: (np.int64(t), np.int64(nthreads), src, bufs[t], n1, n2, vf, regret,
                           pick_out, sync, slots, out),
                nthreads, sync)
    if aborted(sync):
        return STATUS_INTERRUPTED, 0.0, 0.0
    status, gap_i, gap, g0, cmax, certified = _ab_result(out, perm_out)
    if status != STATUS_OK:
        return status, 0.0, 0.0
    ran_cde = gap_i < 4.0 * gap
    if ran_cde:
        v_old = vf.copy()
        _regret_order(regret, perm_out)
        reset_sync(sync)
        slots = np.zeros(2 * nthreads * _EST_SLOT, np.int64)
        bounds = np.zeros(4)
        cde_pick = np.empty(n1, np.int64)
        run_workers(_cde_worker,
                    lambda t: (np.int64(t), np.int64(nthreads), src, bufs[t], n1, n2, perm_out,
                               vf, cde_pick, sync, slots, bounds),
                    nthreads, sync)
        if aborted(sync):
            return STATUS_INTERRUPTED, 0.0, 0.0
        gap = _blend(vf, v_old, bounds, g0)
    return _finish(vf, v_out, perm_out, pick_out, n1, n2, integral, gap_i, gap, cmax, certified,
                   ran_cde)


@njit(cache=True, nogil=True)
def _certificate_holds(v_out, vf, pick, n1, integral, cmax):
    """The remaining conditions of the certificate: v_out is the v that stage B used (exactly, also
    for integral costs), and every column left unpicked holds the largest v (so virtual rows take
    them in one-edge paths without changing v)."""
    n2 = v_out.shape[0]
    if integral:
        if not cmax < _EXACT_INT:
            return False
        for j in range(n2):
            if np.float64(v_out[j]) != vf[j]:
                return False
    if n1 == n2:
        return True
    vmax = v_out[0]
    for j in range(n2):
        vmax = max(vmax, v_out[j])
    picked = np.zeros(n2, np.bool_)
    for i in range(n1):
        picked[pick[i]] = True
    for j in range(n2):
        if not picked[j] and v_out[j] != vmax:
            return False
    return True


@njit(cache=True, nogil=True)
def _assigned_costs(src, buf, row_to_col, out, sync):
    """out[i] = c[i][row_to_col[i]] (one more read of each row, for on-demand sources); stops
    early on a stop request (``sync``)."""
    for i in range(row_to_col.shape[0]):
        if aborted(sync):
            return
        row = get_row(src, i, buf)
        out[i] = row[row_to_col[i]]
