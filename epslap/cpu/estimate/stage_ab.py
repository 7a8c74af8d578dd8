"""Stages A and B of the estimate (docs/algorithm.md §2), one worker per slice of the columns.

Stage A (forward sweep over the rows) validates the matrix, picks greedily on c and sets v from
each column's two smallest row-reduced costs; stage B (reverse sweep on c - v) picks greedily
again and records each row's regret, the order of stage C.
"""
import math

import numpy as np
from numba import njit

from costfns.rows import get_row

from ..._status import STATUS_INFEASIBLE, STATUS_INVALID, STATUS_OK
from ..._sync import arrive, await_or_stop, barrier
from ..arrays import float_bits
from ..passes import BLOCK, KEY_MAX, KEY_MIN, col_range_jit
from .keys import (KEY_NEG_INF, KEY_POS_INF, first_in_row, from_key, greedy_pick, key, load_keys,
                   load_reduced_keys, min_key_except, rows_are_views, slice_workspace,
                   update_two_smallest, update_two_smallest4, v_before_shift)
from .slots import (STAGE_SLOT, first_smallest, flagged_float, own_slot, shift_slices_to_max_zero,
                    slots_min)


@njit(cache=True, nogil=True)
def _read_keys_a(row, taken, bkey, bmask):
    """Stage A's read of a row slice (``load_keys``) and its candidate: returns (min key, max
    key, min masked key mm, the first column holding mm or -1). (A slice whose columns are all
    picked has none; another slice has one: n1 <= n2.)"""
    mk, xk, mm = load_keys(row, taken, bkey, bmask)
    return mk, xk, mm, first_in_row(row, taken, bmask, mm) if mm < KEY_MAX else -1


