"""Sparse cost input: the stored pairs are the allowed ones, every absent pair is forbidden.

Accepted forms: a SciPy sparse matrix or array (CSR, CSC, COO or any other format SciPy converts
to CSR), or a tuple of NumPy arrays ``(indptr, indices, data)`` or ``(indptr, indices, data,
n_cols)`` in CSR layout (row ``i`` stores columns ``indices[indptr[i]:indptr[i + 1]]``; without
``n_cols`` the columns are ``0 … max(indices)``). An explicit zero is a real zero cost; a stored
``+inf`` (``-inf`` when maximising) is forbidden like an absent pair. A pair stored twice is
refused (a cost matrix has one cost per pair; SciPy would add them up).

The canonical problem (n1 <= n2, minimised) is CSR with int64 indices and float64 or int64
costs, checked by the dense input's rules (NaN, -inf, the range rules).
"""
from __future__ import annotations

import time
import warnings

import numpy as np

from . import sparse_input
from ._validate import check_float_range, check_int_range
from .certificate import CHECK_RTOL
from .cpu import sparse as core
from .cpu.host import run_interruptibly
from .cpu.sparse import repair_duals
from .errors import InfeasibleError, user_stacklevel
from .locality import relabeled_sparse, restore_labels, sparse_order
from .solution import finish
from .sparse_input import SparseProblem, stored_pairs

#: whether a cost is stored pairs (``epslap.sparse_input``; importable from here too)
is_sparse = sparse_input.is_sparse

#: distance "not reached" of the integer search (above every path length, as in the dense solver)
INT_BIG = 2**62


def canonical_sparse(cost, maximize: bool) -> SparseProblem:
    """Check a sparse cost (module docstring) and orient it: n1 <= n2, minimised."""
    indptr, indices, data, n1, n2, _, _ = stored_pairs(cost)
    nnz = data.size
    rows = np.repeat(np.arange(n1, dtype=np.int64), np.diff(indptr))
    integral = data.dtype.kind in "biu"
    if integral:
        if nnz:
            check_int_range(int(data.min()), int(data.max()), (n1, n2))
        data = data.astype(np.int64)
        if maximize:
            data = -data
    else:
        data = data.astype(np.float64)
        if np.isnan(data).any():
            raise ValueError("cost contains NaN")
        if maximize:
            data = -data
        if np.isneginf(data).any():
            raise ValueError(f"cost contains {'+inf (maximize=True)' if maximize else '-inf'}")
        kept = np.isfinite(data)
        if not kept.all():  # a stored forbidden pair: as if absent
            data, indices, rows = data[kept], indices[kept], rows[kept]
        check_float_range(data, (n1, n2))
    transposed = n1 > n2
    if transposed:
        order = np.argsort(indices, kind="stable")
        rows, indices, data = indices[order], rows[order], data[order]
        n1, n2 = n2, n1
    indptr = np.zeros(n1 + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=n1), out=indptr[1:])
    return SparseProblem(indptr, np.ascontiguousarray(indices), np.ascontiguousarray(data), n1,
                         n2, transposed, integral)


