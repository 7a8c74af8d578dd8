"""The estimate's decisions, written once for the CPU and the GPU backend (docs/algorithm.md §2).

Each backend runs the sweeps its own way (Numba threads over column slices on the CPU, cooperative
kernels on the GPU). What follows from their sums is decided here: whether stages C–E run (the
gap test), how far v is blended back towards stage B's, and the ε bounds of the passes.
"""
from __future__ import annotations

import math
from typing import NamedTuple, Protocol

from ._schedule import eps_bounds


class GapsAB(NamedTuple):
    """The sums of stages A and B."""
    gap_i: float  #: I = UB_id - LB_A: the identity assignment against stage A's lower bound
    gap: float    #: g = min(UB_B, G_A) - LB_B
    g0: float     #: G_A - LB_A: stage A's own gap, the scale of the blend


class BoundsCDE(NamedTuple):
    """The sums of stages C and E (greedy sweeps in regret order before and after stage D)."""
    ub_c: float
    lb_c: float
    ub_e: float
    lb_e: float


class Estimate(NamedTuple):
    eps_upper: float
    eps_lower: float
    ran_cde: bool


class Stages(Protocol):
    """A backend's sweeps. ``None`` from a sweep: it stopped (a stop request or an invalid
    matrix, which the backend reports itself)."""

    def stages_ab(self) -> GapsAB | None: ...

    def stages_cde(self) -> BoundsCDE | None: ...  # keeps stage B's v for ``blend``

    def blend(self, rho: float) -> None: ...        # v = rho * v_B + (1 - rho) * v

    def finish(self, natural_order: bool) -> None: ...  # v in the work dtype; the passes' row order


def needs_cde(gap_i: float, gap: float) -> bool:
    """Stages C–E run unless stage B already closed three quarters of the initial gap."""
    return gap_i < 4.0 * gap


def cde_gap(b: BoundsCDE) -> float:
    return min(b.ub_e, b.ub_c) - max(b.lb_e, b.lb_c)


def blend_weight(gap: float, g0: float) -> float:
    """The weight of stage B's v in the blend, g / g0; 0 where no blend applies."""
    if g0 > 0.0 and math.isfinite(gap):
        rho = gap / g0
        if rho > 1e-9:
            return rho
    return 0.0


def drive(stages: Stages, n1: int, n2: int, integral: bool) -> Estimate | None:
    """Stages A–E through ``stages``; ``None`` when a sweep stopped."""
    ab = stages.stages_ab()
    if ab is None:
        return None
    gap = ab.gap
    ran_cde = needs_cde(ab.gap_i, ab.gap)
    if ran_cde:
        bounds = stages.stages_cde()
        if bounds is None:
            return None
        gap = cde_gap(bounds)
        rho = blend_weight(gap, ab.g0)
        if rho > 0.0:
            stages.blend(rho)
    eps_upper, eps_lower = eps_bounds(ab.gap_i, gap, n1, n2, integral)
    # The regret order of stage C only serves a solve that starts with the exact pass; the
    # ε-passes take the rows in their natural order (alternating direction), as the authors'
    # published implementation does (it resets the order whenever ε_0 > 0).
    stages.finish(natural_order=eps_upper > 0.0)
    return Estimate(float(eps_upper), float(eps_lower), ran_cde)
