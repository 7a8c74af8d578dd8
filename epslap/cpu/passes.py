"""The ε-pricing successive-shortest-path loop on the CPU (docs/algorithm.md §1, §3, §4).

Guthe & Thuerck, "Algorithm 1015: A Fast Scalable Solver for the Dense Linear (Sum) Assignment
Problem", ACM TOMS 47(2), 2021, doi:10.1145/3442348, Algorithms 1–3.

Written once; Numba specialises it per cost source type (``get_row_part``) and per work dtype
(float64 or int64, the dtype of ``v``). Compiled code never raises: it returns a status.

Serial and parallel are one body: ``pass_worker(tid, T, ...)`` runs the whole pass loop over the
column slice ``[lo, hi)`` of thread ``tid``; T host threads call it concurrently (it releases the
GIL) and the serial solver is T = 1 (its barriers are no-ops). Per Dijkstra step every thread
relaxes and scans its own columns, writes its candidate (value, free?, column, and what the others
need of it: owner, pred, d, the owner's cost c[owner][col], v[col]) into its own slot, passes one
barrier, and then reduces all slots itself with the serial tie rule — every thread reaches the same
decision, so the path (``cpred``, ``row_col``), the ε statistics and the stop decision are
replicated state that needs no further synchronisation. The price update and the path flip touch
only the thread's own columns; the next augmentation starts with a local scan, so the one barrier
per step is all the synchronisation there is (plus one per ε-pass for max v). The slots alternate
by barrier parity, so a fast thread never overwrites a slot that a slow one still reads.

Shapes: rows ``0 … n1-1`` are real, rows ``n1 … n2-1`` virtual (cost 0, never read); ``v`` (n2,)
work dtype, each thread writes only ``v[lo:hi]``; ``row_to_col`` (n1,) int64 out; ``ctl`` (8,)
int64 shared with the host: ctl[0] stop request (host → kernel: ``_status.STOP_*``), ctl[1]
pass index, ctl[2] rows
augmented in the pass, ctl[3] rows evaluated so far; ``eps_log`` (MAX_PASSES,) float64 out;
``sync`` (_sync.SYNC_SIZE,) int64 barrier state; ``slots`` (2·T·SLOT,) int64 and ``slots_w``
the same memory viewed in the work dtype; ``result`` (3,) float64 out.
"""
from typing import NamedTuple

import numpy as np
from numba import njit

from costfns.rows import cost_at, get_row, get_row_part, random_access

from .._schedule import next_eps
from .._status import (STATUS_ABORTED, STATUS_INFEASIBLE, STATUS_INTERRUPTED, STATUS_OK,
                       STATUS_PAUSED, STOP_AFTER_AUGMENTATION, STOP_NOW)
from .._sync import SYNC_SIZE, aborted, barrier, load_acquire
from ..certificate import row_duals_hold
from .arrays import copy_into, flip_path, float_bits

MAX_PASSES = 64

# One result slot per thread and Dijkstra step, SLOT int64 wide (128 bytes: no two threads write
# one cache line), double-buffered by barrier parity: slots[(parity * T + tid) * SLOT + field].
SLOT = 16
_F_KEY, _F_FREE, _F_COL, _F_OWNER, _F_PRED, _F_STOP = 0, 1, 2, 3, 4, 5
_F_D, _F_C, _F_V = 8, 9, 10  # work-dtype fields, written through ``slots_w`` (same memory)


BLOCK = 256  # columns per block of the argmin: block minima narrow the index search
KEY_MAX = np.int64(0x7FFFFFFFFFFFFFFF)
KEY_MIN = np.int64(-0x7FFFFFFFFFFFFFFF - 1)
_CLOSED_BITS = np.int64(0x7FF8000000000000)  # a quiet NaN: the distance of a closed column
# Column mask (int64 so that every step below is a vectorisable integer max/min):
# free_mask[j] = KEY_MIN while column j is unassigned, KEY_MAX once assigned.


@njit(cache=True, nogil=True, inline="always")
def _sort_key(k, integral):
    """Order-preserving int64 key of a float's bits (identity for integers)."""
    if integral:
        return k
    return k ^ ((k >> 63) & KEY_MAX)


