"""Exact optimal transport between two equal-size point clouds with uniform weights:
:func:`emd2`, the value POT's ``ot.emd2`` / ``ot.emd2_lazy`` return for such clouds.

With n points on each side and weights 1/n, an optimal transport plan can be taken to be a
permutation (the assignment polytope's vertices are permutations), so the transport cost is the
optimal assignment's cost divided by n. The costs are computed on demand
(``costfns.SqEuclidean`` / ``costfns.Euclidean``): no n × n matrix is formed, on the CPU or the GPU.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._api import solve
from .solution import Solution

METRICS = ("sqeuclidean", "euclidean")


def emd2(xa: Any, xb: Any, metric: str = "sqeuclidean", *, backend: str = "cpu",
         return_solution: bool = False, **solve_options: Any) -> float | tuple[float, Solution]:
    """The exact optimal transport cost between ``xa`` (n, d) and ``xb`` (n, d), each point of
    weight 1/n, under ``metric``: ``"sqeuclidean"`` (POT's default for ``emd2_lazy``; the value
    is W2²) or ``"euclidean"`` (W1, the Earth Mover's Distance of Rubner et al.).

    Returns the cost, or ``(cost, solution)`` with ``return_solution``: ``solution.col_ind[i]``
    is the point of ``xb`` that point i of ``xa`` is carried to, and ``solution.cost`` is n
    times the returned value. ``solve_options`` go to :func:`epslap.solve` (``memory``,
    ``threads``, ``device``, ``checkpoint``, …).

    Raises ValueError for clouds of different sizes or dimensions (uniform weights over clouds
    of different sizes split points between several partners: not an assignment), an unknown
    metric, or non-finite coordinates.
    """
    import costfns

    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    for x in (xa, xb):
        if np.asarray(x).dtype.kind == "c":  # (a cast would drop the imaginary part)
            raise TypeError(f"emd2 takes real coordinates, got dtype {np.asarray(x).dtype}")
    a = np.asarray(xa, dtype=np.float64)
    b = np.asarray(xb, dtype=np.float64)
    if a.ndim == 1:
        a = a[:, None]
    if b.ndim == 1:
        b = b[:, None]
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise ValueError(f"emd2 takes two (n, d) point clouds of the same dimension d, got "
                         f"shapes {np.shape(xa)} and {np.shape(xb)}")
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"emd2 takes clouds of equal size (uniform weights 1/n on both sides: "
                         f"an assignment), got {a.shape[0]} and {b.shape[0]} points")
    if a.shape[0] == 0:
        raise ValueError("emd2 needs at least one point on each side")
    cost = costfns.SqEuclidean(a, b) if metric == "sqeuclidean" else costfns.Euclidean(a, b)
    sol = solve(cost, backend=backend, **solve_options)
    value = float(sol.cost) / a.shape[0]
    return (value, sol) if return_solution else value
