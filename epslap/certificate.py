"""An optimality certificate any user can check: LP duality for the assignment problem.

For ``n1 <= n2`` the LP is ``min Σ c_ij x_ij`` s.t. every row assigned once, every column at most
once; its dual is ``max Σ u_i + Σ v_j`` s.t. ``u_i + v_j <= c_ij`` and ``v_j <= 0``. Any feasible
dual bounds the optimum from below (weak duality), so a dual-feasible ``(u, v)`` with
``Σ c - (Σ u + Σ v) = 0`` proves the assignment optimal.
"""
from __future__ import annotations

import numpy as np

_CHUNK = 1 << 22  # matrix entries checked per block: bounded extra memory for big matrices


def verify(cost, row_ind, col_ind, u, v, *, maximize: bool = False) -> dict:
    """Check an assignment and its duals against the cost matrix.

    Returns a dict with ``primal`` (the assignment's cost), ``dual`` (``Σu + Σv``), ``gap``
    (primal − dual, ≥ 0 up to rounding when the duals are feasible), ``max_violation`` (largest
    dual infeasibility: ``u_i + v_j - c_ij`` over finite pairs, and the longer side's positive
    duals), ``max_assigned_slack`` (largest ``|c - u - v|`` on assigned pairs), ``complete``
    (every line of the shorter side assigned exactly once) and ``optimal`` (all of it within a
    tolerance of 1e-9 relative to the largest |cost| involved).
    """
    if hasattr(cost, "rows") and hasattr(cost, "shape") and not isinstance(cost, np.ndarray):
        shape, block_of = tuple(cost.shape), cost.rows  # a cost source: stream its rows
    else:
        c = np.asarray(cost)
        if c.ndim != 2:
            raise ValueError(f"cost must be a 2-D matrix, got {c.ndim} dimensions")
        shape, block_of = c.shape, (lambda a, b: c[a:b])
    sign = -1.0 if maximize else 1.0
    r = np.asarray(row_ind, dtype=np.int64)
    k = np.asarray(col_ind, dtype=np.int64)
    u = sign * np.asarray(u, dtype=np.float64)
    v = sign * np.asarray(v, dtype=np.float64)
    n1, n2 = shape
    if u.shape != (n1,) or v.shape != (n2,):
        raise ValueError(f"u must have shape ({n1},) and v shape ({n2},); got {u.shape} and {v.shape}")
    complete = (len(r) == min(n1, n2) and len(np.unique(r)) == len(r)
                and len(np.unique(k)) == len(k))
    picked = np.zeros(len(r))
    worst = 0.0
    scale = 1.0
    rows_per_chunk = max(1, _CHUNK // max(n2, 1))
    for start in range(0, n1, rows_per_chunk):
        block = np.asarray(block_of(start, min(start + rows_per_chunk, n1)), np.float64) * sign
        here = (r >= start) & (r < start + block.shape[0])
        picked[here] = block[r[here] - start, k[here]]
        finite = np.isfinite(block)
        if finite.any():
            scale = max(scale, float(np.abs(block[finite]).max()))
            red = u[start:start + rows_per_chunk, None] + v[None, :] - block
            worst = max(worst, float(red[finite].max()))
    primal = float(picked.sum())
    dual = float(u.sum() + v.sum())
    slack = float(np.abs(picked - u[r] - v[k]).max()) if len(r) else 0.0
    # the longer side's duals must be <= 0 (and 0 where unassigned, which the gap then shows)
    long_side = v if n1 <= n2 else u
    if long_side.size:
        worst = max(worst, float(long_side.max()))
    tol = 1e-9 * scale * max(n1, n2, 1)
    gap = primal - dual
    return {
        "primal": primal * sign,
        "dual": dual * sign,
        "gap": gap,
        "max_violation": worst,
        "max_assigned_slack": slack,
        "complete": bool(complete),
        "optimal": bool(complete and worst <= tol and slack <= tol and abs(gap) <= tol),
    }
