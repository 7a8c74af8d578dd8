"""Candidates, then certify: a sparse solve over each row's cheapest columns, proven optimal for
the full problem by one streaming pass over every cost.

For most costs solved at scale (point sets, pixels, random matrices) each row's optimal partner
lies among its few cheapest columns. The method (docs/algorithm.md, "Candidates, then certify"):

1. **Candidates**: one pass over every row keeps its ``k`` smallest ``c_ij - v_j`` (``v = 0``),
   plus the pair ``(i, i)`` of the identity matching, so that the sparse problem has a complete
   assignment whenever the diagonal is finite.
2. **Sparse solve** (``epslap.sparse.solve_canonical``): exact over the candidate pairs, giving
   an assignment σ and prices v with ``c_ij - v_j >= u_i = c_iσ(i) - v_σ(i)`` on every stored
   pair (and the free columns of a rectangular problem at the top price).
3. **Certify**: one pass over every row computes ``min_j (c_ij - v_j)`` over *all* columns. A
   row whose minimum is not below ``u_i`` is clean. If every row is clean, (u, v) is a dual
   certificate of the full problem: σ is optimal, whatever the candidates were.
4. Otherwise each failing row adds its (at most ``k``) most violating columns, and the sparse
   problem is solved again from the assignment and prices it had (the exact pass re-augments
   only the rows the new pairs undercut). Every round adds a pair, so the loop ends; after
   ``MAX_ROUNDS`` rounds, or where the diagonal is forbidden and the candidates hold no
   complete assignment, the caller solves the problem with the dense method instead.

Exactness comes from the certificate pass, not from the candidates.
"""
from __future__ import annotations

import time

import numpy as np

from .certificate import RTOL
from ._validate import canonical_dense, check_float_range, check_int_range
from .errors import InfeasibleError
from .sparse import SparseProblem, solve_canonical

#: candidates per row by default
DEFAULT_K = 12
#: certificate rounds before the problem goes to the dense method
MAX_ROUNDS = 64
#: a float pair fails the certificate pass beyond this fraction of (|c| + |u| + |v|): a quarter
#: of ``epslap.verify``'s tolerance, which leaves room for the rounding of c - v itself
CERTIFY_REL = RTOL / 4
CAP = 12


def check_candidates(candidates) -> int | None:
    """``solve``'s ``candidates`` option as a count per row, ``None`` for the dense method;
    ``"auto"`` is resolved by the caller."""
    if candidates is False or candidates is None:
        return None
    if candidates is True:
        return DEFAULT_K
    if isinstance(candidates, (int, np.integer)) and not isinstance(candidates, (bool, np.bool_)) \
            and candidates >= 1:
        return int(candidates)
    raise ValueError(f"candidates must be 'auto', False, True or a count of columns per row "
                     f">= 1, got {candidates!r}")


class _Canonical:
    """The canonical problem (n1 <= n2, minimised) as compiled row access: ``src`` for
    ``get_row``, ``buf_dtype`` of its rows, the work dtype, and the host-side checks."""

    def __init__(self, cost, maximize: bool, threads):
        from costfns import CostSource
        from costfns.functions import FunctionSource
        from costfns.rows import ErasedState

        from ._sources import NegatedState
        from .cpu.solver import resolve_threads
        self.source = None
        if isinstance(cost, CostSource):
            n1, n2 = cost.shape
            self.shape = (n1, n2)
            self.transposed = n1 > n2
            source = cost.transpose() if self.transposed else cost
            raw = source.state()
            if maximize:
                raw = (raw._replace(negate=True) if isinstance(raw, ErasedState)
                       else NegatedState(raw))
            self.src, self.buf_dtype = raw, np.dtype(source.dtype)
            self.source = source
            if threads is None and isinstance(source, FunctionSource):
                threads = 1  # a user's function stays on the calling thread unless asked
        else:
            canon = canonical_dense(cost, maximize)
            self.src, self.buf_dtype = canon.matrix, canon.matrix.dtype
            self.transposed = canon.transposed
            self.shape = canon.matrix.shape[::-1] if canon.transposed else canon.matrix.shape
        self.n1, self.n2 = min(self.shape), max(self.shape)
        self.integral = self.buf_dtype.kind in "iu"
        self.work = np.dtype(np.int64 if self.integral else np.float64)
        self.threads = resolve_threads(threads, self.n2)

    def run(self, kernel, args, count=None):
        """``kernel(src, buf, *head, first, stride, n1, *tail)`` on every thread, ``args =
        (head, tail)``, each thread with its own row buffer (``first`` = its index)."""
        from ._sync import new_sync, run_workers
        head, tail = args
        nt = self.threads

        def args_of(tid):
            buf = np.empty(self.n2, self.buf_dtype)
            return (self.src, buf, *head, tid, nt, self.n1 if count is None else count, *tail)
        run_workers(kernel, args_of, nt, new_sync())
        if self.source is not None:
            from ._sources import raise_pending
            raise_pending(self.source)


