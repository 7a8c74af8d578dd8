"""Numerics shared by the GPU Hungarian kernel's host driver and its CPU reference.

Nothing here imports CuPy: the functions take the array module ``xp`` (NumPy or CuPy), so the
CPU reference (``reference``) and the device driver (``solver``) decide tolerances,
storage dtype and status codes in exactly the same way.

Tolerance design
----------------
The kernel never stores a slack matrix; every slack is recomputed from the cost and the duals,
:math:`s_{ij} = c_{ij} - u_i - v_j` in float64, so no rounding error accumulates in the slacks.

* **Exact mode** (every finite cost is an integer and :math:`S (4n + 8) < 2^{53}`, with
  :math:`S = \\max |c|` over finite entries): all duals stay integers of at most a few times
  :math:`S` (each dual update adds the minimum of integer slacks), every float64 operation is
  exact, and a slack is "zero" iff it is exactly 0. The result is exactly optimal.
* **Tolerance mode** (any other float costs): a slack is "zero" iff :math:`s_{ij} \\le \\tau`,
  :math:`\\tau = 2^{-40} S`, about :math:`2^{12}` times the rounding error of one recomputed
  slack. The result is then optimal for costs perturbed by at most :math:`\\tau` per entry, so
  its cost is within :math:`n\\tau` of the optimum. A final dual-certificate check against the
  original matrix (:math:`u_i + v_j - c_{ij} \\le 2^{-36} S` over all finite pairs, with
  :math:`u_i = c_{i\\sigma(i)} - v_{\\sigma(i)}`) decides; a failed check raises instead of
  returning a possibly suboptimal answer.
"""
from __future__ import annotations

import numpy as np

from ..._status import raise_for_status as _raise_for_status

ZERO_TOL_EXP = -40     # tolerance mode: zero slack <=> s <= 2**-40 * S
CERT_TOL_EXP = -36     # tolerance mode: certificate accepts violations <= 2**-36 * S
EXACT_LIMIT = 2.0**53  # S * (4n + 8) below this keeps integer duals exact in float64


def raise_for_status(status: int, backend: str = "hungarian-gpu") -> None:
    """The shared status table's exceptions (``epslap._status``), for this backend."""
    _raise_for_status(status, backend)


def numeric_plan(xp, m, integral: bool) -> dict:
    """Scale, exactness, zero and certificate tolerances, and the device storage dtype.

    Parameters
    ----------
    xp : module
        ``numpy`` or ``cupy`` (the module of ``m``).
    m : array, shape (n1, n2), n1 <= n2
        The canonical (minimised, oriented) cost matrix.
    integral : bool
        The input had an integer dtype.

    Returns
    -------
    dict
        ``scale`` (max |finite cost|), ``exact``, ``tol`` (zero slack threshold), ``cert_tol``,
        ``has_inf``, ``storage`` (the NumPy dtype the kernel reads the costs as).
    """
    n = max(m.shape)
    if integral:
        finite_all = True
        has_inf = False
        scale = float(xp.abs(m).max()) if m.size else 0.0
        all_int = True
    else:
        fin = xp.isfinite(m)
        has_inf = not bool(fin.all())
        vals = m[fin] if has_inf else m
        scale = float(xp.abs(vals).max()) if vals.size else 0.0
        all_int = bool((vals == xp.rint(vals)).all()) if vals.size else True
        finite_all = not has_inf
    exact = all_int and scale * (4 * n + 8) < EXACT_LIMIT
    if integral and not exact:
        raise ValueError(
            f"integer costs up to {scale:.0f} in magnitude exceed what backend='hungarian-gpu' "
            f"keeps exact in float64 for n={n} (|cost| * (4n + 8) < 2**53); use backend='cpu' "
            "or rescale the costs")
    if exact:
        tol, cert = 0.0, 0.0
        if scale <= 2.0**24:
            storage = np.dtype(np.float32)       # integers up to 2**24 are exact in float32
        elif finite_all and scale < 2.0**31:
            storage = np.dtype(np.int32)
        else:
            storage = np.dtype(np.float64)
    else:
        tol = float(np.ldexp(scale, ZERO_TOL_EXP))
        cert = float(np.ldexp(scale, CERT_TOL_EXP))
        storage = np.dtype(np.float32) if m.dtype == np.float32 else np.dtype(np.float64)
    return {"scale": scale, "exact": bool(exact), "tol": tol, "cert_tol": cert,
            "has_inf": has_inf, "storage": storage}


def certificate_violation(xp, m, row_to_col, v, n1: int, n2: int, chunk: int = 1 << 22) -> float:
    """Largest dual infeasibility of the result, as ``epslap.verify`` would measure it.

    With :math:`u_i = c_{i\\sigma(i)} - v_{\\sigma(i)}` (what ``_api.finish`` reports), returns
    :math:`\\max(\\max_{ij\\,finite} u_i + v_j - c_{ij},\\; \\max_j v_j - \\min_{j\\,free} v_j)`
    (the second term: columns left to virtual rows must carry the largest column dual).
    """
    rows = xp.arange(n1)
    assigned = m[rows, row_to_col].astype(xp.float64)
    u = assigned - v[row_to_col]
    worst = -np.inf
    step = max(1, chunk // max(n2, 1))
    for a in range(0, n1, step):
        b = min(n1, a + step)
        block = m[a:b].astype(xp.float64)
        red = u[a:b, None] + v[None, :] - block
        red = xp.where(xp.isfinite(block), red, -xp.inf)
        worst = max(worst, float(red.max()))
    if n1 < n2:
        free = xp.ones(n2, dtype=bool)
        free[row_to_col] = False
        worst = max(worst, float(v.max() - v[free].min()))
    return worst
