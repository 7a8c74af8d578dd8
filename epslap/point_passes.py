"""Candidates, then certify for point sets on the CPU, without n² costs.

The two streaming passes of ``epslap.candidates`` read every cost: n² of them. For the costs
``c_ij = |x_i - y_j|²`` (``costfns.SqEuclidean``) and ``|x_i - y_j|`` (``costfns.Euclidean``)
both passes ask only for a row's columns of
least reduced cost ``c_ij - v_j``, and a tree of boxes over the columns finds those in a few of
its leaves (``epslap.cpu.point_tree``): a node whose squared distance to the row's point, less
its largest price, cannot change the row's answer is skipped with everything below it. The
candidate pass keeps each row's k least; the certificate pass keeps each row's least beside its
own pair and its pairs below ``u_i`` (the violating ones), so where the duals are nearly right
it reads a handful of tiles a row and proves the answer for all n² pairs.

The tree's bounds are computed with the cost's own operations (rounding is monotone), and every
pair kept is evaluated by the source's formula: the passes return the same lists as the scans of
every cost, bit for bit, prices and all. Unlike a nearest-neighbour query in a lifted space (one
height ``sqrt(max v - v_j)`` for every column), the bound uses each node's own largest price, so
clustered points with prices varying between clusters cost no more than uniform ones.
"""
from __future__ import annotations

import numpy as np

from .candidates import HostPasses, check_values
from .cpu.point_tree import ColumnTree
from .point_pairs import is_distance, pair_costs


class PointPasses(HostPasses):
    """``HostPasses`` for a squared Euclidean or Euclidean source: the same interface and
    results, the passes by a search of a tree of boxes (module docstring) instead of a scan of
    every column."""

    pass_method = "box tree"

    def __init__(self, cost, maximize: bool, threads):
        super().__init__(cost, maximize, threads)
        self.x, self.y = self.source.X, self.source.Y  # rows and columns, canonical orientation
        # the source's compiled entry form, over its columns' points as given (a row of Y
        # each: a pair at a random column reads one cache line, not one per dimension)
        self.entries = self.source.specialized_state()._replace(yt=self.y.T)
        lo = np.minimum(self.x.min(axis=0), self.y.min(axis=0))
        hi = np.maximum(self.x.max(axis=0), self.y.max(axis=0))
        root = is_distance(self.source)
        self.biggest = float(((hi - lo) ** 2).sum())  # no pair costs more
        if root:
            self.biggest = float(np.sqrt(self.biggest))
        self.tree = ColumnTree(self.x, self.y, self.threads, root)  # its stats reach the result's

    def compile_passes(self, progress=None) -> float:
        """``HostPasses.compile_passes``: the search's compile."""
        return self.tree.compile(progress)

    def certificate_kernels(self) -> list:
        """``HostPasses.certificate_kernels``: none (the certificate searches the same tree)."""
        return []

    def candidates(self, v, k: int, rows, maximize: bool):
        """``HostPasses.candidates``: each row's k cheapest columns by ``c - v``, ascending (ties
        to the lower column)."""
        check_values(self, 0, self.biggest, maximize)
        k = min(k, self.n2)
        cols, vals, counts, _ = self.tree.least(v, rows, k)
        diag = np.empty((rows.size, 1))
        pair_costs(self.entries, rows, rows[:, None], diag)
        return cols, vals, counts, diag[:, 0]

    def certify(self, v, u, row_to_col, rows, cap: int, rel: float):
        """``HostPasses.certify``: the rows with a pair below ``u_i`` beyond ``rel * (|c| +
        |u_i| + |v_j|)``, their (at most ``cap``) most violating pairs, and every row's least
        ``c - v`` beside its own pair. Each row's ``cap + 1`` least (its own pair may be one,
        and is never a violation below the others) hold every pair reported."""
        size = min(cap + 1, self.n2)
        cols, vals, counts, row_min = self.tree.least(v, rows, size, u[rows], row_to_col[rows])
        red = vals - v[cols]
        ui = u[rows][:, None]
        bad = ((np.arange(size) < counts[:, None])
               & (ui - red > rel * (np.abs(vals) + np.abs(ui) + np.abs(v[cols]))))
        found = np.minimum(bad.sum(axis=1), cap)
        failing = np.flatnonzero(found)
        # the most violating first (least reduced cost), at most cap of them
        key = np.where(bad[failing], red[failing], np.inf)
        order = np.argsort(key, axis=1, kind="stable")[:, :cap]
        out_cols = np.take_along_axis(cols[failing], order, axis=1)
        out_vals = np.take_along_axis(vals[failing], order, axis=1)
        width = out_cols.shape[1]
        if width < cap:  # rows hold `cap` slots, as the scanning pass returns them
            pad = ((0, 0), (0, cap - width))
            out_cols, out_vals = np.pad(out_cols, pad), np.pad(out_vals, pad)
        return rows[failing], out_cols, out_vals, found[failing], row_min
