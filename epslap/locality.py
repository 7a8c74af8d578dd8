"""Point sets relabeled in a spatial order before candidates, then certify; sparse problems
relabeled in the order of their graph.

A point set's rows and columns arrive in any order (often random). The sparse solve of
``epslap.candidates`` then reads, for each row, its candidates' prices and search state at
column labels scattered over the whole problem: at a million points nearly every read misses
the processor's caches. Its neighbours in space are its candidates, so labelling the points in
a space-filling order (Morton: the bits of the quantised coordinates interleaved) puts a row's
candidates at nearby labels, and the rows a search visits next to each other. The answer is
the same problem's; only the labels change, and they are mapped back before the result is
assembled (``solve_candidates``'s ``order``). Measured on the benchmark page (the sparse
solve several times faster at 10^5-10^6 points).

A sparse problem given as such (``epslap.sparse``) has no points, but its stored pairs are a
graph: where a row's columns are scattered over the labels (a k-nearest-neighbour graph of
points in random order), :func:`sparse_order` orders rows and columns by reverse
Cuthill–McKee over the bipartite graph (SciPy's), which puts each row's columns, and the rows
that bid for them, at nearby labels.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ._validate import spread_rows

#: bits of the Morton code (one unsigned 64-bit word, shared by the dimensions)
CODE_BITS = 63


def point_source(cost):
    """The point-set source behind ``cost`` (``costfns.SqEuclidean`` or its subclass
    ``Euclidean``, alone or inside ``costfns.ImageEMD``), or None."""
    from costfns import SqEuclidean
    if isinstance(cost, SqEuclidean):
        return cost
    inner = getattr(cost, "points", None)
    return inner if isinstance(inner, SqEuclidean) else None


def morton_order(points: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The permutation sorting ``points`` (n, d) by their Morton code over the box [lo, hi]."""
    n, d = points.shape
    bits = max(1, CODE_BITS // max(d, 1))
    span = np.where(hi > lo, hi - lo, 1.0)
    cells = np.float64(2**bits)
    q = np.minimum((points - lo) / span * cells, cells - 1).astype(np.uint64)
    return np.argsort(_interleaved(q, bits), kind="stable")


@njit(cache=True, nogil=True)
def _interleaved(q, bits):
    """Each row's cells ``q[p, :]`` (uint64, ``bits`` each) with their bits interleaved, the
    most significant first: one pass over the points (a NumPy pass per bit and dimension
    took 1.5 s for a million 2-D points)."""
    n, d = q.shape
    one = np.uint64(1)
    out = np.zeros(n, np.uint64)
    for p in range(n):
        code = np.uint64(0)
        for b in range(bits - 1, -1, -1):
            shift = np.uint64(b)
            for s in range(d):
                code = (code << one) | ((q[p, s] >> shift) & one)
        out[p] = code
    return out


def relabeled(cost):
    """``(source, (row_order, col_order))``: ``cost``'s point set with rows and columns in
    Morton order over their common box (new row ``i`` is row ``row_order[i]`` of ``cost``), or
    ``(cost, None)`` where ``cost`` is not a point set."""
    pts = point_source(cost)
    if pts is None or min(pts.shape) == 0:
        return cost, None
    lo = np.minimum(pts.X.min(axis=0), pts.Y.min(axis=0))
    hi = np.maximum(pts.X.max(axis=0), pts.Y.max(axis=0))
    rows, cols = morton_order(pts.X, lo, hi), morton_order(pts.Y, lo, hi)
    return type(pts)(pts.X[rows], pts.Y[cols]), (rows, cols)


def restore_labels(order, transposed: bool, row_to_col, v, assigned):
    """A canonical result of the relabeled problem (``row_to_col``, ``v``, ``assigned``) in
    the labels of the problem as given; ``transposed``: the canonical rows are its columns."""
    rows, cols = order[::-1] if transposed else order
    out_r2c = np.empty_like(row_to_col)
    out_r2c[rows] = np.where(row_to_col >= 0, cols[np.maximum(row_to_col, 0)], -1)
    out_v = np.empty_like(v)
    out_v[cols] = v
    out_assigned = np.empty_like(assigned)
    out_assigned[rows] = assigned
    return out_r2c, out_v, out_assigned


#: stored pairs from which :func:`sparse_order` looks at a sparse problem's labels (below, its
#: arrays stay in the processor's caches whatever the order)
SPARSE_RELABEL_FROM = 1 << 18
#: scattered labels: at the median sampled row, the median distance of its stored columns'
#: labels from their median exceeds this share of the columns (uniform labels: about 1/4)
SPARSE_SCATTERED = 0.05
#: rows sampled for that look
SPARSE_SAMPLE = 256


def sparse_order(prob):
    """``(row_order, col_order)`` for a canonical sparse problem (``sparse_input.SparseProblem``)
    of at least SPARSE_RELABEL_FROM stored pairs whose rows' columns are scattered over the
    labels (SPARSE_SCATTERED, judged on SPARSE_SAMPLE rows spread over the labels; a median,
    so that a far pair or two per row, as a complete matching added to a neighbour graph, do
    not count) and that has neighbourhoods (SPARSE_SHARED_MIN: a random graph has none, and
    its order would cost its time for nothing): reverse Cuthill–McKee over its bipartite
    graph (new row ``i`` is row ``row_order[i]``); else None, also where SciPy is not
    installed."""
    n1, n2, indptr = prob.n1, prob.n2, prob.indptr
    if prob.data.size < SPARSE_RELABEL_FROM:
        return None
    sample = spread_rows(n1, SPARSE_SAMPLE)
    spread = []
    for i in sample:
        cols = prob.indices[indptr[i]:indptr[i + 1]]
        if cols.size > 1:
            spread.append(np.median(np.abs(cols - np.median(cols))))
    if not (spread and np.median(spread) > SPARSE_SCATTERED * n2):
        return None
    try:
        import scipy.sparse as sp
        from scipy.sparse.csgraph import reverse_cuthill_mckee
    except ImportError:
        return None
    pairs = sp.csr_array((np.ones(prob.data.size, np.int8), prob.indices, indptr),
                         shape=(n1, n2))
    by_column = pairs.T.tocsr()  # each column's rows
    if _shared_rows(prob, by_column, sample) < SPARSE_SHARED_MIN:
        return None  # no neighbourhoods (a random graph): no order puts them near
    graph = sp.bmat([[None, pairs], [by_column, None]], format="csr")
    order = reverse_cuthill_mckee(graph, symmetric_mode=True).astype(np.int64)
    return order[order < n1], order[order >= n1] - n1


#: a graph has neighbourhoods (an order can put them at nearby labels) where a row's two
#: cheapest columns share, besides it, at least this many rows on average over SPARSE_SAMPLE
#: rows: a neighbour graph of points, several (their points are near each other); a random
#: graph, about k**2 / n
SPARSE_SHARED_MIN = 1.0


def _shared_rows(prob, by_column, sample) -> float:
    """The mean, over the rows ``sample``, of the rows other than itself that a row's two
    cheapest columns both store (``by_column``: the pairs by column, CSR)."""
    indptr, shared, seen = prob.indptr, 0, 0
    for i in sample:
        lo, hi = indptr[i], indptr[i + 1]
        if hi - lo < 2:
            continue
        first, second = np.argsort(prob.data[lo:hi], kind="stable")[:2] + lo
        a, b = (by_column.indices[by_column.indptr[j]:by_column.indptr[j + 1]]
                for j in (prob.indices[first], prob.indices[second]))
        shared += np.intersect1d(a, b).size - 1
        seen += 1
    return shared / seen if seen else 0.0


def relabeled_sparse(prob, order):
    """``prob`` (``sparse_input.SparseProblem``) with new row ``i`` its row ``order[0][i]`` and
    column ``order[1][j]`` its new column ``j``, each row's pairs in their stored order."""
    rows, cols = order
    counts = np.diff(prob.indptr)[rows]
    indptr = np.zeros(prob.n1 + 1, np.int64)
    np.cumsum(counts, out=indptr[1:])
    # the stored positions of the new rows' pairs, in order
    at = np.repeat(prob.indptr[rows] - indptr[:-1], counts) + np.arange(indptr[-1])
    new_label = np.empty(prob.n2, np.int64)
    new_label[cols] = np.arange(prob.n2)
    return prob._replace(indptr=indptr, indices=new_label[prob.indices[at]],
                         data=prob.data[at])
