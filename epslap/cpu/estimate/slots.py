"""Cross-thread merge of the estimate's row steps.

Every row step of every stage is a reduction over the columns (row minima, the greedy pick,
stage D's reference cost) followed by column-local updates, so T threads each take a slice
[lo, hi) of the columns and meet once per row (one barrier, slots double-buffered by parity),
as the pass kernel does. With T = 1 this is the sequential estimate. Slot t holds the slice's
part of the row's reduction (each stage lists its fields); a slot is 128 bytes, as the pass
kernel's, so that no two threads write the same cache line.
"""
import math

import numpy as np
from numba import njit

from ..._sync import barrier
from ..passes import KEY_MAX

STAGE_SLOT = 16


@njit(cache=True, nogil=True, inline="always")
def own_slot(gen, nthreads, tid):
    """Offset of thread ``tid``'s slot for the row that its ``gen + 1``-th barrier ends (slots
    are double-buffered by the barrier's parity)."""
    return (gen & 1) * nthreads * STAGE_SLOT + tid * STAGE_SLOT


@njit(cache=True, nogil=True)
def slots_min(slots, base, nthreads, f):
    """The smallest field ``f`` over the threads' slots of one row."""
    m = KEY_MAX
    for t in range(nthreads):
        m = min(m, slots[base + t * STAGE_SLOT + f])
    return m


@njit(cache=True, nogil=True)
def flagged_float(slots, base, nthreads, flag_f, value_f):
    """Field ``value_f`` (float64 bits) of the one slot of a row whose field ``flag_f`` is
    nonzero: the value that only the thread holding a given column could publish."""
    x = 0.0
    for t in range(nthreads):
        if slots[base + t * STAGE_SLOT + flag_f] != 0:
            x = slots.view(np.float64)[base + t * STAGE_SLOT + value_f]
    return x


@njit(cache=True, nogil=True)
def first_smallest(slots, base, nthreads, key_f, col_f):
    """Offset of the slot with the smallest key (field ``key_f``) among those that hold a column
    (field ``col_f`` >= 0), the first such in thread order: slices are in column order, so its
    column is the lowest-index holder of the smallest key. -1 if no slot holds a column."""
    best = -1
    for t in range(nthreads):
        o = base + t * STAGE_SLOT
        if slots[o + col_f] >= 0 and (best < 0 or slots[o + key_f] < slots[best + key_f]):
            best = o
    return best


@njit(cache=True, nogil=True)
def shift_slices_to_max_zero(tid, nthreads, vl, sync, slots, gen):
    """``_shift_to_max_zero`` over the threads' slices ``vl`` of v: every slice's max, one
    barrier, then each thread subtracts the overall one (and a barrier: v is final for all).
    Returns (gen, ok)."""
    base = (gen & 1) * nthreads * STAGE_SLOT
    mx = -np.inf
    for j in range(vl.shape[0]):
        if vl[j] > mx:
            mx = vl[j]
    slots.view(np.float64)[base + tid * STAGE_SLOT] = mx
    gen += 1
    if not barrier(sync, nthreads, gen):
        return gen, False
    mx = -np.inf
    for t in range(nthreads):
        x = slots.view(np.float64)[base + t * STAGE_SLOT]
        if x > mx:
            mx = x
    if math.isfinite(mx):
        for j in range(vl.shape[0]):
            vl[j] -= mx
    gen += 1
    return gen, barrier(sync, nthreads, gen)
