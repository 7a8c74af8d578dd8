"""Each row's least reduced costs ``c_ij - v_j`` for a point set with squared Euclidean or
Euclidean costs, by a tree of boxes over the columns instead of a scan of all of them
(``epslap.point_passes``).

The columns, in a k-d order (``tree_order``), are cut into tiles of ``TILE``; a complete binary
tree over the tiles holds at every node the bounding box of its columns' points and their
largest price. For a row at ``x``, a node's ``bound`` — the (squared) distance from ``x`` to its
box, less its largest price — is at most the reduced cost of every column under it, and the
search skips a node whose bound cannot change the row's answer. Nearer children are searched first, so the row's least
reduced costs are found in a few tiles and the rest of the tree is skipped near the root.

Rigour: the bound is computed with the very operations of the cost's own formula
(``costfns.SqEuclidean``: ``acc + (x_k - y_k)²`` over the dimensions in order, for
``costfns.Euclidean`` its correctly rounded square root, then ``- v_j``), with each
``|x_k - y_k|`` replaced by the distance to the box's side, which is no larger. Rounding
is monotone, so the computed bound is at most the computed reduced cost of every column below the
node: a skipped node holds no column that the full scan would have kept.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .._sync import new_sync, run_workers
from .host import compile_kernels

#: columns per leaf of the tree (a leaf's points are read in one unit-stride sweep)
TILE = 128
#: nodes a search keeps waiting: one per level of the deepest tree (2**62 tiles)
STACK = 64


def _tiles_and_leaves(n2: int, tile: int):
    """The tiles over ``n2`` columns, and the leaves of the complete binary tree over them (the
    least power of two at least the tiles)."""
    tiles = -(-n2 // tile)
    return tiles, 1 << max(tiles - 1, 0).bit_length()


def tree_order(y, tile):
    """The columns' order for the tree (a permutation of ``range(n2)``): a k-d split at every
    node, along the side where its points spread most, at the tile boundary that halves its
    tiles — so a leaf's points are a compact box and a node's two children barely overlap (a
    Morton order's tiles straddle its jumps, and their boxes grow wide)."""
    n2 = y.shape[0]
    tiles, leaves = _tiles_and_leaves(n2, tile)
    perm = np.arange(n2, dtype=np.int64)
    span = leaves  # tiles per node at this level
    while span > 1:
        half = span // 2
        for a in range(0, tiles, span):
            lo, mid, hi = a * tile, (a + half) * tile, min((a + span) * tile, n2)
            if mid >= hi:
                continue
            part = perm[lo:hi]
            pts = y[part]
            axis = int(np.argmax(pts.max(axis=0) - pts.min(axis=0)))
            perm[lo:hi] = part[np.argpartition(pts[:, axis], mid - lo, kind="introselect")]
        span = half
    return perm


def _up_the_tree(leaf_values, leaves, combine, empty):
    """An implicit tree's nodes (node 1 the root, node ``t``'s children ``2t``, ``2t + 1``)
    from its leaves' values (leaf ``p`` at node ``leaves + p``; the missing ones ``empty``),
    each parent ``combine`` of its children, a level at a time."""
    out = np.full((2 * leaves,) + leaf_values.shape[1:], empty)
    out[leaves:leaves + leaf_values.shape[0]] = leaf_values
    width = leaves
    while width > 1:
        width //= 2
        out[width:2 * width] = combine(out[2 * width:4 * width:2], out[2 * width + 1:4 * width:2])
    return out


def _per_tile(values, tile, fill, reduce):
    """``reduce`` of each tile's rows of ``values`` (the last tile padded with ``fill``)."""
    tiles = -(-values.shape[0] // tile)
    padded = np.full((tiles * tile,) + values.shape[1:], fill)
    padded[:values.shape[0]] = values
    return reduce(padded.reshape((tiles, tile) + values.shape[1:]), axis=1)


def build_boxes(yp, tile):
    """``(lo, hi, leaves)``: the boxes of the implicit tree over ``yp`` (column points in the
    tree's order): node 1 the root, node ``t``'s children ``2t`` and ``2t + 1``, leaf ``p`` (tile
    ``p``, columns ``[p * tile, (p + 1) * tile)``) at node ``leaves + p``. Nodes beyond the last
    tile have an empty box (lo = +inf, hi = -inf), which no search enters."""
    _, leaves = _tiles_and_leaves(yp.shape[0], tile)
    lo = _up_the_tree(_per_tile(yp, tile, np.inf, np.min), leaves, np.minimum, np.inf)
    hi = _up_the_tree(_per_tile(yp, tile, -np.inf, np.max), leaves, np.maximum, -np.inf)
    return lo, hi, leaves


def node_prices(vp, tile, leaves):
    """Each node's largest price over its columns (``vp``: the prices in the tree's order);
    -inf for an empty node."""
    return _up_the_tree(_per_tile(vp, tile, -np.inf, np.max), leaves, np.maximum, -np.inf)


@njit(cache=True, nogil=True)
def _bound(x, i, lo, hi, top, node, root):
    """The least reduced cost any column below ``node`` can have for row ``i`` (module
    docstring): +inf for an empty node."""
    if top[node] == -np.inf:
        return np.inf
    acc = 0.0
    for k in range(x.shape[1]):
        xk = x[i, k]
        if xk < lo[node, k]:
            t = xk - lo[node, k]
        elif xk > hi[node, k]:
            t = xk - hi[node, k]
        else:
            t = 0.0
        acc = acc + t * t
    if root:
        acc = math.sqrt(acc)
    return acc - top[node]


@njit(cache=True, nogil=True)
def _insert_pair(rs, cs, vs, count, size, r, j, c):
    """Insert column ``j`` (reduced cost ``r``, cost ``c``) into the list ordered by ``(r,
    j)`` that keeps the ``size`` least; the new count."""
    if count == size:
        if r > rs[size - 1] or (r == rs[size - 1] and j > cs[size - 1]):
            return count
        t = size - 1
    else:
        t = count
        count += 1
    while t > 0 and (rs[t - 1] > r or (rs[t - 1] == r and cs[t - 1] > j)):
        rs[t], cs[t], vs[t] = rs[t - 1], cs[t - 1], vs[t - 1]
        t -= 1
    rs[t], cs[t], vs[t] = r, j, c
    return count


@njit(cache=True, nogil=True)
def least_reduced_rows(x, yp, perm, vp, lo, hi, top, leaves, tile, root, rows, need, own, first,
                       stride, m, out_cols, out_vals, out_counts, row_min, leaves_read):
    """Rows ``rows[first], rows[first + stride], …`` of ``rows[:m]``, row ``i = rows[t]``
    written at ``t``: ``out_cols[t, :out_counts[t]]`` its columns of least ``c_ij - v_j``
    (``size = out_cols.shape[1]`` of them, ascending, ties to the lower column; original column
    labels, ``perm`` mapping the tree's order to them) with their costs in ``out_vals``, and
    ``row_min[t]`` the least ``c_ij - v_j`` over the columns other than ``own[t]`` (-1: none
    excluded); ``leaves_read[t]``: the tiles the search read. ``root``: the cost is the
    distance (``costfns.Euclidean``: the square root of the same sum), not its square.

    ``need[t]``: the list must be exact only in its entries below ``need[t]`` (and ``row_min``
    exact): a node whose bound reaches ``max(need[t], row_min)`` is skipped even while the list
    has room. ``+inf`` asks for the whole list (the candidate pass); the certificate pass asks
    for the pairs below ``u_i``."""
    size = out_cols.shape[1]
    rs = np.empty(size)
    stack = np.empty(STACK, np.int64)
    bounds = np.empty(STACK)
    d = x.shape[1]
    n2 = yp.shape[0]
    for t in range(first, m, stride):
        i = rows[t]
        cs = out_cols[t]
        vs = out_vals[t]
        limit = need[t]
        skip_own = own[t]
        count = 0
        read = 0
        best = np.inf
        stack[0] = 1
        bounds[0] = _bound(x, i, lo, hi, top, 1, root)
        depth = 1
        while depth:
            depth -= 1
            node = stack[depth]
            b = bounds[depth]
            if b >= max(limit, best) or (count == size and b > rs[size - 1]):
                continue
            if node >= leaves:
                read += 1
                start = (node - leaves) * tile
                for q in range(start, min(n2, start + tile)):
                    acc = 0.0
                    for k in range(d):
                        diff = x[i, k] - yp[q, k]
                        acc = acc + diff * diff
                    if root:
                        acc = math.sqrt(acc)
                    r = acc - vp[q]
                    j = perm[q]
                    if j != skip_own:
                        best = min(best, r)
                    if count < size or r <= rs[size - 1]:
                        count = _insert_pair(rs, cs, vs, count, size, r, j, acc)
                continue
            left, right = 2 * node, 2 * node + 1
            bl = _bound(x, i, lo, hi, top, left, root)
            br = _bound(x, i, lo, hi, top, right, root)
            if bl <= br:  # the nearer child on top of the stack, searched first
                stack[depth], bounds[depth] = right, br
                stack[depth + 1], bounds[depth + 1] = left, bl
            else:
                stack[depth], bounds[depth] = left, bl
                stack[depth + 1], bounds[depth + 1] = right, br
            depth += 2
        out_counts[t] = count
        row_min[t] = best
        leaves_read[t] = read


class ColumnTree:
    """The tree over a point set's columns ``y`` (n2, d), searched for rows ``x`` (n1, d) on
    ``threads`` threads: :meth:`least` is ``least_reduced_rows`` at prices ``v``; ``root``: the
    costs are distances (``costfns.Euclidean``), not their squares."""

    def __init__(self, x, y, threads: int, root: bool = False):
        self.x, self.threads, self.root = x, threads, bool(root)
        self.perm = tree_order(y, TILE)
        self.yp = np.ascontiguousarray(y[self.perm])
        self.lo, self.hi, self.leaves = build_boxes(self.yp, TILE)
        self.tiles, _ = _tiles_and_leaves(y.shape[0], TILE)
        self.tiles_read = self.rows_searched = 0  # over the searches so far

    def _arguments(self, v, rows, size: int, need, own):
        """``(args_of, threads, (cols, vals, counts, row_min, read))``: the kernel's arguments
        over ``rows`` for thread ``tid`` of ``threads``, and the arrays it fills (by position in
        ``rows``)."""
        m = rows.size
        out = (np.zeros((m, size), np.int64), np.zeros((m, size)), np.zeros(m, np.int64),
               np.full(m, np.inf), np.zeros(m, np.int64))
        vp = np.ascontiguousarray(v[self.perm], np.float64)
        top = node_prices(vp, TILE, self.leaves)
        nt = max(min(self.threads, m), 1)

        def args_of(tid):
            return (self.x, self.yp, self.perm, vp, self.lo, self.hi, top, self.leaves, TILE,
                    self.root, rows, need, own, tid, nt, m, *out)
        return args_of, nt, out

    def least(self, v, rows, size: int, need=None, own=None):
        """``least_reduced_rows`` over ``rows`` (int64): ``(cols, vals, counts, row_min)`` by
        position in ``rows``; ``need`` +inf and ``own`` -1 where not given."""
        m = rows.size
        need = np.full(m, np.inf) if need is None else np.ascontiguousarray(need, np.float64)
        own = np.full(m, -1, np.int64) if own is None else np.ascontiguousarray(own, np.int64)
        args_of, nt, (cols, vals, counts, row_min, read) = self._arguments(v, rows, size, need,
                                                                           own)
        if m:
            run_workers(least_reduced_rows, args_of, nt, new_sync())
        self.tiles_read += int(read.sum())
        self.rows_searched += m
        return cols, vals, counts, row_min

    def compile(self, progress=None) -> float:
        """The search's compile (with ``progress``, shown with a running clock); the seconds
        spent (``host.compile_kernels``)."""
        none = np.zeros(0, np.int64)
        args_of, _, _ = self._arguments(np.zeros(self.yp.shape[0]), none, 1, np.zeros(0), none)
        return compile_kernels([(least_reduced_rows, args_of(0))], progress,
                               "the point-set passes")
