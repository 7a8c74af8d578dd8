"""Squared Euclidean point sets in a lifted space: the exact costs of chosen pairs, and the
pairs ``epslap.verify`` must read.

With ``vmax`` the largest column price, give column j the point ``(y_j, h_j)``,
``h_j = sqrt(vmax - v_j)``; then ``|(x_i, 0) - (y_j, h_j)|² = c_ij - v_j + vmax`` for
``c_ij = |x_i - y_j|²`` (``costfns.SqEuclidean``). So the pairs that can violate
duals ``(u, v)`` — ``u_i + v_j - c_ij > 0`` — lie within distance ``sqrt(u_i + vmax)`` of
``(x_i, 0)``. The tree only chooses which pairs are read: each is evaluated with the source's own
formula, so rounding in the tree can only make it read more pairs than needed.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from costfns.rows import cost_at

from .sparse_input import SparseProblem


def applies(cost, maximize: bool) -> bool:
    """Whether the lifted nearest-neighbour passes can serve ``cost`` (squared Euclidean point
    sets, minimised; a subclass such as ``costfns.Euclidean`` changes the formula)."""
    from costfns import SqEuclidean
    return type(cost) is SqEuclidean and not maximize


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


#: the lifted ball of ``verify_pairs`` is widened by this fraction of the magnitudes involved
#: (the tree's distances and the lifted heights are rounded; a pair read needlessly costs
#: nothing but its check)
VERIFY_MARGIN = 1e-9
#: ... and by this much outright (magnitudes in the subnormal range round in absolute steps)
VERIFY_FLOOR = 2.0**-1000
#: ``verify_pairs`` lists at most this many pairs per row and column, plus VERIFY_PAIRS_MIN
#: (optimal duals put 1-2 per row in the balls), its rows' balls VERIFY_CHUNK rows at a time;
#: beyond that it hands the check back (``None``)
VERIFY_PAIRS_PER_LINE = 16
VERIFY_PAIRS_MIN = 1 << 20
VERIFY_CHUNK = 1 << 14


def verify_pairs(cost, row_ind, col_ind, u, v):
    """The pairs ``epslap.verify`` must read to judge duals of a squared Euclidean point set
    (``costfns.SqEuclidean``, minimised, the caller's orientation), with their exact costs, as
    stored pairs (``epslap.sparse_input.SparseProblem``): every assigned pair, and every pair
    whose ``u_i + v_j - c_ij`` could be positive — the lifted points of the module docstring
    within distance ``sqrt(u_i + max v)`` of ``(x_i, 0)``, the radius widened by VERIFY_MARGIN
    of the magnitudes (the points centred first). A pair outside has a negative excess, which
    neither the worst
    violation nor the per-entry rule can count; so the check over these pairs is the check
    over all n1 x n2. ``None`` where a dual is not finite (the full check says why), or where
    the balls hold more pairs than VERIFY_PAIRS_PER_LINE a line (duals far from optimal: the
    full check streams every cost then)."""
    from scipy.spatial import cKDTree
    u = np.asarray(u, np.float64)
    v = np.asarray(v, np.float64)
    if not (np.isfinite(u).all() and np.isfinite(v).all()):
        return None
    x, y = cost.X, cost.Y
    n1, n2 = x.shape[0], y.shape[0]
    if n1 and n2:  # centred: the tree's rounding then scales with the cloud, not its place
        centre = (np.minimum(x.min(axis=0), y.min(axis=0))
                  + np.maximum(x.max(axis=0), y.max(axis=0))) / 2
        x, y = x - centre, y - centre
    vmax = float(v.max()) if n2 else 0.0
    with np.errstate(over="ignore", invalid="ignore"):
        height2 = vmax - v
        scale = (np.abs(u) + 2.0 * float(np.abs(v).max() if n2 else 0.0)
                 + (x * x).sum(axis=1) + float((y * y).sum(axis=1).max() if n2 else 0.0))
        reach = (u + vmax) + VERIFY_MARGIN * scale + VERIFY_FLOOR
    if not (np.isfinite(height2).all() and np.isfinite(reach).all()):
        return None  # duals spread beyond the float range: the full check scales them
    near = np.flatnonzero(reach >= 0.0)
    rows = [np.asarray(row_ind, np.int64)]
    cols = [np.asarray(col_ind, np.int64)]
    if near.size and n2:
        tree = cKDTree(np.column_stack([y, np.sqrt(np.maximum(height2, 0.0))]))
        budget = VERIFY_PAIRS_PER_LINE * (n1 + n2) + VERIFY_PAIRS_MIN
        for lo in range(0, near.size, VERIFY_CHUNK):
            part = near[lo:lo + VERIFY_CHUNK]
            points = np.column_stack([x[part], np.zeros(part.size)])
            radii = np.sqrt(reach[part])
            # counted before they are listed: duals far off the costs' scale put most pairs
            # in the balls, and the full check then streams the costs instead
            budget -= int(tree.query_ball_point(points, radii, workers=-1,
                                                return_length=True).sum())
            if budget < 0:
                return None
            found = tree.query_ball_point(points, radii, workers=-1, return_sorted=False)
            counts = np.fromiter((len(f) for f in found), np.int64, part.size)
            rows.append(np.repeat(part, counts))
            cols.append(np.fromiter((j for f in found for j in f), np.int64,
                                    int(counts.sum())))
    key = np.unique(np.concatenate(rows) * max(n2, 1) + np.concatenate(cols))
    pr, pc = key // max(n2, 1), key % max(n2, 1)
    data = np.empty((key.size, 1))
    entries = cost.specialized_state()._replace(yt=cost.Y.T)  # the costs as given
    pair_costs(entries, pr, pc[:, None], data)
    indptr = np.zeros(n1 + 1, np.int64)
    np.cumsum(np.bincount(pr, minlength=n1), out=indptr[1:])
    return SparseProblem(indptr, pc, data[:, 0], n1, n2, False, False)