@njit(cache=True, nogil=True)
def _remask_block(row, taken, bmask, b, scratch_key, scratch_mask):
    """Recompute bmask[b] (``load_keys`` on block b alone; ``scratch_*``: int64[1]) after a
    column of block b was taken; returns the new minimum over all blocks."""
    lo = b * BLOCK
    hi = min(lo + BLOCK, row.shape[0])
    _, _, bmask[b] = load_keys(row[lo:hi], taken[lo:hi], scratch_key, scratch_mask)
    mm = KEY_MAX
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
        slots[off] = KEY_MAX
        slots[off + 1] = KEY_MIN
        slots[off + 2] = KEY_MAX
        slots[off + 3] = -1
        slots[off + 5] = 0
        return
    slots[off] = mk
    slots[off + 1] = xk
    slots[off + 2] = mm
    slots[off + 3] = lo + p if p >= 0 else -1
    if p >= 0:
        slots[off + 6] = float_bits(np.float64(row[lo + p]))
    mine = lo <= i < hi
    slots[off + 5] = 1 if mine else 0
    if mine:
        slots[off + 4] = float_bits(np.float64(row[i]))


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
    pmask = np.full(m, KEY_MIN)      # KEY_MIN: not picked yet, KEY_MAX: picked
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
    ahead = rows_are_views(src)
    pend = np.empty(4, np.int64)
    prmin = np.empty(4)
    n_pend = 0
    if n1 == 0:
        return STATUS_OK, lb_a, ub_id, g_a, cmax, gen, True
    row = get_row(src, 0, buf)
    mk, xk, mm, cand = _read_keys_a(row[lo:hi], pmask, bkey, bmask)
    _publish_a(row, lo, hi, np.int64(0), cand, mk, xk, mm, slots,
               own_slot(gen, nthreads, tid))
    for i in range(n1):
        base = (gen & 1) * nthreads * STAGE_SLOT
        gen += 1
        arrive(sync, nthreads, gen)
        if ahead and i + 1 < n1:  # with the mask before row i's pick
            row_next = get_row(src, i + 1, buf)
            mk, xk, mm, cand = _read_keys_a(row_next[lo:hi], pmask, bkey, bmask)
        if not await_or_stop(sync, nthreads, gen):
            return STATUS_OK, 0.0, 0.0, 0.0, 0.0, gen, False
        rmk = slots_min(slots, base, nthreads, 0)
        rxk = KEY_MIN
        for t in range(nthreads):
            rxk = max(rxk, slots[base + t * STAGE_SLOT + 1])
        if rmk <= KEY_NEG_INF or rxk > KEY_POS_INF:
            return STATUS_INVALID, 0.0, 0.0, 0.0, 0.0, gen, True
        p = -1
        if rmk >= KEY_POS_INF:
            infeasible = True  # a row without a finite cost; keep validating the other rows
        else:
            rmin = from_key(rmk, scratch)
            rmax = from_key(rxk, scratch)
            cmax = max(cmax, abs(rmin), abs(rmax) if math.isfinite(rmax) else 0.0)
            w = first_smallest(slots, base, nthreads, np.int64(2), np.int64(3))  # first unpicked
            p = slots[w + 3]
            if lo <= p < hi:
                pmask[p - lo] = KEY_MAX
            lb_a += rmin
            ub_id += flagged_float(slots, base, nthreads, np.int64(5), np.int64(4))  # c[i][i]
            g_a += slots.view(np.float64)[w + 6]
            if ahead:  # dense matrix: update the column statistics four rows at a time
                pend[n_pend] = i
                prmin[n_pend] = rmin
                n_pend += 1
                if n_pend == 4:
                    update_two_smallest4(get_row(src, pend[0], buf)[lo:hi],
                                         get_row(src, pend[1], buf)[lo:hi],
                                         get_row(src, pend[2], buf)[lo:hi],
                                         get_row(src, pend[3], buf)[lo:hi],
                                         prmin[0], prmin[1], prmin[2], prmin[3], best1, best2)
                    n_pend = 0
            else:
                update_two_smallest(row[lo:hi], rmin, best1, best2)
        if i + 1 < n1:
            if ahead:
                row = row_next
                if lo <= p < hi and p - lo == cand:  # row i took this slice's candidate
                    mm = _remask_block(row[lo:hi], pmask, bmask, cand // BLOCK, block_key,
                                       block_mask)
                    cand = first_in_row(row[lo:hi], pmask, bmask, mm) if mm < KEY_MAX else -1
            else:
                row = get_row(src, i + 1, buf)
                mk, xk, mm, cand = _read_keys_a(row[lo:hi], pmask, bkey, bmask)
            _publish_a(row, lo, hi, i + 1, cand, mk, xk, mm, slots,
                       own_slot(gen, nthreads, tid))
    for k in range(n_pend):
        update_two_smallest(get_row(src, pend[k], buf)[lo:hi], prmin[k], best1, best2)
    if infeasible:
        return STATUS_INFEASIBLE, 0.0, 0.0, 0.0, 0.0, gen, True
    v_before_shift(best1, best2, vf[lo:hi])
    gen, ok = shift_slices_to_max_zero(tid, nthreads, vf[lo:hi], sync, slots, gen)
    return STATUS_OK, lb_a, ub_id, g_a, cmax, gen, ok


