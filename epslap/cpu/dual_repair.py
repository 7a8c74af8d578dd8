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
"""
from __future__ import annotations

import numpy as np
from numba import njit

from costfns.rows import get_row

from .._sync import aborted
from ..certificate import exact_excess


#: verify's compensated ``(u + w) - c``, compiled for scalars
exact_excess_scalar = njit(cache=True, nogil=True, inline="always")(exact_excess)


@njit(cache=True, nogil=True)
def repair_duals(src, buf, v, row_to_col, rtol, budget, sync):
    """Lower entries of ``v`` until every row meets the rule with the duals reported from it
    (see the module docstring), tolerances taken as ``epslap.verify`` takes them: from the
    duals shifted so that the largest price is 0. ``budget``: the most row reads. Returns the
    rows read, or -1 where the budget ran out (or a stop request came, or an assigned pair's
    own rounding misses the rule) first. ``v`` ends shifted to a maximum of 0 before the
    repair and only lowered by it; the result reports it as it is (``solution.orient`` with
    ``shift=False``): a shift would round away what the repair set."""
    n1 = row_to_col.shape[0]
    n2 = v.shape[0]
    w = v - v.max()
    owner = np.full(n2, -1, np.int64)
    for i in range(n1):
        owner[row_to_col[i]] = i
    queue = np.empty(n1 + 1, np.int64)  # a ring: each row at most once in it
    queued = np.zeros(n1, np.bool_)
    reads = 0
    while True:
        # a full sweep at the current canonical position t; then only the rows whose u rose
        t = w.max()
        for i in range(n1):
            queue[i] = i
            queued[i] = True
        head, size = 0, n1
        changed = False
        while size > 0:
            if reads >= budget or aborted(sync):
                v[:] = w
                return -1
            i = queue[head]
            head = (head + 1) % (n1 + 1)
            size -= 1
            queued[i] = False
            row = get_row(src, i, buf)
            reads += 1
            x = row_to_col[i]
            cx = np.float64(row[x])
            ui = cx - w[x]
            au = abs(ui + t)
            slack = -exact_excess_scalar(ui, w[x], cx)
            if abs(slack) > rtol * ((abs(cx) + au) + abs(w[x] - t)):
                v[:] = w  # the pair's own rounding: no lowering mends it
                return -1
            for j in range(n2):
                cij = np.float64(row[j])
                if not cij < np.inf or j == x:
                    continue
                excess = exact_excess_scalar(ui, w[j], cij)
                if excess > 0.0 and excess > rtol * ((abs(cij) + au) + abs(w[j] - t)):
                    w[j] = cij - ui
                    changed = True
                    k = owner[j]
                    if k >= 0 and not queued[k]:
                        queue[(head + size) % (n1 + 1)] = k
                        size += 1
                        queued[k] = True
        if not changed and w.max() == t:
            break
    v[:] = w
    return reads
