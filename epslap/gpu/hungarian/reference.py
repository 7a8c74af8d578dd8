r"""CPU reference of the GPU Hungarian kernel (``hungarian.cu``): the same steps, data and tests.

This module is the executable specification of the kernel: every phase below has a counterpart
in ``hungarian.cu`` with the same name, the same arrays and the same comparisons, so the logic,
the tolerance design and the padding can be tested on a machine without a GPU. The concurrency
of the kernel is emulated adversarially:

* the rows are split into ``n_blocks`` contiguous ranges; each "block" owns the compressed zero
  list of its rows (Lopes et al. 2019, per-block lists; Kawtikwar et al., per-block counters);
* the order in which zeros are appended and processed is random (atomics on a block counter);
* in the alternating-path search (step 4) every read of a cover flag returns, at random, the
  current value or the value at the start of the round (a stale read of another thread's
  write; each flag changes at most once per round, so these are all the values a read can see);
* the forward (5a) and backward (5b) path walks are interleaved step by step at random.

References: P. A. C. Lopes et al., "Fast block distributed CUDA implementation of the Hungarian
algorithm", JPDC 130 (2019), doi:10.1016/j.jpdc.2019.03.014 (steps 1–6, S1–S5, steps 5a/5b);
S. Kawtikwar et al., "Improvements to the Hungarian LAP solver" (per-block counters, dual
update fused with compression, one cooperative kernel); J. Munkres, "Algorithms for the
assignment and transportation problems", J. SIAM 5(1), 1957.
"""
from __future__ import annotations

import numpy as np

from ..._status import STATUS_BROKEN_PATH, STATUS_INFEASIBLE, STATUS_ITERATION_LIMIT, STATUS_OK
from .plan import numeric_plan


