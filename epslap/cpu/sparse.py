"""Exact shortest augmenting paths on a sparse problem (CSR rows, absent pairs forbidden).

The dense passes scan every column of a row at each Dijkstra step; on a sparse graph a step
should cost only the row's stored pairs. This is the sparse form of the exact pass: for each
free row, a Dijkstra search over reduced costs ``c_ij - v_j`` with a binary heap of the columns
reached (decrease-key by position), touching only the columns its rows store, then the usual
price update of the columns it settled and the augmentation along the path found.

Invariants (canonical problem: n1 <= n2, minimised):

- an assigned row's pair attains its row's minimum of ``c_ij - v_j`` over its stored pairs, so
  ``u_i = c_{i,σ(i)} - v_{σ(i)}`` makes every reduced cost of the row ``>= 0`` and its pair 0;
- every free column holds the largest price (prices only fall, on settled assigned columns),
  so the duals of a rectangular problem are feasible with the free columns' duals at the top.

The prices of a cold square solve come from a forward auction with ε-scaling (``auction``):
each phase assigns every row within ε of its row minimum, ε falls by a constant factor per phase,
and the last phase's prices leave few rows off their exact minimum; ``prepare`` frees those,
and the exact search assigns them (the auction's prices make its paths short). On k-nearest-
neighbour graphs of point sets this is several times faster than ε-scaled searches (benchmark
page); the auction's result is never trusted for exactness, only its prices.

A warm start (``prepare``) takes any prices and assignment: it lifts the free columns to the
top price (rectangular problems) and frees each assigned row whose pair no longer attains its row's minimum (the rows
that new candidate pairs undercut), so the invariants hold before the search starts.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .arrays import copy_into
from .dual_repair import mend, next_row, own_pair_misses, repair_start, sweep_start
from .kinds import is_integral

#: status of ``augment``: every row assigned
SPARSE_OK = -1
#: bids between two looks of the auction at its stop flag
STOP_EVERY = 4096


@njit(cache=True, nogil=True, inline="always")
def _sift_up(heap, pos, d, k):
    j = heap[k]
    key = d[j]
    while k > 0:
        parent = (k - 1) >> 1
        pj = heap[parent]
        if d[pj] <= key:
            break
        heap[k] = pj
        pos[pj] = k
        k = parent
    heap[k] = j
    pos[j] = k


@njit(cache=True, nogil=True, inline="always")
def _pop(heap, pos, d, size):
    """Remove and return the heap's smallest column; the heap then holds size - 1."""
    top = heap[0]
    pos[top] = -1
    size -= 1
    if size == 0:
        return top
    j = heap[size]
    key = d[j]
    k = 0
    while True:
        c = 2 * k + 1
        if c >= size:
            break
        if c + 1 < size and d[heap[c + 1]] < d[heap[c]]:
            c += 1
        if d[heap[c]] >= key:
            break
        heap[k] = heap[c]
        pos[heap[c]] = k
        k = c
    heap[k] = j
    pos[j] = k
    return top


@njit(cache=True, nogil=True)
def prepare(indptr, indices, data, v, row_to_col, col_to_row, assigned, big):
    """Bring a warm start to the invariants (module docstring): ``col_to_row`` and
    ``assigned`` (each assigned row's cost) are filled from ``row_to_col``; rows whose pair is
    absent or no longer minimal are freed. Returns the number of rows freed.
    ``big``: a value above every reduced cost (inf, or the integer forbidden marker)."""
    n1 = row_to_col.size
    col_to_row[:] = -1
    for i in range(n1):
        j = row_to_col[i]
        if j >= 0:
            col_to_row[j] = i
    # a float pair this close above its row's minimum is a tie that rounding split (a shift
    # of all prices rounds each c - v anew): kept, it costs the duals two units of roundoff of
    # the two pairs' |c| + |v| (epslap.verify allows 16); freed, each costs a search over the
    # ties around it (on a million points the re-solves after a certificate pass freed ~4 %
    # of the rows so)
    tie = 0.0 if is_integral(data) else 2.0**-52
    freed = 0
    while True:  # a rectangular problem's freed columns go to the top too, which may undercut
        if v.size > n1:  # (more columns than rows): repeat until nothing changes
            top = v[0]
            for j in range(1, v.size):
                top = v[j] if v[j] > top else top
            for j in range(v.size):
                if col_to_row[j] < 0:
                    v[j] = top
        now = 0
        for i in range(n1):
            j = row_to_col[i]
            if j < 0:
                continue
            best = big
            mine = big
            scale = 0.0  # |c| + |v| of the best pair
            for p in range(indptr[i], indptr[i + 1]):
                k = indices[p]
                r = data[p] - v[k]
                if r < best:
                    best = r
                    scale = abs(data[p]) + abs(v[k])
                if k == j and r < mine:
                    mine = r
                    assigned[i] = data[p]
            if mine == big or mine - best > tie * (scale + abs(assigned[i]) + abs(v[j])):
                row_to_col[i] = -1
                col_to_row[j] = -1
                now += 1
        freed += now
        if now == 0 or v.size == n1:
            break
    return freed