def solve_sparse(cost, maximize: bool, t_start: float | None = None, auction_of=None):
    """Solve a sparse problem exactly (``epslap.solve`` with a sparse cost) on the CPU, or
    with ``auction_of``, a function of ``(integral)`` giving a device's auction phase
    (``epslap.gpu.candidates.device_auction``: every free row bidding at once over its stored
    pairs), the auction on that GPU and the exact pass on the host."""
    if t_start is None:
        t_start = time.perf_counter()
    given = canonical_sparse(cost, maximize)
    check_lines(given)
    check_matching(given)
    order = sparse_order(given)  # scattered labels: the graph's order (epslap.locality)
    prob = given if order is None else relabeled_sparse(given, order)
    auction = None if auction_of is None else auction_of(prob.integral)
    try:
        row_to_col, v, assigned, stats = solve_canonical(prob, auction=auction)
    except InfeasibleError:
        if order is None:
            raise
        solve_canonical(given, auction=auction)  # (its error names the lines as given)
        raise
    stats["relabeled"] = order is not None
    if auction is not None:
        stats["backend"] = "gpu"
    shift = True
    if not prob.integral and prob.n1:
        # the safety net for float prices that miss verify's per-entry rule at a tight pair of
        # tiny costs: mended from the optimal assignment by lowering prices (cpu.dual_repair's
        # rule); one sweep over the stored pairs when nothing needs it
        reads, lowered = repair_duals(prob.indptr, prob.indices, prob.data, v, row_to_col,
                                      CHECK_RTOL, np.int64(REPAIR_READS_PER_ROW * prob.n1 + 1000))
        if reads < 0:
            warnings.warn("epslap: the float duals of this sparse solve miss epslap.verify's "
                          "per-entry rule after a repair (the assignment is optimal up to "
                          "float rounding); please report the problem", RuntimeWarning,
                          stacklevel=user_stacklevel())
        if lowered:
            stats["dual_repair_prices"] = int(lowered)
        shift = False  # repair_duals left v in the reported position
    if order is not None:
        row_to_col, v, assigned = restore_labels(order, False, row_to_col, v, assigned)
    return finish((prob.n1, prob.n2), prob.transposed, prob.integral, row_to_col, v, assigned,
                  stats, maximize, t_start, shift=shift)


#: the float dual repair's budget of row reads per row (the safety net of ``solve_sparse``:
#: with the prices moved to max v = 0 before the exact pass no measured graph needs it; when
#: they were not, a 50-nearest-neighbour graph of 10^5 points needed 14 reads per row)
REPAIR_READS_PER_ROW = 64

#: the auction's ε: the first phase's is the candidates' mean spread per row (largest minus
#: smallest stored reduced cost); each later phase divides it by AUCTION_STEP; phases stop
#: below AUCTION_LAST times that spread over n (then the exact pass). Measured on k-nearest-
#: neighbour and random sparse graphs (benchmark page).
AUCTION_STEP = 4
AUCTION_LAST = 0.1
#: bids per stored pair after which the auction gives up (no complete assignment may exist):
#: the exact pass then solves the problem from scratch, and reports infeasibility if so
AUCTION_BIDS_PER_PAIR = 64


def solve_canonical(prob: SparseProblem, v=None, row_to_col=None, shift: bool = True,
                    auction=None):
    """Solve a canonical sparse problem: ``(row_to_col, v, assigned, stats)``.

    Cold (``row_to_col`` None): for a square problem, auction phases with ε-scaling set the
    prices (``cpu.sparse.auction``), then the exact pass assigns the rows they left off their
    exact minimum; a rectangular problem runs the exact pass alone (its free columns must end
    at the top price, which the auction does not keep).
    Warm (``row_to_col`` given, -1 for free rows): the exact pass alone from ``v`` and that
    assignment (``cpu.sparse.prepare`` frees the rows it no longer holds).
    ``shift``: end with max v = 0 (the reported position); without it the exact pass's prices
    are returned as they are (they only fell from ``v``, but for a rectangular problem's lifted
    free columns).
    ``auction``: the function that runs one auction phase (``cpu.sparse.auction``'s signature
    and result; ``epslap.gpu.candidates`` passes the device's)."""
    n1, n2 = prob.n1, prob.n2
    work = np.int64 if prob.integral else np.float64
    big = work(INT_BIG) if prob.integral else np.inf
    v = np.zeros(n2, work) if v is None else np.array(v, dtype=work)
    warm = row_to_col is not None
    row_to_col = np.full(n1, -1, np.int64) if not warm else np.array(row_to_col, np.int64)
    col_to_row = np.full(n2, -1, np.int64)
    assigned = np.zeros(n1, work)
    counts = np.zeros(4, np.int64)
    check_lines(prob)
    t0 = time.perf_counter()
    args = (prob.indptr, prob.indices, prob.data, v, row_to_col, col_to_row, assigned, big)
    epsilons: list = []
    bids = 0
    gave_up = False
    stop = np.zeros(1, np.int64)
    run = _interruptible(prob, stop)
    if not warm and n1 == n2 and n1 > 1:
        bids = _auction_phases(prob, v, row_to_col, col_to_row, big, epsilons,
                               auction or (lambda *a: run(core.auction, *a, stop)))
        if bids < 0:  # gave up: the exact pass from scratch decides
            gave_up = True
            v[:] = 0
            row_to_col[:] = -1
            col_to_row[:] = -1  # greedy and the searches read it: the auction's pairs are gone
            bids = 0
            epsilons.clear()
    time_auction = time.perf_counter() - t0
    if shift and n2 and epsilons:
        # the auction only lowers prices: move them to the reported position before the exact
        # pass, so that its rounding is at the scale the certificate judges (after the pass a
        # shift rounds u and v by units of the auction's larger prices)
        v -= v.max()
    freed = core.prepare(*args) if warm or epsilons else 0
    greedy_rows = core.greedy(*args)
    status = run(core.augment, *args, counts, stop)
    if status != core.SPARSE_OK:
        _infeasible(prob, status, "has no augmenting path")
    epsilons.append(0.0)
    if n2 and shift:  # the reported position (max v = 0) before anything is computed from v: a
        v -= v.max()  # shift afterwards would round u and v apart from the pairs checked on
    stats = {"backend": "cpu", "method": "sparse", "edges": int(prob.data.size),
             "auction_bids": int(bids), "auction_gave_up": gave_up, "rows_freed": int(freed),
             "greedy_rows": int(greedy_rows), "augmentations": int(counts[0]),
             "columns_settled": int(counts[1]), "rows_evaluated": int(counts[2]),
             "pairs_relaxed": int(counts[3]), "passes": len(epsilons), "epsilons": epsilons,
             "time_auction_s": time_auction,
             "time_estimate_s": 0.0, "time_solve_s": time.perf_counter() - t0,
             "compile_s": 0.0}
    return row_to_col, v, assigned, stats