@njit(cache=True, nogil=True)
def _publish_b(tk, bkey, mk, pmask, bmask, row, lo, slots, off):
    """Row step of stage B after the previous row's pick is known. Slot fields: min key, its
    first column, the min key over the slice's other columns, the min key over free columns, the
    first free column holding it, that column's cost as float64 bits."""
    if tk.shape[0] == 0:
        slots[off] = KEY_MAX
        slots[off + 1] = -1
        slots[off + 2] = KEY_MAX
        slots[off + 3] = KEY_MAX
        slots[off + 4] = -1
        return
    q, j0 = greedy_pick(tk, bkey, mk, pmask, bmask)
    slots[off] = mk
    slots[off + 1] = lo + j0
    slots[off + 2] = min_key_except(tk, bkey, j0)
    kq = key(tk[q])
    kq = kq if kq > pmask[q] else pmask[q]  # KEY_MAX: every column here is picked
    slots[off + 3] = kq
    slots[off + 4] = lo + q if kq < KEY_MAX else -1
    slots[off + 5] = float_bits(np.float64(row[lo + q]))


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
    tmp, tk, bkey, pmask, bmask, scratch = slice_workspace(lo, hi)
    vl = vf[lo:hi]
    lb_b = 0.0
    ub_b = 0.0
    certified = True
    if n1 == 0:
        return lb_b, ub_b, certified, gen, True
    row = get_row(src, n1 - 1, buf)
    mk = load_reduced_keys(row[lo:hi], vl, tmp, bkey)
    _publish_b(tk, bkey, mk, pmask, bmask, row, lo, slots,
               own_slot(gen, nthreads, tid))
    for i in range(n1 - 1, -1, -1):
        base = (gen & 1) * nthreads * STAGE_SLOT
        gen += 1
        arrive(sync, nthreads, gen)
        if i > 0:  # row i's own part was published: tmp and bkey are free
            row = get_row(src, i - 1, buf)
            mk_next = load_reduced_keys(row[lo:hi], vl, tmp, bkey)
        if not await_or_stop(sync, nthreads, gen):
            return 0.0, 0.0, False, gen, False
        mk = slots_min(slots, base, nthreads, 0)
        s2 = KEY_MAX
        seen_j0 = False
        for t in range(nthreads):  # slices in column order
            o = base + t * STAGE_SLOT
            if slots[o + 1] < 0:
                continue
            if not seen_j0 and slots[o] == mk:  # the slice holding j0: its other columns
                seen_j0 = True
                s2 = min(s2, slots[o + 2])
            else:
                s2 = min(s2, slots[o])
        best = first_smallest(slots, base, nthreads, np.int64(3), np.int64(4))
        q = slots[best + 4]
        mval = from_key(mk, scratch)
        certified = certified and slots[best + 3] == mk  # the pick is at the row minimum
        s_val = np.inf if s2 == KEY_MAX else from_key(s2, scratch)
        if lo <= q < hi:
            pmask[q - lo] = KEY_MAX
        if tid == 0:
            pick[i] = q
            regret[i] = s_val - mval
        lb_b += mval + vf[q]
        ub_b += slots.view(np.float64)[best + 5]
        if i > 0:
            _publish_b(tk, bkey, mk_next, pmask, bmask, row, lo, slots,
                       own_slot(gen, nthreads, tid))
    gen += 1  # thread 0 wrote the last pick after the last barrier: publish it
    return lb_b, ub_b, certified, gen, barrier(sync, nthreads, gen)


@njit(cache=True, nogil=True)
def ab_worker(tid, nthreads, src, buf, n1, n2, vf, regret, pick, sync, slots, out):
    """Stages A and B for thread ``tid`` of ``nthreads`` (its slice of the columns). Thread 0
    writes out = [status, gap_i, gap, g0, cmax, certified] (see ``ab_result``). Returns False
    if aborted."""
    lo, hi = col_range_jit(n2, nthreads, tid)
    # np.int64(...), not literals, for the helpers' integer arguments here and in the stages: a
    # literal compiles a specialisation of its own per value (a second shift_slices_to_max_zero,
    # _publish_a, flagged_float and two more first_smallest: about 4 s of a first use)
    status, lb_a, ub_id, g_a, cmax, gen, ok = _stage_a_cols(tid, nthreads, src, buf, n1, lo, hi,
                                                            vf, sync, slots, np.int64(0))
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
def ab_result(out, perm_out):
    """(status, gap_i, gap, g0, cmax, certified) from ``ab_worker``'s out; perm_out = identity."""
    for k in range(perm_out.shape[0]):
        perm_out[k] = k
    return np.int64(out[0]), out[1], out[2], out[3], out[4], out[5] != 0.0