@njit(cache=True, nogil=True)
def greedy(indptr, indices, data, v, row_to_col, col_to_row, assigned, big):
    """Each free row takes its cheapest column (by ``c - v``) when that column is free: a pair
    at its row's minimum, so the invariants hold. Returns the rows assigned. ``big`` as for
    :func:`prepare`."""
    taken = 0
    for i in range(row_to_col.size):
        if row_to_col[i] >= 0:
            continue
        best = big
        arg = -1
        cost = data.dtype.type(0)
        for p in range(indptr[i], indptr[i + 1]):
            r = data[p] - v[indices[p]]
            if r < best:
                best = r
                arg = indices[p]
                cost = data[p]
        if arg >= 0 and col_to_row[arg] < 0:
            row_to_col[i] = arg
            col_to_row[arg] = i
            assigned[i] = cost
            taken += 1
    return taken


@njit(cache=True, nogil=True)
def augment(indptr, indices, data, v, row_to_col, col_to_row, assigned, big, counts, stop):
    """Assign every free row by shortest augmenting paths. ``big``: the distance "not
    reached" (inf, or the integer forbidden marker). ``counts`` receives (augmentations,
    columns settled, rows scanned, pairs scanned). Returns SPARSE_OK, or the first row that no augmenting
    path leaves (no complete assignment over the stored pairs exists). ``stop[0]`` set (Ctrl-C,
    ``cpu.host.run_interruptibly``) ends it before the next row's search (the state stays
    consistent: the rows searched so far are assigned)."""
    n1 = row_to_col.size
    n2 = v.size
    d = np.full(n2, big, v.dtype)
    pred = np.empty(n2, np.int64)
    pred_cost = np.empty(n2, data.dtype)
    pos = np.full(n2, -1, np.int64)
    heap = np.empty(n2, np.int64)
    settled = np.zeros(n2, np.bool_)
    touched = np.empty(n2, np.int64)
    for f in range(n1):
        if row_to_col[f] >= 0:
            continue
        if stop[0] != 0:
            return SPARSE_OK
        nt = 0
        size = 0
        end = -1
        dist = big
        reach = big  # the least distance of a free column reached: nothing beyond is pushed
        i = f
        base = v.dtype.type(0)
        while True:
            for p in range(indptr[i], indptr[i + 1]):
                k = indices[p]
                if settled[k]:
                    continue
                nd = base + (data[p] - v[k])
                if nd < d[k] and nd < reach:
                    if d[k] == big:
                        touched[nt] = k
                        nt += 1
                    if col_to_row[k] < 0:
                        reach = nd
                    d[k] = nd
                    pred[k] = i
                    pred_cost[k] = data[p]
                    if pos[k] < 0:
                        heap[size] = k
                        size += 1
                        _sift_up(heap, pos, d, size - 1)
                    else:
                        _sift_up(heap, pos, d, pos[k])
            counts[2] += 1
            counts[3] += indptr[i + 1] - indptr[i]
            if size == 0:
                break
            j = _pop(heap, pos, d, size)
            size -= 1
            settled[j] = True
            counts[1] += 1
            if col_to_row[j] < 0:
                end = j
                dist = d[j]
                break
            i = col_to_row[j]
            base = d[j] - (assigned[i] - v[j])
        for t in range(nt):  # prices of the settled columns; reset the search state
            k = touched[t]
            if settled[k]:
                if end >= 0:
                    v[k] += d[k] - dist
                settled[k] = False
            d[k] = big
            if pos[k] >= 0:
                pos[k] = -1
        if end < 0:
            return f
        j = end
        while True:  # flip the path
            i = pred[j]
            nxt = row_to_col[i]
            row_to_col[i] = j
            col_to_row[j] = i
            assigned[i] = pred_cost[j]
            if i == f:
                break
            j = nxt
        counts[0] += 1
    return SPARSE_OK


