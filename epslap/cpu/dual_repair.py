"""The last resort for float duals that miss ``epslap.verify``'s per-entry rule after the
polishing passes (docs/algorithm.md §8): repair them from the final, optimal assignment.

The reported duals are ``w = v - max(v)`` and ``u_i = c[i, σ(i)] - w[σ(i)]``. A violated entry
(i, j) — ``u_i + w_j - c_ij`` above its tolerance — is mended by lowering ``w_j`` to
``c_ij - u_i``: row i then holds at j, columns only go down (no other row's entry gets worse),
and only the row k that owns column j (σ(k) = j) sees its ``u_k`` rise, so only that row is
checked again. This is Bellman–Ford on the assignment's exchange graph, started from prices
that are already feasible up to rounding, so it ends after a few corrections; for an optimal
assignment it cannot go on for ever, except through rounding, which the budget of row reads
bounds. Excesses are computed exactly (compensated sums), as ``verify`` computes them.

A miss smaller than a few ulps of the row's own price (``u_i = c[i, σ(i)] - w[σ(i)]`` holds
only that precision: a pair of costs near 1e9 leaves u_i on a grid of 1.2e-7, beside entries of
1e-5) is mended the other way: ``w[σ(i)]`` rises by those ulps, which lowers u_i past it and
stays within every rule of that column (each holds ``2**-49 |w|``), and every row is swept
again. An unassigned column of a rectangular problem keeps the top price (its dual is the bound of
the longer side, 0, as complementary slackness asks): where a row misses the rule on one, the
row's own column rises instead, lowering the row's dual to that entry's reduced cost, and every
row is swept again (rows with entries in the risen column may now miss it).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from costfns.rows import get_row

from .._sync import aborted
from .._exact import exact_excess_scalar
from .arrays import copy_into


@njit(cache=True, nogil=True)
def repair_start(v, row_to_col):
    """The repair's state: the prices in the reported position ``w = v - max(v)``, each
    column's owner, and an empty ring of rows to read (each row at most once in it)."""
    n1 = row_to_col.shape[0]
    owner = np.full(v.shape[0], -1, np.int64)
    for i in range(n1):
        owner[row_to_col[i]] = i
    return v - v.max(), owner, np.empty(n1 + 1, np.int64), np.zeros(n1, np.bool_)


@njit(cache=True, nogil=True, inline="always")
def sweep_start(w, queue, queued):
    """A full sweep: every row queued, at the canonical position ``t = max w``:
    ``(t, head, size)``."""
    n1 = queued.shape[0]
    for i in range(n1):
        queue[i] = i
        queued[i] = True
    return w.max(), 0, n1


@njit(cache=True, nogil=True, inline="always")
def next_row(queue, queued, head, size):
    """The ring's next row: ``(i, head, size)``."""
    i = queue[head]
    queued[i] = False
    return i, (head + 1) % queue.shape[0], size - 1


@njit(cache=True, nogil=True, inline="always")
def own_pair_misses(ui, wx, cx, t, rtol):
    """Whether row i's own pair (cost ``cx``, price ``wx``) misses the rule by its own
    rounding (no lowering mends that)."""
    slack = -exact_excess_scalar(ui, wx, cx)
    return abs(slack) > rtol * ((abs(cx) + abs(ui + t)) + abs(wx - t))


#: ulps a raised price may take beyond its first rounding (:func:`mend`)
_RAISE_STEPS = 8


@njit(cache=True, nogil=True, inline="always")
def misses_rule(ui, wj, cij, t, rtol):
    """Whether entry (i, j) misses the rule with dual ``ui`` and price ``wj`` (tolerances from
    the duals in the reported position, top price ``t``)."""
    excess = exact_excess_scalar(ui, wj, cij)
    return excess > 0.0 and excess > rtol * ((abs(cij) + abs(ui + t)) + abs(wj - t))


@njit(cache=True, nogil=True, inline="always")
def raised_own_price(wx, t, cx, wj, cij, rtol):
    """The first of ``wx`` and the _RAISE_STEPS - 1 floats above it at which row i's own
    price (its pair's cost ``cx``) puts ``u_i = cx - wx`` within the rule of entry (i, j);
    NaN where none does at or below the top ``t``."""
    for _ in range(_RAISE_STEPS):
        if not wx <= t:
            return np.nan
        if not misses_rule(cx - wx, wj, cij, t, rtol):
            return wx
        wx = np.nextafter(wx, np.inf)
    return np.nan


