"""Assignments that may leave rows and columns unmatched at a price: ``cost_limit``.

With a finite limit ``L`` a row or a column may stay unmatched, each at the price ``L / 2``
(lap's and lapcpp's convention): the solve minimises

    Σ over matched pairs c_ij  +  (unmatched rows + unmatched columns) · L / 2,

so a pair is worth matching when its cost is below ``L`` (above it when maximising). The
reported ``cost`` is the matched pairs' sum alone, as those libraries report it.

How it is solved: with the shorter side as rows (n1 <= n2), each row gets a second choice,
any of n1 *slack* columns at cost ``L``:

    E = [ c | L L … L ]     (n1 × (n2 + n1))

Every row of E is matched once, so E's objective is the matched pairs' cost plus ``L`` per row
sent to a slack column; with K real matches that is the objective above minus the constant
(n2 − n1) · L / 2. E is a rectangular problem, solved exactly by every backend (docs/algorithm.md
§10; no entry is rounded: E holds the costs as given and ``L``).

Duals: E's certificate (``u'``, ``v'``; v' <= 0, 0 on free columns) gives the duals of the limit
problem's linear program, ``u_i + v_j <= c_ij`` with every ``u_i, v_j <= L/2`` and ``= L/2`` on
unmatched lines: ``v_j = v'_j + L/2`` on real columns, ``u_i = u'_i − L/2`` on matched rows and
``L/2`` on unmatched ones (their u'_i is at least L, which keeps them feasible). While one row is
matched a slack column is free, so every u'_i <= L. :func:`epslap.verify` checks them with
``cost_limit=L``.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from ._validate import as_matrix
from .solution import Solution


def check_cost_limit(cost_limit, maximize: bool):
    """The limit as a finite number, or None for none (None, or +inf — -inf when maximising —
    means every line of the shorter side is matched)."""
    if cost_limit is None:
        return None
    if isinstance(cost_limit, (bool, np.bool_)) or not isinstance(cost_limit, numbers.Real):
        raise TypeError(f"cost_limit must be a real number or None, got {cost_limit!r}")
    value = cost_limit
    if isinstance(value, np.generic):
        value = value.item()
    if math.isnan(value):
        raise ValueError("cost_limit is NaN")
    if math.isinf(value):
        if (value > 0) != bool(maximize):
            return None
        raise ValueError(f"cost_limit={value} would leave every pair unmatched; give a finite "
                         f"limit, or {'-' if maximize else '+'}inf (or None) for none")
    return value


def _is_gpu_array(cost) -> bool:
    return hasattr(cost, "__cuda_array_interface__") and not isinstance(cost, np.ndarray)


def _slack_dtype(dtype: np.dtype, limit):
    """E's dtype: the matrix's for an integer matrix and an integral limit, else float64 (holds
    every float32 and float64 cost and the limit exactly)."""
    if dtype.kind in "biu" and float(limit).is_integer():
        return np.dtype(np.int64)
    return np.dtype(np.float64)


def extended(cost, limit):
    """``(E, transposed)`` for the matrix ``cost`` (NumPy or CuPy)."""
    xp = np
    if _is_gpu_array(cost):
        import cupy as xp  # the input stays on the device
    if xp is np:
        c = as_matrix(cost)  # solve's checks and messages (dtype, shape)
    else:
        c = cost
        if c.ndim != 2:
            raise ValueError(f"expected a matrix (2-D array), got a {c.ndim} array")
        if c.dtype.kind not in "biuf":
            raise TypeError(f"Cannot cast array data from {c.dtype!r} to dtype('float64') "
                            "according to the rule 'safe'")
    transposed = c.shape[0] > c.shape[1]
    if transposed:
        c = c.T
    n1, n2 = c.shape
    dtype = _slack_dtype(np.dtype(c.dtype), limit)
    e = xp.empty((n1, n2 + n1), dtype=dtype)
    e[:, :n2] = c
    e[:, n2:] = limit
    return e, transposed


def _xp(a):
    """The array module of ``a`` (NumPy, or CuPy for a device array)."""
    if _is_gpu_array(a):
        import cupy
        return cupy
    return np


def limit_result(rows, cols, u_e, v_e, shape, transposed: bool, limit, cost):
    """``(row_ind, col_ind, cost, u, v)`` of the limit problem (module docstring) from the
    solution of E: its pairs ``rows``/``cols``, duals ``u_e``/``v_e``; ``shape`` and ``cost``
    are the caller's matrix (NumPy or CuPy)."""
    xp = _xp(cols)
    n1, n2 = (shape[1], shape[0]) if transposed else shape  # oriented: n1 <= n2
    real = cols < n2
    r, k = rows[real], cols[real]
    half = limit / 2
    integral_duals = u_e.dtype.kind == "i" and float(half).is_integer()
    work = np.int64 if integral_duals else np.float64
    half = work(half)
    u = xp.full(n1, half, dtype=work)
    v = v_e[:n2].astype(work) + half
    if integral_duals:
        u[r] = u_e.astype(work)[r] - half
    else:  # from the shifted v, not u' - L/2: prices solved at the scale of L would leave the
        # assigned pairs of small costs a slack of an ulp of L, beyond their own terms' rule
        oriented = cost.T if transposed else cost
        paired = oriented[r, k]
        if xp is np and _is_gpu_array(paired):  # a CuPy matrix, a result on the host
            paired = paired.get()
        u[r] = xp.asarray(paired).astype(work) - v[k]
    if transposed:
        order = xp.argsort(k)
        r, k = k[order], r[order]
        u, v = v, u
    picked = cost[r, k]
    integral = picked.dtype.kind in "biu"
    total = picked.sum(dtype=np.int64 if integral else np.float64)
    value = int(total) if integral else float(total)
    return r.astype(np.int64), k.astype(np.int64), value, u, v


