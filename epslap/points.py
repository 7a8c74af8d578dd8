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
from .solution import Solution, assemble

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

    The clouds are solved scaled by a power of two (exact) that brings their largest coordinate
    near 1, and the value and ``solution``'s cost and duals are scaled back (``stats``
    ``"points_scaled_by"``): tiny or huge coordinates neither under- nor overflow the squared
    differences. Not with ``init`` or ``cost_limit`` in ``solve_options`` (given in the points'
    units).

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
    exponent = 0
    if "init" not in solve_options and "cost_limit" not in solve_options:
        exponent = unit_exponent(a, b)
        a, b = np.ldexp(a, -exponent), np.ldexp(b, -exponent)
    cost = costfns.SqEuclidean(a, b) if metric == "sqeuclidean" else costfns.Euclidean(a, b)
    sol = solve(cost, backend=backend, **solve_options)
    power = 2 if metric == "sqeuclidean" else 1
    with np.errstate(over="ignore"):  # (refused below)
        value = float(np.ldexp(float(sol.cost) / a.shape[0], power * exponent))
    if not np.isfinite(value):
        raise ValueError(f"emd2: the transport cost of these clouds ({metric}) would overflow "
                         f"float64: scale the points down")
    if not return_solution:
        return value
    if exponent:
        sol = assemble(sol.row_ind, sol.col_ind, float(np.ldexp(float(sol.cost), power * exponent)),
                       np.ldexp(sol.u, power * exponent), np.ldexp(sol.v, power * exponent),
                       {**sol.stats, "points_scaled_by": f"2**{-exponent}"})
    return value, sol


def unit_exponent(a: np.ndarray, b: np.ndarray) -> int:
    """The power of two ``e`` that brings the clouds' largest coordinate into [0.5, 1).

    Why: a distance is computed from coordinate differences, whose squares underflow below
    about 1e-154 (``"euclidean"`` of points 1e-170 apart was 0) and overflow above 1e154 (points
    1e160 apart were refused though their W1 is a float64). Scaling by a power of two is exact,
    and a metric is homogeneous (degree 2, 1), so the clouds are solved at unit scale and the
    value scaled back: the same float64 result wherever nothing under- or overflowed before.
    0 for clouds at the origin or with a coordinate that is not finite (refused later)."""
    top = max(float(np.abs(a).max()), float(np.abs(b).max()))
    if top == 0 or not np.isfinite(top):
        return 0
    return int(np.frexp(top)[1])
