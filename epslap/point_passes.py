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

from .candidates import HostPasses, check_values
from .lifted import pair_costs

#: neighbours read per row beyond the ones a pass keeps: the own pair, and ties that rounding
#: in the tree's lifted distances may order before a violating pair
EXTRA = 4


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
        pair_costs(self.entries, rows, cols, vals)
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
        pair_costs(self.entries, rows, rows[:, None], diag)
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
