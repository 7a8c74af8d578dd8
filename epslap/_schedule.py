"""The ε schedule of the passes, shared by the CPU and GPU backends (compiled: the CPU kernel
calls it between its passes; the GPU host calls the same functions).

Guthe & Thuerck, "Algorithm 1015", ACM TOMS 47(2), 2021, doi:10.1145/3442348: ε_upper (eq. 17)
and ε_lower (eq. 16) from the estimate's gaps, and the update before every pass (eq. 18).
"""
import math

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def eps_bounds(gap_i, gap, n1, n2, integral):
    """ε_upper (eq. 17) and ε_lower (eq. 16) from the initial gap I and the estimate's gap g."""
    if not (math.isfinite(gap_i) and math.isfinite(gap)) or gap_i <= 0.0:
        return 0.0, 0.0
    gp = min(gap, gap_i / 4.0)
    n2f = np.float64(n2)
    if gp < 1e-6 * gap_i:
        eps_upper = 0.0
    else:
        eps_upper = n1 * gp * math.sqrt(gp / gap_i) / (n2f * n2f)
    eps_lower = gap_i / (16.0 * n2f * n2f)
    if integral:
        eps_upper = math.floor(eps_upper)
        eps_lower = max(1.0, math.floor(eps_lower))
    if eps_upper < eps_lower:
        eps_upper = 0.0
        eps_lower = 0.0
    return eps_upper, eps_lower


@njit(cache=True, nogil=True)
def next_eps(eps, eps_lower, total_d, total_eps, first, second, n2, integral):
    """ε for the next pass (paper eq. 18): a quarter of the last, or less where the last pass
    moved little; 0 (the exact pass) once below ε_lower or once the paths outgrew ε."""
    if eps > 0.0 and not first:
        if integral and eps == eps_lower:
            return 0.0
        if not second and total_d > total_eps:
            eps = 0.0
        else:
            eps = min(eps / 4.0, total_eps / (8.0 * n2))
            if integral:
                eps = np.floor(eps)
        if eps < eps_lower:
            eps = eps_lower if integral else 0.0
    return eps


def rectangular_from_zero(n1: int, n2: int) -> bool:
    """Whether the canonical problem (n1 <= n2) is solved as a rectangular one: one exact pass
    from v = 0 over the real rows only (docs/algorithm.md §10), for at least n2/16 more columns
    than rows. Padding it with n2 - n1 virtual rows would cost as much as a square problem of n2;
    nearly square ones keep the ε-passes, whose virtual rows are few."""
    return n1 < n2 and 16 * (n2 - n1) >= n2
