"""Stages C, D and E of the estimate (docs/algorithm.md §2), one worker per slice of the columns.

Run only when the gap test asks for them: C and E are greedy sweeps on c - v in regret order,
D walks that order backwards and lowers the prices of columns held by earlier rows.
"""
import math

import numpy as np
from numba import njit

from costfns.rows import get_row

from ..._sync import arrive, await_or_stop, barrier
from ..arrays import float_bits
from ..passes import KEY_MAX, col_range_jit
from .keys import from_key, greedy_pick, key, load_reduced_keys, slice_workspace
from .slots import (STAGE_SLOT, first_smallest, flagged_float, own_slot, shift_slices_to_max_zero,
                    slots_min)


@njit(cache=True, nogil=True)
def _publish_greedy(tk, bkey, mk, taken, bmask, row, lo, slots, off):
    """Row step of stages C/E after the previous row's pick is known: this slice's greedy pick
    (slot fields: min key, masked key of the pick, the pick, the pick's cost as float64 bits)."""
    if tk.shape[0] == 0:
        slots[off] = KEY_MAX
        slots[off + 1] = KEY_MAX
        slots[off + 2] = -1
        return
    q, _ = greedy_pick(tk, bkey, mk, taken, bmask)
    kq = key(tk[q])
    slots[off] = mk
    slots[off + 1] = kq if kq > taken[q] else taken[q]
    slots[off + 2] = lo + q
    slots[off + 3] = float_bits(np.float64(row[lo + q]))


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
    tmp, tk, bkey, taken, bmask, scratch = slice_workspace(lo, hi)
    vl = vf[lo:hi]
    ub = 0.0
    lb = 0.0
    if n1 == 0:
        return ub, lb, gen, True
    row = get_row(src, perm[0], buf)
    mk = load_reduced_keys(row[lo:hi], vl, tmp, bkey)
    _publish_greedy(tk, bkey, mk, taken, bmask, row, lo, slots,
                    own_slot(gen, nthreads, tid))
    for k in range(n1):
        base = (gen & 1) * nthreads * STAGE_SLOT
        gen += 1
        arrive(sync, nthreads, gen)
        if k + 1 < n1:  # row k's own part was published: tmp and bkey are free
            row = get_row(src, perm[k + 1], buf)
            mk_next = load_reduced_keys(row[lo:hi], vl, tmp, bkey)
        if not await_or_stop(sync, nthreads, gen):
            return ub, lb, gen, False
        mk = slots_min(slots, base, nthreads, 0)
        w = first_smallest(slots, base, nthreads, np.int64(1), np.int64(2))
        q = slots[w + 2]
        if lo <= q < hi:
            taken[q - lo] = KEY_MAX
        if tid == 0:
            pick_out[perm[k]] = q
        ub += slots.view(np.float64)[w + 3]
        lb += from_key(mk, scratch) + vf[q]
        if k + 1 < n1:
            _publish_greedy(tk, bkey, mk_next, taken, bmask, row, lo, slots,
                            own_slot(gen, nthreads, tid))
    gen += 1  # thread 0 wrote the last pick after the last barrier: publish it
    return ub, lb, gen, barrier(sync, nthreads, gen)


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
        return shift_slices_to_max_zero(tid, nthreads, vl, sync, slots, gen)
    cl = np.empty((2, m))
    _copy_slice(get_row(src, perm[n1 - 1], buf), lo, cl[(n1 - 1) & 1])
    for k in range(n1 - 1, -1, -1):
        cur = cl[k & 1]
        q = pick[perm[k]]
        base = (gen & 1) * nthreads * STAGE_SLOT
        off = own_slot(gen, nthreads, tid)
        if lo <= q < hi:  # v[q] is final: the previous row's update of this slice is done
            slots.view(np.float64)[off] = cur[q - lo] - vl[q - lo]
            slots[off + 1] = 1
            held[q - lo] = False
        else:
            slots[off + 1] = 0
        gen += 1
        arrive(sync, nthreads, gen)
        if k > 0:
            _copy_slice(get_row(src, perm[k - 1], buf), lo, cl[(k - 1) & 1])
        if not await_or_stop(sync, nthreads, gen):
            return gen, False
        ref = flagged_float(slots, base, nthreads, np.int64(1), np.int64(0))
        if math.isfinite(ref):
            for j in range(m):  # branch-free: vectorises
                c = cur[j]
                lower = held[j] & ((c - vl[j]) < ref)
                vl[j] = (c - ref) if lower else vl[j]
    return shift_slices_to_max_zero(tid, nthreads, vl, sync, slots, gen)


@njit(cache=True, nogil=True)
def _copy_slice(row, lo, out):
    """out[j] = float64(row[lo + j])."""
    for j in range(out.shape[0]):
        out[j] = np.float64(row[lo + j])


@njit(cache=True, nogil=True)
def cde_worker(tid, nthreads, src, buf, n1, n2, perm, vf, pick, sync, slots, bounds):
    """Stages C, D and E for thread ``tid`` of ``nthreads`` (its slice of the columns).
    Thread 0 writes pick and bounds = [UB_C, LB_C, UB_E, LB_E]. Returns False if aborted."""
    lo, hi = col_range_jit(n2, nthreads, tid)
    # np.int64(0), not the literal 0: a literal argument compiles a second specialisation of
    # _greedy_cols for every cost source type (measured: 1-1.7 s each)
    ub_c, lb_c, gen, ok = _greedy_cols(tid, nthreads, src, buf, n1, lo, hi, perm, vf, pick,
                                       sync, slots, np.int64(0))
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
def regret_order(regret, perm_out):
    """Stage C's row order: descending regret, ties: larger index first."""
    n1 = regret.shape[0]
    order = np.argsort(regret, kind="mergesort")  # ascending, ties by index ascending
    for k in range(n1):
        perm_out[k] = order[n1 - 1 - k]


@njit(cache=True, nogil=True)
def blend(vf, v_old, rho):
    """v = rho * v_B + (1 - rho) * v (``v_old``: stage B's v; the weight from the driver)."""
    for j in range(vf.shape[0]):
        vf[j] = rho * v_old[j] + (1.0 - rho) * vf[j]