#: stored pairs from which the sparse solve's long kernels (an auction phase, the exact pass)
#: run on a worker thread that Ctrl-C stops (below, a call is too short to be worth the thread)
INTERRUPTIBLE_FROM = 1 << 20


def _interruptible(prob: SparseProblem, stop: np.ndarray):
    """``run(kernel, *args)``: the kernel's result; for a problem of INTERRUPTIBLE_FROM stored
    pairs or more, on a worker thread (``cpu.host.run_interruptibly``): Ctrl-C sets ``stop[0]``
    (the kernel's stop flag, the last of ``args``), the kernel ends at its next look at it, and
    KeyboardInterrupt is raised then."""
    if prob.data.size < INTERRUPTIBLE_FROM:
        return lambda kernel, *args: kernel(*args)
    return lambda kernel, *args: run_interruptibly(lambda: kernel(*args), stop)


def kernel_table(integral: bool) -> list:
    """The sparse solve's kernels with arguments of its types (``cpu.host.compile_kernels``
    compiles them, with a running clock where asked, before a solve that would otherwise
    compile them silently)."""
    work = np.int64 if integral else np.float64
    big = work(INT_BIG) if integral else np.inf
    one = np.zeros(1, np.int64)
    args = (np.zeros(2, np.int64), one, np.zeros(1, work), np.zeros(1, work), one, one.copy(),
            np.zeros(1, work), big)
    return [(core.prepare, args), (core.greedy, args),
            (core.augment, args + (np.zeros(4, np.int64), one.copy())),
            (core.auction, args[:6] + (work(1), work(1), np.int64(1), big, one.copy()))]


def _auction_phases(prob: SparseProblem, v, row_to_col, col_to_row, big, epsilons,
                    auction) -> int:
    """The auction's ε-phases (see AUCTION_STEP): the total bids, or -1 if it gave up."""
    n = prob.n1
    red = prob.data - v[prob.indices]
    spread = float(np.maximum.reduceat(red, prob.indptr[:-1]).sum()
                   - np.minimum.reduceat(red, prob.indptr[:-1]).sum()) / n
    if not spread > 0:
        return 0
    work = v.dtype.type
    eps, last = spread, AUCTION_LAST * spread / n
    if prob.integral:
        eps, last = float(max(1, int(eps))), 1.0
    jump = work(max(spread, 1.0) * 4 if prob.integral else spread * 4)
    limit = np.int64(AUCTION_BIDS_PER_PAIR * (prob.data.size + n))
    total = 0
    while True:
        row_to_col[:] = -1
        col_to_row[:] = -1
        b = auction(prob.indptr, prob.indices, prob.data, v, row_to_col, col_to_row,
                    work(eps), jump, limit, big)
        if b < 0:
            return -1
        total += b
        epsilons.append(eps)
        if eps <= last:
            return total
        eps = max(eps / AUCTION_STEP, last)
        if prob.integral:
            eps = float(max(1, int(eps)))