def solve_candidates(cost, *, maximize: bool, k: int, threads, t_start: float):
    """Solve by candidates, then certify (module docstring): a :class:`Solution`, or ``None``
    where the method hands the problem to the dense method (the caller solves it then)."""
    from .cpu import candidates as passes
    from .solution import finish
    prob = _Canonical(cost, maximize, threads)
    n1, n2, work = prob.n1, prob.n2, prob.work
    v = np.zeros(n2, work)
    k = min(k, n2)
    t0 = time.perf_counter()
    cand_cols = np.zeros((n1, k), np.int64)
    cand_vals = np.zeros((n1, k), work)
    counts = np.zeros(n1, np.int64)
    diag = np.zeros(n1, work if prob.integral else np.float64)
    stats_t = np.zeros((prob.threads, 1))
    flags = np.zeros(prob.threads, np.int64)
    prob.run(passes.candidate_rows, ((v, k), (cand_cols, cand_vals, counts, diag, stats_t,
                                             flags)))
    _check_values(prob, flags, float(stats_t.max()), maximize)
    time_candidates = time.perf_counter() - t0
    sparse = _candidate_csr(n1, n2, cand_cols, cand_vals, counts, diag, prob.integral)
    diag_ok = bool(np.isfinite(diag).all()) if not prob.integral else True
    edges0 = int(sparse.data.size)
    rounds, added, streamed, row_to_col = 0, 0, n1, None
    solve_stats: list = []
    time_certify = 0.0
    check = np.arange(n1, dtype=np.int64)  # the rows the next certificate pass reads
    add_cols = np.zeros((n1, CAP), np.int64)
    add_vals = np.zeros((n1, CAP), work)
    add_counts = np.zeros(n1, np.int64)
    row_min = np.zeros(n1)
    rel = 0.0 if prob.integral else CERTIFY_REL

    def certify(rows):
        """The certificate pass over ``rows``; the rows that fail it."""
        nonlocal time_certify, rounds, streamed
        t1 = time.perf_counter()
        add_counts[rows] = 0
        prob.run(passes.certify_rows, ((v, u, CAP, rel, rows),
                                       (add_cols, add_vals, add_counts, row_min)),
                 count=rows.size)
        time_certify += time.perf_counter() - t1
        rounds += 1
        streamed += int(rows.size)
        return rows[add_counts[rows] > 0]

    while True:
        before = None if row_to_col is None else (v.copy(), u, row_to_col)
        try:
            row_to_col, v, assigned, st = solve_canonical(
                sparse, v=v, row_to_col=row_to_col, shift=False)
        except InfeasibleError:
            if diag_ok:
                raise  # the candidates hold a complete assignment: the stored pairs decide
            return None  # no complete assignment among the candidates: the dense method
        solve_stats.append(st)
        u = assigned - v[row_to_col]
        if before is not None:
            check = _rows_to_recheck(before, v, u, row_to_col, dirty)
        dirty = certify(check)
        if not dirty.size and v.size and v.max() != 0:
            # clean: now in the reported position (max v = 0, the canonical position of the
            # certificate's tolerances), certified once more over every row
            v = v - v.max()
            u = assigned - v[row_to_col]
            dirty = certify(np.arange(n1, dtype=np.int64))
        if not dirty.size:
            break
        if rounds >= MAX_ROUNDS:
            return None
        added += int(add_counts[dirty].sum())
        sparse = _merged(sparse, add_cols, add_vals, np.where(
            np.isin(np.arange(n1), dirty), add_counts, 0))
    stats = {"backend": "cpu", "method": "candidates", "candidates_per_row": k,
             "candidate_edges": edges0, "edges_added": added, "edges": int(sparse.data.size),
             "rounds": rounds, "rows_streamed": streamed,
             "rows_evaluated": streamed + sum(s["rows_evaluated"] for s in solve_stats),
             "augmentations": sum(s["augmentations"] for s in solve_stats),
             "passes": sum(s["passes"] for s in solve_stats),
             "epsilons": solve_stats[0]["epsilons"],
             "time_candidates_s": time_candidates, "time_certify_s": time_certify,
             "time_sparse_s": sum(s["time_solve_s"] for s in solve_stats),
             "time_estimate_s": time_candidates,
             "time_solve_s": time.perf_counter() - t0 - time_candidates,
             "compile_s": 0.0, "threads": prob.threads}
    # the prices as certified, in the reported position already
    return finish((n1, n2), prob.transposed, prob.integral, row_to_col, v, assigned, stats,
                  maximize, t_start, shift=False)