@njit(cache=True, nogil=True, inline="always")
def best_two(indptr, indices, data, v, i, big):
    """A bid's view of row ``i``: ``(column, least, second least)`` of ``c - v`` over its
    stored pairs (column -1 where it stores none; ``big`` where there is no second)."""
    best = big
    second = big
    arg = -1
    for p in range(indptr[i], indptr[i + 1]):  # branch-free: the compares of a row's reduced
        r = data[p] - v[indices[p]]             # costs are a coin toss for the predictor
        second = min(second, max(best, r))
        below = r < best
        arg = indices[p] if below else arg
        best = r if below else best
    return arg, best, second


@njit(cache=True, nogil=True)
def auction(indptr, indices, data, v, row_to_col, col_to_row, eps, jump, max_bids, big, stop):
    """One ε-phase of the forward auction (Gauss–Seidel, a queue of free rows): each free row
    takes its cheapest column by ``c - v`` and lowers that column's price until its second
    cheapest ties, plus ``eps``; the column's previous owner becomes free. Ends with every row
    assigned within ``eps`` of its row minimum (ε-complementary slackness). ``jump``: the
    price step of a row with a single stored pair (no second column to tie with). Returns the
    bids made, or -1 after ``max_bids`` (the stored pairs may hold no complete assignment).
    ``big`` as for :func:`prepare`; ``stop[0]`` set ends the phase within ``STOP_EVERY`` bids
    (:func:`augment`; the caller raises KeyboardInterrupt then)."""
    n1 = row_to_col.size
    queue = np.empty(n1, np.int64)
    head = 0
    size = 0
    for i in range(n1):
        if row_to_col[i] < 0:
            queue[size] = i
            size += 1
    bids = 0
    look_at = STOP_EVERY  # the bids at which the stop flag is read next
    while size > 0:
        i = queue[head]
        head += 1
        if head == n1:
            head = 0
        size -= 1
        arg, best, second = best_two(indptr, indices, data, v, i, big)
        if arg < 0:
            return -1
        step = (second - best) if second < big else jump
        v[arg] -= step + eps
        prev = col_to_row[arg]
        col_to_row[arg] = i
        row_to_col[i] = arg
        if prev >= 0:
            row_to_col[prev] = -1
            tail = head + size
            if tail >= n1:
                tail -= n1
            queue[tail] = prev
            size += 1
        bids += 1
        if bids > max_bids:
            return -1
        if bids >= look_at:
            if stop[0] != 0:
                return bids
            look_at += STOP_EVERY
    return bids


@njit(cache=True, nogil=True)
def repair_duals(indptr, indices, data, v, row_to_col, rtol, budget):
    """``cpu.dual_repair.repair_duals`` over the stored pairs: float duals brought within
    ``epslap.verify``'s per-entry rule by lowering prices (a violated pair (i, j) sets ``w_j =
    c_ij - u_i``; only the owner of j is read again). ``v`` ends as the reported prices (the
    shift to max 0 first, then only lowered). Returns ``(rows read, prices lowered)``, rows
    read -1 where the budget ran out, an assigned pair's own rounding misses the rule or a row
    gains by taking an unassigned column (whose price stays on top: the row's own rises)."""
    w, owner, queue, queued = repair_start(v, row_to_col)
    reads = 0
    lowered = 0
    while True:
        t, head, size = sweep_start(w, queue, queued)
        changed = False
        while size > 0:
            if reads >= budget:
                copy_into(v, w, v.size)
                return -1, lowered
            i, head, size = next_row(queue, queued, head, size)
            reads += 1
            x = row_to_col[i]
            cx = np.inf
            for p in range(indptr[i], indptr[i + 1]):
                if indices[p] == x:
                    cx = np.float64(data[p])
            ui = cx - w[x]
            if own_pair_misses(ui, w[x], cx, t, rtol):
                copy_into(v, w, v.size)
                return -1, lowered
            for p in range(indptr[i], indptr[i + 1]):
                j = indices[p]
                if j == x:
                    continue
                ui, size, low = mend(ui, t, x, cx, j, np.float64(data[p]), w, rtol, owner,
                                     queue, queued, head, size)
                if size < 0:
                    copy_into(v, w, v.size)
                    return -1, lowered
                changed |= low
                lowered += low
        if not changed and w.max() == t:
            break
    copy_into(v, w, v.size)
    return reads, lowered