def from_extended(sol: Solution, shape, transposed: bool, limit, cost) -> Solution:
    """The limit problem's solution (see the module docstring) from E's ``sol``."""
    r, k, value, u, v = limit_result(np.asarray(sol.row_ind), np.asarray(sol.col_ind),
                                     np.asarray(sol.u), np.asarray(sol.v), shape, transposed,
                                     limit, cost if _is_gpu_array(cost) else np.asarray(cost))
    stats = dict(sol.stats)
    rows_total, cols_total = shape
    stats.update(cost_limit=limit, matched=int(r.size), unmatched_rows=int(rows_total - r.size),
                 unmatched_cols=int(cols_total - r.size), n_rows=int(rows_total),
                 n_cols=int(cols_total), transposed=transposed)
    return Solution(row_ind=r, col_ind=k, cost=value, u=u, v=v, stats=stats)


def solve_batch_with_limit(costs, limit, solve_batch_extended):
    """:func:`epslap.solve_batch` with the finite ``limit``: every member extended as in
    :func:`extended`, solved by ``solve_batch_extended`` (the caller's backend and options) in
    one batch, and mapped back. ``row_ind``/``col_ind`` are lists (the members match different
    numbers of pairs); ``u``, ``v`` arrays for a 3-D input, lists for a sequence. Returns
    the fields of a ``BatchSolution``."""
    stacked = not isinstance(costs, (list, tuple))
    if stacked and not hasattr(costs, "ndim"):
        costs = np.asarray(costs)
    if stacked and costs.ndim != 3:
        raise ValueError(f"costs must be a 3-D array (B, n1, n2) or a sequence of matrices, got "
                         f"{getattr(costs, 'ndim', 0)} dimensions")
    mats = [c if _is_gpu_array(c) else np.asarray(c) for c in costs]
    pairs = []
    for k, c in enumerate(mats):
        try:
            pairs.append(extended(c, limit))
        except (ValueError, TypeError) as exc:
            raise type(exc)(f"problem {k}: {exc}") from None
    es = [e for e, _ in pairs]
    if stacked and es:
        es = _xp(es[0]).stack(es)
    sol = solve_batch_extended(es)
    out = [limit_result(sol.row_ind[k], sol.col_ind[k], sol.u[k], sol.v[k], tuple(mats[k].shape),
                        pairs[k][1], limit, mats[k]) for k in range(len(mats))]
    row_ind = [o[0] for o in out]
    col_ind = [o[1] for o in out]
    u = [o[3] for o in out]
    v = [o[4] for o in out]
    if stacked and out:
        xp = _xp(u[0])
        u, v = xp.stack(u), xp.stack(v)
    values = [o[2] for o in out]
    cost = np.array(values, dtype=np.int64 if values and all(isinstance(x, int) for x in values)
                    else np.float64)
    matched = np.array([len(r) for r in row_ind], np.int64)
    shapes = np.array([tuple(m.shape) for m in mats], np.int64).reshape(-1, 2)
    stats = dict(sol.stats, cost_limit=limit, matched=matched,
                 unmatched_rows=shapes[:, 0] - matched, unmatched_cols=shapes[:, 1] - matched)
    return row_ind, col_ind, cost, u, v, stats


def solve_with_limit(cost, limit, solve_extended) -> Solution:
    """Solve the matrix ``cost`` with the finite ``limit``; ``solve_extended(E)`` solves E (the
    caller's backend and options)."""
    if not hasattr(cost, "shape") or not hasattr(cost, "dtype") or hasattr(cost, "rows"):
        if hasattr(cost, "rows"):  # a costfns.CostSource
            raise ValueError("cost_limit applies to a matrix (NumPy or CuPy), not to a cost "
                             "source")
        cost = np.asarray(cost)
    e, transposed = extended(cost, limit)
    sol = solve_extended(e)
    return from_extended(sol, tuple(cost.shape), transposed, limit, cost)
