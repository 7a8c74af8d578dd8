"""Candidates, then certify for squared Euclidean point sets on the CPU, in about n log n.

The two streaming passes of ``epslap.candidates`` read every cost: n² of them. For the cost
``c_ij = |x_i - y_j|²`` (``costfns.SqEuclidean``) both passes ask for the columns of least reduced
cost ``c_ij - v_j`` of a row, and those are nearest neighbours in a lifted space: with ``vmax``
the largest price, give column j the point ``(y_j, h_j)``, ``h_j = sqrt(vmax - v_j)``; then

    |(x_i, 0) - (y_j, h_j)|² = c_ij - v_j + vmax,

so the k cheapest columns of row i by reduced cost are the k nearest lifted points to
``(x_i, 0)``, which a KD-tree (``scipy.spatial.cKDTree``) finds in about log n steps. At v = 0 the
candidates are the k nearest points. The certificate asks whether any column has
``c_ij - v_j < u_i``: the smallest reduced costs are the nearest lifted points, so a row whose
nearest few (its own pair among them) hold no violating pair has none anywhere: the pass proves
the answer for all n² pairs without reading them. The tree only chooses which pairs are read;
each pair it returns is evaluated with the source's own formula (the same sum in the same
order), and the certificate's rule is applied to those exact values, so rounding in the tree's
distances can only reorder near-ties, never admit a wrong answer: the few extra neighbours read
beyond ``cap`` (``EXTRA``) absorb such reordering among ties.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from costfns.rows import cost_at

from .candidates import HostPasses, check_values

#: neighbours read per row beyond the ones a pass keeps: the own pair, and ties that rounding
#: in the tree's lifted distances may order before a violating pair
EXTRA = 4


def applies(cost, maximize: bool) -> bool:
    """Whether the lifted nearest-neighbour passes can serve ``cost`` (squared Euclidean point
    sets, minimised; a subclass such as ``costfns.Euclidean`` changes the formula)."""
    from costfns import SqEuclidean
    return type(cost) is SqEuclidean and not maximize


@njit(cache=True, nogil=True, parallel=True)
def _pair_costs(src, rows, cols, out):
    """``out[t, q] = c[rows[t], cols[t, q]]`` by the source's own entry form (``cost_at``), so
    the values are bit-identical to the costs the other passes read."""
    for t in prange(rows.size):
        i = rows[t]
        for q in range(cols.shape[1]):
            out[t, q] = cost_at(src, i, cols[t, q])


class PointPasses(HostPasses):
    """``HostPasses`` for a squared Euclidean source: the same interface, the passes by nearest
    lifted neighbours (module docstring) instead of a scan of every column."""

    pass_method = "nearest lifted points"

    def __init__(self, cost, maximize: bool, threads):
        super().__init__(cost, maximize, threads)
        self.x, self.y = self.source.X, self.source.Y  # rows and columns, canonical orientation
        # the source's compiled entry form, over its columns' points as given (a row of Y
        # each: a pair at a random column reads one cache line, not one per dimension)
        self.entries = self.source.specialized_state()._replace(yt=self.y.T)
        lo = np.minimum(self.x.min(axis=0), self.y.min(axis=0))
        hi = np.maximum(self.x.max(axis=0), self.y.max(axis=0))
        self.biggest = float(((hi - lo) ** 2).sum())  # no pair costs more

    def _nearest(self, v, rows, k: int):
        """The k columns of least ``c - v`` for each of ``rows`` (by lifted distance), with their
        exact costs: ``(cols, vals)``, each (rows.size, k)."""
        from scipy.spatial import cKDTree
        h = np.sqrt(np.maximum(v.max() - v, 0.0)) if v.size else v
        tree = cKDTree(np.column_stack([self.y, h]))
        queries = np.column_stack([self.x[rows], np.zeros(rows.size)])
        _, cols = tree.query(queries, k=k, workers=self.threads)
        cols = np.asarray(cols, np.int64).reshape(rows.size, k)
        vals = np.empty(cols.shape)
        _pair_costs(self.entries, rows, cols, vals)
        return cols, vals

    def candidates(self, v, k: int, rows, maximize: bool):
        """``HostPasses.candidates``: each row's k cheapest columns by ``c - v``, ascending (ties
        to the lower column)."""
        check_values(self, 0, self.biggest, maximize)
        cols, vals = self._nearest(v, rows, k)
        order = np.lexsort((cols, vals - v[cols]), axis=1) if k > 1 else np.zeros_like(cols)
        cols = np.take_along_axis(cols, order, axis=1)
        vals = np.take_along_axis(vals, order, axis=1)
        diag = np.empty((rows.size, 1))
        _pair_costs(self.entries, rows, rows[:, None], diag)
        return cols, vals, np.full(rows.size, k, np.int64), diag[:, 0]

    def certify(self, v, u, row_to_col, rows, cap: int, rel: float):
        """``HostPasses.certify`` from each row's ``cap + EXTRA`` nearest lifted columns: the
        rows with a pair below ``u_i`` beyond ``rel * (|c| + |u_i| + |v_j|)``, their (at most
        ``cap``) most violating pairs, and every row's least ``c - v`` beside its own pair."""
        k = min(cap + EXTRA, self.n2)
        cols, vals = self._nearest(v, rows, k)
        red = vals - v[cols]
        ui = u[rows][:, None]
        own = cols == row_to_col[rows][:, None]
        row_min = np.where(own, np.inf, red).min(axis=1)
        bad = ui - red > rel * (np.abs(vals) + np.abs(ui) + np.abs(v[cols]))
        counts = np.minimum(bad.sum(axis=1), cap)
        failing = np.flatnonzero(counts)
        # the most violating first (least reduced cost), at most cap of them
        key = np.where(bad[failing], red[failing], np.inf)
        order = np.argsort(key, axis=1, kind="stable")[:, :cap]
        out_cols = np.take_along_axis(cols[failing], order, axis=1)
        out_vals = np.take_along_axis(vals[failing], order, axis=1)
        width = out_cols.shape[1]
        if width < cap:  # rows hold `cap` slots, as the scanning pass returns them
            pad = ((0, 0), (0, cap - width))
            out_cols, out_vals = np.pad(out_cols, pad), np.pad(out_vals, pad)
        return rows[failing], out_cols, out_vals, counts[failing], row_min