def check_lines(prob: SparseProblem) -> None:
    """InfeasibleError if a row stores no pair, or, square, a column."""
    empty = np.flatnonzero(np.diff(prob.indptr) == 0)
    if empty.size:
        _infeasible(prob, int(empty[0]), "stores no pair")
    if prob.n1 == prob.n2 and prob.n1:  # square: every column is needed too
        unused = np.flatnonzero(np.bincount(prob.indices, minlength=prob.n2) == 0)
        if unused.size:
            side = "row" if prob.transposed else "column"
            raise InfeasibleError(f"cost matrix is infeasible: no complete assignment over the "
                                  f"stored pairs ({side} {int(unused[0])} stores no pair)")


def check_matching(prob: SparseProblem) -> None:
    """InfeasibleError naming a set of rows that store pairs in fewer columns than they are
    (Hall's condition), where no matching covers every row; a no-op without SciPy.

    Why before the solve: a violation that no single line shows (k rows sharing k - 1 columns)
    leaves the auction bidding until its budget runs out (n = 2000, 300 pairs a row: 17 s),
    where a maximum matching (Hopcroft-Karp, ``scipy.sparse.csgraph``) settles it in well under
    1 % of a solve's time (10^6 rows, 10 pairs each: 0.09 s)."""
    try:
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import maximum_bipartite_matching
    except ImportError:  # the solve still decides, only later
        return
    n1, n2 = prob.n1, prob.n2
    if not n1:
        return
    # the pattern alone (ones): whatever the costs, a stored pair is an edge
    pattern = csr_matrix((np.ones(prob.indices.size, np.int8), prob.indices, prob.indptr),
                         shape=(n1, n2))
    row_match = maximum_bipartite_matching(pattern, perm_type="column")
    unmatched = np.flatnonzero(row_match < 0)
    if not unmatched.size:
        return
    col_match = np.full(n2, -1, np.int64)
    held = row_match >= 0
    col_match[row_match[held]] = np.flatnonzero(held)
    # the rows an alternating path reaches from an unmatched row: every column they store is
    # matched (a maximum matching has no augmenting path), to one of them, so they are one more
    # than their columns
    start = int(unmatched[0])
    seen_rows = np.zeros(n1, bool)
    seen_cols = np.zeros(n2, bool)
    seen_rows[start] = True
    frontier = np.array([start])
    while frontier.size:
        starts = prob.indptr[frontier]
        counts = prob.indptr[frontier + 1] - starts
        cols = np.unique(prob.indices[np.repeat(starts, counts) + _ranks(counts)])
        cols = cols[~seen_cols[cols]]
        seen_cols[cols] = True
        rows = col_match[cols]
        frontier = rows[~seen_rows[rows]]
        seen_rows[frontier] = True
    k = int(seen_rows.sum())
    mine, theirs = ("column", "row") if prob.transposed else ("row", "column")
    raise InfeasibleError(f"cost matrix is infeasible: no complete assignment over the stored "
                          f"pairs ({k} {mine}s, among them {mine} {start}, store pairs in only "
                          f"{int(seen_cols.sum())} {theirs}s)")


def _ranks(counts: np.ndarray) -> np.ndarray:
    """0 .. c - 1 for each c of ``counts``, concatenated."""
    total = int(counts.sum())
    firsts = np.repeat(np.cumsum(counts) - counts, counts)
    return np.arange(total) - firsts


def _infeasible(prob: SparseProblem, line: int, why: str):
    side = "column" if prob.transposed else "row"
    raise InfeasibleError(f"cost matrix is infeasible: no complete assignment over the stored "
                          f"pairs ({side} {line} {why})")