class _State:
    """The kernel's device arrays (same names as in ``hungarian.cu``)."""

    def __init__(self, c, n1, n, n_blocks, tol, rng, stale):
        self.c, self.n1, self.n, self.tol, self.rng, self.stale = c, n1, n, tol, rng, stale
        self.n_blocks = n_blocks
        self.rows_per_block = -(-n // n_blocks)
        self.u = np.zeros(n)
        self.v = np.zeros(n)
        self.star_col = np.full(n, -1, np.int64)
        self.star_row = np.full(n, -1, np.int64)
        self.prime_col = np.full(n, -1, np.int64)
        self.green_row = np.full(n, -1, np.int64)
        self.cover_row = np.zeros(n, np.uint8)
        self.cover_col = np.zeros(n, np.uint8)
        self.zeros = [[] for _ in range(n_blocks)]   # local index (i - i0) * n + j
        self.stats = {"phases": 0, "dual_updates": 0, "search_rounds": 0, "paths_per_phase": []}

    def rows(self, b):
        i0 = b * self.rows_per_block
        return range(min(i0, self.n), min(i0 + self.rows_per_block, self.n))

    def cost(self, i, j):
        """Padded cost: virtual rows ``i >= n1`` cost 0 everywhere."""
        return self.c[i, j] if i < self.n1 else 0.0

    def slack_row(self, i):
        row = self.c[i] if i < self.n1 else np.zeros(self.n)
        return row - self.u[i] - self.v

    def append(self, b, i, js):
        i0 = b * self.rows_per_block
        self.zeros[b].extend(int((i - i0) * self.n + j) for j in js)

    def shuffle(self, b):
        self.rng.shuffle(self.zeros[b])


def solve_reference(c, *, n_blocks: int = 3, seed: int = 0, stale: float = 0.3,
                    integral: bool | None = None):
    r"""Solve the canonical problem (``n1 <= n2``, +inf = forbidden) like the kernel does.

    Parameters
    ----------
    c : ndarray, shape (n1, n2), n1 <= n2
        Canonical cost matrix (minimised).
    n_blocks : int
        Emulated number of thread blocks (row ranges with their own zero lists).
    seed : int
        Seed of the emulated scheduling (orders, stale reads, interleavings).
    stale : float
        Probability that a cover flag read in step 4 returns the round-start value.
    integral : bool, optional
        Integer input dtype (default: from ``c.dtype``).

    Returns
    -------
    status : int
        ``STATUS_*`` of ``epslap._status``.
    row_to_col : ndarray of int64, shape (n1,)
    v : ndarray of float64, shape (n2,)
        Column duals; :math:`c_{ij} - u_i - v_j \ge 0` (up to the tolerance).
    stats : dict
    plan : dict
        The numeric plan (tolerances, storage dtype) of ``numeric_plan``.
    """
    c = np.asarray(c)
    n1, n = c.shape
    if integral is None:
        integral = c.dtype.kind in "biu"
    plan = numeric_plan(np, c, integral)
    cd = c.astype(plan["storage"]).astype(np.float64)  # what the kernel reads
    st = _State(cd, n1, n, n_blocks, plan["tol"], np.random.default_rng(seed), stale)
    status = _run(st)
    return status, st.star_col[:n1].copy(), st.v.copy(), st.stats, plan


def _run(st: _State) -> int:
    n, tol = st.n, st.tol
    # ---- step 1: row reduction, then column reduction (kernel: init_duals) ----
    for i in range(n):
        st.u[i] = min(st.c[i].min(), np.inf) if i < st.n1 else 0.0
    if not np.all(np.isfinite(st.u)):
        return STATUS_INFEASIBLE
    for j in range(n):
        col = st.c[:, j] - st.u[:st.n1]
        if st.n1 < n:
            col = np.append(col, 0.0)  # virtual rows: 0 - u_i with u_i = 0
        st.v[j] = col.min()
    if not np.all(np.isfinite(st.v)):
        return STATUS_INFEASIBLE
    # ---- compress: per-block zero lists (kernel: build_zeros) ----
    for b in range(st.n_blocks):
        for i in st.rows(b):
            st.append(b, i, np.nonzero(st.slack_row(i) <= tol)[0])
        st.shuffle(b)
    # ---- step 2: greedy starring over each block's list (kernel: greedy_star) ----
    for b in st.rng.permutation(st.n_blocks):
        for z in st.zeros[b]:
            i, j = _decode(st, b, z)
            if st.star_col[i] == -1 and st.star_row[j] == -1:
                st.star_col[i], st.star_row[j] = j, i
    max_dual_updates = 4 * n * n + 16
    phase = 0
    while True:
        # ---- step 3: reset the search, cover starred columns, compact the lists ----
        st.prime_col[:] = -1
        st.green_row[:] = -1
        st.cover_row[:] = 0
        st.cover_col[:] = st.star_row != -1
        if phase > 0:
            for b in range(st.n_blocks):
                keep = []
                for z in st.zeros[b]:
                    i, j = _decode(st, b, z)
                    if st.cost(i, j) - st.u[i] - st.v[j] <= tol:
                        keep.append(z)
                st.zeros[b] = keep
        if int((st.star_col != -1).sum()) == n:
            break
        st.stats["phases"] += 1
        # ---- steps 4 and 6 until an augmenting path is found ----
        while True:
            found = _step4(st)
            if found:
                break
            status = _step6(st)
            if status != STATUS_OK:
                return status
            if st.stats["dual_updates"] > max_dual_updates:
                return STATUS_ITERATION_LIMIT
        status, paths = _step5(st)
        if status != STATUS_OK:
            return status
        st.stats["paths_per_phase"].append(paths)
        phase += 1
    return STATUS_OK


def _decode(st, b, z):
    return b * st.rows_per_block + z // st.n, z % st.n


def _step4(st: _State) -> bool:
    """Block-distributed alternating-path search (kernel: search rounds).

    A round: every block passes over its zero list until a pass primes nothing; then a grid
    barrier. A zero (i, j) whose column, then row, read uncovered is primed by a compare-and-swap
    ``prime_col[i]: -1 -> j`` (first prime of a row wins, S1); the winner covers row i and
    uncovers the column of row i's star, or, when row i has no star, signals an augmenting path.
    Rounds repeat while some block uncovered a column; a round in which nobody did read only
    current values (no cover changed since the barrier), so every zero is then covered or in a
    primed row. Unlike Lopes et al., primed rows without a star do not stop the search: it runs
    until nothing more is reachable, so one phase yields every disjoint augmenting path.
    Returns True when some row without a star was primed.
    """
    goto5 = False
    while True:
        st.stats["search_rounds"] += 1
        snap_row, snap_col = st.cover_row.copy(), st.cover_col.copy()
        progress = False
        for b in st.rng.permutation(st.n_blocks):
            while True:
                found = False
                order = st.rng.permutation(len(st.zeros[b]))
                for k in order:
                    i, j = _decode(st, b, st.zeros[b][k])
                    col_cov = snap_col[j] if st.rng.random() < st.stale else st.cover_col[j]
                    if col_cov:
                        continue
                    row_cov = snap_row[i] if st.rng.random() < st.stale else st.cover_row[i]
                    if row_cov:
                        continue
                    if st.prime_col[i] != -1:      # compare-and-swap lost
                        continue
                    st.prime_col[i] = j
                    s = st.star_col[i]
                    if s == -1:
                        goto5 = True
                    else:
                        found = True
                        st.cover_row[i] = 1
                        st.cover_col[s] = 0        # after a fence: the row cover first (S3)
                        progress = True
                if not found:
                    break
        if not progress:
            return goto5


def _step6(st: _State) -> int:
    """Dual update fused with the compression of the new zeros (kernel: dual_update).

    :math:`m = \\min s_{ij}` over uncovered rows and columns; uncovered rows get
    :math:`u_i \\mathrel{+}= m`, covered columns :math:`v_j \\mathrel{-}= m` (Munkres step 6:
    slack -m where both lines are uncovered, +m where both are covered). Zeros can only appear
    where both lines are uncovered; they are appended to the owning block's list in the same
    pass. ``m = inf`` means no finite edge leaves the search: no perfect matching.
    """
    n, tol = st.n, st.tol
    rows = np.nonzero(st.cover_row == 0)[0]
    cols = np.nonzero(st.cover_col == 0)[0]
    m = np.inf
    for i in rows:
        s = st.slack_row(i)[cols]
        if s.size:
            m = min(m, float(s.min()))
    if not np.isfinite(m):
        return STATUS_INFEASIBLE
    m = max(m, 0.0)
    for b in range(st.n_blocks):
        for i in st.rows(b):
            if st.cover_row[i]:
                continue
            row = st.c[i] if i < st.n1 else np.zeros(n)
            s = row[cols] - (st.u[i] + m) - st.v[cols]
            st.append(b, i, cols[s <= tol])
            st.u[i] += m
    st.v[st.cover_col == 1] -= m
    st.stats["dual_updates"] += 1
    return STATUS_OK


def _step5(st: _State):
    """Apply every augmenting path found (kernel: steps 5a and 5b, Lopes et al. §4.5).

    5a: from every primed row without a star, walk forward (prime, then the star of that
    column, ...) marking ``green_row[col] = row``; walks that join overwrite each other's
    greens (last write wins). 5b: from every column with a green and no star, walk backward
    (green row, then that row's star column) flipping primes to stars. Greens form injective
    maps, so backward walks never meet and are applied in parallel.
    """
    n = st.n
    walkers = [[i, int(st.prime_col[i]), 0] for i in range(n)
               if st.prime_col[i] != -1 and st.star_col[i] == -1]
    for w in walkers:
        st.green_row[w[1]] = w[0]
    active = list(range(len(walkers)))
    while active:  # interleave the forward walks one step at a time
        k = active[st.rng.integers(len(active))]
        w = walkers[k]
        r2 = st.star_row[w[1]]
        if r2 == -1:
            active.remove(k)
            continue
        c2 = st.prime_col[r2]
        w[2] += 1
        if c2 == -1 or w[2] > n:
            return STATUS_BROKEN_PATH, 0
        st.green_row[c2] = r2
        w[1] = c2
    ends = [j for j in range(n) if st.green_row[j] != -1 and st.star_row[j] == -1]
    back = [[j, int(st.green_row[j]), 0] for j in ends]   # [column, row, steps]
    active = list(range(len(back)))
    while active:
        k = active[st.rng.integers(len(active))]
        w = back[k]
        j, r = w[0], w[1]
        prev = st.star_col[r]
        st.star_col[r] = j
        st.star_row[j] = r
        w[2] += 1
        if prev == -1:
            active.remove(k)
            continue
        nr = st.green_row[prev]
        if nr == -1 or w[2] > n:
            return STATUS_BROKEN_PATH, 0
        w[0], w[1] = prev, nr
    return STATUS_OK, len(ends)