def _rows_to_recheck(before, v, u, row_to_col, dirty):
    """The rows a certificate pass must read again after a re-solve. A clean row stays clean
    while its dual and pair stay and no price rises (``c_ij - v_j`` only grows when v falls,
    also in rounded arithmetic); the exact pass lowers prices only, but a rectangular
    problem's freed columns are lifted to the top price: then every row is read again."""
    v_old, u_old, r2c_old = before
    if (v > v_old).any():
        return np.arange(u.size, dtype=np.int64)
    changed = (u != u_old) | (row_to_col != r2c_old)
    changed[dirty] = True
    return np.flatnonzero(changed).astype(np.int64)


def _check_values(prob: _Canonical, flags, biggest: float, maximize: bool) -> None:
    """The dense input's value errors for what the candidate pass read (a matrix was checked
    by ``canonical_dense`` already; a cost source is checked here)."""
    from .cpu.candidates import FLAG_NAN, FLAG_NEG_INF
    seen = int(np.bitwise_or.reduce(flags)) if flags.size else 0
    if seen & FLAG_NAN:
        raise ValueError("cost contains NaN")
    if seen & FLAG_NEG_INF:
        raise ValueError(f"cost contains {'+inf (maximize=True)' if maximize else '-inf'}")
    if prob.integral:
        check_int_range(-int(biggest), int(biggest), prob.shape)
    else:
        check_float_range(biggest, prob.shape)


def _candidate_csr(n1, n2, cand_cols, cand_vals, counts, diag, integral) -> SparseProblem:
    """The candidate pairs, with (i, i) added where finite and not among them."""
    k = cand_cols.shape[1]
    kept = np.arange(k)[None, :] < counts[:, None]
    has_diag = ((cand_cols == np.arange(n1)[:, None]) & kept).any(axis=1)
    need = ~has_diag & (np.isfinite(diag) if not integral else True)
    add_cols = np.arange(n1, dtype=np.int64)[:, None]
    add_vals = diag.astype(cand_vals.dtype)[:, None]
    base = SparseProblem(np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
                         cand_cols[kept], cand_vals[kept], n1, n2, False, integral)
    return _merged(base, add_cols, add_vals, need.astype(np.int64))


def _merged(prob: SparseProblem, add_cols, add_vals, add_counts) -> SparseProblem:
    """``prob`` with row i's pairs ``add_cols[i, :add_counts[i]]`` appended (pairs it does not
    hold: the certificate's violators, the identity pairs not among the candidates)."""
    lens = np.diff(prob.indptr)
    indptr = np.zeros(prob.n1 + 1, np.int64)
    np.cumsum(lens + add_counts, out=indptr[1:])
    total = int(indptr[-1])
    indices = np.empty(total, np.int64)
    data = np.empty(total, prob.data.dtype)
    old_at = indptr[:-1, None] + np.arange(lens.max(initial=0))[None, :]
    old_mask = np.arange(lens.max(initial=0))[None, :] < lens[:, None]
    src_at = prob.indptr[:-1, None] + np.arange(lens.max(initial=0))[None, :]
    indices[old_at[old_mask]] = prob.indices[src_at[old_mask]]
    data[old_at[old_mask]] = prob.data[src_at[old_mask]]
    cap = add_cols.shape[1]
    new_at = (indptr[:-1] + lens)[:, None] + np.arange(cap)[None, :]
    new_mask = np.arange(cap)[None, :] < add_counts[:, None]
    indices[new_at[new_mask]] = add_cols[new_mask]
    data[new_at[new_mask]] = add_vals[new_mask]
    return prob._replace(indptr=indptr, indices=indices, data=data)

