"""Point sets with squared Euclidean or Euclidean costs: the exact costs of chosen pairs, and
the pairs ``epslap.verify`` must read.

Duals ``(u, v)`` can be violated — ``u_i + v_j - c_ij > 0`` — only at pairs whose reduced cost
``c_ij - v_j`` lies below ``u_i``; the tree of boxes over the columns (``epslap.cpu.point_tree``)
lists each row's pairs below ``u_i`` plus a margin without reading the others, its bounds
rigorous under rounding. Each pair listed is evaluated with the source's own formula.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from costfns.rows import cost_at

from .cpu.cores import resolve_threads
from .cpu.point_tree import ColumnTree
from .sparse_input import SparseProblem


def applies(cost, maximize: bool) -> bool:
    """Whether the tree's passes and pair lists can serve ``cost``: point sets with squared
    Euclidean (``costfns.SqEuclidean``) or Euclidean (``costfns.Euclidean``) costs, minimised
    (another subclass may change the formula)."""
    from costfns import Euclidean, SqEuclidean
    return type(cost) in (SqEuclidean, Euclidean) and not maximize


def is_distance(cost) -> bool:
    """The costs are distances (the square root of the sum the tree bounds), not squares."""
    from costfns import Euclidean
    return type(cost) is Euclidean


@njit(cache=True, nogil=True)
def pair_costs(src, rows, cols, out):
    """``out[t, q] = c[rows[t], cols[t, q]]`` by the source's own entry form (``cost_at``), so
    the values are bit-identical to the costs the other passes read. On the calling thread: a
    few pairs a row cost far less than a parallel loop's compile (1.8 s, in every fresh
    environment, on the 2-core machine)."""
    for t in range(rows.size):
        i = rows[t]
        for q in range(cols.shape[1]):
            out[t, q] = cost_at(src, i, cols[t, q])


#: a row's list of ``verify_pairs`` reaches this fraction of the magnitudes involved above
#: ``u_i`` (the verify's sums round differently from the tree's; a pair read needlessly costs
#: nothing but its check)
VERIFY_MARGIN = 1e-9
#: ... and this much more outright (magnitudes in the subnormal range round in absolute steps)
VERIFY_FLOOR = 2.0**-1000
#: ``verify_pairs`` lists at most this many pairs per row and column, plus VERIFY_PAIRS_MIN
#: (optimal duals put 1-2 per row below the reach); beyond that it hands the check back
#: (``None``). A row's list starts at VERIFY_FIRST_LIST pairs and grows fourfold while full.
VERIFY_PAIRS_PER_LINE = 16
VERIFY_PAIRS_MIN = 1 << 20
VERIFY_FIRST_LIST = 8


def verify_pairs(cost, row_ind, col_ind, u, v, threads: int | None = None):
    """The pairs ``epslap.verify`` must read to judge duals of a point set whose costs
    :func:`applies` takes (minimised, the caller's orientation), with their exact costs, as
    stored pairs (``epslap.sparse_input.SparseProblem``): every assigned pair, and every pair
    whose ``u_i + v_j - c_ij`` could be positive — reduced cost ``c_ij - v_j`` below ``u_i``
    plus VERIFY_MARGIN of the magnitudes (the points centred first: the margin scales with the
    cloud, not its place). A pair outside has a negative excess, which neither the worst
    violation nor the per-entry rule can count; so the check over these pairs is the check
    over all n1 x n2. ``None`` where a dual is not finite (the full check says why), or where
    more pairs lie below the reach than VERIFY_PAIRS_PER_LINE a line (duals far from optimal:
    the full check streams every cost then). ``threads``: the search's (None: every core)."""
    u = np.asarray(u, np.float64)
    v = np.asarray(v, np.float64)
    if not (np.isfinite(u).all() and np.isfinite(v).all()):
        return None
    x, y = cost.X, cost.Y
    n1, n2 = x.shape[0], y.shape[0]
    xc, yc = x, y
    if n1 and n2:
        centre = (np.minimum(x.min(axis=0), y.min(axis=0))
                  + np.maximum(x.max(axis=0), y.max(axis=0))) / 2
        xc, yc = x - centre, y - centre
    root = is_distance(cost)
    with np.errstate(over="ignore", invalid="ignore"):
        far_x = (xc * xc).sum(axis=1)  # the points' squared magnitudes (the costs' scale:
        far_y = float((yc * yc).sum(axis=1).max() if n2 else 0.0)  # their roots for distances)
        if root:
            far_x, far_y = np.sqrt(far_x), np.sqrt(far_y)
        scale = np.abs(u) + 2.0 * float(np.abs(v).max() if n2 else 0.0) + far_x + far_y
        reach = u + VERIFY_MARGIN * scale + VERIFY_FLOOR
    if not np.isfinite(reach).all():
        return None  # duals spread beyond the float range: the full check scales them
    rows = [np.asarray(row_ind, np.int64)]
    cols = [np.asarray(col_ind, np.int64)]
    vals = [None]
    if n1 and n2:
        tree = ColumnTree(x, y, resolve_threads(threads, n2, 0), root)
        budget = VERIFY_PAIRS_PER_LINE * (n1 + n2) + VERIFY_PAIRS_MIN
        pending, size = np.arange(n1, dtype=np.int64), VERIFY_FIRST_LIST
        while pending.size:
            size = min(size, n2)
            found, costs, counts, _ = tree.least(v, pending, size, reach[pending])
            below = (np.arange(size) < counts[:, None]) & (costs - v[found] < reach[pending][:, None])
            full = below[:, -1] & (size < n2)  # a full list may have left pairs out
            done = ~full
            budget -= int(below[done].sum())
            if budget < 0:
                return None
            rows.append(np.repeat(pending[done], below[done].sum(axis=1)))
            cols.append(found[done][below[done]])
            vals.append(costs[done][below[done]])
            pending, size = pending[full], size * 4
    # the assigned pairs' costs by the source's formula; the listed ones carry theirs
    assigned = np.empty((rows[0].size, 1))
    entries = cost.specialized_state()._replace(yt=cost.Y.T)
    pair_costs(entries, rows[0], cols[0][:, None], assigned)
    vals[0] = assigned[:, 0]
    r, c, d = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    key, first = np.unique(r * max(n2, 1) + c, return_index=True)
    pr, pc = key // max(n2, 1), key % max(n2, 1)
    indptr = np.zeros(n1 + 1, np.int64)
    np.cumsum(np.bincount(pr, minlength=n1), out=indptr[1:])
    return SparseProblem(indptr, pc, d[first], n1, n2, False, False)