@njit(cache=True, nogil=True, inline="always")
def key_of(k, integral):
    """Sort key of a distance's int64 bits: order-preserving for floats (a closed column's quiet
    NaN maps above +inf), the integer itself otherwise (a closed column's KEY_MIN maps to
    KEY_MAX)."""
    if integral:
        return KEY_MAX if k == KEY_MIN else k
    return _sort_key(k, False)


@njit(cache=True, nogil=True, inline="always")
def _closed_key(integral):
    """The sort key of a closed column's distance: nothing open is at or above it."""
    return KEY_MAX if integral else _CLOSED_BITS


@njit(cache=True, nogil=True, inline="always")
def _scan_block(row, cij, v, vjmin, mn, zero, d, pred, pcost, i, track, first, free_mask,
                integral):
    """``_scan_row`` on one block; returns its (min key, min key over unassigned columns).

    For floats the keys are taken in the relaxation's own loop. For integers a second loop over
    the block (still in L1) is faster: without 64-bit integer min/max in AVX2 the fused loop
    does not vectorise as well. In that loop the masked key max(k, free_mask[j]) is a select on
    the mask's sign and the minima use ``min``: so written, the int64 loop vectorises (3× faster
    than the compare-and-select form). The float loop keeps compare-and-select: with ``min``
    it no longer vectorised inside the solve (2.7× slower, measured).
    """
    m = KEY_MAX
    mf = KEY_MAX
    for j in range(d.shape[0]):
        if first:
            nd = (row[j] - v[j]) + zero
            pred[j] = i
            if track:
                pcost[j] = row[j] + zero
        else:
            cand = ((row[j] - cij) - (v[j] - vjmin)) + mn + zero
            dj = d[j]
            upd = cand < dj
            nd = cand if upd else dj
            pred[j] = i if upd else pred[j]
            if track:
                pcost[j] = (row[j] + zero) if upd else pcost[j]
        d[j] = nd
        if not integral:
            k = _sort_key(float_bits(nd), False)
            m = k if k < m else m
            fm = free_mask[j]
            kf = k if k > fm else fm
            mf = kf if kf < mf else mf
    if integral:
        dk = d.view(np.int64)  # d itself for integers; typed int64 in the float build too
        for j in range(d.shape[0]):
            k = key_of(dk[j], True)
            m = min(m, k)
            mf = min(mf, k if free_mask[j] < 0 else KEY_MAX)
    return m, mf


@njit(cache=True, nogil=True, inline="always")
def _scan_row(row, cij, v, vjmin, mn, zero, d, pred, pcost, i, track, first, free_mask,
              block_min, block_free, integral):
    """Relax every column of this thread through row ``i`` and, in the same pass, keep each
    block's minimum key (``block_min``) and minimum key over unassigned columns (``block_free``)
    for :func:`argmin_open` (branch-free: it vectorises).

    ``first`` (the augmentation's first row): d = c[i] - v. Otherwise d[j] = min(d[j], reduced
    cost through row i) in the difference form ((c[i][j] - c[i][jmin]) - (v[j] - v[jmin])) + mn.
    A closed column's d is a sentinel no candidate is below (a quiet NaN; KEY_MIN for
    integers), so the update reads no open flag. ``+ zero`` turns -0.0 into +0.0 so that equal
    values have equal sort keys. With ``track`` (sources without random access) the cost of the
    improving edge is kept in ``pcost``. Fusing the block minima into the scan saves a second
    sweep over d per Dijkstra step. Each block is a slice, so that the compiler sees indices
    from 0 (with ``range(lo, hi)`` it does not vectorise).
    """
    n = d.shape[0]
    for b in range(block_min.shape[0]):
        lo = b * BLOCK
        hi = min(lo + BLOCK, n)
        block_min[b], block_free[b] = _scan_block(
            row[lo:hi], cij, v[lo:hi], vjmin, mn, zero, d[lo:hi], pred[lo:hi], pcost[lo:hi], i,
            track, first, free_mask[lo:hi], integral)