@njit(cache=True, nogil=True, inline="always")
def mend(ui, t, x, cx, j, cij, w, rtol, owner, queue, queued, head, size):
    """Pair (i, j) of row i (dual ``ui``, own pair at column ``x`` of cost ``cx``): where it
    violates the rule by less than a few ulps of ``w_x`` (the precision ``u_i = c_x - w_x``
    holds), raise ``w_x`` by those ulps (and sweep again); else lower ``w_j`` to
    ``c_ij - u_i`` and queue the owner of j. Where j is
    unassigned (a rectangular problem), its price must stay at the top ``t`` (its dual is the
    longer side's bound, 0): row i's own price rises instead, to ``c_x - (c_ij - w_j)``, which
    lowers ``u_i`` to the pair's reduced cost; rows of other columns' entries in column x may
    then miss the rule, so the caller sweeps every row again. ``(ui, size, changed)``; size
    -1 where that price would pass the top (row i gains by taking j: no repair of the duals
    certifies the assignment)."""
    if not misses_rule(ui, w[j], cij, t, rtol):
        return ui, size, False
    # a miss within the rounding of u_i's own pair (u_i = c_x - w_x holds only the precision
    # of w_x): w_x up by a few ulps lowers u_i past it, a change within every rule of column x
    wx = raised_own_price(np.nextafter(w[x], np.inf), t, cx, w[j], cij, rtol)
    k = owner[j]
    if wx != wx and k < 0:  # (up by ulps where cx - wx rounds above c_ij - w_j)
        wx = raised_own_price(cx - (cij - w[j]), t, cx, w[j], cij, rtol)
        if wx != wx:
            return ui, -1, False
    if wx == wx:
        w[x] = wx
        return cx - wx, size, True
    w[j] = cij - ui
    if not queued[k]:
        queue[(head + size) % queue.shape[0]] = k
        queued[k] = True
        size += 1
    return ui, size, True


@njit(cache=True, nogil=True)
def repair_duals(src, buf, v, row_to_col, rtol, budget, sync):
    """Lower entries of ``v`` until every row meets the rule with the duals reported from it
    (see the module docstring), tolerances taken as ``epslap.verify`` takes them: from the
    duals shifted so that the largest price is 0. ``budget``: the most row reads. Returns the
    rows read, or -1 where the budget ran out (or a stop request came, or an assigned pair's
    own rounding misses the rule, or a row gains by taking an unassigned column) first. ``v`` ends
    shifted to a maximum of 0 before the repair and lowered by it (a rectangular problem's
    assigned columns may also rise, never above the unassigned ones' top price); the result reports it
    as it is (``solution.orient`` with ``shift=False``): a shift would round away what the
    repair set. ``cpu.sparse.repair_duals`` is the same over a sparse problem's stored pairs."""
    n2 = v.shape[0]
    w, owner, queue, queued = repair_start(v, row_to_col)
    reads = 0
    while True:
        # a full sweep at the current canonical position t; then only the rows whose u rose
        t, head, size = sweep_start(w, queue, queued)
        changed = False
        while size > 0:
            if reads >= budget or aborted(sync):
                copy_into(v, w, v.size)
                return -1
            i, head, size = next_row(queue, queued, head, size)
            row = get_row(src, i, buf)
            reads += 1
            x = row_to_col[i]
            cx = np.float64(row[x])
            ui = cx - w[x]
            if own_pair_misses(ui, w[x], cx, t, rtol):
                copy_into(v, w, v.size)
                return -1
            for j in range(n2):
                cij = np.float64(row[j])
                if not cij < np.inf or j == x:
                    continue
                ui, size, low = mend(ui, t, x, cx, j, cij, w, rtol, owner, queue, queued, head,
                                     size)
                if size < 0:
                    copy_into(v, w, v.size)
                    return -1
                changed |= low
        if not changed and w.max() == t:
            break
    copy_into(v, w, v.size)
    return reads