#: the lifted ball of ``verify_pairs`` is widened by this fraction of the magnitudes involved
#: (the tree's distances and the lifted heights are rounded; a pair read needlessly costs
#: nothing but its check)
VERIFY_MARGIN = 1e-9


def verify_pairs(cost, row_ind, col_ind, u, v):
    """The pairs ``epslap.verify`` must read to judge duals of a squared Euclidean point set
    (``costfns.SqEuclidean``, minimised, the caller's orientation), with their exact costs, as
    stored pairs (``epslap.sparse_input.SparseProblem``): every assigned pair, and every pair
    whose ``u_i + v_j - c_ij`` could be positive — the lifted points of the module docstring
    within distance ``sqrt(u_i + max v)`` of ``(x_i, 0)``, the radius widened by VERIFY_MARGIN
    of the magnitudes. A pair outside has a negative excess, which neither the worst
    violation nor the per-entry rule can count; so the check over these pairs is the check
    over all n1 x n2. ``None`` where a dual is not finite (the full check says why)."""
    from scipy.spatial import cKDTree
    from .cpu.solver import available_cores
    from .sparse_input import SparseProblem
    u = np.asarray(u, np.float64)
    v = np.asarray(v, np.float64)
    if not (np.isfinite(u).all() and np.isfinite(v).all()):
        return None
    x, y = cost.X, cost.Y
    n1, n2 = x.shape[0], y.shape[0]
    vmax = float(v.max()) if n2 else 0.0
    reach = u + vmax
    scale = (np.abs(u) + 2.0 * float(np.abs(v).max() if n2 else 0.0)
             + (x * x).sum(axis=1) + float((y * y).sum(axis=1).max() if n2 else 0.0))
    reach = reach + VERIFY_MARGIN * scale
    near = np.flatnonzero(reach >= 0.0)
    rows = [np.asarray(row_ind, np.int64)]
    cols = [np.asarray(col_ind, np.int64)]
    if near.size and n2:
        tree = cKDTree(np.column_stack([y, np.sqrt(np.maximum(vmax - v, 0.0))]))
        found = tree.query_ball_point(np.column_stack([x[near], np.zeros(near.size)]),
                                      np.sqrt(reach[near]), workers=available_cores(),
                                      return_sorted=False)
        counts = np.fromiter((len(f) for f in found), np.int64, near.size)
        rows.append(np.repeat(near, counts))
        cols.append(np.fromiter((j for f in found for j in f), np.int64, int(counts.sum())))
    key = np.unique(np.concatenate(rows) * max(n2, 1) + np.concatenate(cols))
    pr, pc = key // max(n2, 1), key % max(n2, 1)
    data = np.empty((key.size, 1))
    entries = cost.specialized_state()._replace(yt=y.T)
    _pair_costs(entries, pr, pc[:, None], data)
    indptr = np.zeros(n1 + 1, np.int64)
    np.cumsum(np.bincount(pr, minlength=n1), out=indptr[1:])
    return SparseProblem(indptr, pc, data[:, 0], n1, n2, False, False)