@njit(cache=True, nogil=True, inline="always")
def argmin_open(dkey, free_mask, block_min, block_free, integral):
    """The tie rule over open columns: smallest d; among equals an unassigned column; then the
    lowest index. Returns the column, or -1 when no column is open.

    Floats are compared through an order-preserving int64 key of their bits (``dkey`` is ``d``
    viewed as int64). The block minima come from the scan that wrote ``d`` (``_scan_row``), so
    the index is searched only inside the first block that holds the minimum. Closed columns
    need no flag: their sentinel's key is above every open column's.
    """
    n = dkey.shape[0]
    best = KEY_MAX
    best_free = KEY_MAX
    for b in range(block_min.shape[0]):
        m = block_min[b]
        mf = block_free[b]
        best = m if m < best else best
        best_free = mf if mf < best_free else best_free
    if best >= _closed_key(integral):
        return -1
    want_free = best_free == best
    for b in range(block_min.shape[0]):
        if (block_free[b] if want_free else block_min[b]) != best:
            continue
        lo = b * BLOCK
        hi = min(lo + BLOCK, n)
        for j in range(lo, hi):
            if want_free and free_mask[j] > 0:
                continue
            if key_of(dkey[j], integral) == best:
                return j
    return -1


def col_range(n2, nthreads, tid):
    """Columns [lo, hi) of thread ``tid``: equal shares; inner bounds on 8-column lines."""
    lo = 0 if tid == 0 else ((n2 * tid) // nthreads) & ~7
    hi = n2 if tid == nthreads - 1 else ((n2 * (tid + 1)) // nthreads) & ~7
    return lo, max(lo, hi)


col_range_jit = njit(cache=True, nogil=True, inline="always")(col_range)


@njit(cache=True, nogil=True, inline="always")
def _publish(slots, slots_w, off, lo, jl, d, dkey, free_mask, owner, pred, acost, vl, integral):
    """Write this thread's candidate column ``jl`` (local index, -1: none) into its slot."""
    if jl < 0:
        slots[off + _F_KEY] = KEY_MAX
        slots[off + _F_COL] = -1
        return
    slots[off + _F_KEY] = _sort_key(dkey[jl], integral)
    slots[off + _F_FREE] = 1 if free_mask[jl] < 0 else 0
    slots[off + _F_COL] = lo + jl
    slots[off + _F_OWNER] = owner[jl]
    slots[off + _F_PRED] = pred[jl]
    slots_w[off + _F_D] = d[jl]
    slots_w[off + _F_C] = acost[jl]
    slots_w[off + _F_V] = vl[jl]


@njit(cache=True, nogil=True, inline="always")
def _winner(slots, base, nthreads):
    """Offset of the winning slot under the serial tie rule, -1 if no thread has an open column.

    Smallest value; among equal values an unassigned column; then the lowest index (thread
    slices are ordered by column, so the first such thread).
    """
    best = -1
    bkey = KEY_MAX
    bfree = False
    for t in range(nthreads):
        off = base + t * SLOT
        if slots[off + _F_COL] < 0:
            continue
        k = slots[off + _F_KEY]
        fr = slots[off + _F_FREE] != 0
        if best < 0 or k < bkey or (k == bkey and fr and not bfree):
            best = off
            bkey = k
            bfree = fr
    return best


class Columns(NamedTuple):
    """A thread's state over its own columns ``[lo, lo + m)``: (m,) arrays unless noted."""
    buf: np.ndarray         # (n2,) scratch row for computed sources
    zero_row: np.ndarray    # the row of a virtual row: cost 0
    d: np.ndarray           # distances (a closed column's is a sentinel, see ``_scan_row``)
    dkey: np.ndarray        # d viewed as int64
    pred: np.ndarray        # the row through which d was last lowered
    pcost: np.ndarray       # cost of that edge (kept only for sources without random access)
    acost: np.ndarray       # cost of the owner's edge
    free_mask: np.ndarray   # KEY_MIN while the column is unassigned, KEY_MAX once assigned
    owner: np.ndarray       # the row assigned to the column, -1: none
    closed_loc: np.ndarray  # this thread's columns closed in the current augmentation ...
    closed_dl: np.ndarray   # ... and their d
    block_min: np.ndarray   # per BLOCK columns: the minimum key of d
    block_free: np.ndarray  # per BLOCK columns: the minimum key over unassigned columns


@njit(cache=True, nogil=True)
def new_columns(buf, v, m):
    """A thread's :class:`Columns` over ``m`` columns: distances and prices in ``v``'s dtype,
    ``buf`` (its scratch row) and the virtual rows' zero row in the cost dtype."""
    d = np.empty(m, v.dtype)
    n_blocks = (m + BLOCK - 1) // BLOCK
    return Columns(buf, np.zeros(m, buf.dtype), d, d.view(np.int64), np.empty(m, np.int64),
                   np.empty(m, v.dtype), np.zeros(m, v.dtype), np.empty(m, np.int64),
                   np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, v.dtype),
                   np.empty(n_blocks, np.int64), np.empty(n_blocks, np.int64))


class Path(NamedTuple):
    """State every thread keeps a replica of (the same decisions in every thread)."""
    row_col: np.ndarray     # (n2,) the column of every row, virtual rows included
    cpred: np.ndarray       # (n2,) pred of each closed column
    closed_d: np.ndarray    # (n2,) d of the k-th closed column
    acc: np.ndarray         # (3,) [rows evaluated, Σ(mn - d_j), Σ ε] in the serial order
    gen: np.ndarray         # (1,) barriers passed


class Meeting(NamedTuple):
    """What the threads and the host share: the barrier, its slots and the control words."""
    sync: np.ndarray        # (_sync.SYNC_SIZE,) barrier state
    slots: np.ndarray       # (2·T·SLOT,) int64
    slots_w: np.ndarray     # the same memory in the work dtype
    ctl: np.ndarray         # (8,) int64, see the module docstring


class PassIO(NamedTuple):
    """A solve's arrays in and out of the pass loop (module docstring)."""
    v: np.ndarray
    perm: np.ndarray
    row_to_col: np.ndarray
    eps_log: np.ndarray
    result: np.ndarray
    #: (RESUME_SIZE,) float64, in and out: the point in the pass loop to start from (written by
    #: thread 0 when a stop request ends the loop; read when ``resume[0]`` is 1), see ``_R_*``
    resume: np.ndarray
    #: (n2,) int64, in and out with ``resume``: the pass's assignment so far (virtual rows too)
    resume_row_col: np.ndarray
    #: rows each pass augments: -1 every row, the virtual ones after the real ones; n1 only the
    #: real rows (a rectangular problem solved from v = 0, docs/algorithm.md §10)
    rows_per_pass: int = -1


# The point a stopped pass loop goes on from (``PassIO.resume``): everything the loop holds
# between two augmentations that is not in v, the pass's assignment (``resume_row_col``) or the
# thread's own column state (rebuilt from the assignment, see ``_restore_columns``).
RESUME_SIZE = 8
R_ACTIVE, R_K, R_PASS, R_EPS, _R_SUM_D, _R_SUM_EPS, R_ROWS, R_REVERSE = range(8)


def fresh_io(v, perm, row_to_col, eps_log, result, rows_per_pass=-1) -> PassIO:
    """A :class:`PassIO` that starts the pass loop from its beginning (no resume state)."""
    return PassIO(v, perm, row_to_col, eps_log, result, np.zeros(RESUME_SIZE),
                  np.full(v.shape[0], -1, np.int64), rows_per_pass)


@njit(cache=True, nogil=True)
def _restore_columns(src, n1, lo, row_col, cols, zero):
    """This thread's column state for the assignment ``row_col`` of a pass under way: owner,
    assigned flag and the owner's cost of each of its assigned columns. The cost is read with
    ``cost_at`` where the source has random access, else from the owner's row slice (one
    partial row per assigned row of this slice; not counted as rows evaluated)."""
    buf, owner, free_mask, acost = cols.buf, cols.owner, cols.free_mask, cols.acost
    m = owner.shape[0]
    hi = lo + m
    for i in range(row_col.shape[0]):
        j = row_col[i]
        if lo <= j < hi:
            jj = j - lo
            owner[jj] = i
            free_mask[jj] = KEY_MAX
            if i >= n1:
                acost[jj] = zero
            elif random_access(src):
                acost[jj] = cost_at(src, i, j)
            else:
                acost[jj] = get_row_part(src, i, lo, hi, buf)[jj]


@njit(cache=True, nogil=True)
def _augment(tid, nthreads, src, f, n1, lo, vl, eps, inf_val, integral, cols, path, meet):
    """Augment row ``f`` along a shortest path (Dijkstra on a dense graph, no heap), this thread's
    columns ``[lo, lo + m)`` (docs/algorithm.md §4, paper Algorithm 2): ``cols``
    (:class:`Columns`) its own columns, ``path`` (:class:`Path`) the replicated state, ``meet``
    (:class:`Meeting`) the barrier. Reduced costs use the difference form
    (c[i][j] - c[i][jmin]) - (v[j] - v[jmin]) + mn.
    """
    buf, zero_row, d, dkey, pred, pcost, acost = (cols.buf, cols.zero_row, cols.d, cols.dkey,
                                                  cols.pred, cols.pcost, cols.acost)
    free_mask, owner, closed_loc, closed_dl = (cols.free_mask, cols.owner, cols.closed_loc,
                                               cols.closed_dl)
    block_min, block_free = cols.block_min, cols.block_free
    row_col, cpred, closed_d, acc, gen = path
    sync, slots, slots_w, ctl = meet
    track = not random_access(src)
    zero = eps - eps  # eps is finite (0 in the exact pass)
    m = d.shape[0]
    hi = lo + m
    # a virtual row (f or an owner >= n1) costs 0 everywhere: it reads ``zero_row``, no cost row
    if f < n1:
        row = get_row_part(src, f, lo, hi, buf)
        acc[0] += 1.0
    else:
        row = zero_row
    _scan_row(row, zero, vl, zero, zero, zero, d, pred, pcost, f, track, True, free_mask,
              block_min, block_free, integral)
    n_loc = 0
    nc = 0
    mn = zero
    jmin = -1
    paused = False
    while True:
        jl = argmin_open(dkey, free_mask, block_min, block_free, integral)
        gen[0] += 1
        base = (gen[0] & 1) * nthreads * SLOT
        off = base + tid * SLOT
        _publish(slots, slots_w, off, lo, jl, d, dkey, free_mask, owner, pred, acost, vl,
                 integral)
        if tid == 0:  # a stop request ends the solve within one Dijkstra step
            slots[off + _F_STOP] = load_acquire(ctl, 0)
        if not barrier(sync, nthreads, gen[0]):
            return STATUS_ABORTED
        stop = slots[base + _F_STOP]
        if stop == STOP_NOW:  # Ctrl-C or a hand-over: before this row changes anything
            return STATUS_INTERRUPTED
        if stop == STOP_AFTER_AUGMENTATION:  # a checkpoint: once this row is augmented
            paused = True
        w = _winner(slots, base, nthreads)
        if w < 0:
            return STATUS_INFEASIBLE
        dmin = slots_w[w + _F_D]
        if not dmin < inf_val:
            return STATUS_INFEASIBLE
        jmin = slots[w + _F_COL]
        if nc == 0 or dmin > mn:
            mn = dmin
        closed_d[nc] = dmin
        cpred[jmin] = slots[w + _F_PRED]
        nc += 1
        if lo <= jmin < hi:
            dkey[jmin - lo] = KEY_MIN if integral else _CLOSED_BITS
            closed_loc[n_loc] = jmin - lo
            closed_dl[n_loc] = dmin
            n_loc += 1
        i = slots[w + _F_OWNER]
        if i < 0:
            break
        if i < n1:
            row = get_row_part(src, i, lo, hi, buf)
            acc[0] += 1.0
        else:
            row = zero_row
        _scan_row(row, slots_w[w + _F_C], vl, slots_w[w + _F_V], mn, zero, d, pred, pcost, i,
                  track, False, free_mask, block_min, block_free, integral)
    # price update of this thread's closed columns (ε-scaled)
    for k in range(n_loc):
        vl[closed_loc[k]] -= (mn - closed_dl[k]) + eps
    # statistics for the ε schedule, summed in the serial closing order (identical in every thread)
    for k in range(nc):
        acc[1] += mn - closed_d[k]
    acc[2] += np.float64(eps) * nc
    # the alternating path back to f: this thread's columns on it take their new rows, then
    # every row on it its new column
    j = jmin
    while True:
        i = cpred[j]
        if lo <= j < hi:
            jj = j - lo
            owner[jj] = i
            free_mask[jj] = KEY_MAX
            if track:
                acost[jj] = pcost[jj]
            elif i < n1:
                acost[jj] = cost_at(src, i, j)
            else:
                acost[jj] = zero
        if i == f:
            break
        j = row_col[i]
    flip_path(cpred, row_col, f, jmin)
    return STATUS_PAUSED if paused else STATUS_OK


@njit(cache=True, nogil=True)
def pass_worker(tid, nthreads, src, buf, n1, n2, eps_upper, eps_lower, integral, inf_val, io,
                meet):
    """All passes, thread ``tid`` of ``nthreads``: ε-passes shape v, the final exact pass (ε = 0)
    gives the optimum (docs/algorithm.md §1). ``buf`` (n2,) is this thread's scratch row; ``io``
    a :class:`PassIO`, ``meet`` the :class:`Meeting` of all threads.

    Thread 0 writes ``row_to_col``, ``eps_log``, ``ctl[1:4]`` and ``result`` = [status, passes,
    rows evaluated]. Returns the status (the same in every thread).
    """
    v, perm, row_to_col, eps_log, result, resume, resume_row_col, rows_per_pass = io
    n_aug = n2 if rows_per_pass < 0 else rows_per_pass
    sync, slots, slots_w, ctl = meet
    lo, hi = col_range_jit(n2, nthreads, tid)
    m = hi - lo
    vl = v[lo:hi]
    cols = new_columns(buf, v, m)
    free_mask, owner = cols.free_mask, cols.owner
    row_col = np.empty(n2, np.int64)
    cpred = np.empty(n2, np.int64)
    closed_d = np.empty(n2, v.dtype)
    eps_cast = np.empty(1, v.dtype)
    zero_v = v[0] - v[0]
    acc = np.zeros(3)
    gen = np.zeros(1, np.int64)
    path = Path(row_col, cpred, closed_d, acc, gen)
    rows_evaluated = 0.0
    eps = eps_upper
    first = True
    second = False
    reverse = eps == 0.0
    n_pass = 0
    status = STATUS_OK
    resuming = resume[R_ACTIVE] == 1.0
    if resuming:  # go on inside the pass a stop request ended (same ε, same statistics)
        n_pass = np.int64(resume[R_PASS])
        eps = resume[R_EPS]
        rows_evaluated = resume[R_ROWS]
        reverse = resume[R_REVERSE] != 0.0
        first = n_pass == 0
        second = n_pass == 1
    while eps >= 0.0 or resuming:  # eps = -1 in the exact pass (the last), resumed too
        k0 = 0
        owner[:] = -1
        free_mask[:] = KEY_MIN
        if resuming:
            k0 = np.int64(resume[R_K])
            copy_into(row_col, resume_row_col, row_col.size)
            _restore_columns(src, n1, lo, row_col, cols, zero_v)
            acc[0] = 0.0
            acc[1] = resume[_R_SUM_D]
            acc[2] = resume[_R_SUM_EPS]
        else:
            eps = next_eps(eps, eps_lower, acc[1], acc[2], first, second, n2, integral)
            if eps == 0.0:
                eps = -1.0
            row_col[:] = -1
            acc[:] = 0.0
        if tid == 0:
            if n_pass < eps_log.shape[0]:
                eps_log[n_pass] = max(eps, 0.0)
            ctl[1] = n_pass
        eps_cast[0] = max(eps, 0.0)
        eps_w = eps_cast[0]
        for k in range(k0, n_aug):
            if k < n1:
                f = perm[n1 - 1 - k] if reverse else perm[k]
            else:
                f = k
            status = _augment(tid, nthreads, src, f, n1, lo, vl, eps_w, inf_val, integral, cols,
                              path, meet)
            if status == STATUS_PAUSED or status == STATUS_INTERRUPTED:
                if tid == 0:
                    # where to go on from: after row k when paused; before it when interrupted
                    # (v, the assignment and the statistics are as they were before it started)
                    copy_into(resume_row_col, row_col, row_col.size)
                    resume[R_ACTIVE] = 1.0
                    resume[R_K] = k + 1 if status == STATUS_PAUSED else k
                    resume[R_PASS] = n_pass
                    resume[R_EPS] = eps
                    resume[_R_SUM_D] = acc[1]
                    resume[_R_SUM_EPS] = acc[2]
                    resume[R_ROWS] = rows_evaluated + acc[0]
                    resume[R_REVERSE] = 1.0 if reverse else 0.0
                status = STATUS_INTERRUPTED
                break
            if status != STATUS_OK:
                break
            if tid == 0:
                ctl[2] = k + 1
                ctl[3] = np.int64(rows_evaluated + acc[0])
        resuming = False
        rows_evaluated += acc[0]
        n_pass += 1
        if status != STATUS_OK:
            break
        if eps > 0.0:  # v -= max(v): local maxima through the slots, one barrier
            gen[0] += 1
            off = ((gen[0] & 1) * nthreads + tid) * SLOT
            slots[off + _F_COL] = -1
            if m > 0:
                vmax = vl[0]
                for j in range(m):
                    if vl[j] > vmax:
                        vmax = vl[j]
                slots_w[off + _F_V] = vmax
                slots[off + _F_COL] = lo
            if not barrier(sync, nthreads, gen[0]):
                status = STATUS_ABORTED
                break
            base = (gen[0] & 1) * nthreads * SLOT
            vmax = zero_v
            have = False
            for t in range(nthreads):
                o = base + t * SLOT
                if slots[o + _F_COL] >= 0 and (not have or slots_w[o + _F_V] > vmax):
                    vmax = slots_w[o + _F_V]
                    have = True
            for j in range(m):
                vl[j] -= vmax
        second = first
        first = False
        reverse = not reverse
    if tid == 0:
        if status == STATUS_OK:
            copy_into(row_to_col, row_col, n1)
        result[0] = status
        result[1] = n_pass
        result[2] = rows_evaluated
    return status


@njit(cache=True, nogil=True)
def augment_rows(src, n1, n2, v, row_to_col, col_row, rows, integral):
    """Augment every row of ``rows`` (int64) exactly (ε = 0) from the prices ``v`` and the partial
    assignment ``row_to_col`` / ``col_row`` (-1: free), on the calling thread: the Dijkstra of
    the passes without a pass around it (the small path starts it from Jonker–Volgenant's
    prices, ``jv.py``). Only real rows are augmented: the columns left free keep their price.
    ``src`` is a dense matrix. Returns (status, rows evaluated); ``row_to_col``, ``col_row`` and
    ``v`` are updated."""
    cols = new_columns(np.empty(n2, src.dtype), v, n2)
    free_mask, owner, acost = cols.free_mask, cols.owner, cols.acost
    row_col = np.full(n2, -1, np.int64)
    for i in range(n1):
        row_col[i] = row_to_col[i]
    for j in range(n2):
        owner[j] = col_row[j]
        free_mask[j] = KEY_MIN if col_row[j] < 0 else KEY_MAX
        if col_row[j] >= 0:
            acost[j] = cost_at(src, col_row[j], j)
    path = Path(row_col, np.empty(n2, np.int64), np.empty(n2, v.dtype), np.zeros(3),
                np.zeros(1, np.int64))
    slots = np.zeros(2 * SLOT, np.int64)
    meet = Meeting(np.zeros(SYNC_SIZE, np.int64), slots, slots.view(v.dtype),
                   np.zeros(8, np.int64))
    inf_val = v.dtype.type(2**62) if integral else v.dtype.type(np.inf)
    zero = v.dtype.type(0)
    status = STATUS_OK
    for k in range(rows.shape[0]):
        status = _augment(0, 1, src, rows[k], n1, 0, v, zero, inf_val, integral, cols, path, meet)
        if status != STATUS_OK:
            break
    for i in range(n1):
        row_to_col[i] = row_col[i]
    for j in range(n2):
        col_row[j] = owner[j]
    return status, np.int64(path.acc[0])


@njit(cache=True, nogil=True)
def duals_hold_rows(src, buf, v, row_to_col, rtol, sync, assigned):
    """Whether the float duals that ``finish`` reports from ``v`` (shifted to a maximum of 0, u
    from the assigned pairs) meet ``epslap.verify``'s per-entry rule on every row of ``src``:
    u_i + v_j - c_ij <= rtol·(|c_ij| + |u_i| + |v_j|) on every finite entry (one more read of
    each row, for on-demand sources); stops early on a stop request (``sync``). Each row's
    assigned cost goes to ``assigned[i]`` on the way (complete when it returns True), so that
    the rows need not be read again for the result."""
    top = v.max()
    for i in range(row_to_col.shape[0]):
        if aborted(sync):
            return False
        row = get_row(src, i, buf)
        assigned[i] = row[row_to_col[i]]
        if not row_duals_hold(row, v, top, row_to_col[i], rtol):
            return False
    return True


@njit(cache=True, nogil=True)
def gather_assigned(src, buf, row_to_col, out, sync):
    """out[i] = c[i][row_to_col[i]] (one more read of each row, for on-demand sources); stops
    early on a stop request (``sync``)."""
    for i in range(row_to_col.shape[0]):
        if aborted(sync):
            return
        row = get_row(src, i, buf)
        out[i] = row[row_to_col[i]]
